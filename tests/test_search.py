"""Hybrid search: RRF fusion, retriever evidence, modes, several KBs, failures."""

from __future__ import annotations

import pytest

from kbagent.errors import BadInputError
from kbagent.kb.access import Principal
from kbagent.kb.ingest import Ingestor
from kbagent.kb.knowledge_base import KnowledgeBase
from kbagent.kb.search import RRF_K, HybridSearcher
from tests.conftest import SMALL_DOCS


@pytest.fixture
def two_kbs(settings, make_folder, embedder):
    Ingestor(settings, "eng", embedder=embedder).run(make_folder(SMALL_DOCS))
    Ingestor(settings, "hr", embedder=embedder).run(make_folder({
        "pto.md": "# Paid time off\n\nEmployees get 25 days of paid leave per year.\n",
        "remote.md": "# Remote work\n\nStaff may work remotely three days a week.\n",
    }))
    return [KnowledgeBase(settings, "eng"), KnowledgeBase(settings, "hr")]


def test_hybrid_scores_are_reciprocal_rank_fusion(two_kbs):
    result = HybridSearcher(two_kbs[:1]).search("retry backoff on 503", k=5)
    assert result.hits and not result.failed_kbs
    for h in result.hits:
        expected = sum(1 / (RRF_K + r) for r in (h.bm25_rank, h.vector_rank) if r)
        assert h.score == pytest.approx(expected)
    assert [h.score for h in result.hits] == sorted((h.score for h in result.hits), reverse=True)
    assert result.hits[0].path == "guide/retry.md"


def test_a_hit_missed_by_one_retriever_has_null_rank(two_kbs):
    hits = HybridSearcher(two_kbs[:1]).search("cafeteria", k=10).hits
    vector_only = [h for h in hits if h.bm25_rank is None]
    assert vector_only, "BM25 matches only one chunk; the rest come from vectors"
    assert all(h.vector_rank is not None and h.bm25_score is None for h in vector_only)


def test_bm25_and_vector_modes_use_one_retriever(two_kbs):
    bm25 = HybridSearcher(two_kbs[:1]).search("jitter", k=3, mode="bm25").hits
    assert bm25[0].path == "guide/retry.md"
    assert all(h.vector_rank is None and h.score == h.bm25_score for h in bm25)
    vec = HybridSearcher(two_kbs[:1]).search("holiday allowance", k=3, mode="vector").hits
    assert all(h.bm25_rank is None and h.score == h.vector_score for h in vec)


def test_several_kbs_merge_and_each_hit_names_its_kb(two_kbs):
    hits = HybridSearcher(two_kbs).search("how many vacation days do employees get", k=4).hits
    assert hits[0].kb == "hr" and hits[0].path == "pto.md"
    assert {h.kb for h in hits} == {"eng", "hr"}


def test_one_failing_kb_is_reported_and_the_rest_still_answer(two_kbs):
    broken = two_kbs[1]

    def explode(*a, **k):
        raise OSError("disk on fire")

    broken.lexical.search = explode
    result = HybridSearcher(two_kbs).search("retry policy", k=3)
    assert set(result.failed_kbs) == {"hr"} and "disk on fire" in result.failed_kbs["hr"]
    assert result.hits and all(h.kb == "eng" for h in result.hits)


def test_query_syntax_characters_are_harmless(two_kbs):
    # search() reports a failing KB in failed_kbs instead of raising, so the check
    # is that no KB failed (and that a real word among the syntax still matches)
    for q in ['retry AND (503', 'title:"x', "*?~^", "-", "a:b:c"]:
        result = HybridSearcher(two_kbs).search(q, k=3, mode="bm25")
        assert result.failed_kbs == {}, (q, result.failed_kbs)
    hits = HybridSearcher(two_kbs).search('retry AND (503', k=3, mode="bm25").hits
    assert hits and hits[0].path == "guide/retry.md"


def test_bad_arguments(two_kbs):
    s = HybridSearcher(two_kbs)
    with pytest.raises(BadInputError, match="empty search query"):
        s.search("   ")
    with pytest.raises(BadInputError, match="unknown search mode"):
        s.search("x", mode="fuzzy")


def test_acl_filter_hides_restricted_documents(settings, make_folder, embedder):
    Ingestor(settings, "acl", embedder=embedder).run(make_folder({
        "pay.md": "---\naccess: [executives]\n---\n# Bonus plan\n\nCEO bonus is 50 percent.\n",
        "pto.md": "# PTO\n\nBonus days off for long service.\n",
    }))
    kb = KnowledgeBase(settings, "acl")
    everyone = HybridSearcher([kb]).search("bonus", k=5).hits
    assert [h.path for h in everyone] == ["pto.md"]
    execs = HybridSearcher([kb]).search("bonus", k=5,
                                        principal=Principal("maya", frozenset({"executives"})))
    assert {h.path for h in execs.hits} == {"pay.md", "pto.md"}


def test_searcher_sees_a_new_generation_after_reingest(settings, make_folder, embedder):
    folder = make_folder(SMALL_DOCS)
    Ingestor(settings, "live", embedder=embedder).run(folder)
    kb = KnowledgeBase(settings, "live")
    searcher = HybridSearcher([kb])
    assert not searcher.search("zeppelin", k=3, mode="bm25").hits
    (folder / "z.md").write_text("# Zeppelin\n\nThe zeppelin docks at noon.\n")
    Ingestor(settings, "live", embedder=embedder).run(folder)
    assert searcher.search("zeppelin", k=3, mode="bm25").hits[0].path == "z.md"
