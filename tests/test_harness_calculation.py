"""The harness's calculation stage: a total of a count and an amount per each, and a
count asked for a span of time scaled from a stated rate, computed by the calculator and
written first (``harness/totals.py``, ``harness/calc_plan.py``, ``harness/calculation.py``).

The harness policy's frozen rules, on constructed text: see ``tests/harness_cases.py``.
"""

from __future__ import annotations

from pathlib import Path

from kbagent.agent.answer.evidence import best_evidence
from kbagent.agent.answer.units import units_of
from tests.agent_runs import ask_one_file
from tests.agent_runs import ask_one_file as _ask
from tests.harness_cases import option_citation as _cite

SETTINGS = (
    "frobd_bind_retries | Use: main | Type: integer | Default: 7\n\n"
    "This option controls the retrying done by the daemon at startup when it cannot bind "
    "its socket: frobd_bind_retries defines the number of retries after the first failure, "
    "and frobd_bind_sleep defines the length of time to wait between retries.\n\n"
    "frobd_bind_sleep | Use: main | Type: time | Default: 20s\n\n"
    "See frobd_bind_retries.\n\n"
    "frobd_queue_limit | Use: main | Type: integer | Default: 12\n\n"
    "This option sets how many frobs may wait in the queue.\n")


def test_a_total_of_a_count_and_an_amount_per_each_is_computed():
    from kbagent.agent.harness.totals import total_of, wants_total

    q = ("When the frob daemon starts and its port is in use, how many seconds in total does "
         "it keep retrying to bind the socket with the default settings?")
    assert wants_total(q)
    assert not wants_total("How many seconds does the daemon wait between retries?")
    units = units_of(_cite(SETTINGS, "reference/main.html"))
    evidence = best_evidence(q, [_cite(SETTINGS, "reference/main.html")], limit=15)
    assert {u.text for u in units} >= {e.unit.text for e in evidence}
    found = total_of(q, evidence)
    assert found is not None
    assert (found.count.label, found.amount.label) == ("frobd_bind_retries", "frobd_bind_sleep")
    assert found.expression == "7 * 20"
    # a count with nothing per each of it (the queue limit) makes no total
    other = best_evidence("How many frobs in total may wait in the queue?",
                          [_cite(SETTINGS, "reference/main.html")], limit=15)
    assert total_of("How many frobs in total may wait in the queue?", other) is None


def test_the_answer_leads_with_the_total_computed_by_the_calculator(tmp_path: Path):
    final = _ask(tmp_path, "main.md", "# Main options\n\n" + SETTINGS,
                 "When the frob daemon starts and its port is in use, how many seconds in "
                 "total does it keep retrying to bind the socket by default?")
    assert final.result.short_answer.startswith("140 s [")
    assert final.result.answer.startswith("140 s [")
    assert any(step.action == "calculate" for step in final.result.steps)


POOLS = ("# Parameters\n\n## frob_pools\n\nUnits: pools\n\nDefault: 3\n\n"
         "Number of frob worker pools.\n\n## frob_workers_min\n\nUnits: workers\n\n"
         "Default: 10\n\nThe minimum number of frob workers in each pool.\n\n"
         "## frob_workers_max\n\nUnits: workers\n\nDefault: 400\n\n"
         "The maximum number of frob workers in each pool.\n")


def test_a_total_over_one_setting_a_section_takes_the_bound_asked(tmp_path: Path):
    """A reference with a section per setting ("Default: 400" on a line of its own, what
    it is in the lines around it): the number of pools times the maximum per pool."""
    final = _ask(tmp_path, "params.md", POOLS, "With the default pool settings, how many "
                 "frob workers can the daemon run at most in total?")
    assert final.result.short_answer.startswith("1200 [")


def test_a_count_asked_in_one_hour_scales_the_rate_the_source_states(tmp_path: Path):
    """A count per a span of time asked in a clause ("..., what is the largest number
    of journal messages frobd passes on in one hour ..."): the stated rate (20,000
    messages within 10 minutes) scaled by the calculator."""
    text = ("# imfrob: journal input\n\n## Rate limiting\n\nBy default, rate limiting is "
            "activated and permits to process 20,000 messages within 10 minutes. Rate "
            "limiting can be turned off by setting the interval to 0.\n\n## Threads\n\n"
            "The module runs 2 worker threads by default.\n")
    final = ask_one_file(tmp_path, "imfrob.md", text,
                 "With imfrob left at its default rate limiting, what is the largest number "
                 "of journal messages frobd will pass on in one hour before it drops some?")
    assert final.result.short_answer.startswith("120,000 messages")
    assert any(st.action == "calculate" for st in final.result.steps)
