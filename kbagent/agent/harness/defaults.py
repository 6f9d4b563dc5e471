"""The value a source states as a default, for :mod:`~kbagent.agent.harness.short`:
"defaults to 10", "Default: TraceLog 250", "10 by default", "if omitted, ... is Y", a
keyword argument the question names ("maxsize=128"), a manual page's parameter with its
value in parentheses ("line_length_limit (2048)"). A default counts as the asked one only
where a sentence does not name only a longer parameter holding the one the question names.
"""

from __future__ import annotations

import re

from kbagent.agent.answer.focus import PARAM_VALUE, Focus, exact

# a value a source states as the default, when the question asks for the default: more
# than any figure of the right unit nearby ("never set it to less than 10 seconds")
DEFAULT_STATED = 1.0
NAMED_VALUE = 1.5  # the value in parentheses after the parameter the question names

# a word of a default's value: no comma ends it that groups digits ("the default is 5,000")
_V = r"(?:[^\s,;]|(?<=\d),(?=\d{3}(?!\d)))+"
# "(simple is the new default)", "Y is the default"
_PRONOUN = re.compile(r"(?:this|that|it|which|what|there|these|those|who)\b", re.I)
_IS_THE_DEFAULT = re.compile(rf"(?<![\w.-])(?P<v>(?!{_PRONOUN.pattern})[^\s,;(]+"
                             r"(?:\s+[^\s,;(]+)?)\s+(?:is|was|becomes) the (?:new |current )?"
                             r"default\b", re.I)
DEFAULT_VALUE = [
    # "defaults to 10", "the default is 128", "default value of X is Y", "default: Y"
    re.compile(r"\bdefaults?\s*(?:value\s*)?(?:(?:of|for)\s+[^,.;]{1,40}?\s+)?"
               rf"(?:is|are|was|to|=|:|of)\s+(?:set to\s+)?(?P<v>{_V}(?:\s+{_V}){{0,3}})",
               re.I),
    # "10 by default", "set to 10 by default"
    re.compile(r"(?<![^\s,;()])(?P<v>[^\s,;()]+(?:\s+[^\s,;()]+){0,2})\s+by default\b", re.I),
    _IS_THE_DEFAULT,
    # "if omitted, ... is Y", "when unspecified Y is used"
    re.compile(r"\bif (?:omitted|unspecified|absent|not (?:given|specified|set|supplied)),?\s+"
               r"(?:[^,.;]{0,40}?\s)?(?:is|are|defaults to|becomes|uses?)\s+"
               r"(?P<v>[^\s,;]+(?:\s+[^\s,;]+){0,2})", re.I),
]
# a setting's name before its value: CamelCase or an identifier, then the value
SETTING_FIRST = re.compile(r"(?:[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*|[A-Z]{2,}[a-z][A-Za-z0-9]*|"
                           r"[a-z][a-z0-9]*[_.][\w.]+)"
                           r"\s+(?=\S)")
# "by default up to 4 attempts", "by default, 30 seconds": a figure after "by default"
BY_DEFAULT_NUMBER = re.compile(r"\bby default,?\s+(?:(?:up to|at most|at least|about)\s+)?"
                               r"(?P<v>\d[\d,.]*(?:\s?[A-Za-z%]+)?)", re.I)
# a sentence that opens on the no-options case states its defaults: "If run with no
# options, it removes all records that are more than 30 days old."
NO_OPTIONS = re.compile(r"^\W*(?:if|when)\s+(?:(?:it\s+is\s+|it's\s+)?(?:run|called|invoked|"
                        r"started|used|given)\s+)?(?:with\s+no|without(?:\s+any)?)\s+(?:options|"
                        r"arguments|parameters|flags|settings)\b[^,;]*[,;]?|^\W*if\s+no\s+(?:option|"
                        r"argument|parameter|flag)s?\s+(?:is|are)\s+(?:given|set|passed|specified)"
                        r"\b[^,;]*[,;]?", re.I)
# "maxsize=128", "tcp_keepalive_time = 600 seconds": a unit word after the value is its own
KWARG = re.compile(r"\b(?P<k>[A-Za-z_]\w*)\s*=\s*(?P<v>[^\s,)]+(?:\s+(?:seconds?|minutes?|"
                   r"hours?|days?|milliseconds?|bytes?|[KMGT]i?B)\b)?)")


def _idents(focus: Focus) -> list[str]:
    return [n.lower() for n in focus.named if "_" in n or "." in n]


def asks_default(focus: Focus, sentence: str) -> bool:
    """Does the question ask for the default, which ``sentence`` may state? Not where
    the sentence names only a longer parameter that contains the one the question names
    ("lmtp_line_length_limit (default: 990)" is not about line_length_limit)."""
    if "default" not in focus.focus and "default" not in focus.terms:
        return False
    low = sentence.lower()
    for n in _idents(focus):
        longer = re.search(rf"\w{re.escape(n)}|{re.escape(n)}\w", low)
        if longer and not exact(n).search(low):
            return False
    return True


def stated_defaults(focus: Focus, sentence: str, asks: bool) -> list[tuple[str, int, float]]:
    """(value, offset, bonus) of each default ``sentence`` states; ``asks``: from
    :func:`asks_default`."""
    out: list[tuple[str, int, float]] = []
    for i, p in enumerate(DEFAULT_VALUE):
        for m in p.finditer(sentence):
            # a value ends with its sentence ("512 MiB. Common unit ...": 512 MiB); before
            # "is the default" it starts with one ("for passwords. This is the default":
            # "This", no value)
            pieces = re.split(r"[.:!?](?:\s|$)", m.group("v"))
            value, at = pieces[0], m.start("v")
            if len(pieces) > 1 and m.group("v")[len(value)] == ":":  # "Default: X on
                value = re.sub(r"\s+[A-Z][\w-]*$", "", value)  # Context: ...": a field's label
            if p is _IS_THE_DEFAULT and len(pieces) > 1:
                value = pieces[-1]
                if not value or _PRONOUN.match(value):
                    continue
                at = m.end("v") - len(value)
            # "Default: TraceLog 250": a reference box restates the setting's name
            # before its value (the configuration syntax)
            named = SETTING_FIRST.match(value)
            if named and sentence[:at].rstrip().endswith(":"):
                name = named.group().strip()
                value, at = value[named.end():], at + named.end()
                # "x (Unix) ErrorLog y (Windows)": the name again starts another value
                value = re.split(rf"\s+{re.escape(name)}\b", value)[0]
            out.append((value, at, 1.0 - 0.1 * i + DEFAULT_STATED * asks))
    names = {n.rstrip("=").lower() for n in focus.named} | {
        w.lower() for w in re.findall(r"[A-Za-z_]\w*", focus.question)}
    for m in KWARG.finditer(sentence):
        if m.group("k").lower() in names:
            out.append((m.group("v"), m.start("v"), 1.2))
    for name in _idents(focus):  # a manual's "line_length_limit (2048)": the value of the
        for m in re.finditer(exact(name).pattern + PARAM_VALUE, sentence, re.I):
            out.append((m.group("v"), m.start("v"),  # parameter the question names
                        NAMED_VALUE + DEFAULT_STATED * asks))
    return out
