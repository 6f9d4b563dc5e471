"""Which spans of a source sentence can be an answer, for :mod:`~kbagent.agent.harness.short`:
the member of the class a question asks for ("MD5 hashing" for "which hash"), names
every cited document uses (the folder's own subject), a table cell's header, and the
numbers that are no figures (an option "-5", "RFC 5077", a version "2.4.10", a date).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable

from kbagent.agent.answer.citations import Citation, content_tokens
from kbagent.agent.answer.evidence import numbers_in
from kbagent.agent.answer.focus import CALL, MEASURE_UNIT, SIZE_UNITS, AnswerType, Focus
from kbagent.agent.answer.phrasing import CALLED, GENERIC_HEADS

WORD = re.compile(r"[A-Za-z0-9_][\w'.-]*")
ARTICLE_WORDS = frozenset({"the", "a", "an", "is", "are", "was", "to", "of", "and", "or",
                            "that", "which", "be", "in", "on", "for", "with", "by", "at"})


def stems(word: str) -> set[str]:
    """A word's stems, a plural's too ("GPUs": "gpu"), identifiers read as words."""
    whole = content_tokens(word.strip(".'-")) if "_" in word else set()  # the identifier too
    word = word.replace("_", " ").strip(".'-")
    return content_tokens(word) | content_tokens(word.rstrip("s")) | whole


def stems_of(text: str) -> set[str]:
    """The stems of every word of ``text`` (:func:`stems`)."""
    return {x for w in text.split() for x in stems(w)}


def cell_bonus(focus: Focus, sentence: str, start: int) -> float:
    """A span in the cell of a table row ("Header: value; ...") whose header is what the
    question asks about ("Seats: 20" for "how many seats"); the more of the question's
    focus the header names, the more ("min. Python version: 3.7+" over "pytest version:
    7.1+" for "the minimum Python version")."""
    cell_start = max(sentence.rfind("; ", 0, start) + 2, 0) if "; " in sentence else 0
    head = sentence[cell_start:start]
    if ":" not in head:
        return 0.0
    header, value = head.split(":", 1)
    # the cell's value is the span, perhaps after a word or two ("Seats: about 20"), not
    # a sentence further on ("git log -3: Limits the number of commits to show to 3")
    if len(header) > 40 or len(value.split()) > 2:
        return 0.0
    words = content_tokens(header)
    asks_who = focus.question.lower().lstrip().startswith("who")
    if words & focus.terms or (asks_who and "who" in header.lower()):
        # (a period, "Q3", qualifies every cell of the row: it names no cell's quantity)
        named = {w for w in focus.focus if len(w) > 1 and not _PERIOD_WORD.fullmatch(w)}
        return 0.8 + 0.1 * len(words & named)
    return 0.0


_PERIOD_WORD = re.compile(r"q[1-4]|h[12]|fy\d*|\d+")


# the question asks for a bound ("the longest lifetime I can give", "at most how many"),
# and the source states one before the value ("cannot exceed 100 days", "up to 64")
# (a bound is asked with what may be set: "the maximum message size" names a setting, whose
# value is asked, not its bound)
_MAY = r"[^?]*\b(?:can|may|could|allowed|possible|permitted|accepts?|go)\b"
_ASKS_MOST = re.compile(rf"\b(?:longest|largest|biggest|highest|most|maximum|max|upper limit|"
                        rf"cap)\b{_MAY}|\bat most\b|\bhow (?:long|large|big|high|many|much) "
                        r"(?:can|may|could)\b", re.I)
_ASKS_LEAST = re.compile(rf"\b(?:shortest|smallest|lowest|least|minimum|min|lower limit)\b"
                         rf"{_MAY}|\bat least\b", re.I)
_MOST_BEFORE = re.compile(r"\b(?:exceed|up to|at most|maximum(?: of| is)?|max(?:imum)?\.?:?|"
                          r"no (?:more|longer|larger) than|limit(?:ed)? (?:of|to|is)|"
                          r"cannot be (?:more|longer|larger) than)\s*$", re.I)
_LEAST_BEFORE = re.compile(r"\b(?:at least|minimum(?: of| is)?|min(?:imum)?\.?:?|no (?:less|fewer|"
                           r"shorter|smaller) than|(?:below|under|lower than))\s*$", re.I)
# over a setting's value in the same sentence ("= 3600s: ... cannot exceed 100 days")
BOUND_STATED = 1.5


def bound_bonus(focus: Focus, sentence: str, start: int) -> float:
    """A value the source states as the bound the question asks for."""
    before = sentence[max(0, start - 30):start]
    if _ASKS_MOST.search(focus.question) and _MOST_BEFORE.search(before):
        return BOUND_STATED
    if _ASKS_LEAST.search(focus.question) and _LEAST_BEFORE.search(before):
        return BOUND_STATED
    return 0.0


# the bound a question asks for ("the longest ... wait", "the minimum size") and the bound
# a sentence is about ("minimal_backoff_time (default: 300s): The minimal time ..."): a
# setting's name counts, its "_" a word break
_MOST = re.compile(r"(?<![a-z])(?:longest|largest|biggest|highest|maximum|maximal|max|upper|"
                   r"at most)(?![a-z])", re.I)
_LEAST = re.compile(r"(?<![a-z])(?:shortest|smallest|lowest|minimum|minimal|min|lower|"
                    r"at least)(?![a-z])", re.I)
OTHER_BOUND = 0.8  # a sentence about the other bound than the one asked for


def other_bound(focus: Focus, sentence: str) -> float:
    """How much lower the spans of ``sentence`` rank because it is about the opposite
    bound of the one the question asks for: "What is the longest Postfix will wait
    between two retries?" is not answered by "minimal_backoff_time (default: 300s): The
    minimal time between attempts ..." (but by its maximal sibling). 0.0 when the
    question asks for no bound or the sentence names both."""
    most, least = (_MOST.search(focus.question), _LEAST.search(focus.question))
    if bool(most) == bool(least):
        return 0.0  # no bound asked for, or both
    wrong, right = (_LEAST, _MOST) if most else (_MOST, _LEAST)
    return OTHER_BOUND if wrong.search(sentence) and not right.search(sentence) else 0.0


# a question about a range of releases: a bound (or `_MOST` / `_LEAST`), a requirement, a
# support, a change (or a release condition, `_CONDITION`: "Before I start ..." sets none)
_ASKS_RANGE = re.compile(r"\b(?:old|new|late|earl|young)(?:est|ier|er)\b|\b(?:last|first|recent|"
                         r"requir\w*|need\w*|support\w*|compatib\w*|works? with|runs? on|"
                         r"introduc\w*|remov\w*|deprecat\w*|drop\w*|still)\b", re.I)
_RANGE_AFTER = re.compile(r"\s*(?:\+|(?:and|or)\s+(?:earlier|later|older|newer|above|below|"
                          r"before|after|prior|higher|lower)\b)", re.I)
RANGE_RELEASE = 0.6


def range_release(focus: Focus, sentence: str, end: int) -> float:
    """How much lower a version ranks that opens a range of releases ("Wireshark 2.6 and
    earlier enabled ...", "3.8+") when the question asks for one release, no bound or
    requirement: "which version of the scripting language does it ship" is answered
    by "an embedded Lua 5.2 interpreter"."""
    q = focus.question
    if focus.answer_type is not AnswerType.VERSION or any(
            p.search(q) for p in (_ASKS_RANGE, _MOST, _LEAST, _CONDITION)):
        return 0.0
    return RANGE_RELEASE if _RANGE_AFTER.match(sentence, end) else 0.0


# a lower-case hyphenated name after "named"/"called" (a version placeholder left out)
# ("the so-called man-in-the-middle attack" names nothing: a phrase of function words)
NAMED_AS = re.compile(r"(?<!so-)\b(?:named|called)\s+(?!\S*-(?:the|a|an|of|in|on|to|and|or|for)-)"
                      r"(?P<n>[a-z][\w.+]*(?:-(?!<)[a-z0-9][\w.+]*)+)")
# a number that is a factor of a product written out ("12*60*60 seconds")
_OPERAND_BEFORE = re.compile(r"[*×]\s?$")
_OPERAND_AFTER = re.compile(r"\s?[*×]")
_VERSION_BEFORE = re.compile(r"\b(?:version|release|v)\s?$", re.I)  # "version 1.0"
_VERSION_WORDS = frozenset(content_tokens("version release"))
_PORT_BEFORE = re.compile(r"\bports? $", re.I)  # "on port 514": the port's name
# a word in capitals that is emphasis or a unit, no name: "NOT", "MB"
SHOUTED = re.compile(rf"(?:NOT|NO|ALL|ANY|ONLY|MUST|NEVER|ALWAYS|NONE|AND|OR|BUT|DO|DON'T|"
                     rf"IS|ARE|WILL|CAN|MAY|SHOULD|YES|OK|TRUE|FALSE|{SIZE_UNITS})")


# a standard's or an algorithm's number is part of its name ("RFC 5077", "ISO 8601")
STANDARD = re.compile(r"\b(?:RFC|ISO|IEEE|IEC|ECMA|CVE|PEP|JSR|ANSI|POSIX|UTF|SHA|MD|BS|EN|"
                       r"ITU-T|X)[- ]?$")


def no_figure(focus: Focus, sentence: str, start: int, end: int) -> bool:
    """Is the number at ``sentence[start:end]`` no figure the question may ask for: a
    factor of a product ("12 hours (12*60*60 seconds)"), an issue's number in a change
    log ("#7721: html theme: ..."), a port's name ("port 514") unless a port is asked, a
    version ("version 1.0") unless a version or release is?"""
    if _OPERAND_BEFORE.search(sentence[max(0, start - 2):start]) or _OPERAND_AFTER.match(
            sentence, end) or sentence[start - 1:start] == "#":  # "#7721": an issue's number
        return True
    if not focus.terms & _VERSION_WORDS and _VERSION_BEFORE.search(
            sentence[max(0, start - 12):start]):
        return True  # "arrived at version 1.0" states no count (nor any figure)
    return "port" not in focus.terms and _PORT_BEFORE.search(sentence[:start]) is not None


DOTTED = re.compile(r"\d+\.\d+\.\d")
ISO_DATE = re.compile(r"\b\d{4}-\d\d-\d\d\b")


def option_flag(sentence: str, start: int) -> bool:
    """Is the number at ``start`` signed by a "-" that opens a word: a command-line
    option ("-2:", "with -2 or -5") or a negative value, whose digits alone would be a
    figure the source does not state?"""
    return start > 0 and sentence[start - 1] == "-" and (
        start == 1 or sentence[start - 2].isspace() or sentence[start - 2] in "([,")


def class_members(focus: Focus, sentence: str) -> list[tuple[str, int, float]]:
    """The word a sentence puts before the class the question asks for ("bcrypt hashing"
    for "which hash", "the worker MPM" for "which MPM"): a name even in lower case."""
    if not focus.class_noun:
        return []
    wanted = stems(focus.class_noun)
    out = []
    words = list(WORD.finditer(sentence))
    for prev, word in itertools.pairwise(words):
        if stems(word.group()) & wanted and not stems(prev.group()) & wanted:
            w = prev.group()
            plain = w.islower() and w.isalpha()
            # a lower-case word there may be any adjective ("reserved GPU capacity",
            # "source code"): only for mechanisms whose members are lower-case names
            # ("bcrypt hashing", "the worker MPM", "gzip compression"), and below a name
            if plain and not wanted & _LOWER_CASE_CLASSES:
                continue
            if w.lower() not in ARTICLE_WORDS and w.lower() not in _NOT_CLASS_MEMBERS:
                out.append((w, prev.start(), -0.3 if plain else 0.0))
        if stems(prev.group()) & wanted and _IDENTIFIER.fullmatch(word.group().rstrip(".")):
            out.append((word.group().rstrip("."), word.start(), 0.2))  # "variable rate-limit"
    if wanted & _SETTING_CLASSES:  # "switch ui.rtp_player_use_disk1 to TRUE": a setting
        out += [(m.group(), m.start(), 0.2)  # is named by its identifier
                for m in _SETTING_NAME.finditer(sentence)]
    if focus.class_noun.lower().rstrip("s") in CALLED:  # "std.querysort(req.url)": by name
        out += [(m.group(1), m.start(1), 0.3) for m in CALL.finditer(sentence)]
    return out


_CAPITAL_WORD = re.compile(r"(?<![\w.-])[A-Z][A-Za-z0-9]+(?![\w-])")
# words that come before a class word without naming a member ("the default hash")
_NOT_CLASS_MEMBERS = frozenset("default same other new old this that which each every any "
                               "some no its their your our my his her first last one".split())
_IDENTIFIER = re.compile(r"[a-z][a-z0-9]*(?:[-_.][a-z0-9]+)+|[A-Z][A-Z0-9]*_[A-Z0-9_]+")
# the classes whose members are named by an identifier ("gui.prepend_window_title")
_SETTING_CLASSES = frozenset(content_tokens(
    "setting parameter preference variable directive property tunable"))
# an identifier standing alone: no part of a path or a file name ("epan/frob_x/a.txt")
_SETTING_NAME = re.compile(rf"(?<![\w./\\-])(?:{_IDENTIFIER.pattern})(?![\w/\\-]|\.\w)")
_LOWER_CASE_CLASSES = frozenset(content_tokens(
    "hash hashing algorithm cipher format encoding protocol mpm strategy backend engine "
    "filter handler module plugin driver scheduler shell editor compression codec tokenizer "
    "allocator collation"))
COMMON_SHARE = 0.5  # a name in at least this share of the cited documents is their subject


def common_names(texts_by_document: dict[str, list[str]]) -> frozenset[str]:
    """The capitalised words (lower case) that at least half of the cited documents use,
    three or more of them: the product or project the whole folder is about ("Apache",
    "SQLite"), which is what every page names, not what a question asks for."""
    if len(texts_by_document) < 3:
        return frozenset()
    counts: dict[str, int] = {}
    for texts in texts_by_document.values():
        for w in {m.group().lower() for t in texts for m in _CAPITAL_WORD.finditer(t)}:
            counts[w] = counts.get(w, 0) + 1
    need = max(3, COMMON_SHARE * len(texts_by_document))
    return frozenset(w for w, n in counts.items() if n >= need)


def cited_common_names(citations: Iterable[Citation]) -> frozenset[str]:
    """:func:`common_names` of the cited chunks, grouped by document."""
    by_doc: dict[str, list[str]] = {}
    for c in citations:
        by_doc.setdefault(f"{c.kb}/{c.path}", []).append(c.text)
    return common_names(by_doc)


_GLOSS_AFTER = re.compile(r"\s*\([^()]{1,40}\)")  # "POD (Plain Old Documentation)"


def class_near(focus: Focus, sentence: str, start: int, end: int) -> bool:
    """Is the class the question asks for ("which hash") within two words of the span
    ("MD5 hashing", "the hash MD5", past a gloss: "POD (Plain Old Documentation)
    format")?"""
    if not focus.class_noun:
        return False
    wanted = stems(focus.class_noun)
    # "which markup format": the class is "markup", its generic head counts too
    head = re.search(rf"\b{re.escape(focus.class_noun)}\s+(\w+)", focus.question, re.I)
    if head and head.group(1).lower().rstrip("s") in GENERIC_HEADS:
        wanted |= stems(head.group(1))
    before = sentence[max(0, start - 30):start].split()[-2:]
    gloss = _GLOSS_AFTER.match(sentence, end)
    after = sentence[gloss.end() if gloss else end:][:30].split()[:2]
    inside = sentence[start:end].split()[1:]  # "NVIDIA L40S GPUs" before its trim
    return any(stems(w) & wanted for w in before + after + inside)


# a condition of the question with a version or a year: "before Postfix 2.4", "since
# 2019", "in Postfix 3.6" (not "in 2026": a period the whole question is about)
_CONDITION = re.compile(r"\b(?P<rel>before|after|since|prior to|until|as of|starting with|"
                        r"in|with|from)\s+(?:[A-Za-z][\w.-]*\s+){0,2}(?P<v>v?\d+(?:\.\d+)*)\b",
                        re.I)
# the words each relation of a condition is written with: the question's "before 2.4" is
# the manual's "prior to Postfix 2.4" (the same relation, the same release)
_RELATIONS = {"before": "before|prior to|until|earlier than|up to",
              "since": "since|after|as of|starting with|from|beginning with|later than",
              "in": "in|with"}
_RELATION_OF = {w: k for k, ws in _RELATIONS.items() for w in ws.split("|")}
# what may stand between a condition and the value it qualifies: "prior to Postfix 2.4
# the default value was 1000s", "as of 2.11, the limit is 100 days"
_LINK = re.compile(r"[,:]?\s*(?:the\s+)?(?:default(?:\s+value)?|value|limit)\s+"
                   r"(?:was|is|became|becomes|changed to)\b|:", re.I)


def qualified(question: str, sentence: str) -> list[int]:
    """Where in ``sentence`` the question's conditions ("before Postfix 2.4") end: the
    value right after one is the value under that condition ("(default: 300s; before
    Postfix 2.4: 1000s)", "prior to Postfix 2.4 the default value was 1000s"). A
    condition counts in any wording of its relation with the same release; a bare "in",
    "with" or "from" only with a dotted release ("in Postfix 3.6", not "in 2026")."""
    ends = []
    for m in _CONDITION.finditer(question):
        rel, version = " ".join(m.group("rel").lower().split()), m.group("v")
        if rel in ("in", "with", "from") and "." not in version:
            continue
        words = _RELATIONS[_RELATION_OF[rel]]
        for c in re.finditer(rf"\b(?:{words})\s+(?:[A-Za-z][\w.-]*\s+){{0,2}}"
                             rf"{re.escape(version)}(?![\w.]*\d)", sentence, re.I):
            link = _LINK.match(sentence, c.end())
            ends.append(link.end() if link else c.end())
    return ends


_DIRECTORIES = frozenset("directory directories folder folders dir".split())
_OPTIONS = frozenset("option options flag flags switch switches".split())


def path_kind(focus: Focus, span: str) -> bool:
    """Can ``span`` be the kind of path asked for, by the class the question names? A
    directory (folder) has a slash, an option a leading dash; a file anything path-like
    ("in which file are the startup options": a file, whatever "options" it holds)."""
    asked = focus.class_noun.lower()
    if asked in _DIRECTORIES:
        return "/" in span or "\\" in span
    if asked in _OPTIONS:
        return span.startswith("-")
    return True


# a sentence that defines its subject: "Animorphs is a science fantasy series ...",
# "Tromeo and Juliet (1996) is an independent film ..."
_DEFINED = re.compile(r"^(?P<s>(?:The\s+)?[A-Z][\w'&.!-]*(?:\s+(?:of|and|the|de|&|in|on)?\s*"
                      r"[A-Z0-9][\w'&.!-]*){0,5})(?:\s*\([^()]{0,60}\))?,?\s+(?:is|was|are|"
                      r"were)\s+(?:also\s+)?(?:a|an|the|one)\b")
SUBJECT_SHARED = 2  # question words the definition must share to name what is asked


def defined_subject(focus: Focus, sentence: str) -> list[tuple[str, int, float]]:
    """The subject a sentence defines, when the definition has the question's words
    ("What science fantasy young adult series ...?": "Animorphs is a science fantasy
    series of young adult books"): a name that the rule for capitalised words skips as
    the sentence's first word."""
    m = _DEFINED.match(sentence)
    if m is None or m.group("s").split()[0] in _NO_SUBJECTS:
        return []
    rest = {s for w in WORD.finditer(sentence[m.end():]) for s in stems(w.group())}
    if len(rest & focus.terms) < SUBJECT_SHARED:
        return []
    # a subject mostly in the question's words is the question's own subject ("The 2012
    # Independent Spirit Awards" for "who hosted the 18th Independent Spirit Awards")
    words = [stems(w) for w in m.group("s").split() if content_tokens(w)]
    if sum(1 for w in words if w & focus.terms) * 2 > len(words):
        return []
    return [(m.group("s"), 0, 0.6)]


# a sentence's first word that is no name ("There is a single row ...")
# (nor a manual's label: "Hint: When using Docker images ...")
_NO_SUBJECTS = frozenset("There It This That These Those Here He She They We One Each Every "
                         "All Some Such Both Either Neither See Note Notes Hint Tip Warning "
                         "Caution Important Attention Example Examples".split())


# "in Postfix 3.7": a capitalised name and a release number after it
_RELEASE = re.compile(r"\b([A-Z][A-Za-z]+) v?(\d+(?:\.\d+)+)\b")
_ABOUT_RELEASE = re.compile(r"\b(?:chang|new|added|fixed|removed|introduced|deprecated|"
                            r"release notes)", re.I)


def own_release(focus: Focus, citations: Iterable[Citation]) -> set[str]:
    """The numbers of the release of the folder's own subject that the question names
    ("in Postfix 3.7" where the cited pages are about Postfix): the user's installed
    version, which a program's manual seldom repeats, not a thing to be found; none when
    the question is about the release ("what changed in Postfix 3.7", "since which
    release")."""
    if focus.answer_type is AnswerType.VERSION or _ABOUT_RELEASE.search(focus.question):
        return set()
    subject = cited_common_names(citations)
    return {x for m in _RELEASE.finditer(focus.question) if m.group(1) in focus.named
            and m.group(1).lower() in subject for x in numbers_in(m.group(2))}


def number_span(text: str, focus: Focus) -> str:
    """A number with its unit; a following word that is not a unit (of the kind asked
    for, or the question's) is dropped: "10 by" -> "10"."""
    m = re.match(r"((?:[$€£]\s?)?\d[\d,]*(?:\.\d+)?)(\s?)(.*)$", text)
    if not m:
        return text
    number, gap, rest = m.groups()
    scale = re.match(r"(million|billion|trillion|thousand|hundred)\b\s*", rest, re.I)
    if scale:  # "250 million copies": the magnitude is part of the number
        number, gap, rest = f"{number}{gap}{scale.group(1)}", " ", rest[scale.end():]
    if not rest:
        return number
    if rest.startswith("%") or rest.lower() == "percent" or MEASURE_UNIT.fullmatch(rest):
        return f"{number}{gap}{rest}"  # as the source spells it: "60s", "2GB", "5 minutes"
    if not gap and re.fullmatch(r"[A-Za-z]{1,3}", rest):
        return f"{number}{rest}"  # a unit written onto its number: "70em", "10pt", "450px"
    first = rest.split()[0].lower()
    if first in ARTICLE_WORDS or not first.isalpha():
        return number
    unit = focus.unit.rstrip("s").lower()
    if unit and first.startswith(unit):
        return f"{number} {rest}"
    # a counted noun ("500 terms", "20 days a year"): keep it when the question has it
    if content_tokens(first) & focus.terms:
        return f"{number} {rest}"
    return f"{number} {first}" if first.endswith("s") and len(first) > 3 else number
