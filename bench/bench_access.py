"""Access-control benchmark (issue 10): a randomized leak probe and the cost of the filter.

Run from the repository root::

    .venv/bin/python bench/bench_access.py              # NFCorpus, 3000 probe queries
    .venv/bin/python bench/bench_access.py --quick      # 400 documents, 300 queries
    .venv/bin/python bench/bench_access.py --code-only  # just part 3 (code), quick
    .venv/bin/python bench/bench_access.py --server-only  # just part 4 (servers), quick
    .venv/bin/python bench/bench_access.py --links-only   # just part 5 (symbolic links)

Two KBs are built from the same NFCorpus documents (one ``.md`` per document)
through the real Ingestor, access declared by a ``.kbaccess`` file:

* ``most``: 90% of the documents restricted (to ``executives`` or ``hr``),
* ``few``:  10% restricted.

Embeddings: no model is loaded. Each chunk gets a deterministic pseudo-random unit
vector (seeded by its text hash). That is enough here: (1) the probe uses a
restricted chunk's *own stored vector* (plus a little noise) as the query vector,
so its nearest neighbour is the restricted chunk itself, the hardest case for the
vector filter, and (2) at NFCorpus size vector search is exact (a linear scan),
whose cost does not depend on what the vectors mean. The HNSW path (the over-fetch
loop) is timed too, by lowering the exact-search threshold to 0.

1. probe    thousands of queries built from restricted documents' own sentences
            (random sentence, random mode bm25/vector/hybrid, random k) as a caller
            without the groups; every returned chunk is checked against the store's
            access column with :func:`may_read`. Restricted chunks returned must be
            0, and a query must get ``min(k, allowed)`` hits in vector mode ("starved"
            counts the ones that got fewer). Plus kb_grep / kb_cat through the agent
            tools for distinctive words and the paths of restricted documents.
2. latency  p50/p95 of HybridSearcher.search per mode, with the filter (anonymous
            caller) and without (``principal=None``), interleaved query by query,
            on both KBs, over the NFCorpus test queries (query vectors given).

3. code     ``kbagent code`` and the agent's code tools over a synthetic source tree
            with ``secret/** executives`` (see :mod:`bench.access_code_probe`): restricted
            symbols returned must be 0; an executive's control probes must find them.

4. servers  the real ``kbagent mcp`` (stdio) and ``kbagent serve`` (HTTP, loopback,
            tokens) over the ``most`` KB and the code tree (see
            :mod:`bench.access_server_probe`): restricted chunks, symbols and paths
            returned per surface and caller must be 0; the executive must find them.

5. links    symbolic links in the source folder (file and folder links, inside and
            outside it, chains, loops; after an ingest and after a watch batch; see
            :mod:`bench.access_link_probe`): restricted bytes returned to anonymous and
            engineering callers must be 0.

Results: a table on stdout and JSON in ``bench/out/access_results.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
import tempfile
import time
import zlib
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import access_code_probe, access_link_probe, access_server_probe  # noqa: E402
from kbagent.agent.answer.citations import CitationLedger  # noqa: E402
from kbagent.agent.tools.base import ToolContext  # noqa: E402
from kbagent.agent.tools.schema import validate  # noqa: E402
from kbagent.agent.tools.toolset import registry, run_tool  # noqa: E402
from kbagent.kb import vectors as vectors_module  # noqa: E402
from kbagent.kb.access import ANONYMOUS, Principal, may_read  # noqa: E402
from kbagent.kb.ingest import Ingestor  # noqa: E402
from kbagent.kb.knowledge_base import KnowledgeBase  # noqa: E402
from kbagent.kb.search import HybridSearcher  # noqa: E402
from kbagent.settings import Settings  # noqa: E402
from tests.hash_embedder import HashEmbedder  # noqa: E402

OUT_DIR = ROOT / "bench" / "out"
DIM = 384
MODES = ("bm25", "vector", "hybrid")


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, round(q / 100 * (len(s) - 1)))]


def build_kbs(settings: Settings, docs: list[dict], work: Path) -> dict[str, set[str]]:
    """Ingest the corpus twice, as ``most`` and ``few``; return each KB's restricted paths."""
    rnd = random.Random(10)
    order = [d["_id"] for d in docs]
    rnd.shuffle(order)
    restricted: dict[str, set[str]] = {}
    for name, share in (("most", 0.9), ("few", 0.1)):
        folder = work / name
        (folder / "r").mkdir(parents=True)
        (folder / "o").mkdir(parents=True)
        cut = int(len(order) * share)
        locked = set(order[:cut])
        paths = set()
        for d in docs:
            sub = "r" if d["_id"] in locked else "o"
            group = "executives" if zlib.crc32(d["_id"].encode()) % 2 else "hr"
            front = f"---\naccess: [{group}]\n---\n" if sub == "r" and group == "hr" else ""
            (folder / sub / f"{d['_id']}.md").write_text(
                f"{front}# {d['title']}\n\n{d['text']}\n", encoding="utf-8")
            if sub == "r":
                paths.add(f"r/{d['_id']}.md")
        # front-matter (hr) wins for half the restricted files; .kbaccess covers the rest
        (folder / ".kbaccess").write_text("r/** executives\n", encoding="utf-8")
        t0 = time.perf_counter()
        rep = Ingestor(settings, name, embedder=HashEmbedder()).run(folder)
        log(f"KB {name}: {rep.chunks_total} chunks, {len(paths)} restricted documents, "
            f"ingested in {time.perf_counter() - t0:.1f}s")
        restricted[name] = paths
    return restricted


def sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if len(s.split()) >= 4]


def probe(kb: KnowledgeBase, n_queries: int, seed: int) -> dict:
    """Queries aimed at restricted documents, asked by callers without their groups."""
    rnd = random.Random(seed)
    access = kb.store.access_by_path()
    restricted = [p for p, g in access.items() if g]
    allowed_chunks = kb.chunks - len(kb.denied_chunks(ANONYMOUS))
    rows = kb.store.conn.execute(
        "SELECT c.id, d.path, c.text FROM chunks c JOIN documents d ON d.id=c.doc_id "
        "WHERE d.access != '[]'").fetchall()
    by_path: dict[str, list[tuple[int, str]]] = {}
    for cid, path, text in rows:
        by_path.setdefault(path, []).append((cid, text))
    searcher = HybridSearcher([kb])
    callers = [ANONYMOUS, Principal("sam", frozenset({"engineering"})),
               Principal(None, frozenset({"finance", "board"}))]
    leaked = starved = hits_total = 0
    per_mode = dict.fromkeys(MODES, 0)
    started = time.perf_counter()
    for _ in range(n_queries):
        path = rnd.choice(restricted)
        cid, text = rnd.choice(by_path[path])
        cands = sentences(text) or [text[:200]]
        query = rnd.choice(cands)[:300]
        mode = rnd.choice(MODES)
        k = rnd.choice((1, 5, 10, 20))
        caller = rnd.choice(callers)
        vec = kb.vectors.get([cid])[cid] + np.random.default_rng(cid).normal(0, 0.01, DIM)
        vec = (vec / np.linalg.norm(vec)).astype(np.float32)
        res = searcher.search(query, k=k, mode=mode, principal=caller,
                              query_vectors={kb.embedding_model: vec})
        per_mode[mode] += 1
        hits_total += len(res.hits)
        leaked += sum(1 for h in res.hits if not may_read(caller, access[h.path]))
        if mode == "vector" and len(res.hits) < min(k, allowed_chunks):
            starved += 1
    search_s = time.perf_counter() - started
    # tools: grep for a distinctive word of each probed document, cat its path
    ctx = ToolContext({kb.name: kb}, searcher, CitationLedger(10_000), principal=ANONYMOUS)
    tools = registry("knowledge")
    tool_calls = tool_leaks = 0
    for path in rnd.sample(restricted, min(150, len(restricted))):
        words = sorted({w for _, t in by_path[path] for w in re.findall(r"[A-Za-z]{9,}", t)})
        calls = [("kb_cat", {"path": path}), ("kb_glob", {"pattern": path.split("/")[-1]})]
        if words:
            calls.append(("kb_grep", {"pattern": rnd.choice(words), "max_matches": 100}))
        for name, args in calls:
            out, _ = run_tool(tools[name], ctx, validate(name, tools[name].parameters, args))
            tool_calls += 1
            # paths the output shows: its sources, path lines (glob), and any path in
            # the text once the caller's own arguments (echoed in "no file 'X'") are cut
            text = out.text
            for v in args.values():
                text = text.replace(str(v), "")
            shown = ({s.path for s in out.sources}
                     | {ln.strip() for ln in out.text.splitlines()}
                     | set(re.findall(r"[ro]/MED-\d+\.md", text)))
            tool_leaks += sum(1 for p in shown if access.get(p))
    return {"queries": n_queries, "per_mode": per_mode, "hits_returned": hits_total,
            "restricted_chunks_returned": leaked, "vector_queries_starved": starved,
            "tool_calls": tool_calls, "tool_restricted_paths_shown": tool_leaks,
            "search_seconds": round(search_s, 1)}


def latency(kb: KnowledgeBase, queries: list[str], k: int = 10) -> dict:
    emb = HashEmbedder()
    vecs = emb.encode(queries)
    searcher = HybridSearcher([kb])
    out = {}
    for mode in MODES:
        times: dict[str, list[float]] = {"filtered": [], "unfiltered": []}
        for i, (q, v) in enumerate(zip(queries, vecs, strict=True)):
            order = ("filtered", "unfiltered") if i % 2 else ("unfiltered", "filtered")
            for which in order:
                principal = ANONYMOUS if which == "filtered" else None
                t0 = time.perf_counter()
                searcher.search(q, k=k, mode=mode, principal=principal,
                                query_vectors={kb.embedding_model: v})
                times[which].append((time.perf_counter() - t0) * 1000)
        row = {w: {"p50_ms": round(pct(t, 50), 2), "p95_ms": round(pct(t, 95), 2)}
               for w, t in times.items()}
        row["p50_ratio"] = round(row["filtered"]["p50_ms"] / row["unfiltered"]["p50_ms"], 2)
        out[mode] = row
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="400 documents, 300 probe queries")
    ap.add_argument("--queries", type=int, default=0, help="probe queries (default 3000)")
    ap.add_argument("--data", type=Path, default=Path("/work/shared/data"))
    ap.add_argument("--code-only", action="store_true", help="only the code probe (part 3)")
    ap.add_argument("--code-modules", type=int, default=300, help="modules in the code tree")
    ap.add_argument("--code-probes", type=int, default=600, help="code probes")
    ap.add_argument("--server-only", action="store_true",
                    help="only the server probe (part 4)")
    ap.add_argument("--server-docs", type=int, default=400,
                    help="with --server-only: documents per KB (0: all)")
    ap.add_argument("--server-probes", type=int, default=60,
                    help="server probes per caller (half documents, half code)")
    ap.add_argument("--server-asks", type=int, default=4,
                    help="'ask' calls per caller (scripted LLM)")
    ap.add_argument("--links-only", action="store_true", help="only the links probe (part 5)")
    ap.add_argument("--link-docs", type=int, default=60, help="documents per kind, links probe")
    args = ap.parse_args()
    if args.code_only:
        run_code_only(args)
        return
    if args.links_only:
        run_links_only(args)
        return
    if args.server_only:
        run_server_only(args)
        return
    n_queries = args.queries or (300 if args.quick else 3000)
    docs = [json.loads(line) for line in
            (args.data / "nfcorpus" / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
            if line.strip()]
    docs = [d for d in docs if d["text"].strip()]
    if args.quick:
        docs = docs[:400]
    queries = [json.loads(line)["text"] for line in
               (args.data / "nfcorpus" / "queries.jsonl").read_text(encoding="utf-8")
               .splitlines() if line.strip()][: 100 if args.quick else 323]
    load = os.getloadavg()
    results: dict = {"documents": len(docs), "load_avg_start": [round(x, 2) for x in load]}
    with tempfile.TemporaryDirectory(prefix="bench_access_") as tmp:
        work = Path(tmp)
        settings = Settings.load(home=work / "home")
        build_kbs(settings, docs, work / "src")
        for name in ("most", "few"):
            kb = KnowledgeBase(settings, name)
            r = {"chunks": kb.chunks, "restricted_chunks": len(kb.denied_chunks(ANONYMOUS))}
            n = n_queries if name == "most" else n_queries // 3
            log(f"probe {name}: {n} queries")
            r["probe"] = probe(kb, n, seed=1)
            log(f"latency {name} (exact vector search)")
            r["latency_exact"] = latency(kb, queries)
            saved = vectors_module.EXACT_BELOW
            vectors_module.EXACT_BELOW = 0  # the HNSW graph + over-fetch loop
            try:
                log(f"latency {name} (HNSW vector search)")
                r["latency_hnsw_vector"] = latency(kb, queries)["vector"]
                r["probe_hnsw"] = probe(kb, n_queries // 3, seed=2)
            finally:
                vectors_module.EXACT_BELOW = saved
            results[name] = r
            kb.close()
        log("code probe")
        results["code"] = access_code_probe.run(work, HashEmbedder(), args.code_modules,
                                                0.5, args.code_probes)
        log("server probe")
        results["server"] = server_probe(settings, work, args)
        log("links probe")
        results["links"] = access_link_probe.run(work, HashEmbedder(), args.link_docs)
    results["load_avg_end"] = [round(x, 2) for x in os.getloadavg()]
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    (OUT_DIR / "access_results.json").write_text(json.dumps(results, indent=2))
    print_table(results)


def run_code_only(args: argparse.Namespace) -> None:
    results: dict = {"load_avg_start": [round(x, 2) for x in os.getloadavg()]}
    with tempfile.TemporaryDirectory(prefix="bench_access_code_") as tmp:
        results["code"] = access_code_probe.run(Path(tmp), HashEmbedder(), args.code_modules,
                                                0.5, args.code_probes)
    results["load_avg_end"] = [round(x, 2) for x in os.getloadavg()]
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    (OUT_DIR / "access_code_results.json").write_text(json.dumps(results, indent=2))
    print(f"load average start {results['load_avg_start']}, end {results['load_avg_end']}")
    access_code_probe.print_code(results["code"])


def run_links_only(args: argparse.Namespace) -> None:
    results: dict = {"load_avg_start": [round(x, 2) for x in os.getloadavg()]}
    with tempfile.TemporaryDirectory(prefix="bench_access_links_") as tmp:
        results["links"] = access_link_probe.run(Path(tmp), HashEmbedder(), args.link_docs)
    results["load_avg_end"] = [round(x, 2) for x in os.getloadavg()]
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    (OUT_DIR / "access_links_results.json").write_text(json.dumps(results, indent=2))
    print(f"load average start {results['load_avg_start']}, end {results['load_avg_end']}")
    access_link_probe.print_links(results["links"])


def server_probe(settings: Settings, work: Path, args: argparse.Namespace) -> dict:
    """The code tree ingested as KB ``code`` next to ``most``/``few``; both servers probed."""
    secret = access_code_probe.build(settings, work, HashEmbedder(), args.code_modules, 0.5)
    return access_server_probe.run(settings.home, "most", secret, args.server_probes,
                                   args.server_asks)


def run_server_only(args: argparse.Namespace) -> None:
    docs = [json.loads(line) for line in
            (args.data / "nfcorpus" / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
            if line.strip()]
    docs = [d for d in docs if d["text"].strip()][:args.server_docs or None]
    results: dict = {"documents": len(docs),
                     "load_avg_start": [round(x, 2) for x in os.getloadavg()]}
    with tempfile.TemporaryDirectory(prefix="bench_access_server_") as tmp:
        work = Path(tmp)
        settings = Settings.load(home=work / "home")
        build_kbs(settings, docs, work / "src")
        results["server"] = server_probe(settings, work, args)
    results["load_avg_end"] = [round(x, 2) for x in os.getloadavg()]
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    (OUT_DIR / "access_server_results.json").write_text(json.dumps(results, indent=2))
    print(f"documents: {results['documents']}; load average start "
          f"{results['load_avg_start']}, end {results['load_avg_end']}")
    access_server_probe.print_server(results["server"])


def print_table(r: dict) -> None:
    print(f"documents: {r['documents']}; load average start {r['load_avg_start']}, "
          f"end {r['load_avg_end']}")
    for name in ("most", "few"):
        x = r[name]
        p, ph = x["probe"], x["probe_hnsw"]
        print(f"\nKB '{name}': {x['chunks']} chunks, {x['restricted_chunks']} restricted")
        print(f"  probe (exact): {p['queries']} queries, {p['hits_returned']} hits, restricted "
              f"returned {p['restricted_chunks_returned']}, vector starved "
              f"{p['vector_queries_starved']}; tools {p['tool_calls']} calls, restricted "
              f"paths shown {p['tool_restricted_paths_shown']}")
        print(f"  probe (hnsw):  {ph['queries']} queries, restricted returned "
              f"{ph['restricted_chunks_returned']}, vector starved "
              f"{ph['vector_queries_starved']}")
        print("  mode     unfiltered p50/p95 ms   filtered p50/p95 ms   p50 ratio")
        rows = [*x["latency_exact"].items(), ("vector/hnsw", x["latency_hnsw_vector"])]
        for mode, row in rows:
            u, f = row["unfiltered"], row["filtered"]
            print(f"  {mode:<12} {u['p50_ms']:>7.2f} / {u['p95_ms']:<8.2f}   "
                  f"{f['p50_ms']:>7.2f} / {f['p95_ms']:<8.2f}   {row['p50_ratio']:.2f}x")
    if "code" in r:
        access_code_probe.print_code(r["code"])
    if "server" in r:
        access_server_probe.print_server(r["server"])
    if "links" in r:
        access_link_probe.print_links(r["links"])


if __name__ == "__main__":
    main()
