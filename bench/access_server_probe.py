"""The server half of the access benchmark (issue 20): ``kbagent mcp`` (stdio) and
``kbagent serve`` (streamable HTTP on 127.0.0.1), probed for restricted content.

The real servers run in subprocesses against a KB home holding the document KBs
``bench_access`` builds (``most``/``few``: ``r/**`` restricted) and the synthetic code
tree of :mod:`bench.access_code_probe` (``secret/**`` restricted), ingested as KB
``code``. They run through ``tests/scripted_kbagent.py`` (the real CLI, with the
scripted LLM that pastes every observation it sees into its answer standing in for
the model), so ``ask`` costs no model time and would show anything the agent saw.

Callers: on stdio, one server per caller (anonymous, ``--groups engineering``, and
``--groups executives,hr`` as the control: half the restricted documents are ``hr``
by front-matter); over HTTP, one server with a tokens file and three callers (no
token = anonymous, an ``engineering`` token, an ``executives,hr`` token). Every
caller runs the same probes: MCP tools ``search`` (a restricted document's own
sentence, or a restricted symbol's name, random mode and k), ``read``,
``code_definition``, ``code_references``, ``list_kbs``, ``ask`` (a few), and the
``kbagent://`` resources (list, and read of restricted documents' URIs).

A result leaks when, once what the caller typed is cut out, it shows a restricted
path (``r/MED-*.md``, ``secret/m*.py``), a sentence found only in the probed
restricted document, or a secret module's definition or constant
(:func:`bench.access_code_probe.leaks`). The executive's count of results showing
restricted content is the control (the probe is not vacuous).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.access_code_probe import leaks as code_leaks
from tests.server_support import command as server_command
from tests.server_support import http_server, server_env

ROOT = Path(__file__).resolve().parent.parent
CALLERS = ("anonymous", "engineering", "executives")
DOC_PATH = re.compile(r"\br/MED-\d+\.md")


def command(*args: str, kbs: tuple[str, ...] = ()) -> list[str]:
    """The real CLI with the scripted LLM, serving only ``kbs`` (``few`` holds the same
    documents as ``most`` with other access: its public copies are not leaks)."""
    return server_command(*args, *[a for kb in kbs for a in ("--kb", kb)])


def sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if len(s.split()) >= 6]


def plan(home: Path, doc_kb: str, secret: set[int], n_probes: int, n_asks: int,
         seed: int = 11) -> tuple[list[tuple[str, Any, str, list[str]]], str]:
    """The probes, the same for every caller: (op, args, typed, markers), and the text of
    the public documents (a marker must not occur there)."""
    from kbagent.kb.knowledge_base import KnowledgeBase
    from kbagent.settings import Settings

    kb = KnowledgeBase(Settings.load(home=home), doc_kb)
    rows = kb.store.conn.execute(
        "SELECT d.path, d.access, c.text FROM chunks c JOIN documents d ON d.id=c.doc_id"
    ).fetchall()
    kb.close()
    public = "\n".join(" ".join(t.split()) for _, a, t in rows if a == "[]")
    by_path: dict[str, list[str]] = {}
    for path, access, text in rows:
        if access != "[]":
            by_path.setdefault(path, []).append(" ".join(text.split()))
    rnd = random.Random(seed)
    ops: list[tuple[str, Any, str, list[str]]] = []
    restricted_docs = sorted(by_path)
    modules = sorted(secret)
    for j in range(n_probes):
        if j % 2 == 0:  # a restricted document
            path = rnd.choice(restricted_docs)
            sents = [s for t in by_path[path] for s in sentences(t)] or by_path[path]
            query = rnd.choice(sents)[:300]
            markers = [s for s in sents if s != query and s not in public][:3]
            mode = rnd.choice(("hybrid", "bm25", "vector"))
            ops.append(("search", {"query": query, "k": rnd.choice((5, 10, 20)), "mode": mode},
                        query, markers))
            ops.append(("read", {"path": path, **({"kb": doc_kb} if j % 4 else {})}, path,
                        markers))
            ops.append(("resource", f"kbagent://{doc_kb}/{path}", path, markers))
        else:  # a restricted module of the code KB
            i = rnd.choice(modules)
            name = rnd.choice([f"fn_{i}", f"Const_{i}", f"Klass{i}.method_{i}", f"helper_{i}",
                               f"method_{i}"])
            tool = rnd.choice(("code_definition", "code_references"))
            ops.append((tool, {"symbol": name}, name, []))
            ops.append(("search", {"query": f"{name} definition", "k": 10,
                                   "mode": rnd.choice(("hybrid", "bm25"))}, name, []))
            target = f"secret/m{i:04d}.py"
            ops.append(("read", {"path": target, "kb": "code"}, target, []))
            ops.append(("resource", f"kbagent://code/{target}", target, []))
    ops.append(("list_kbs", {}, "", []))
    ops.append(("resources/list", None, "", []))
    for _ in range(n_asks):
        path = rnd.choice(restricted_docs)
        sents = [s for t in by_path[path] for s in sentences(t)] or by_path[path]
        q = rnd.choice(sents)[:300]
        ops.append(("ask", {"question": q, "mode": "agent"}, q,
                    [s for s in sents if s != q and s not in public][:3]))
    return ops, public


def dump(result: Any) -> str:
    parts = [c.text for c in result.content if hasattr(c, "text")]
    return "\n".join(parts) + json.dumps(result.structured_content or {}, ensure_ascii=False)


async def run_ops(client: Any, ops: list[tuple[str, Any, str, list[str]]]) -> list[str]:
    """Every probe through one connected client; the text each returned (errors too)."""
    out = []
    for op, args, _, _ in ops:
        try:
            if op == "resource":
                got = await client.read_resource(args)
                text = json.dumps(got.model_dump(mode="json"), ensure_ascii=False)
            elif op == "resources/list":
                listed = (await client.list_resources()).resources
                text = "\n".join(f"{r.uri} {r.name}" for r in listed)
            else:
                text = dump(await client.call_tool(op, args))
        except Exception as e:  # the SDK raises the server's error (a missing resource)
            text = "error: " + str(e)
        out.append(text)
    return out


def count(text: str, op: Any, typed: str, markers: list[str], secret: set[int]) -> int:
    """Restricted things ``text`` shows once what the caller typed is cut out."""
    cut = text.replace(f"kbagent://{typed}", "").replace(typed, "")
    if isinstance(op, str) and op.startswith("kbagent://"):
        cut = cut.replace(op, "")
    cut = re.sub(r"\s+", " ", cut.replace("\\n", " "))
    found = set(DOC_PATH.findall(cut)) | {m for m in markers if m in cut}
    return len(found) + code_leaks(cut, typed, secret)


def stdio_calls(home: Path, doc_kb: str, flags: list[str], ops: list) -> list[str]:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    cmd = command("mcp", *flags, kbs=(doc_kb, "code"))

    async def go() -> list[str]:
        params = StdioServerParameters(command=cmd[0], args=cmd[1:], cwd=str(ROOT),
                                       env=server_env(home))
        with open(os.devnull, "w") as err:
            async with Client(stdio_client(params, errlog=err)) as client:
                return await run_ops(client, ops)

    return asyncio.run(go())


def add_token(home: Path, name: str, group: str) -> str:
    res = subprocess.run([sys.executable, "-m", "kbagent", "serve", "token", "add", name,
                          "--groups", group], cwd=ROOT, env=server_env(home), capture_output=True,
                         text=True, timeout=120, check=True)
    return res.stdout.strip()


def http_calls(home: Path, doc_kb: str, ops: list) -> dict[str, list[str]]:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    tokens = {"anonymous": None, "engineering": add_token(home, "bench-eng", "engineering"),
              "executives": add_token(home, "bench-exec", "executives,hr")}
    with http_server(home, "--host", "127.0.0.1", "--kb", doc_kb, "--kb", "code") as url:
        async def go(token: str | None) -> list[str]:
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60, read=120))
            async with Client(streamable_http_client(url + "/mcp", http_client=http)) as c:
                return await run_ops(c, ops)

        return {who: asyncio.run(go(tok)) for who, tok in tokens.items()}


def run(home: Path, doc_kb: str, secret: set[int], n_probes: int = 60,
        n_asks: int = 4) -> dict[str, Any]:
    """Probe both servers as every caller; per surface and caller: calls, restricted
    things returned (the executive's: results that showed restricted content)."""
    ops, _ = plan(home, doc_kb, secret, n_probes, n_asks)
    started = time.perf_counter()
    texts: dict[str, dict[str, list[str]]] = {"stdio": {}}
    flags = {"anonymous": [], "engineering": ["--groups", "engineering"],
             "executives": ["--groups", "executives,hr"]}
    for who in CALLERS:
        texts["stdio"][who] = stdio_calls(home, doc_kb, flags[who], ops)
    texts["http"] = http_calls(home, doc_kb, ops)
    out: dict[str, Any] = {"probes": len(ops), "rows": []}
    for surface, by_caller in texts.items():
        for who, got in by_caller.items():
            per_op: dict[str, list[int]] = {}
            for (op, args, typed, markers), text in zip(ops, got, strict=True):
                n = count(text, args, typed, markers, secret)
                row = per_op.setdefault(op, [0, 0])
                row[0] += 1
                row[1] += (n > 0) if who == "executives" else n
            listed = re.search(rf'"name": "{doc_kb}", "documents": (\d+)', got[ops.index(
                next(o for o in ops if o[0] == "list_kbs"))])
            out["rows"].append({"surface": surface, "caller": who, "per_op": per_op,
                                "list_kbs_documents": int(listed[1]) if listed else None,
                                "calls": sum(v[0] for v in per_op.values()),
                                "restricted": sum(v[1] for v in per_op.values())})
    out["seconds"] = round(time.perf_counter() - started, 1)
    return out


def print_server(r: dict[str, Any]) -> None:
    print(f"\nservers (kbagent mcp over stdio, kbagent serve over HTTP on 127.0.0.1): "
          f"{r['probes']} probes per caller; {r['seconds']} s")
    ops = list(r["rows"][0]["per_op"])
    print("  surface caller        " + " ".join(f"{o:>15}" for o in ops) + "    total")
    for row in r["rows"]:
        what = "found" if row["caller"] == "executives" else "leaked"
        cells = " ".join(f"{row['per_op'][o][1]:>7}/{row['per_op'][o][0]:<7}" for o in ops)
        print(f"  {row['surface']:<7} {row['caller']:<12} {cells}  {what} "
              f"{row['restricted']}/{row['calls']}; list_kbs documents "
              f"{row['list_kbs_documents']}")
