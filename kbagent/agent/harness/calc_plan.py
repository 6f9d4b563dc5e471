"""The arithmetic a question asks for (:func:`calc_plan_of`) and its operands.

Recognised, over operands that are any two noun phrases (not only periods or names):

* a change between periods: "by what percentage ... from Q2 to Q3" (``pct_change``),
  "by how many percentage points" (``pp_change``); a total of the first N quarters;
* "X than Y": "how many more days of PTO does a manager get than an intern",
  "how much longer is the retry cap than the connect timeout", "how much higher was
  Q3 revenue than Q2's" (``difference``), "how many times larger ... than ..."
  (``ratio``), and the yes/no "is the free tier's limit bigger than the team
  plan's?" (``compare``, only about a quantity: "is a tag larger than a branch?" is no
  calculation); "the difference in price between A and B";
* "the ratio of A to B" (``ratio``), "what share/fraction/percentage of B is A" and
  "A as a percentage of B" (``share``);
* a unit asked for ("in seconds", "how many bytes", "pages per second":
  ``convert`` of one figure, and the unit of any other plan's result).

An operand is an *item* (whose value: "Q2 2026", "manager", "retry cap") and a
*metric* (what is measured: "revenue", "days PTO"; empty when the item is itself the
quantity, as "retry cap" is).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kbagent.agent.answer.citations import content_tokens
from kbagent.agent.answer.evidence import QUESTION_WORDS
from kbagent.agent.harness.quantities import MEASURES, SPAN_SUBJECT, Target, asked_unit

# An item that can be compared: a period (Q2, H1, FY2026, 2025, Q3 2026), or a short
# capitalised name (Business, Team).
ITEM = r"(?:(?:Q[1-4]|H[12]|FY)\s?(?:20\d\d)?|20\d\d|[A-Z][\w-]*(?:\s[A-Z][\w-]*)?)"
_PERIOD = re.compile(r"(?:Q[1-4]|H[12]|FY)\s?(?:20\d\d)?|20\d\d")


@dataclass
class Operand:
    item: str  # the period or thing whose value is needed ("Q2 2026", "retry cap")
    metric: str  # what is measured ("revenue", "gross margin"; "" : the item itself)

    @property
    def literal(self) -> bool:
        """A figure the question itself gives ("longer than 10 seconds")."""
        return bool(LITERAL.match(self.item))


LITERAL = re.compile(r"^[$€£]?\d[\d,]*(?:\.\d+)?(?:\s?[%A-Za-z]+)?$")


@dataclass
class CalcPlan:
    op: str  # pct_change | pp_change | difference | sum | ratio | share | compare | convert
    operands: list[Operand]
    metric: str
    unit: Target | None = None  # the unit the question asks the result in
    wording: str = ""  # the comparative asked ("longer", "more"), or "to" for "ratio of A to B"


_PCT_CHANGE = re.compile(r"\b(?:by what percentage|what percentage|percent(?:age)? (?:change|"
                         r"growth|increase|decrease)|growth rate|(?:quarter|year|month)-over-"
                         r"(?:quarter|year|month)\s+\w+\s+growth|growth)\b", re.IGNORECASE)
_PP = re.compile(r"\bpercentage points?\b|\bpoints?\b", re.IGNORECASE)
_SUM = re.compile(r"\b(?:total|combined|sum|altogether|in all)\b", re.IGNORECASE)
_FROM_TO = re.compile(rf"\bfrom (?:the end of )?(?P<a>{ITEM}) to (?:the end of )?(?P<b>{ITEM})")
_FIRST_N = re.compile(r"\bfirst (?P<n>two|three|four|2|3|4) quarters(?: of (?P<y>20\d\d))?",
                      re.IGNORECASE)
_CMP = (r"more expensive|less expensive|more|less|fewer|higher|lower|bigger|larger|smaller|"
        r"greater|longer|shorter|faster|slower|cheaper|older|newer|heavier|lighter|later|"
        r"earlier|wider|narrower|deeper")
_UNIT_WORD = "(?:" + "|".join(re.escape(a) for a in MEASURES if len(a) > 2) + ")"
_AUX = r"(?:is|are|was|were|does|do|did|will|would|can|could|has|have|had)"
_HOW_THAN = re.compile(rf"\bhow (?:much|many)\s+(?:{_UNIT_WORD}\s+)?(?P<times>times\s+)?"
                       rf"(?P<cmp>{_CMP})\b"
                       rf"(?P<pre>.*?)\b(?P<aux>{_AUX})\s+(?P<a>.+?)\s+than\s+(?P<b>.+?)"
                       r"[\s?.!]*$", re.IGNORECASE)
_YES_NO = re.compile(rf"^\s*(?P<aux>{_AUX})\s+(?P<a>.+?)\s+(?P<cmp>{_CMP})\b(?P<pre>.*?)"
                     r"\s*\bthan\s+(?P<b>.+?)[\s?.!]*$", re.IGNORECASE)
_DIFF_BETWEEN = re.compile(r"\bdifference\s+(?:in\s+(?P<pre>.+?)\s+)?between\s+(?P<a>.+?)\s+"
                           r"and\s+(?P<b>.+?)[\s?.!]*$", re.IGNORECASE)
_RATIO = re.compile(r"\bratio\s+(?:of|between)\s+(?P<a>.+?)\s+(?:to|and)\s+(?P<b>.+?)"
                    r"[\s?.!]*$", re.IGNORECASE)
_SHARE = re.compile(r"\bwhat\s+(?:fraction|share|percentage|percent|proportion|portion)\s+of\s+"
                    rf"(?P<b>.+?)\s+{_AUX}\s+(?P<a>.+?)[\s?.!]*$", re.IGNORECASE)
_AS_SHARE = re.compile(r"\b(?:what\s+is\s+|how\s+large\s+is\s+)?(?P<a>.+?)\s+as\s+an?\s+"
                       r"(?:fraction|share|percentage|percent|proportion)\s+of\s+(?P<b>.+?)"
                       r"[\s?.!]*$", re.IGNORECASE)
_DET = re.compile(r"^(?:the|a|an|our|its|their|your|each|every|one|this|that|that of|"
                  r"those of)\s+", re.IGNORECASE)
_PREP = ("in", "for", "at", "on", "during", "of", "with", "under", "per")
_TAIL_AUX = re.compile(rf"\s+(?:{_AUX}|get|gets|got)$", re.IGNORECASE)
_ASKED_TAIL = re.compile(r",?\s+(?:in|into|as)\s+\S+[\s?.!]*$", re.IGNORECASE)
# verbs a "how many <unit> does X <verb> ..." question measures with
_VERBS = frozenset("hold holds keep keeps take takes wait waits last lasts allow allows accept "
                   "accepts send sends retain retains get gets give gives stay stays remain "
                   "remains".split())  # not "cache", "store", "use": nouns as often
_UNIT_TAIL = re.compile(r"\s*,?\s+(?:in|into|as)\s+\S+$", re.IGNORECASE)
# words that say what is measured: a yes/no comparison or a "difference between" is a
# calculation only about one of these (or a unit), not about "a tag" and "a branch"
QUANTITY_NOUNS = content_tokens(
    "limit cap size timeout delay latency price cost fee charge revenue margin budget count "
    "number rate quota ttl duration interval length capacity memory bandwidth throughput "
    "salary pay stipend allowance max maximum minimum threshold headcount arr amount total "
    "value retention expiry lifetime age weight height width depth distance speed volume "
    "score balance spend income profit loss expenses sales storage disk ram retries "
    "attempts connections requests users seats employees customers pages entries")
_NOT_METRIC = QUESTION_WORDS | content_tokens(
    "percentage percent points point growth grow change changed increase decrease fall fell "
    "rise rose more less fewer higher lower difference total combined sum end quarter "
    "quarters first two three four kestrel kestrel's month per need reach by times bigger "
    "larger smaller greater longer shorter faster slower cheaper expensive older newer "
    "heavier lighter later earlier wider narrower deeper ratio fraction share proportion "
    "portion between get gets got true roughly approximately")


def metric_of(question: str, items: list[str]) -> str:
    """What ``question`` measures: its content words, less the items and the words that
    ask ("how much", "percentage", "longer")."""
    drop = content_tokens(" ".join(items)) | _NOT_METRIC
    words = [w for w in re.findall(r"[A-Za-z][\w-]*", question)
             if content_tokens(w) and not content_tokens(w) <= drop
             and not re.fullmatch(r"[QH][1-4]|FY\d*", w)]
    return " ".join(dict.fromkeys(words))


def _clean(phrase: str) -> str:
    """A noun phrase without its determiner, trailing auxiliary ("than an intern
    does") or possessive."""
    p = _UNIT_TAIL.sub("", phrase.strip(" ?.,!"))
    p = _TAIL_AUX.sub("", p)
    p = _DET.sub("", p.strip())
    return re.sub(r"['’]s?$", "", p).strip()


def _distinct(words: list[str]) -> bool:
    """Does a word shape mark these words as an item (a period, a name, a version)?"""
    return any(re.search(r"\d", w) or w[:1].isupper() for w in words)


def _items(a_raw: str, b_raw: str, aux: str = "") -> tuple[str, str]:
    """The compared items of "A ... than B": "a manager get" / "an intern" ->
    ("manager", "intern"); "Q3 revenue" / "Q2's" -> ("Q3", "Q2"); "revenue in Q3" /
    "in Q2" -> ("Q3", "Q2"); "the free tier's limit" -> "free tier"; a shared head noun
    ("Business tier" / "Team tier") is left to the metric."""
    b_words = b_raw.strip(" ?.,!").split()
    if b_words and b_words[0].lower() in _PREP:
        prep = b_words[0].lower()
        b = _clean(" ".join(b_words[1:]))
        parts = re.split(rf"\s+{prep}\s+", a_raw, flags=re.IGNORECASE)
        a = _clean(parts[-1]) if len(parts) > 1 else _clean(a_raw)
        return a, b
    b = _clean(b_raw)
    possessive = re.search(r"['’]s\b", b_raw) or re.match(r"\s*th(?:at|ose) of\b", b_raw)
    a = re.sub(r"^.*?\b(?:that|whether|if)\s+", "", a_raw.strip(), flags=re.IGNORECASE)
    verb_gone = _TAIL_AUX.search(a) is not None  # "do full-time staff get"
    a = _TAIL_AUX.sub("", a)
    own = re.match(r"(?P<x>.+?)['’]s?\s+\S", a)
    a = _DET.sub("", own.group("x") if own else a).strip()
    a_words, nb = a.split(), len(b.split())
    do_aux = aux.lower() in ("does", "do", "did", "can", "could", "will", "would")
    if do_aux and not own and not verb_gone and len(a_words) > 1:
        a_words = a_words[:-1]  # "does a manager get": the last word is the verb
        a = " ".join(a_words)
    if not own and len(a_words) > nb and (do_aux or possessive or (
            _distinct(a_words[:nb]) and _distinct(b.split()))):
        a = " ".join(a_words[:nb])
    a, b = a.strip(), b.strip()
    aw, bw = a.split(), b.split()
    if len(aw) > 1 and len(bw) > 1 and aw[-1].lower().rstrip("s") == bw[-1].lower().rstrip("s"):
        a, b = " ".join(aw[:-1]), " ".join(bw[:-1])
    return a, b


def _about_quantity(question: str, metric: str, items: list[str]) -> bool:
    words = re.findall(r"[\w%]+", f"{metric} {' '.join(items)}".lower())
    return bool(content_tokens(" ".join(words)) & QUANTITY_NOUNS) or any(
        w in MEASURES and len(w) > 2 for w in words) or asked_unit(question) is not None


def _period(item: str, year: re.Match[str] | None) -> str:
    return f"{item} {year.group()}" if year and re.fullmatch(r"[QH][1-4]", item) else item


# a comparative that asks for the second operand less the first ("how much lower is A
# than B": B - A); "faster" and "slower" depend on whether durations are compared
INVERSE = frozenset("less fewer lower smaller shorter cheaper earlier lighter narrower "
                    "less expensive younger".split()) | {"less expensive"}


_PRICED = frozenset({"cheaper", "more expensive", "less expensive"})


def _two(op: str, a: str, b: str, question: str, year: re.Match[str] | None,
         wording: str = "") -> CalcPlan | None:
    items = [_period(a, year), _period(b, year)]
    if not all(items) or items[0].lower() == items[1].lower():
        return None
    unit = asked_unit(question)
    metric = metric_of(_ASKED_TAIL.sub("", question) if unit else question, items)
    return CalcPlan(op, [_split_period(i, metric) for i in items], metric, unit, wording)


def _split_period(item: str, metric: str) -> Operand:
    """A period inside a noun phrase is the item, the rest what is measured: "Q3 2026
    revenue" -> ("Q3 2026", "revenue"), "FY2026 revenue plan" -> ("FY2026", "revenue
    plan")."""
    m = _PERIOD.search(item)
    if LITERAL.match(item):
        return Operand(item, "")
    if m is None or m.group().strip() == item.strip():
        return Operand(item, metric)
    rest = f"{item[:m.start()]} {item[m.end():]}".split()
    return Operand(m.group().strip(), " ".join(dict.fromkeys(rest + metric.split())))


def calc_plan_of(question: str) -> CalcPlan | None:
    """The arithmetic ``question`` asks for, if recognised."""
    year = re.search(r"\b20\d\d\b", question)
    ft = _FROM_TO.search(question)
    if ft and (_PCT_CHANGE.search(question) or _PP.search(question)):
        items = [_period(ft.group("a"), year), _period(ft.group("b"), year)]
        metric = metric_of(question, items)
        op = "pp_change" if _PP.search(question) else "pct_change"
        return CalcPlan(op, [Operand(i, metric) for i in items], metric)
    how = _HOW_THAN.search(question)
    if how:
        a, b = _items(how.group("a"), how.group("b"), how.group("aux"))
        op = "ratio" if how.group("times") else "difference"
        return _two(op, a, b, question, year, how.group("cmp").lower())
    yes_no = _YES_NO.search(question)
    if yes_no:
        a, b = _items(yes_no.group("a"), yes_no.group("b"), yes_no.group("aux"))
        plan = _two("compare", a, b, question, year, yes_no.group("cmp").lower())
        if plan is not None and plan.wording in _PRICED and not _about_quantity(
                question, plan.metric, [a, b]):  # "is the Growth tier cheaper": its price
            plan.metric = f"{plan.metric} price".strip()
            plan.operands = [o if o.literal else Operand(o.item, plan.metric)
                             for o in plan.operands]
        if plan is not None and _about_quantity(question, plan.metric, [a, b]):
            return plan
        return None
    for pattern, op, wording in ((_RATIO, "ratio", "to"), (_SHARE, "share", ""),
                                 (_AS_SHARE, "share", "")):
        m = pattern.search(question)
        if m:
            a, b = _items(m.group("a"), m.group("b"))
            return _two(op, a, b, question, year, wording)
    diff = _DIFF_BETWEEN.search(question)
    if diff:
        a, b = _items(diff.group("a"), diff.group("b"))
        aw, bw = a.split(), b.split()
        if len(aw) == 1 and len(bw) > 1 and _distinct(aw) and _distinct(bw[:1]):
            b = bw[0]  # "between the Business and Team tiers": the tiers are the metric
        plan = _two("difference", a, b, question, year)
        if plan is not None and _about_quantity(question, plan.metric, [a, b]):
            return plan
        return None
    fn = _FIRST_N.search(question)
    if fn and _SUM.search(question):
        n = {"two": 2, "three": 3, "four": 4}.get(fn.group("n").lower()) or int(fn.group("n"))
        y = fn.group("y") or (year.group() if year else "")
        items = [f"Q{i} {y}".strip() for i in range(1, n + 1)]
        metric = metric_of(question, items)
        return CalcPlan("sum", [Operand(i, metric) for i in items], metric)
    return _convert(question)


_SUBJECT = re.compile(rf"^\s*(?:what\s+is|what's|how\s+(?:long|big|large|much|many\s+\S+"
                      rf"(?:\s+(?:per|a|each|every)\s+\S+)?)\s+(?P<aux>{_AUX}))\s+(?P<s>.+?)"
                      r"[\s?.!]*$", re.IGNORECASE)


def _convert(question: str) -> CalcPlan | None:
    """A unit asked of one figure: "How long is the retry cap in milliseconds?",
    "How many bytes does the page cache hold?", "How many pages per second does the
    flusher write?"."""
    target = asked_unit(question)
    if target is None:
        return None
    m = _SUBJECT.match(question)
    if m is None:
        # "..., what is the largest number of journal messages rsyslog will pass on in
        # one hour ...": a count per a span of time, its subject the words about it
        span = SPAN_SUBJECT.search(question) if target.per is not None else None
        item = _clean(span.group("s")) if span else ""
        return CalcPlan("convert", [Operand(item, "")], "", target) if item else None
    subject = _UNIT_TAIL.sub("", m.group("s").strip(" ?.,!"))
    # "... keep credentials by default": a condition, not the subject's words
    subject = re.sub(r",?\s+(?:by default|out of the box|normally|in total)$", "", subject,
                     flags=re.I)
    words = subject.split()
    if (m.group("aux") or "").lower() in ("does", "do", "did", "can", "will") and len(words) > 1:
        # "does the page cache hold", "does the cache keep credentials": the subject ends
        # at its verb (the last word when none of the usual verbs is there)
        # (the last one: "does the send buffer hold"; never the subject's first word)
        first = 1 if _DET.match(f"{words[0]} ") else 0
        at = max((i for i, w in enumerate(words) if i > first and w.lower() in _VERBS),
                 default=len(words) - 1)
        words = words[:at]
    item = _clean(" ".join(words))
    if not item:
        return None
    return CalcPlan("convert", [Operand(item, "")], "", target)
