"""The sample-question scorer of bench/bench_agent.py: BENCHMARKS' "correct" counts
depend on it, so its normalisation is checked on the cases that matter."""

from bench.bench_agent import correct, fact_first, first_sentence


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


def test_the_first_sentence_of_an_answer_in_parts_holds_every_part() -> None:
    # "3.6 [1]; 2.7 [1]." leads a two-part answer: one sentence, as the reader sees it
    # (it used to end at the first marker, so the second part never counted as first)
    answer = ("3.6 [1]; 2.7 [1]. Which Python versions did they require? 3.6 [1]. "
              "changelog.html says: \u201cPython 2.7 support dropped\u201d [1]")
    assert first_sentence(answer) == "3.6 [1]; 2.7 [1]."
    # a quoted sentence after the short answer is not part of it
    assert first_sentence("128 [1]. a.html says: \u201cmaxsize 128\u201d [1]") == "128 [1]."
    assert first_sentence("a.html says: \u201cIt is 5. Or 6.\u201d [2]; more") == (
        "a.html says: \u201cIt is 5. Or 6.\u201d [2];")
    assert not fact_first(_q("2.7", "composite"), "3.6 [1]. b.html says: \u201c2.7\u201d [1]")
    assert fact_first(_q("2.7", "composite"), answer)
