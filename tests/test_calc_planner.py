"""The calculation planner (issue 22 item 6): "X than Y" between any two noun phrases,
ratios and shares, unit conversions; and, end to end through the agent with the
scripted LLM on constructed documents, the calculate tool called with the right
expression and an answer that leads with the result (``short_answer`` set)."""

from __future__ import annotations

import pytest

from kbagent.agent.answer.citations import Citation, clean_text
from kbagent.agent.answer.evidence import units_of
from kbagent.agent.events import Action, Final
from kbagent.agent.harness.decompose import Operand, calc_plan_of, expression, find_operand
from kbagent.agent.run.loop import Agent, AgentConfig
from kbagent.kb.ingest import Ingestor
from kbagent.kb.knowledge_base import KnowledgeBase
from tests.scripted_llm import ScriptedLLM


def _plan(question: str) -> tuple[str, list[str], str]:
    plan = calc_plan_of(question)
    assert plan is not None, question
    return plan.op, [o.item for o in plan.operands], plan.metric


@pytest.mark.parametrize(("question", "op", "items", "metric"), [
    ("How many more days of PTO does a manager get than an intern?", "difference",
     ["manager", "intern"], "days PTO"),
    ("How much longer is the retry cap than the connect timeout?", "difference",
     ["retry cap", "connect timeout"], ""),
    ("How much higher was Q3 revenue than Q2's?", "difference", ["Q3", "Q2"], "revenue"),
    ("How much higher was revenue in Q3 than in Q2?", "difference", ["Q3", "Q2"], "revenue"),
    ("Is the free tier's limit bigger than the team plan's?", "compare",
     ["free tier", "team plan"], "limit"),
    ("Does a manager get more PTO days than an intern?", "compare", ["manager", "intern"],
     "PTO days"),
    ("How many times larger is the team plan's storage quota than the free tier's?", "ratio",
     ["team plan", "free tier"], "storage quota"),
    ("How many times faster is the cache lookup than the upstream call?", "ratio",
     ["cache lookup", "upstream call"], ""),
    ("What is the ratio of the retry cap to the connect timeout?", "ratio",
     ["retry cap", "connect timeout"], ""),
    ("What share of the monthly budget is the GPU spend?", "share",
     ["GPU spend", "monthly budget"], ""),
    ("What is the log volume as a percentage of the disk quota?", "share",
     ["log volume", "disk quota"], ""),
    ("What is the difference in price between the Business and Team tiers?", "difference",
     ["Business", "Team"], "price tiers"),
    ("How long is the retry cap in milliseconds?", "convert", ["retry cap"], ""),
    ("How many bytes does the page cache hold?", "convert", ["page cache"], ""),
    ("How many pages per second does the flusher write?", "convert", ["flusher"], ""),
    ("How many bytes does the send buffer hold?", "convert", ["send buffer"], ""),
    ("How many minutes does the session store keep sessions?", "convert", ["session store"],
     ""),
    ("How many more requests per second can the cache serve than the upstream proxy?",
     "difference", ["cache", "upstream proxy"], "requests second serve"),
    ("Is it true that the retry cap is longer than the connect timeout?", "compare",
     ["retry cap", "connect timeout"], ""),
    ("How much less is the intern allowance than the manager allowance?", "difference",
     ["intern", "manager"], "allowance"),
    ("What percentage of employees are engineers?", "share", ["engineers", "employees"], ""),
    ("How many more days of annual leave do full-time staff get than part-time staff?",
     "difference", ["full-time", "part-time"], "days annual leave staff"),
])
def test_the_planner_reads_many_phrasings(question: str, op: str, items: list[str],
                                          metric: str) -> None:
    assert _plan(question) == (op, items, metric)


@pytest.mark.parametrize(("calculation", "not_one"), [
    ("Is the free tier's limit bigger than the team plan's?", "Is a tag larger than a branch?"),
    ("Is the cache lookup faster than the upstream timeout?", "Is Rust faster than Go?"),
    ("What is the difference in price between the Business and Team tiers?",
     "What is the difference between a tag and a branch?"),
    ("How long is the prompt cache TTL in minutes?",
     "What is the default TTL for prompt cache entries?"),
    ("How many more days of PTO do managers get than interns?",
     "How many days of PTO do employees get?"),
    ("Is the new parser's memory use higher than the old one's?",
     "Is the new parser better than the old one?"),
])
def test_a_comparison_of_quantities_is_planned_and_one_of_things_is_not(
        calculation: str, not_one: str) -> None:
    assert calc_plan_of(calculation) is not None
    assert calc_plan_of(not_one) is None


def test_the_unit_asked_for_is_kept_on_the_plan() -> None:
    plan = calc_plan_of("How much longer is the retry cap than the connect timeout, in "
                        "milliseconds?")
    assert plan is not None and plan.unit is not None and plan.unit.text() == "ms"
    assert [o.item for o in plan.operands] == ["retry cap", "connect timeout"]
    rate = calc_plan_of("How many pages per second does the flusher write?")
    assert rate is not None and rate.unit is not None
    assert rate.unit.text() == "pages per second"


def cite(text: str, n: int = 1, path: str = "eng/limits.md") -> Citation:
    return Citation(n, "kb", path, 1, text.count("\n") + 1, clean_text(text), None,
                    "kb_search", raw=text)


LIMITS = ("# Limits\n\nClients give up after the retry cap of 30 s is reached. The connect "
          "timeout is 5000 ms by default.\nThe page cache holds 1,000 pages of 4 KB each, "
          "and the flusher writes 5 pages every 250 ms.\n")


def test_operands_in_different_units_are_converted_before_they_are_combined() -> None:
    units = units_of(cite(LIMITS))
    longer = calc_plan_of("How much longer is the retry cap than the connect timeout?")
    assert longer is not None
    cap = find_operand(longer.operands[0], units)
    timeout = find_operand(longer.operands[1], units, like=cap.text if cap else "")
    assert cap is not None and cap.number == 30 and cap.text == "30 s"
    assert timeout is not None and timeout.number == 5000 and timeout.text == "5000 ms"
    assert expression(longer, [cap, timeout]) == "30 - (5000 / 1000)"
    in_ms = calc_plan_of("How much longer is the retry cap than the connect timeout, in ms?")
    assert in_ms is not None and expression(in_ms, [cap, timeout]) == "30 * 1000 - 5000"
    faster = calc_plan_of("How many times shorter is the connect timeout than the retry cap?")
    assert faster is not None
    assert expression(faster, [timeout, cap]) == "(30 * 1000) / 5000"


def test_products_and_rates_in_the_sources_are_computed_in_the_unit_asked() -> None:
    units = units_of(cite(LIMITS))
    size = calc_plan_of("How many bytes does the page cache hold?")
    assert size is not None
    held = find_operand(size.operands[0], units)
    assert held is not None and held.text == "1,000 pages of 4 KB each"
    assert expression(size, [held]) == "(1000 * 4) * 1024"
    rate = calc_plan_of("How many pages per second does the flusher write?")
    assert rate is not None
    writes = find_operand(rate.operands[0], units)
    assert writes is not None and writes.text == "5 pages every 250 ms"
    assert expression(rate, [writes]) == "(5 / 250) * 1000"


def test_a_figure_is_read_next_to_its_own_item_not_the_first_after_the_metric() -> None:
    units = units_of(cite("Managers get 25 days of PTO a year, while interns get 15 days.",
                          path="hr/leave.md"))
    assert (v := find_operand(Operand("intern", "days PTO"), units)) is not None
    assert v.number == 15
    assert (m := find_operand(Operand("manager", "days PTO"), units)) is not None
    assert m.number == 25


SETTINGS_TABLE = """# Defaults

| Setting | Default | Notes |
|---|---|---|
| connect_timeout | 5000 ms | per attempt |
| retry_cap | 30 s | total |
| max_body | 4 MiB | request body |

| Role | PTO days |
|---|---|
| Manager | 25 |
| Intern | 15 |
"""


def test_table_rows_name_settings_in_snake_case_and_columns_carry_units() -> None:
    units = units_of(cite(SETTINGS_TABLE, path="docs/defaults.md"))
    longer = calc_plan_of("How much longer is the retry cap than the connect timeout?")
    assert longer is not None
    values = [find_operand(o, units) for o in longer.operands]
    assert [v.text if v else None for v in values] == ["30 s", "5000 ms"]
    assert expression(longer, [v for v in values if v]) == "30 - (5000 / 1000)"
    pto = calc_plan_of("How many more PTO days does a manager get than an intern?")
    assert pto is not None
    days = [find_operand(o, units) for o in pto.operands]
    assert [v.text if v else None for v in days] == ["25 days", "15 days"]
    body = calc_plan_of("How many bytes is the max body?")
    assert body is not None
    size = find_operand(body.operands[0], units)
    assert size is not None and expression(body, [size]) == "4 * 1048576"


# ---------------------------------------------------------------- end to end
DOCS = {
    "hr/leave.md": (
        "# Leave\n\nEvery employee may request leave in the HR portal.\n\n"
        "## PTO by role\n\nManagers get 25 days of PTO per year. Interns get 15 days of PTO "
        "per year.\nUnused PTO does not roll over.\n"),
    "eng/network.md": (
        "# Network settings\n\nThe retry cap is 30 s; after it the client reports an error.\n"
        "The connect timeout is 5000 ms for every upstream.\n"),
    "eng/cache.md": (
        "# Page cache\n\nThe page cache holds 1,000 pages of 4 KB each.\n\n"
        "## Flushing\n\nThe flusher writes 5 pages every 250 ms to disk.\n"),
    "product/plans.md": (
        "# Plans\n\nThe free tier has a storage limit of 2 GB.\n"
        "The team plan has a storage limit of 500 GB.\n"),
    "product/tiers.md": (
        "# Tiers\n\nThe Starter tier costs $29 per month and includes 3 seats.\n"
        "The Growth tier costs $199 per month and includes 25 seats.\n"),
}


@pytest.fixture
def calc_kb(settings, make_folder, embedder) -> KnowledgeBase:
    Ingestor(settings, "calc", embedder=embedder).run(make_folder(DOCS))
    return KnowledgeBase(settings, "calc")


def _ask(kb: KnowledgeBase, question: str):
    llm = ScriptedLLM(["It is about the same [1]."])
    events = list(Agent(llm, [kb], AgentConfig(mode="rag", tools="full",
                                               grounded=True)).run(question))
    assert isinstance(events[-1], Final)
    calls = [e.args["expression"] for e in events
             if isinstance(e, Action) and e.tool == "calculate"]
    return events[-1].result, calls, llm


@pytest.mark.parametrize(("question", "expr", "lead"), [
    ("How many more days of PTO does a manager get than an intern?", "25 - 15", "10 days"),
    ("How much longer is the retry cap than the connect timeout?", "30 - (5000 / 1000)",
     "25 s"),
    ("How many times larger is the team plan's storage limit than the free tier's?",
     "500 / 2", "250 times"),
    ("Is the free tier's storage limit bigger than the team plan's?", "2 - 500", "No"),
    ("How many bytes does the page cache hold?", "(1000 * 4) * 1024", "4,096,000 bytes"),
    ("How many pages per second does the flusher write?", "(5 / 250) * 1000",
     "20 pages per second"),
    ("Is the retry cap longer than 10 seconds?", "30 - 10", "Yes"),
    ("How many more seats does the Growth tier include than the Starter tier?", "25 - 3",
     "22 seats"),
    ("Is the Growth tier cheaper than the Starter tier?", "29 - 199", "No"),
    ("Is the connect timeout shorter than 2 s?", "2 * 1000 - 5000", "No"),
])
def test_the_answer_leads_with_the_computed_result(calc_kb: KnowledgeBase, question: str,
                                                   expr: str, lead: str) -> None:
    result, calls, llm = _ask(calc_kb, question)
    assert calls == [expr]
    first = result.sentences[0]
    assert first.role == "calculation" and lead in first.text and first.cited
    assert result.answer.startswith(first.text)
    assert result.short_answer.startswith(lead + " [")
    assert all(f"[{n}]" in result.short_answer for n in first.cited)
    quotes = [x for x in result.sentences if x.role == "quote"]
    assert quotes and all(x.cited for x in quotes)
    plan = calc_plan_of(question)
    assert plan is not None  # one quote per operand found in a source, none for a literal
    assert len(quotes) == sum(1 for o in plan.operands if not o.literal)
    assert result.sentences[-1].role == "calculation" and "(calculated)" in result.answer
    assert all(not x.numbers_missing for x in result.sentences)
    assert first.supported is True
    assert llm.calls == []  # the harness computed it; the model was not asked


def test_a_figure_is_converted_only_to_another_unit(calc_kb: KnowledgeBase) -> None:
    result, calls, _ = _ask(calc_kb, "How many seconds is the connect timeout?")
    assert calls == ["5000 / 1000"] and result.short_answer.startswith("5 s [")
    result, calls, _ = _ask(calc_kb, "How many ms is the connect timeout?")
    assert calls == []  # 5000 ms is already in ms: nothing to compute
    assert "5000 ms" in result.answer


def test_a_figure_whose_unit_the_sentence_states_apart_is_converted(
        settings, make_folder, embedder) -> None:
    """'Number of seconds ... (default: 1800)': the figure's unit is told before it, and
    the question's subject ('the session store keep sessions') names no operand."""
    docs = {"ops/sessions.md": (
        "# Session store\n\nThe session store keeps logged-in sessions in memory.\n\n"
        "--lifetime <seconds>: Number of seconds to keep a session (default: 1800).\n"),
        "ops/other.md": "# Other\n\nThe cleaner runs every night.\n"}
    Ingestor(settings, "conv", embedder=embedder).run(make_folder(docs))
    kb = KnowledgeBase(settings, "conv")
    result, calls, _ = _ask(kb, "How many minutes does the session store keep sessions by "
                                "default?")
    assert calls == ["1800 / 60"]
    assert result.short_answer.startswith("30 minutes [")
