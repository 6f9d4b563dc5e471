"""Documents written by LibreOffice and pandoc (tests/data/office_real/, see its README):
each fact is found by a real ingest and search and cited at its place (issue 45, 12 and
13a). Before: a fact only in a footnote was never extracted, numbered steps came out as
``-`` bullets, OpenDocument files were skipped as binary, .doc/.xls were "binary", and an
EPUB chapter was its spine number (a pandoc title page made "Chapter Two" chapter 3)."""

from __future__ import annotations

import io
import shutil
import zipfile
from pathlib import Path

import pytest

from kbagent.kb.chunker import chunk_document
from kbagent.kb.extract import extract
from kbagent.kb.ingest import Ingestor
from kbagent.kb.knowledge_base import KnowledgeBase
from kbagent.kb.locations import describe
from kbagent.kb.search import HybridSearcher
from kbagent.settings import Settings

DATA = Path(__file__).parent / "data" / "office_real"
DOCS = sorted(p.name for p in DATA.iterdir() if p.is_file() and p.suffix != ".md")

# (file, query, the line that holds the fact, that line's place, how the hit's place starts:
# a Word chunk spanning two headings is cited by its first, "§ Freight Plan 2026 …")
FACTS = [
    ("freight_pandoc.docx", "What was the Q2 freight budget?",
     "[^1]: The Q2 freight budget was $38,200, approved by Dana Whitlock in March.",
     "§ Budget", "§ "),
    ("freight_pandoc.docx", "What is step 3 of the packing procedure?",
     "3. Seal the crate with blue tamper tape.", "§ Packing procedure", "§ "),
    ("freight_pandoc.odt", "What was the Q2 freight budget?",
     "[^1]: The Q2 freight budget was $38,200, approved by Dana Whitlock in March.",
     "§ Budget", "§ "),
    ("harbor_ops.docx", "When does the Harbor Point dock open on public holidays?",
     "[^1]: On public holidays the Harbor Point dock opens at 09:30 instead.",
     "§ Dock schedule", "§ "),
    ("harbor_ops.docx", "Until when does the Lindqvist contract run?",
     "[^i]: The Lindqvist contract runs until 30 November 2027.", "§ Bay capacity", "§ "),
    ("harbor_ops.odt", "When does the Harbor Point dock open on public holidays?",
     "[^1]: On public holidays the Harbor Point dock opens at 09:30 instead.",
     "§ Dock schedule", "§ "),
    ("harbor_ops.odt", "Which unloading step scans the pallets into bay 12?",
     "3. Scan every pallet into bay 12 with the red scanner.", "§ Unloading steps", "§ "),
    ("inventory.ods", "How many copper flange units are in stock, in which bin?",
     "| Copper flange | 312 | K-14 | 6.25 |", "Inventory!A6:D6", "Inventory!A1:D"),
    ("kestrel_deck.odp", "When does the Kestrel pilot go live?",
     "The Kestrel pilot goes live on 14 October 2026 at the Calder Bay depot.", "slide 3",
     "slide 3"),
    ("kestrel_deck.odp", "What is the pilot budget capped at?",
     "Remind the board that the pilot budget is capped at 90,000 euros.", "slide 3", "slide 3"),
    ("harbor_stories.epub", "What was the lighthouse keeper's name?",
     "The lighthouse keeper was named Ansel Varga. He kept a logbook of 212 storms and "
     "painted the tower red every fifth spring.",
     "chapter “Chapter Two: The Lighthouse Keeper”",
     "chapter “Chapter Two: The Lighthouse Keeper”"),
]


def _extract(name: str):  # type: ignore[no-untyped-def]
    return extract(name, (DATA / name).read_bytes())


def _texts(name: str) -> list[str]:
    return [ln.text for ln in _extract(name).lines]


@pytest.fixture(scope="module")
def office_home(tmp_path_factory: pytest.TempPathFactory, embedder) -> tuple[Path, dict]:
    """A data home with the folder of real documents ingested as ``office``, and the
    ingest report's (status, reason) per file."""
    folder = tmp_path_factory.mktemp("office_docs")
    for name in DOCS:
        shutil.copy(DATA / name, folder / name)
    home = tmp_path_factory.mktemp("office_home")
    report = Ingestor(Settings.load(home=home), "office", embedder=embedder).run(folder)
    return home, {f.path: (f.status, f.reason) for f in report.files}


def test_the_folder_is_ingested_and_legacy_binaries_say_what_to_save_as(office_home):
    statuses = office_home[1]
    assert statuses["harbor_ops.doc"] == (
        "skipped", "Word 97-2003 file (.doc) is not read; save it as .docx (or .odt) to ingest it")
    assert statuses["inventory.xls"] == (
        "skipped", "Excel 97-2003 file (.xls) is not read; save it as .xlsx (or .ods) to ingest it")
    added = {p for p, (status, _) in statuses.items() if status == "added"}
    assert added == set(DOCS) - {"harbor_ops.doc", "inventory.xls"}, statuses


@pytest.mark.parametrize(("name", "query", "fact", "line_place", "hit_place"), FACTS,
                         ids=[f"{f[0]}:{f[1][:30]}" for f in FACTS])
def test_each_fact_is_found_by_search_and_cited_at_its_place(office_home, name, query, fact,
                                                             line_place, hit_place):
    kb = KnowledgeBase(Settings.load(home=office_home[0]), "office")
    try:
        hits = HybridSearcher([kb]).search(query, k=10).hits
        # the pandoc and LibreOffice twins (.docx/.odt) hold the same text: either may lead
        assert hits and hits[0].path.split(".")[0] == name.split(".")[0], [h.path for h in hits]
        hit = next((h for h in hits if h.path == name), None)
        assert hit is not None, (name, [h.path for h in hits])
        assert fact in hit.text and hit.location.startswith(hit_place), (hit.location, hit.text)
        found = kb.store.document_lines(name)
        assert found is not None
        number = next(ln.number for ln in found[1] if ln.text == fact)
        assert hit.start_line <= number <= hit.end_line
        assert kb.store.locate(name, number, number) == line_place
    finally:
        kb.close()


def test_a_footnote_is_cited_in_its_paragraph_and_follows_it():
    for name in ("freight_pandoc.docx", "freight_pandoc.odt"):
        lines = _texts(name)
        body = lines.index("The Q3 freight budget is $41,500 for all carriers.[^1] Overtime "
                           "loading is billed separately.")
        assert lines[body + 1].startswith("[^1]: The Q2 freight budget was $38,200"), name
    for name in ("harbor_ops.docx", "harbor_ops.odt"):  # a footnote, then an endnote
        lines = _texts(name)
        assert lines[1:3] == [
            "The Harbor Point dock opens at 06:45 on weekdays.[^1] Trucks queue on Pier Road.",
            "[^1]: On public holidays the Harbor Point dock opens at 09:30 instead."], name
        assert lines[-2:] == ["Bay 12 is reserved for the Lindqvist account.[^i]",
                              "[^i]: The Lindqvist contract runs until 30 November 2027."], name


def test_numbered_lists_count_per_list_and_level_as_the_writer_shows_them():
    for name in ("freight_pandoc.docx", "freight_pandoc.odt"):  # two lists, each from 1
        lines = _texts(name)
        start = lines.index("1. Weigh the crate on the dock scale.")
        assert lines[start:start + 10] == [
            "1. Weigh the crate on the dock scale.", "2. Print the carrier label.",
            "3. Seal the crate with blue tamper tape.", "4. Photograph the sealed crate.",
            "After packing, hand the crate to the shift lead.",
            "1. Book the pickup slot.", "2. Email the manifest to the carrier.",
            "  a. Attach the customs form.", "  b. Copy the broker on the email.",
            "3. File the pickup receipt in the green binder."], name
    for name in ("harbor_ops.docx", "harbor_ops.odt"):  # nested a), bullets, upper roman
        lines = _texts(name)
        start = lines.index("## Unloading steps") + 1
        assert lines[start:start + 13] == [
            "1. Chock the trailer wheels.", "2. Break the seal and record its number.",
            "  a) Check the seal number against the manifest.", "  b) Photograph the broken seal.",
            "3. Scan every pallet into bay 12 with the red scanner.",
            "4. Sign the carrier's delivery note.", "Supervisors on duty:",
            "- Mara Quell (mornings)", "- Tobias Renn (evenings)", "## Closing steps",
            "I. Lower the dock shutters.", "II. Arm the alarm with code group B.",
            "III. Hand the keys to the night guard at gate 4."], name


def test_odt_keeps_headings_tables_and_title():
    doc = _extract("harbor_ops.odt")
    assert doc.title == "Harbor Point Operations" and doc.format == "odt"
    text = [ln.text for ln in doc.lines]
    assert "# Dock schedule" in text and "## Unloading steps" in text
    assert "| Bay 12 | 64 | chilled to 4 °C |" in text
    assert [(c.heading, c.location) for c in chunk_document(doc)] == [  # as the .docx twin
        ("Dock schedule", "§ Dock schedule"), ("Dock schedule > Unloading steps",
                                                "§ Unloading steps"),
        ("Dock schedule > Closing steps", "§ Closing steps"), ("Bay capacity", "§ Bay capacity")]


def test_ods_rows_keep_their_sheet_row_numbers():
    doc = _extract("inventory.ods")
    assert doc.title == "Harbor Inventory" and doc.format == "ods"
    where = {ln.text: describe(doc.locations, ln.number, ln.number) for ln in doc.lines}
    assert where["| Steel hinge | 1200 | A-02 | 0.85 |"] == "Inventory!A2:D2"
    assert where["| Brass valve | 75 | C-07 | 14.5 |"] == "Inventory!A5:D5"  # 2 empty rows
    assert where["| Orlen Metals | Petra Vance |"] == "Suppliers!A2:B2"
    assert [(c.heading, c.location) for c in chunk_document(doc)] == [
        ("Inventory", "Inventory!A1:D7"), ("Suppliers", "Suppliers!A1:B2")]


def test_odp_slides_have_titles_tables_and_speaker_notes():
    chunks = chunk_document(_extract("kestrel_deck.odp"))
    assert [(c.heading, c.location) for c in chunks] == [
        ("slide 1: Kestrel Pilot Review", "slide 1"), ("slide 2: Sites", "slide 2"),
        ("slide 3: Launch plan", "slide 3")]
    assert "- Pier Road hub\n  - two loading bays" in chunks[1].text
    assert "| Driver training | Ilse Marrow |" in chunks[2].text
    assert "Speaker notes:\nRemind the board" in chunks[2].text
    assert "<number>" not in chunks[2].text  # the notes page's slide-number field


def test_epub_chapters_are_named_by_their_titles_in_reading_order():
    chunks = chunk_document(_extract("harbor_stories.epub"))
    assert [c.location for c in chunks] == [
        "chapter “The Harbor Stories”", "chapter “Chapter One: The Harbor”",
        "chapter “Chapter Two: The Lighthouse Keeper”", "chapter “Chapter Three: The Storm”"]
    assert "Ansel Varga" in chunks[2].text


def _odf(content: bytes, manifest: bytes = b"<manifest/>") -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("mimetype", "application/vnd.oasis.opendocument.text")
        zf.writestr("META-INF/manifest.xml", manifest)
        if content:
            zf.writestr("content.xml", content)
    return buf.getvalue()


_BOMB = (b'<?xml version="1.0"?><!DOCTYPE d [<!ENTITY a "aaaaaaaaaa">'
         + b"".join(b'<!ENTITY %c "&%c;&%c;&%c;&%c;&%c;&%c;&%c;&%c;&%c;&%c;">'
                    % ((98 + i,) + (97 + i,) * 10) for i in range(8))
         + b']><office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:'
           b'office:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0">'
           b"<office:body><office:text><text:p>Safe text &i;</text:p></office:text>"
           b"</office:body></office:document-content>")


@pytest.mark.parametrize(
    ("name", "data", "status", "reason"),
    [
        ("notes.odt", lambda: _odf(b""), "failed", "corrupt .odt file (no content.xml)"),
        ("locked.ods", lambda: _odf(b"x", b"<m><encryption-data/></m>"), "skipped",
         "password-protected OpenDocument file"),
        ("junk.odp", lambda: b"not a zip", "failed", "corrupt .odp file"),
        ("deck.ppt", lambda: b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(600), "skipped",
         "PowerPoint 97-2003 file (.ppt) is not read; save it as .pptx (or .odp)"),
        # an entity bomb is refused by the parser, not expanded into memory
        ("bomb.odt", lambda: _odf(_BOMB), "failed", "unreadable odt file"),
    ],
)
def test_bad_opendocument_and_legacy_files_say_why(name, data, status, reason, settings,
                                                   make_folder, embedder):
    folder = make_folder({name: data(), "ok.md": "# Fine\n\nGood text.\n"})
    report = Ingestor(settings, "docs", embedder=embedder).run(folder)
    got = {f.path: (f.status, f.reason) for f in report.files}
    assert got[name][0] == status and reason in got[name][1], got[name]
    assert got["ok.md"][0] == "added"


_FLAT_ODT = """<?xml version="1.0" encoding="UTF-8"?>
<office:document xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0"
 xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0"
 xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"
 xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0"
 office:mimetype="application/vnd.oasis.opendocument.text"><office:automatic-styles>
 <text:list-style style:name="N">
  <text:list-level-style-number text:level="1" style:num-suffix="." style:num-format="1"/>
  <text:list-level-style-number text:level="2" style:num-format="1" text:display-levels="2"/>
 </text:list-style></office:automatic-styles><office:body><office:text>
 <text:list text:style-name="N" xml:id="steps">
  <text:list-item><text:p>First step.</text:p></text:list-item>
  <text:list-item><text:p>Second step.</text:p><text:list>
   <text:list-item><text:p>Sub one.</text:p></text:list-item>
   <text:list-item><text:p>Sub two.</text:p></text:list-item></text:list></text:list-item>
 </text:list>
 <text:p>A remark<office:annotation><text:p>REVIEWER ONLY</text:p></office:annotation>.</text:p>
 <text:list text:style-name="N" text:continue-list="steps">
  <text:list-item><text:p>Third step.</text:p></text:list-item></text:list>
 <text:list text:style-name="N">
  <text:list-item text:start-value="7"><text:p>Seventh item.</text:p></text:list-item>
  <text:list-item><text:p>Eighth item.</text:p></text:list-item></text:list>
 <table:table><table:table-row><table:table-cell><text:p>Rate<text:note
  text:note-class="footnote"><text:note-citation>1</text:note-citation><text:note-body>
  <text:p>Rates exclude VAT.</text:p></text:note-body></text:note></text:p></table:table-cell>
  <table:table-cell><text:p>EUR 90</text:p></table:table-cell></table:table-row></table:table>
</office:text></office:body></office:document>"""


def test_odt_lists_continue_restart_and_show_parent_levels_notes_follow_a_table():
    lines = [ln.text for ln in extract("steps.fodt", _FLAT_ODT.encode()).lines]
    assert lines == [
        "1. First step.", "2. Second step.", "  2.1 Sub one.", "  2.2 Sub two.",
        "A remark.", "3. Third step.",  # continues the list it names (text:continue-list)
        "7. Seventh item.", "8. Eighth item.",  # a new list, from its start-value
        "", "| Rate[^1] | EUR 90 |", "|---|---|", "", "[^1]: Rates exclude VAT."]
