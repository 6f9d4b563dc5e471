"""``kbagent ingest``, ``kbagent search`` and ``kbagent kbs``."""

from __future__ import annotations

import json
import sys
import time
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from kbagent.cli.app import app
from kbagent.cli.common import (
    BYTES_OK,
    AsOpt,
    GroupsOpt,
    handles_errors,
    literal,
    principal_from,
    settings_from,
    stderr_console,
    stdout_console,
    warn,
)
from kbagent.cli.shared import ProgressBar, ingest_interrupted
from kbagent.defaults import default  # not kbagent.settings: --help imports no pydantic
from kbagent.errors import KbagentError
from kbagent.kb.models import SearchMode
from kbagent.safe_text import json_text
from kbagent.text import shorten


class ReportFormat(StrEnum):
    text = "text"
    json = "json"


EMBED_URL_OPTION = typer.Option(
    "--embed-url", help="OpenAI-compatible embeddings server (e.g. http://host:8081/v1) "
    "instead of the local model.", show_default=False)


# ----------------------------------------------------------------------- ingest
@app.command()
@handles_errors
def ingest(
    ctx: typer.Context,
    path: Annotated[Path, typer.Argument(help="Folder to ingest.", show_default=False)],
    kb: Annotated[str | None, typer.Option("--kb", help="KB name (default: the folder's name).",
                                           show_default=False)] = None,
    rebuild: Annotated[bool, typer.Option(
        "--rebuild",
        help="Re-extract and re-embed every file (after a model or chunker change, or corruption).",
    )] = False,
    report: Annotated[ReportFormat, typer.Option("--report", help="text: a summary; json: the "
                                                 "per-file report on stdout.")] = ReportFormat.text,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
    embed_url: Annotated[str | None, EMBED_URL_OPTION] = None,
    watch: Annotated[bool, typer.Option(
        "--watch", help="Then keep watching the folder and apply each burst of changes "
        "(one new generation per batch) until Ctrl-C.")] = False,
    store: Annotated[str | None, typer.Option(
        "--store", help="Hold the KB in PostgreSQL + pgvector (postgresql://user@host/db); "
        "recorded, so later commands need no flag.", show_default=False)] = None,
    replica: Annotated[list[str] | None, typer.Option(
        "--replica", help="A read replica (streaming standby) of --store: searches and reads "
        "go to it, ingest to the store (repeatable; recorded with the store).",
        show_default=False)] = None,
    no_replicas: Annotated[bool, typer.Option(
        "--no-replicas", help="Forget the recorded replicas: reads go to the store.")] = False,
) -> None:
    """Build or update a KB from a folder (incremental; unchanged files are skipped)."""
    from kbagent.kb.knowledge_base import name_from_folder, validate_name
    from kbagent.kb.stores import ingestor_for, plan_replicas

    settings = settings_from(ctx, embed_url=embed_url)
    name = validate_name(kb) if kb is not None else name_from_folder(path)
    show_bar = not quiet and sys.stderr.isatty()
    bars: list[ProgressBar] = []  # the bar of the first ingest only (--watch goes on)
    ingestor = ingestor_for(settings, name, store,
                            progress=lambda *a: bars[0](*a) if bars else None)
    replicas, notes = plan_replicas(settings, name, store, replica, no_replicas)
    for note in notes:
        warn(note)
    try:
        with ProgressBar(show_bar) as bar:
            bars.append(bar)
            result = ingestor.run(path, rebuild=rebuild)
        bars.clear()
    except KeyboardInterrupt:
        raise ingest_interrupted(name) from None
    if replicas is not None:  # after the commit: the KB is registered with its store
        from kbagent.kb.registry import redact, set_replicas

        set_replicas(settings, name, replicas)
        stderr_console().print(f"reads of KB '{name}' go to " + (", ".join(
            literal(redact(r)) for r in replicas) if replicas else "its store (no replicas)"))
    if report is ReportFormat.json:
        typer.echo(json.dumps(result.to_dict(), indent=2))
        return
    err = stderr_console()
    print_file_notes(err, result.files)
    for what in result.repaired:  # a broken index found and rebuilt (kb/repair.py)
        err.print(f"[yellow]repaired[/] {literal(what)}")
    s = result.summary()
    parts = ", ".join(f"{v} {k}" for k, v in s.items())
    verb = ("repaired" if result.repaired else "updated") if result.committed else "up to date"
    stdout_console().print(
        f"KB '{name}' {verb}: {parts}; {result.chunks_total} chunks "
        f"({result.chunks_embedded} embedded) in {result.seconds:.1f}s"
    )
    if watch:
        watch_folder(ingestor, path, name)


def print_file_notes(err: Any, files: list[Any]) -> None:
    """The files ingest (or one watch batch) skipped, failed or noted, one line each."""
    for f in files:
        if f.status in ("skipped", "failed"):
            colour = "yellow" if f.status == "skipped" else "red"
            err.print(f"[{colour}]{f.status}[/] {literal(f.path)}: {literal(f.reason)}")
        elif f.reason:  # ingested, with a note (hidden until fixed, a syntax error, ...)
            err.print(f"[yellow]note[/] {literal(f.path)}: {literal(f.reason)}")


def watch_folder(ingestor: Any, path: Path, name: str) -> None:
    """``ingest --watch``: one log line per applied batch until Ctrl-C."""
    from rich.markup import escape

    from kbagent.kb.knowledge_base import current_generation
    from kbagent.kb.watch import FolderWatcher

    out, err = stdout_console(), stderr_console()

    def log(update: Any) -> None:
        stamp = time.strftime("%H:%M:%S")
        if update.error:
            err.print(f"{stamp} [red]{escape(update.line())}[/]")
        elif update.committed:
            out.print(f"{stamp} {escape(update.line())}")
        print_file_notes(err, update.notes)  # e.g. a malformed access: hidden until fixed

    err.print(f"watching {escape(str(path))} for KB '{name}' (Ctrl-C to stop)")
    try:
        FolderWatcher(ingestor, path, on_update=log).run()
    except KeyboardInterrupt:
        gen = current_generation(ingestor.dir) or "none"
        err.print(f"stopped watching; KB '{name}' is at {gen}")


# ----------------------------------------------------------------------- search
def _snippet(text: str, width: int = 220) -> str:
    return shorten(text, width)


@app.command()
@handles_errors
def search(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="What to look for.", show_default=False),
                     BYTES_OK],
    kb: Annotated[list[str] | None, typer.Option("--kb", help="KB to search (repeatable; "
                                                 "default: all).", show_default=False)] = None,
    k: Annotated[int, typer.Option("-k", "--top-k", min=1, max=1000,
                                   help="Number of hits.")] = 10,
    mode: Annotated[SearchMode, typer.Option("--mode", help="Retriever(s) to use.")] = (
        SearchMode.HYBRID
    ),
    as_json: Annotated[bool, typer.Option("--json", help="Print the hits as JSON.")] = False,
    embed_url: Annotated[str | None, EMBED_URL_OPTION] = None,
    as_user: AsOpt = None,
    groups: GroupsOpt = None,
    rerank_url: Annotated[str | None, typer.Option(
        "--rerank-url", help="Rerank the top fused hits with this /v1/rerank endpoint.",
        show_default=False)] = None,
    rerank_model: Annotated[str | None, typer.Option(
        "--rerank-model", help="Model name for the rerank server, or (without --rerank-url) a "
        "local sentence-transformers CrossEncoder folder.", show_default=False)] = None,
    rerank_top_n: Annotated[int | None, typer.Option(
        "--rerank-top-n", min=1, max=1000, help="How many fused hits the reranker reorders "
        f"(default {default('rerank_top_n')}).", show_default=False)] = None,
) -> None:
    """Search KBs without the LLM: BM25 + vectors fused by RRF (k=60), optionally reranked."""
    from kbagent.session import Session

    settings = settings_from(ctx, embed_url=embed_url, rerank_url=rerank_url,
                             rerank_model=rerank_model, rerank_top_n=rerank_top_n)
    # the session carries the principal and the reranker into the search; no LLM loads
    session = Session(settings, kb, principal=principal_from(settings, as_user, groups))
    ctx.call_on_close(session.close)
    not_opened = session.open_kbs().failed
    for name, reason in not_opened.items():
        warn(f"KB '{name}' failed: {reason}")
    kbs = session.kbs
    started, loaded_s = time.perf_counter(), session.embedder_load_s
    result = session.search(query, k=k, mode=mode.value)
    load_s = session.embedder_load_s - loaded_s  # timed apart: loading is not searching
    ms = (time.perf_counter() - started - load_s) * 1000
    for name, reason in result.failed_kbs.items():
        if name not in not_opened:  # those were reported above
            warn(f"KB '{name}' failed: {reason}")
    for name in result.bm25_only_kbs:
        warn(f"KB '{name}': vectors still being built: BM25 only")
    for name, (have, total) in result.partial_kbs.items():
        scope = "BM25 covers every chunk" if mode.value == "hybrid" else "only those are searched"
        warn(f"KB '{name}': vectors still being built ({have:,} of {total:,} chunks so far; "
             f"{scope})")
    for notice in result.notices:
        warn(notice)
    if result.failed_kbs and all(kb.name in result.failed_kbs for kb in kbs):
        raise KbagentError("every KB failed to answer the search")
    if as_json:
        keys = ("kb", "path", "start_line", "end_line", "heading", "score", "bm25_rank",
                "bm25_score", "vector_rank", "vector_score", "rerank_score", "chunk_id", "title",
                "text", "location")
        # chunk_id: an opaque id (Hit.public_id); the store's sequential ids would
        # reveal, by their gaps, how many hidden chunks lie between visible ones
        shown = [{k_: h.public_id if k_ == "chunk_id" else getattr(h, k_) for k_ in keys}
                 for h in result.hits]
        typer.echo(json_text(shown, indent=2))
        return
    out = stdout_console()
    if not result.hits:
        out.print(f"no hits for {literal(repr(query))}")
    multi = len(kbs) > 1
    for i, h in enumerate(result.hits, 1):
        why = []
        if h.bm25_rank:
            why.append(f"bm25 #{h.bm25_rank}")
        if h.vector_rank:
            why.append(f"vector #{h.vector_rank}")
        if h.rerank_score is not None:
            why.append(f"rerank {h.rerank_score:.3f}")
        where = f"{h.kb}:" if multi else ""
        place = f" [magenta]{literal(h.location)}[/]" if h.location else ""
        out.print(
            f"[bold]{i:>2}.[/] [cyan]{literal(where + h.path)}:{h.start_line}-{h.end_line}[/]"
            f"{place}"
            f"  [green]{h.score:.4f}[/]  [dim]({', '.join(why)})[/]"
        )
        if h.heading:
            out.print(f"    [bold]{literal(h.heading)}[/]")
        out.print(f"    {literal(_snippet(h.text))}")
    load = f"; embedding model loaded in {load_s:.1f} s" if load_s >= 0.05 else ""
    stderr_console().print(f"[dim]{len(result.hits)} hits in {ms:.0f} ms ({mode.value}{load})[/]")


# -------------------------------------------------------------------------- kbs
kbs_app = typer.Typer(help="List and manage knowledge bases.", no_args_is_help=False)
app.add_typer(kbs_app, name="kbs")


def _size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


@kbs_app.callback(invoke_without_command=True)
@handles_errors
def kbs(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
    as_user: AsOpt = None,
    groups: GroupsOpt = None,
) -> None:
    """List KBs: name, source folder, documents, chunks, model, size, last ingest
    (documents, chunks and size: those of the documents the caller may read)."""
    if ctx.invoked_subcommand is not None:
        return
    from kbagent.kb.stores import list_all_kbs

    settings = settings_from(ctx)
    principal = principal_from(settings, as_user, groups)
    infos = [visible_info(settings, i, principal)
             for i in list_all_kbs(settings, replica_status=True)]
    if as_json:
        typer.echo(json.dumps([i.to_dict() for i in infos], indent=2))
        return
    if not infos:
        stderr_console().print("no knowledge bases yet; run 'kbagent ingest PATH'")
        return
    from rich.table import Table

    table = Table(box=None, pad_edge=False)
    for col in ("name", "source", "docs", "chunks", "embedding model", "size", "last ingest"):
        table.add_column(col, justify="right" if col in ("docs", "chunks", "size") else "left")
    for i in infos:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(i.updated_at)) if i.updated_at else ""
        source = f"[red]{literal(i.error)}[/]" if i.error else literal(i.source)
        table.add_row(literal(i.name), source, str(i.documents), str(i.chunks),
                      literal(i.embedding_model),
                      _size(i.size_bytes), when)
    stdout_console().print(table)
    for i in infos:
        for r in getattr(i, "replicas", []):
            stdout_console().print(f"  {literal(i.name)}: replica {literal(_replica_line(r))}")


def _replica_line(r: dict[str, Any]) -> str:
    """Where one replica stands: its generation of the KB against the primary's."""
    def stamp(t: float | None) -> str:
        return "none" if t is None else (time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))
                                         + f".{int(t * 1000) % 1000:03d}")

    if r["error"].startswith("down"):
        return f"{r['url']}: {r['error']}"
    state = "behind" if r["behind"] else "in step"
    wal = f"; {r['wal_behind_bytes']:,} bytes of WAL to replay" if r["wal_behind_bytes"] else ""
    note = f"; {r['error']}" if r["error"] else ""
    return (f"{r['url']}: {state} (generation {stamp(r['generation'])}, primary "
            f"{stamp(r['primary_generation'])}{wal}){note}")


@kbs_app.command("rm")
@handles_errors
def kbs_rm(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="KB to remove.", show_default=False)],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
) -> None:
    """Remove a KB (its index files only; the source folder is not touched)."""
    from kbagent.kb.knowledge_base import require_kb, validate_name
    from kbagent.kb.registry import store_of
    from kbagent.kb.stores import remove_any_kb

    settings = settings_from(ctx)
    validate_name(name)
    if store_of(settings, name) is None:
        require_kb(settings, name)
    if not yes:
        if not sys.stdin.isatty() and not _stdin_has_data():
            raise KbagentError(f"refusing to remove KB '{name}' without confirmation; "
                               "add --yes")
        if not typer.confirm(f"Remove KB '{name}'?", default=False, err=True):
            raise KbagentError("not removed")
    remove_any_kb(settings, name)
    stdout_console().print(f"removed KB '{name}'")


def visible_info(settings: Any, info: Any, principal: Any) -> Any:
    """``info`` with the document and chunk counts ``principal`` may read, and as its
    size the bytes of those documents' source files (not the index on disk, whose
    size would count the documents the caller may not read)."""
    if info.error:
        info.size_bytes = 0
        return info
    from kbagent.kb.stores import open_kb

    try:
        kb = open_kb(settings, info.name)
    except KbagentError as e:
        info.documents = info.chunks = info.size_bytes = 0
        info.error = str(e)
        return info
    try:
        info.documents, info.chunks = kb.store.visible_counts(principal)
        info.size_bytes = kb.store.visible_bytes(principal)
    finally:
        kb.close()
    return info


def _stdin_has_data() -> bool:
    import select

    try:
        return bool(select.select([sys.stdin], [], [], 0)[0])
    except (OSError, ValueError):
        return True  # not a real file (a test runner's stream): let confirm read it
