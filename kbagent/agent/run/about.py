"""What kbagent says about itself: small talk and questions about kbagent, answered
from facts the harness knows (its name, what it does, which KBs are open, which model
runs), never from a model's guess. The bundled 135M model, asked "who are you?",
answered "I'm a kabalist"; these replies are true by construction.

:func:`about_reply` returns None for anything else (the caller then asks the model,
with the same facts in its prompt)."""

from __future__ import annotations

import re
from dataclasses import dataclass

CAPABILITIES = ("I search your knowledge bases and answer with numbered citations that "
                "point to files and line ranges; when the documents do not say something, "
                "I say so instead of guessing.")


@dataclass(frozen=True)
class SelfFacts:
    kbs: list[str]  # the KBs this run may search
    model: str  # the model's name (a GGUF file name, or model@server)
    local: bool  # the model runs in this process (llama.cpp), not on a server


def _kbs(facts: SelfFacts) -> str:
    if not facts.kbs:
        return "no knowledge base yet (run 'kbagent ingest PATH' to make one)"
    names = ", ".join(facts.kbs)
    return f"the knowledge base{'s' if len(facts.kbs) > 1 else ''} {names}"


def _model(facts: SelfFacts) -> str:
    where = "locally on this machine, with llama.cpp" if facts.local else "on a server"
    return f"The model answering is {facts.model}, running {where}."


_RULES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\b(?:which|what) (?:llm|model|language model)\b|\bwhat (?:llm|model) "
                r"(?:are you|do you use|is this)\b", re.I), "model"),
    (re.compile(r"\b(?:which|what) (?:knowledge bases?|kbs?|documents|files|sources)\b.*\b"
                r"(?:open|have|loaded|search|available|use)\b|\blist (?:the )?(?:kbs|knowledge "
                r"bases)\b", re.I), "kbs"),
    (re.compile(r"^\s*(?:who|what) are you\b|\bwhat is kbagent\b|\bare you (?:a bot|an ai|"
                r"human)\b|\bintroduce yourself\b", re.I), "identity"),
    (re.compile(r"\bwhat (?:can|do) you do\b|^\s*help\b|\bhow do(?:es)? (?:you|this|kbagent) "
                r"work\b", re.I), "capabilities"),
    (re.compile(r"^\s*(?:thanks?|thank you|thx|cheers)\b", re.I), "thanks"),
    (re.compile(r"^\s*(?:bye|goodbye|see you)\b", re.I), "bye"),
    (re.compile(r"^\s*how are you\b", re.I), "how"),
    (re.compile(r"^\s*(?:are you there)\b", re.I), "there"),
    (re.compile(r"^\s*(?:hi|hello|hey|hiya|howdy|yo|greetings|good (?:morning|afternoon|"
                r"evening))\b", re.I), "greeting"),
    (re.compile(r"^\s*(?:ok(?:ay)?|cool|great|nice)\b", re.I), "ack"),
]


def about_kind(question: str) -> str | None:
    """Which self/small-talk question this is ("model", "kbs", "identity", ...)."""
    for pattern, kind in _RULES:
        if pattern.search(question):
            return kind
    return None


def about_reply(question: str, facts: SelfFacts) -> str | None:
    """kbagent's own, true answer to small talk or a question about itself."""
    kind = about_kind(question)
    if kind is None:
        return None
    kbs = _kbs(facts)
    return {
        "model": _model(facts),
        "kbs": f"I can search {kbs}." if facts.kbs else f"There is {kbs}.",
        "identity": f"I'm kbagent, an assistant for your documents. {CAPABILITIES} "
                    f"Right now I can search {kbs}. {_model(facts)}",
        "capabilities": f"{CAPABILITIES} Right now I can search {kbs}. Ask a question, "
                        "or use 'kbagent search' to see the matching passages yourself.",
        "thanks": "You're welcome! Ask me anything else about your documents.",
        "bye": "Goodbye!",
        "how": f"I'm fine, thanks, and ready to search {kbs}. What would you like to know?",
        "there": f"Yes, I'm here, ready to search {kbs}.",
        "greeting": f"Hello! I'm kbagent: I answer questions from {kbs}, citing the files "
                    "and lines behind every claim. What would you like to know?",
        "ack": "Glad to help. Ask me anything else about your documents.",
    }[kind]
