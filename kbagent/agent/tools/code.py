"""Code-aware agent tools over the KBs' symbol indexes.

``code_definition``, ``code_references``, ``code_callers`` and ``code_outline``
answer with ``path:line`` results; every line shown enters the citation ledger
like a ``kb_grep`` match, so the model cites ``[n]`` and the citation resolves
on disk. They are in the ``full`` tool set, and in ``knowledge`` mode only when
the ``code_tools`` setting is on (small models keep their short tool list).
"""

from __future__ import annotations

from typing import Any

from kbagent.agent.events import Source
from kbagent.agent.kinds import ToolName
from kbagent.agent.tools.base import (
    KB_ARG,
    Tool,
    ToolContext,
    ToolFailure,
    ToolOutput,
    cap,
    obj_schema,
    where,
)
from kbagent.errors import KbagentError
from kbagent.kb.symbol_index import NoSymbolIndex, SymbolHit, SymbolIndex

MAX_SHOWN = 30  # results per observation
DEF_CONTEXT = 12  # lines of a definition cited (its head, not a whole class)


def _indexes(ctx: ToolContext, args: dict[str, Any]) -> list[SymbolIndex]:

    out, missing = [], []
    for name in ctx.pick_kbs(args):
        try:
            out.append(SymbolIndex(ctx.kbs[name], ctx.principal))
        except NoSymbolIndex as e:
            missing.append(str(e))
    if not out:
        raise ToolFailure("; ".join(missing) or "no KB to look in")
    return out


def _cite(ctx: ToolContext, tool: str, hits: list[SymbolHit], span: int = 0,
          nested: bool = False) -> tuple[list[str], list[int], list[Source]]:
    """Ledger numbers for hits grouped by file; returns (lines, citations, sources).

    The text cited is read back through the caller's file views: a line the caller
    may not read is dropped, never shown from the index (there is no fallback)."""

    lines: list[str] = []
    cites: list[int] = []
    sources: list[Source] = []
    by_file: dict[tuple[str, str], list[SymbolHit]] = {}
    for h in hits[:MAX_SHOWN]:
        by_file.setdefault((h.kb, h.path), []).append(h)
    for (kb, path), group in by_file.items():
        for h in group:
            end = min(h.end_line, h.line + span) if span else h.line
            text = ctx.resolve_lines(kb, path, h.line, end)
            if text is None:  # not readable by this caller (SymbolIndex filtered it already)
                continue
            n = ctx.ledger.add(kb=kb, path=path, start_line=h.line, end_line=end,
                               text=text, tool=tool)
            label = f"[{n}] " if n else ""
            what = f"{h.kind} {h.qualname}" if h.kind not in ("call", "ref") else (
                f"in {h.qualname}" if h.qualname else "at top level")
            indent = "  " * h.qualname.count(".") if nested else ""
            lines.append(f"{indent}{label}{where(ctx, kb, path)}:{h.line} ({what}): "
                         f"{h.text.strip()}")
            if n:
                cites.append(n)
            sources.append(Source(path, h.line))
    if len(hits) > MAX_SHOWN:
        lines.append(f"… {len(hits) - MAX_SHOWN} more not shown")
    return lines, list(dict.fromkeys(cites)), sources


def _lookup(ctx: ToolContext, args: dict[str, Any], tool: str, what: str) -> ToolOutput:

    symbol = args["symbol"]
    hits: list[SymbolHit] = []
    for idx in _indexes(ctx, args):
        if what == "def":
            hits += idx.definitions(symbol)
        else:
            hits += idx.references(symbol, calls_only=what == "callers")
    if not hits:
        hint = "kb_grep for the text" if what == "def" else "code_definition to check the name"
        return ToolOutput(f"No {what_label(what)} of {symbol!r} in the symbol index. Try {hint}.",
                          f"0 {what_label(what)} of {symbol!r}")
    lines, cites, sources = _cite(ctx, tool, hits, DEF_CONTEXT if what == "def" else 0)
    head = f"{len(hits)} {what_label(what)} of {symbol!r}:"
    return ToolOutput(cap("\n".join([head, *lines]), ctx.max_chars),
                      f"{len(hits)} {what_label(what)} of {symbol!r}", True, cites, sources)


def what_label(what: str) -> str:
    return {"def": "definitions", "refs": "references", "callers": "call sites"}[what]


def code_definition(ctx: ToolContext, args: dict[str, Any]) -> ToolOutput:
    return _lookup(ctx, args, ToolName.CODE_DEFINITION, "def")


def code_references(ctx: ToolContext, args: dict[str, Any]) -> ToolOutput:
    return _lookup(ctx, args, ToolName.CODE_REFERENCES, "refs")


def code_callers(ctx: ToolContext, args: dict[str, Any]) -> ToolOutput:
    return _lookup(ctx, args, ToolName.CODE_CALLERS, "callers")


def code_outline(ctx: ToolContext, args: dict[str, Any]) -> ToolOutput:

    last: KbagentError | None = None
    for idx in _indexes(ctx, args):
        try:
            hits, error = idx.outline(args["path"])
        except KbagentError as e:
            last = e
            continue
        if not hits:
            return ToolOutput(f"{args['path']}: no definitions found.", "0 definitions")
        shown, cites, sources = _cite(ctx, ToolName.CODE_OUTLINE, hits, nested=True)
        note = f"\n({error})" if error else ""
        return ToolOutput(cap(f"Outline of {args['path']}:\n" + "\n".join(shown) + note,
                               ctx.max_chars),
                          f"{len(hits)} definitions in {args['path']}", True, cites, sources)
    raise ToolFailure(f"{last}; use kb_glob to find source files")


_SYMBOL = {"type": "string", "minLength": 1, "maxLength": 120}


def code_tools() -> list[Any]:
    """The four tools, built lazily so tools.py can import this module at its end."""

    return [
        Tool(ToolName.CODE_DEFINITION, "Where a function, class, type or constant is defined.",
             obj_schema({"symbol": _SYMBOL, "kb": KB_ARG}, ["symbol"]), code_definition),
        Tool(ToolName.CODE_REFERENCES, "Every line that uses a symbol.",
             obj_schema({"symbol": _SYMBOL, "kb": KB_ARG}, ["symbol"]), code_references),
        Tool(ToolName.CODE_CALLERS, "Where a function is called, and from which function.",
             obj_schema({"symbol": _SYMBOL, "kb": KB_ARG}, ["symbol"]), code_callers),
        Tool(ToolName.CODE_OUTLINE, "The functions, classes and constants of one source file.",
             obj_schema({"path": {"type": "string", "minLength": 1, "maxLength": 300},
                         "kb": KB_ARG},
             ["path"]), code_outline),
    ]
