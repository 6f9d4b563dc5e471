"""Extracted HTML keeps the page's structure (session 10): a <pre> block is fenced code
whose "# comment" is no heading, a page's navigation landmarks are not its text, and a
later paragraph of a definition that states the default is read with its term."""

from __future__ import annotations

from kbagent.agent.answer.citations import Citation
from kbagent.agent.answer.units import units_of
from kbagent.kb.chunker import chunk_document
from kbagent.kb.extract import extract

PAGE = ("<html><body><div role=\"navigation\"><h3>Site navigation</h3><ul><li>Get started"
        "</li></ul><div><p>Quick search</p></div></div>\n<h1>Configuration</h1>\n<dl>"
        "<dt>frob_options</dt><dd><p>A dictionary of options for the frobber.</p>\n"
        "<div class=\"highlight\"><pre># configuration for the frobber\n"
        "frob_options = {'strip': True}\n</pre></div></dd></dl>\n<h2>Layout</h2>\n<dl>"
        "<dt>sidebar_span</dt><dd><p>Width of the frob sidebar in pixels.</p>\n"
        "<p>Defaults to 230 pixels.</p></dd></dl>\n"
        "<div role=\"contentinfo\"><p>Created using Frobdoc 5.3.0.</p></div></body></html>\n")


def _lines() -> list[str]:
    return [x.text for x in extract("conf.html", PAGE.encode()).lines]


def test_a_pre_block_is_fenced_code_and_its_comment_is_no_heading():
    lines = _lines()
    i = lines.index("# configuration for the frobber")
    assert lines[i - 1] == "```" and lines[i + 2] == "```"
    assert lines[i + 1] == "frob_options = {'strip': True}"  # its own line, not joined
    doc = extract("conf.html", PAGE.encode())
    trails = {c.heading for c in chunk_document(doc)}
    assert not any("configuration for the frobber" in t for t in trails)


def test_navigation_search_and_footer_landmarks_are_not_text():
    text = "\n".join(_lines())
    assert "Site navigation" not in text and "Quick search" not in text
    assert "Created using" not in text
    assert "Width of the frob sidebar in pixels." in text


def test_a_later_paragraph_stating_the_default_keeps_its_term():
    raw = "\n".join(_lines())
    cite = Citation(1, "kb", "conf.html", 1, 20, raw, None, "search", "Configuration", raw)
    unit = next(u for u in units_of(cite) if u.text == "Defaults to 230 pixels.")
    assert "sidebar_span" in unit.context and "Width of the frob sidebar" in unit.gloss
