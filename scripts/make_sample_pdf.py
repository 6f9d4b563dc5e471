#!/usr/bin/env python3
"""Generate the PDF document(s) of the sample knowledge base (sample_kb/).

Currently produces one file:

    sample_kb/finance/board_deck_q3_2026.pdf   (Q3 2026 board update, 5 pages)

The numbers must stay consistent with finance/q1_2026_report.md, finance/q2_2026_report.md,
finance/q3_2026_report.html and finance/fy2026_operating_plan.md.

fpdf2 is a dev dependency (installed by `make test`):

    .venv/bin/python scripts/make_sample_pdf.py            # write the PDF
    .venv/bin/python scripts/make_sample_pdf.py --check    # write, then print pypdf text

The PDF uses the built-in Helvetica font, so all text must be latin-1 (no curly quotes or
em dashes). Output is deterministic (fixed creation date) so regenerating does not create a diff.
"""

from __future__ import annotations

import argparse
import datetime as dt
from pathlib import Path

from fpdf import FPDF

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO_ROOT / "sample_kb" / "finance" / "board_deck_q3_2026.pdf"
CREATED = dt.datetime(2026, 10, 12, 9, 0, 0, tzinfo=dt.UTC)

TITLE = "Kestrel Systems, Inc. - Q3 2026 Board Update"


class BoardDeck(FPDF):
    def header(self) -> None:
        if self.page_no() == 1:
            return
        self.set_font("Helvetica", "I", 8)
        self.set_text_color(110, 110, 110)
        self.cell(0, 6, "Kestrel Systems - Q3 2026 Board Update - Confidential", align="L")
        self.ln(10)
        self.set_text_color(0, 0, 0)

    def footer(self) -> None:
        self.set_y(-14)
        self.set_font("Helvetica", "I", 8)
        self.set_text_color(110, 110, 110)
        self.cell(0, 8, f"Page {self.page_no()} of {{nb}}", align="C")
        self.set_text_color(0, 0, 0)

    # --- helpers -------------------------------------------------------------------------

    def h1(self, text: str) -> None:
        self.set_font("Helvetica", "B", 16)
        self.multi_cell(0, 9, text, new_x="LMARGIN", new_y="NEXT")
        self.ln(2)

    def h2(self, text: str) -> None:
        self.ln(2)
        self.set_font("Helvetica", "B", 12.5)
        self.multi_cell(0, 7, text, new_x="LMARGIN", new_y="NEXT")
        self.ln(1)

    def para(self, text: str) -> None:
        self.set_font("Helvetica", "", 10.5)
        self.multi_cell(0, 5.4, " ".join(text.split()), new_x="LMARGIN", new_y="NEXT")
        self.ln(2.5)

    def bullets(self, items: list[str]) -> None:
        self.set_font("Helvetica", "", 10.5)
        for item in items:
            self.set_x(self.l_margin + 4)
            self.multi_cell(0, 5.4, "- " + " ".join(item.split()), new_x="LMARGIN", new_y="NEXT")
            self.ln(0.8)
        self.ln(2)

    def table(self, header: list[str], rows: list[list[str]], widths: list[float]) -> None:
        self.set_font("Helvetica", "B", 9.5)
        self.set_fill_color(230, 236, 243)
        for text, w in zip(header, widths, strict=False):
            self.cell(w, 7, text, border=1, fill=True, align="C")
        self.ln()
        self.set_font("Helvetica", "", 9.5)
        for row in rows:
            bold = row[0].startswith("*")
            self.set_font("Helvetica", "B" if bold else "", 9.5)
            for i, (text, w) in enumerate(zip(row, widths, strict=False)):
                text = text.lstrip("*") if i == 0 else text
                self.cell(w, 6.5, text, border=1, align="L" if i == 0 else "R")
            self.ln()
        self.ln(3)


def build(out: Path) -> Path:
    pdf = BoardDeck(orientation="P", unit="mm", format="Letter")
    pdf.set_creation_date(CREATED)
    pdf.set_title(TITLE)
    pdf.set_author("Priya Raman, CFO")
    pdf.set_subject("Quarterly board update, Q3 2026")
    pdf.set_creator("scripts/make_sample_pdf.py")
    pdf.set_margins(20, 18, 20)
    pdf.set_auto_page_break(auto=True, margin=20)
    pdf.alias_nb_pages()

    # ---------------------------------------------------------------- page 1: title + highlights
    pdf.add_page()
    pdf.ln(12)
    pdf.set_font("Helvetica", "B", 22)
    pdf.multi_cell(0, 11, "Kestrel Systems, Inc.", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Helvetica", "B", 17)
    pdf.multi_cell(0, 9, "Q3 2026 Board Update", new_x="LMARGIN", new_y="NEXT")
    pdf.ln(3)
    pdf.set_font("Helvetica", "", 11)
    pdf.multi_cell(
        0, 6,
        "Board meeting: Thursday, October 15, 2026, Portland, Oregon\n"
        "Prepared by: Priya Raman (CFO) with Maya Okafor (CEO)\n"
        "Period covered: July 1 to September 30, 2026\n"
        "Classification: Confidential - for the board of directors",
        new_x="LMARGIN", new_y="NEXT",
    )
    pdf.ln(6)
    pdf.h2("1. Highlights of the quarter")
    pdf.para(
        "Q3 2026 revenue was $11.20M, up 14.3% from $9.80M in Q2 2026 and ahead of the $11.0M "
        "in the FY2026 operating plan. ARR reached $46.8M at September 30, 2026, up from "
        "$40.5M at the end of Q2. We ended the quarter with 532 paying customers, 41 of them "
        "on Enterprise contracts, and net revenue retention of 124%."
    )
    pdf.para(
        "Gross margin fell to 66.2% from 71.4% in Q2. The decline was expected and is explained "
        "in section 3: the GPU reserved-capacity contract with Northwind Compute started on "
        "August 1, 2026, and we carried a one-off cost for migrating the EU region from "
        "Frankfurt to Dublin. A higher prompt-cache hit rate (38.5% vs 31.0%) partly offset "
        "both. Excluding the one-off migration cost, Q3 gross margin would have been 68.5%."
    )
    pdf.bullets([
        "Headcount 182 at quarter end (Q2: 173); plan is 195 by December 31, 2026.",
        "Operating loss $0.89M (operating margin -7.9%); cash and equivalents $61.4M.",
        "EU region migration to Dublin completed on September 9, 2026; Frankfurt "
        "colocation site decommissioned on September 18.",
        "Kestrel Gateway 4.6 released on September 15, 2026; Edge OS 3.2 on September 29.",
        "19 customers upgraded from Team to Business (Q2: 11).",
    ])

    # ---------------------------------------------------------------- page 2: financial results
    pdf.add_page()
    pdf.h1("2. Financial results, Q1 to Q3 2026")
    pdf.para(
        "All figures in US dollars, unaudited. Detailed reports: finance/q1_2026_report.md, "
        "finance/q2_2026_report.md and finance/q3_2026_report.html. Gross margin is "
        "(revenue - cost of revenue) / revenue."
    )
    pdf.table(
        ["Metric", "Q1 2026", "Q2 2026", "Q3 2026"],
        [
            ["Revenue", "$8.40M", "$9.80M", "$11.20M"],
            ["Cost of revenue", "$2.52M", "$2.80M", "$3.79M"],
            ["Gross profit", "$5.88M", "$7.00M", "$7.41M"],
            ["*Gross margin", "70.0%", "71.4%", "66.2%"],
            ["Operating expenses", "$7.10M", "$7.60M", "$8.30M"],
            ["Operating loss", "($1.22M)", "($0.60M)", "($0.89M)"],
            ["Headcount (end of quarter)", "164", "173", "182"],
            ["ARR (end of quarter)", "$35.2M", "$40.5M", "$46.8M"],
            ["Paying customers", "410", "468", "532"],
            ["Prompt-cache hit rate", "24.0%", "31.0%", "38.5%"],
            ["Cash and equivalents", "$66.0M", "$63.9M", "$61.4M"],
        ],
        [64, 34, 34, 34],
    )
    pdf.para(
        "Revenue for the first three quarters of 2026 totals $29.40M, $0.5M ahead of the "
        "year-to-date plan of $28.9M. Quarter-over-quarter revenue growth was 16.7% in Q2 and "
        "14.3% in Q3. Operating expenses grew 9.2% in Q3, mainly from hiring in engineering and "
        "sales; research and development was $3.80M, sales and marketing $3.10M and general and "
        "administrative $1.40M."
    )
    pdf.para(
        "Free cash flow was -$2.5M in Q3. Besides the operating loss it includes $0.9M of capital "
        "expenditure for the Dublin build-out and a $0.66M security deposit under the Northwind "
        "Compute contract. At the current burn rate our cash position covers more than five "
        "years of operations; we do not plan to raise capital in 2027."
    )

    # ---------------------------------------------------------------- page 3: margin bridge
    pdf.add_page()
    pdf.h1("3. Gross margin bridge: Q2 2026 to Q3 2026")
    pdf.para(
        "Gross margin moved from 71.4% in Q2 to 66.2% in Q3, a decline of 5.2 points. If cost "
        "of revenue had stayed at the Q2 level of 28.6% of revenue, Q3 cost of revenue would "
        "have been about $3,200K; it was $3,786K. The $586K difference breaks down as follows."
    )
    pdf.table(
        ["Driver", "Q3 cost impact", "Margin impact"],
        [
            ["Q2 2026 gross margin", "", "71.4%"],
            ["GPU reserved capacity (Northwind)", "+$459K", "-4.1 pts"],
            ["EU region migration (one-off)", "+$258K", "-2.3 pts"],
            ["Higher prompt-cache hit rate", "-$131K", "+1.2 pts"],
            ["*Q3 2026 gross margin", "+$586K net", "66.2%"],
        ],
        [86, 40, 40],
    )
    pdf.h2("3.1 GPU reserved capacity (-4.1 points)")
    pdf.para(
        "The three-year reserved-capacity contract with Northwind Compute started on August 1, "
        "2026 at $220K per month. Q3 carried two months ($440K) and a one-time onboarding fee of "
        "$19K, for $459K in total. The capacity was sized for 2027 Hosted Models demand, so "
        "utilization was only 41% in September. The cost is recurring, but its weight on margin "
        "falls as utilization rises; we target 60% utilization by the end of Q4 2026."
    )
    pdf.h2("3.2 EU region migration (-2.3 points)")
    pdf.para(
        "We ran the Frankfurt and Dublin sites in parallel from July 20 to August 31, 2026, six "
        "weeks instead of the two weeks assumed in the plan, because of extra validation after "
        "the August 19 cache incident and slower-than-expected customer cutovers. The $258K of "
        "duplicate infrastructure is one-off and does not recur in Q4."
    )
    pdf.h2("3.3 Prompt caching (+1.2 points)")
    pdf.para(
        "The average prompt-cache hit rate rose from 31.0% in Q2 to 38.5% in Q3, helped by the "
        "admit-on-second-miss admission policy shipped in Gateway 4.4. Every cache hit on "
        "Kestrel Credits traffic is a provider call we do not pay for. Provider pass-through "
        "cost would have been $1,120K at the Q2 ratio of 10.0% of revenue; it was $989K, a "
        "saving of $131K."
    )
    pdf.para(
        "Management's view: the decline is mostly timing, not a structural change. The EU "
        "migration cost is gone in Q4 and the GPU contract becomes margin-neutral at roughly "
        "75% utilization."
    )

    # ---------------------------------------------------------------- page 4: operations
    pdf.add_page()
    pdf.h1("4. Operations, product and people")
    pdf.h2("4.1 Reliability")
    pdf.para(
        "All four regions met the internal 99.97% availability objective in July, August and "
        "September. The only significant incident was a SEV2 on August 19, 2026: new eu-west "
        "cache nodes in Dublin were bootstrapped with the wrong eviction policy and rejected "
        "writes for 47 minutes. No requests failed because the gateway fails open on cache "
        "errors, and no SLA credits were owed. Since Gateway 4.5.1 the bootstrap refuses to start "
        "a cache node with the wrong policy."
    )
    pdf.h2("4.2 Product")
    pdf.bullets([
        "Gateway 4.5 (July 28): eu-west (Dublin) generally available and region pinning for "
        "Business and Enterprise customers.",
        "Gateway 4.6 (September 15): per-user cache scope and up to 6 retry attempts per route.",
        "Edge OS 3.2 (September 29): feature parity with Gateway 4.6 and signed offline updates.",
        "Kestrel Edge shipped 21 KE-400 appliances in Q3 (Q2: 17); 52 shipped year to date "
        "against a full-year plan of 70.",
        "Semantic caching remains off by default (2.8% false hits in evaluation); an opt-in beta "
        "is planned for Q1 2027.",
    ])
    pdf.h2("4.3 Go to market")
    pdf.para(
        "New paying customers: 64 in Q3. The most common reason for Team-to-Business upgrades "
        "is the Team tier limit of 100 requests per second per API key. List prices are "
        "unchanged in 2026 (Team $499 per month, Business $2,400 per month, Enterprise from "
        "$9,500 per month); the Team price will be reviewed in January 2027."
    )
    pdf.h2("4.4 People")
    pdf.para(
        "Headcount was 182 on September 30: 78 in engineering, 34 in sales, 22 in customer "
        "success and support, 12 in product and design, 12 in marketing, 18 in G&A and 6 in "
        "Edge hardware operations. Voluntary attrition in Q3 was 2.1%. We plan 13 net hires in "
        "Q4, including two engineers for the Caching team."
    )

    # ---------------------------------------------------------------- page 5: outlook + asks
    pdf.add_page()
    pdf.h1("5. Outlook for Q4 2026 and FY2026")
    pdf.table(
        ["Item", "Guidance / forecast"],
        [
            ["Q4 2026 revenue", "$12.4M to $12.8M"],
            ["Q4 2026 gross margin", "about 68.5%"],
            ["FY2026 revenue", "$41.8M to $42.2M (plan $41.5M)"],
            ["ARR at Dec 31, 2026 (base case)", "$50.5M (plan $52.0M)"],
            ["ARR range (worst to best case)", "$49.0M to $51.5M"],
            ["Headcount at Dec 31, 2026", "195"],
            ["Reserved GPU utilization, December", "60%"],
        ],
        [90, 76],
    )
    pdf.para(
        "To meet the FY2026 revenue plan of $41.5M, Q4 revenue needs to be at least $12.1M; "
        "the guidance range is above that. We expect to miss the $52.0M year-end ARR target: the "
        "base case is $50.5M, mostly because two large Enterprise renewals with expansions moved "
        "from December to Q1 2027."
    )
    pdf.h2("6. Decisions requested from the board")
    pdf.bullets([
        "Approve $1.2M of capital expenditure to add GPU capacity in the ap-northeast (Tokyo) "
        "region in Q2 2027, driven by demand from Japanese financial services customers.",
        "Approve the 2027 planning assumptions: revenue growth of 45% to 50%, gross margin of "
        "70% or more, and break-even operating income in Q4 2027.",
        "Note that Legal (Robert Chen) reviewed the Northwind Compute contract: early "
        "termination after 18 months is possible with a fee equal to 6 months of fees "
        "($1.32M).",
    ])
    pdf.h2("7. Appendix: definitions")
    pdf.para(
        "ARR is annualized recurring revenue from subscriptions and committed usage at the end "
        "of the period. Net revenue retention compares revenue from customers who were paying "
        "12 months ago with their revenue today. Prompt-cache hit rate is the share of all "
        "gateway requests answered from the prompt cache."
    )

    out.parent.mkdir(parents=True, exist_ok=True)
    pdf.output(str(out))
    return out


def extract_text(path: Path) -> str:
    from pypdf import PdfReader

    reader = PdfReader(str(path))
    return "\n".join(
        f"--- page {i + 1} ---\n{page.extract_text()}" for i, page in enumerate(reader.pages)
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--check", action="store_true", help="print the text pypdf extracts")
    args = ap.parse_args()
    path = build(args.out)
    print(f"wrote {path} ({path.stat().st_size} bytes)")
    if args.check:
        print(extract_text(path))


if __name__ == "__main__":
    main()
