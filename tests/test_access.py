"""Access control, kb layer: principals, users file, .kbaccess, ingest, filtered indexes."""

from __future__ import annotations

import json

import numpy as np
import pytest

from kbagent.errors import BadInputError, KbCorruptError, NotFoundError
from kbagent.kb import vectors as vectors_module
from kbagent.kb.access import (
    ANONYMOUS,
    Principal,
    allowed_tokens,
    effective_groups,
    index_tokens,
    load_access_rules,
    may_read,
    parse_access_rules,
    resolve_principal,
)
from kbagent.kb.ingest import Ingestor
from kbagent.kb.knowledge_base import KnowledgeBase
from kbagent.kb.search import HybridSearcher
from kbagent.kb.views import FileViews

EXEC = Principal("maya", frozenset({"executives"}))
HR = Principal(None, frozenset({"hr"}))


class CountingEmbedder:
    """The real embedder, counting the texts it is asked to embed."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.dim = inner.dim
        self.texts = 0

    def encode(self, texts):
        self.texts += len(texts)
        return self.inner.encode(texts)


# ----------------------------------------------------------------- the rule
def test_may_read_is_the_one_rule_and_index_tokens_agree_with_it():
    cases = [[], ["executives"], ["hr", "executives"], ["board"]]
    for principal in (ANONYMOUS, EXEC, HR, Principal("x", frozenset({"board", "hr"}))):
        for groups in cases:
            by_tokens = bool(set(index_tokens(groups)) & set(allowed_tokens(principal)))
            assert by_tokens == may_read(principal, groups), (principal, groups)
    assert may_read(ANONYMOUS, []) and not may_read(ANONYMOUS, ["executives"])
    assert may_read(EXEC, ["hr", "executives"]) and not may_read(HR, ["executives"])


def test_no_declared_group_can_collide_with_the_public_token():
    # a front-matter group that looks like the public token still needs that group
    assert not may_read(ANONYMOUS, ["open:"])
    assert not set(index_tokens(["open:"])) & set(allowed_tokens(ANONYMOUS))


def test_principal_key_depends_on_groups_only():
    assert ANONYMOUS.key == "anonymous" and Principal("bob").key == "anonymous"
    assert EXEC.key == Principal(None, frozenset({"executives"})).key != HR.key
    assert EXEC.label == "maya (executives)" and ANONYMOUS.label == "anonymous"


# -------------------------------------------------------------- principals
def test_users_file_and_groups_flag(tmp_path):
    users = tmp_path / "users.toml"
    users.write_text('[users]\nmaya = ["executives", "HR"]\nsam = []\n')
    assert resolve_principal(users, "maya") == Principal("maya", frozenset({"executives", "hr"}))
    assert resolve_principal(users, "sam").groups == frozenset()
    assert resolve_principal(users) == ANONYMOUS
    assert resolve_principal(users, groups="hr, it").groups == frozenset({"hr", "it"})
    with pytest.raises(NotFoundError, match="unknown user 'zoe'"):
        resolve_principal(users, "zoe")
    with pytest.raises(BadInputError, match="not both"):
        resolve_principal(users, "maya", "hr")
    with pytest.raises(BadInputError, match="invalid group"):
        resolve_principal(users, groups="open:")


@pytest.mark.parametrize("text, message", [
    ("[users\nmaya = 1", "not valid TOML"),
    ("maya = ['executives']", "needs a \\[users\\] table"),
    ("[users]\nmaya = 'executives'", "must be a list"),
    ("[users]\nmaya = ['exec utives']", "invalid group"),
])
def test_malformed_users_file_is_one_line_error(tmp_path, text, message):
    users = tmp_path / "users.toml"
    users.write_text(text)
    with pytest.raises(BadInputError, match=message) as e:
        resolve_principal(users, "maya")
    assert "\n" not in str(e.value)


def test_missing_users_file(tmp_path):
    with pytest.raises(NotFoundError, match="no users file"):
        resolve_principal(tmp_path / "users.toml", "maya")


# --------------------------------------------------------------- .kbaccess
def test_kbaccess_last_match_wins_and_front_matter_wins_over_it():
    rules = parse_access_rules("# comment\nhr/**  hr\nhr/exec_*.md executives, board\n"
                               "hr/handbook.md all\n*.pdf finance\n")
    assert rules.groups_for("hr/pto.md") == ["hr"]
    assert rules.groups_for("hr/exec_pay.md") == ["board", "executives"]
    assert rules.groups_for("hr/handbook.md") == []
    assert rules.groups_for("deep/x/report.pdf") == ["finance"]
    assert rules.groups_for("readme.md") is None
    assert effective_groups(None, rules, "hr/pto.md") == ["hr"]
    assert effective_groups([], rules, "hr/pto.md") == []  # front-matter `access: all`
    assert effective_groups(["executives"], rules, "readme.md") == ["executives"]
    assert effective_groups(None, rules, "readme.md") == []


@pytest.mark.parametrize("text", ["hr/**\n", "hr/** hr all\n", "hr/** Bad:Group\n"])
def test_malformed_kbaccess_is_refused(text):
    with pytest.raises(BadInputError, match="line 1"):
        parse_access_rules(text)


def test_malformed_kbaccess_stops_ingest_and_changes_nothing(settings, make_folder, embedder):
    folder = make_folder({"a.md": "# A\n\nalpha text\n"})
    Ingestor(settings, "k", embedder=embedder).run(folder)
    gen = (settings.kbs_dir / "k" / "CURRENT").read_text()
    (folder / ".kbaccess").write_text("a.md\n")
    with pytest.raises(BadInputError, match=r"\.kbaccess line 1"):
        Ingestor(settings, "k", embedder=embedder).run(folder)
    assert (settings.kbs_dir / "k" / "CURRENT").read_text() == gen
    assert load_access_rules(folder.parent).rules == []  # no file: no rules


# ------------------------------------------------------------------ ingest
DOCS = {
    "hr/pay.md": "# Pay bands\n\nThe zebra salary band tops out at 200k.\n",
    "hr/pto.md": "---\naccess: all\n---\n# PTO\n\nZebra days off: 25 a year.\n",
    "notes.md": "# Notes\n\nThe zebra cafeteria opens at 8.\n",
}


def _paths(settings, name, principal):
    return FileViews(KnowledgeBase(settings, name), principal).paths()


def test_kbaccess_change_updates_access_without_reembedding(settings, make_folder, embedder):
    folder = make_folder(DOCS)
    (folder / ".kbaccess").write_text("hr/** hr\n")
    counting = CountingEmbedder(embedder)
    first = Ingestor(settings, "k", embedder=counting).run(folder)
    assert counting.texts == first.chunks_total == 3
    # front-matter `access: all` wins over the hr/** rule; .kbaccess itself is not a document
    assert _paths(settings, "k", ANONYMOUS) == ["hr/pto.md", "notes.md"]
    assert _paths(settings, "k", HR) == ["hr/pay.md", "hr/pto.md", "notes.md"]

    (folder / ".kbaccess").write_text("hr/** executives\n")
    report = Ingestor(settings, "k", embedder=counting).run(folder)
    assert counting.texts == 3 and report.chunks_embedded == 0  # nothing re-embedded
    changed = {f.path: f.reason for f in report.files if f.status == "updated"}
    assert changed == {"hr/pay.md": "access changed (.kbaccess)"}
    assert _paths(settings, "k", HR) == ["hr/pto.md", "notes.md"]
    assert _paths(settings, "k", EXEC) == ["hr/pay.md", "hr/pto.md", "notes.md"]
    kb = KnowledgeBase(settings, "k")
    bm25 = HybridSearcher([kb]).search("zebra salary", k=5, mode="bm25", principal=HR)
    assert "hr/pay.md" not in {h.path for h in bm25.hits}
    bm25 = HybridSearcher([kb]).search("zebra salary", k=5, mode="bm25", principal=EXEC)
    assert bm25.hits[0].path == "hr/pay.md"


def test_front_matter_change_updates_access_without_reembedding(settings, make_folder, embedder):
    folder = make_folder(DOCS)
    counting = CountingEmbedder(embedder)
    Ingestor(settings, "k", embedder=counting).run(folder)
    assert "hr/pay.md" in _paths(settings, "k", ANONYMOUS)
    (folder / "hr/pay.md").write_text("---\naccess: [executives]\n---\n" + DOCS["hr/pay.md"])
    report = Ingestor(settings, "k", embedder=counting).run(folder)
    assert report.chunks_embedded == 0 and counting.texts == 3
    assert "hr/pay.md" not in _paths(settings, "k", ANONYMOUS)
    row = KnowledgeBase(settings, "k").store.documents()["hr/pay.md"]
    assert row.access == ["executives"]


def test_old_schema_kb_is_refused_with_the_rebuild_hint(settings, make_folder, embedder):
    folder = make_folder(DOCS)
    Ingestor(settings, "k", embedder=embedder).run(folder)
    d = settings.kbs_dir / "k"
    gen = d / (d / "CURRENT").read_text().strip()
    manifest = json.loads((gen / "manifest.json").read_text())
    manifest["schema_version"] = 1
    (gen / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(KbCorruptError, match=r"schema version 1.*--rebuild"):
        KnowledgeBase(settings, "k")
    with pytest.raises(BadInputError, match=r"schema v1.*--rebuild"):
        Ingestor(settings, "k", embedder=embedder).run(folder)
    counting = CountingEmbedder(embedder)
    Ingestor(settings, "k", embedder=counting).run(folder, rebuild=True)
    assert counting.texts == 0  # the rebuild reuses the old vectors
    assert KnowledgeBase(settings, "k").documents == 3


# ------------------------------------------------- filtered vector search
def _mostly_restricted(make_folder):
    files = {f"exec/plan_{i:02d}.md": (
        f"---\naccess: [executives]\n---\n# Salary plan {i}\n\nExecutive salary, bonus and "
        f"severance for officer {i}: base pay {100 + i} thousand dollars.\n") for i in range(40)}
    files.update({f"open/doc_{i}.md": f"# Note {i}\n\nSalary payday is the {i + 1}th of the "
                  "month for all staff.\n" for i in range(6)})
    return make_folder(files)


@pytest.mark.parametrize("exact", [True, False])
def test_vector_search_returns_k_allowed_hits_when_neighbours_are_restricted(
        settings, make_folder, embedder, monkeypatch, exact):
    Ingestor(settings, "m", embedder=embedder).run(_mostly_restricted(make_folder))
    if not exact:  # force the HNSW over-fetch loop on this small index
        monkeypatch.setattr(vectors_module, "EXACT_BELOW", 0)
    kb = KnowledgeBase(settings, "m")
    searcher = HybridSearcher([kb], embedder_for=lambda m: embedder)
    query = "executive salary bonus severance base pay"
    top = searcher.search(query, k=5, mode="vector", principal=EXEC).hits
    assert all(h.path.startswith("exec/") for h in top)  # the neighbours are restricted
    for k in (1, 5, 6):
        hits = searcher.search(query, k=k, mode="vector", principal=ANONYMOUS).hits
        assert len(hits) == k and all(h.path.startswith("open/") for h in hits)
    assert len(searcher.search(query, k=10, mode="vector").hits) == 6  # only 6 exist
    vec = embedder.encode([query])[0]
    raw = kb.vectors.search(np.asarray(vec), 5, kb.denied_chunks(ANONYMOUS))
    assert len(raw) == 5 and not {cid for cid, _ in raw} & kb.denied_chunks(ANONYMOUS)
    for mode in ("bm25", "hybrid"):
        hits = searcher.search(query, k=6, mode=mode).hits
        assert hits and all(h.path.startswith("open/") for h in hits)


def test_bm25_filter_is_inside_the_tantivy_query(settings, make_folder, embedder):
    Ingestor(settings, "m", embedder=embedder).run(_mostly_restricted(make_folder))
    kb = KnowledgeBase(settings, "m")
    denied = kb.denied_chunks(ANONYMOUS)
    # asking tantivy itself for 3 hits gives 3 allowed ones although 40 restricted
    # chunks outscore them: nothing is dropped after retrieval
    got = kb.lexical.search("salary", 3, ANONYMOUS)
    assert len(got) == 3 and not {cid for cid, _ in got} & denied
    assert {cid for cid, _ in kb.lexical.search("executive salary", 3, EXEC)} <= denied


def test_a_folder_of_restricted_documents_reads_like_a_missing_folder(settings, make_folder,
                                                                       embedder):
    Ingestor(settings, "m", embedder=embedder).run(_mostly_restricted(make_folder))
    views = FileViews(KnowledgeBase(settings, "m"))
    with pytest.raises(NotFoundError) as denied:
        views.ls("exec")
    with pytest.raises(NotFoundError) as missing:
        views.ls("nope")
    assert str(denied.value).replace("exec", "nope") == str(missing.value)
    assert views.ls() == ["open/"] and views.glob("exec/*") == []
    assert FileViews(KnowledgeBase(settings, "m"), EXEC).ls() == ["exec/", "open/"]


def test_mentions_sees_only_what_the_caller_may_read(settings, make_folder, embedder):
    """The abstention check asks whether a KB ever mentions a word: a word only a
    restricted document holds must look absent to a caller without the group."""
    folder = make_folder(DOCS)
    (folder / ".kbaccess").write_text("hr/** hr\n")
    Ingestor(settings, "k", embedder=embedder).run(folder)
    kb = KnowledgeBase(settings, "k")
    assert kb.mentions("cafeteria", ANONYMOUS) and kb.mentions("ZEBRA", ANONYMOUS)
    assert not kb.mentions("salary", ANONYMOUS)  # only hr/pay.md, restricted
    assert kb.mentions("salary", HR)
    assert not kb.mentions("100%_match", HR)  # LIKE wildcards are taken literally


def test_mentions_reads_either_apostrophe(settings, make_folder, embedder):
    """A user types the keyboard's apostrophe where documents often print the
    typographic one: "I'm" is mentioned by a page that prints "I’m", and the other way
    round; a word without the apostrophe is another word."""
    folder = make_folder({"a.md": "# A\n\nI\u2019m told the zebra can't swim.\n"})
    Ingestor(settings, "k", embedder=embedder).run(folder)
    kb = KnowledgeBase(settings, "k")
    assert kb.mentions("I'm", ANONYMOUS) and kb.mentions("i\u2019M", ANONYMOUS)
    assert kb.mentions("can\u2019t", ANONYMOUS) and kb.mentions("can't", ANONYMOUS)
    assert not kb.mentions("Im told", ANONYMOUS) and not kb.mentions("cant", ANONYMOUS)
