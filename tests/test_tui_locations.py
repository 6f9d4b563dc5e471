"""Pilot tests: the TUI's search screen and document viewer name the page, slide or
sheet cells of PDFs, decks and workbooks, as `kbagent search` and `ref` do (issue 45,
finding 13)."""

from __future__ import annotations

import pytest

from kbagent.kb.ingest import Ingestor
from kbagent.tui.app import KbApp
from kbagent.tui.document import DocumentScreen
from kbagent.tui.search import SearchScreen
from tests import doc_writers as w
from tests.test_tui import drive, until

# file -> (its bytes, the token inside, the place its hit must name)
FILES = {
    "audit.pdf": (lambda: w.make_pdf("QUOKKAPDF"), "quokkapdf", "p.2 l.1-3"),
    "roadmap.pptx": (lambda: w.make_pptx("QUOKKAPPTX"), "quokkapptx", "slide 2"),
    "budget.xlsx": (lambda: w.make_xlsx("QUOKKAXLSX"), "quokkaxlsx", "Budget!A"),
}


@pytest.fixture
def office_settings(settings, make_folder, embedder):
    folder = make_folder({name: make() for name, (make, _, _) in FILES.items()})
    Ingestor(settings, "office", embedder=embedder).run(folder)
    return settings


@pytest.mark.parametrize("name", list(FILES))
def test_search_and_the_document_viewer_show_the_page_slide_or_cells(office_settings, name):
    _, query, place = FILES[name]
    app = KbApp(office_settings, ["office"], load_llm=False, timings=False)

    async def scenario(pilot):
        await pilot.press("f2")
        await until(pilot, lambda: isinstance(pilot.app.screen, SearchScreen))
        screen = pilot.app.screen
        await pilot.press(*query)
        await until(pilot, lambda: screen.searched == query)
        top = screen.hits[0]
        assert top.path == name and top.location.startswith(place)
        table = screen.query_one("#results")
        where = str(table.get_row_at(0)[1])
        assert where == f"{name} {top.location}:{top.start_line}-{top.end_line}", where
        table.focus()
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(pilot.app.screen, DocumentScreen))
        title = str(pilot.app.screen.query_one("#doc-title").content)
        assert title == f"office:{name} {top.location}:{top.start_line}-{top.end_line}"

    drive(app, scenario)


def test_the_viewer_names_each_chunks_page_and_the_whole_documents_pages(office_settings):
    app = KbApp(office_settings, ["office"], load_llm=False, timings=False)

    async def scenario(pilot):
        app.open_document("office", "audit.pdf", None, chunks=True)  # as Browse opens it
        await until(pilot, lambda: isinstance(pilot.app.screen, DocumentScreen)
                    and bool(pilot.app.screen.query(".doc-text")))
        doc = pilot.app.screen
        assert str(doc.query_one("#doc-title").content) == "office:audit.pdf pp.1-3  · 3 chunks"
        text = str(doc.query_one(".doc-text").content)
        assert "chunk 2 · lines 3-5 · p.2 l.1-3" in text, text

    drive(app, scenario)
