"""Questions taken apart by the harness, for models too small to plan.

* :func:`parts_of` splits a multi-part question into parts answered one by one:
  clauses joined by "and how/what/why ..." ("What caused X and how long did it
  last?"), and comparisons of parallel items ("Compare Q2 and Q3 gross margin",
  "from Q1 to Q2", "the Business tier ... than the Team tier"). Each part carries
  a search query that keeps the subject of the question (a later clause's "it").
* :func:`calc_plan_of` recognises the arithmetic a question asks for (percent
  change, percentage points, difference, sum) and what its operands are (a
  metric at two periods, or for two items); :func:`find_operand` reads an
  operand's value from the evidence units ("Q2 2026: $9.80M" in a table row,
  "gross margin of 70.0%" in prose).

Everything here is a heuristic over English questions; when it does not
recognise a question it returns one part and no plan, and the answer is the
model's, checked as always.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from kbagent.agent.answer.citations import content_tokens
from kbagent.agent.answer.evidence import QUESTION_WORDS, Unit

_WH = r"(?:how|what|when|why|who|which|where|is|are|was|were|does|do|did|can|should)"
_CLAUSE_SPLIT = re.compile(rf",?\s+and\s+(?={_WH}\b|explain\b|describe\b)|\?\s+(?=\S)",
                           re.IGNORECASE)
# An item that can be compared: a period (Q2, H1, FY2026, 2025, Q3 2026), or a short
# capitalised name (Business, Team).
_ITEM = r"(?:(?:Q[1-4]|H[12]|FY)\s?(?:20\d\d)?|20\d\d|[A-Z][\w-]*(?:\s[A-Z][\w-]*)?)"
# compared items split a question into parts; "from A to B" (a change) and "A than B" (a
# difference) are one thing to explain or compute, not two parts
_PAIR = re.compile(rf"\b(?:between\s+)?(?:the\s+)?(?P<a>{_ITEM})\s+(?P<noun>[a-z]+\s+)?"
                   rf"(?:and|vs\.?|versus)\s+(?:the\s+)?(?P<b>{_ITEM})\b")
_LEAD_VERB = re.compile(r"^\s*(?:please\s+)?(?:compare|contrast|explain|describe|list)\s+",
                        re.IGNORECASE)


@dataclass
class Part:
    question: str  # the part, as a question of its own
    query: str  # what the harness searches for it
    label: str = ""  # how the answer names it ("Q2", "what caused ...")
    item: str = ""  # a compared item ("Q2"), whose figure can be read like an operand


def _key_terms(text: str) -> str:
    words = [w for w in re.findall(r"[\w$%.-]+", text)
             if content_tokens(w) and not content_tokens(w) <= QUESTION_WORDS]
    return " ".join(words)


_COMPARE = re.compile(r"\b(?:compare|comparison|versus|vs\.?|difference between|differ)\b",
                      re.IGNORECASE)


def _pair(text: str, wording: str = "") -> re.Match[str] | None:
    """Two compared items: periods of one kind (Q2 and Q3, 2024 and 2025) anywhere;
    names (Business and Team) only when the wording compares them, since "Kiss and
    Tell" may be one title and "Were A and B ...?" one yes/no question."""
    names_compared = bool(_COMPARE.search(wording or text))
    for m in _PAIR.finditer(text):
        a, b = m.group("a"), m.group("b")
        same_shape = (re.fullmatch(r"Q[1-4].*", a) and re.fullmatch(r"Q[1-4].*", b)) or (
            re.fullmatch(r"H[12].*", a) and re.fullmatch(r"H[12].*", b)) or (
            re.fullmatch(r"(FY)?\s?20\d\d", a) and re.fullmatch(r"(FY)?\s?20\d\d", b)) or (
            names_compared and a[0].isupper() and b[0].isupper()
            and not re.match(r"[QH]\d", a + b))
        if same_shape and a != b:
            return m
    return None


def parts_of(question: str) -> list[Part]:
    """The parts of ``question`` (one part: not a multi-part question)."""
    clauses = [c.strip(" ?.,") for c in _CLAUSE_SPLIT.split(question) if c.strip(" ?.,")]
    if not clauses:
        return [Part(question, question)]
    subject = _key_terms(_LEAD_VERB.sub("", clauses[0]))
    parts: list[Part] = []
    for i, clause in enumerate(clauses):
        body = _LEAD_VERB.sub("", clause)
        query = body if i == 0 else f"{body} {subject}"
        m = _pair(body, clause)
        if m is not None:
            year = re.search(r"\b20\d\d\b", body)
            for item in (m.group("a"), m.group("b")):
                one = body[: m.start()] + " " + item + " " + (m.group("noun") or "") + \
                    body[m.end():]
                one = " ".join(one.split())
                if year and year.group() not in one:
                    one += f" {year.group()}"
                q = one if i == 0 else f"{one} {subject}"
                parts.append(Part(one + "?", q, label=item, item=item.strip()))
            continue
        parts.append(Part(clause + "?", query, label=clause if i else ""))
    return parts if len(parts) > 1 else [Part(question, question)]


# ------------------------------------------------------------------ arithmetic
@dataclass
class Operand:
    item: str  # the period or thing whose value is needed ("Q2 2026", "Business")
    metric: str  # what is measured ("revenue", "gross margin")


@dataclass
class CalcPlan:
    op: str  # pct_change | pp_change | difference | sum
    operands: list[Operand]
    metric: str


@dataclass
class Value:
    number: float
    text: str  # as written in the source ("$9.80M", "71.4%")
    unit: Unit = field(repr=False)


_PCT_CHANGE = re.compile(r"\b(?:by what percentage|what percentage|percent(?:age)? (?:change|"
                         r"growth|increase|decrease)|growth rate|(?:quarter|year|month)-over-"
                         r"(?:quarter|year|month)\s+\w+\s+growth|growth)\b", re.IGNORECASE)
_PP = re.compile(r"\bpercentage points?\b|\bpoints?\b", re.IGNORECASE)
_MORE = re.compile(r"\bhow (?:much|many) (?:more|less|fewer|higher|lower)\b|\bdifference\b",
                   re.IGNORECASE)
_SUM = re.compile(r"\b(?:total|combined|sum|altogether|in all)\b", re.IGNORECASE)
_FROM_TO = re.compile(rf"\bfrom (?:the end of )?(?P<a>{_ITEM}) to (?:the end of )?(?P<b>{_ITEM})")
_THAN = re.compile(rf"\bthe (?P<a>{_ITEM})\s+(?P<noun>[a-z]+)\b.*?\bthan (?:the )?(?P<b>{_ITEM})")
_FIRST_N = re.compile(r"\bfirst (?P<n>two|three|four|2|3|4) quarters(?: of (?P<y>20\d\d))?",
                      re.IGNORECASE)
_NOT_METRIC = QUESTION_WORDS | content_tokens(
    "percentage percent points point growth grow change changed increase decrease fall fell "
    "rise rose more less fewer higher lower difference total combined sum end quarter "
    "quarters first two three four kestrel kestrel's month per need reach by")


def metric_of(question: str, items: list[str]) -> str:
    drop = content_tokens(" ".join(items)) | _NOT_METRIC
    words = [w for w in re.findall(r"[A-Za-z][\w-]*", question)
             if content_tokens(w) and not content_tokens(w) <= drop
             and not re.fullmatch(r"[QH][1-4]|FY\d*", w)]
    return " ".join(words)


def calc_plan_of(question: str) -> CalcPlan | None:
    """The arithmetic ``question`` asks for, if recognised."""
    year = re.search(r"\b20\d\d\b", question)

    def with_year(item: str) -> str:
        return f"{item} {year.group()}" if year and re.fullmatch(r"[QH][1-4]", item) else item

    ft = _FROM_TO.search(question)
    if ft and (_PCT_CHANGE.search(question) or _PP.search(question)):
        items = [with_year(ft.group("a")), with_year(ft.group("b"))]
        metric = metric_of(question, items)
        op = "pp_change" if _PP.search(question) else "pct_change"
        return CalcPlan(op, [Operand(i, metric) for i in items], metric)
    th = _THAN.search(question)
    if th and _MORE.search(question):
        items = [th.group("a"), th.group("b")]
        metric = metric_of(question, items)
        return CalcPlan("difference", [Operand(i, metric) for i in items], metric)
    fn = _FIRST_N.search(question)
    if fn and _SUM.search(question):
        n = {"two": 2, "three": 3, "four": 4}.get(fn.group("n").lower()) or int(fn.group("n"))
        y = fn.group("y") or (year.group() if year else "")
        items = [f"Q{i} {y}".strip() for i in range(1, n + 1)]
        metric = metric_of(question, items)
        return CalcPlan("sum", [Operand(i, metric) for i in items], metric)
    return None


_LABELLED = re.compile(r"(?P<label>[A-Za-z][\w ()/&'.-]{0,40}?)\s*:\s*(?P<val>\(?[-−+]?[$€£]?"
                       r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\(?[-−+]?[$€£]?\d+(?:\.\d+)?)"
                       r"(?P<suffix>\s?(?:[%MKB]|pts?)?\)?)(?![\w.])")
_NUMBER_AFTER = re.compile(r"(?<![\w.])[-−+]?[$€£]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?"
                           r"(?:\s?[%MKB](?![\w]))?(?![\w.,]\d)")
_CELL_PAIR = re.compile(r"(?:^|;\s*)(?P<label>[^:;]{1,60}):\s*(?P<value>[^;]+)")
SYNONYMS = {"cost": {"price", "fee"}, "price": {"cost", "fee"}, "fee": {"cost", "price"},
            "revenu": {"sale"}, "sale": {"revenu"}}


def parse_value(text: str) -> float | None:
    m = re.search(r"\d[\d,]*(?:\.\d+)?", text)
    if not m:
        return None
    value = float(m.group().replace(",", ""))
    return -value if re.match(r"\s*[(−-]", text) else value


def _tokens(text: str) -> set[str]:
    return content_tokens(text)


def _with_synonyms(tokens: set[str]) -> set[str]:
    out = set(tokens)
    for t in tokens:
        out |= SYNONYMS.get(t, set())
    return out


_MONTH_BEFORE = re.compile(r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)[a-z]*\.?\s*$")


def _kind(text: str) -> str:
    """What a written value measures: money, a percentage, or a plain number."""
    if re.search(r"[$€£]", text):
        return "money"
    return "percent" if "%" in text else "number"


def _is_date_part(text: str, start: int, end: int) -> bool:
    """Is the number at ``text[start:end]`` a day of a date ("Dec 31", "31, 2026")?"""
    return bool(_MONTH_BEFORE.search(text[:start]) or re.match(r",\s*(?:19|20)\d\d\b",
                                                                 text[end:]))


def find_operand(op: Operand, units: list[Unit], like: str = "") -> Value | None:
    """The value of ``op`` in ``units`` (best first), from, in order of trust: a table
    cell or ``label: value`` whose label names the item (a period column) in a row
    about the metric; a row naming the item whose cell is labelled by the metric (a
    price column in the item's row); the first number after the metric's words (not a
    day of a date) in prose that names the item (or whose file does). A value of
    another kind than ``like`` (money, percent, plain) ranks lower."""
    item_t, metric_t = _tokens(op.item), _with_synonyms(_tokens(op.metric))
    core = {t for t in item_t if not re.fullmatch(r"(19|20)\d\d", t)} or item_t
    need = max(1, min(len(_tokens(op.metric)), 2)) * 0.5
    best: tuple[float, Value] | None = None

    def offer(score: float, number: float | None, text: str, u: Unit) -> None:
        nonlocal best
        if like and _kind(text) != _kind(like):
            score -= 1.5  # an operand measured like the other operand is the likelier one
        if number is not None and (best is None or score > best[0]):
            best = (score, Value(number, text.strip(), u))

    for rank, u in enumerate(units):
        pairs = [(m.group("label").strip(), m.group("value").strip())
                 for m in _CELL_PAIR.finditer(u.text)]
        values_t = _tokens(" ".join(v for _, v in pairs)) if pairs else _tokens(u.text)
        about = len(metric_t & values_t)
        context_t = _tokens(u.context)
        # a period column: "Q2 2026: $9.80M" in the row about the metric
        if about >= need:
            for m in _LABELLED.finditer(u.text):
                label_t = _tokens(m.group("label"))
                if core <= label_t and item_t <= label_t | _tokens(u.text) | context_t:
                    offer(3 + about - rank * 0.01, parse_value(m.group("val")),
                          m.group("val") + m.group("suffix"), u)
        # the item's row: "Tier: Team; Price: $499 per month"
        if pairs and any(core <= _tokens(v) and len(_tokens(v)) <= len(core) + 2
                         for _, v in pairs):
            for label, value in pairs:
                if metric_t & _tokens(label):
                    n = _NUMBER_AFTER.search(value)
                    if n is not None:
                        offer(2.5 - rank * 0.01, parse_value(n.group()), n.group(), u)
        # prose naming the item (or in the item's file): the number after the metric
        path_t = _tokens(u.context.split("  ")[0]) if "  " in u.context else context_t
        if about >= need and item_t <= _tokens(u.text) | path_t:
            low = u.text.lower()
            positions = [low.find(w.lower()) for w in op.metric.split() if w.lower() in low]
            if positions:
                n = _NUMBER_AFTER.search(u.text, min(positions))
                while n is not None and _is_date_part(u.text, n.start(), n.end()):
                    n = _NUMBER_AFTER.search(u.text, n.end())
                if n is not None and n.start() - min(positions) < 60:
                    in_text = item_t <= _tokens(u.text)
                    offer(1 + about * 0.5 + (0.5 if in_text else 0) - rank * 0.01,
                          parse_value(n.group()), n.group(), u)
    return best[1] if best else None


def expression(plan: CalcPlan, values: list[Value]) -> str:
    """The calculator expression for ``plan`` over ``values``."""
    nums = [f"{v.number:g}" for v in values]
    if plan.op == "pct_change":
        return f"({nums[1]} - {nums[0]}) / {nums[0]} * 100"
    if plan.op == "pp_change":
        return f"{nums[0]} - {nums[1]}"
    if plan.op == "difference":
        return f"{nums[0]} - {nums[1]}"
    return " + ".join(nums)
