"""Document formats (issue 24): extraction speed and peak memory per format, the three
PDF libraries side by side, and markitdown against the format libraries.

1. Per format, kbagent's own path (``extract`` then ``chunk_document``) on a big file
   made here by the format's writer: a 300-page PDF (fpdf2), a 50,000-row workbook
   (openpyxl) and CSV, a long Word file, a 200-slide deck, a 40-chapter EPUB, a
   500-cell notebook. Each runs in a fresh subprocess that reports seconds, units/s and
   its peak RSS above what it held before extracting (the file's bytes included).
2. PDF: pypdf, pypdfium2 and pdfplumber on the same 300-page file, a two-column page
   (reading order: does every left-column line come before the right column?), a
   table (does each row stay on one line, cells in order?) and the PDFs found under
   /usr/share/doc (not python3.x-doc): seconds and characters per file.
3. markitdown (which wraps mammoth, python-pptx, pandas, ...) against our extractors
   on small files: seconds, and whether the structure a citation needs survives
   (headings, lists, tables, slide/row/cell numbers).
4. With ``--ingest``: the whole ``kbagent ingest`` (extract, chunk, embed with the
   bundled model, index) of the big PDF and the big sheet, each alone in a fresh
   process: seconds, chunks and the process's peak RSS.

    PYTHONPATH=$PWD python bench/bench_formats.py [--pages 300] [--rows 50000] [--ingest]

pdfplumber and markitdown are not kbagent dependencies: ``pip install -e
'.[bench-formats]'`` brings them for parts 2 and 3.
"""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests import doc_writers as w  # noqa: E402 - after the path tweak

_CHILD = r"""
import json, resource, sys, time
from pathlib import Path
from kbagent.kb.chunker import chunk_document
from kbagent.kb.extract import extract
from kbagent.kb.formats.builder import ExtractLimits
import docx, pptx, openpyxl, ebooklib, nbformat, pypdfium2  # imports before the baseline

def rss_kb(field):
    for line in open("/proc/self/status"):
        if line.startswith(field):
            return int(line.split()[1])
    return 0

path = Path(sys.argv[1])
data = path.read_bytes()
base = rss_kb("VmRSS:")
t = time.perf_counter()
doc = extract(path.name, data, ExtractLimits(max_pdf_pages=10**6, max_sheet_rows=10**7))
t_extract = time.perf_counter() - t
chunks = chunk_document(doc)
total = time.perf_counter() - t
print(json.dumps({"extract_s": t_extract, "total_s": total, "chunks": len(chunks),
                  "lines": len(doc.lines), "peak_mb": (rss_kb("VmHWM:") - base) / 1024}))
"""


def make_big(folder: Path, pages: int, rows: int) -> dict[str, tuple[Path, int, str]]:
    """name -> (file, units, unit name)."""
    import docx
    import nbformat
    import openpyxl
    from ebooklib import epub
    from fpdf import FPDF
    from pptx import Presentation

    out: dict[str, tuple[Path, int, str]] = {}
    pdf = FPDF()
    pdf.set_font("Helvetica", size=10)
    for p in range(pages):
        pdf.add_page()
        pdf.multi_cell(0, 5, "\n".join(f"Page {p + 1} line {i}: the quarterly audit of "
                                       f"account {p * 40 + i} found no issue." for i in range(40)))
    (folder / "big.pdf").write_bytes(bytes(pdf.output()))
    out["pdf"] = (folder / "big.pdf", pages, "pages")

    wb = openpyxl.Workbook(write_only=True)
    ws = wb.create_sheet("Ledger")
    ws.append(["Date", "Account", "Amount", "Owner", "Memo"])
    lines = ["Date,Account,Amount,Owner,Memo"]
    for i in range(rows):
        row = [f"2026-{i % 12 + 1:02d}-{i % 28 + 1:02d}", f"ACC-{i:06d}", i * 1.25,
               f"owner{i % 50}", f"payment batch {i // 100}"]
        ws.append(row)
        lines.append(",".join(map(str, row)))
    wb.save(folder / "big.xlsx")
    (folder / "big.csv").write_text("\n".join(lines) + "\n")
    out["xlsx"] = (folder / "big.xlsx", rows, "rows")
    out["csv"] = (folder / "big.csv", rows, "rows")

    d = docx.Document()
    paras = 0
    for s in range(100):
        d.add_heading(f"Section {s}", 1)
        for i in range(18):
            d.add_paragraph(f"Paragraph {i} of section {s} explains a policy detail at length.")
            paras += 1
        t = d.add_table(rows=4, cols=3)
        for r in range(4):
            for c in range(3):
                t.cell(r, c).text = f"r{r}c{c}"
    d.save(folder / "big.docx")
    out["docx"] = (folder / "big.docx", paras, "paragraphs")

    deck = Presentation()
    for s in range(200):
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = f"Slide {s}"
        slide.placeholders[1].text = "\n".join(f"Point {i} on slide {s}" for i in range(6))
        slide.notes_slide.notes_text_frame.text = f"Notes for slide {s}."
    deck.save(folder / "big.pptx")
    out["pptx"] = (folder / "big.pptx", 200, "slides")

    book = epub.EpubBook()
    book.set_identifier("bench")
    book.set_title("Bench book")
    chapters = []
    for c in range(40):
        ch = epub.EpubHtml(title=f"Chapter {c}", file_name=f"c{c}.xhtml")
        ch.content = f"<h1>Chapter {c}</h1>" + "".join(
            f"<p>Paragraph {i} of chapter {c} tells the story.</p>" for i in range(60))
        book.add_item(ch)
        chapters.append(ch)
    book.toc = tuple(chapters)
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    book.spine = ["nav", *chapters]
    epub.write_epub(str(folder / "big.epub"), book)
    out["epub"] = (folder / "big.epub", 40, "chapters")

    nb = nbformat.v4.new_notebook()
    for i in range(250):
        nb.cells.append(nbformat.v4.new_markdown_cell(f"## Step {i}\nWhat this step does."))
        nb.cells.append(nbformat.v4.new_code_cell(
            f"x{i} = compute({i})\nprint(x{i})", execution_count=i + 1,
            outputs=[nbformat.v4.new_output("stream", text=f"{i * 3}\n")]))
    nbformat.write(nb, str(folder / "big.ipynb"))
    out["ipynb"] = (folder / "big.ipynb", 500, "cells")
    return out


def per_format(files: dict[str, tuple[Path, int, str]]) -> None:
    print("\n## 1. Extraction per format (extract + chunk, one subprocess each)")
    print(f"{'format':<6} {'file':>9} {'units':>16} {'seconds':>8} {'units/s':>10} "
          f"{'chunks':>7} {'peak MB':>8}")
    for fmt, (path, units, unit) in files.items():
        res = subprocess.run([sys.executable, "-c", _CHILD, str(path)], capture_output=True,
                             text=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
                             check=True)
        r = json.loads(res.stdout.strip().splitlines()[-1])
        size = f"{path.stat().st_size / 1e6:.1f} MB"
        print(f"{fmt:<6} {size:>9} {f'{units:,} {unit}':>16} {r['total_s']:>8.2f} "
              f"{units / r['total_s']:>10,.0f} {r['chunks']:>7,} {r['peak_mb']:>8.1f}")


def _pdf_backends() -> dict[str, object]:
    import pdfplumber
    import pypdfium2 as pdfium
    from pypdf import PdfReader

    def with_pypdf(data: bytes) -> list[str]:
        return [p.extract_text() or "" for p in PdfReader(io.BytesIO(data)).pages]

    def with_pdfium(data: bytes) -> list[str]:
        pdf = pdfium.PdfDocument(data)
        out = []
        for i in range(len(pdf)):
            page = pdf[i]
            tp = page.get_textpage()
            out.append(tp.get_text_bounded().replace("\r\n", "\n"))
            tp.close()
            page.close()
        pdf.close()
        return out

    def with_pdfplumber(data: bytes) -> list[str]:
        with pdfplumber.open(io.BytesIO(data)) as pdf:
            return [p.extract_text() or "" for p in pdf.pages]

    return {"pypdf": with_pypdf, "pypdfium2": with_pdfium, "pdfplumber": with_pdfplumber}


def _two_column_pdf() -> bytes:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("Helvetica", size=10)
    pdf.add_page()
    # a newspaper page: the left column, then the right one, its baselines offset
    for i in range(12):
        pdf.set_xy(10, 20 + i * 8)
        pdf.cell(85, 6, f"Left{i:02d} the left column keeps going")
    for i in range(12):
        pdf.set_xy(110, 23 + i * 8)
        pdf.cell(85, 6, f"Right{i:02d} the right column too")
    return bytes(pdf.output())


def _table_pdf() -> bytes:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("Helvetica", size=10)
    pdf.add_page()
    with pdf.table() as table:
        for row in [("Region", "Q2 revenue", "Q3 revenue"), ("EMEA", "$1,204K", "$1,388K"),
                    ("Americas", "$2,010K", "$2,306K"), ("APAC", "$644K", "$702K")]:
            r = table.row()
            for cell in row:
                r.cell(cell)
    return bytes(pdf.output())


def pdf_compare(big: Path) -> None:
    backends = _pdf_backends()
    print("\n## 2. PDF libraries side by side")
    data = big.read_bytes()
    print(f"{'library':<11} {'300-page s':>10} {'pages/s':>8} {'2-column order':>15} "
          f"{'table rows kept':>16}")
    two, table = _two_column_pdf(), _table_pdf()
    for name, fn in backends.items():
        t = time.perf_counter()
        pages = fn(data)  # type: ignore[operator]
        s = time.perf_counter() - t
        text = "\n".join(fn(two))  # type: ignore[operator]
        lefts = [text.find(f"Left{i:02d}") for i in range(12)]
        rights = [text.find(f"Right{i:02d}") for i in range(12)]
        columns = ("column by column" if max(lefts) < min(rights) else
                   "row by row" if all(a < b for a, b in zip(lefts, rights, strict=True))
                   else "mixed")
        rows = "\n".join(fn(table)).split("\n")  # type: ignore[operator]
        kept = sum(any(all(c in ln for c in cells) for ln in rows) for cells in [
            ("EMEA", "$1,204K", "$1,388K"), ("Americas", "$2,010K", "$2,306K"),
            ("APAC", "$644K", "$702K")])
        print(f"{name:<11} {s:>10.2f} {len(pages) / s:>8.0f} {columns:>15} {f'{kept}/3':>16}")
    docs = sorted(p for p in Path("/usr/share/doc").rglob("*.pdf")
                  if "python3" not in str(p))[:5]
    for path in docs:
        data = path.read_bytes()
        cells = []
        for _name, fn in backends.items():
            t = time.perf_counter()
            pages = fn(data)  # type: ignore[operator]
            cells.append(f"{time.perf_counter() - t:6.2f} s {sum(map(len, pages)):>7,} ch")
        print(f"  {path.name} ({len(pages)} pages): " + " | ".join(
            f"{n} {c}" for n, c in zip(backends, cells, strict=True)))


def markitdown_compare(folder: Path) -> None:
    from markitdown import MarkItDown

    from kbagent.kb.chunker import chunk_document
    from kbagent.kb.extract import extract

    md = MarkItDown(enable_plugins=False)
    small = {"docx": w.make_docx("TOKEN"), "pptx": w.make_pptx("TOKEN"),
             "xlsx": w.make_xlsx("TOKEN"), "epub": w.make_epub("TOKEN"),
             "ipynb": w.make_ipynb("TOKEN")}
    print("\n## 3. markitdown against the format libraries (small files, 20 runs each)")
    print(f"{'format':<6} {'markitdown ms':>13} {'ours ms':>8} {'ratio':>6}  what markitdown keeps")
    for fmt, data in small.items():
        path = folder / f"small.{fmt}"
        path.write_bytes(data)
        t = time.perf_counter()
        for _ in range(20):
            text = md.convert(str(path)).text_content
        t_md = (time.perf_counter() - t) / 20 * 1000
        t = time.perf_counter()
        for _ in range(20):
            chunk_document(extract(path.name, data))
        t_ours = (time.perf_counter() - t) / 20 * 1000
        notes = []
        notes.append("slide numbers" if "Slide number" in text else "")
        notes.append("table" if "| --- |" in text or "|---|" in text else "no table")
        notes.append("list" if "\n* " in text or "\n- " in text or "\n1. " in text else "")
        notes.append("heading" if "\n#" in "\n" + text else "no heading")
        notes.append("outputs" if fmt == "ipynb" and "TOKEN" in text else
                     ("no outputs" if fmt == "ipynb" else ""))
        notes.append("row numbers: no" if fmt == "xlsx" else "")
        print(f"{fmt:<6} {t_md:>13.1f} {t_ours:>8.1f} {t_md / t_ours:>6.1f}  "
              + ", ".join(n for n in notes if n))


_INGEST = r"""
import json, sys, time
from pathlib import Path
from kbagent.kb.ingest import Ingestor
from kbagent.settings import Settings

def kb(field):
    return next(int(x.split()[1]) for x in open("/proc/self/status") if x.startswith(field))

t = time.perf_counter()
report = Ingestor(Settings.load(home=Path(sys.argv[2])), "big").run(Path(sys.argv[1]))
print(json.dumps({"s": time.perf_counter() - t, "chunks": report.chunks_total,
                  "peak_mb": kb("VmHWM:") / 1024,
                  "files": [f.to_dict() for f in report.files]}))
"""


def ingest_whole(files: dict[str, tuple[Path, int, str]], tmp: Path) -> None:
    print("\n## 4. Whole ingest of one big file (fresh process each, bundled embedder)")
    print(f"{'file':<9} {'units':>14} {'seconds':>8} {'chunks':>7} {'peak RSS MB':>12}")
    for fmt in ("pdf", "xlsx"):
        path, units, unit = files[fmt]
        folder = tmp / f"ingest_{fmt}"
        folder.mkdir()
        (folder / path.name).write_bytes(path.read_bytes())
        res = subprocess.run([sys.executable, "-c", _INGEST, str(folder), str(tmp / f"home_{fmt}")],
                             capture_output=True, text=True, check=True,
                             env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin",
                                  "HOME": str(tmp)})
        r = json.loads(res.stdout.strip().splitlines()[-1])
        assert r["files"][0]["status"] == "added", r["files"]
        print(f"{path.name:<9} {f'{units:,} {unit}':>14} {r['s']:>8.1f} {r['chunks']:>7,} "
              f"{r['peak_mb']:>12.0f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pages", type=int, default=300)
    ap.add_argument("--rows", type=int, default=50_000)
    ap.add_argument("--ingest", action="store_true", help="also time whole ingests")
    ap.add_argument("--only-ingest", action="store_true", help="only the whole ingests")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        t = time.perf_counter()
        files = make_big(folder, args.pages, args.rows)
        print(f"(made the big files in {time.perf_counter() - t:.0f} s)")
        if args.only_ingest:
            ingest_whole(files, folder)
            return
        per_format(files)
        pdf_compare(files["pdf"][0])
        markitdown_compare(folder)
        if args.ingest:
            ingest_whole(files, folder)


if __name__ == "__main__":
    main()
