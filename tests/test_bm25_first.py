"""Searchable sooner (issue 8): a large first ingest publishes a BM25-only generation
before embedding, and Ctrl-C while embedding leaves a searchable KB."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from kbagent.kb.ingest import Ingestor
from kbagent.kb.knowledge_base import KnowledgeBase, current_generation, kb_exists
from kbagent.kb.search import HybridSearcher
from kbagent.settings import Settings
from tests.conftest import ROOT, SMALL_DOCS


def _ctrl_c_when_embedding_starts(phase: str, done: int, total: int) -> None:
    if phase == "embed":
        raise KeyboardInterrupt


def test_ctrl_c_while_embedding_leaves_a_bm25_searchable_kb(make_folder, kb_home, embedder):
    s = Settings.load(bm25_first_chunks=1)
    src = make_folder(SMALL_DOCS)
    with pytest.raises(KeyboardInterrupt):
        Ingestor(s, "k", embedder=embedder, progress=_ctrl_c_when_embedding_starts).run(src)
    kb = KnowledgeBase(s, "k")
    assert kb.vectors_pending and len(kb.vectors) == 0 and kb.chunks > 0
    result = HybridSearcher([kb], embedder_for=lambda _s: pytest.fail("no query embedding"))\
        .search("exponential backoff", k=3)
    assert result.hits[0].path == "guide/retry.md"
    assert result.bm25_only_kbs == ["k"] and result.hits[0].vector_rank is None
    # the CLI says so, and still answers
    env = dict(os.environ, PYTHONPATH=str(ROOT), KBAGENT_HOME=str(kb_home))
    proc = subprocess.run([sys.executable, "-m", "kbagent", "search", "exponential backoff"],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "retry.md" in proc.stdout
    assert "vectors still being built: BM25 only" in proc.stderr
    # a re-run finishes the vectors and publishes the whole KB
    report = Ingestor(s, "k", embedder=embedder).run(src)
    assert report.committed
    kb = KnowledgeBase(s, "k")
    assert not kb.vectors_pending and len(kb.vectors) == kb.chunks
    hits = HybridSearcher([kb]).search("holiday allowance cafeteria", k=2, mode="vector").hits
    assert hits[0].path == "notes.txt"


def test_the_bm25_generation_is_published_before_embedding(make_folder, kb_home, embedder):
    s = Settings.load(bm25_first_chunks=1)
    seen = []

    def progress(phase: str, done: int, total: int) -> None:
        if phase == "embed" and not seen:
            seen.append(KnowledgeBase(s, "k").vectors_pending)

    Ingestor(s, "k", embedder=embedder, progress=progress).run(make_folder(SMALL_DOCS))
    assert seen == [True]
    assert not KnowledgeBase(s, "k").vectors_pending


def test_a_crash_before_the_bm25_generation_is_published_leaves_no_kb(make_folder, kb_home,
                                                                      embedder):
    s = Settings.load(bm25_first_chunks=1)

    def crash(step: str) -> None:
        if step == "bm25-written":
            raise RuntimeError("killed")

    with pytest.raises(RuntimeError):
        Ingestor(s, "k", embedder=embedder, checkpoint=crash).run(make_folder(SMALL_DOCS))
    assert not kb_exists(s, "k")
    assert not any(p.name.startswith("gen-") for p in (kb_home / "kbs" / "k").iterdir())


def test_a_small_ingest_publishes_one_full_generation(make_folder, kb_home, embedder):
    s = Settings.load()  # default threshold: 2000 chunks
    Ingestor(s, "k", embedder=embedder).run(make_folder(SMALL_DOCS))
    assert current_generation(kb_home / "kbs" / "k") == "gen-000001"
    assert not KnowledgeBase(s, "k").vectors_pending


def test_the_bm25_only_generation_enforces_access(make_folder, kb_home, embedder):
    """A BM25-only generation carries each document's groups in the index and the
    store, like a full one: restricted text is not open to everyone meanwhile."""
    from kbagent.kb.access import ANONYMOUS, Principal
    from kbagent.kb.views import FileViews

    s = Settings.load(bm25_first_chunks=1)
    src = make_folder({**SMALL_DOCS, "hr/pay.md": "---\naccess: [executives]\n---\n# Pay\n\n"
                       "The CEO base salary is 385,000 dollars a year.\n"})
    with pytest.raises(KeyboardInterrupt):
        Ingestor(s, "k", embedder=embedder, progress=_ctrl_c_when_embedding_starts).run(src)
    kb = KnowledgeBase(s, "k")
    assert kb.vectors_pending
    searcher = HybridSearcher([kb])
    anon = searcher.search("CEO base salary 385,000", k=10, principal=ANONYMOUS).hits
    assert all(h.path != "hr/pay.md" for h in anon)
    assert "hr/pay.md" not in FileViews(kb, ANONYMOUS).paths()
    # the index query itself filters (the search's row check is only a second line)
    pay_ids = {cid for cid, row in kb.store.chunks(
        [c for c, _ in kb.lexical.search("salary", 50, None)]).items() if row.path == "hr/pay.md"}
    assert pay_ids and not pay_ids & {c for c, _ in kb.lexical.search("salary", 50, ANONYMOUS)}
    execs = Principal("maya", frozenset({"executives"}))
    assert searcher.search("CEO base salary 385,000", k=10, principal=execs).hits[0].path \
        == "hr/pay.md"
