"""The earlier turns of a conversation, as context for a follow-up question.

A follow-up ("And when does it launch?" after "Who is the pilot customer for Project
Heron?") is the user's own question; the turns before it are a separate, typed
:class:`Conversation` that :meth:`~kbagent.agent.run.loop.Agent.run` takes. They are
used in two places only:

* the harness's search for the question (:func:`follow_up_query`): a follow-up that
  names nothing is searched with the names of the latest earlier question that named
  something (else that question's content words), so the subject is found again;
* the model's prompts (:func:`in_conversation`): the previous turn is shown before the
  message, its citation markers dropped (their numbers belong to the earlier run).

The question the answer is composed, checked and quoted from, the one the result and
the history keep, is the user's new question alone: earlier turns never reach the
answer text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kbagent.agent.run.hops import MAX_QUERY_WORDS, names_in, words_of

MAX_TURNS = 4  # earlier turns a conversation keeps (the newest)
ANSWER_CHARS = 300  # of the previous answer, in a prompt
_WORD = re.compile(r"\w[\w'’-]*")
_MARKER = re.compile(r"\s*\[\d+\]")  # a citation marker of the earlier run


@dataclass(frozen=True)
class Turn:
    """One earlier turn: the user's question and the answer it got."""

    question: str
    answer: str = ""


@dataclass(frozen=True)
class Conversation:
    """The turns before the current question, oldest first."""

    turns: tuple[Turn, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.turns)

    @property
    def last(self) -> Turn | None:
        return self.turns[-1] if self.turns else None

    def then(self, question: str, answer: str) -> Conversation:
        """This conversation with one more turn (only the newest ``MAX_TURNS`` kept)."""
        return Conversation((*self.turns, Turn(question, answer))[-MAX_TURNS:])


def follow_up_query(question: str, context: Conversation | None) -> str:
    """What the harness searches for ``question``: the question itself, or for a
    follow-up that names nothing, the question and the subject of the turns before
    it (the names of the latest earlier question that has any, else the content words
    of the previous question), the words the question already has left out."""
    if not context or names_in(question):
        return question
    own = words_of(question)
    subject: list[str] = []
    for turn in reversed(context.turns):
        subject = [name for name, _ in names_in(turn.question)
                   if not words_of(name) <= own]
        if subject:
            break
    if not subject:
        prev = context.turns[-1].question
        subject = [w for w in _WORD.findall(prev) if words_of(w) and not words_of(w) <= own]
    words = " ".join(dict.fromkeys(subject)).split()[:MAX_QUERY_WORDS]
    return f"{question} {' '.join(words)}" if words else question


def in_conversation(message: str, context: Conversation | None) -> str:
    """``message`` (a prompt's user message) after the previous turn, if any."""
    turn = context.last if context else None
    if turn is None:
        return message
    answer = " ".join(_MARKER.sub("", turn.answer).split())[:ANSWER_CHARS]
    return (f"Previous question: {turn.question}\n"
            + (f"Previous answer: {answer}\n" if answer else "")
            + f"\n{message}")
