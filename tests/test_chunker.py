"""Chunking: heading trails, true line spans, long lines, overlap, code and rST."""

from __future__ import annotations

import itertools

from kbagent.kb.chunker import chunk_document, estimate_tokens
from kbagent.kb.extract import extract


def _spans_match_file(text: str, chunks) -> None:
    """Every chunk's text is made of the file's lines inside its span."""
    lines = text.split("\n")
    for ch in chunks:
        window = "\n".join(lines[ch.start_line - 1 : ch.end_line])
        for piece in ch.text.split("\n"):
            assert piece in window, (ch.start_line, ch.end_line, piece)


def test_markdown_sections_carry_heading_trails():
    text = (
        "# Guide\n\nIntro text.\n\n## Install\n\nRun make.\n\n### Linux\n\napt install x\n\n"
        "## Usage\n\nCall it.\n"
    )
    chunks = chunk_document(extract("g.md", text.encode()))
    trails = [c.heading for c in chunks]
    assert trails == ["Guide", "Guide > Install", "Guide > Install > Linux", "Guide > Usage"]
    assert chunks[1].text.startswith("## Install")
    assert (chunks[2].start_line, chunks[2].end_line) == (9, 11)
    _spans_match_file(text, chunks)


def test_heading_without_body_travels_with_its_subsection():
    text = "# Top\n## Sub\nbody\n"
    chunks = chunk_document(extract("g.md", text.encode()))
    assert len(chunks) == 1
    assert chunks[0].start_line == 1 and chunks[0].heading == "Top > Sub"


def test_hash_lines_inside_code_fences_are_not_headings():
    text = "# Real\n\n```bash\n# not a heading\necho hi\n```\n"
    chunks = chunk_document(extract("g.md", text.encode()))
    assert [c.heading for c in chunks] == ["Real"]


def test_front_matter_is_not_chunked():
    text = "---\ntitle: T\naccess: [executives]\n---\n# H\n\nSecret salary table.\n"
    chunks = chunk_document(extract("p.md", text.encode()))
    assert all("access:" not in c.text for c in chunks)
    assert chunks[0].start_line == 5


def test_long_sections_split_within_budget_with_overlap():
    body = "\n".join(f"Line {i} says something about retries and budgets." for i in range(120))
    text = "# Long\n\n" + body + "\n"
    chunks = chunk_document(extract("l.md", text.encode()), max_tokens=60, overlap=12)
    assert len(chunks) > 5
    for c in chunks:
        assert estimate_tokens(c.text) <= 60 + 12
    for a, b in itertools.pairwise(chunks):
        assert b.start_line <= a.end_line  # overlap: the next chunk re-reads a line
        assert b.start_line > a.start_line  # ... but always moves forward
    _spans_match_file(text, chunks)
    assert chunks[-1].end_line == len(text.split("\n")) - 1


def test_one_very_long_line_is_split_and_keeps_its_line_number():
    sentence = "The abstract studies dietary fibre and gut health in adults. "
    text = "Title line\n" + sentence * 60 + "\nlast\n"
    chunks = chunk_document(extract("abs.txt", text.encode()), max_tokens=50, overlap=8)
    on_line_2 = [c for c in chunks if c.start_line == 2]
    assert len(on_line_2) >= 5
    assert sum(c.end_line == 2 for c in on_line_2) >= 4  # the last piece may take "last" along
    _spans_match_file(text, chunks)


def test_code_is_split_on_definitions_with_preceding_comments():
    text = (
        "import time\n\n\n# Retry helper.\n@decorator\ndef retry(fn):\n    return fn()\n\n\n"
        "class Backoff:\n    base = 0.2\n"
    )
    chunks = chunk_document(extract("r.py", text.encode()), max_tokens=200)
    assert [c.heading for c in chunks] == ["", "def retry(fn)", "class Backoff"]
    assert chunks[1].start_line == 4  # the comment and decorator belong to the def
    _spans_match_file(text, chunks)


def test_rst_titles_become_trails():
    text = (
        "=========\nAPI guide\n=========\n\nIntro.\n\nAuthentication\n--------------\n\n"
        "Use a token.\n\nLimits\n------\n\n100 rps.\n"
    )
    chunks = chunk_document(extract("api.rst", text.encode()))
    assert [c.heading for c in chunks] == [
        "API guide", "API guide > Authentication", "API guide > Limits"
    ]
    _spans_match_file(text, chunks)


def test_html_chunks_point_at_source_lines():
    html = ("<html><body>\n<h1>Ops</h1>\n<p>Rotate certificates\nevery 90 days.</p>\n"
            "</body></html>\n")
    chunks = chunk_document(extract("ops.html", html.encode()))
    assert len(chunks) == 1
    assert (chunks[0].start_line, chunks[0].end_line) == (2, 4)
    assert "<" not in chunks[0].text


def test_a_long_first_line_leaves_no_heading_only_chunk():
    # one line over the budget: its first piece fills a chunk, so the heading would be alone
    abstract = " ".join(f"Sentence number {i} is here." for i in range(80))
    doc = extract("a.md", f"# Title of a study\n\n{abstract}\n".encode())
    chunks = chunk_document(doc)
    assert len(chunks) > 1
    assert all(c.heading == "Title of a study" for c in chunks)
    assert chunks[0].start_line == 3 and chunks[0].text.startswith("Sentence number 0 ")
    assert chunks[0].index_text(doc.title).startswith("Title of a study\nSentence number 0 ")
    # a document that is only a heading still gets its one chunk
    assert [c.text for c in chunk_document(extract("b.md", b"# Just a title\n"))] == [
        "# Just a title"]


def test_index_text_adds_title_context():
    chunks = chunk_document(extract("g.md", b"# Guide\n\ntext\n"))
    assert chunks[0].index_text("Guide").startswith("Guide\n")
    assert chunks[0].index_text("Handbook").startswith("Handbook > Guide\n")


def test_index_text_does_not_repeat_the_heading_line():
    doc = extract("g.md", b"# Guide\n\ntext\n\n## Setup\n\nsteps\n")
    chunks = chunk_document(doc)
    assert [c.index_text(doc.title) for c in chunks] == ["Guide\ntext", "Guide > Setup\nsteps"]
    assert chunks[0].text.startswith("# Guide")  # stored text and line span keep the heading
    assert chunks[0].start_line == 1
    doc = extract("h.md", b"# Guide\n\n## Setup\n\nsteps\n")  # heading-only section merged
    assert [c.index_text(doc.title) for c in chunk_document(doc)] == ["Guide > Setup\nsteps"]
