"""The harness's evidence stage, units of reference entries: an entry's row of values, a
``--help`` listing's options, a Sphinx entry and its version note, each read with the
description that goes with it, and the answer that quotes the entry with the description
it leads with, or a sentence with the line it leads into (``answer/units.py``,
``harness/unit_links.py``, ``answer/unit_lines.py``). Tables too: a key/value box and an
HTML table of label | value rows are read "label: value" (no header row), while a
Markdown table keeps its header row.

The harness policy's frozen rules, on constructed text: see ``tests/harness_cases.py``.
"""

from __future__ import annotations

from pathlib import Path

from kbagent.agent.answer.citations import Citation
from kbagent.agent.answer.evidence import score_units
from kbagent.agent.answer.focus import focus_of
from kbagent.agent.answer.units import UnitKind, units_of
from kbagent.agent.harness.short import short_answer
from kbagent.kb.html_text import html_to_lines
from tests.agent_runs import ask_one_file, cite
from tests.agent_runs import ask_one_file as _ask
from tests.harness_cases import DIRECTIVE_BOX as BOX
from tests.harness_cases import FROBD
from tests.harness_cases import option_citation as _cite
from tests.harness_cases import page_citation as _page_cite

OPTIONS = (
    "<html><body><h2>Alphabetical list of main options</h2>\n"
    "<table><tr><td>frob_queue_limit</td><td>Use: main</td><td>Type: integer</td>"
    "<td>Default: 12</td></tr></table>\n"
    "<p>This option sets how many frobs may wait in the queue at any one time.</p>\n"
    "<table><tr><td>frob_size_limit</td><td>Use: main</td><td>Type: string</td>"
    "<td>Default: 40M</td></tr></table>\n"
    "<p>This option limits the maximum size of message that the frob daemon will process."
    "</p>\n<p>The value is expanded for each incoming connection.</p>\n"
    "<p>Note that with a default frob scanner limit of 10M and a message size of 40M, "
    "some problems may result.</p>\n"
    "</body></html>\n")


def test_an_entrys_header_row_alone_is_a_unit_read_with_its_description():
    from kbagent.agent.harness.unit_links import entry_of

    raw = ("frob_size_limit | Use: main | Type: string | Default: 40M\n\n"
           "This option limits the maximum size of message that the frob daemon will "
           "process.\n")
    units = units_of(_cite(raw))
    row = next(u for u in units if u.kind is UnitKind.ROW)
    assert row.text == "frob_size_limit; Use: main; Type: string; Default: 40M"
    assert row.gloss.startswith("This option limits the maximum size")
    desc = next(u for u in units if u.text.startswith("This option"))
    assert "frob_size_limit" in desc.context
    assert entry_of(desc, units) == row


def test_the_answer_quotes_the_entry_above_the_description_it_leads_with(tmp_path: Path):
    """Through the real agent over a real KB: the description of the option is the best
    sentence; its entry row (with the default) is quoted first."""
    final = _ask(tmp_path, "options.html", OPTIONS,
                 "Out of the box, what is the biggest message the frob daemon will take in? "
                 "I mean the built-in limit when I have not configured anything.")
    first = final.result.answer.split("” [")[0]
    assert "frob_size_limit; Use: main; Type: string; Default: 40M" in first


def test_a_parameter_tables_row_is_read_with_the_description_under_it():
    raw = "\n".join(x.text for x in html_to_lines(FROBD)[0])
    units = units_of(cite(raw, "modules/omfrob.html"))
    row = next(u for u in units if u.kind is UnitKind.ROW and "10000" in u.text)
    assert row.text.startswith("type: integer; default: 10000")
    assert row.gloss.startswith("Specifies how long frobd must wait")


def test_a_sentence_that_leads_into_a_line_is_quoted_with_it(tmp_path: Path):
    text = ("<html><body><h2>Max Number of Open Files</h2>\n<p>Some versions of systemd "
            "ignore the limits file. To change limits for a service in systemd, edit\n"
            "/lib/systemd/system/frobd.service and under [Service] add:</p>\n"
            "<pre>LimitNOFILE=&lt;new value&gt;</pre>\n<p>Then run:</p>\n"
            "<pre>systemctl daemon-reload</pre>\n</body></html>\n")
    final = ask_one_file(tmp_path, "open_files.html", text,
                 "Which setting do I add under [Service] in the frobd unit to raise the "
                 "limit on open files?")
    first = final.result.answer.split("” [")[0]
    assert "add: LimitNOFILE=<new value>" in first


def _confval(name: str, description: str, note: str) -> str:
    """One configuration value as Sphinx writes it: a <dt> with its link mark, a <dd>
    with the description and a version note."""
    return (f'<dl class="std confval">\n<dt class="sig sig-object std" id="confval-{name}">\n'
            f'<span class="sig-name descname"><span class="pre">{name}</span></span>'
            f'<a class="headerlink" href="#confval-{name}">¶</a></dt>\n'
            f'<dd><p>{description}</p>\n<div class="versionadded">\n<p><span class='
            f'"versionmodified added">{note}</span></p>\n</div>\n</dd></dl>\n')


FROBDOC = ("<html><body><h1>Configuration</h1>\n<h2>Options for page output</h2>\n"
           + _confval("page_skin", "The skin the page output should use. See the section "
                      "about skins. The default is <code>'heron'</code>.", "New in version 0.6.")
           + _confval("page_footer_fmt", "If this is not None, a footer is inserted at every "
                      "page bottom, using the given format.", "New in version 1.2.")
           + "</body></html>\n")


def test_a_sphinx_entry_is_read_with_its_term_and_its_version_note(tmp_path: Path) -> None:
    from kbagent.kb.html_text import html_to_lines

    text = "\n".join(x.text for x in html_to_lines(FROBDOC)[0])
    units = units_of(cite(text, "config.html"))
    # the link mark is no part of the term, and the note knows whose it is
    assert not any("\u00b6" in u.text for u in units)
    notes = [u for u in units if u.text.startswith("New in version")]
    assert [("page_skin" in u.context, "page_footer_fmt" in u.context) for u in notes] == [
        (True, False), (False, True)]
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    final = ask_one_file(tmp_path / "a", "config.html", FROBDOC,
                         "Since which version can I set page_skin?")
    assert final.result.short_answer.startswith("0.6 [")
    # "if I don't pick one" asks for the default: the value, not the entry's name
    final = ask_one_file(tmp_path / "b", "config.html", FROBDOC,
                         "Which skin does the page output use if I don't pick one?")
    assert final.result.short_answer.startswith("heron [")


def test_a_version_note_after_a_signature_is_not_the_earlier_entrys() -> None:
    from kbagent.kb.html_text import html_to_lines

    html = FROBDOC.replace("</body>", '<dl class="py function"><dt class="sig sig-object py" '
                           'id="frob.open"><span class="sig-name descname">frob.open</span>'
                           '(<em>path</em>, <em>mode</em>)</dt>\n<dd><div class="deprecated">'
                           '<p><span class="versionmodified deprecated">Deprecated since '
                           'version 3.4.</span></p></div></dd></dl>\n</body>')
    text = "\n".join(x.text for x in html_to_lines(html)[0])
    notes = [u for u in units_of(cite(text, "config.html"))
             if u.text.startswith("Deprecated since")]
    assert notes and not any("page_footer_fmt" in u.context for u in notes)


# the middle of `frobd --help` as a chunk holds it: cut from its code block (no fence)
HELP = """  -h, --help            Show help message and configuration info
  -p name               Early-load given plugin module name or entry point
                        (multi-allowed). To avoid loading of plugins, use
                        the no: prefix.
  --trace-config        Trace considerations of conftest files
  --debug=[DEBUG_FILE_NAME]
                        Store internal tracing debug information in this log
                        file. This file is opened with 'w' and truncated as
                        a result, care advised. Default: frobdebug.log.
  -o OVERRIDE_INI, --override-ini=OVERRIDE_INI
                        Override ini option with "option=value" style.
"""


def test_a_help_listing_is_read_one_option_a_unit() -> None:
    for text in (HELP, f"Options:\n\n```\n{HELP}```\n"):
        units = {u.text.split(":")[0]: u for u in units_of(cite(text, "usage.md"))}
        debug = units["--debug=[DEBUG_FILE_NAME]"]
        assert debug.kind is UnitKind.DEFINITION
        assert debug.text.endswith("care advised. Default: frobdebug.log.")
        assert units["-p name"].text.endswith("To avoid loading of plugins, use the no: prefix.")
        assert "-o OVERRIDE_INI, --override-ini=OVERRIDE_INI" in units
        question = "I ran frobd with --debug and no file name; which file do I send them?"
        assert short_answer(focus_of(question), debug.text) == "frobdebug.log"
    # in source code every line stays a unit of its own (a usage text in a docstring)
    lines = [u.text for u in units_of(cite(f'USAGE = """\n{HELP}"""\n', "cli.py"))]
    assert "-p name Early-load given plugin module name or entry point" in lines
    assert "--trace-config Trace considerations of conftest files" in lines
    assert "a result, care advised. Default: frobdebug.log." in lines


def test_a_key_value_box_reads_label_and_value_not_a_header_row():
    units = [u for u in units_of(_page_cite(BOX)) if u.kind is UnitKind.ROW]
    texts = [u.text for u in units]
    assert "Default: TraceLog 250" in texts
    assert "Syntax: TraceLog records" in texts
    assert not any("Description:" in t and "Default:" in t for t in texts)
    default = next(u for u in units if u.text == "Default: TraceLog 250")
    # the row says what it is about through the box's description
    assert "trace records" in default.gloss and "trace records" in default.context


def test_an_html_table_of_label_value_rows_has_no_header_row():
    text = ("List price | $48,000 per appliance\n"
            "Support subscription | $9,600 per appliance per year (20% of list)\n"
            "Lead time | 6 to 8 weeks from order\n")
    c = Citation(1, "docs", "datasheet.html", 1, 3, text, 0.5, "kb_search", raw=text)
    rows = [u.text for u in units_of(c) if u.kind is UnitKind.ROW]
    assert rows == ["List price: $48,000 per appliance",
                    "Support subscription: $9,600 per appliance per year (20% of list)",
                    "Lead time: 6 to 8 weeks from order"]
    question = "What is the list price of one appliance?"
    best = score_units(question, units_of(c))[0]
    assert short_answer(focus_of(question), best.unit.text) == "$48,000"


def test_a_normal_table_keeps_its_header_row():
    table = "| Setting | Default |\n|---|---|\n| upload_retries | 3 |\n"
    assert [u.text for u in units_of(_page_cite(table, path="ops/uploads.md"))] == [
        "Setting: upload_retries; Default: 3"]


def test_a_markdown_header_row_stays_a_header_row():
    text = "| Setting | Default 10 |\n|---|---|\n| retries | 3 attempts |\n"
    c = Citation(1, "docs", "settings.md", 1, 3, text, 0.5, "kb_search", raw=text)
    assert [u.text for u in units_of(c) if u.kind is UnitKind.ROW] == [
        "Setting: retries; Default 10: 3 attempts"]
