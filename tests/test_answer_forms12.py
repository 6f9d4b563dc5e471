"""Forms of issue 22, session 12:

* abstention reads the sentence that asks: a story told before it ("Our weekly
  newsletter goes out to lots of addresses ...") need not be in the sources, so a word
  of the story that no chunk holds does not make the harness refuse (found on the
  Sphinx and pytest development sets: "We're in Germany and the PDF ...", "Before
  writing my own helper I'd like to know how many ... the catalogue ... lists. How many
  are there?").

Constructed text only (the program and its figures are invented). Each test fails on
main before this session's changes (91b937b)."""

from __future__ import annotations

from kbagent.agent.answer.evidence import SentenceVectors
from kbagent.agent.answer.grounding import Grounding
from kbagent.kb.embedder import load_embedder
from tests.test_answer_forms9 import _ledger

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
    text = " ".join(SMTP_PAGES.values()).lower()
    g = Grounding(question, _ledger(SMTP_PAGES), mentioned=lambda w: w.lower() in text,
                  vectors=SentenceVectors(load_embedder().encode))
    return g.silent_reason(g.evidence())


def test_a_story_word_the_sources_lack_does_not_make_it_refuse() -> None:
    asked = "How many recipients does the smtp transport list in one transaction by default?"
    assert _silent("Our weekly newsletter goes out to lots of addresses at one provider. "
                   + asked) is None
    # the same words in the sentence that asks are what the sources do not cover
    assert _silent("How many recipients of our weekly newsletter does the smtp transport "
                   "list in one transaction by default?") is not None
