"""What a question asks for: its *focus* and the *kind of answer* it wants.

The evidence ranking (:mod:`~kbagent.agent.answer.evidence`), the abstention check
(:mod:`~kbagent.agent.harness.grounding`) and the short answer
(:mod:`~kbagent.agent.harness.short`) read a question through one :class:`Focus`:

* ``terms``: the question's content words (stemmed), without the words that only say
  what kind of answer is wanted ("what", "how many", "tell me");
* ``named``: the things the question names, verbatim: code terms (``lru_cache``,
  ``SQLITE_MAX_ATTACHED``, ``maxsize=``), quoted terms and capitalised names that are
  not the first word ("Kestrel Gateway");
* ``focus``: the stems of what is asked about: the named things, the attribute asked
  for ("default", "maximum", "timeout") and the unit of the answer ("days");
* ``answer_type``: a number, a duration, a date, a name, an error or exception name, a
  path, yes/no, a default value, a version, a price, a percentage, a choice between
  named options, or ``other`` (an explanation: no short answer);
* ``unit``: the unit of a counted answer ("days"); ``options``: a choice's ("A or B?").

Nothing here is tuned to a document set: the rules are about English questions.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from functools import lru_cache

from kbagent.agent.answer.citations import content_tokens
from kbagent.agent.answer.kind_rules import EXPLAIN, KIND_RULES
from kbagent.agent.answer.kind_rules import MEASURE_UNIT as MEASURE_UNIT  # re-exported
from kbagent.agent.answer.kind_rules import SIZE_UNITS as SIZE_UNITS  # re-exported
from kbagent.agent.answer.kind_rules import TIME_UNITS as TIME_UNITS  # re-exported
from kbagent.agent.answer.kind_rules import AnswerType as AnswerType  # re-exported
from kbagent.agent.answer.named import named_things
from kbagent.agent.answer.phrasing import (
    AUX,
    CALLED,
    DEFAULT_INTENT,
    ENDS_WHEN,
    HOW_MUCH_MEMORY,
    LENGTH,
    NEGATED,
    PROTOCOL_CODE,
    REPLY_CODE,
    WH_WORD,
    asks_class,
    class_word,
    is_there_class,
    names_a_thing,
)

# Words that say what kind of answer is wanted, not what it is about.
QUESTION_WORDS = frozenset(content_tokens(
    "what which who whom whose when where why how many much does do did is are was were "
    "tell me give list show find explain describe please kbagent knowledge base documents "
    # how precise the answer may be, not what it is about ("Roughly how many ...")
    "exactly roughly approximately approx nearly"))

MONTH = (r"(?:January|February|March|April|May|June|July|August|September|October|November|"
          r"December|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept?|Oct|Nov|Dec)\.?")

# a call ("std.querysort(req.url)"): names a member of a class phrasing.CALLED lists
CALL = re.compile(r"(?<![\w.])((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*)\(")
PARAM_VALUE = r"\s+\((?:default:\s*)?(?P<v>[^()\s][^()]{0,40})\)"  # after a name: " (2048)"
# what a unit of each kind looks like in a source sentence
TYPE_PATTERNS: dict[AnswerType, re.Pattern[str]] = {
    # not the section of a manual page ("postscreen(8)")
    AnswerType.NUMBER: re.compile(r"(?<![\w.])(?<!\w\()\d[\d,]*(?:\.\d+)*(?![\w.]\d)|"
                                  r"\b(?:two|three|four|five|six|seven|eight|nine|ten|twelve|twenty|hundred|"
                                  r"thousand|million|billion)\b(?!\s+(?:or|of)\b)|"
                                  # "one" as a count ("only one worker"), not the pronoun
                                  # or determiner ("One way to ...", "the one that")
                                  r"(?<!\bthe )(?<!\bany )(?<!\beach )(?<!\bno )(?<!\bthis )"
                                  r"(?<!\bthat )\bone\b(?!\s+(?:or|of|way|another|can|could|"
                                  r"may|might|must|should|would|will|who|that|which|is|has|does|"
                                  r"such)\b)", re.I),
    AnswerType.DURATION: re.compile(rf"\d[\d,.]*\s*{TIME_UNITS}\b|\b(?:an? |one |half an? )"
                                    r"(?:second|minute|hour|day|week|month|year)\b", re.I),
    AnswerType.DATE: re.compile(rf"\b{MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}\b|"
                                rf"\b\d{{1,2}}\s+{MONTH}\s+\d{{4}}\b|\b{MONTH}\s+\d{{4}}\b|"
                                r"\b\d{4}-\d\d-\d\d\b|\b(?:1[5-9]|20)\d\d\b"),
    AnswerType.PRICE: re.compile(r"[$€£]\s?\d[\d,]*(?:\.\d+)?(?:\s?(?:[kKmMbB]|million|"
                                 r"billion))?|\b\d[\d,]*(?:\.\d+)?\s?(?:USD|EUR|GBP|dollars|"
                                 r"euros?|pounds)\b"),
    AnswerType.PERCENT: re.compile(r"\d[\d,]*(?:\.\d+)?\s?(?:%|percent\b|per cent\b)", re.I),
    # a pre-release or maintenance letter belongs to the release ("1.3.3rc2", "1.3.2a")
    AnswerType.VERSION: re.compile(r"(?<![\w.])[vV]?\d+(?:\.\d+)+(?:(?:rc|alpha|beta|pre|a|b)"
                                   r"\d*(?![A-Za-z]))?(?![\w.]?\d)|"
                                   r"\bversion\s+(?=[\w.]*\d)", re.I),
    AnswerType.ERROR: re.compile(r"\b[A-Z][A-Za-z0-9]*(?:Error|Exception|Warning|Exit)\b|"
                                 r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]{2,}\b|\b(?:4\d\d|5\d\d)\b|"
                                 # a protocol's code below 400 said as one: "the status of
                                 # 107", "if you get 201" (not "100 requests", "300 seconds")
                                 r"(?<=status of )[1-3]\d\d\b|(?<=status )[1-3]\d\d\b|"
                                 r"(?<=code )[1-3]\d\d\b|(?<=get )[1-3]\d\d\b|"
                                 r"(?<=returns )[1-3]\d\d\b|(?<=reply )[1-3]\d\d\b|"
                                 r"\bE[A-Z]{3,}\b|\b[A-Z]{1,5}-?\d{3,6}\b|"  # AH00124
                                 # POSIX signals, with or without their SIG prefix
                                 r"\b(?:SIG)?(?:HUP|INT|QUIT|KILL|TERM|USR1|USR2|WINCH|ALRM|"
                                 r"CHLD|PIPE|STOP|TSTP|CONT)\b"),
    AnswerType.PATH: re.compile(r"(?:(?<=\s)|^|(?<=[\"'`(]))(?:~|\.{1,2})?/[\w.@+-]+"
                                r"(?:/[\w.@+-]*)*|"
                                # a relative path: "logs/error_log" (not "and/or", "KiB/s")
                                r"(?<![\w/])(?!and/|or/)[a-z_][\w.-]*(?:/[\w.@+-]{2,})+|"
                                # a file name, also at a sentence's end ("Default: x.log.")
                                r"\b(?!e\.g\b|i\.e\b)[\w-]+\.(?:[a-z]{1,5})\b"
                                r"(?=[\s,;:)\"'`]|\.(?:\s|$)|$)|"
                                # a file name pattern: "test*.txt", "*.rst", "test_?.py"
                                r"(?<![\w*?])[\w-]*[*?][\w*?-]*\.[a-z*]{1,5}"
                                r"(?=[\s,;:)\"'`]|\.(?:\s|$)|$)|"
                                r"(?:(?<=\s)|^)-[\w-]+\b|\b[A-Z]:\\[\w\\.-]+"),
    # a manual page's "line_length_limit (2048)": a parameter with its default
    AnswerType.DEFAULT: re.compile(r"\bdefaults?\b|\bby default\b|\w ?= ?[\w\"'.-]|\bunless\b|"
                                   rf"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+{PARAM_VALUE}|"
                                   r"\bif (?:not |omitted|unspecified|absent|no )", re.I),
    AnswerType.NAME: re.compile(r"(?<![\w.])[A-Z][\w'&.-]*(?:\s+(?:of |the |de |von |van )?"
                                r"[A-Z][\w'&.-]*)*|`[^`]+`|(?<![\w.-])[a-z][a-z0-9]*(?:_[a-z0-9]+)+"
                                r"(?![\w-])|(?<![\w.-])[a-z]+\d+(?![\w.-])|\"[^\"\s][^\"]{0,38}\"|"
                                r"“[^”]{1,40}”|"
                                # a value in single quotes ("Default is 'pydoc'"), not an
                                # apostrophe ("don't", "the users' files")
                                r"(?<![\w'])'[^'\s][^'\n]{0,38}(?<!\s)'(?![\w'])"),
}

_YESNO = re.compile(rf"^\s*(?:{AUX})\b", re.I)
_CHOICE = re.compile(r"(?:^|,|:|\b(?:which|who|what)\b[^?]*?)\s*(?P<a>[^,?]+?)\s+or\s+"
                     r"(?P<b>[^,?]+?)\s*\??\s*$", re.I)
_CHOICE_LEAD = re.compile(r"^\s*(?:which|who|what|whose|is|are|was|were|does|do|did)\b", re.I)


# "..., in bytes?", "how long may a line be, in characters": a count in that unit, even
# where the question's words ("how long") would ask for a duration
_IN_UNIT = re.compile(rf"\b(?:in|as a number of|measured in)\s+(?P<u>{SIZE_UNITS}|characters|"
                      r"chars|lines|words|pages|entries|rows|columns|items|digits)\b", re.I)
_HOW_MUCH = re.compile(r"\bhow (?:many|much|large|big|high|low|far|deep)\b", re.I)
_HOW_MANY_UNIT = re.compile(r"\bhow (?:many|much)\s+(?:more\s+|fewer\s+|less\s+)?"
                            r"((?:[a-zA-Z][a-zA-Z-]+\s+){0,2}[a-zA-Z][a-zA-Z-]+)", re.I)
# what ends the noun a "how many" counts ("how many database files can ...": files)
_UNIT_END = frozenset("can could do does did are is were was will would should shall may "
                      "might must have has had of in on at per for to from by with the a an "
                      "i you we they it he she there that which this more times time larger "
                      "smaller longer shorter bigger higher lower greater older younger "
                      "earlier later".split())
# a clause before the question proper ("By default, is ...", "If I run X, how many ...",
# "When neither A nor B is set, how many ...", "When X creates a file, and a folder to put
# it in, which ..."): it says under what conditions, not what kind of answer is wanted
_CONDITION = (r"(?:by default|out of the box|if|when|whenever|once|with|without|on|in|for|"
              r"after|before|assuming|given|unless|since|until|while|under)\b[^,?]{0,160},\s*")
_LEAD_CLAUSE = re.compile(
    rf"^{_CONDITION}(?:(?:and|or|but)\b[^,?]{{0,160}},\s*|{_CONDITION})*"
    rf"(?=(?:what|which|who|whom|whose|when|where|why|how|{AUX})\b)", re.I)
_ATTRIBUTES = frozenset(content_tokens(
    "default maximum minimum max min limit size length depth timeout interval threshold "
    "capacity version path directory file name error exception code price cost rate "
    "percentage deadline lifetime quota retention"))
@dataclass(frozen=True)
class Focus:
    question: str
    terms: frozenset[str]
    focus: frozenset[str]
    named: tuple[str, ...]
    answer_type: AnswerType
    unit: str = ""  # "days" for "how many days", "" when none is asked for
    options: tuple[str, ...] = ()
    negated: bool = False  # the question itself is negative ("isn't", "not")
    class_noun: str = ""  # the class a name is asked for ("hash" in "Which hash ..."), or ""

    @property
    def wants_fact(self) -> bool:
        """Does the question ask for a fact a few words can state?"""
        return self.answer_type is not AnswerType.OTHER

    def type_match(self, text: str) -> bool:
        """Does ``text`` hold an answer of the kind asked for? (Always True for yes/no
        and explanations: every sentence may answer those.)"""
        t = self.answer_type
        if t is AnswerType.CHOICE:
            low = text.lower()
            return any(o.lower() in low for o in self.options)
        pattern = TYPE_PATTERNS.get(t)
        if pattern is None:
            return True
        if t is AnswerType.NAME:
            if self.class_noun.lower().rstrip("s") in CALLED and CALL.search(text):
                return True  # "std.querysort(req.url)" for "which function"
            return any(not in_question(m.group(), self.question) and m.start() > 0
                       for m in pattern.finditer(text))
        if t is AnswerType.NUMBER and self.unit:  # "how much memory": a size, not a count
            unit = re.escape(self.unit.rstrip("s"))
            return re.search(rf"\d[\d,.]*\s*{unit}", text, re.I) is not None or bool(
                (_SIZE if HOW_MUCH_MEMORY.search(self.question) else pattern).search(text))
        if t is AnswerType.ERROR and PROTOCOL_CODE.search(self.question):
            # "Which SMTP error code ...": a reply code (552), not a command ("EHLO") nor
            # an errno name
            return REPLY_CODE.search(text) is not None
        return pattern.search(text) is not None


def exact(name: str) -> re.Pattern[str]:
    """``name`` as a whole (or its plural): "line_length_limit" is not in
    "smtp_line_length_limit" (a longer identifier that contains it names another
    thing), nor "TLS" in "TLSv1"."""
    # ASCII word characters: a CJK name has no spaces around it ("数据库的默认端口")
    lead = r"(?<![A-Za-z0-9_-])" if re.match(r"[A-Za-z0-9_]", name) else ""
    tail = r"(?:e?s)?(?![A-Za-z0-9_])" if re.search(r"[A-Za-z0-9_]$", name) else ""
    return re.compile(f"{lead}{re.escape(name)}{tail}")


def in_question(span: str, question: str) -> bool:
    """Does the question itself hold ``span``? (A number only as a whole number: the
    "20" of an answer is not in "2026".) An answer is never what the question says."""
    low = span.lower().strip().strip("`")
    q = question.lower()
    if not low:
        return True
    if re.fullmatch(r"[\d,.]+", low):
        return re.search(rf"(?<![\d.]){re.escape(low)}(?![\d]|\.\d)", q) is not None
    return low in q


# "... sets both NO_COLOR and FORCE_COLOR. Which of the two wins?": a choice between the
# two things the question names together
_OF_THE_TWO = re.compile(r"\bwhich (?:one )?of (?:the|these|those) (?:two|both)\b|"
                         r"\bwhich of (?:them|both|the pair)\b", re.I)


def _options(question: str) -> tuple[str, ...]:
    if _OF_THE_TWO.search(question):
        named = named_things(question)
        pairs = [(a, b) for a, b in itertools.pairwise(named) if re.search(
            rf"{re.escape(a)}\s+(?:and|or|vs\.?|versus)\s+{re.escape(b)}", question)]
        if pairs:
            return pairs[0]
    if " or " not in question or not _CHOICE_LEAD.search(question):
        return ()
    m = _CHOICE.search(question.strip())
    if m is None:
        return ()
    a, b = m.group("a").strip(" ,:"), m.group("b").strip(" ,:?")
    # "Which is older, the Eiffel Tower or Big Ben?": the options follow the comma
    if "," in question:
        tail = question.rsplit(",", 1)[1] if question.count(",") == 1 else ""
        if tail and " or " in tail:
            a, b = (x.strip(" ,:?") for x in tail.split(" or ", 1))
    a = re.sub(r"^(?:the|a|an)\s+", "", a, flags=re.I)
    b = re.sub(r"^(?:the|a|an)\s+", "", b, flags=re.I)
    words = a.split()
    if not words or not b or len(words) > 8 or len(b.split()) > 8:
        return ()
    return (a, b)


# kinds a question for a member of a class ("which option", "what variable") is not,
# whatever words follow it ("... sets the speed", "... limits the size")
_CLASS_YIELDS = frozenset({AnswerType.NUMBER, AnswerType.DURATION, AnswerType.PRICE,
                           AnswerType.PERCENT, AnswerType.DATE, AnswerType.OTHER,
                           AnswerType.DEFAULT})


# "Which requests are cached by default?": which kind of a plural common noun, answered
# by a description ("requests with temperature 0"), not a name (but "Which options ..."
# asks for option names: asks_class)
_WHICH_KIND = re.compile(r"^\s*which\s+[a-z][a-z-]+[^s\W]s\s+(?:are|were|is|get|gets|can|"
                         r"will|do|does)\b", re.IGNORECASE)


def _kind(q: str) -> AnswerType:
    """The kind of answer a question (without its leading clause) asks for."""
    if is_there_class(q):
        return AnswerType.NAME  # "Is there a function that ...?": which one
    if _YESNO.match(q):
        return AnswerType.YESNO
    if LENGTH.search(q):
        return AnswerType.NUMBER
    kind = next((t for p, t in KIND_RULES if p.search(q)), AnswerType.OTHER)
    if kind in _CLASS_YIELDS and asks_class(q):
        return AnswerType.NAME  # "Which environment variable sets the speed ...": a name
    if kind is AnswerType.DEFAULT and _HOW_MUCH.search(q):
        kind = AnswerType.NUMBER  # "how many ... out of the box": a count (its default)
    if kind is AnswerType.OTHER and (((re.match(r"^\s*which\b", q, re.I)
                                      and not _WHICH_KIND.match(q)) or asks_class(q)) or (
            names_a_thing(q) and not EXPLAIN.search(q))):
        kind = AnswerType.NAME  # "Which team owns billing?", "What race track hosts ...?"
    if kind is AnswerType.OTHER and ENDS_WHEN.search(q):
        kind = AnswerType.DATE  # "... a civil war that ended when?"
    return kind


# "how many of the most recent health checks": the counted noun follows its determiner
_HOW_MANY_OF = re.compile(r"\bhow many\s+of\s+(?:the|these|those|its|their|my|our|your)\s+"
                          r"((?:[a-zA-Z][a-zA-Z-]+\s+){0,3}[a-zA-Z][a-zA-Z-]+)", re.I)


def _unit(q: str) -> str:
    """The noun a "how many" question counts ("days"; "files" in "how many database
    files can ...", "days" in "how many paid days off", "checks" in "how many of the
    most recent health checks"), "" when none."""
    m = _HOW_MANY_OF.search(q) or _HOW_MANY_UNIT.search(q)
    if m is None:
        return ""
    words: list[str] = []
    for w in m.group(1).lower().split():
        if w in _UNIT_END:
            break
        words.append(w)
    plural = [w for w in words if w.endswith("s") and not w.endswith("ss")]
    return (plural or words or [""])[-1]  # "how many paid days off": days


_SIZE = re.compile(rf"\d[\d,.]*\s*(?:{SIZE_UNITS}|[kKmMgGtT])\b")  # "1k", "512 bytes"
_HOW_ANY = re.compile(r"\b(how)\s+(?:any|mnay|amny|manny)(?=\s+[a-z])", re.IGNORECASE)


# where a question's sentences part, before a capital: not after an abbreviation's or an
# initial's "." ("Ken St. Andre", "the U.S. Department", "e.g. Sphinx", "Rostker v. Goldberg")
_SENTENCE_END = re.compile(r"(?<=[.!?])(?<!\b[A-Za-z]\.)(?<!\b[A-Z][a-z]\.)\s+(?=[A-Z])")


def asking_sentence(q: str) -> str:
    """The sentence of ``q`` that asks (its last ending in "?" with a question word, else
    its last ending in "?"): "Something odd is going on with my filters. Which template
    shows ...?" asks for a name; "What is the biggest message? I mean the built-in
    limit." for a number; "Are small lines sent as they are? How big may they be?" for a
    size; "What is the default port? Is it 25?" for the default."""
    sentences = _SENTENCE_END.split(q.strip())
    asking = [x for x in sentences if x.rstrip().endswith("?")]
    worded = [x for x in asking if WH_WORD.search(x)]
    return (worded or asking)[-1] if len(sentences) > 1 and asking else q


@lru_cache(maxsize=256)
def focus_of(question: str) -> Focus:
    """The focus and answer type of ``question`` (cached: every room asks)."""
    # a typo that drops the m of "how many" ("operated how any hypermarkets") asks the same
    q = _HOW_ANY.sub(r"\1 many", " ".join(question.split()))
    terms = frozenset(content_tokens(q) - QUESTION_WORDS)
    if intent := DEFAULT_INTENT.search(q):  # what a thing does unless told otherwise
        # its words say "the default" ("tell", "otherwise"), not what is asked about
        terms = (terms - content_tokens(intent.group())) | content_tokens("default")
    named = named_things(q)
    options = _options(q)
    if options:
        kind = AnswerType.CHOICE
    else:
        kind = _kind(_LEAD_CLAUSE.sub("", asking_sentence(q)))
    unit = "bytes" if HOW_MUCH_MEMORY.search(q) else _unit(q)
    told = _IN_UNIT.search(q)
    if told and kind in (AnswerType.DURATION, AnswerType.NUMBER, AnswerType.DEFAULT,
                         AnswerType.OTHER):
        kind, unit = AnswerType.NUMBER, unit or told.group("u").lower()
    focus = set()
    for name in named:
        focus |= content_tokens(name.replace("_", " ")) | content_tokens(name)
    focus |= terms & _ATTRIBUTES
    if unit:
        focus |= content_tokens(unit)
    negated = NEGATED.search(q) is not None
    return Focus(q, terms, frozenset(focus & (terms | content_tokens(" ".join(named)))),
                 named, kind, unit, options, negated, class_word(q))
