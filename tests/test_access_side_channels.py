"""Side channels (issue 20, item 7): what a caller sees about a KB does not depend on
the documents it may not read: ``search --json`` chunk ids are opaque (no gaps to
count) and ``kbs --json`` sizes are per caller. The BM25 statistics are not closed;
the README's Security section says exactly what they leak."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from kbagent.cli import app
from kbagent.kb.ingest import Ingestor

runner = CliRunner()
PUBLIC = {
    "a.md": "# Alpha\n\nThe quokka migration starts in spring.\n",
    "c.md": "# Gamma\n\nThe quokka census counts every animal.\n",
    "e.md": "# Epsilon\n\nA quokka eats leaves at night.\n",
}
HIDDEN = {
    "b.md": "---\naccess: [executives]\n---\n# Beta\n\nThe quokka bonus pool is secret.\n" * 3,
    "d.md": "---\naccess: [executives]\n---\n# Delta\n\nThe quokka acquisition plan.\n",
}


@pytest.fixture
def two_kbs(settings, make_folder, embedder):
    """``with``: the public documents and two restricted ones between them;
    ``without``: the public documents only."""
    Ingestor(settings, "with", embedder=embedder).run(make_folder({**PUBLIC, **HIDDEN}))
    Ingestor(settings, "without", embedder=embedder).run(make_folder(PUBLIC))
    return settings


def search_json(kb: str, *extra: str) -> list[dict]:
    res = runner.invoke(app, ["search", "quokka", "--kb", kb, "--mode", "bm25", "--json",
                              *extra])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_search_chunk_ids_are_opaque_and_do_not_depend_on_hidden_chunks(two_kbs):
    with_hidden = search_json("with")
    without = search_json("without")
    assert {h["path"] for h in with_hidden} == set(PUBLIC)
    for h in with_hidden:
        assert isinstance(h["chunk_id"], str) and re.fullmatch(r"[0-9a-f]{16}", h["chunk_id"])
    assert len({h["chunk_id"] for h in without}) == len(PUBLIC)
    again = {h["path"]: h["chunk_id"] for h in search_json("with")}
    assert again == {h["path"]: h["chunk_id"] for h in with_hidden}  # stable
    # an executive sees more chunks, but the public ones carry the same ids
    execs = {h["path"]: h["chunk_id"] for h in search_json("with", "--groups", "executives")}
    assert set(execs) == set(PUBLIC) | set(HIDDEN)
    assert all(execs[p] == again[p] for p in PUBLIC)


def test_chunk_ids_are_the_same_with_or_without_hidden_documents(settings, make_folder,
                                                                 embedder):
    # two KBs of the same name, one after the other: ids must not move when hidden
    # documents are added between the public ones
    Ingestor(settings, "k", embedder=embedder).run(make_folder(PUBLIC))
    before = {h["path"]: h["chunk_id"] for h in search_json("k")}
    Ingestor(settings, "k", embedder=embedder).run(make_folder({**PUBLIC, **HIDDEN}),
                                                   rebuild=True)
    after = {h["path"]: h["chunk_id"] for h in search_json("k")}
    assert before == after


def kbs_json(*extra: str) -> dict[str, dict]:
    res = runner.invoke(app, ["kbs", "--json", *extra])
    assert res.exit_code == 0, res.output
    return {i["name"]: i for i in json.loads(res.stdout)}


def test_kbs_size_is_per_caller(two_kbs):
    anon = kbs_json()
    assert anon["with"]["size_bytes"] == anon["without"]["size_bytes"] == sum(
        len(t.encode()) for t in PUBLIC.values())
    assert (anon["with"]["documents"], anon["with"]["chunks"]) == (
        anon["without"]["documents"], anon["without"]["chunks"])
    execs = kbs_json("--groups", "executives")
    assert execs["with"]["size_bytes"] == sum(len(t.encode()) for t in
                                              {**PUBLIC, **HIDDEN}.values())
    assert execs["without"]["size_bytes"] == anon["without"]["size_bytes"]


# ---------------------------------------------------------------- BM25 statistics
STATS_PUBLIC = {
    "p1.md": "# Pool\n\nThe quokka pool opens at noon.\n",
    "p2.md": "# Pool\n\nThe quokka pool opens at noon.\n",  # identical to p1
    "p3.md": "# Census\n\nA census of every quokka, wombat and numbat on the island.\n",
}
STATS_HIDDEN = {  # shares 'quokka' and 'pool', and is long (it moves the average length)
    "secret.md": "---\naccess: [executives]\n---\n# Bonus\n\n"
                 + "The quokka bonus pool pays out. " * 30 + "\n",
}


def bm25_scores(settings, name: str, query: str, principal) -> dict[str, float]:
    from kbagent.kb.knowledge_base import KnowledgeBase
    from kbagent.kb.search import HybridSearcher

    kb = KnowledgeBase(settings, name)
    try:
        hits = HybridSearcher([kb]).search(query, k=10, mode="bm25", principal=principal).hits
        return {h.path: h.bm25_score for h in hits}
    finally:
        kb.close()


def test_bm25_scores_do_not_depend_on_hidden_documents(settings, make_folder, embedder):
    from kbagent.kb.access import ANONYMOUS, Principal

    Ingestor(settings, "with", embedder=embedder).run(make_folder({**STATS_PUBLIC,
                                                                    **STATS_HIDDEN}))
    Ingestor(settings, "without", embedder=embedder).run(make_folder(STATS_PUBLIC))
    for query in ("quokka pool", "quokka", "pool census numbat", "quokka island"):
        for who in (ANONYMOUS, Principal("sam", frozenset({"hr"}))):
            with_hidden = bm25_scores(settings, "with", query, who)
            without = bm25_scores(settings, "without", query, who)
            assert set(with_hidden) == set(without), query
            for path, score in without.items():
                assert with_hidden[path] == pytest.approx(score, rel=1e-4), (query, path)
            assert with_hidden.get("p1.md") == with_hidden.get("p2.md")
    # an executive reads everything: tantivy's own statistics, the hidden doc counted
    execs = bm25_scores(settings, "with", "quokka pool", Principal("m", frozenset({"executives"})))
    assert "secret.md" in execs
    assert execs["p1.md"] != pytest.approx(bm25_scores(settings, "without", "quokka pool",
                                                       ANONYMOUS)["p1.md"], rel=1e-4)


def test_bm25_scores_have_the_same_precision_for_every_caller(settings, make_folder, embedder):
    """(issue 45, item 8) A caller who may not read everything gets scores rescored with
    its own statistics; in float64 they told it that it was rescored, i.e. that hidden
    documents exist. Every caller's scores are float32, as tantivy's own are."""
    import numpy as np

    from kbagent.kb.access import ANONYMOUS, Principal

    Ingestor(settings, "with", embedder=embedder).run(make_folder({**STATS_PUBLIC,
                                                                    **STATS_HIDDEN}))
    execs = Principal("m", frozenset({"executives"}))
    for query in ("quokka pool", "quokka", "pool census numbat", "quokka island"):
        for who in (ANONYMOUS, Principal("sam", frozenset({"hr"})), execs):
            scores = bm25_scores(settings, "with", query, who)
            assert scores, (query, who)
            for path, score in scores.items():
                assert float(np.float32(score)) == score, (query, who.label, path, score)
    res = runner.invoke(app, ["search", "quokka pool", "--kb", "with", "--json"])
    assert res.exit_code == 0, res.output
    for hit in json.loads(res.stdout):
        if hit["bm25_score"] is not None:
            assert float(np.float32(hit["bm25_score"])) == hit["bm25_score"]
