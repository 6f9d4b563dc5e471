"""Benchmark the symbol index (issue 12) on the Python standard library's own .py files.

Measures, on one run:

* build time and size of the symbol index per 1,000 source files: each file is
  extracted and stored as ingest does (not timed), then its symbols are parsed
  with tree-sitter and written (timed); size = the VACUUMed ``kb.sqlite`` with
  the symbol tables minus the same database without them;
* lookup latency p50/p95 of ``definitions`` and ``callers`` for names drawn
  from the index;
* definition-lookup accuracy on 30 symbols picked by hand from that tree, each
  with the ``file:line`` of its definition (found with grep, listed below).

No embedding is done: the embedding cost of ingest is measured in bench_kb.py.

    PYTHONPATH=$PWD python bench/bench_code.py [--root DIR] [--limit N]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import sqlite3
import statistics
import sys
import time
from pathlib import Path
from types import SimpleNamespace

from kbagent.kb.extract import extract
from kbagent.kb.source_text import Skip
from kbagent.kb.store import Store
from kbagent.kb.symbol_index import (
    MANIFEST_KEY,
    VERSION,
    SymbolIndex,
    create_tables,
    index_extracted,
)

OUT = Path(__file__).parent / "out"

# (symbol as a person would type it, expected "path:line" of its definition)
HAND_PICKED = [
    ("urlparse", "urllib/parse.py:374"),
    ("namedtuple", "collections/__init__.py:350"),
    ("OrderedDict", "collections/__init__.py:78"),
    ("deepcopy", "copy.py:128"),
    ("Path", "pathlib.py:857"),
    ("ThreadPoolExecutor", "concurrent/futures/thread.py:118"),
    ("Random.shuffle", "random.py:376"),
    ("dedent", "textwrap.py:419"),
    ("fnmatch", "fnmatch.py:19"),
    ("which", "shutil.py:1452"),
    ("lru_cache", "functools.py:479"),
    ("Counter", "collections/__init__.py:536"),
    ("b64encode", "base64.py:51"),
    ("ArgumentParser", "argparse.py:1715"),
    ("Fraction", "fractions.py:38"),
    ("wraps", "functools.py:65"),
    ("unified_diff", "difflib.py:1095"),
    ("HTTPServer", "http/server.py:130"),
    ("getLogger", "logging/__init__.py:2081"),
    ("literal_eval", "ast.py:54"),
    ("dataclass", "dataclasses.py:1202"),
    ("Enum", "enum.py:1053"),
    ("urlopen", "urllib/request.py:139"),
    ("bisect_left", "bisect.py:68"),
    ("nlargest", "heapq.py:523"),
    ("ArgumentParser.parse_args", "argparse.py:1868"),
    ("Counter.most_common", "collections/__init__.py:610"),
    ("JSONDecoder.raw_decode", "json/decoder.py:343"),
    ("Popen.communicate", "subprocess.py:1165"),
    ("HIGHEST_PROTOCOL", "pickle.py:66"),
]


def source_files(root: Path, limit: int) -> list[Path]:
    files = sorted(p for p in root.rglob("*.py")
                   if "site-packages" not in p.parts and p.is_file())
    return files[:limit] if limit else files


def build(root: Path, files: list[Path], db: Path) -> dict:
    """Store every file as ingest does; time only the symbol parsing and writing."""
    store = Store(db)
    create_tables(store.conn)
    symbol_s, stored, partial = 0.0, 0, 0
    for f in files:
        rel = f.relative_to(root).as_posix()
        try:
            doc = extract(rel, f.read_bytes())
        except Skip:
            continue
        doc_id = store.add_document(doc, "-", f.stat().st_size)
        t0 = time.perf_counter()
        if index_extracted(store.conn, doc_id, doc):
            partial += 1
        symbol_s += time.perf_counter() - t0
        stored += 1
    t0 = time.perf_counter()
    store.commit()
    symbol_s += time.perf_counter() - t0
    store.conn.execute("VACUUM")
    store.close()
    return {"files": stored, "files_with_syntax_errors": partial, "symbol_seconds": symbol_s}


def size_without_symbols(db: Path) -> int:
    copy = db.with_name("nosym.sqlite")
    shutil.copy(db, copy)
    conn = sqlite3.connect(copy)
    conn.executescript("DROP TABLE symbol_refs; DROP TABLE symbols; DROP TABLE symbol_files; "
                       "DROP TABLE symbol_names;")
    conn.execute("VACUUM")
    conn.close()
    size = copy.stat().st_size
    copy.unlink()
    return size


def grep_baseline(idx: SymbolIndex, names: list[str]) -> dict:
    """What a person without the index does: a whole-word regex over every stored line.
    Median matching lines per name (what they then read through) and p50 time per name."""
    texts = [r[0] for r in idx.conn.execute("SELECT text FROM documents")]
    counts, times = [], []
    for name in names:
        word = re.compile(rf"\b{re.escape(name)}\b")
        t0 = time.perf_counter()
        n = sum(1 for text in texts for line in text.split("\n") if word.search(line))
        times.append((time.perf_counter() - t0) * 1000)
        counts.append(n)
    return {"median_matching_lines": statistics.median(counts),
            "p50_ms": round(percentile(times, 0.5), 1)}


def percentile(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, default=Path(os.__file__).parent,
                    help="source tree (default: this Python's standard library)")
    ap.add_argument("--limit", type=int, default=0, help="only the first N files")
    ap.add_argument("--lookups", type=int, default=1000)
    args = ap.parse_args()
    OUT.mkdir(exist_ok=True)
    work = OUT / "code_index"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    db = work / "kb.sqlite"
    load = os.getloadavg()
    files = source_files(args.root, args.limit)
    print(f"root {args.root}: {len(files)} .py files; load average {load[0]:.2f}", file=sys.stderr)
    stats = build(args.root, files, db)
    full, bare = db.stat().st_size, size_without_symbols(db)
    kb = SimpleNamespace(name="stdlib", manifest={MANIFEST_KEY: VERSION},
                         store=Store(db, readonly=True))
    idx = SymbolIndex(kb)
    counts = idx.stats()
    names = [r[0] for r in idx.conn.execute("SELECT DISTINCT name FROM symbols")]
    rng = random.Random(12)
    sample = [rng.choice(names) for _ in range(args.lookups)]
    lat: dict[str, list[float]] = {"definitions": [], "callers": []}
    for name in sample:
        for what, fn in (("definitions", idx.definitions), ("callers", idx.callers)):
            t0 = time.perf_counter()
            fn(name)
            lat[what].append((time.perf_counter() - t0) * 1000)
    found, unique, misses = 0, 0, []
    for symbol, expected in HAND_PICKED:
        got = [h.where for h in idx.definitions(symbol)]
        if expected in got:
            found += 1
            unique += len(got) == 1
        else:
            misses.append((symbol, expected, got[:3]))
    grep = grep_baseline(idx, [s.rsplit(".", 1)[-1] for s, _ in HAND_PICKED])
    per_k = 1000 / max(1, stats["files"])
    result = {
        "root": str(args.root), "load_average": [round(x, 2) for x in load], **stats,
        **counts,
        "build_seconds_per_1000_files": round(stats["symbol_seconds"] * per_k, 2),
        "index_mb_per_1000_files": round((full - bare) * per_k / 1e6, 2),
        "index_mb": round((full - bare) / 1e6, 2), "kb_sqlite_mb_without_index": round(
            bare / 1e6, 2),
        "lookup_ms": {w: {"p50": round(percentile(v, 0.5), 3), "p95": round(percentile(v, 0.95),
                                                                             3)}
                      for w, v in lat.items()},
        "hand_picked": len(HAND_PICKED), "definition_found": found,
        "definition_unique": unique, "misses": misses,
        "grep_baseline": grep,
        "index_results_median": statistics.median(
            len(idx.definitions(sym)) for sym, _ in HAND_PICKED),
    }
    (OUT / "bench_code.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
