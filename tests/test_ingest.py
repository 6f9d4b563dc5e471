"""Ingest: incremental updates, crash safety, locking, bad input, corruption."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kbagent.errors import BadInputError, KbBusyError, KbCorruptError, NotFoundError
from kbagent.kb.ingest import Ingestor
from kbagent.kb.knowledge_base import KnowledgeBase, current_generation, list_kbs
from kbagent.kb.lock import WriterLock
from kbagent.kb.search import HybridSearcher
from tests.conftest import SMALL_DOCS

STEPS = ["copied", "deleted", "embedded", "written", "sqlite-committed", "tantivy-committed",
         "vectors-saved", "manifest-written"]


def ingest(settings, folder, embedder, name="docs", **kw):
    return Ingestor(settings, name, embedder=embedder, **kw).run(folder)


def paths_found(settings, query, name="docs", mode="hybrid", k=10):
    kb = KnowledgeBase(settings, name)
    return [h.path for h in HybridSearcher([kb]).search(query, k=k, mode=mode).hits]


def test_first_ingest_builds_all_three_indexes(settings, make_folder, embedder):
    folder = make_folder(SMALL_DOCS)
    report = ingest(settings, folder, embedder)
    assert report.committed
    assert report.summary() == {"added": 3, "updated": 0, "removed": 0, "unchanged": 0,
                                "skipped": 0, "failed": 0}
    kb = KnowledgeBase(settings, "docs")
    assert kb.documents == 3
    assert kb.chunks == report.chunks_total == len(kb.vectors) == kb.lexical.num_docs()
    assert kb.manifest["embedding_model"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert kb.manifest["embedding_dim"] == 384
    assert kb.manifest["source"] == str(folder.resolve())
    assert paths_found(settings, "exponential backoff jitter", mode="bm25")[0] == "guide/retry.md"
    assert paths_found(settings, "why did profitability drop", mode="vector")[0] == "finance/q3.md"


def test_reingest_unchanged_skips_everything_and_writes_nothing(settings, make_folder, embedder):
    folder = make_folder(SMALL_DOCS)
    ingest(settings, folder, embedder)
    gen = current_generation(settings.kbs_dir / "docs")
    report = ingest(settings, folder, embedder)
    assert not report.committed
    assert report.count("unchanged") == 3 and report.chunks_embedded == 0
    assert current_generation(settings.kbs_dir / "docs") == gen


def test_edit_delete_add_are_applied_incrementally(settings, make_folder, embedder):
    folder = make_folder(SMALL_DOCS)
    first = ingest(settings, folder, embedder)
    (folder / "notes.txt").unlink()
    (folder / "guide/retry.md").write_text(
        SMALL_DOCS["guide/retry.md"] + "\n## Circuit breaker\n\nOpen after 5 failures in 10 s.\n"
    )
    (folder / "new.md").write_text("# Onboarding\n\nLaptops ship on day one.\n")
    report = ingest(settings, folder, embedder)
    assert report.summary() == {"added": 1, "updated": 1, "removed": 1, "unchanged": 1,
                                "skipped": 0, "failed": 0}
    # unchanged chunks of the edited file reuse their vectors
    retry_chunks = next(f.chunks for f in report.files if f.path == "guide/retry.md")
    assert report.chunks_embedded < retry_chunks + 1 + 1
    assert "notes.txt" not in paths_found(settings, "cafeteria parking", mode="bm25")
    assert paths_found(settings, "circuit breaker failures", mode="bm25")[0] == "guide/retry.md"
    assert paths_found(settings, "laptops day one", mode="bm25")[0] == "new.md"
    kb = KnowledgeBase(settings, "docs")
    assert kb.chunks == len(kb.vectors) == kb.lexical.num_docs() == report.chunks_total
    assert report.chunks_total != first.chunks_total


@pytest.mark.parametrize("step", STEPS)
def test_crash_at_any_step_keeps_old_kb_and_rerun_completes(step, settings, make_folder,
                                                            embedder):
    folder = make_folder(SMALL_DOCS)
    ingest(settings, folder, embedder)
    kb_dir = settings.kbs_dir / "docs"
    gen = current_generation(kb_dir)
    (folder / "notes.txt").unlink()
    (folder / "new.md").write_text("# Onboarding\n\nLaptops ship on day one.\n")

    def crash(at: str) -> None:
        if at == step:
            raise RuntimeError(f"simulated crash at {at}")

    with pytest.raises(RuntimeError, match="simulated crash"):
        ingest(settings, folder, embedder, checkpoint=crash)
    # the previous generation is live, complete and searchable
    assert current_generation(kb_dir) == gen
    assert paths_found(settings, "cafeteria parking", mode="bm25")[0] == "notes.txt"
    assert "new.md" not in paths_found(settings, "laptops onboarding")
    assert sorted(p.name for p in kb_dir.iterdir() if p.name.startswith("gen-")) == [gen]
    # a re-run finishes the job
    report = ingest(settings, folder, embedder)
    assert report.committed and report.summary()["added"] == 1
    assert paths_found(settings, "laptops onboarding")[0] == "new.md"
    assert "notes.txt" not in paths_found(settings, "cafeteria parking", mode="bm25")


def test_rerun_after_a_crash_reuses_finished_embeddings(settings, make_folder, embedder):
    folder = make_folder({**SMALL_DOCS, **{f"more/{i}.md": f"# Doc {i}\n\nFact {i} about "
                                                                f"topic {i * 7}.\n"
                                           for i in range(6)}})

    def crash(at: str) -> None:
        if at == "written":
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        ingest(settings, folder, embedder, checkpoint=crash)
    assert list_kbs(settings) == []  # a first ingest that never committed shows nothing
    report = ingest(settings, folder, embedder)
    assert report.committed and report.chunks_embedded == 0
    assert report.chunks_total == sum(f.chunks for f in report.files) > 6
    assert not (settings.kbs_dir / "docs" / "embed_cache.sqlite").exists()


def _kill_script(home: Path, folder: Path, step: str) -> str:
    return textwrap.dedent(f"""
        import os, signal
        from pathlib import Path
        from kbagent.settings import Settings
        from kbagent.kb.ingest import Ingestor
        def at(step):
            if step == {step!r}:
                os.kill(os.getpid(), signal.SIGKILL)
        settings = Settings.load(home={str(home)!r})
        Ingestor(settings, "docs", checkpoint=at).run(Path({str(folder)!r}))
    """)


@pytest.mark.parametrize("step", ["written", "manifest-written"])
def test_sigkill_mid_ingest_leaves_previous_kb_usable(step, settings, make_folder, embedder):
    folder = make_folder(SMALL_DOCS)
    ingest(settings, folder, embedder)
    (folder / "new.md").write_text("# Onboarding\n\nLaptops ship on day one.\n")
    proc = subprocess.run([sys.executable, "-c", _kill_script(settings.home, folder, step)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == -9, proc.stderr
    assert paths_found(settings, "cafeteria parking", mode="bm25")[0] == "notes.txt"
    assert "new.md" not in paths_found(settings, "laptops onboarding")
    report = ingest(settings, folder, embedder)  # the lock died with the process
    assert report.summary()["added"] == 1 and report.chunks_embedded == 0
    assert paths_found(settings, "laptops onboarding")[0] == "new.md"


def test_second_writer_gets_a_clear_busy_error(settings, make_folder, embedder):
    folder = make_folder(SMALL_DOCS)
    ingest(settings, folder, embedder)
    with WriterLock(settings.kbs_dir / "docs", "docs"), pytest.raises(
        KbBusyError, match=r"being written by another ingest \(pid \d+\)"
    ):
        ingest(settings, folder, embedder)


def test_bad_and_huge_files_are_skipped_not_fatal(settings, make_folder, embedder):
    settings.max_file_mb = 0.01
    folder = make_folder({
        "ok.md": "# Fine\n\nGood text.\n",
        "huge.txt": "word " * 5000,
        "bin.dat": b"\x00\x01binary\x00",
        "latin.txt": "caf\xe9".encode("latin-1"),
        "empty.md": "",
        "broken.pdf": b"%PDF-1.4 nothing else",
    })
    report = ingest(settings, folder, embedder)
    status = {f.path: (f.status, f.reason) for f in report.files}
    assert status["ok.md"][0] == "added"
    assert status["huge.txt"][0] == "skipped" and "too large" in status["huge.txt"][1]
    assert status["bin.dat"] == ("skipped", "binary content (NUL bytes)")
    assert "not valid UTF-8" in status["latin.txt"][1]
    assert status["empty.md"] == ("skipped", "empty file")
    assert status["broken.pdf"][0] == "failed" and "PDF" in status["broken.pdf"][1]


def test_file_that_becomes_unparseable_keeps_its_previous_version(settings, make_folder,
                                                                   embedder):
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", size=12)
    pdf.multi_cell(0, 6, "Board approved the Kestrel Edge launch.")
    folder = make_folder({"deck.pdf": bytes(pdf.output()), "a.md": "# A\n\ntext\n"})
    ingest(settings, folder, embedder)
    (folder / "deck.pdf").write_bytes(b"%PDF-1.4 truncated")
    report = ingest(settings, folder, embedder)
    assert {f.path: f.status for f in report.files}["deck.pdf"] == "failed"
    assert paths_found(settings, "Kestrel Edge launch", mode="bm25")[0] == "deck.pdf"


@pytest.mark.parametrize(
    ("make", "error", "message"),
    [
        (lambda tmp: tmp / "missing", NotFoundError, "no such folder"),
        (lambda tmp: _touch(tmp / "file.md"), BadInputError, "is a file"),
        (lambda tmp: _mkdir(tmp / "empty"), BadInputError, "no ingestible files"),
        (lambda tmp: _only_binary(tmp / "bins"), BadInputError, r"\(1 files skipped"),
    ],
)
def test_bad_sources_fail_cleanly(make, error, message, settings, tmp_path, embedder):
    with pytest.raises(error, match=message):
        ingest(settings, make(tmp_path), embedder)
    assert list_kbs(settings) == []


def _touch(p: Path) -> Path:
    p.write_text("x")
    return p


def _mkdir(p: Path) -> Path:
    p.mkdir()
    return p


def _only_binary(p: Path) -> Path:
    p.mkdir()
    (p / "a.bin").write_bytes(b"\x00\x00")
    return p


def test_emptied_folder_does_not_wipe_the_kb(settings, make_folder, embedder):
    folder = make_folder(SMALL_DOCS)
    ingest(settings, folder, embedder)
    for f in SMALL_DOCS:
        (folder / f).unlink()
    with pytest.raises(BadInputError, match="nothing changed"):
        ingest(settings, folder, embedder)
    assert KnowledgeBase(settings, "docs").documents == 3


@pytest.mark.parametrize("victim", ["vectors.usearch", "kb.sqlite", "manifest.json", "tantivy"])
def test_corruption_is_detected_with_a_rebuild_hint(victim, settings, make_folder, embedder):
    folder = make_folder(SMALL_DOCS)
    ingest(settings, folder, embedder)
    gen_dir = settings.kbs_dir / "docs" / current_generation(settings.kbs_dir / "docs")
    target = gen_dir / victim
    if target.is_dir():
        for f in target.glob("*.idx"):
            f.write_bytes(b"garbage")
        (target / "meta.json").write_text("{not json")
    else:
        target.write_bytes(b"garbage" * 100)
    with pytest.raises(KbCorruptError, match=r"rebuild it with: kbagent ingest .* --kb docs "
                                             r"--rebuild"):
        KnowledgeBase(settings, "docs")
    # --rebuild repairs it without touching the source
    report = Ingestor(settings, "docs", embedder=embedder).run(folder, rebuild=True)
    assert report.committed and report.summary()["added"] == 3
    assert KnowledgeBase(settings, "docs").chunks == report.chunks_total


def test_vector_count_mismatch_is_reported_as_inconsistent(settings, make_folder, embedder):
    from usearch.index import Index

    folder = make_folder(SMALL_DOCS)
    ingest(settings, folder, embedder)
    gen_dir = settings.kbs_dir / "docs" / current_generation(settings.kbs_dir / "docs")
    Index(ndim=384, metric="cos").save(str(gen_dir / "vectors.usearch"))
    with pytest.raises(KbCorruptError, match="inconsistent"):
        KnowledgeBase(settings, "docs")


def test_changing_the_chunker_settings_requires_rebuild(settings, make_folder, embedder):
    folder = make_folder(SMALL_DOCS)
    ingest(settings, folder, embedder)
    settings.chunk_tokens = 100
    with pytest.raises(BadInputError, match="--rebuild"):
        ingest(settings, folder, embedder)


def test_invalid_kb_names_are_refused(settings, make_folder, embedder):
    make_folder(SMALL_DOCS)
    for bad in ["../x", "", "a/b", ".hidden", "x" * 65]:
        with pytest.raises(BadInputError, match="invalid KB name"):
            Ingestor(settings, bad, embedder=embedder)


def test_manifest_is_plain_inspectable_json(settings, make_folder, embedder):
    folder = make_folder(SMALL_DOCS)
    ingest(settings, folder, embedder)
    kb_dir = settings.kbs_dir / "docs"
    m = json.loads((kb_dir / current_generation(kb_dir) / "manifest.json").read_text())
    assert m["schema_version"] == 2 and m["documents"] == 3
    assert m["chunker"] == {"version": 7, "max_tokens": 200, "overlap": 32}
    assert os.path.isdir(kb_dir / current_generation(kb_dir) / "tantivy")


def test_rebuild_of_a_healthy_kb_reuses_its_vectors(settings, make_folder, embedder):
    folder = make_folder(SMALL_DOCS)
    first = ingest(settings, folder, embedder)
    report = Ingestor(settings, "docs", embedder=embedder).run(folder, rebuild=True)
    assert report.committed and report.chunks_embedded == 0
    assert report.chunks_total == first.chunks_total
    assert paths_found(settings, "exponential backoff jitter")[0] == "guide/retry.md"
