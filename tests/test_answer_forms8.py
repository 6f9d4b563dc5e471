"""Forms of documents and answers (issue 22, session 8): a reference entry's parameter
table in Sphinx HTML (a header row, one row of values with the default, then the
description), a default asked while an example sets another value, a figure that is a
factor of a product or a port's name, a word in capitals that is no name, the plural of
an acronym a document writes in the singular, a memory size asked for, a sentence that
leads into the line it introduces.

Constructed text only (the tools, options and people below are invented; none of it
comes from a held-out folder). Each test fails on main before this session's changes
(30f912f; checked by running this file against that tree).
"""

from __future__ import annotations

from pathlib import Path

from kbagent.agent.answer.citations import Citation
from kbagent.agent.answer.evidence import SentenceVectors, best_evidence
from kbagent.agent.answer.focus import focus_of
from kbagent.agent.answer.short import short_answer
from kbagent.agent.answer.units import UnitKind, units_of
from kbagent.kb.html_text import html_to_lines
from tests.agent_runs import ask_one_file, cite


def _entry(name: str, kind: str, default: str, legacy: str, description: str) -> str:
    """One parameter as Sphinx writes it: a heading, a table of one row, a version note
    and the description (every cell a paragraph of its own)."""
    head = "".join(f'<th class="head"><p>{h}</p></th>\n'
                   for h in ("type", "default", "mandatory", "obsolete legacy directive"))
    cells = "".join(f"<td><p>{v}</p></td>\n" for v in (kind, default, "no", legacy))
    return (f'<span id="{name}"></span><h4>{name}<a class="headerlink" href="#x">¶</a></h4>\n'
            f'<table class="parameter-table docutils">\n<thead>\n<tr class="row-odd">{head}'
            f'</tr>\n</thead>\n<tbody>\n<tr class="row-even">{cells}</tr>\n</tbody>\n</table>\n'
            f'<div class="versionadded">\n<p><span class="versionmodified added">New in '
            f"version 8.38.0.</span></p>\n</div>\n<p>{description}</p>\n")


FROBD = ("<html><body><h1>omfrob: Frob Output Module</h1>\n<h2>Action Parameters</h2>\n"
         + _entry("ackTimeout", "integer", "10000", "none",
                  "Specifies how long frobd must wait for the external program to confirm "
                  "each message when ackMessages is set to “on”. The value must be "
                  "expressed in milliseconds.")
         + _entry("reportInterval", "integer", "300", "none",
                  "Sets the interval, in seconds, at which frob statistics are reported.")
         + "<h2>Examples</h2>\n<h3>Report to the frob log</h3>\n"
         "<p>This loads the module and writes statistics to /var/log/frob in ten minute "
         "intervals:</p>\n<pre>module(load=\"omfrob\" reportInterval=\"600\")</pre>\n"
         "<p>If no answer arrives from the program within a 30-second timeout, frobd "
         "restarts it.</p>\n</body></html>\n")


def test_a_table_row_of_cell_paragraphs_is_one_line_and_list_items_keep_their_marker():
    lines = [x.text for x in html_to_lines(FROBD)[0]]
    assert "type | default | mandatory | obsolete legacy directive" in lines
    assert "integer | 10000 | no | none" in lines
    html = "<ul><li><p>first item</p></li><li></li></ul><p>after the list</p>"
    assert [x.text for x in html_to_lines(html)[0]] == ["- first item", "after the list"]


def test_a_parameter_tables_row_is_read_with_the_description_under_it():
    raw = "\n".join(x.text for x in html_to_lines(FROBD)[0])
    units = units_of(cite(raw, "modules/omfrob.html"))
    row = next(u for u in units if u.kind is UnitKind.ROW and "10000" in u.text)
    assert row.text.startswith("type: integer; default: 10000")
    assert row.gloss.startswith("Specifies how long frobd must wait")


def test_the_default_in_the_table_leads_not_an_examples_value(tmp_path: Path):
    """Through the real agent over a real KB: the row with the default (and the
    description it is read with) leads, not the example's 30-second timeout nor its
    interval="600"."""
    final = ask_one_file(tmp_path, "omfrob.html", FROBD,
                 "With omfrob and ackMessages on, how many milliseconds does frobd wait by "
                 "default for my program to confirm each message?")
    assert final.result.short_answer.startswith("10000")
    assert "Specifies how long frobd must wait" in final.result.answer


def test_a_default_asked_in_a_users_words_is_not_an_examples_value(tmp_path: Path):
    final = ask_one_file(tmp_path, "omfrob.html", FROBD,
                 "If I load omfrob without options, how many seconds pass between two of "
                 "its statistics reports?")
    assert final.result.short_answer.startswith("300")


def test_a_factor_of_a_product_and_a_ports_name_are_no_figures():
    f = focus_of("How long can a sender stay silent before frobd forgets it?")
    assert short_answer(f, "Default: 12 hours (12*60*60 seconds): frobd forgets a sender "
                           "after that.") == "12 hours"
    f = focus_of("How many clients can connect to the frob listener at once?")
    assert short_answer(f, "This sets up a listener on port 7514 that accepts up to 500 "
                           "connections.") == "up to 500 connections"
    # a port asked for is a port
    f = focus_of("Which port does the frob listener use?")
    assert "7514" in (short_answer(f, "The listener binds port 7514.") or "")


def test_a_word_in_capitals_is_no_name():
    f = focus_of("Which package do I install to get frobtool on Fedora?")
    assert short_answer(f, "On Fedora this is named frob-utils-<version> and it is NOT "
                           "installed by default.") == "frob-utils"
    f = focus_of("Who wrote the frob tutorial on rotating logs?")
    assert short_answer(f, "Two files are used, each with a maximum size of 50 MB.") is None


def test_the_plural_of_an_acronym_is_the_acronym_the_document_writes(tmp_path: Path):
    text = ("# Frob history\n\nIn June 2007, Petra Valk from Hat Works helped us to create "
            "RPM files for Fedora.\n\nIn July 2007, Anders Pohl added BSD ports files.\n")
    final = ask_one_file(tmp_path, "history.md", text,
                 "Who from Hat Works helped create the first Fedora RPMs of frob?")
    assert not final.result.abstained
    assert final.result.short_answer.startswith("Petra Valk")


def test_how_much_memory_asks_for_a_size_not_a_count(embedder):
    q = "How much memory should I count for each message sitting in the frob queue?"
    raw = ("With 5 workers and a batch size of 1,000, the frob queue holds up to 5,000 "
           "messages in main memory.\n\nFor typical messages, 512 bytes of memory should be "
           "a good bet.\n")
    vectors = SentenceVectors(lambda texts: embedder.encode(texts))
    best = best_evidence(q, [cite(raw, "guide/frob.md")], limit=2, vectors=vectors)
    assert best[0].unit.text.startswith("For typical messages, 512 bytes")
    assert short_answer(focus_of(q), best[0].unit.text) == "512 bytes"


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


def test_a_count_asked_in_one_hour_scales_the_rate_the_source_states(tmp_path: Path):
    """A count per a span of time asked in a clause ("..., what is the largest number
    of journal messages frobd passes on in one hour ..."): the stated rate (20,000
    messages within 10 minutes) scaled by the calculator."""
    text = ("# imfrob: journal input\n\n## Rate limiting\n\nBy default, rate limiting is "
            "activated and permits to process 20,000 messages within 10 minutes. Rate "
            "limiting can be turned off by setting the interval to 0.\n\n## Threads\n\n"
            "The module runs 2 worker threads by default.\n")
    final = ask_one_file(tmp_path, "imfrob.md", text,
                 "With imfrob left at its default rate limiting, what is the largest number "
                 "of journal messages frobd will pass on in one hour before it drops some?")
    assert final.result.short_answer.startswith("120,000 messages")
    assert any(st.action == "calculate" for st in final.result.steps)


def test_a_yes_no_answered_in_other_words_gets_its_yes(tmp_path: Path):
    """The sentence that answers a yes/no question shares few of its words ("let the
    operating system pick" / "let the OS automatically assign") but is close in meaning:
    the answer still starts with "Yes"."""
    text = ("<html><body><h2>listenPortFileName</h2>\n<p>This parameter specifies a file "
            "name into which the port number this input listens on is written.</p>\n<p>It "
            "is primarily intended for cases when port is set to 0 to let the OS "
            "automatically assign a free port number.</p>\n<h2>Statistic Counter</h2>\n"
            "<p>For example, the counter for a listener on port 7514 with no set name is "
            "called frob(7514).</p>\n</body></html>\n")
    final = ask_one_file(tmp_path, "imfrob.html", text,
                 "Can I let the operating system pick a free port for an imfrob listener "
                 "instead of fixing the port number myself?")
    assert final.result.short_answer.startswith("Yes")


def test_a_unit_under_an_examples_heading_is_no_default(embedder):
    """The chunk's heading trail says "Examples" (the unit's own heading does not): a
    value set there is no default."""
    q = "If I load omfrob without options, how many seconds pass between two statistics reports?"
    example = Citation(1, "kb", "modules/omfrob.html", 1, 2, "This loads the module and "
                       "reports statistics every 600 seconds.", None, "kb_search",
                       heading="omfrob > Examples > Report to the frob log")
    reference = Citation(2, "kb", "modules/omfrob.html", 9, 10, "Statistics are reported "
                         "every 300 seconds.", None, "kb_search",
                         heading="omfrob > Module Parameters > reportInterval")
    vectors = SentenceVectors(lambda texts: embedder.encode(texts))
    best = best_evidence(q, [example, reference], limit=2, vectors=vectors)
    assert best[0].unit.n == 2


def test_spaced_products_prose_phrases_and_space_between_paragraphs():
    f = focus_of("How long can a sender stay silent before frobd forgets it?")
    assert short_answer(f, "Default: 12 hours (12 * 60 * 60 seconds): frobd forgets a "
                           "sender after that.") == "12 hours"
    f = focus_of("Which package provides frobtool?")
    assert short_answer(f, "frobtool comes with the so-called plug-and-play setup.") != \
        "plug-and-play"
    assert focus_of("How much space does the formatter put between paragraphs?").unit != "bytes"
    assert focus_of("How much disk space does the frob cache take?").unit == "bytes"
