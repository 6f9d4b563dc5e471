"""Searchable sooner (issue 8): a large first ingest publishes a BM25-only generation
before embedding, and Ctrl-C while embedding leaves a searchable KB."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from kbagent.kb.ingest import Ingestor
from kbagent.kb.knowledge_base import KnowledgeBase, current_generation, kb_dir
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
    assert current_generation(kb_dir(s, "k")) is None
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


def test_vectors_become_searchable_as_embedding_progresses(make_folder, kb_home, embedder,
                                                           monkeypatch):
    """Each embedded group is published into the BM25-only generation: a search in
    the middle of the ingest fuses the vectors made so far (and says how many), a
    Ctrl-C keeps them, and the re-run publishes them again before embedding more."""
    import kbagent.kb.ingest as ingest_module

    monkeypatch.setattr(ingest_module, "EMBED_GROUP", 2)
    s = Settings.load(bm25_first_chunks=1, vectors_publish_s=1e-9)
    src = make_folder(SMALL_DOCS)
    seen: list[tuple[int, int, bool]] = []

    def progress(phase: str, done: int, total: int) -> None:
        if phase != "embed" or done == 0:
            return
        kb = KnowledgeBase(s, "k")
        seen.append((len(kb.vectors), kb.chunks, kb.vectors_pending))
        if done >= 4:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        Ingestor(s, "k", embedder=embedder, progress=progress).run(src)
    assert seen == [(2, seen[0][1], True), (4, seen[0][1], True)] and seen[0][1] > 4
    kb = KnowledgeBase(s, "k")
    assert kb.vectors_pending and kb.vectors_partial and len(kb.vectors) == 4
    all_ids = [cid for (cid,) in kb.store.conn.execute("SELECT id FROM chunks").fetchall()]
    embedded = set(kb.vectors.get(all_ids))
    result = HybridSearcher([kb]).search("exponential backoff retries", k=10, mode="vector")
    assert result.partial_kbs == {"k": (4, kb.chunks)} and not result.bm25_only_kbs
    assert len(result.hits) == 4 and {h.chunk_id for h in result.hits} == embedded
    hybrid = HybridSearcher([kb]).search("exponential backoff", k=3)
    assert hybrid.hits[0].path == "guide/retry.md" and hybrid.partial_kbs
    # the CLI says how far the vectors are
    env = dict(os.environ, PYTHONPATH=str(ROOT), KBAGENT_HOME=str(kb_home))
    proc = subprocess.run([sys.executable, "-m", "kbagent", "search", "exponential backoff"],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert f"vectors still being built (4 of {kb.chunks} chunks so far" in proc.stderr
    # a re-run republishes the 4 at once (embedding cache), then finishes the KB
    first: list[int] = []

    def at_start(phase: str, done: int, total: int) -> None:
        if phase == "embed" and not first:
            first.append(len(KnowledgeBase(s, "k").vectors))

    Ingestor(s, "k", embedder=embedder, progress=at_start).run(src)
    assert first == [4]
    kb = KnowledgeBase(s, "k")
    assert not kb.vectors_pending and len(kb.vectors) == kb.chunks
    assert not HybridSearcher([kb]).search("exponential backoff", k=3).partial_kbs


def test_a_reader_sees_vectors_published_after_it_opened(make_folder, kb_home, embedder,
                                                         monkeypatch):
    """A long-lived reader (the TUI) picks up vectors published into the same
    BM25-only generation on its next search."""
    import kbagent.kb.ingest as ingest_module

    monkeypatch.setattr(ingest_module, "EMBED_GROUP", 2)
    s = Settings.load(bm25_first_chunks=1, vectors_publish_s=1e-9)
    readers: list[KnowledgeBase] = []
    counts: list[int] = []

    def progress(phase: str, done: int, total: int) -> None:
        if phase != "embed":
            return
        if not readers:
            readers.append(KnowledgeBase(s, "k"))  # opened with no vectors
        assert readers[0].refresh() == (done > 0)
        counts.append(len(readers[0].vectors))
        if done >= 4:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        Ingestor(s, "k", embedder=embedder, progress=progress).run(make_folder(SMALL_DOCS))
    assert counts == [0, 2, 4]
    readers[0].close()
