"""Real documents written by each format's own library, for the format tests.

Every maker returns the file's bytes and puts ``token`` at a known place: page 2 of a
PDF, slide 2 of a deck, row 32 of sheet ``Budget``, chapter 2 of a book, cell 3 of a
notebook, under the heading "Limits" of a Word file.
"""

from __future__ import annotations

import io


def make_pdf(token: str, pages: int = 3) -> bytes:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("Helvetica", size=11)
    for i in range(1, pages + 1):
        pdf.add_page()
        text = f"Page {i} opens here.\nA second line of page {i}."
        if i == 2:
            text += f"\nThe audit found {token} in the ledger."
        pdf.multi_cell(0, 6, text)
    pdf.set_title("Audit report")
    return bytes(pdf.output())


def make_encrypted_pdf() -> bytes:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", size=11)
    pdf.cell(0, 10, "Nobody reads this without the password.")
    pdf.set_encryption(owner_password="owner", user_password="user")
    return bytes(pdf.output())


def make_scanned_pdf() -> bytes:
    """A page with a drawing and no text layer, as a scanner makes."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.rect(20, 20, 100, 60, style="F")
    pdf.add_page()
    pdf.rect(30, 30, 80, 40, style="F")
    return bytes(pdf.output())


def make_docx(token: str) -> bytes:
    import docx

    d = docx.Document()
    d.core_properties.title = "Travel handbook"
    d.add_heading("Travel policy", 1)
    d.add_paragraph("Flights over six hours may be booked in premium economy.")
    d.add_paragraph("Book through the portal", style="List Bullet")
    d.add_paragraph("Keep every receipt", style="List Number")
    d.add_heading("Limits", 2)
    t = d.add_table(rows=3, cols=2)
    for r, (a, b) in enumerate([("City", "Per diem"), ("Paris", "EUR 90"), (token, "EUR 75")]):
        t.cell(r, 0).text, t.cell(r, 1).text = a, b
    buf = io.BytesIO()
    d.save(buf)
    return buf.getvalue()


def make_pptx(token: str) -> bytes:
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    s1 = deck.slides.add_slide(deck.slide_layouts[1])
    s1.shapes.title.text = "Roadmap"
    s1.placeholders[1].text = "Q1 launch the beta\nQ2 scale to ten regions"
    s2 = deck.slides.add_slide(deck.slide_layouts[5])
    s2.shapes.title.text = "Hardware budget"
    table = s2.shapes.add_table(2, 2, Inches(1), Inches(2), Inches(6), Inches(1)).table
    for (r, c), text in {(0, 0): "Item", (0, 1): "Cost", (1, 0): "GPU servers",
                         (1, 1): "1200"}.items():
        table.cell(r, c).text = text
    s2.notes_slide.notes_text_frame.text = f"Mention that {token} ships late."
    buf = io.BytesIO()
    deck.save(buf)
    return buf.getvalue()


def make_xlsx(token: str, rows: int = 30) -> bytes:
    import openpyxl

    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Budget"
    ws.append(["Item", "Cost", "Owner"])
    for i in range(rows):
        ws.append([f"line item {i}", i * 10, "Ann"])
    ws.append([token, 5, "Bob"])  # row rows + 2
    staff = wb.create_sheet("Staff")
    staff["A1"], staff["B1"], staff["A2"], staff["B2"] = "Name", "Role", "Kim", "Lead"
    buf = io.BytesIO()
    wb.save(buf)
    return buf.getvalue()


def make_encrypted_xlsx() -> bytes:
    from msoffcrypto.format.ooxml import OOXMLFile

    plain = io.BytesIO(make_xlsx("SECRETROW"))
    out = io.BytesIO()
    OOXMLFile(plain).encrypt("password", out)
    return out.getvalue()


def make_epub(token: str) -> bytes:
    from ebooklib import epub

    book = epub.EpubBook()
    book.set_identifier("kbagent-test")
    book.set_title("Field guide")
    book.set_language("en")
    chapters = []
    for i, body in enumerate(["Birds nest in spring.", f"The {token} migrates in autumn."], 1):
        ch = epub.EpubHtml(title=f"Chapter {i}", file_name=f"ch{i}.xhtml")
        ch.content = f"<h1>Chapter {i}</h1><p>{body}</p>"
        book.add_item(ch)
        chapters.append(ch)
    book.toc = tuple(chapters)
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    book.spine = ["nav", *chapters]
    buf = io.BytesIO()
    epub.write_epub(buf, book)
    return buf.getvalue()


def make_ipynb(token: str) -> bytes:
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Churn analysis\nWe load the data."),
        nbformat.v4.new_code_cell("import pandas as pd", execution_count=1),
        nbformat.v4.new_code_cell(
            "print(rate)", execution_count=2,
            outputs=[nbformat.v4.new_output("stream", text=f"{token} 4.2%\n")]),
    ]
    return nbformat.writes(nb).encode()
