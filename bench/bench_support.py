"""The supported-check against hand labels (issue 13).

Scores every labelled sentence (tests/data/support_labels.jsonl, cited text read from
sample_kb) with each candidate check and prints precision / recall / F1 for the
"supported" label and for "not", side by side; score-based candidates get a threshold
sweep.

    .venv/bin/python bench/bench_support.py [--embed]

``--embed`` adds the embedding model's cosine between the sentence and its best unit
(loads the bundled embedder; reports ms per sentence).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.support_labels import Labelled, load_labels  # noqa: E402
from kbagent.agent.answer import support as sp  # noqa: E402

Verdicts = list[bool]


def prf(gold: list[bool], pred: Verdicts, positive: bool) -> tuple[float, float, float]:
    tp = sum(1 for g, p in zip(gold, pred, strict=True) if g == positive and p == positive)
    said = sum(1 for p in pred if p == positive)
    real = sum(1 for g in gold if g == positive)
    prec = tp / said if said else 0.0
    rec = tp / real if real else 0.0
    f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
    return prec, rec, f1


def row(name: str, gold: list[bool], pred: Verdicts) -> str:
    ps, rs, fs = prf(gold, pred, True)
    pn, rn, fn = prf(gold, pred, False)
    acc = sum(1 for g, p in zip(gold, pred, strict=True) if g == p) / len(gold)
    return (f"| {name} | {ps:.2f} | {rs:.2f} | {fs:.2f} | {pn:.2f} | {rn:.2f} | {fn:.2f} | "
            f"{(fs + fn) / 2:.2f} | {acc:.2f} |")


HEAD = ("| check | P supported | R supported | F1 supported | P not | R not | F1 not | "
        "macro F1 | accuracy |\n|---|---|---|---|---|---|---|---|---|")


def embed_score(sentence: str, cited_texts: list[str], emb: Any) -> float:
    """Cosine between the sentence and its nearest unit of the cited chunks."""
    units = [u for us in sp.unit_texts(cited_texts) for u in us] or [""]
    vecs = np.asarray(emb.encode([sentence, *units]), dtype=np.float32)
    vecs /= np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-9)
    return float((vecs[1:] @ vecs[0]).max())


def scores(labels: list[Labelled], fn: Callable[[str, list[str]], float | None]) -> list[float]:
    return [v if (v := fn(x.sentence, x.cited_texts)) is not None else 1.0 for x in labels]


SWEEP = (0.5, 0.6, 0.7, 0.8, 0.9)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--embed", action="store_true")
    args = ap.parse_args()
    labels = load_labels()
    gold = [x.supported for x in labels]
    n_sup = sum(gold)
    print(f"{len(labels)} labelled sentences: {n_sup} supported, {len(labels) - n_sup} not "
          f"(load average {os.getloadavg()[0]:.2f})\n")
    t0 = time.perf_counter()
    chosen = [sp.support(x.sentence, x.cited_texts)[1] for x in labels]
    chosen_ms = (time.perf_counter() - t0) * 1000 / len(labels)
    facts = [sp.facts_ok(x.sentence, x.cited_texts) for x in labels]
    numbers = [sp.numbers_ok(x.sentence, x.cited_texts) for x in labels]
    sweeps: dict[str, list[float]] = {
        "overlap, whole cited text": scores(labels, sp.overlap),
        "best unit overlap": scores(labels, sp.unit_overlap),
        "best 2 adjacent units overlap": scores(
            labels, lambda s, t: sp.unit_overlap(s, t, window=2)),
    }
    notes = [f"support(): {chosen_ms:.2f} ms per sentence"]
    if args.embed:
        from kbagent.kb.embedder import load_embedder

        emb = load_embedder()
        emb.encode(["warm up"])
        t0 = time.perf_counter()
        sweeps["embedding cosine, best unit"] = [
            embed_score(x.sentence, x.cited_texts, emb) for x in labels]
        ms = (time.perf_counter() - t0) * 1000 / len(labels)
        notes.append(f"embedding cosine ({type(emb).__name__}): {ms:.1f} ms per sentence")
    overlap = sweeps["overlap, whole cited text"]
    lines = [HEAD,
             row("(a) overlap >= 0.5 (the check before)", gold, [v >= 0.5 for v in overlap]),
             row("facts present, alone", gold, facts),
             row("numbers present, alone", gold, numbers),
             row("(b) overlap >= 0.5 and facts present", gold,
                 [v >= 0.5 and f for v, f in zip(overlap, facts, strict=True)])]
    for name, vals in sweeps.items():
        for t in SWEEP:
            lines.append(row(f"{name} >= {t}", gold, [v >= t for v in vals]))
        for t in SWEEP:
            lines.append(row(f"{name} >= {t} and numbers present", gold,
                             [v >= t and f for v, f in zip(vals, numbers, strict=True)]))
        for t in SWEEP:
            lines.append(row(f"{name} >= {t} and facts present", gold,
                             [v >= t and f for v, f in zip(vals, facts, strict=True)]))
    lines.append(row(f"**chosen: support() (best unit >= {sp.UNIT_THRESHOLD} and numbers "
                     "present)**", gold, chosen))
    own = [i for i, x in enumerate(labels) if x.cite in ("model", "auto", "next_line")]
    if own:
        sub = [gold[i] for i in own]
        lines += [f"| *the {len(own)} sentences paired with what the answer cited "
                  f"({sum(sub)} supported):* | | | | | | | | |",
                  row("(a) overlap >= 0.5 (the check before)", sub,
                      [overlap[i] >= 0.5 for i in own]),
                  row("chosen: support()", sub, [chosen[i] for i in own])]
    print("\n".join(lines))
    print("\n" + "; ".join(notes))


if __name__ == "__main__":
    main()
