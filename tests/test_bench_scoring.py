"""The sample-question scorer of bench/bench_agent.py: BENCHMARKS' "correct" counts
depend on it, so its normalisation is checked on the cases that matter."""

from bench.bench_agent import correct


def _q(answer: str, kind: str = "factoid") -> dict:
    return {"id": "t", "kind": kind, "answer": answer, "gold_paths": []}


def test_a_date_followed_by_its_year_matches() -> None:
    # removing every comma and space made this "september92026", which missed "september9"
    assert correct(_q("September 9"), "completed on September 9, 2026 [4].", [])
    assert not correct(_q("September 9"), "completed on September 19, 2026.", [])


def test_money_written_three_ways_matches() -> None:
    for answer in ("$2,400 per month", "2400 USD a month", "costs $2400."):
        assert correct(_q("$2,400"), answer, [])
    assert not correct(_q("$2,400"), "$24,000 per year", [])


def test_a_number_only_matches_a_whole_number() -> None:
    assert not correct(_q("20"), "founded in 2026", [])
    assert not correct(_q("12.1"), "about 12.15 million", [])
    assert correct(_q("12.1"), "needs $12.1M in Q4", [])


def test_unanswerable_and_chit_chat() -> None:
    assert correct(_q("", "unanswerable"), "The knowledge base does not say.", [])
    assert not correct(_q("", "unanswerable"), "The password is 12345678.", [])
    assert correct(_q("", "chit-chat"), "Hello! I am kbagent.", [])
    assert not correct(_q("", "chit-chat"), "Hello!", ["search"])
