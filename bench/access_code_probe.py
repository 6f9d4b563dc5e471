"""The code half of the access benchmark (issue 20): ``kbagent code`` and the agent's
code tools, probed by callers without the group, must return 0 restricted symbols.

A synthetic source tree (no public corpus of code with access rules exists): ``n``
Python modules, a share of them under ``secret/`` restricted to ``executives`` by
``.kbaccess``. Every module defines names of its own (``fn_<i>``, ``Const_<i>``,
``Klass<i>.method_<i>``) and calls helpers defined elsewhere, public and secret, so
public and restricted files reference each other's names. Probes, as the anonymous
caller and as ``engineering``:

* the symbol index itself (definitions, references, callers, outline),
* the CLI (``kbagent code def|refs|callers|outline``, Typer's CliRunner, text and JSON),
* the agent tools (``code_definition``, ``code_references``, ``code_callers``,
  ``code_outline``), with the citation ledger checked too.

A result leaks when it shows a restricted path, or a name defined only in restricted
files that the caller did not type, or a restricted constant's value. An executive
runs the same probes as the control: its results must include restricted symbols
(the probe is not vacuous). A denied outline must read exactly like a missing one.
"""

from __future__ import annotations

import json
import os
import random
import re
import time
from pathlib import Path
from typing import Any

from kbagent.agent.answer.citations import CitationLedger
from kbagent.agent.tools.base import ToolContext
from kbagent.agent.tools.schema import validate
from kbagent.agent.tools.toolset import registry, run_tool
from kbagent.kb.access import ANONYMOUS, Principal
from kbagent.kb.ingest import Ingestor
from kbagent.kb.knowledge_base import KnowledgeBase
from kbagent.kb.search import HybridSearcher
from kbagent.kb.symbol_index import SymbolIndex
from kbagent.settings import Settings

EXEC = Principal("maya", frozenset({"executives"}))
CALLERS = [(ANONYMOUS, []), (Principal("sam", frozenset({"engineering"})),
                             ["--groups", "engineering"])]


def module(i: int, secret: bool, n: int, rnd: random.Random) -> str:
    calls = [rnd.randrange(n) for _ in range(3)]
    value = 900_000 + i
    return (f'"""Module {i}."""\n\n'
            f"Const_{i} = {value}\n\n\n"
            f"def fn_{i}(x):\n"
            f"    return helper_{calls[0]}(x) + fn_{calls[1]}(Const_{i})\n\n\n"
            f"class Klass{i}:\n"
            f"    def method_{i}(self):\n"
            f"        return fn_{calls[2]}(self)\n\n\n"
            f"def helper_{i}(y):\n"
            f"    return y * {2 if secret else 3}\n")


def build(settings: Settings, work: Path, embedder: Any, n: int, share: float) -> set[int]:
    """Write and ingest the tree as KB ``code``; return the restricted module numbers."""
    rnd = random.Random(20)
    secret = set(rnd.sample(range(n), int(n * share)))
    root = work / "code_src"
    for i in range(n):
        sub = "secret" if i in secret else "pub"
        p = root / sub / f"m{i:04d}.py"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(module(i, i in secret, n, rnd), encoding="utf-8")
    (root / ".kbaccess").write_text("secret/** executives\n", encoding="utf-8")
    Ingestor(settings, "code", embedder=embedder).run(root)
    return secret


def path_of(i: int, secret: set[int]) -> str:
    return f"{'secret' if i in secret else 'pub'}/m{i:04d}.py"


def leaks(text: str, typed: str, secret: set[int]) -> int:
    """Restricted things in ``text`` once what the caller typed is cut out: paths under
    ``secret/``, a secret module's definition lines (each name is defined in one module
    only; public modules do *call* secret names, which is public text) and its constant's
    value."""
    text = text.replace(typed, "")
    found = set(re.findall(r"secret/m\d{4}\.py", text))
    defined = (r"(?:(?:def|function|method) (?:Klass\d+\.)?(?:fn|helper|method)_"
               r"|class Klass|Const_)(\d+)\b")
    for m in re.findall(defined, text):
        if int(m) in secret:
            found.add(f"def {m}")
    found |= {v for v in re.findall(r"\b9\d{5}\b", text) if int(v) - 900_000 in secret}
    return len(found)


def probe(settings: Settings, secret: set[int], n: int, n_probes: int) -> dict[str, Any]:
    from typer.testing import CliRunner

    from kbagent.cli import app

    rnd = random.Random(7)
    kb = KnowledgeBase(settings, "code")
    runner = CliRunner()
    tools = registry("full")
    restricted, public = sorted(secret), sorted(set(range(n)) - secret)
    out: dict[str, Any] = {"modules": n, "restricted_modules": len(secret)}
    counts = {"index": [0, 0], "cli": [0, 0], "tools": [0, 0]}  # [calls, leaks]
    control = {"index": 0, "cli": 0, "tools": 0}  # executive results showing secret code
    denied_like_missing = [0, 0]
    started = time.perf_counter()
    for j in range(n_probes):
        i = rnd.choice(restricted) if j % 3 else rnd.choice(public)
        name = rnd.choice([f"fn_{i}", f"Const_{i}", f"Klass{i}.method_{i}", f"helper_{i}",
                           f"method_{i}"])
        what = rnd.choice(["def", "refs", "callers", "outline"])
        target = path_of(i, secret)
        typed = name if what != "outline" else target
        for caller, flags in CALLERS:
            idx = SymbolIndex(kb, caller)
            if what == "outline":
                try:
                    hits = idx.outline(target)[0]
                except Exception as e:  # a denied path: NotFoundError, as for a missing one
                    hits, _ = [], str(e)
            else:
                hits = {"def": idx.definitions, "refs": idx.references,
                        "callers": idx.callers}[what](name)
            text = " ".join(f"{h.path}:{h.line} {h.qualname} {h.text}" for h in hits)
            counts["index"][0] += 1
            counts["index"][1] += leaks(text, typed, secret)
            if j % 4 == 0:  # the CLI is slower: a quarter of the probes, text and JSON
                for fmt in ([], ["--json"]):
                    res = runner.invoke(app, ["code", what, typed, "--kb", "code", *flags, *fmt])
                    counts["cli"][0] += 1
                    counts["cli"][1] += leaks(res.output, typed, secret)
            ctx = ToolContext({"code": kb}, HybridSearcher([kb]), CitationLedger(100),
                              principal=caller)
            tool, args = {"def": ("code_definition", {"symbol": name}),
                          "refs": ("code_references", {"symbol": name}),
                          "callers": ("code_callers", {"symbol": name}),
                          "outline": ("code_outline", {"path": target})}[what]
            got, _ = run_tool(tools[tool], ctx, validate(tool, tools[tool].parameters, args))
            shown = got.text + " ".join(f"{c.path} {c.text}" for c in ctx.ledger)
            counts["tools"][0] += 1
            counts["tools"][1] += leaks(shown, typed, secret)
        if what == "outline" and i in secret:
            missing = target.replace(".py", "_missing.py")
            a = runner.invoke(app, ["code", "outline", target, "--kb", "code"])
            b = runner.invoke(app, ["code", "outline", missing, "--kb", "code"])
            denied_like_missing[0] += 1
            denied_like_missing[1] += (a.exit_code == b.exit_code and
                                       a.output.replace(target, missing) == b.output)
        # the control: an executive's results do include the restricted code
        ex = SymbolIndex(kb, EXEC)
        if i in secret and what == "def" and ex.definitions(name):
            control["index"] += 1
        if i in secret and j % 4 == 0:
            res = runner.invoke(app, ["code", "outline", target, "--kb", "code", "--groups",
                                      "executives"])
            control["cli"] += res.exit_code == 0 and f"fn_{i}" in res.output
            ctx = ToolContext({"code": kb}, HybridSearcher([kb]), CitationLedger(100),
                              principal=EXEC)
            got, _ = run_tool(tools["code_definition"], ctx,
                              validate("code_definition", tools["code_definition"].parameters,
                                       {"symbol": f"fn_{i}"}))
            control["tools"] += f"{target}:" in got.text and f"def fn_{i}(x)" in got.text
    kb.close()
    out.update({f"{k}_calls": v[0] for k, v in counts.items()})
    out.update({f"{k}_restricted_symbols_returned": v[1] for k, v in counts.items()})
    out["executive_control_hits"] = control
    out["denied_outline_reads_like_missing"] = f"{denied_like_missing[1]}/{denied_like_missing[0]}"
    out["seconds"] = round(time.perf_counter() - started, 1)
    return out


def run(work: Path, embedder: Any, n: int = 300, share: float = 0.5,
        n_probes: int = 600) -> dict[str, Any]:
    home = work / "code_home"
    os.environ["KBAGENT_HOME"] = str(home)  # the CLI runs in this process
    settings = Settings.load(home=home)
    secret = build(settings, work, embedder, n, share)
    return probe(settings, secret, n, n_probes)


def print_code(r: dict[str, Any]) -> None:
    print(f"\ncode: {r['modules']} modules, {r['restricted_modules']} restricted "
          f"(secret/** executives); {r['seconds']} s")
    for k in ("index", "cli", "tools"):
        print(f"  {k:<6} {r[f'{k}_calls']:>5} calls, restricted symbols returned "
              f"{r[f'{k}_restricted_symbols_returned']}")
    print(f"  executive control (restricted code found): {json.dumps(r['executive_control_hits'])}")
    print(f"  denied outline reads like missing: {r['denied_outline_reads_like_missing']}")
