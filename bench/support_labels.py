"""Hand labels for the supported-check (issue 13): collect the raw model's cited answer
sentences, and load the labelled ones with their cited text read from ``sample_kb``.

    .venv/bin/python bench/support_labels.py collect [--modes rag,agent] [--limit N] [--ids q01,..]
    .venv/bin/python bench/support_labels.py candidates
    .venv/bin/python bench/support_labels.py show [--from N] [--count K]
    .venv/bin/python bench/support_labels.py build VERDICTS

``collect`` ingests ``sample_kb`` into a temporary home, runs the bundled model over
``tests/data/sample_questions.jsonl`` with ``AgentConfig(grounded=False)`` (the model's
own sentences are kept, nothing is repaired), appends each run to
``bench/out/support_runs.jsonl`` and then (as ``candidates`` does alone) writes every
answer sentence with what it cites, and the cleaned text of those chunks, to
``bench/out/support_candidates.jsonl``. ``show`` prints candidates for reading; ``build`` writes
the labels file from them and a hand-written verdicts file.

The labels (``tests/data/support_labels.jsonl``) hold each sentence and the chunks it
cites *by reference* (path and line span in ``sample_kb``); :func:`load_labels` reads the
text back from the files with kbagent's own extractor, as the citation ledger does.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kbagent.agent.answer.citations import clean_text  # noqa: E402

SAMPLE_KB = ROOT / "sample_kb"
LABELS = ROOT / "tests/data/support_labels.jsonl"
CANDIDATES = ROOT / "bench/out/support_candidates.jsonl"
RUNS = ROOT / "bench/out/support_runs.jsonl"
_MARKER = re.compile(r"\s*\[\d+\]")


@lru_cache(maxsize=128)
def _doc_lines(path: str) -> tuple[tuple[int, int, str], ...]:
    from kbagent.kb.extract import extract

    doc = extract(path, (SAMPLE_KB / path).read_bytes())
    return tuple((ln.number, ln.last, ln.text) for ln in doc.lines)


def chunk_raw(path: str, start: int, end: int) -> str:
    """Lines ``start..end`` of ``sample_kb/path`` as kbagent stores them (every stored
    line that overlaps the span, as the citation ledger reads one): ``Citation.raw``."""
    return "\n".join(t for number, last, t in _doc_lines(path) if last >= start and number <= end)


def chunk_text(path: str, start: int, end: int) -> str:
    """The cleaned text of that span: ``Citation.text``."""
    return clean_text(chunk_raw(path, start, end))


@dataclass(frozen=True)
class Labelled:
    id: str
    question_id: str
    sentence: str
    cited_texts: list[str]  # each cited chunk's raw text (line breaks and markup kept)
    supported: bool
    why: str
    cite: str = ""  # model | auto | next_line | nearest | alternate (see candidates())


def load_labels(path: Path = LABELS) -> list[Labelled]:
    """The hand-labelled sentences, each with the text of the chunks it cites."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        texts = [chunk_raw(c["path"], c["start_line"], c["end_line"]) for c in row["cited"]]
        out.append(Labelled(row["id"], row["question_id"], row["sentence"], texts,
                            row["label"] == "supported", row.get("why", ""),
                            row.get("cite", "")))
    return out


# ------------------------------------------------------------------ collect
def collect(modes: list[str], limit: int, ids: list[str], home: Path | None = None) -> None:
    """Run the model; append each run (answer, sentences, every chunk the tools showed
    it) to RUNS, then rebuild the candidates from all runs."""
    from kbagent.agent.llm.llama import LlamaCppLLM, bundled_model_path
    from kbagent.agent.run.loop import Agent, AgentConfig, run_to_result
    from kbagent.kb.embedder import load_embedder
    from kbagent.kb.ingest import Ingestor
    from kbagent.kb.knowledge_base import KnowledgeBase
    from kbagent.settings import Settings

    home = home or Path(tempfile.mkdtemp(prefix="kbagent-support-"))  # reused: incremental
    settings = Settings.load(home=home)
    Ingestor(settings, "sample", embedder=load_embedder()).run(SAMPLE_KB)
    kb = KnowledgeBase(settings, "sample")
    llm = LlamaCppLLM(bundled_model_path(), n_ctx=8192)
    questions = [json.loads(line) for line in
                 (ROOT / "tests/data/sample_questions.jsonl").read_text().splitlines()]
    if ids:  # in the order given
        by_id = {q["id"]: q for q in questions}
        questions = [by_id[i] for i in ids if i in by_id]
    questions = questions[:limit] if limit else questions
    RUNS.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    for mode in modes:  # a whole mode first: rag (one LLM call) gives sentences soonest
        for q in questions:
            llm.reset_cache()
            # no wall-clock limit: a paused process would cut the answer short
            agent = Agent(llm, [kb], AgentConfig(mode=mode, tools="full", grounded=False,
                                                 time_limit=3600.0))
            result = run_to_result(agent, q["question"])
            chunks = [{"n": c.n, "path": c.path, "start_line": c.start_line,
                       "end_line": c.end_line} for c in result.all_references.chunks()]
            run = {"question_id": q["id"], "question": q["question"], "mode": mode,
                   "answer": result.answer, "sentences": [x.to_json() for x in result.sentences],
                   "chunks": chunks}
            with RUNS.open("a", encoding="utf-8") as out:
                out.write(json.dumps(run, ensure_ascii=False) + "\n")
            print(f"{q['id']} {mode} ({time.perf_counter() - started:.0f} s) "
                  f"{result.answer[:160]!r}", flush=True)
    print(f"load average {os.getloadavg()[0]:.2f}")
    candidates()


def candidates() -> None:
    """Every answer sentence of every run paired with what it cites: the model's markers
    (or the harness's auto-cite) = ``model``; a marker-only line right after it (the
    model's "The source is: [1]") = ``next_line``; otherwise the chunk of the run that
    shares most of its words, as the grounding check of an uncited sentence tries it =
    ``nearest`` (only when that chunk shares at least a third of them). Each sentence is
    also paired with the closest chunk of the run it does not cite (``alternate``, id
    suffix ``-alt``; same third), as the grounding check of a sentence looks for a
    source that carries it: more labelled pairs from the same slow runs."""
    from kbagent.agent.answer.citations import content_tokens

    count = 0
    seen: set[str] = set()
    with CANDIDATES.open("w", encoding="utf-8") as out:
        for line in RUNS.read_text(encoding="utf-8").splitlines():
            run = json.loads(line)
            chunks = {c["n"]: c for c in run["chunks"]}
            texts = {n: chunk_text(c["path"], c["start_line"], c["end_line"])
                     for n, c in chunks.items()}
            sents = run["sentences"]
            for i, s in enumerate(sents):
                plain = _MARKER.sub("", s["text"]).strip()
                words = content_tokens(plain)
                if s.get("role", "claim") != "claim" or not words:
                    continue
                cited = [n for n in s["cited"] if n in chunks]
                how = ("auto" if s["auto"] else "model") if cited else ""
                if not cited:
                    after = [x for x in sents[i + 1:i + 3] if x["cited"] and
                             not content_tokens(_MARKER.sub("", x["text"]))]
                    if after:
                        cited, how = [n for n in after[0]["cited"] if n in chunks], "next_line"
                share = {n: len(words & content_tokens(t)) / len(words)
                         for n, t in texts.items()}
                nearest = sorted((n for n in share if share[n] >= 1 / 3),
                                 key=lambda k: (-share[k], k))
                if not cited and nearest:
                    cited, how = [nearest.pop(0)], "nearest"
                if not cited:
                    continue
                pairs = [("", cited, how)]
                other = [n for n in nearest if n not in cited]
                if other:  # the same sentence against the closest chunk it does not cite
                    pairs.append(("-alt", other[:1], "alternate"))
                for suffix, ns, kind in pairs:
                    refs = [{"path": chunks[n]["path"], "start_line": chunks[n]["start_line"],
                             "end_line": chunks[n]["end_line"]} for n in ns]
                    key = json.dumps([plain, refs])
                    if key in seen:  # the same sentence and chunks from another run
                        continue
                    seen.add(key)
                    row = {"id": f"{run['question_id']}-{run['mode']}-{i}{suffix}",
                           "question_id": run["question_id"], "question": run["question"],
                           "mode": run["mode"], "cite": kind, "sentence": plain,
                           "text": s["text"], "cited": refs,
                           "cited_texts": [texts[n] for n in ns]}
                    out.write(json.dumps(row, ensure_ascii=False) + "\n")
                    count += 1
    print(f"wrote {count} sentences to {CANDIDATES}")


def build(verdicts: Path) -> None:
    """Write the labels file from the candidates and a hand-written verdicts file
    (one ``id | supported|not | why`` a line)."""
    rows = {r["id"]: r for r in map(json.loads,
                                   CANDIDATES.read_text(encoding="utf-8").splitlines())}
    out = []
    for line in verdicts.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        rid, label, why = (x.strip() for x in line.split("|", 2))
        if label not in ("supported", "not"):
            raise SystemExit(f"bad label {label!r} for {rid}")
        r = rows[rid]
        out.append({"id": rid, "question_id": r["question_id"], "question": r["question"],
                    "mode": r["mode"],
                    "cite": r["cite"], "sentence": r["sentence"], "cited": r["cited"],
                    "label": label, "why": why})
    LABELS.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in out),
                      encoding="utf-8")
    n = sum(1 for x in out if x["label"] == "supported")
    print(f"wrote {len(out)} labels ({n} supported, {len(out) - n} not) to {LABELS}")


def show(first: int, count: int) -> None:
    rows = [json.loads(x) for x in CANDIDATES.read_text(encoding="utf-8").splitlines()]
    for k, r in enumerate(rows[first:first + count], start=first):
        print(f"=== #{k} {r['id']} cite={r['cite']}")
        print(f"Q: {r['question']}")
        print(f"S: {r['sentence']}")
        for ref, text in zip(r["cited"], r["cited_texts"], strict=True):
            print(f"  [{ref['path']}:{ref['start_line']}-{ref['end_line']}] {text}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("collect")
    c.add_argument("--modes", default="rag,agent")
    c.add_argument("--limit", type=int, default=0)
    c.add_argument("--ids", default="", help="only these question ids (q01,q02,...)")
    c.add_argument("--home", type=Path, default=None, help="reuse this data home")
    sub.add_parser("candidates")
    b = sub.add_parser("build")
    b.add_argument("verdicts", type=Path)
    s = sub.add_parser("show")
    s.add_argument("--from", dest="first", type=int, default=0)
    s.add_argument("--count", type=int, default=20)
    args = ap.parse_args()
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if args.cmd == "collect":
        collect(args.modes.split(","), args.limit, [i for i in args.ids.split(",") if i],
                args.home)
    elif args.cmd == "build":
        build(args.verdicts)
    elif args.cmd == "candidates":
        candidates()
    else:
        show(args.first, args.count)


if __name__ == "__main__":
    main()
