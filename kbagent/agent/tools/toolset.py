"""The agent's tools over the KBs it was given, and their registry.

Knowledge mode: ``list_kbs``, ``kb_search``, ``kb_semantic_search``, ``kb_grep``,
``kb_cat``, ``kb_ls``, ``kb_glob``. Full mode adds ``calculate`` and ``plan``.
A tool never raises into the loop: bad arguments, unknown paths, traversal
attempts and index failures come back as observations worded for the model.
Every chunk a tool shows enters the citation ledger; observations show the
ledger numbers so the model can cite ``[n]``.
"""

from __future__ import annotations

import time
from typing import Any

from kbagent.agent.answer.citations import clean_text
from kbagent.agent.events import Source
from kbagent.agent.kinds import ToolName, ToolSet
from kbagent.agent.tools.base import (
    KB_ARG,
    QUERY_ARG,
    TOP_K_ARG,
    Tool,
    ToolContext,
    ToolFailure,
    ToolOutput,
    cap,
    obj_schema,
    where,
)
from kbagent.agent.tools.calculator import CalcError, calculate, format_number
from kbagent.agent.tools.code import code_tools as make_code_tools
from kbagent.errors import KbagentError
from kbagent.kb.models import Line
from kbagent.kb.search import HybridSearcher
from kbagent.text import shorten


# ------------------------------------------------------------------- tools
def _search(ctx: ToolContext, args: dict[str, Any], mode: str, tool: str) -> ToolOutput:
    names = ctx.pick_kbs(args)
    searcher = ctx.searcher if len(names) == len(ctx.kbs) else HybridSearcher(
        [ctx.kbs[n] for n in names], reranker=getattr(ctx.searcher, "reranker", None))
    result = searcher.search(args["query"], k=args["top_k"], mode=mode,
                             principal=ctx.principal)
    failed = "".join(f"\nKB '{kb}' failed: {why}" for kb, why in result.failed_kbs.items())
    if not result.hits:
        return ToolOutput(f'No results for "{args["query"]}". Try other words, kb_grep for an '
                          f"exact term, or kb_ls to browse.{failed}",
                          f"0 hits for {args['query']!r}", ok=not result.failed_kbs)
    per_hit = max(200, ctx.max_chars // len(result.hits) - 80)
    lines = [f'{len(result.hits)} results for "{args["query"]}":']
    cites, sources = [], []
    for h in result.hits:
        n = ctx.ledger.add(kb=h.kb, path=h.path, start_line=h.start_line, end_line=h.end_line,
                           text=h.text, score=h.score, tool=tool, heading=h.heading)
        label = f"[{n}]" if n else "[not citable: citation limit reached]"
        # text first, location after: small models copy whatever comes first
        text = shorten(clean_text(h.text), per_hit, at_word=True, mark=" …")
        lines.append(f"{label} {text}")
        lines.append(f"    (source: {where(ctx, h.kb, h.path)}, lines "
                     f"{h.start_line}-{h.end_line})")
        if n:
            cites.append(n)
        sources.append(Source(h.path, h.start_line, h.end_line))
    summary = f"{len(result.hits)} hits: " + ", ".join(dict.fromkeys(h.path for h in result.hits))
    if result.failed_kbs:
        summary += f" (failed: {', '.join(result.failed_kbs)})"
        lines.append(f"failed_kbs: {', '.join(result.failed_kbs)}{failed}")
    for notice in getattr(result, "notices", []):  # e.g. a reranker that failed: for people
        summary += f" ({notice})"
    return ToolOutput("\n".join(lines), summary, True, list(dict.fromkeys(cites)), sources)


def _kb_search(ctx: ToolContext, args: dict[str, Any]) -> ToolOutput:
    return _search(ctx, args, "hybrid", ToolName.KB_SEARCH)


def _kb_semantic_search(ctx: ToolContext, args: dict[str, Any]) -> ToolOutput:
    return _search(ctx, args, "vector", ToolName.KB_SEMANTIC_SEARCH)


def _list_kbs(ctx: ToolContext, args: dict[str, Any]) -> ToolOutput:
    lines = []
    for name, kb in ctx.kbs.items():
        docs, chunks = kb.store.visible_counts(ctx.principal)
        lines.append(f"{name}: {docs} documents, {chunks} chunks")
    return ToolOutput("Knowledge bases:\n" + "\n".join(lines), f"{len(ctx.kbs)} KBs")


def _kb_grep(ctx: ToolContext, args: dict[str, Any]) -> ToolOutput:
    names = ctx.pick_kbs(args)
    total, files, blocks, cites, sources = 0, 0, [], [], []
    truncated = False
    for kb in names:
        try:
            res = ctx.views(kb).grep(args["pattern"], regex=args["regex"],
                                     path_glob=args.get("path_glob", ""),
                                     max_matches=args["max_matches"])
        except KbagentError as e:
            raise ToolFailure(str(e)) from e
        truncated |= res.truncated
        by_file: dict[str, list[Line]] = {}
        for m in res.matches:
            by_file.setdefault(m.path, []).append(m.line)
        for path, lines in by_file.items():
            n = ctx.ledger.add(kb=kb, path=path, start_line=min(ln.number for ln in lines),
                               end_line=max(ln.last for ln in lines),
                               text="\n".join(ln.text for ln in lines), tool=ToolName.KB_GREP)
            label = f"[{n}] " if n else ""
            blocks.append(f"{label}{where(ctx, kb, path)}")
            blocks += [f"  {ln.number}: {shorten(ln.text, 200, at_word=True, mark=' …')}"
                       for ln in lines]
            if n:
                cites.append(n)
            sources.append(Source(path))
            total += len(lines)
            files += 1
    if not total:
        return ToolOutput(f"No line matches {args['pattern']!r}. Try kb_search for related "
                          "wording.", f"0 matches for {args['pattern']!r}")
    more = " (more matches not shown; narrow the pattern or use path_glob)" if truncated else ""
    text = f"{total} matching lines in {files} files{more}:\n" + "\n".join(blocks)
    return ToolOutput(cap(text, ctx.max_chars), f"{total} matches in {files} files",
                      True, cites, sources)


def _kb_cat(ctx: ToolContext, args: dict[str, Any]) -> ToolOutput:
    names = ctx.pick_kbs(args)
    path = args["path"]
    last_error: KbagentError | None = None
    for kb in names:
        try:
            end = args.get("end_line")
            start = args.get("start_line", 1)
            if end is None:
                end = start + 79
            res = ctx.views(kb).cat(path, start, end, max_lines=120)
        except KbagentError as e:
            last_error = e
            continue
        if not res.lines:
            return ToolOutput(f"{path}: no text in lines {start}-{end}.", "no text", ok=False)
        n = ctx.ledger.add(kb=kb, path=res.path, start_line=res.lines[0].number,
                           end_line=max(ln.last for ln in res.lines),
                           text="\n".join(ln.text for ln in res.lines), tool=ToolName.KB_CAT)
        first, last = res.lines[0].number, max(ln.last for ln in res.lines)
        head = (f"[{n}] " if n else "") + (f"{where(ctx, kb, res.path)} lines {first}-{last} "
                                           f"of {res.total_lines}:")
        body = "\n".join(f"{ln.number}| {ln.text}" for ln in res.lines)
        body = cap(body, ctx.max_chars - 200)
        more = f"\n(continue at line {res.next_line})" if res.next_line else "\n(end of file)"
        return ToolOutput(f"{head}\n{body}{more}", f"read {res.path}:{first}-{last}", True,
                          [n] if n else [], [Source(res.path, first, last)])
    msg = str(last_error) if last_error else f"no file '{path}'"
    raise ToolFailure(f"{msg}; use kb_ls or kb_glob to find paths")


def _kb_ls(ctx: ToolContext, args: dict[str, Any]) -> ToolOutput:
    out = []
    for kb in ctx.pick_kbs(args):
        try:
            entries = ctx.views(kb).ls(args.get("path", ""))
        except KbagentError as e:
            if len(ctx.kbs) == 1:
                raise ToolFailure(f"{e}; call kb_ls with no path to see the top level") from e
            continue
        out.append((f"{kb}:\n" if len(ctx.kbs) > 1 else "") + "\n".join(entries))
    if not out:
        raise ToolFailure(f"no folder '{args.get('path', '')}' in any KB")
    text = "\n".join(out)
    return ToolOutput(cap(text, ctx.max_chars), f"{len(text.splitlines())} entries")


def _kb_glob(ctx: ToolContext, args: dict[str, Any]) -> ToolOutput:
    found = []
    for kb in ctx.pick_kbs(args):
        try:
            found += [where(ctx, kb, p) for p in ctx.views(kb).glob(args["pattern"])]
        except KbagentError as e:
            raise ToolFailure(str(e)) from e
    if not found:
        return ToolOutput(f"No paths match {args['pattern']!r}. Try kb_ls.",
                          f"0 paths for {args['pattern']!r}")
    return ToolOutput(cap("\n".join(found), ctx.max_chars), f"{len(found)} paths")


def _calculate(ctx: ToolContext, args: dict[str, Any]) -> ToolOutput:
    try:
        value = calculate(args["expression"])
    except CalcError as e:
        raise ToolFailure(str(e)) from e
    shown = format_number(value)
    return ToolOutput(f"{args['expression']} = {shown}", f"= {shown}")


def _plan(ctx: ToolContext, args: dict[str, Any]) -> ToolOutput:
    ctx.plan = list(args["steps"])
    body = "\n".join(f"{i}. {s}" for i, s in enumerate(ctx.plan, 1))
    return ToolOutput(f"Plan recorded:\n{body}\nNow carry out step 1.", f"{len(ctx.plan)} steps")


KNOWLEDGE_TOOLS = [
    Tool(ToolName.KB_SEARCH, "Hybrid keyword + semantic search of the knowledge bases. Start here.",
         obj_schema({"query": QUERY_ARG, "kb": KB_ARG, "top_k": TOP_K_ARG}, ["query"]), _kb_search),
    Tool(ToolName.KB_SEMANTIC_SEARCH, "Meaning-based search only; for paraphrased questions.",
         obj_schema({"query": QUERY_ARG, "kb": KB_ARG, "top_k": TOP_K_ARG}, ["query"]),
         _kb_semantic_search),
    Tool(ToolName.KB_GREP, "Find lines containing an exact word, number or regex.",
         obj_schema({"pattern": {"type": "string", "minLength": 1, "maxLength": 200},
               "regex": {"type": "boolean", "default": False},
               "path_glob": {"type": "string", "maxLength": 80}, "kb": KB_ARG,
               "max_matches": {"type": "integer", "minimum": 1, "maximum": 100, "default": 30}},
              ["pattern"]), _kb_grep),
    Tool(ToolName.KB_CAT, "Read numbered lines of one file.",
         obj_schema({"path": {"type": "string", "minLength": 1, "maxLength": 300},
               "start_line": {"type": "integer", "minimum": 1, "maximum": 10_000_000},
               "end_line": {"type": "integer", "minimum": 1, "maximum": 10_000_000},
               "kb": KB_ARG}, ["path"]), _kb_cat),
    Tool(ToolName.KB_LS, "List the files and folders in a folder of a knowledge base.",
         obj_schema({"path": {"type": "string", "maxLength": 300}, "kb": KB_ARG}), _kb_ls),
    Tool(ToolName.KB_GLOB, "List file paths matching a glob such as finance/*.md.",
         obj_schema({"pattern": {"type": "string", "minLength": 1, "maxLength": 80}, "kb": KB_ARG},
              ["pattern"]), _kb_glob),
    Tool(ToolName.LIST_KBS, "List the knowledge bases you can search.", obj_schema({}), _list_kbs),
]
FULL_TOOLS = [
    Tool(ToolName.CALCULATE, "Exact arithmetic, e.g. (11.2 - 9.8) / 9.8 * 100.",
         obj_schema({"expression": {"type": "string", "minLength": 1, "maxLength": 300}},
              ["expression"]), _calculate),
    Tool(ToolName.PLAN, "Write down the steps you will take for a complex question.",
         obj_schema({"steps": {"type": "array", "maxItems": 6,
                         "items": {"type": "string", "minLength": 1, "maxLength": 80}}},
              ["steps"]), _plan),
]


def registry(mode: str = ToolSet.KNOWLEDGE, code_tools: bool = False) -> dict[str, Tool]:
    """The tools of a mode; the code_* tools come with ``full`` or with ``code_tools``."""
    tools = KNOWLEDGE_TOOLS + (FULL_TOOLS if mode == ToolSet.FULL else [])
    if mode == ToolSet.FULL or code_tools:
        tools = tools + make_code_tools()
    return {t.name: t for t in tools}


def run_tool(tool: Tool, ctx: ToolContext, args: dict[str, Any]) -> tuple[ToolOutput, float]:
    """Run a tool; every failure becomes an observation. Returns (output, ms)."""
    started = time.perf_counter()
    try:
        out = tool.run(ctx, args)
    except (ToolFailure, KbagentError) as e:
        out = ToolOutput(f"{tool.name}: {e}", f"error: {e}", ok=False)
    except Exception as e:  # a tool bug must not end the session
        out = ToolOutput(f"{tool.name} failed ({type(e).__name__}: {e}); try another tool.",
                         f"error: {type(e).__name__}", ok=False)
    return out, (time.perf_counter() - started) * 1000
