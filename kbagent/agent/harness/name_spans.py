"""Which spans of a source sentence can be a name, for :mod:`~kbagent.agent.harness.short`:
not a word capitalised only because a clause starts with it, nor a label; a name without
the question's own words at its ends; the term of a definition whose text names the
class asked for ("-h critbit: ... The default hash algorithm"); the full name a
section's heading gives a first name ("Stig works at ..." under "Stig Sandbeck
Mathisen").
"""

from __future__ import annotations

import re

from kbagent.agent.answer.focus import Focus
from kbagent.agent.harness.span_rules import stems, stems_of

CLASS_TERM_WORDS = 6  # a definition names its term's class within this many words
CLASS_TERM_NAME_WORDS = 3  # a longer "term" is a label ("SQLite is in the Public Domain:")
# where a clause starts: its first word is capitalised anyway ("...: All of the code")
_CLAUSE_START = re.compile(r"(?:^|[:;.!?(]\s*|\s[-–—]\s)$")
# what a manual's pointers and admonitions start with, and what follows "see"
_REFERENCE = re.compile(r"(?:See|Refer|Note|Notes|Hint|Tip|Warning|Caution|Important|"
                        r"Attention|Example|Examples)\b")
_SEE_BEFORE = re.compile(r"\b(?:[Ss]ee(?: also)?|[Rr]efer to)\s+(?:the\s+)?$")
_TERM_OF = re.compile(r"([^\s:][^:]{0,38}):\s+(.+)")


# an identifier, no capitalised word: "PYTEST_THEME", "html_logo", "maxSize", "HOME", "md5"
IDENTIFIER = re.compile(r"[A-Za-z][\w.-]*(?:_|[a-z][A-Z]|[A-Z]{2}|\d)[\w.-]*")


def class_term(focus: Focus, sentence: str, context: str = "") -> list[tuple[str, int, float]]:
    """The term of a definition whose text opens by naming the class asked for ("-h
    critbit: self-scaling tree. The default hash algorithm ..." for "which hash
    algorithm"), or an identifier defined under a heading that names it ("PYTEST_THEME:
    Sets a pygment style ..." under "Environment Variables" for "which environment
    variable"; ``context``: the unit's path and headings): a member of it (a leading
    option flag is no part of its name)."""
    term = _TERM_OF.match(sentence) if focus.class_noun else None
    if term is None:
        return []
    named = stems_of(" ".join(term.group(2).split()[:CLASS_TERM_WORDS])) & stems(
        focus.class_noun)
    under = IDENTIFIER.fullmatch(term.group(1)) is not None and bool(
        stems_of(context) & stems(focus.class_noun))
    if not (named or under):
        return []
    name = re.sub(r"^--?[A-Za-z]\s+", "", term.group(1))
    if name.startswith("-") or len(name.split()) > CLASS_TERM_NAME_WORDS or \
            _REFERENCE.fullmatch(name):  # "Hint: When using Docker images ...": a label
        return []  # "-m: Use MD5 hashing": a bare flag names no member, nor a long label
    return [(name, term.start(1) + len(term.group(1)) - len(name), 0.6)]


def is_name(raw: str, sentence: str, start: int) -> bool:
    """Can this capitalised span be a name? Not one ordinary word that is capitalised
    only because a clause starts with it ("...: All of the code"), nor a label
    ("Description: ...", a table header)."""
    if sentence[start + len(raw):start + len(raw) + 1] == ":":
        return False
    if _REFERENCE.match(raw) or _SEE_BEFORE.search(sentence[:start]):
        return False  # "See Builders for a list", "Hint", "Note": a pointer or a label
    one_word = re.fullmatch(r"[A-Z][a-z'’]+", raw) is not None
    return not (one_word and _CLAUSE_START.search(sentence[:start]))


def trim_name(text: str, qwords: set[str], bonus: float) -> tuple[str, float]:
    """A name without the question's own words at its ends ("NVIDIA L40S GPUs" for
    "Which GPU...": "NVIDIA L40S"); a name that still shares words with the question is
    likely its subject, not its answer ("Edge OS" for "the Kestrel Edge appliance")."""
    def asked(w: str) -> bool:
        return bool(stems(w) & qwords)

    words = text.split()
    shared = sum(1 for w in words if asked(w)) / max(1, len(words))
    while len(words) > 1 and asked(words[-1]):
        words.pop()
    while len(words) > 1 and asked(words[0]):
        words.pop(0)
    return " ".join(words), bonus - 0.8 * shared


def heading_name(focus: Focus, sentence: str, context: str) -> list[tuple[str, int, float]]:
    """The full name a section's heading gives the person its sentence names by a first
    name ("Stig works at ..." under "Stig Sandbeck Mathisen"), for a "who" question; not
    a heading that shares the question's words ("Debian Packaging Notes" for "who
    maintains the Debian packages") or the sentence's next word ("Cache Settings" over
    "Cache size is set ...")."""
    first = re.match(r"([A-Z][a-z'’-]+)\s+([a-z][\w'’-]*)", sentence)
    if (first is None or first.group(1) in _NO_NAME_STARTS
            or not re.match(r"\s*(?:who|whom|whose)\b", focus.question, re.I)):
        return []
    full = re.search(rf"(?<![\w-]){re.escape(first.group(1))}(?:\s+[A-Z][\w'’-]*){{1,3}}",
                     context)
    if full is None or stems_of(full.group()) & (focus.terms | stems_of(first.group(2))):
        return []
    return [(full.group(), 0, 0.4)]


# a sentence's first word that starts no name
_NO_NAME_STARTS = frozenset("The A An There It This That These Those Here He She They We One "
                            "Each Every All Some Such Both Either Neither In On At For If When "
                            "With By To Of And Or But".split())


# "What is the middle name of the actress who ...": a part of the person's full name
NAME_PART = re.compile(r"\b(middle|first|given|last|family|sur)\s?name\b")
_PERSON = re.compile(r"[A-Z][a-z'’-]+(?:\s+(?:[A-Z][a-z'’-]+|[A-Z]\.))+")


def part_of_name(text: str, part: str) -> str:
    """The part of a full name ("Sela Ann Ward") asked for: its middle name(s) "Ann",
    its first "Sela" or its last "Ward"; any other text as it is."""
    if not _PERSON.fullmatch(text):
        return text
    words = text.split()
    if part == "middle":
        return " ".join(words[1:-1]) if len(words) >= 3 else text
    return words[0] if part in ("first", "given") else words[-1]


def name_part(question: str, short: str) -> str:
    """``short`` reduced to the part of a person's name ``question`` asks for ("Ann" of
    "Sela Ann Ward" for "What is the middle name of ..."), else as it is."""
    part = NAME_PART.search(question.lower())
    return part_of_name(short, part.group(1)) if part else short
