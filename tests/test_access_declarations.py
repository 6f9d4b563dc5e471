"""Access declarations fail closed (issue 20, item 2): a front-matter ``access`` that
cannot be read never publishes a document (it is stored readable by nobody, ingest
says so and counts it), every way of writing front-matter is recognised, ``all`` is
reserved, and ``.kbaccess`` goes through the same parser."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from kbagent.cli import app
from kbagent.errors import BadInputError
from kbagent.kb.access import (
    ANONYMOUS,
    HIDDEN_GROUP,
    MalformedAccess,
    Principal,
    front_matter_groups,
    load_users,
    parse_access_rules,
    resolve_principal,
)
from kbagent.kb.ingest import Ingestor
from kbagent.kb.knowledge_base import KnowledgeBase
from kbagent.kb.search import HybridSearcher
from kbagent.kb.views import FileViews

runner = CliRunner()
EXEC = Principal("maya", frozenset({"executives"}))
EVERY = Principal("root", frozenset({"executives", "hr", "all-staff", "engineering"}))
BODY = "# Pay\n\nThe zanzibarite bonus pool is 424242 dollars.\n"
PUBLIC = {"open.md": "# Open\n\nThe cafeteria opens at 8 am.\n"}

# every malformed declaration the issue lists (and a few more of the same kind)
MALFORMED = {
    "broken_yaml": "---\naccess: [executives\n---\n",
    "empty": "---\naccess:\n---\n",
    "number": "---\naccess: 5\n---\n",
    "mapping": "---\naccess: {group: executives}\n---\n",
    "empty_list": "---\naccess: []\n---\n",
    "all_mixed": "---\naccess: [executives, all]\n---\n",
    "everyone_mixed": "---\naccess: everyone, hr\n---\n",
    "bool": "---\naccess: true\n---\n",
    "bad_name": "---\naccess: [Exec Team]\n---\n",
    "not_a_string": "---\naccess: [executives, 3]\n---\n",
    "empty_string": "---\naccess: ''\n---\n",
    "twice": "---\naccess: all\nAccess: executives\n---\n",
    # issue 45: YAML keeps the last of a repeated key; the same spelling twice is malformed
    "twice_same_spelling": "---\naccess: [executives]\naccess: all\n---\n",
    "twice_quoted": "---\naccess: [executives]\n'access': all\n---\n",
    "twice_toml": "+++\naccess = ['executives']\naccess = 'all'\n+++\n",
    "merged_in": "---\nd: &d {access: all}\n<<: *d\n---\n",
    "never_closes": "---\naccess: executives\ntitle: x\n",
    "broken_toml": "+++\naccess = [executives\n+++\n",
    "yaml_list": "---\n- access: all\n---\n",
}


def ingest(settings, make_folder, embedder, files):
    folder = make_folder(files)
    return folder, Ingestor(settings, "k", embedder=embedder).run(folder)


def readable(settings, principal, path="pay.md") -> bool:
    kb = KnowledgeBase(settings, "k")
    try:
        in_views = path in FileViews(kb, principal).paths()
        if path == "pay.md":  # search agrees with the file views
            hits = HybridSearcher([kb]).search("zanzibarite bonus pool", k=5, mode="bm25",
                                               principal=principal).hits
            assert in_views == any(h.path == path for h in hits)
        return in_views
    finally:
        kb.close()


@pytest.mark.parametrize("head", MALFORMED.values(), ids=MALFORMED.keys())
def test_a_malformed_declaration_hides_the_document_from_everyone(settings, make_folder,
                                                                   embedder, head):
    _, report = ingest(settings, make_folder, embedder, {"pay.md": head + BODY, **PUBLIC})
    pay = {f.path: f for f in report.files}["pay.md"]
    assert pay.status == "added" and pay.hidden
    assert pay.reason.startswith("malformed access declaration (")
    assert pay.reason.endswith("; hidden until fixed")
    assert report.summary()["hidden"] == 1 and report.summary()["added"] == 2
    for who in (ANONYMOUS, EXEC, EVERY):
        assert not readable(settings, who), who
    assert readable(settings, ANONYMOUS, "open.md")


@pytest.mark.parametrize("head", ["---\naccess:\n---\n", "---\naccess: 5\n---\n",
                                  "---\naccess: []\n---\n"])
def test_a_malformed_declaration_does_not_override_kbaccess_to_open(settings, make_folder,
                                                                    embedder, head):
    files = {".kbaccess": "pay.md executives\n", "pay.md": head + BODY, **PUBLIC}
    ingest(settings, make_folder, embedder, files)
    assert not readable(settings, ANONYMOUS) and not readable(settings, EXEC)


@pytest.mark.parametrize("head", [
    "\n---\naccess: [executives]\n---\n",  # a blank line before ---
    "  \n\n---\naccess: executives\n---\n",
    '+++\ntitle = "Pay"\naccess = ["executives"]\n+++\n',  # TOML front-matter
    "---\nAccess: executives\n---\n",  # the key's case
    "---\nACCESS: [executives]\n---\n",
    "---\naccess: 'executives, hr'\n---\n",  # a comma-separated string
])
def test_every_way_of_writing_front_matter_is_recognised(settings, make_folder, embedder, head):
    _, report = ingest(settings, make_folder, embedder, {"pay.md": head + BODY, **PUBLIC})
    assert not {f.path: f for f in report.files}["pay.md"].hidden
    assert not readable(settings, ANONYMOUS)
    assert readable(settings, EXEC)


def test_the_hidden_document_stays_hidden_and_noted_until_fixed(settings, make_folder, embedder):
    folder, _ = ingest(settings, make_folder, embedder,
                       {"pay.md": "---\naccess: [executives\n---\n" + BODY, **PUBLIC})
    again = Ingestor(settings, "k", embedder=embedder).run(folder)
    pay = {f.path: f for f in again.files}["pay.md"]
    assert pay.status == "unchanged" and pay.hidden and "hidden until fixed" in pay.reason
    assert again.summary()["hidden"] == 1
    (folder / "pay.md").write_text("---\naccess: [executives]\n---\n" + BODY)
    fixed = Ingestor(settings, "k", embedder=embedder).run(folder)
    pay = {f.path: f for f in fixed.files}["pay.md"]
    assert pay.status == "updated" and not pay.hidden and "hidden" not in fixed.summary()
    assert readable(settings, EXEC) and not readable(settings, ANONYMOUS)


def test_ingest_prints_the_note_and_counts_it(make_folder, kb_home):
    folder = make_folder({"pay.md": "---\naccess: 5\n---\n" + BODY, **PUBLIC})
    res = runner.invoke(app, ["ingest", str(folder), "--kb", "k", "-q"])
    assert res.exit_code == 0, res.output
    assert ("note pay.md: malformed access declaration (front-matter access: expected a group "
            "name or a list of them, got int 5); hidden until fixed") in res.output
    assert "1 hidden" in res.output


# ------------------------------------------------------------ 'all' is reserved
def test_all_is_reserved_no_caller_can_claim_it(tmp_path):
    for word in ("all", "everyone", "public", "hr,all"):
        with pytest.raises(BadInputError, match="reserved"):
            resolve_principal(tmp_path / "users.toml", groups=word)
    users = tmp_path / "users.toml"
    users.write_text('[users]\nmallory = ["all"]\n')
    with pytest.raises(BadInputError, match="reserved"):
        load_users(users)


def test_groups_all_cannot_read_a_document_that_mixes_all(settings, make_folder, embedder,
                                                          kb_home):
    ingest(settings, make_folder, embedder,
           {"pay.md": "---\naccess: [executives, all]\n---\n" + BODY, **PUBLIC})
    res = runner.invoke(app, ["search", "zanzibarite", "--kb", "k", "--mode", "bm25",
                              "--groups", "all"])
    assert res.exit_code != 0 and "reserved" in res.output and "424242" not in res.output
    assert not readable(settings, EXEC)


# ------------------------------------------------- one parser, both declarations
@pytest.mark.parametrize("value", [None, 5, 1.5, True, {}, {"group": "x"}, [], [None], [1],
                                   ["executives", "all"], ["all", "hr"], "", " , ", "hr,",
                                   "Exec Team", ["ok", ""], ["executives", ["hr"]]])
def test_front_matter_groups_refuses_everything_but_names(value):
    with pytest.raises(MalformedAccess):
        front_matter_groups(value)


def test_front_matter_groups_accepts_names_and_all():
    assert front_matter_groups("all") == [] == front_matter_groups(["Everyone"])
    assert front_matter_groups(["all", "all"]) == []
    assert front_matter_groups("HR, it") == ["hr", "it"]
    assert front_matter_groups(["executives", "hr", "hr"]) == ["executives", "hr"]


@pytest.mark.parametrize("line", ["docs/** all hr", "docs/** executives,all", "docs/**",
                                  "docs/** Exec!", "docs/** public everyone hr"])
def test_kbaccess_goes_through_the_same_parser(line):
    with pytest.raises(MalformedAccess):
        parse_access_rules(line + "\n")


def test_kbaccess_accepts_commas_like_front_matter():
    rules = parse_access_rules("docs/** hr,it\nopen/** all\n")
    assert rules.groups_for("docs/a.md") == ["hr", "it"] and rules.groups_for("open/x") == []


def test_hidden_group_is_not_a_group_anyone_can_hold(tmp_path):
    with pytest.raises(BadInputError):
        resolve_principal(tmp_path / "u.toml", groups=HIDDEN_GROUP)
