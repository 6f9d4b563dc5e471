"""Starvation probe of ``kbagent serve`` (issue 45, finding 3), on loopback only.

The real server runs in a subprocess (``kbagent serve`` on 127.0.0.1 and a free port,
the scripted LLM standing in for the model: tests/scripted_kbagent.py; a question with
SLOW streams a long answer slowly) over the sample KB, with ``--callers`` bearer tokens.

Phases:
  idle     ``--clients`` MCP clients x ``--searches`` searches each, nothing else running;
  hung     the same searches while ``--asks`` asks are in flight whose clients never read
           a byte (spread over the callers; connections left open): the server admits
           at most ``serve_max_asks`` of them and answers the rest "server busy" at once;
  gone     those clients close their connections without a word (no MCP cancel): the
           time until every admitted ask was cancelled and its slot freed, then the
           searches again.
Reported: search p50/p95/max per phase, the hung/idle p95 ratio (the goal: at most 2),
search errors and timeouts, the asks admitted and refused, the server's thread count
(``Threads`` in /proc/PID/status) and resident memory (VmRSS) before, during and after.

Usage: python -m bench.bench_serve_starve [--asks 50] [--callers 10] [--clients 4]
       [--searches 25] [--search-timeout 60] [--home DIR] [--out FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.bench_serve import QUERIES, git_commit, pct, summary, uptime

ROOT = Path(__file__).resolve().parent.parent


def proc_status(pid: int) -> dict[str, float]:
    out: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key == "Threads":
            out["threads"] = int(value)
        elif key == "VmRSS":
            out["rss_mb"] = round(int(value.split()[0]) / 1024, 1)
    return out


async def searches(url: str, clients: int, n: int, timeout: float
                   ) -> tuple[list[float], list[str]]:
    from tests.server_support import http_client

    lat: list[float] = []
    errors: list[str] = []

    async def one_client(offset: int) -> None:
        async with http_client(url) as c:
            for i in range(n):
                q = QUERIES[(offset + i) % len(QUERIES)]
                t = time.perf_counter()
                try:
                    res = await asyncio.wait_for(c.call_tool("search", {"query": q, "k": 5}),
                                                 timeout)
                    if res.is_error or not res.structured_content["hits"]:
                        errors.append(f"search {q!r}: error result")
                except TimeoutError:
                    errors.append(f"search {q!r}: no answer in {timeout:.0f} s")
                except Exception as e:
                    errors.append(f"search {q!r}: {e!r}"[:200])
                lat.append((time.perf_counter() - t) * 1000)

    await asyncio.gather(*(one_client(i * 7) for i in range(clients)))
    return lat, errors


def health(url: str) -> dict[str, Any]:
    import httpx2

    return dict(httpx2.get(url + "/health", timeout=60).json())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--asks", type=int, default=50)
    ap.add_argument("--callers", type=int, default=10)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--searches", type=int, default=25)
    ap.add_argument("--search-timeout", type=float, default=60.0)
    ap.add_argument("--home", type=Path, default=None)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    if not (1 <= args.asks <= 200 and 1 <= args.callers <= 50
            and args.clients * args.searches <= 1000):
        raise SystemExit("keep it bounded: 1..200 asks, 1..50 callers, 1000 searches a phase")

    from kbagent.server.auth import add_token
    from tests.server_support import http_server
    from tests.test_serve_limits import hung_ask, mcp_session

    tmp = Path(tempfile.mkdtemp(prefix="kbagent-bench-starve-"))
    home = args.home or tmp / "home"
    if args.home is None:
        from kbagent.kb.ingest import Ingestor
        from kbagent.settings import Settings

        Ingestor(Settings.load(home=home), "sample").run(ROOT / "sample_kb")
    (home / "tokens.toml").unlink(missing_ok=True)
    tokens = [add_token(home / "tokens.toml", f"bench-{i}", groups=frozenset({"engineering"}))
              for i in range(args.callers)]
    log = tmp / "serve.err"
    load_before = uptime()
    procs: list[Any] = []
    report: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
                              "git_commit": git_commit(), "asks": args.asks,
                              "callers": args.callers, "clients": args.clients,
                              "searches_per_client": args.searches}
    with http_server(home, "--kb", "sample", log=log, procs=procs) as url:
        pid = procs[0].pid
        asyncio.run(searches(url, 2, 10, args.search_timeout))  # warm-up: embedder, KB
        report["server_before"] = proc_status(pid)
        idle, idle_err = asyncio.run(searches(url, args.clients, args.searches,
                                              args.search_timeout))
        sessions = [mcp_session(url, tok) for tok in tokens]
        with contextlib.ExitStack() as hung:
            t = time.perf_counter()
            for i in range(args.asks):
                hung.enter_context(hung_ask(url, sessions[i % len(sessions)], i + 1))
            report["asks_opened_s"] = round(time.perf_counter() - t, 2)
            time.sleep(1.0)
            report["health_hung"] = {k: v for k, v in health(url).items()
                                     if k.startswith(("asks", "max_"))}
            # an ask not admitted was answered "server busy" at once
            report["asks_refused"] = args.asks - report["health_hung"].get("asks", args.asks)
            report["server_hung"] = proc_status(pid)
            during, during_err = asyncio.run(searches(url, args.clients, args.searches,
                                                      args.search_timeout))
            report["server_hung_after_searches"] = proc_status(pid)
            t = time.perf_counter()
        freed = None
        while time.perf_counter() - t < 120:
            h = health(url)
            if h.get("asks", h.get("asks_waiting", 0)) == 0:
                freed = round((time.perf_counter() - t) * 1000)
                break
            time.sleep(0.05)
        report["slots_freed_ms"] = freed
        report["asks_cancelled"] = log.read_text().count("ask cancelled; the run stopped")
        after, after_err = asyncio.run(searches(url, args.clients, args.searches,
                                                args.search_timeout))
        report["server_after"] = proc_status(pid)
        time.sleep(12)  # anyio lets an idle worker thread go after 10 s
        report["server_after_idle_12s"] = proc_status(pid)
    report |= {
        "loadavg_before": load_before, "loadavg_after": uptime(),
        "idle_search": summary(idle), "hung_search": summary(during),
        "gone_search": summary(after),
        "hung_over_idle_p95": round(pct(during, .95) / pct(idle, .95), 2),
        "gone_over_idle_p95": round(pct(after, .95) / pct(idle, .95), 2),
        "search_errors": {"idle": len(idle_err), "hung": len(during_err),
                          "gone": len(after_err)},
        "errors_sample": (idle_err + during_err + after_err)[:5],
    }
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
