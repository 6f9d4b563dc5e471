"""``kbagent eval``: measure quality on your own data, without a cloud judge."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from kbagent.cli import app
from kbagent.cli.common import handles_errors, settings_from, stderr_console, stdout_console
from kbagent.cli.kb_commands import KbagentInterrupted, SearchMode, _ProgressBar

eval_app = typer.Typer(help="Measure retrieval and answer quality on your own data.",
                       no_args_is_help=True)
app.add_typer(eval_app, name="eval")


@eval_app.command("retrieval")
@handles_errors
def retrieval(
    ctx: typer.Context,
    dataset: Annotated[Path, typer.Argument(
        help="BEIR-format folder: corpus.jsonl, queries.jsonl, qrels/<split>.tsv.",
        show_default=False)],
    kb: Annotated[str | None, typer.Option(
        "--kb", help="KB to build or reuse (default: eval-<folder name>).",
        show_default=False)] = None,
    split: Annotated[str, typer.Option("--split", help="qrels file to score against.")] = "test",
    max_queries: Annotated[int | None, typer.Option(
        "--max-queries", min=1, help="Score only the first N judged queries (by id).",
        show_default=False)] = None,
    mode: Annotated[list[SearchMode] | None, typer.Option(
        "--mode", help="Retriever(s) to score (repeatable; default: all three).",
        show_default=False)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    html_out: Annotated[Path | None, typer.Option(
        "--html", help="Also write a self-contained HTML report with per-query rows.",
        show_default=False)] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
) -> None:
    """Score bm25, vector and hybrid search side by side (nDCG@10, recall@10/100,
    MRR@10, latency) on a BEIR-format data set."""
    from kbagent.evaluation.beir import load_beir
    from kbagent.evaluation.retrieval import evaluate, prepare_kb
    from kbagent.kb.knowledge_base import validate_name
    from kbagent.kb.search import MODES

    settings = settings_from(ctx)
    ds = load_beir(dataset, split=split, max_queries=max_queries)
    name = validate_name(kb or f"eval-{ds.name}")
    modes = [m.value for m in mode] if mode else list(MODES)
    show_bar = not quiet and sys.stderr.isatty()
    try:
        with _ProgressBar(show_bar) as bar:
            stems, seconds = prepare_kb(settings, ds, name, progress=bar)
            report = evaluate(settings, ds, name, stems, seconds, modes, progress=bar)
    except KeyboardInterrupt:
        raise KbagentInterrupted(name) from None
    if html_out is not None:
        from kbagent.evaluation.html_report import write_retrieval_html

        write_retrieval_html(report, html_out)
    if as_json:
        typer.echo(json.dumps(report.to_json(), indent=2))
        return
    from rich.table import Table

    table = Table(title=f"{ds.name}: {report.queries} queries, {report.documents} documents, "
                  f"{report.chunks} chunks (KB '{name}')", title_justify="left")
    for col in ("mode", "nDCG@10", "published", "recall@10", "recall@100", "MRR@10",
                "p50 ms", "p95 ms"):
        table.add_column(col, justify="left" if col == "mode" else "right")
    best = report.best()
    for m in report.modes:
        style = "bold" if m.mode == best else ""
        pub = "" if m.published_ndcg_10 is None else f"{m.published_ndcg_10:.3f}"
        table.add_row(m.mode, f"{m.ndcg_10:.4f}", pub, f"{m.recall_10:.4f}",
                      f"{m.recall_100:.4f}", f"{m.mrr_10:.4f}", f"{m.latency_p50_ms:.1f}",
                      f"{m.latency_p95_ms:.1f}", style=style)
    stdout_console().print(table)
    if html_out is not None:
        stderr_console().print(f"[dim]HTML report: {html_out}[/]")
