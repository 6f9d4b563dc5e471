"""``kbagent verify``: answers saved by ``batch``, a trace and the history, checked
again after real files were edited, moved, deleted and renamed and re-ingested."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import kbagent.agent.llm as llm_module
from kbagent.cli import app
from kbagent.errors import ExitCode
from kbagent.kb.ingest import Ingestor
from tests.scripted_llm import ScriptedLLM

runner = CliRunner()

CACHE = ("# Cache\n\nIntro line.\n\nThe default TTL is 1 hour.\nEntries expire after that.\n"
         "\nUnrelated closing line.\n")
RETRY = "# Retry\n\nClients retry three times.\nThen they give up.\n"


def cat(path: str, start: int, end: int) -> str:
    return (f'Thought: Read it.\nAction: kb_cat\nAction Input: {{"path": "{path}", '
            f'"start_line": {start}, "end_line": {end}}}')


def final(text: str) -> str:
    return f"Thought: Done.\nFinal Answer: {text} [1]."


@pytest.fixture
def world(make_folder, settings, embedder, monkeypatch, tmp_path):
    """KB ``notes`` from a real folder, a scripted model, and a batch output file of two
    answers: q1 cites cache.md:5-6, q2 cites retry.md:3-4."""
    root = make_folder({"cache.md": CACHE, "retry.md": RETRY})
    llm: dict = {}
    monkeypatch.setenv("KBAGENT_SEARCH_FIRST", "model")
    monkeypatch.setattr(llm_module, "load_llm", lambda s: llm["it"])

    def script(*replies: str) -> None:
        llm["it"] = ScriptedLLM(list(replies))

    def reingest() -> None:
        Ingestor(settings, "notes", embedder=embedder).run(root)

    reingest()
    questions = tmp_path / "q.jsonl"
    questions.write_text('{"id": "q1", "question": "What is the default TTL?"}\n'
                         '{"id": "q2", "question": "How often do clients retry?"}\n')
    out = tmp_path / "answers.jsonl"
    script(cat("cache.md", 5, 6), final("The default TTL is 1 hour"),
           cat("retry.md", 3, 4), final("Clients retry three times"))
    res = runner.invoke(app, ["batch", str(questions), "-o", str(out), "--kb", "notes",
                              "--mode", "agent", "--quiet"])
    assert res.exit_code == 0, res.stderr
    return root, reingest, script, out


def verify(*args: str):
    return runner.invoke(app, ["verify", *args])


def states(res) -> dict[str, str]:
    return {json.loads(line)["source"].split("(")[-1].rstrip(")"): json.loads(line)["state"]
            for line in res.stdout.splitlines()}


def test_fresh_answers_verify_unchanged(world):
    *_, out = world
    res = verify(str(out))
    assert res.exit_code == 0, res.stderr
    assert res.stdout.count("unchanged") == 2
    assert "2 answers checked: 2 unchanged" in res.stderr


def test_an_edit_makes_one_answer_changed_and_exits_non_zero(world):
    root, reingest, _, out = world
    (root / "cache.md").write_text(CACHE.replace("1 hour", "30 minutes"))
    reingest()
    res = verify(str(out), "--json")
    assert res.exit_code == ExitCode.ERROR
    assert states(res) == {"q1": "changed", "q2": "unchanged"}
    rec = json.loads(res.stdout.splitlines()[0])
    ref = rec["references"][0]
    assert ref["now_says"].startswith("The default TTL is 30 minutes.")
    assert "+30 minutes." in ref["diff"]
    text = verify(str(out))
    assert "changed   " in text.stdout and "now says The default TTL is 30 minutes" in \
        text.stdout


def test_moved_lines_verify_as_moved_and_exit_zero(world):
    root, reingest, _, out = world
    (root / "retry.md").write_text(RETRY.replace("# Retry\n", "# Retry\n\nNew intro.\n"))
    reingest()
    res = verify(str(out), "--json")
    assert res.exit_code == 0
    assert states(res) == {"q1": "unchanged", "q2": "moved"}
    ref = json.loads(res.stdout.splitlines()[1])["references"][0]
    assert (ref["now_start"], ref["now_end"]) == (5, 6)


def test_delete_is_gone_and_rename_is_moved(world):
    root, reingest, _, out = world
    (root / "cache.md").unlink()
    (root / "retry.md").rename(root / "retries.md")
    reingest()
    res = verify(str(out), "--json")
    assert res.exit_code == ExitCode.ERROR
    assert states(res) == {"q1": "gone", "q2": "moved"}
    ref = json.loads(res.stdout.splitlines()[1])["references"][0]
    assert ref["now_path"] == "retries.md"


def test_reask_shows_old_and_new_answers_side_by_side(world):
    root, reingest, script, out = world
    (root / "cache.md").write_text(CACHE.replace("1 hour", "30 minutes"))
    reingest()
    script(cat("cache.md", 5, 6), final("The default TTL is 30 minutes"))
    res = verify(str(out), "--reask")
    assert res.exit_code == ExitCode.ERROR, res.stderr
    assert "then" in res.stdout and "now" in res.stdout
    assert "The default TTL is 1 hour" in res.stdout
    assert "The default TTL is 30 minutes" in res.stdout
    script(cat("cache.md", 5, 6), final("The default TTL is 30 minutes"))
    rec = json.loads(verify(str(out), "--reask", "--json").stdout.splitlines()[0])
    assert rec["reasked"]["answer"].startswith("The default TTL is 30 minutes")


def test_a_trace_is_verified_from_its_final_event(world, tmp_path):
    root, reingest, script, _ = world
    script(cat("retry.md", 3, 4), final("Clients retry three times"))
    res = runner.invoke(app, ["ask", "How often?", "--kb", "notes", "--mode", "agent",
                              "--trace", str(tmp_path / "traces"), "--quiet"])
    assert res.exit_code == 0, res.stderr
    trace = next((tmp_path / "traces").glob("*.jsonl"))
    assert verify(str(trace)).exit_code == 0
    (root / "retry.md").write_text(RETRY.replace("three", "five"))
    reingest()
    res = verify(str(trace))
    assert res.exit_code == ExitCode.ERROR and "changed" in res.stdout


def test_history_answers_are_verified(world, settings):
    from kbagent.agent.llm.trace import result_from_dict
    from kbagent.history import History

    root, reingest, _, out = world
    history = History(settings.home)
    for line in out.read_text().splitlines():
        history.add(result_from_dict(json.loads(line)))
    assert verify("--history").exit_code == 0
    (root / "cache.md").unlink()
    reingest()
    res = verify("--history", "--json")
    assert res.exit_code == ExitCode.ERROR
    assert sorted(json.loads(x)["state"] for x in res.stdout.splitlines()) == ["gone",
                                                                               "unchanged"]


def test_bad_input_is_one_line_and_exit_code(world, tmp_path):
    assert verify().exit_code == ExitCode.BAD_INPUT
    missing = verify(str(tmp_path / "nope.jsonl"))
    assert missing.exit_code == ExitCode.NOT_FOUND and "no such file" in missing.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n")
    res = verify(str(bad))
    assert res.exit_code == ExitCode.BAD_INPUT and res.stderr.count("\n") == 1
