"""Answer text as sentences: citation markers normalised to ``[n]``, streamed text
split into sentences, the :class:`ProcessedSentence` record every answer sentence
becomes, and where a harness-placed marker goes. Shared by the answer processor
(:mod:`~kbagent.agent.answer.processor`) and the grounding checks
(:mod:`~kbagent.agent.harness.grounding`), which sit above it."""

from __future__ import annotations

import re
from dataclasses import dataclass

from kbagent.agent.answer.citations import CJK

_VARIANT = re.compile(
    r"(?P<ws>[ \t]*)(?:"
    r"【\s*(?P<a>[\d\s,，、;；\-–]+?)\s*】"
    r"|\[\^(?P<b>\d+)\]"
    r"|\[\s*(?:(?:source|sources|ref|refs|citation|chunk|doc)\s*)?#?\s*"
    r"(?P<c>\d+(?:\s*[,，、;；\-–]\s*#?\d+)*)\s*\])",
    re.IGNORECASE,
)
MARKER = re.compile(r"\[(\d+)\]")
_WORD = re.compile(r"\w+")


def _expand(group: str) -> list[int]:
    nums: list[int] = []
    for part in re.split(r"[,，、;；]", group):
        part = part.strip().lstrip("#")
        m = re.match(r"^(\d+)\s*[\-–]\s*#?(\d+)$", part)
        if m:
            a, b = int(m.group(1)), int(m.group(2))
            nums.extend(range(a, b + 1) if 0 <= b - a <= 10 else [a, b])
        elif part.isdigit():
            nums.append(int(part))
    return nums


def normalize_markers(text: str, valid: set[int]) -> str:
    """Rewrite marker variants as ``[n][m]``; drop numbers not in ``valid``."""

    def repl(m: re.Match[str]) -> str:
        group = m.group("a") or m.group("b") or m.group("c") or ""
        seen: list[int] = []
        for n in _expand(group):
            if n in valid and n not in seen:
                seen.append(n)
        # a dropped marker takes its leading space with it
        return m.group("ws") + "".join(f"[{n}]" for n in seen) if seen else ""

    out = _VARIANT.sub(repl, text)
    return re.sub(r"(\[\d+\])(?:\s*\1)+", r"\1", out)  # [1] [1] -> [1]


def cited_numbers(text: str) -> list[int]:
    return [int(n) for n in MARKER.findall(text)]


# --------------------------------------------------------------- sentences
_ABBREV = {"e.g", "i.e", "etc", "vs", "mr", "mrs", "ms", "dr", "inc", "ltd", "co", "no", "fig",
           "approx", "st", "jr", "sr", "u.s", "dept", "est"}
_END = re.compile(
    r"(?:[.!?]+[\"'”’)\]]*(?:[ \t]*\[\d+\])*(?=\s|$)"
    r"|[。！？]+[」』）)]*(?:\[\d+\])*"
    r"|\n+)"
)


def _is_abbreviation(text: str, dot: int) -> bool:
    if text[dot] != ".":
        return False
    m = re.search(r"([A-Za-z][A-Za-z.]*)$", text[:dot])
    if not m:
        return False
    word = m.group(1).lower().rstrip(".")
    return word in _ABBREV or len(word) == 1


def sentence_spans(text: str, final: bool = True) -> tuple[list[str], str]:
    """Split off complete sentences (trailing whitespace included); return (sentences, rest).
    With ``final=False`` a boundary only counts once text follows it that cannot be
    a citation marker belonging to the sentence."""
    out: list[str] = []
    start = 0
    for m in _END.finditer(text):
        end = m.end()
        if m.start() < start or _is_abbreviation(text, m.start()):
            continue
        while end < len(text) and text[end] in " \t":
            end += 1
        if end < len(text) and text[end] == "\n":
            nl = re.match(r"\n+", text[end:])
            end += nl.end() if nl else 0
        rest = text[end:]
        if not final and (not rest.strip() or rest.lstrip().startswith(("[", "【"))):
            break
        out.append(text[start:end])
        start = end
    tail = text[start:]
    if final and tail:
        out.append(tail)
        tail = ""
    return out, tail


# ----------------------------------------------------------- post-processing
@dataclass
class ProcessedSentence:
    text: str
    cited: list[int]
    auto: bool = False  # a marker was placed by the harness
    support: float | None = None
    supported: bool | None = None
    # claim: the model's (checked); quote: a source sentence the harness quoted;
    # calculation: the harness's arithmetic; notice: what the harness says about the
    # answer itself ("the knowledge base does not say", the closest sources)
    role: str = "claim"


def repeat_key(text: str) -> str:
    """What makes two answer sentences the same: their words, lower-cased, without
    citation markers, spacing or punctuation ("branches [3]." and "branches." are one
    sentence: a marker placed before the full stop once left a space behind that made
    them differ, and a looping answer kept 19 copies)."""
    return " ".join(_WORD.findall(MARKER.sub(" ", text).lower()))


def insert_marker(sentence: str, marker: str) -> str:
    """Place a marker at the end of the sentence, before its terminal punctuation."""
    body = sentence.rstrip()
    trail = sentence[len(body):]
    m = re.search(r"([.!?。！？]+[\"'”’)\]」』）]*)$", body)
    if m:
        core = body[: m.start()]
        sep = "" if CJK.search(core[-1:] or "") else " "
        return f"{core.rstrip()}{sep}{marker}{m.group(1)}{trail}"
    sep = "" if CJK.search(body[-1:] or "") else " "
    return f"{body}{sep}{marker}{trail}"
