"""The harness's evidence stage, its units: the lines a page is read as (HTML extraction,
``kb/html_text.py``) and the units a chunk is cut into, sentence by sentence and line by
line (``answer/units.py``): where a sentence ends, which short sentence goes on with the
one before, a list of settings read with the sentence that leads into it. Reference
entries read with their descriptions are in test_harness_evidence_entries.py.

The harness policy's frozen rules, on constructed text: see ``tests/harness_cases.py``.
"""

from __future__ import annotations

from kbagent.agent.answer.focus import focus_of
from kbagent.agent.answer.units import units_of
from kbagent.agent.harness.short import short_answer
from kbagent.kb.html_text import html_to_lines
from tests.agent_runs import cite
from tests.harness_cases import FROBD
from tests.harness_cases import raw_citation as _cite


# the lines a page is read as
def test_a_table_row_of_cell_paragraphs_is_one_line_and_list_items_keep_their_marker():
    lines = [x.text for x in html_to_lines(FROBD)[0]]
    assert "type | default | mandatory | obsolete legacy directive" in lines
    assert "integer | 10000 | no | none" in lines
    html = "<ul><li><p>first item</p></li><li></li></ul><p>after the list</p>"
    assert [x.text for x in html_to_lines(html)[0]] == ["- first item", "after the list"]


WRAPPED = """<html><body><div class="body" role="main">
<h1>Release process</h1>
<p>The Frob project uses the following branches for developing that conforms to Semantic
Versioning 2.0.0 (refs: <a href="https://semver.org/">https://semver.org/</a> ).</p>
<p>A second paragraph,<br>after a forced break.</p>
<table><tr><td><p>Default</p></td><td><p>200</p></td></tr></table>
<ul><li><p>An item wrapped
over two lines.</p></li></ul>
</div></body></html>
"""


def test_an_html_paragraph_wrapped_in_the_source_is_one_line() -> None:
    lines = html_to_lines(WRAPPED)[0]
    texts = [x.text for x in lines]
    semver = next(x for x in lines if "Semantic" in x.text)
    assert semver.text.endswith("Semantic Versioning 2.0.0 (refs: https://semver.org/ ).")
    assert (semver.number, semver.end) == (3, 4)  # the citation keeps both source lines
    assert "A second paragraph," in texts and "after a forced break." in texts  # <br>
    assert "Default | 200" in texts  # a cell's paragraph stays in its row
    assert "- An item wrapped over two lines." in texts
    # the chunk a search returns holds the extracted lines
    units = [u.text for u in units_of(cite("\n".join(texts), "release.html"))]
    assert any(u.endswith("conforms to Semantic Versioning 2.0.0 (refs: "
                          "https://semver.org/ ).") for u in units), units


_DOCBOOK = """<html><head><title>Chapter 10. Scripting</title></head><body>
<div class="navheader"><table width="100%" summary="Navigation header"><tr>
<th colspan="3" align="center">Chapter 10. Scripting</th></tr><tr>
<td align="left"><a accesskey="p" href="a.html">Prev</a></td>
<th align="center">Part II. Development</th>
<td align="right"><a accesskey="n" href="b.html">Next</a></td></tr></table><hr></div>
<div class="chapter"><h2 class="title">10.1. Introduction</h2>
<p>Frobd contains an embedded Squirrel 3.1 interpreter.</p></div>
<div class="navfooter"><hr><table width="100%" summary="Navigation footer"><tr>
<td align="left"><a accesskey="p" href="a.html">Prev</a></td>
<td align="center"><a accesskey="u" href="up.html">Up</a></td>
<td align="right"><a accesskey="n" href="b.html">Next</a></td></tr><tr>
<td align="left">9.9. Creating frobs from IDL files</td>
<td align="center"><a accesskey="h" href="index.html">Home</a></td>
<td align="right">10.2. Example: Creating a Menu</td></tr></table></div>
</body></html>
"""


def test_docbook_navigation_bars_are_not_extracted() -> None:
    lines, title = html_to_lines(_DOCBOOK)
    text = "\n".join(x.text for x in lines)
    assert "Squirrel 3.1 interpreter" in text
    assert "Prev" not in text and "Next" not in text and "Home" not in text
    assert "9.9" not in text and "10.2" not in text and "Part II" not in text
    assert title == "Chapter 10. Scripting"


# the units of a chunk
def test_a_name_cut_by_a_source_line_break_stays_one_sentence():
    raw = ("### AUTHORS\n"
           "The probeadm utility and this manual page were written by Ingrid\n"
           "Halvorsen. This man page has later been modified by Tomas Berg.\n")
    texts = [u.text for u in units_of(_cite(raw))]
    assert "The probeadm utility and this manual page were written by Ingrid Halvorsen." \
        in texts
    f = focus_of("Who wrote the probeadm utility?")
    assert short_answer(f, texts[0]) == "Ingrid Halvorsen"


def test_a_line_that_ends_a_sentence_still_ends_it():
    raw = "The list is kept in memory.\nReload it with the reload command.\n"
    texts = [u.text for u in units_of(_cite(raw))]
    assert texts == ["The list is kept in memory.", "Reload it with the reload command."]


def test_a_short_sentence_that_goes_on_with_the_one_before_is_one_unit_with_it():
    raw = ("The optional runuser argument names the user for the helper process. It "
           "defaults to probecache.\n")
    texts = [u.text for u in units_of(_cite(raw))]
    assert texts == ["The optional runuser argument names the user for the helper process. "
                     "It defaults to probecache."]
    f = focus_of("Which user does the helper process run as by default?")
    assert short_answer(f, texts[0]) == "probecache"


def test_a_list_of_settings_is_a_unit_each_read_with_the_sentence_that_leads_into_it():
    raw = ("On platforms with the needed socket options the defaults are set\nto:\n"
           "keepalive_idle = 600 seconds\nkeepalive_count = 5\nkeepalive_gap = 5 seconds\n"
           "Note that the proxy applies these only below the system value.\n")
    units = units_of(_cite(raw))
    item = next(u for u in units if u.text.startswith("keepalive_idle"))
    assert item.text == "keepalive_idle = 600 seconds"
    assert "defaults are set to" in item.context
    f = focus_of("What is the default keepalive_idle?")
    assert f.type_match(item.text)
    assert short_answer(f, item.text) == "600 seconds"


def test_an_option_term_is_a_term_though_its_description_starts_in_lower_case():
    raw = "-h radix\nself-scaling tree structure. The default hash algorithm.\n"
    units = units_of(_cite(raw))
    assert [u.text for u in units] == [
        "-h radix: self-scaling tree structure. The default hash algorithm."]


def test_separate_html_blocks_stay_apart_and_a_list_ends_at_a_blank_line():
    texts = [u.text for u in units_of(_cite("Supported on Linux\nWindows support is planned "
                                            "for the next release.\n"))]
    assert not any("Linux Windows" in t for t in texts)
    units = units_of(_cite("The default values are:\nretries = 3\n\nThe queue is stored "
                           "on disk.\n", "notes.md"))
    queue = next(u for u in units if u.text.startswith("The queue"))
    assert "default values" not in queue.context
