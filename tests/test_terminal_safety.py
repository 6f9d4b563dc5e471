"""Documents cannot drive the terminal: every surface that prints document text or
file names (search, ask steps/answer/references, ref, code, kbs, batch's stderr,
replay; the TUI in tests/test_tui_safety.py; the HTML report) strips terminal control
sequences and shows Rich/Textual markup as written. The KB is real (a folder with a
hostile document, a hostile file name and a hostile folder name, really ingested);
the scripted LLM only stands in for the model's decisions."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import kbagent.agent.llm as llm_module
from kbagent.cli import app
from tests.scripted_llm import ScriptedLLM

runner = CliRunner()

CLIPBOARD = "\x1b]52;c;Q0xJUEJPQVJE\x07"  # base64 "CLIPBOARD"
TITLE = "\x1b]0;PWNED-TITLE\x1b\\"
CLEAR = "\x1b[2J\x1b[H"
C1 = "\x9b31m\x9d0;C1-TITLE\x9c"
MARKUP = "[bold]exponential backoff[/bold]"
LINK = "[link=https://evil.test]the runbook[/link]"
# in a name: BEL ends the title (ST is ESC \\, and kb/views.py reads "\\" as "/"), and no
# "/": an open tag only
NAME_TITLE = "\x1b]0;PWNED-TITLE\x07"
HOSTILE_NAME = f"notes/esc{NAME_TITLE}[blink]b.md"
DOC = (f"# Retry policy{TITLE}\n\n"
       f"The retry policy uses {MARKUP} {CLIPBOARD}with a cap of 5 s.\n"
       f"See {LINK} {CLEAR}for the details{C1}.\n")
CODE = (f"def retry_handler():  # {CLIPBOARD}{TITLE}[bold]handled[/bold]\n"
        "    return 1\n")
# what must never reach a terminal: escape, BEL, the C1 CSI/OSC/ST, nor their payloads
FORBIDDEN = ("\x1b", "\x07", "\x9b", "\x9d", "\x9c", "Q0xJUEJPQVJE", "PWNED-TITLE",
             "C1-TITLE")


def assert_safe(text: str, payloads: bool = True) -> None:
    """No control character reaches the screen, nor (``payloads``) what the stripped
    sequences carried. Text streamed in pieces (thoughts) may split a sequence: each
    piece is cleaned, so its payload can show as text, but never as a command."""
    for bad in FORBIDDEN if payloads else FORBIDDEN[:5]:
        assert bad not in text, f"{bad!r} reached the screen: {text[:400]!r}"


@pytest.fixture
def hostile(settings, tmp_path, embedder):
    """A KB 'evil' ingested from a folder whose name, file names and text attack."""
    from kbagent.kb.ingest import Ingestor

    root = tmp_path / f"docs{NAME_TITLE}[reverse]src"
    (root / "notes").mkdir(parents=True)
    (root / HOSTILE_NAME).write_text(DOC, encoding="utf-8")
    (root / "guide.md").write_text(DOC, encoding="utf-8")
    (root / "tool.py").write_text(CODE, encoding="utf-8")
    report = Ingestor(settings, "evil", embedder=embedder).run(root)
    assert {f.path for f in report.files if f.status == "added"} >= {HOSTILE_NAME, "guide.md"}
    return settings


@pytest.fixture
def script(monkeypatch):
    monkeypatch.setenv("KBAGENT_SHORT_ANSWER", "harness")  # the script plays no short-answer call
    holder: dict = {}
    monkeypatch.setenv("KBAGENT_SEARCH_FIRST", "model")

    def use(*replies: str) -> ScriptedLLM:
        holder["llm"] = ScriptedLLM(list(replies))
        return holder["llm"]

    monkeypatch.setattr(llm_module, "load_llm", lambda settings: holder["llm"])
    return use


SEARCH = ("Thought: I search " + TITLE + "[bold]now[/bold].\nAction: kb_search\n"
          'Action Input: {"query": "retry policy backoff \\u001b]0;ARG-TITLE\\u0007"}')
ANSWER = ("Thought: Found it.\nFinal Answer: The retry policy uses " + MARKUP + " "
          + CLIPBOARD + "with a cap of 5 s [1].")


def test_the_sanitiser_strips_sequences_and_keeps_text():
    from kbagent.safe_text import clean, json_text

    assert clean(DOC) == ("# Retry policy\n\nThe retry policy uses " + MARKUP
                          + " with a cap of 5 s.\nSee " + LINK + " for the details.\n")
    assert clean("a\r\nb\tc\x00d\x7f\x85e") == "a\nb\tcde"
    assert clean("\udcffcache") == "\ufffdcache"
    raw = {"t": DOC + "\x85"}
    assert json.loads(json_text(raw)) == raw
    assert not any(c in json_text(raw) for c in "\x1b\x07\x9b\x85")


def test_search_shows_hostile_text_and_names_as_plain_text(hostile):
    res = runner.invoke(app, ["search", "retry policy exponential backoff", "--kb", "evil"])
    assert res.exit_code == 0, res.output
    assert_safe(res.stdout + res.stderr)
    assert MARKUP in res.stdout and "notes/esc[blink]b.md:" in res.stdout


def test_search_on_a_colour_terminal_keeps_its_own_styles_only(hostile, monkeypatch):
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("TERM", "xterm-256color")
    res = runner.invoke(app, ["search", "retry policy exponential backoff", "--kb", "evil"])
    assert res.exit_code == 0, res.output
    assert "\x1b[" in res.stdout  # rich's own colours are kept
    for bad in ("\x1b]", "\x1b[2J", "\x07", "\x9b", "Q0xJUEJPQVJE", "PWNED-TITLE"):
        assert bad not in res.stdout + res.stderr
    assert "exponential backoff[/bold]" in res.stdout


def test_search_json_escapes_every_control_character(hostile):
    res = runner.invoke(app, ["search", "retry policy", "--kb", "evil", "--json"])
    assert res.exit_code == 0, res.output
    assert not any(c in res.stdout for c in "\x1b\x07\x9b\x9c\x9d")
    hits = json.loads(res.stdout)
    assert any(CLIPBOARD in h["text"] for h in hits)  # the data itself is kept exactly


def test_ask_steps_answer_and_references_are_plain_text(hostile, script):
    script(SEARCH, ANSWER)
    res = runner.invoke(app, ["ask", "What is the retry policy?", "--kb", "evil", "--mode",
                              "agent", "--all-references"])
    assert res.exit_code == 0, res.output
    assert_safe(res.stdout)
    assert_safe(res.stderr, payloads=False)
    assert "[bold]now[/bold]." in res.stderr  # the thought, markup as written
    assert "\nReferences\n" in res.stdout
    assert "notes/esc[blink]b.md:" in res.stdout or "guide.md:" in res.stdout
    assert MARKUP in res.stdout


def test_ref_shows_the_cited_lines_as_plain_text(hostile, script):
    script(SEARCH, ANSWER)
    assert runner.invoke(app, ["ask", "What is the retry policy?", "--kb", "evil",
                               "--mode", "agent"]).exit_code == 0
    res = runner.invoke(app, ["ref", "1"])
    assert res.exit_code == 0, res.output
    assert_safe(res.stdout + res.stderr)
    assert MARKUP in res.stdout and LINK in res.stdout


def test_replay_shows_a_recorded_run_as_plain_text(hostile, script, tmp_path):
    script(SEARCH, ANSWER)
    traces = tmp_path / "traces"
    assert runner.invoke(app, ["ask", "What is the retry policy?", "--kb", "evil", "--mode",
                               "agent", "--trace", str(traces)]).exit_code == 0
    (trace,) = traces.glob("*.jsonl")
    res = runner.invoke(app, ["replay", str(trace)])
    assert res.exit_code == 0, res.output
    assert_safe(res.stdout)
    assert_safe(res.stderr, payloads=False)
    assert MARKUP in res.stdout


def test_code_lookups_print_source_lines_as_plain_text(hostile):
    res = runner.invoke(app, ["code", "def", "retry_handler", "--kb", "evil"])
    assert res.exit_code == 0, res.output
    assert_safe(res.stdout + res.stderr)
    assert "tool.py:1" in res.stdout and "[bold]handled[/bold]" in res.stdout
    res = runner.invoke(app, ["code", "outline", "tool.py", "--kb", "evil"])
    assert res.exit_code == 0, res.output
    assert_safe(res.stdout + res.stderr)


def test_kbs_shows_a_hostile_source_folder_as_plain_text(hostile):
    res = runner.invoke(app, ["kbs"], env={"COLUMNS": "400"})
    assert res.exit_code == 0, res.output
    assert_safe(res.stdout + res.stderr)
    assert "[reverse]src" in res.stdout.replace("\n", "")


def test_batch_progress_on_stderr_is_plain_text(hostile, script, tmp_path):
    script(ANSWER)
    src = tmp_path / "q.jsonl"
    src.write_text(json.dumps({"id": f"q{TITLE}[bold]1[/bold]", "question": "Retry policy?",
                               "kb": ["missing"]}) + "\n")
    res = runner.invoke(app, ["batch", str(src), "--kb", "evil", "--mode", "rag"])
    assert_safe(res.stderr)
    assert "q[bold]1[/bold]" in res.stderr  # the warning names the question as written
    assert not any(c in res.stdout for c in "\x1b\x07\x9b")


def test_an_error_quoting_a_hostile_name_is_plain_text(hostile):
    res = runner.invoke(app, ["code", "outline", f"no{TITLE}[bold]such[/bold].py", "--kb",
                              "evil"])
    assert res.exit_code != 0
    assert_safe(res.stdout + res.stderr)


def test_the_html_report_holds_no_control_characters():
    from kbagent.evaluation.html_report import _cell, _page

    page = _page(f"eval {TITLE}", "KB", "<tr>" + _cell(DOC) + "</tr>", "rows",
                 "<tr>" + _cell(f"{MARKUP} {LINK} {C1}") + "</tr>")
    assert_safe(page)
    assert MARKUP in page and "[link=https://evil.test]" in page


def test_the_qa_html_report_shows_answers_as_plain_text():
    from kbagent.evaluation.html_report import qa_html
    from kbagent.evaluation.qa import QaReport, QaRow, summarize

    row = QaRow(id="q1", kind="fact", mode="rag", routed="rag", question=f"Retry?{TITLE}",
                answer=f"The policy uses {MARKUP} {CLIPBOARD}{CLEAR}.",
                short_answer=f"{MARKUP} [1]{CLEAR}", answer_f1=0.0, golds=["5 s"],
                correct=False, em=0.0, f1=0.0, contains=False, abstained=False,
                support_recall=None, all_support=None, cited=1, cited_gold=0,
                cited_paths=[HOSTILE_NAME], steps=1, queries=1, tokens=10, latency_s=0.1,
                error=f"boom{C1}")
    page = qa_html(QaReport("d", "evil", [summarize("rag", [row])], [row]))
    assert_safe(page)
    assert MARKUP in page and "notes/esc[blink]b.md" in page
