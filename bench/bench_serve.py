"""Load test of ``kbagent serve`` on loopback (issue 23), bounded in count and time.

The real server runs in a subprocess (``kbagent serve`` on 127.0.0.1 and a free port,
the scripted LLM standing in for the model: tests/scripted_kbagent.py) over the sample
KB; clients are the MCP SDK's streamable HTTP client, one MCP session each.

Phases, side by side in one run:
  A. ``--clients`` clients x ``--searches`` searches each, all at once (searches alone);
  B. the same searches again while ``--asks`` clients ask one question each (asks queue
     for the one LLM; the scripted model streams each answer at ``--piece-delay`` s per
     piece, so an ask takes about a second);
  C. ``--cancels`` asks cancelled by the client while the model generates: how long
     after the client's cancel the server's run stopped (read from the server's log).
Reported: p50/p95/max per tool and phase, errors, the B/A ratio of search latency, the
server's resident memory (VmRSS) after warm-up, after A and after B.

Usage: python -m bench.bench_serve [--clients 20] [--searches 50] [--asks 5]
       [--cancels 5] [--home DIR (a home that already holds the KB 'sample')] [--out F]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
QUERIES = ["retry backoff", "prompt cache TTL", "rate limit per tenant", "gross margin Q3",
           "on-call compensation", "expense policy travel", "EU cache eviction incident",
           "circuit breaker fallback", "remote work policy", "board deck revenue",
           "API reference pagination", "default limits yaml", "cache key hashing",
           "PTO carry over", "security and compliance SOC 2", "Tokyo office",
           "leadership sync decisions", "Q4 forecast draft", "configuration guide", "timeouts"]


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, round(q * (len(values) - 1)))]


def summary(values: list[float]) -> dict[str, float]:
    return {"n": len(values), "p50_ms": round(pct(values, 0.5), 1),
            "p95_ms": round(pct(values, 0.95), 1), "max_ms": round(max(values or [0]), 1),
            "mean_ms": round(statistics.fmean(values), 1) if values else 0.0}


async def searcher(url: str, n: int, offset: int, out: list[float], errors: list[str]) -> None:
    from tests.server_support import http_client

    async with http_client(url) as c:
        for i in range(n):
            q = QUERIES[(offset + i) % len(QUERIES)]
            t = time.perf_counter()
            try:
                res = await c.call_tool("search", {"query": q, "k": 5})
                if res.is_error or not res.structured_content["hits"]:
                    errors.append(f"search {q!r}: {res.content[0].text[:200]}")
            except Exception as e:
                errors.append(f"search {q!r}: {e!r}"[:300])
            out.append((time.perf_counter() - t) * 1000)


async def asker(url: str, question: str, out: list[float], errors: list[str]) -> None:
    from tests.server_support import http_client

    async with http_client(url) as c:
        t = time.perf_counter()
        try:
            res = await c.call_tool("ask", {"question": question, "mode": "agent"})
            if res.is_error or res.structured_content["status"] != "answered":
                errors.append(f"ask: {res.content[0].text[:200]}")
        except Exception as e:
            errors.append(f"ask: {e!r}"[:300])
        out.append((time.perf_counter() - t) * 1000)


async def cancel_one(url: str, log: Path) -> float:
    """Cancel an ask while the model generates; ms until the server's run stopped."""
    from tests.server_support import http_client

    before = log.read_text().count("the run stopped")
    async with http_client(url) as c:
        generating = asyncio.Event()

        async def progress(value: float, total: float | None, message: str | None) -> None:
            if (message or "").endswith(": llm"):
                generating.set()

        task = asyncio.create_task(c.call_tool("ask", {"question": "Why? SLOW"},
                                               progress_callback=progress))
        await asyncio.wait_for(generating.wait(), 120)
        await asyncio.sleep(0.2)
        task.cancel()
        t = time.perf_counter()
        await asyncio.gather(task, return_exceptions=True)
        while log.read_text().count("the run stopped") <= before:
            if time.perf_counter() - t > 30:
                return float("nan")
            await asyncio.sleep(0.005)
        return (time.perf_counter() - t) * 1000


async def load(url: str, clients: int, searches: int, asks: int,
               ) -> tuple[list[float], list[float], list[str]]:
    s_lat: list[float] = []
    a_lat: list[float] = []
    errors: list[str] = []
    jobs = [searcher(url, searches, i * 7, s_lat, errors) for i in range(clients)]
    jobs += [asker(url, f"What does the KB say about {QUERIES[i]}?", a_lat, errors)
             for i in range(asks)]
    await asyncio.gather(*jobs)
    return s_lat, a_lat, errors


def git_commit() -> str:
    import subprocess

    return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True).stdout.strip()


def uptime() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", type=int, default=20)
    ap.add_argument("--searches", type=int, default=50)
    ap.add_argument("--asks", type=int, default=5)
    ap.add_argument("--cancels", type=int, default=5)
    ap.add_argument("--piece-delay", type=float, default=0.005)
    ap.add_argument("--home", type=Path, default=None)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    if min(args.clients, args.searches) < 1 or args.clients * args.searches > 5000:
        raise SystemExit("keep it bounded: 1..5000 searches in all")

    from tests.server_support import http_server

    tmp = Path(tempfile.mkdtemp(prefix="kbagent-bench-serve-"))
    home = args.home or tmp / "home"
    if args.home is None:
        from kbagent.kb.ingest import Ingestor
        from kbagent.settings import Settings

        Ingestor(Settings.load(home=home), "sample").run(ROOT / "sample_kb")
    log = tmp / "serve.err"
    load_before = uptime()
    os.environ["KBAGENT_HOME"] = str(home)
    procs: list[Any] = []
    with http_server(home, "--kb", "sample", delay=args.piece_delay, log=log,
                     procs=procs) as url:
        pid = procs[0].pid
        asyncio.run(load(url, 1, 3, 1))  # warm-up: embedder, KB, LLM
        mem = {"after_warmup_mb": round(rss_mb(pid), 1)}
        t = time.perf_counter()
        a_search, _, a_err = asyncio.run(load(url, args.clients, args.searches, 0))
        a_wall = time.perf_counter() - t
        mem["after_A_mb"] = round(rss_mb(pid), 1)
        t = time.perf_counter()
        b_search, b_ask, b_err = asyncio.run(load(url, args.clients, args.searches, args.asks))
        b_wall = time.perf_counter() - t
        mem["after_B_mb"] = round(rss_mb(pid), 1)
        cancels = [asyncio.run(cancel_one(url, log)) for _ in range(args.cancels)]
        mem["after_C_mb"] = round(rss_mb(pid), 1)
    report: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "git_commit": git_commit(),
        "loadavg_before": load_before, "loadavg_after": uptime(),
        "clients": args.clients, "searches_per_client": args.searches, "asks": args.asks,
        "A_search": summary(a_search), "A_wall_s": round(a_wall, 1),
        "A_searches_per_s": round(len(a_search) / a_wall, 1), "A_errors": len(a_err),
        "B_search": summary(b_search), "B_ask": summary(b_ask), "B_wall_s": round(b_wall, 1),
        "B_errors": len(b_err),
        "B_over_A_search_p50": round(pct(b_search, .5) / pct(a_search, .5), 2),
        "B_over_A_search_p95": round(pct(b_search, .95) / pct(a_search, .95), 2),
        "cancel_ms": summary([c for c in cancels if c == c]),
        "cancel_failed": sum(1 for c in cancels if c != c), "memory": mem,
        "errors_sample": (a_err + b_err)[:5],
    }
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
