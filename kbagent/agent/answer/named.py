"""The things a question names, verbatim, for :mod:`~kbagent.agent.answer.focus`: code terms
(``lru_cache``, ``SQLITE_MAX_ATTACHED``, ``maxsize=``), quoted terms and capitalised names
that are not the question's first word ("Kestrel Gateway").
"""

from __future__ import annotations

import re

_CODE_TERM = re.compile(r"`([^`]{1,80})`|(?<![\w./-])([A-Za-z_][\w.]*(?:\(\)|_[\w.]*|\.[A-Za-z_]"
                        r"\w*)+|[a-z]+[A-Z][A-Za-z0-9]*|[A-Z]{2,}[A-Z0-9_]*|[A-Za-z_]\w*=[\w.]*)"
                        r"(?![\w/])")
# a quoted term; a single quote only where it is no apostrophe ("a folder's URL, if I
# haven't" quotes nothing)
_QUOTED = re.compile(r"[\"“]([^\"”]{2,60})[\"”]|(?<!\w)['‘]([^'’]{2,60})['’](?!\w)")
_CAPITALISED = re.compile(r"(?<![\w'])([A-Z][\w'&.-]*(?:\s+(?:de |von |van )?"
                          r"[A-Z][\w'&.-]*)*)")
_SENTENCE_END = re.compile(r"[.!?]\s+$")
_NOT_NAMES = frozenset(
    "I A An The What Which Who Whom Whose When Where Why How Is Are Was Were Does Do Did Can "
    "Could Will Would Should Has Have Had May Might Must If In On At For From With By To Of "
    "And Or But Tell Give List Show Find Explain Describe Please Out".split())


def named_things(question: str) -> tuple[str, ...]:
    """Code terms, quoted terms and capitalised names of ``question``, in order."""
    out: list[str] = []
    for m in _CODE_TERM.finditer(question):
        term = (m.group(1) or m.group(2) or "").strip().rstrip(".")  # "html_js_files."
        if term and term not in _NOT_NAMES:
            out.append(term)
    out += [(m.group(1) or m.group(2)).strip() for m in _QUOTED.finditer(question)]
    first = len(question) - len(question.lstrip())
    for m in _CAPITALISED.finditer(question):
        words = m.group(1).split()
        if m.start() == first or _SENTENCE_END.search(question[:m.start()]):
            words = words[1:]  # a sentence's first word ("... in one line? Roughly how")
        while words and words[0] in _NOT_NAMES:
            words = words[1:]
        for i, w in enumerate(words):  # "on A4. What page ...": a name ends with its sentence
            if w.endswith(".") and len(w) > 2 and "." not in w[:-1]:
                words = [*words[:i], w.rstrip(".")]
                break
        name = " ".join(words)
        if name and not any(name in x or x in name for x in out):
            out.append(name)
    return tuple(dict.fromkeys(x for x in out if x))


def is_code_term(name: str) -> bool:
    """Is ``name`` written as code (``html_js_files``, ``NO_COLOR``, ``maxsize=``)?"""
    m = _CODE_TERM.fullmatch(name)
    return m is not None and bool(m.group(2))


def plain_name(name: str) -> str:
    """A named thing as documents write it: no possessive, call parentheses or
    backticks ("Kestrel's" -> "Kestrel", "lru_cache()" -> "lru_cache")."""
    name = re.sub(r"(?:'s|\u2019s)$", "", name.strip("`\"'\u201c\u201d "))
    # "environment=..." is the setting "environment" with its value left out
    name = re.sub(r"(?:\.\.\.|\u2026)$", "", name)
    return re.sub(r"\(\)$|=$", "", name).strip()
