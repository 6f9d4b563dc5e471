"""Text extraction: formats, front-matter, HTML line mapping, bad files."""

from __future__ import annotations

import codecs

import pytest

from kbagent.kb.extract import detect_format, extract
from kbagent.kb.source_text import ExtractError, Skip


def test_markdown_front_matter_sets_title_and_access_and_keeps_line_numbers():
    text = "---\ntitle: Exec plan\naccess: [Executives, board]\n---\n# Heading\nBody line\n"
    doc = extract("hr/plan.md", text.encode())
    assert doc.format == "markdown"
    assert doc.title == "Exec plan"
    assert doc.access == ["board", "executives"]
    assert doc.body_start == 4
    assert [ln.number for ln in doc.lines] == [1, 2, 3, 4, 5, 6]
    assert doc.lines[5].text == "Body line"


def test_access_all_means_unrestricted_and_title_falls_back_to_heading():
    doc = extract("a.md", b"---\naccess: all\n---\n\n# The Title\n\ntext\n")
    assert doc.access == []
    assert doc.title == "The Title"


def test_broken_front_matter_is_treated_as_text():
    doc = extract("a.md", b"---\ntitle: [unclosed\n---\nbody\n")
    assert doc.body_start == 0 and doc.access == []


def test_html_drops_scripts_styles_nav_and_maps_source_lines():
    html = (
        "<html>\n<head><title>Pricing</title>\n<style>p{color:red}</style>\n"
        "<script>var secret = 'TOKEN';</script></head>\n"
        "<body>\n<nav><a href='/'>Home</a></nav>\n"
        "<h1>Plans &amp; prices</h1>\n"
        "<p>The Pro tier costs\n$49 per month &mdash; billed yearly.</p>\n"
        "<ul><li>SSO</li>\n<li>Audit <b>logs</b></li></ul>\n"
        "<table><tr><th>Tier</th><th>Price</th></tr>\n<tr><td>Pro</td><td>$49</td></tr></table>\n"
        "</body></html>\n"
    )
    doc = extract("site/pricing.html", html.encode())
    texts = [ln.text for ln in doc.lines]
    joined = "\n".join(texts)
    assert doc.title == "Pricing"
    assert "TOKEN" not in joined and "color" not in joined and "Home" not in joined
    assert "<" not in joined and "&amp;" not in joined
    assert "# Plans & prices" in texts
    assert "- Audit logs" in texts
    assert "Tier | Price" in texts and "Pro | $49" in texts
    src = html.split("\n")
    by_text = {ln.text: ln.number for ln in doc.lines}
    assert "Plans &amp; prices" in src[by_text["# Plans & prices"] - 1]
    # a paragraph wrapped in the source is one line (a browser joins it too), and it
    # keeps the source lines it spans
    para = next(ln for ln in doc.lines if ln.text == "The Pro tier costs $49 per month — "
                                                      "billed yearly.")
    assert "The Pro tier costs" in src[para.number - 1]
    assert "$49 per month" in src[para.end - 1]


def test_rst_and_code_and_text_formats():
    assert detect_format("docs/api.rst") == ("rst", "")
    assert detect_format("src/retry.py") == ("code", "python")
    assert detect_format("Makefile") == ("code", "make")
    assert detect_format("notes.txt") == ("text", "")
    assert detect_format("img.png") == ("binary", "")
    doc = extract("src/retry.py", b"def f():\n    return 1\n")
    assert doc.format == "code" and doc.language == "python" and doc.title == "retry.py"


def test_unknown_extension_is_sniffed_as_text():
    doc = extract("LICENSE", b"MIT License\n\nPermission is hereby granted\n")
    assert doc.format == "text"


@pytest.mark.parametrize(
    ("name", "data", "reason"),
    [
        ("blob.bin", b"abc\x00\x01\x02def", "binary"),
        ("photo.png", b"\x89PNG\r\n", "binary file type"),
        ("latin1.txt", "café crème".encode("latin-1"), "not valid UTF-8"),
        ("empty.md", b"   \n\n", "empty"),
        ("only_fm.md", b"---\ntitle: x\n---\n\n", "no text content"),
        ("blank.html", b"<html><script>x()</script></html>", "no text content"),
    ],
)
def test_bad_files_are_skipped_with_a_reason(name, data, reason):
    with pytest.raises(Skip, match=reason):
        extract(name, data)


def test_utf16_with_bom_and_utf8_bom_decode():
    assert extract("a.txt", codecs.BOM_UTF16_LE + "héllo".encode("utf-16-le")).lines[0].text == (
        "héllo"
    )
    assert extract("b.txt", codecs.BOM_UTF8 + b"hi").lines[0].text == "hi"


def test_crlf_line_endings_keep_numbers():
    doc = extract("w.txt", b"one\r\ntwo\r\nthree\r\n")
    assert [(ln.number, ln.text) for ln in doc.lines] == [(1, "one"), (2, "two"), (3, "three")]


def _make_pdf(pages: list[str]) -> bytes:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("Helvetica", size=11)
    for text in pages:
        pdf.add_page()
        pdf.multi_cell(0, 6, text)
    pdf.set_title("Board deck")
    return bytes(pdf.output())


def test_pdf_pages_become_sections_with_extracted_lines():
    data = _make_pdf(["Revenue grew 12 percent.", "Gross margin was 66.2 percent."])
    doc = extract("deck.pdf", data)
    assert doc.format == "pdf" and doc.title == "Board deck"
    assert [name for _, name in doc.sections] == ["page 1", "page 2"]
    texts = [ln.text for ln in doc.lines]
    assert any("Gross margin was 66.2 percent." in t for t in texts)


def test_broken_pdf_fails_with_reason():
    with pytest.raises(ExtractError, match="PDF"):
        extract("x.pdf", b"%PDF-1.4\ngarbage garbage")
    with pytest.raises(ExtractError, match="missing %PDF header"):
        extract("y.pdf", b"hello")
