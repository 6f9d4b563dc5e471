"""File views over stored text: ls, glob, grep, cat, and path safety."""

from __future__ import annotations

import pytest

from kbagent.errors import BadInputError, NotFoundError
from kbagent.kb.ingest import Ingestor
from kbagent.kb.knowledge_base import KnowledgeBase
from kbagent.kb.views import FileViews, PathRefused, normalize_path
from tests.conftest import SMALL_DOCS


@pytest.fixture
def views(settings, make_folder, embedder):
    docs = {**SMALL_DOCS, "web/page.html": "<html><body>\n<h1>Status</h1>\n<p>All systems\n"
            "operational.</p>\n</body></html>\n",
            "long.md": "# Long\n" + "".join(f"line {i}\n" for i in range(2, 401))}
    Ingestor(settings, "v", embedder=embedder).run(make_folder(docs))
    return FileViews(KnowledgeBase(settings, "v"))


def test_ls_lists_folders_then_files(views):
    assert views.ls() == ["finance/", "guide/", "web/", "long.md", "notes.txt"]
    assert views.ls("guide") == ["retry.md"]
    with pytest.raises(NotFoundError, match="no folder 'nope'"):
        views.ls("nope")


def test_glob_patterns(views):
    assert views.glob("*.md") == ["finance/q3.md", "guide/retry.md", "long.md"]
    assert views.glob("guide/*") == ["guide/retry.md"]
    assert views.glob("**/*.html") == ["web/page.html"]
    assert views.glob("q?.md") == ["finance/q3.md"]


def test_grep_literal_and_regex_with_true_line_numbers(views):
    res = views.grep("Retry on")
    assert [(m.path, m.line.number) for m in res.matches] == [("guide/retry.md", 16)]
    res = views.grep(r"\b50[234]\b", regex=True)
    assert res.matches[0].line.text == "Retry on 429, 502, 503 and 504."
    res = views.grep("(", regex=False)  # literal: no regex error
    assert not res.matches
    with pytest.raises(BadInputError, match="invalid regular expression"):
        views.grep("(", regex=True)


def test_grep_is_capped(views):
    res = views.grep("line", max_matches=5, path_glob="long.md")
    assert len(res.matches) == 5 and res.truncated


def test_cat_shows_numbered_range_and_continue_hint(views):
    res = views.cat("long.md", 10, 12)
    assert [(ln.number, ln.text) for ln in res.lines] == [(10, "line 10"), (11, "line 11"),
                                                         (12, "line 12")]
    assert res.next_line == 13
    res = views.cat("long.md", max_lines=50)
    assert len(res.lines) == 50 and res.next_line == 51
    res = views.cat("long.md", 390)
    assert res.lines[-1].number == 400 and res.next_line is None
    with pytest.raises(BadInputError, match="past the end"):
        views.cat("long.md", 999)


def test_cat_html_uses_source_line_numbers(views):
    res = views.cat("web/page.html")
    # a paragraph wrapped in the source is one line, numbered by its first source line
    assert [(ln.number, ln.text) for ln in res.lines] == [
        (2, "# Status"), (3, "All systems operational.")]


@pytest.mark.parametrize("bad", ["../etc/passwd", "/etc/passwd", "guide/../../x", "C:\\x",
                                 "~/.ssh/id_rsa", "a\x00b"])
def test_traversal_is_refused(views, bad):
    with pytest.raises(PathRefused):
        views.cat(bad)


def test_paths_are_normalised():
    assert normalize_path("./guide//retry.md") == "guide/retry.md"
    assert normalize_path("guide\\retry.md") == "guide/retry.md"


def test_unknown_file(views):
    with pytest.raises(NotFoundError, match=r"no file 'nope\.md'"):
        views.cat("nope.md")
