"""References that know their source (kb/provenance.py): real files edited, lines
moved, files deleted and renamed, re-ingested, then the stored references checked
against the live KB, directly and through ``kbagent ask`` / ``kbagent ref``."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import kbagent.agent.llm as llm_module
from kbagent.agent.records import References
from kbagent.cli import app
from kbagent.errors import ExitCode
from kbagent.kb.ingest import Ingestor
from kbagent.kb.knowledge_base import KnowledgeBase
from kbagent.kb.provenance import (
    ReferenceChecker,
    RefState,
    check_reference,
    stamp_references,
    word_diff,
)
from tests.scripted_llm import ScriptedLLM

runner = CliRunner()

CACHE = ("# Cache\n\nIntro line.\n\nThe default TTL is 1 hour.\nEntries expire after that.\n"
         "\nUnrelated closing line.\n")


@pytest.fixture
def kb_folder(make_folder, settings, embedder):
    """A folder ingested as KB ``notes``; ``reingest()`` applies edits to it."""
    root = make_folder({"cache.md": CACHE, "other.md": "# Other\n\nSomething else.\n"})

    def reingest() -> None:
        Ingestor(settings, "notes", embedder=embedder).run(root)

    reingest()
    return root, reingest


def stamped(settings, start: int = 5, end: int = 6, path: str = "cache.md") -> dict:
    kb = KnowledgeBase(settings, "notes")
    try:
        refs = References.from_json([{"kb": "notes", "path": path, "chunks": [
            {"n": 1, "kb": "notes", "path": path, "start_line": start, "end_line": end,
             "excerpt": "The default TTL is 1 hour. Entries expire after that."}]}])
        stamp_references({"notes": kb}, refs.chunks())
    finally:
        kb.close()
    return refs.to_json()[0]["chunks"][0]


def check(settings, ref: dict):
    checker = ReferenceChecker(settings)
    try:
        return checker.check(ref)
    finally:
        checker.close()


def test_a_stamp_holds_text_hash_document_hash_and_generation(kb_folder, settings):
    ref = stamped(settings)
    assert len(ref["text_sha"]) == 64 and len(ref["doc_hash"]) == 64
    assert ref["generation"].startswith("gen-")
    assert check(settings, ref).state is RefState.UNCHANGED


def test_an_edit_elsewhere_in_the_file_keeps_the_reference_unchanged(kb_folder, settings):
    root, reingest = kb_folder
    ref = stamped(settings)
    (root / "cache.md").write_text(CACHE.replace("Unrelated closing", "Another closing"))
    reingest()
    c = check(settings, ref)
    assert c.state is RefState.UNCHANGED and "changed elsewhere" in c.detail


def test_an_edit_of_the_cited_lines_is_changed_with_what_they_say_now(kb_folder, settings):
    root, reingest = kb_folder
    ref = stamped(settings)
    (root / "cache.md").write_text(CACHE.replace("1 hour", "15 minutes"))
    reingest()
    c = check(settings, ref)
    assert c.state is RefState.CHANGED
    assert c.detail.startswith("changed since the answer: now says The default TTL is 15 "
                               "minutes.")
    assert "-1 hour." in c.diff and "+15 minutes." in c.diff


def test_moved_lines_are_found_again_at_their_new_place(kb_folder, settings):
    root, reingest = kb_folder
    ref = stamped(settings)
    (root / "cache.md").write_text(CACHE.replace("Intro line.\n", "Intro line.\n\nA new "
                                                 "paragraph\nof two lines.\n"))
    reingest()
    c = check(settings, ref)
    assert c.state is RefState.MOVED
    assert (c.now_path, c.now_start, c.now_end) == ("cache.md", 8, 9)
    assert c.detail == "moved since the answer: now lines 8-9"


def test_a_deleted_file_is_gone(kb_folder, settings):
    root, reingest = kb_folder
    ref = stamped(settings)
    (root / "cache.md").unlink()
    reingest()
    c = check(settings, ref)
    assert c.state is RefState.GONE and "cache.md was deleted" in c.detail


def test_a_renamed_file_is_moved_to_its_new_path(kb_folder, settings):
    root, reingest = kb_folder
    ref = stamped(settings)
    (root / "cache.md").rename(root / "caching.md")
    reingest()
    c = check(settings, ref)
    assert c.state is RefState.MOVED
    assert (c.now_path, c.now_start, c.now_end) == ("caching.md", 5, 6)


def test_cited_lines_cut_off_by_a_shorter_file_are_gone(kb_folder, settings):
    root, reingest = kb_folder
    ref = stamped(settings)
    (root / "cache.md").write_text("# Cache\n\nShort now.\n")
    reingest()
    c = check(settings, ref)
    assert c.state is RefState.GONE and "has 3 lines now" in c.detail


def test_a_reference_without_hashes_cannot_be_checked(kb_folder, settings):
    ref = {k: v for k, v in stamped(settings).items() if k not in ("text_sha", "doc_hash")}
    c = check(settings, ref)
    assert c.state is RefState.UNCHECKED
    assert c.detail == "cannot check: recorded before hashes"


def test_a_removed_kb_is_gone(kb_folder, settings):
    from kbagent.kb.knowledge_base import remove_kb

    ref = stamped(settings)
    remove_kb(settings, "notes")
    assert check(settings, ref).state is RefState.GONE


def test_now_says_carries_no_terminal_control_sequences(kb_folder, settings):
    root, reingest = kb_folder
    ref = stamped(settings)
    (root / "cache.md").write_text(CACHE.replace("1 hour", "\x1b[2J1 day"))
    reingest()
    c = check(settings, ref)
    assert c.state is RefState.CHANGED and "\x1b" not in c.detail and "\x1b" not in c.now_says


def test_word_diff_names_removed_and_added_words():
    assert word_diff("a b c d", "a x c d") == ["-b", "+x"]
    assert word_diff("same", "same") == []


def test_a_check_does_not_reveal_a_document_the_principal_may_not_read(make_folder, settings,
                                                                      embedder):
    from kbagent.kb.access import Principal

    root = make_folder({"secret.md": "---\naccess: [hr]\n---\n# Pay\n\nSalaries rise 3%.\n"})
    Ingestor(settings, "notes", embedder=embedder).run(root)
    kb = KnowledgeBase(settings, "notes")
    refs = References.from_json([{"kb": "notes", "path": "secret.md", "chunks": [
        {"n": 1, "kb": "notes", "path": "secret.md", "start_line": 6, "end_line": 6}]}])
    stamp_references({"notes": kb}, refs.chunks())
    ref = refs.to_json()[0]["chunks"][0]
    assert check_reference(kb, ref, Principal("hr-person", frozenset({"hr"}))).state \
        is RefState.UNCHANGED
    outsider = check_reference(kb, ref, Principal("x", frozenset({"eng"})))
    kb.close()
    assert outsider.state is RefState.GONE and "Salaries" not in outsider.detail


# ------------------------------------------------------------------ through the CLI
@pytest.fixture
def script(monkeypatch):
    monkeypatch.setenv("KBAGENT_SHORT_ANSWER", "harness")  # the script plays no short-answer call
    holder: dict = {}
    monkeypatch.setenv("KBAGENT_SEARCH_FIRST", "model")

    def use(*replies: str) -> None:
        holder["llm"] = ScriptedLLM(list(replies))

    monkeypatch.setattr(llm_module, "load_llm", lambda settings: holder["llm"])
    return use


CAT = ('Thought: Read it.\nAction: kb_cat\nAction Input: {"path": "cache.md", "start_line": 5, '
       '"end_line": 6}')
ANSWER = "Thought: Found it.\nFinal Answer: The default TTL is 1 hour [1]."


def ask(script) -> dict:
    script(CAT, ANSWER)
    res = runner.invoke(app, ["ask", "What is the default TTL?", "--kb", "notes", "--mode",
                              "agent", "--json"])
    assert res.exit_code == 0, res.stderr
    return json.loads(res.stdout)


def test_ask_json_references_carry_their_hashes(kb_folder, script):
    data = ask(script)
    chunk = data["references"][0]["chunks"][0]
    assert (chunk["path"], chunk["start_line"], chunk["end_line"]) == ("cache.md", 5, 6)
    assert len(chunk["text_sha"]) == 64 and chunk["generation"] == "gen-000001"


def test_ref_says_unchanged_changed_moved_and_gone(kb_folder, script):
    root, reingest = kb_folder
    ask(script)
    res = runner.invoke(app, ["ref", "1"])
    assert res.exit_code == 0 and "unchanged since the answer" in res.stdout

    (root / "cache.md").write_text(CACHE.replace("1 hour", "2 hours"))
    reingest()
    res = runner.invoke(app, ["ref", "1"])
    assert res.exit_code == 0
    assert "changed since the answer: now says The default TTL is 2 hours." in res.stdout
    assert "-1 hour." in res.stdout and "+2 hours." in res.stdout

    (root / "cache.md").write_text("# Cache\n\nNew top.\n\n" + CACHE.split("\n", 2)[2])
    reingest()
    ask(script)  # a fresh answer cites lines 5-6 (now 'Intro line.'); push them down by two
    text = (root / "cache.md").read_text()
    (root / "cache.md").write_text(text.replace("New top.\n", "New top.\nOne.\nTwo.\n"))
    reingest()
    res = runner.invoke(app, ["ref", "1"])
    assert res.exit_code == 0, res.stderr
    assert "moved since the answer: now lines 7-8" in res.stdout
    assert "7│ Intro line." in res.stdout and "cache.md:7-8" in res.stdout  # where it is now

    (root / "cache.md").unlink()
    reingest()
    res = runner.invoke(app, ["ref", "1"])
    assert res.exit_code == ExitCode.NOT_FOUND
    assert "gone since the answer: cache.md was deleted" in res.stderr


def test_ref_on_an_answer_saved_before_hashes(kb_folder, script, settings):
    from kbagent.session import last_answer_path

    ask(script)
    path = last_answer_path(settings)
    data = json.loads(path.read_text())
    for key in ("references", "all_references"):
        for d in data[key]:
            for c in d["chunks"]:
                for k in ("text_sha", "doc_hash", "generation"):
                    c.pop(k, None)
    path.write_text(json.dumps(data))
    res = runner.invoke(app, ["ref", "1"])
    assert res.exit_code == 0 and "cannot check: recorded before hashes" in res.stdout
    assert "5│" in res.stdout


def test_a_renamed_and_edited_file_is_found_by_the_words_of_the_excerpt(kb_folder, settings):
    root, reingest = kb_folder
    ref = stamped(settings)
    (root / "cache.md").unlink()
    (root / "notes").mkdir()
    (root / "notes" / "ttl.md").write_text(CACHE.replace("Unrelated closing", "Edited"))
    reingest()
    c = check(settings, ref)
    assert c.state is RefState.MOVED
    assert (c.now_path, c.now_start, c.now_end) == ("notes/ttl.md", 5, 6)
