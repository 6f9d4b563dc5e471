"""Routing for ``--mode auto``: small talk -> direct answer (no retrieval); a simple
factoid -> single retrieval (rag); a composite question -> the full agent loop."""

from __future__ import annotations

import re

from kbagent.agent.kinds import AskMode
from kbagent.agent.run.about import about_kind

_CHITCHAT = re.compile(
    r"^\s*(?:hi|hello|hey|hiya|howdy|yo|good (?:morning|afternoon|evening)|greetings|"
    r"thanks?|thank you|thx|cheers|ok(?:ay)?|cool|great|nice|bye|goodbye|see you|"
    r"how are you(?: doing)?|who are you|what are you|what can you do|what do you do|"
    r"help|are you there)\b[\s!.?,:)]*(?:there|kbagent|again|so much|a lot|you)?[\s!.?]*$",
    re.IGNORECASE,
)
_COMPOSITE = re.compile(
    r"\b(?:compare|comparison|versus|vs\.?|differ(?:ence|ent|s)?|change[ds]?|why|explain|"
    r"relationship|interact|both|between|trend|over time|calculate|compute|how many more|"
    r"how much more|total|sum|combined|ratio|percent(?:age)? (?:change|increase|decrease)|"
    r"grow(?:th)?|increase|decrease|and then|step by step|list all|all of the)\b",
    re.IGNORECASE,
)


def is_chitchat(question: str) -> bool:
    """Small talk, or a short question about kbagent itself ("which model are you?")."""
    if _CHITCHAT.match(question) or not re.search(r"\w", question):
        return True
    short = len(question.split()) <= 8
    return short and about_kind(question) in ("model", "kbs", "identity", "capabilities")


def route(question: str) -> AskMode:
    """Pick ``direct``, ``rag`` or ``agent`` for ``--mode auto``."""
    if is_chitchat(question):
        return AskMode.DIRECT
    if _COMPOSITE.search(question) or question.count("?") > 1:
        return AskMode.AGENT
    return AskMode.RAG
