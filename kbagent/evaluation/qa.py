"""``kbagent eval qa``: answer a question set (or take answers already produced
by ``kbagent batch``) and score each answer, per mode, side by side.

Per question: exact match and token F1 (SQuAD normalisation, best over the
gold answers) of the *short answer* (``short_answer``: the fact in a few words,
its citation markers stripped; the whole answer when a run gave none), token F1
of the whole answer too, "answer contains a gold answer" on word boundaries in
the whole answer (the verdict for a fact inside a sentence), abstention (the answer says the
knowledge base does not say: right for unanswerable questions, wrong for the
others), supporting-document recall of what the tools retrieved (every chunk
any tool showed the model), citation precision (cited chunks that come from
a gold document), steps, distinct search queries, tokens and latency.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from kbagent.agent.kinds import SEARCH_TOOLS
from kbagent.evaluation.metrics import contains_gold, exact_match, percentile, token_f1
from kbagent.evaluation.qa_data import QaDataset, QaItem

_MARKERS = re.compile(r"\s*\[\d+(?:\s*,\s*\d+)*\]")
# How an answer says that the knowledge base does not hold the answer.
ABSTAINED = re.compile(
    r"does not (say|mention|contain|include|specify|provide)|not (in|found in|available in) "
    r"the (knowledge base|sources|documents)|no information|could not find|cannot find|"
    r"couldn't find|don't have|do not have|not mentioned|do not know|don't know", re.I)


def abstained(answer: str) -> bool:
    return bool(ABSTAINED.search(answer))


def short_text(rec: dict[str, Any]) -> str:
    """What exact match and F1 score: the record's short answer, else its whole answer
    (a run that gave no short answer, or a record written before there was one), its
    citation markers stripped ("128 [1]" -> "128")."""
    short = _MARKERS.sub("", str(rec.get("short_answer") or "")).strip()
    return short or _MARKERS.sub("", str(rec.get("answer") or "")).strip()


@dataclass
class QaRow:
    id: str
    kind: str
    mode: str
    routed: str
    question: str
    answer: str
    short_answer: str  # as the run gave it, markers and all ("" when it gave none)
    golds: list[str]
    correct: bool
    em: float  # of the short answer (the whole answer when there is none)
    f1: float  # of the short answer (the whole answer when there is none)
    answer_f1: float  # of the whole answer
    contains: bool  # the whole answer contains a gold answer
    abstained: bool
    support_recall: float | None  # None: the question has no gold documents
    all_support: bool | None
    cited: int
    cited_gold: int
    cited_paths: list[str]
    steps: int
    queries: int  # distinct search queries the tools ran
    tokens: int
    latency_s: float
    error: str | None = None


def score(item: QaItem, mode: str, rec: dict[str, Any]) -> QaRow:
    """Score one answer record (the ``ask --json`` / batch shape)."""
    answer = rec.get("answer") or ""
    steps = rec.get("steps") or []
    error = rec.get("error")
    gave_up = abstained(answer)
    short = short_text(rec)
    em, f1 = exact_match(short, item.golds), token_f1(short, item.golds)
    contains = contains_gold(answer, item.golds)
    if item.unanswerable:
        correct = gave_up
    elif item.kind == "chit-chat":
        correct = bool(answer.strip()) and not any(s.get("action") for s in steps)
    else:
        correct = contains and error is None
    cited = [c for d in rec.get("references") or [] for c in d.get("chunks", [])]
    retrieved = set(rec.get("retrieved") or [])
    gold = set(item.gold_docs)
    recall = len(gold & retrieved) / len(gold) if gold else None
    queries = {str((s.get("args") or {}).get("query", "")).strip().casefold()
               for s in steps if s.get("action") in SEARCH_TOOLS}
    usage = rec.get("usage") or {}
    return QaRow(
        id=item.id, kind=item.kind, mode=mode, routed=str(rec.get("mode") or mode),
        question=item.question, answer=answer, short_answer=str(rec.get("short_answer") or ""),
        golds=item.golds, correct=correct, em=em, f1=f1,
        answer_f1=token_f1(answer, item.golds), contains=contains, abstained=gave_up,
        support_recall=recall,
        all_support=(gold <= retrieved) if gold else None, cited=len(cited),
        cited_gold=sum(1 for c in cited if c.get("path") in gold),
        cited_paths=sorted({c.get("path", "") for c in cited}), steps=len(steps),
        queries=len(queries - {""}),
        tokens=int(usage.get("budget_tokens") or 0),
        latency_s=round(float(usage.get("wall_ms") or 0.0) / 1000, 3), error=error,
    )


@dataclass
class ModeSummary:
    mode: str
    questions: int
    correct: int
    correct_by_kind: dict[str, str]
    em: float  # short answers (whole answers where none was given)
    f1: float
    short_answers: int  # answers that came with a short answer
    answer_f1: float  # whole answers
    contains: float  # whole answers
    support_recall: float | None
    all_support: str | None
    citation_precision: float | None
    abstention_recall: float | None  # unanswerable questions answered "does not say"
    false_abstentions: int  # answerable questions answered "does not say"
    steps: float
    distinct_queries: float
    tokens: float
    latency_median_s: float
    latency_p95_s: float
    errors: int


def _mean(xs: Iterable[float]) -> float:
    xs = list(xs)
    return round(statistics.mean(xs), 4) if xs else 0.0


def summarize(mode: str, rows: list[QaRow]) -> ModeSummary:
    kinds: dict[str, list[QaRow]] = {}
    for r in rows:
        kinds.setdefault(r.kind, []).append(r)
    with_gold = [r for r in rows if r.support_recall is not None]
    unans = [r for r in rows if r.kind == "unanswerable"]
    cited = sum(r.cited for r in rows)
    lat = [r.latency_s for r in rows if r.error is None]
    return ModeSummary(
        mode=mode, questions=len(rows), correct=sum(r.correct for r in rows),
        correct_by_kind={k: f"{sum(r.correct for r in v)}/{len(v)}"
                         for k, v in sorted(kinds.items())},
        em=_mean(r.em for r in rows), f1=_mean(r.f1 for r in rows),
        short_answers=sum(bool(r.short_answer) for r in rows),
        answer_f1=_mean(r.answer_f1 for r in rows),
        contains=_mean(float(r.contains) for r in rows if r.kind != "unanswerable"),
        support_recall=_mean(r.support_recall or 0.0 for r in with_gold) if with_gold else None,
        all_support=(f"{sum(bool(r.all_support) for r in with_gold)}/{len(with_gold)}"
                     if with_gold else None),
        citation_precision=round(sum(r.cited_gold for r in with_gold) / max(1, sum(
            r.cited for r in with_gold)), 4) if with_gold and cited else None,
        abstention_recall=_mean(float(r.abstained) for r in unans) if unans else None,
        false_abstentions=sum(r.abstained for r in rows if r.kind != "unanswerable"),
        steps=_mean(r.steps for r in rows), distinct_queries=_mean(r.queries for r in rows),
        tokens=_mean(r.tokens for r in rows),
        latency_median_s=round(statistics.median(lat), 2) if lat else 0.0,
        latency_p95_s=round(percentile(lat, 95), 2) if lat else 0.0,
        errors=sum(r.error is not None for r in rows),
    )


@dataclass
class QaReport:
    dataset: str
    kb: str
    modes: list[ModeSummary]
    rows: list[QaRow] = field(repr=False)

    def to_json(self, rows: bool = True) -> dict[str, Any]:
        out = {"dataset": self.dataset, "kb": self.kb,
               "modes": [asdict(m) for m in self.modes]}
        if rows:
            out["rows"] = [asdict(r) for r in self.rows]
        return out


Answer = Callable[[QaItem, str], dict[str, Any]]  # (item, mode) -> answer record


def run_qa(ds: QaDataset, kb: str, modes: list[str], answer: Answer,
           progress: Callable[[str, int, int], None] | None = None) -> QaReport:
    """Ask every question in every mode (question by question, modes side by side,
    so machine load hits every mode alike) and score the answers."""
    tick = progress or (lambda phase, done, total: None)
    by_mode: dict[str, list[QaRow]] = {m: [] for m in modes}
    total = len(ds.items) * len(modes)
    for i, item in enumerate(ds.items):
        for j, mode in enumerate(modes):
            by_mode[mode].append(score(item, mode, answer(item, mode)))
            tick("questions", i * len(modes) + j + 1, total)
    return QaReport(ds.name, kb, [summarize(m, by_mode[m]) for m in modes],
                    [r for m in modes for r in by_mode[m]])


def score_answers(ds: QaDataset, kb: str, records: list[dict[str, Any]]) -> QaReport:
    """Score answers produced elsewhere (``kbagent batch`` output), matched by id;
    a question without an answer record counts as an error."""
    by_mode: dict[str, dict[str, dict[str, Any]]] = {}
    for rec in records:
        mode = str(rec.get("requested_mode") or rec.get("mode") or "auto")
        by_mode.setdefault(mode, {})[str(rec.get("id"))] = rec
    summaries, rows = [], []
    for mode, recs in by_mode.items():
        mode_rows = [score(item, mode, recs.get(item.id, {"error": "no answer in the file"}))
                     for item in ds.items]
        summaries.append(summarize(mode, mode_rows))
        rows.extend(mode_rows)
    return QaReport(ds.name, kb, summaries, rows)
