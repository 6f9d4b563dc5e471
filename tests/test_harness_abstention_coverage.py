"""The harness's abstention stage, by coverage: whether the best units cover what the
sentence that asks wants (its words the sources hold, and closeness of meaning), so that
a word of the story before it, one word in a long question, a word of precision or a
split into parts does not make the harness say "The knowledge base does not say"
(``Grounding.silent_reason``). Things the sources never mention are in
test_harness_abstention_named.py.

The harness policy's frozen rules, on constructed text: see ``tests/harness_cases.py``.
"""

from __future__ import annotations

from pathlib import Path

from tests.agent_runs import ask_one_file, silent_reason

SMTP_PAGES = {
    "smtp.html": "frob_max_rcpt (default: 100): The maximum number of recipients that the "
                 "smtp transport of Frobd lists in one SMTP transaction; the rest are sent "
                 "in further transactions over the same connection, or a new one when the "
                 "remote host asks for it.",
    "queue.html": "Frobd queues mail it cannot deliver at once in the deferred queue.",
    "tls.html": "Frobd speaks TLS 1.2 and 1.3 when the peer offers it.",
}


def _silent(question: str) -> str | None:
    """Why the Frobd pages do not answer ``question`` (None: they may)."""
    return silent_reason(SMTP_PAGES, question)


def test_a_story_word_the_sources_lack_does_not_make_it_refuse() -> None:
    asked = "How many recipients does the smtp transport list in one transaction by default?"
    assert _silent("Our weekly newsletter goes out to lots of addresses at one provider. "
                   + asked) is None
    # the same words in the sentence that asks are what the sources do not cover
    assert _silent("How many recipients of our weekly newsletter does the smtp transport "
                   "list in one transaction by default?") is not None


def test_one_word_the_sources_lack_in_a_long_question_does_not_make_it_refuse() -> None:
    assert _silent("Once the rest go to the deferred queue and the remote host asks for a "
                   "new connection, how many recipients does the transport list in one "
                   "transaction, shuffled?") is None
    # in a short question the one word is a large part of what is asked
    assert _silent("How many recipients does the transport list in one transaction, "
                   "shuffled?") is not None


def test_a_word_of_precision_is_not_what_the_sources_must_hold() -> None:
    for hedge in ("Roughly", "Approximately"):
        assert _silent(f"{hedge} how many recipients does the smtp transport list in one "
                       "transaction by default?") is None


ZLIB = """# Forwarding with compression

frobd can compress what it forwards with zlib.

Please note that frobd checks the compression gain first. Messages of 60 bytes or
less are never compressed, because the zlib header would make them longer.

Compression costs CPU time on both ends of the connection.
"""


def test_a_question_in_parts_is_answered_from_a_sentence_close_in_meaning(
        tmp_path: Path) -> None:
    # "Do small messages get compressed too, or ...?" shares few words with "Messages of
    # 60 bytes or less are never compressed": closeness of meaning covers the part (and a
    # question none of whose parts is covered is judged whole, never refused for its split)
    final = ask_one_file(
        tmp_path, "forwarding.md", ZLIB,
        "Do small messages get compressed too, or is there a size up to which they go out "
        "as they are? How big is that?")
    result = final.result
    assert not result.abstained
    assert "60 bytes or less are never compressed" in result.answer
