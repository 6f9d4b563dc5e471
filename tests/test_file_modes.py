"""Files that can hold document text are private (issue 20, item 8): the KB's
files, the last answers, the history and traces are created 0600 in folders
0700, whatever the umask, and a KB or history made wider before is tightened."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from kbagent.agent.llm.trace import TraceWriter
from kbagent.history import History
from kbagent.kb.ingest import Ingestor
from kbagent.kb.knowledge_base import KnowledgeBase
from kbagent.session import last_answer_path, save_last_answer
from tests.conftest import SMALL_DOCS
from tests.test_history import result


def mode(p: Path) -> int:
    return stat.S_IMODE(os.lstat(p).st_mode)


def wider(root: Path) -> list[str]:
    """Every path under ``root`` (itself included) not 0700 (folders) / 0600 (files)."""
    out = [] if mode(root) == 0o700 else [f"{root} {oct(mode(root))}"]
    for base, dirs, files in os.walk(root):
        out += [f"{Path(base, d)} {oct(mode(Path(base, d)))}" for d in dirs
                if mode(Path(base, d)) != 0o700]
        out += [f"{Path(base, f)} {oct(mode(Path(base, f)))}" for f in files
                if mode(Path(base, f)) != 0o600]
    return out


@pytest.fixture(params=[0o022, 0o000], ids=["umask022", "umask000"])
def umask(request):
    old = os.umask(request.param)
    yield request.param
    os.umask(old)


def test_a_kb_is_private_from_its_first_ingest_through_updates(umask, settings, make_folder,
                                                               embedder):
    folder = make_folder(SMALL_DOCS)
    Ingestor(settings, "docs", embedder=embedder).run(folder)
    assert wider(settings.home) == []
    (folder / "new.md").write_text("# New\n\nA new page about backoff.\n")
    Ingestor(settings, "docs", embedder=embedder).run(folder)  # an incremental generation
    Ingestor(settings, "docs", embedder=embedder).run(folder, rebuild=True)
    assert wider(settings.home) == []
    names = {p.name for p in settings.home.rglob("*")}
    assert {"kb.sqlite", "vectors.usearch", "manifest.json", "CURRENT", "meta.json"} <= names


def test_a_bm25_first_generation_is_private(umask, settings, make_folder, embedder):
    settings.bm25_first_chunks = 1
    settings.vectors_publish_s = 0.001
    seen: dict[str, list[str]] = {}

    def look(step: str) -> None:  # the BM25-only generation is live, vectors coming
        kb = settings.kbs_dir / "docs"
        if step == "bm25-published":
            seen[step] = wider(settings.home)
        if step == "embedded":  # the live generation is private; the one being built sits
            # in a 0700 folder (tantivy makes its files with the umask's mode there, and
            # they are tightened before it is published)
            live = kb / (kb / "CURRENT").read_text().strip()
            seen[step] = wider(live) + [f"{d} {oct(mode(d))}" for d in kb.iterdir()
                                        if d.is_dir() and mode(d) != 0o700]

    Ingestor(settings, "docs", embedder=embedder, checkpoint=look).run(make_folder(SMALL_DOCS))
    assert seen == {"bm25-published": [], "embedded": []}
    assert wider(settings.home) == []


def test_an_existing_kb_made_wider_is_tightened_when_opened(settings, make_folder, embedder):
    Ingestor(settings, "docs", embedder=embedder).run(make_folder(SMALL_DOCS))
    kb = KnowledgeBase(settings, "docs")
    db = kb.gen_dir / "kb.sqlite"
    kb.close()
    os.chmod(db, 0o644)
    KnowledgeBase(settings, "docs").close()
    assert mode(db) == 0o600


def test_history_files_are_private(umask, tmp_path):
    home = tmp_path / "newhome"
    h = History(home)
    h.add(result("what is the retry cap?"))
    files = sorted(p.name for p in home.iterdir())
    assert "history.sqlite" in files
    assert wider(home) == []  # the -wal and -shm files too


def test_an_existing_wide_history_is_tightened(tmp_path):
    h = History(tmp_path)
    h.add(result("q"))
    os.chmod(h.path, 0o644)
    h.list()
    assert mode(h.path) == 0o600


def test_the_last_answer_is_private(umask, settings):
    save_last_answer(settings, result("what is the retry cap?"))
    path = last_answer_path(settings)
    assert path.is_file() and mode(path) == 0o600 and mode(settings.home) == 0o700
    os.chmod(path, 0o644)
    save_last_answer(settings, result("again"))  # replaced by a new 0600 file
    assert mode(path) == 0o600


def test_a_trace_is_private_and_a_folder_it_makes_is_0700(umask, tmp_path):
    made = tmp_path / "traces" / "deep"
    w = TraceWriter(made / "run.jsonl")
    w.write({"kind": "prompt", "text": "document text"})
    w.close()
    assert mode(made / "run.jsonl") == 0o600
    assert mode(made) == 0o700 and mode(tmp_path / "traces") == 0o700
    os.chmod(made / "run.jsonl", 0o644)
    TraceWriter(made / "run.jsonl").close()  # rewritten: tightened
    assert mode(made / "run.jsonl") == 0o600


def test_a_trace_leaves_an_existing_folder_of_the_user_alone(tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir(mode=0o755)
    os.chmod(mine, 0o755)
    TraceWriter(mine / "run.jsonl").close()
    assert mode(mine) == 0o755 and mode(mine / "run.jsonl") == 0o600


def test_eval_corpora_written_under_the_home_are_private(umask, settings):
    from kbagent.evaluation.qa_data import write_corpus_folder

    folder = settings.home / "eval" / "toy" / "corpus"
    write_corpus_folder({"p1.md": "# Paragraph\n\nSome text.\n"}, folder)
    assert wider(settings.home) == []
