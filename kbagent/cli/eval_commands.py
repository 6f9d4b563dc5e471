"""``kbagent eval``: measure quality on your own data, without a cloud judge."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from kbagent.agent.kinds import AskMode, ToolSet
from kbagent.cli.app import app
from kbagent.cli.common import (
    BYTES_OK,
    handles_errors,
    settings_from,
    stderr_console,
    stdout_console,
)
from kbagent.cli.shared import ProgressBar, ingest_interrupted
from kbagent.errors import BadInputError, Interrupted, KbagentError, NotFoundError
from kbagent.kb.models import SearchMode

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
        with ProgressBar(show_bar) as bar:
            stems, seconds = prepare_kb(settings, ds, name, progress=bar)
            report = evaluate(settings, ds, name, stems, seconds, modes, progress=bar)
    except KeyboardInterrupt:
        raise ingest_interrupted(name) from None
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


@eval_app.command("qa")
@handles_errors
def qa(
    ctx: typer.Context,
    questions: Annotated[Path, typer.Argument(
        help="Question set: kbagent's sample JSONL, a HotpotQA (IRCoT) JSONL or folder, or a "
        "MuSiQue JSON (with its _corpus.json beside it).", show_default=False)],
    fmt: Annotated[str, typer.Option("--format", help="auto, sample, hotpotqa or musique.")] = (
        "auto"),
    kb: Annotated[list[str] | None, typer.Option(
        "--kb", help="KB to ask (sample format; default: all). HotpotQA/MuSiQue build and "
        "reuse eval-<set>.", show_default=False)] = None,
    compare_modes: Annotated[str, typer.Option(
        "--compare-modes", help="Modes to run side by side, comma-separated.")] = "auto",
    tools: Annotated[ToolSet, typer.Option("--tools", help="Tool set.")] = ToolSet.KNOWLEDGE,
    max_questions: Annotated[int | None, typer.Option(
        "--max-questions", min=1, help="Only the first N questions.", show_default=False)] = None,
    answers: Annotated[Path | None, typer.Option(
        "--answers", help="Score this `kbagent batch` output instead of asking.",
        show_default=False)] = None,
    save_answers: Annotated[Path | None, typer.Option(
        "--save-answers", help="Append each answer to this JSONL as it is produced; a re-run "
        "reuses the answers already there (resume a long evaluation).",
        show_default=False)] = None,
    model: Annotated[str | None, typer.Option("--model", help="GGUF file.",
                                              show_default=False), BYTES_OK] = None,
    llm_url: Annotated[str | None, typer.Option("--llm-url", help="OpenAI-compatible server.",
                                                show_default=False)] = None,
    llm_model: Annotated[str | None, typer.Option("--llm-model", show_default=False,
                                                  help="Model name to send to the server.")] = (
        None),
    as_json: Annotated[bool, typer.Option("--json", help="Print the report (with every row) "
                                          "as JSON.")] = False,
    html_out: Annotated[Path | None, typer.Option(
        "--html", help="Also write a self-contained HTML report.", show_default=False)] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
) -> None:
    """Answer a question set (or score `batch` answers) and report exact match, F1,
    answer-contains-gold, supporting-document recall, citation precision, abstention,
    steps, tokens and latency per mode."""
    from kbagent.batch import BatchQuestion
    from kbagent.evaluation.qa import run_qa, score_answers
    from kbagent.evaluation.qa_data import load_qa, write_corpus_folder
    from kbagent.evaluation.retrieval import ingest_corpus
    from kbagent.kb.knowledge_base import validate_name
    from kbagent.session_pool import SessionPool

    settings = settings_from(ctx, llm_model=model, llm_url=llm_url, llm_server_model=llm_model)
    ds = load_qa(questions, fmt, max_questions)
    modes = [m.strip() for m in compare_modes.split(",") if m.strip()]
    bad = [m for m in modes if m not in {x.value for x in AskMode}]
    if bad or not modes:
        raise BadInputError(f"unknown mode {', '.join(bad) or '(none)'} in --compare-modes "
                            "(choose from auto, agent, rag, direct)")
    kb_names = kb
    show_bar = not quiet and sys.stderr.isatty()
    try:
        with ProgressBar(show_bar) as bar:
            if ds.corpus is not None:
                name = validate_name((kb or [f"eval-{ds.name}"])[0])
                folder = settings.home / "eval" / name / "corpus"
                write_corpus_folder(ds.corpus, folder)
                ingest_corpus(settings, name, folder, progress=bar)
                kb_names = [name]
            label = ",".join(kb_names or ["all KBs"])
            if answers is not None:
                report = score_answers(ds, label, _read_records(answers))
            else:
                pool = SessionPool(settings, kb_names, modes[0], tools.value)
                ctx.call_on_close(pool.close)  # one model for every mode, freed at the end
                saved = _SavedAnswers(save_answers)

                def answer(item: Any, mode: str) -> dict[str, Any]:
                    rec = saved.get(item.id, mode)
                    if rec is None:
                        q = BatchQuestion(item.id, item.question, 0, mode=mode)
                        try:
                            rec = {"id": item.id, "error": None, **pool.answer(q, None)}
                        except KbagentError as e:
                            rec = {"id": item.id, "requested_mode": mode, "error": str(e)}
                        saved.put(rec)
                    return rec

                try:
                    report = run_qa(ds, label, modes, answer, progress=bar)
                finally:
                    saved.close()
    except KeyboardInterrupt:
        raise Interrupted("interrupted; nothing stored was changed") from None
    if html_out is not None:
        from kbagent.evaluation.html_report import write_qa_html

        write_qa_html(report, html_out)
    if as_json:
        typer.echo(json.dumps(report.to_json(), indent=2, ensure_ascii=False))
        return
    _qa_table(report)


class _SavedAnswers:
    """Answers of an evaluation kept in a JSONL file, keyed by (id, mode asked)."""

    def __init__(self, path: Path | None) -> None:
        self._done: dict[tuple[str, str], dict[str, Any]] = {}
        self._f = None
        if path is None:
            return
        if path.is_file():
            from kbagent.batch import answered_ids

            answered_ids(path)  # drops failed lines and a torn last line
            for rec in _read_records(path):
                self._done[(str(rec.get("id")), str(rec.get("requested_mode")))] = rec
        path.parent.mkdir(parents=True, exist_ok=True)
        from kbagent.kb.file_modes import open_private

        self._f = open_private(path, append=True)  # answers quote documents: 0600

    def get(self, ident: str, mode: str) -> dict[str, Any] | None:
        return self._done.get((ident, mode))

    def put(self, rec: dict[str, Any]) -> None:
        if self._f is not None and rec.get("error") is None:
            self._f.write(json.dumps(rec, ensure_ascii=False) + "\n")
            self._f.flush()

    def close(self) -> None:
        if self._f is not None:
            self._f.close()


def _read_records(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise NotFoundError(f"no such answers file: {path}")
    from kbagent.jsonl import numbered_jsonl

    return [row for _, row in numbered_jsonl(path)]


def _qa_table(report: Any) -> None:
    from rich.table import Table

    table = Table(title=f"{report.dataset}: {report.modes[0].questions} questions (KB "
                  f"{report.kb})", title_justify="left")
    table.add_column("metric")
    for m in report.modes:
        table.add_column(m.mode, justify="right")

    def fmt(v: Any) -> str:
        if v is None:
            return "-"
        return f"{v:.3f}" if isinstance(v, float) else str(v)

    rows: list[tuple[str, Callable[[Any], object]]] = [
            ("correct", lambda m: f"{m.correct}/{m.questions}"),
            ("correct by kind", lambda m: ", ".join(f"{k} {v}" for k, v in
                                                     m.correct_by_kind.items())),
            ("exact match (short answer)", lambda m: m.em),
            ("token F1 (short answer)", lambda m: m.f1),
            ("short answers given", lambda m: f"{m.short_answers}/{m.questions}"),
            ("token F1 (whole answer)", lambda m: m.answer_f1),
            ("answer contains gold (whole answer)", lambda m: m.contains),
            ("supporting-doc recall", lambda m: m.support_recall),
            ("all supporting docs found", lambda m: m.all_support),
            ("citation precision", lambda m: m.citation_precision),
            ("abstention on unanswerable", lambda m: m.abstention_recall),
            ("false abstentions", lambda m: m.false_abstentions),
            ("steps / question", lambda m: m.steps),
            ("distinct queries / question", lambda m: m.distinct_queries),
            ("tokens / question", lambda m: m.tokens),
            ("latency median / p95 s", lambda m: f"{m.latency_median_s:.1f} / "
                                                  f"{m.latency_p95_s:.1f}"),
            ("errors", lambda m: m.errors)]
    for label, get in rows:
        table.add_row(label, *(fmt(get(m)) for m in report.modes))
    stdout_console().print(table)
