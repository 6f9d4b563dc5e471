#!/usr/bin/env python3
"""Generate the Office documents of the sample knowledge base (sample_kb/).

    sample_kb/company/office_facilities_2027.docx   Word: headings, a list, room tables
    sample_kb/product/roadmap_review_q4_2026.pptx   PowerPoint: 4 slides, a table, notes
    sample_kb/finance/vendor_contracts_2026.xlsx    Excel: vendors and the 2027 hiring plan

Their facts are new (nothing else in sample_kb states them) and consistent with it:
Gateway 4.7 on November 17, 2026 (product/roadmap_h2_2026.md), Northwind Compute at
$220K per month from August 1, 2026 (finance/board_deck_q3_2026.pdf). The questions
q48-q52 of tests/data/sample_questions.jsonl are answered only by these tables and slides.

Output is deterministic (fixed dates in the document properties), so regenerating does
not create a diff:

    .venv/bin/python scripts/make_sample_office.py
"""

from __future__ import annotations

import datetime as dt
import io
import re
import zipfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
SAMPLE = REPO_ROOT / "sample_kb"
CREATED = dt.datetime(2026, 10, 20, 9, 0, 0)
_ZIP_TIME = (2026, 10, 20, 9, 0, 0)


def _stable_zip(data: bytes) -> bytes:
    """The same archive with fixed member timestamps (Office writers stamp 'now')."""
    src = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            fixed = zipfile.ZipInfo(info.filename, date_time=_ZIP_TIME)
            fixed.compress_type = zipfile.ZIP_DEFLATED
            body = src.read(info.filename)
            if info.filename == "docProps/core.xml":  # openpyxl stamps "modified" on save
                body = re.sub(rb"(<dcterms:modified[^>]*>)[^<]*", rb"\g<1>2026-10-20T09:00:00Z",
                              body)
            dst.writestr(fixed, body)
    return out.getvalue()


def _core(props: object, title: str, author: str) -> None:
    props.title = title  # type: ignore[attr-defined]
    props.author = author  # type: ignore[attr-defined]
    props.created = CREATED  # type: ignore[attr-defined]
    props.modified = CREATED  # type: ignore[attr-defined]
    props.last_modified_by = author  # type: ignore[attr-defined]


def make_docx() -> bytes:
    import docx

    d = docx.Document()
    _core(d.core_properties, "Office facilities guide 2027", "Ravi Menon")
    d.add_heading("Office facilities guide 2027", 0)
    d.add_paragraph("Meeting rooms, desks and visitor rules for the Portland headquarters and "
                    "the Dublin office. Owner: Ravi Menon (Procurement & Vendor Management).")
    d.add_heading("Portland headquarters", 1)
    d.add_paragraph("Desks are unassigned except for the SRE on-call pod on floor 3.")
    d.add_heading("Meeting rooms", 2)
    rooms = [("Room", "Floor", "Seats", "Video conferencing"),
             ("Cascade", "3", "14", "Yes"), ("Willamette", "3", "8", "Yes"),
             ("Hood", "4", "20", "Yes"), ("Crater", "4", "4", "No")]
    t = d.add_table(rows=len(rooms), cols=4)
    for r, row in enumerate(rooms):
        for c, text in enumerate(row):
            t.cell(r, c).text = text
    d.add_heading("Dublin office", 1)
    d.add_paragraph("Desks are assigned by team; visitors sign in at the ground-floor reception.")
    d.add_heading("Meeting rooms", 2)
    rooms = [("Room", "Floor", "Seats", "Video conferencing"),
             ("Liffey", "2", "10", "Yes"), ("Howth", "2", "6", "Yes")]
    t = d.add_table(rows=len(rooms), cols=4)
    for r, row in enumerate(rooms):
        for c, text in enumerate(row):
            t.cell(r, c).text = text
    d.add_heading("Booking rules", 1)
    for rule in ("Book every room in the Kestrel calendar, even for short calls.",
                 "Rooms with more than 12 seats need facilities approval for external guests.",
                 "Release a booking you will not use at least two hours ahead."):
        d.add_paragraph(rule, style="List Bullet")
    buf = io.BytesIO()
    d.save(buf)
    return _stable_zip(buf.getvalue())


def make_pptx() -> bytes:
    from pptx import Presentation
    from pptx.util import Inches, Pt

    deck = Presentation()
    _core(deck.core_properties, "Q4 2026 roadmap review", "Aiko Tanaka")
    s = deck.slides.add_slide(deck.slide_layouts[0])
    s.shapes.title.text = "Q4 2026 roadmap review"
    s.placeholders[1].text = "Aiko Tanaka, VP Product - October 20, 2026"

    s = deck.slides.add_slide(deck.slide_layouts[1])
    s.shapes.title.text = "Gateway 4.7 scope"
    s.placeholders[1].text = ("Cache analytics dashboard with a miss explainer\n"
                              "Per-route rate limits\n"
                              "X-Kestrel-Attempts response header")
    s.notes_slide.notes_text_frame.text = (
        "Scope is frozen; anything new goes to Gateway 4.8.")

    s = deck.slides.add_slide(deck.slide_layouts[5])
    s.shapes.title.text = "Launch calendar"
    rows = [("Release", "Target date", "Owner"),
            ("Gateway 4.7", "November 17, 2026", "Tomas Novak"),
            ("Edge OS 3.3", "December 8, 2026", "Marco Bellini"),
            ("Gateway 4.8", "February 2, 2027", "Tomas Novak")]
    shape = s.shapes.add_table(len(rows), 3, Inches(0.7), Inches(1.8), Inches(8.6), Inches(2))
    for r, row in enumerate(rows):
        for c, text in enumerate(row):
            cell = shape.table.cell(r, c)
            cell.text = text
            cell.text_frame.paragraphs[0].runs[0].font.size = Pt(16)
    s.notes_slide.notes_text_frame.text = (
        "Edge OS 3.3 moved one week, from December 1, for the signed-update audit.")

    s = deck.slides.add_slide(deck.slide_layouts[1])
    s.shapes.title.text = "Risks"
    s.placeholders[1].text = ("Kestrel holds 140 KE-400 GPU modules as buffer stock against "
                              "supply delays\n"
                              "Reserved GPU utilization must reach 60% by December 31\n"
                              "Semantic caching beta depends on the shadow-mode week")
    buf = io.BytesIO()
    deck.save(buf)
    return _stable_zip(buf.getvalue())


def make_xlsx() -> bytes:
    import openpyxl
    from openpyxl.styles import Font

    wb = openpyxl.Workbook()
    _core(wb.properties, "Vendor contracts and hiring plan", "Priya Raman")
    ws = wb.active
    ws.title = "Vendors"
    ws.append(["Vendor", "Service", "Annual value", "Start date", "Renewal date", "Owner"])
    vendors = [
        ("Northwind Compute", "GPU reserved capacity (3 years)", 2_640_000,
         dt.date(2026, 8, 1), dt.date(2029, 7, 31), "Daniel Reyes"),
        ("Lumen Ledger", "Accounting software", 84_000, dt.date(2025, 4, 1),
         dt.date(2027, 3, 31), "Priya Raman"),
        ("PagerDuty", "On-call paging", 61_000, dt.date(2024, 1, 15), dt.date(2027, 1, 14),
         "Tomas Novak"),
        ("Brightdesk", "Support ticketing", 118_000, dt.date(2025, 9, 1), dt.date(2027, 8, 31),
         "Customer Success"),
        ("Dublin Colo Partners", "eu-west colocation", 1_020_000, dt.date(2026, 7, 1),
         dt.date(2028, 6, 30), "Daniel Reyes"),
    ]
    for row in vendors:
        ws.append(list(row))
    for r in range(2, len(vendors) + 2):
        ws.cell(r, 3).number_format = '"$"#,##0'
        ws.cell(r, 4).number_format = "yyyy-mm-dd"
        ws.cell(r, 5).number_format = "yyyy-mm-dd"
    for c in ws[1]:
        c.font = Font(bold=True)

    hires = wb.create_sheet("Hiring plan 2027")
    hires.append(["Team", "Q1", "Q2", "Q3", "Q4", "Total"])
    plan = [("Engineering", 6, 5, 4, 4), ("Sales", 4, 3, 3, 2),
            ("Customer Success & Support", 2, 2, 1, 1), ("Marketing", 1, 1, 1, 0),
            ("G&A", 1, 1, 0, 1)]
    for team, *qs in plan:
        hires.append([team, *qs, sum(qs)])
    hires.append(["Total", *[sum(row[i] for row in plan) for i in range(1, 5)],
                  sum(sum(row[1:]) for row in plan)])
    buf = io.BytesIO()
    wb.save(buf)
    return _stable_zip(buf.getvalue())


def main() -> None:
    targets = {
        SAMPLE / "company" / "office_facilities_2027.docx": make_docx,
        SAMPLE / "product" / "roadmap_review_q4_2026.pptx": make_pptx,
        SAMPLE / "finance" / "vendor_contracts_2026.xlsx": make_xlsx,
    }
    for path, make in targets.items():
        path.write_bytes(make())
        print(f"wrote {path.relative_to(REPO_ROOT)} ({path.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
