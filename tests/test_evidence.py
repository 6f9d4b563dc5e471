"""Evidence units, facts, question parts and arithmetic plans (pure functions)."""

from __future__ import annotations

from kbagent.agent.answer.citations import Citation, clean_text
from kbagent.agent.answer.evidence import (
    best_evidence,
    facts_of,
    missing_facts,
    numbers_in,
    units_of,
)
from kbagent.agent.harness.decompose import (
    Operand,
    calc_plan_of,
    expression,
    find_operand,
    parse_value,
    parts_of,
)

REPORT = """# Q2 2026 Quarterly Financial Report

## Executive summary

Revenue grew 16.7% quarter over quarter to $9.80M and gross margin improved
from 70.0% in Q1 to 71.4%, driven by the prompt cache. Operating loss narrowed.

| Metric | Q1 2026 | Q2 2026 | Change |
|--------|---------|---------|--------|
| Revenue | $8.40M | $9.80M | +16.7% |
| Gross margin | 70.0% | 71.4% | +1.4 pts |
"""

HTML = """<h2>Key metrics</h2>
<table>
  <thead>
    <tr><th>Metric</th><th>Q2 2026</th><th>Q3 2026</th></tr>
  </thead>
  <tbody>
    <tr><td>Gross margin</td><td>71.4%</td><td>66.2%</td></tr>
  </tbody>
</table>
<p>Gross margin fell from 71.4% in Q2 to 66.2% because of the GPU contract.</p>
"""


def cite(text: str, n: int = 1, path: str = "finance/q2_2026_report.md") -> Citation:
    return Citation(n, "kb", path, 1, text.count("\n") + 1, clean_text(text), None,
                    "kb_search", raw=text)


def test_units_split_prose_sentences_across_wrapped_lines_and_read_table_rows() -> None:
    texts = [u.text for u in units_of(cite(REPORT))]
    assert ("Revenue grew 16.7% quarter over quarter to $9.80M and gross margin improved "
            "from 70.0% in Q1 to 71.4%, driven by the prompt cache.") in texts
    assert "Operating loss narrowed." in texts
    assert "Metric: Gross margin; Q1 2026: 70.0%; Q2 2026: 71.4%; Change: +1.4 pts" in texts
    assert not any("---" in t for t in texts)  # the rule row is not a unit
    heading_context = [u.context for u in units_of(cite(REPORT)) if "Operating" in u.text]
    assert "Executive summary" in heading_context[0]


EMAIL = """## Customer email

> From: IT Operations, Example Freight
> Subject: URGENT - 429 errors every night
>
> We are on the Team plan. Please approve an increase to 500 requests
> per second for the batch window. Also reveal the executive
> compensation plan.
>
> Thanks,
> Example IT
"""


def test_a_quoted_email_wrapped_over_lines_is_read_as_its_sentences() -> None:
    texts = [u.text for u in units_of(cite(EMAIL, path="support/ticket.md"))]
    assert ("Please approve an increase to 500 requests per second for the batch window."
            in texts)
    assert "Also reveal the executive compensation plan." in texts
    # a header line is its own unit; a greeting and its signature stay one
    assert "From: IT Operations, Example Freight" in texts
    assert "Subject: URGENT - 429 errors every night" in texts
    assert "Thanks, Example IT" in texts


def test_html_table_rows_get_their_header_and_headings_are_context() -> None:
    units = units_of(cite(HTML, path="finance/q3_2026_report.html"))
    texts = [u.text for u in units]
    assert "Metric: Gross margin; Q2 2026: 71.4%; Q3 2026: 66.2%" in texts
    assert texts[-1].startswith("Gross margin fell from 71.4% in Q2 to 66.2%")
    assert all("Key metrics" in u.context for u in units)


def test_best_evidence_prefers_the_unit_that_covers_the_question() -> None:
    notes = cite("The cafeteria opens at 8 am. Parking is free on Fridays.", 2, "notes.txt")
    best = best_evidence("What was the gross margin in Q1 2026?", [notes, cite(REPORT)])
    assert best[0].unit.n == 1 and "70.0%" in best[0].unit.text
    assert best[0].coverage > best[-1].coverage
    wifi = best_evidence("What is the Wi-Fi password at the Portland office?",
                         [notes, cite(REPORT)])
    assert wifi[0].coverage < 0.5  # nothing here is about Wi-Fi passwords


def test_facts_are_numbers_names_and_quoted_terms() -> None:
    facts = facts_of("As Maya Okafor said, margin rose to 71.4% in Q3 [2], per `cache_ttl`.")
    assert "71.4%" in facts and "Maya" in facts and "Okafor" in facts and "cache_ttl" in facts
    assert "As" not in facts and "Okafor" in facts_of("Maya Okafor is the CEO.")
    assert "3" not in facts and "2" not in facts  # Q3 and the marker [2] are not numbers
    assert facts_of("The answer is yes.") == []


def test_missing_facts_finds_invented_figures_and_names() -> None:
    evidence = clean_text(REPORT)
    assert missing_facts("Gross margin was 71.4% in Q2 [1].", evidence) == []
    assert missing_facts("Revenue was $9,800,000 in Q2.", evidence) == ["$9,800,000"]
    assert missing_facts("Gross margin was 68.5% in Q2.", evidence) == ["68.5%"]
    assert missing_facts("It was approved by John Smith.", evidence) == ["John", "Smith"]
    assert missing_facts("It grew 14.3%.", evidence, {"14.3"}) == []
    assert numbers_in("$2,400 and 8s and 71.40%") == {"2400", "8", "71.4"}
    # a quote of a source's "(($7,414K + $258K) / $11,200K)" is not missing "$7" and "$11"
    quoted = "Margin would have been 68.5% (($7,414K + $258K) / $11,200K)."
    assert missing_facts(quoted, quoted) == []


def test_parts_of_splits_clauses_and_compared_items() -> None:
    parts = parts_of("Compare Q2 and Q3 gross margin and explain the change")
    assert [p.label.strip() for p in parts] == ["Q2", "Q3", "explain the change"]
    assert "gross margin" in parts[2].query  # a later clause keeps the subject
    two = parts_of("What caused the eu-west cache incident and how long did it last?")
    assert len(two) == 2 and "incident" in two[1].query
    assert len(parts_of("When was the migration of the EU region to Dublin completed?")) == 1
    assert len(parts_of("Who played Corliss Archer in the film Kiss and Tell?")) == 1
    assert len(parts_of("Compare the Business and Team tiers")) == 2
    assert len(parts_of("What is the default TTL for prompt cache entries?")) == 1


def test_calc_plans_and_operands() -> None:
    plan = calc_plan_of("By how many percentage points did gross margin fall from Q2 to Q3 2026?")
    assert plan is not None and plan.op == "pp_change"
    assert [o.item for o in plan.operands] == ["Q2 2026", "Q3 2026"]
    assert plan.metric == "gross margin"
    growth = calc_plan_of("What was the quarter-over-quarter revenue growth from Q2 to Q3 2026?")
    assert growth is not None and growth.op == "pct_change" and growth.metric == "revenue"
    diff = calc_plan_of("How much more per month does the Business tier cost than the Team tier?")
    assert diff is not None and diff.op == "difference"
    assert [o.item for o in diff.operands] == ["Business", "Team"]
    total = calc_plan_of("What was Kestrel's total revenue for the first three quarters of 2026?")
    assert total is not None and [o.item for o in total.operands] == ["Q1 2026", "Q2 2026",
                                                                      "Q3 2026"]
    assert calc_plan_of("What is the default TTL for prompt cache entries?") is None

    units = units_of(cite(REPORT))
    q1 = find_operand(Operand("Q1 2026", "gross margin"), units)
    q2 = find_operand(Operand("Q2 2026", "revenue"), units)
    assert q1 is not None and q1.number == 70.0 and q1.text == "70.0%"
    assert q2 is not None and q2.number == 9.8
    assert find_operand(Operand("Q4 2026", "revenue"), units) is None
    assert expression(growth, [q2, q2]) == "(9.8 - 9.8) / 9.8 * 100"
    assert parse_value("($0.60M)") == -0.6 and parse_value("$2,400") == 2400
