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
