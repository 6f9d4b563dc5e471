"""A broken KB is never reported as fine (issue 20, items 6, 9, 11): ingest checks
the live generation's indexes and repairs them from the store; ``CURRENT`` must
name a generation folder inside the KB; old generations are collected once no
reader holds them."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kbagent.cli import app
from kbagent.errors import ExitCode, KbCorruptError
from kbagent.kb.generations import space_of
from kbagent.kb.ingest import Ingestor
from kbagent.kb.knowledge_base import KnowledgeBase, current_generation, list_kbs
from kbagent.kb.search import HybridSearcher
from kbagent.kb.store import text_hash
from tests.conftest import ROOT, SMALL_DOCS

runner = CliRunner()


def ingest(settings, folder, embedder, rebuild=False):
    return Ingestor(settings, "docs", embedder=embedder).run(folder, rebuild=rebuild)


def live_dir(settings) -> Path:
    d = settings.kbs_dir / "docs"
    return d / current_generation(d)


def gens_on_disk(settings) -> list[str]:
    return sorted(p.name for p in (settings.kbs_dir / "docs").iterdir()
                  if p.name.startswith(("gen-", ".gen-")))


def found(settings, query, mode):
    kb = KnowledgeBase(settings, "docs")
    try:
        return [h.path for h in HybridSearcher([kb]).search(query, k=3, mode=mode).hits]
    finally:
        kb.close()


def corrupt(gen_dir: Path, how: str) -> str:
    """Damage one index for real; return which part ("bm25" or "vectors")."""
    tantivy = gen_dir / "tantivy"
    if how == "tantivy-meta":
        (tantivy / "meta.json").write_text('{"segments": [garbage')
    elif how == "tantivy-segment":  # every segment's postings cut to half, and truncated
        for f in tantivy.glob("*.idx"):
            data = f.read_bytes()
            f.unlink()  # a fresh inode: the hard-linked copy in another generation is spared
            f.write_bytes(data[: len(data) // 2])
    elif how == "tantivy-terms":  # term dictionaries overwritten with garbage, same size
        for f in tantivy.glob("*.term"):
            n = f.stat().st_size
            f.unlink()
            f.write_bytes(bytes((i * 37 + 11) % 251 for i in range(n)))
    elif how == "tantivy-bitflip":  # 64 bytes inverted mid-file: search still "works"
        for f in tantivy.glob("*.idx"):
            data = bytearray(f.read_bytes())
            for i in range(len(data) // 3, len(data) // 3 + 64):
                data[i] ^= 0xFF
            f.unlink()
            f.write_bytes(bytes(data))
    elif how == "usearch-bitflip":  # inside the vectors: search runs on wrong vectors
        f = gen_dir / "vectors.usearch"
        data = bytearray(f.read_bytes())
        for i in range(len(data) // 3, len(data) // 3 + 64):
            data[i] ^= 0xFF
        f.write_bytes(bytes(data))
    elif how == "tantivy-missing":
        import shutil

        shutil.rmtree(tantivy)
    elif how == "usearch-missing":
        (gen_dir / "vectors.usearch").unlink()
    elif how == "usearch-garbage":
        (gen_dir / "vectors.usearch").write_bytes(b"not a usearch index\n" * 50)
    elif how == "usearch-truncated":
        f = gen_dir / "vectors.usearch"
        f.write_bytes(f.read_bytes()[:-1000])
    return "bm25" if how.startswith("tantivy") else "vectors"


CORRUPTIONS = ["tantivy-meta", "tantivy-segment", "tantivy-terms", "tantivy-bitflip",
               "tantivy-missing", "usearch-garbage", "usearch-truncated", "usearch-bitflip",
               "usearch-missing"]


@pytest.mark.parametrize("how", CORRUPTIONS)
def test_plain_ingest_repairs_a_broken_index_and_search_works_again(how, settings, make_folder,
                                                                    embedder):
    folder = make_folder(SMALL_DOCS)
    first = ingest(settings, folder, embedder)
    part = corrupt(live_dir(settings), how)
    report = ingest(settings, folder, embedder)  # nothing changed in the folder
    assert report.committed, "a broken index was reported as up to date"
    assert len(report.repaired) == 1
    if part == "bm25":
        assert report.repaired[0].startswith("BM25 index")
        assert report.chunks_embedded == 0  # rebuilt from the store, no embedding
    else:
        assert report.repaired[0].startswith("vector index") and "re-embedded" in \
            report.repaired[0]
        assert report.chunks_embedded == first.chunks_total
    kb = KnowledgeBase(settings, "docs")
    assert kb.chunks == kb.lexical.num_docs() == len(kb.vectors) == first.chunks_total
    kb.close()
    assert found(settings, "exponential backoff jitter", "bm25")[0] == "guide/retry.md"
    assert found(settings, "why did profitability drop", "vector")[0] == "finance/q3.md"
    assert found(settings, "cafeteria parking", "hybrid")[0] == "notes.txt"
    assert gens_on_disk(settings) == [current_generation(settings.kbs_dir / "docs")]
    # the repaired KB is sound: the next ingest finds nothing to do
    again = ingest(settings, folder, embedder)
    assert not again.committed and not again.repaired


def test_the_store_reproduces_the_text_every_index_was_built_from(settings, make_folder,
                                                                   embedder):
    """The BM25 rebuild is exact: the text rebuilt from the store hashes to the hash
    ingest stored for the text it indexed and embedded."""
    from kbagent.kb.repair import stored_chunks
    from kbagent.kb.store import Store

    ingest(settings, make_folder(SMALL_DOCS), embedder)
    kb = KnowledgeBase(settings, "docs")
    store = Store(kb.gen_dir / "kb.sqlite", readonly=True)
    rows = list(stored_chunks(store))
    assert len(rows) == kb.chunks > 3
    assert all(text_hash(space_of(kb.manifest), r.index_text) == r.text_hash for r in rows)
    store.close()
    kb.close()


def test_cli_ingest_says_what_it_repaired_and_search_then_exits_0(settings, make_folder,
                                                                  embedder):
    folder = make_folder(SMALL_DOCS)
    ingest(settings, folder, embedder)
    corrupt(live_dir(settings), "tantivy-segment")
    res = runner.invoke(app, ["ingest", str(folder), "--kb", "docs"])
    assert res.exit_code == 0, res.output
    assert "repaired BM25 index" in res.stderr and "KB 'docs' repaired" in res.stdout
    res = runner.invoke(app, ["search", "exponential backoff", "--kb", "docs", "--mode", "bm25"])
    assert res.exit_code == 0, res.output
    assert "guide/retry.md" in res.stdout


@pytest.mark.parametrize("victim", ["kb.sqlite", "manifest.json"])
def test_a_broken_store_or_manifest_is_not_repaired_but_names_the_rebuild(
        victim, settings, make_folder, embedder):
    folder = make_folder(SMALL_DOCS)
    ingest(settings, folder, embedder)
    (live_dir(settings) / victim).write_bytes(b"garbage" * 100)
    res = runner.invoke(app, ["ingest", str(folder), "--kb", "docs"])
    assert res.exit_code == ExitCode.CORRUPT
    assert f"kbagent ingest {folder.resolve()} --kb docs --rebuild" in res.stderr
    assert ingest(settings, folder, embedder, rebuild=True).committed  # and that works
    assert found(settings, "exponential backoff", "bm25")[0] == "guide/retry.md"


# ------------------------------------------------------------------- CURRENT
@pytest.mark.parametrize("pointer", ["../../../../etc", "/etc", "gen-000001/../../outside",
                                     "..", "gen-1", "outside"])
def test_current_pointing_outside_the_kb_is_corruption(pointer, settings, make_folder,
                                                       embedder, tmp_path):
    folder = make_folder(SMALL_DOCS)
    ingest(settings, folder, embedder)
    kb = settings.kbs_dir / "docs"
    # a bait: a well-formed manifest outside the KB that the old code would have read
    outside = tmp_path / "home" / "kbs" / "outside"
    outside.mkdir()
    (outside / "manifest.json").write_text('{"schema_version": 2}')
    (kb / "CURRENT").write_text(pointer + "\n")
    with pytest.raises(KbCorruptError, match=r"CURRENT .*rebuild it with: kbagent ingest"):
        KnowledgeBase(settings, "docs")
    res = runner.invoke(app, ["search", "backoff", "--kb", "docs"])
    assert res.exit_code == ExitCode.CORRUPT and "--rebuild" in res.stderr
    res = runner.invoke(app, ["ingest", str(folder), "--kb", "docs"])
    assert res.exit_code == ExitCode.CORRUPT  # exactly what to run, with this folder:
    assert f"kbagent ingest {folder.resolve()} --kb docs --rebuild" in res.stderr
    [info] = list_kbs(settings)
    assert "CURRENT" in info.error
    # the rebuild the message names repairs it
    report = ingest(settings, folder, embedder, rebuild=True)
    assert report.committed and found(settings, "exponential backoff", "bm25")[0] == \
        "guide/retry.md"


def test_current_as_a_link_is_refused_without_reading_its_target(settings, make_folder,
                                                                 embedder, tmp_path):
    ingest(settings, make_folder(SMALL_DOCS), embedder)
    kb = settings.kbs_dir / "docs"
    target = tmp_path / "target"
    target.write_text("gen-000001\n")  # even a valid name is not read through a link
    (kb / "CURRENT").unlink()
    (kb / "CURRENT").symlink_to(target)
    with pytest.raises(KbCorruptError, match="CURRENT is a link"):
        KnowledgeBase(settings, "docs")
    (kb / "CURRENT").unlink()
    os.mkfifo(kb / "CURRENT")  # a FIFO would block a plain read forever
    with pytest.raises(KbCorruptError, match="CURRENT is not a file"):
        KnowledgeBase(settings, "docs")


def test_a_generation_folder_that_is_a_link_out_of_the_kb_is_refused(settings, make_folder,
                                                                     embedder, tmp_path):
    folder = make_folder(SMALL_DOCS)
    ingest(settings, folder, embedder)
    kb = settings.kbs_dir / "docs"
    elsewhere = tmp_path / "elsewhere"
    live_dir(settings).rename(elsewhere)  # a whole, readable generation, but outside
    (kb / "gen-000009").symlink_to(elsewhere)
    (kb / "CURRENT").write_text("gen-000009\n")
    with pytest.raises(KbCorruptError, match="leads outside the KB"):
        KnowledgeBase(settings, "docs")


# ------------------------------------------------------------ old generations
def test_two_rebuilds_in_a_row_leave_one_generation(settings, make_folder, embedder):
    folder = make_folder(SMALL_DOCS)
    ingest(settings, folder, embedder)
    for _ in range(2):
        assert ingest(settings, folder, embedder, rebuild=True).committed
        assert gens_on_disk(settings) == [current_generation(settings.kbs_dir / "docs")]
    assert current_generation(settings.kbs_dir / "docs") == "gen-000003"


def test_a_generation_open_in_another_process_is_kept_until_it_closes(settings, make_folder,
                                                                      embedder, tmp_path):
    folder = make_folder(SMALL_DOCS)
    ingest(settings, folder, embedder)
    old = current_generation(settings.kbs_dir / "docs")
    reader = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent("""
            import sys
            from kbagent.kb.knowledge_base import KnowledgeBase
            from kbagent.settings import Settings
            kb = KnowledgeBase(Settings.load(), "docs")
            print(kb.generation, flush=True)
            sys.stdin.readline()  # the test rebuilds meanwhile
            # the old generation's own indexes and store (no refresh to the new one)
            [(cid, _)] = kb.lexical.search("exponential backoff", 1)
            print(kb.generation, kb.store.chunks([cid])[cid].path, flush=True)
            sys.stdin.readline()
            kb.close()
            print("closed", flush=True)
            sys.stdin.readline()
        """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert reader.stdout is not None and reader.stdin is not None
        assert reader.stdout.readline().strip() == old
        assert ingest(settings, folder, embedder, rebuild=True).committed
        new = current_generation(settings.kbs_dir / "docs")
        assert new != old and gens_on_disk(settings) == [old, new]  # held: kept
        reader.stdin.write("\n")
        reader.stdin.flush()
        assert reader.stdout.readline().split() == [old, "guide/retry.md"]  # still readable
        reader.stdin.write("\n")
        reader.stdin.flush()
        assert reader.stdout.readline().strip() == "closed"
        assert not ingest(settings, folder, embedder).committed  # nothing changed...
        assert gens_on_disk(settings) == [new]  # ...and the released generation is collected
    finally:
        reader.kill()
        reader.wait()


def test_a_reader_in_this_process_holds_its_generation_until_close(settings, make_folder,
                                                                   embedder):
    folder = make_folder(SMALL_DOCS)
    ingest(settings, folder, embedder)
    kb = KnowledgeBase(settings, "docs")
    ingest(settings, folder, embedder, rebuild=True)
    assert kb.generation in gens_on_disk(settings) and len(gens_on_disk(settings)) == 2
    assert kb.refresh()  # it moves to the new generation and still holds the old one
    assert len(gens_on_disk(settings)) == 2
    kb.close()
    ingest(settings, folder, embedder)
    assert gens_on_disk(settings) == [current_generation(settings.kbs_dir / "docs")]


def test_a_long_lived_reader_does_not_pin_every_generation_it_refreshed_through(
        settings, make_folder, embedder):
    """A server or TUI refreshes once per question: it keeps the generation it reads
    and the one before (a search may still be on it), not all of them."""
    folder = make_folder(SMALL_DOCS)
    ingest(settings, folder, embedder)
    kb = KnowledgeBase(settings, "docs")
    for _ in range(3):
        ingest(settings, folder, embedder, rebuild=True)
        assert kb.refresh()
    ingest(settings, folder, embedder)  # collects what nobody holds
    assert gens_on_disk(settings) == ["gen-000003", "gen-000004"] == sorted(
        [kb.generation, "gen-000003"])
    kb.close()
    ingest(settings, folder, embedder)
    assert gens_on_disk(settings) == ["gen-000004"]


def test_readers_opening_and_searching_through_rebuilds_never_fail(settings, make_folder,
                                                                   embedder, tmp_path):
    """The race the locks close: a reader reads CURRENT, an ingest publishes and
    collects, the reader locks a folder that is gone. Another process opens and
    searches the KB in a loop while this one rebuilds it; every open succeeds."""
    folder = make_folder(SMALL_DOCS)
    ingest(settings, folder, embedder)
    done = tmp_path / "done"
    reader = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            from pathlib import Path
            from kbagent.kb.knowledge_base import KnowledgeBase
            from kbagent.settings import Settings
            s, n, errors = Settings.load(), 0, []
            while not Path({str(done)!r}).exists() or n < 5:
                try:
                    kb = KnowledgeBase(s, "docs")
                    assert kb.lexical.search("exponential backoff", 1)
                    assert kb.store.count()[1] == kb.chunks
                    kb.close()
                except Exception as e:
                    errors.append(repr(e))
                n += 1
            print(n, len(errors), errors[:3], flush=True)
        """)], stdout=subprocess.PIPE, text=True, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        for _ in range(6):
            ingest(settings, folder, embedder, rebuild=True)
        done.touch()
        out, _ = reader.communicate(timeout=120)
    finally:
        reader.kill()
        reader.wait()
    opens, errors, first = out.split(" ", 2)
    assert int(opens) >= 5 and errors == "0", first
    ingest(settings, folder, embedder)  # the reader is gone: whatever it held is collected
    assert gens_on_disk(settings) == ["gen-000007"]
