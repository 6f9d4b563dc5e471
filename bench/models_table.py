"""Issue 46's table: every offline model under each answer policy over the sets of
``bench/models_matrix.sh`` (``bench/out/models_{set}_{model}.json``), scored again with
``bench_agent``'s own scorer; per set, then summed over the sets.

    .venv/bin/python bench/models_table.py
    # issue 44's held-out run (bench/out/h12_{model}.json, a2e_bundled: commit a2e64ca)
    .venv/bin/python bench/models_table.py --prefix h12 \
        --set openvswitch=bench/heldout12/questions.jsonl=bench/out/heldout12/openvswitch-doc
    # the thirteenth (bench/out/h13_{model}.json; 15b_base: commit 81053df)
    .venv/bin/python bench/models_table.py --prefix h13 \
        --set ntpsec=bench/heldout13/questions.jsonl=bench/out/heldout13/ntpsec-doc
    # the first ten questions of the eleven development folders, four configurations
    # (bench/out/dev11_{set}_{model}.json; issue 44's must-show)
    .venv/bin/python bench/models_table.py --prefix dev11 $(for s in "" 2 3 4 5 6 7 8 9 10 11; \
        do echo --set heldout$s=bench/heldout$s/questions.jsonl=$(ls -d bench/out/heldout$s/*/); \
        done)
    # the fourteenth (bench/out/h14_{model}.json; 15b_base: commit 60da49a)
    .venv/bin/python bench/models_table.py --prefix h14 --base 60da49a \
        --set clang=bench/heldout14/questions.jsonl=bench/out/heldout14/clang-15-doc

Besides the scores: claim sentences that pass the support check, and the unflagged ones
with a figure (digits, thousands separators dropped) that none of their cited chunks
holds, the chunks read back from the source folder with kbagent's own extractor (an
independent check of the support check; a derived figure counts here too).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

from bench_agent import NOT_IN_KB, correct, fact_first  # noqa: E402

SETS = {"sample": "tests/data/sample_questions.jsonl", "proftpd": "bench/heldout11/questions.jsonl",
        "git": "bench/heldout/questions.jsonl"}
MODELS = {"a2e_bundled": "SmolLM2-135M (bundled), commit a2e64ca",
          "bundled": "SmolLM2-135M (bundled)", "05b": "Qwen2.5-Coder-0.5B",
          "15b": "Qwen2.5-Coder-1.5B",
          # issue 44's held-out runs: before (--base, the commit) and after a session's change
          "15b_base": "Qwen2.5-Coder-1.5B, commit {base}", "15b_new": "Qwen2.5-Coder-1.5B"}
FIGURE = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?")
KB_DIRS: dict[str, Path] = {"sample": ROOT / "sample_kb",
                            "proftpd": ROOT / "bench/out/heldout11/proftpd-doc",
                            "git": ROOT / "bench/out/heldout/git-doc"}
UNANSWERABLE = ("chit-chat", "unanswerable")


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(p / 100 * (len(xs) - 1)))]


def _figures(text: str) -> set[str]:
    return {m.replace(",", "").rstrip(".") for m in FIGURE.findall(text)}


@lru_cache(maxsize=256)
def _lines(kb_dir: Path, path: str) -> list[tuple[int, str]]:
    """(line number in the source, text) of a file as kbagent extracts it."""
    from kbagent.kb.extract import extract

    return [(ln.number, ln.text) for ln in extract(path, (kb_dir / path).read_bytes()).lines]


def unborne(row: dict, kb_dir: Path | None) -> int:
    """Unflagged claim sentences with a figure that none of their cited chunks holds."""
    if kb_dir is None:
        return 0
    chunks = {c["n"]: c for c in row.get("cited_chunks", [])}
    out = 0
    for x in row.get("sentence_list", []):
        if not x["supported"] or not x["cited"] or x.get("role", "claim") == "notice":
            continue
        held: set[str] = set()
        for n in x["cited"]:
            c = chunks.get(n)
            if c is not None:
                held |= _figures("\n".join(t for n, t in _lines(kb_dir, c["path"])
                                            if c["start_line"] <= n <= c["end_line"]))
        said = _figures(re.sub(r"\[\d+\]", " ", x["text"]))
        out += bool(said - held)
    return out


def results(model: str, name: str, prefix: str = "models") -> list[dict] | None:
    """A run's rows: ``bench/out/{prefix}_{name}_{model}.json`` (several sets, as
    models_matrix.sh and the development table write them), else
    ``bench/out/{prefix}_{model}.json`` (one held-out set); its .partial.json if the run
    was stopped."""
    for suffix in (".json", ".partial.json"):
        for f in (ROOT / f"bench/out/{prefix}_{name}_{model}{suffix}",
                  ROOT / f"bench/out/{prefix}_{model}{suffix}"):
            if f.exists():
                return list(json.loads(f.read_text())["rows"])
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--prefix", default="models", help="results bench/out/PREFIX_*.json")
    ap.add_argument("--set", action="append", default=[],
                    help="NAME=QUESTIONS.jsonl=KB_DIR (default: issue 46's three sets)")
    ap.add_argument("--base", default="81053df",
                    help="the commit the 15b_base results were run on")
    args = ap.parse_args()
    MODELS["15b_base"] = MODELS["15b_base"].format(base=args.base)
    sets = {n: q for n, q, _ in (x.split("=") for x in args.set)} or SETS
    KB_DIRS.update({n: ROOT / d for n, _, d in (x.split("=") for x in args.set)})
    print("| model | policy | set | fact first | contains gold | unanswerable abstained | "
          "answerable refused | flagged sentences (answers with one) | claims supported | "
          "unflagged with a figure in no cited chunk | p50 / p95 s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    totals: dict[tuple[str, str], dict[str, list]] = {}
    for model, label in MODELS.items():
        for policy in ("harness", "model"):
            for name, qfile in sets.items():
                rows = results(model, name, args.prefix)
                qs = {q["id"]: q for q in map(json.loads, (ROOT / qfile).read_text().splitlines())}
                rows = [r for r in rows or [] if r["mode"] in (f"auto/{policy}", "auto")
                        and (r["mode"] != "auto" or policy == "harness")]
                if not rows:
                    continue
                ans = [r for r in rows if qs[r["id"]]["kind"] not in UNANSWERABLE]
                una = [r for r in rows if qs[r["id"]]["kind"] == "unanswerable"]
                row = {
                    "fact": [bool(fact_first(qs[r["id"]], r["answer"])) for r in ans],
                    "gold": [correct(qs[r["id"]], r["answer"], r["actions"]) for r in ans],
                    "abst": [bool(NOT_IN_KB.search(r["answer"])) for r in una],
                    "refused": [bool(NOT_IN_KB.search(r["answer"].split(".")[0] + "."))
                                for r in ans],
                    "flagged": [r.get("flagged", 0) for r in rows],  # older runs: not recorded
                    "claims": [r.get("claim_sentences", 0) for r in rows],
                    "supported": [r.get("supported_claims", 0) for r in rows],
                    "unborne": [unborne(r, KB_DIRS.get(name)) for r in rows],
                    "wall": [r["wall_s"] for r in rows],
                }
                total = totals.setdefault((model, policy), {k: [] for k in row})
                for k, v in row.items():
                    total[k] += v
                print(f"| {label} | {policy} | {name} ({len(rows)}) | {line(row)}")
    print()
    print("| model | policy | fact first | contains gold | unanswerable abstained | "
          "answerable refused | flagged sentences (answers with one) | claims supported | "
          "unflagged with a figure in no cited chunk | p50 / p95 s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for (model, policy), total in totals.items():
        print(f"| {MODELS[model]} | {policy} | {line(total, share=True)}")


def line(row: dict[str, list], share: bool = False) -> str:
    def frac(xs: list) -> str:
        return f"{sum(xs)}/{len(xs)}" + (f" ({100 * sum(xs) / len(xs):.0f}%)"
                                          if share and xs else "")
    flagged = row["flagged"]
    return (f"{frac(row['fact'])} | {frac(row['gold'])} | {sum(row['abst'])}/{len(row['abst'])}"
            f" | {sum(row['refused'])} | {sum(flagged)} ({sum(1 for f in flagged if f)}) | "
            f"{sum(row['supported'])}/{sum(row['claims'])} | {sum(row['unborne'])} | "
            f"{statistics.median(row['wall']):.1f} / {pct(row['wall'], 95):.1f} |")


if __name__ == "__main__":
    main()
