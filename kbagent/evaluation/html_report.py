"""One self-contained HTML page for an evaluation (no scripts, no network):
the summary table, then one row per query, so two runs can be opened side by
side and compared."""

from __future__ import annotations

from pathlib import Path

from kbagent.evaluation.qa import QaReport
from kbagent.evaluation.retrieval import RetrievalReport
from kbagent.kb.file_modes import open_private
from kbagent.safe_text import clean

_STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:1em 0}
th,td{border:1px solid #ccc;padding:.3em .6em;text-align:left;vertical-align:top}
th{background:#f3f3f3} td.n{text-align:right;font-variant-numeric:tabular-nums}
.hit{background:#dff3df} .best{font-weight:bold} code{font-size:12px}
"""


def _esc(text: str) -> str:
    """Text for the page: HTML-escaped, and without the control characters that are
    invalid in HTML and would drive a terminal the file is printed on."""
    import html

    return html.escape(clean(text))


def _cell(value: object, cls: str = "") -> str:
    c = f' class="{cls}"' if cls else ""
    return f"<td{c}>{_esc(str(value))}</td>"


def retrieval_html(report: RetrievalReport) -> str:
    best = report.best()
    rows = []
    for m in report.modes:
        cls = "n best" if m.mode == best else "n"
        pub = "" if m.published_ndcg_10 is None else f"{m.published_ndcg_10:.3f}"
        rows.append("<tr>" + _cell(m.mode) + "".join(_cell(f"{v:.4f}", cls) for v in (
            m.ndcg_10, m.recall_10, m.recall_100, m.mrr_10)) + _cell(pub, "n")
            + _cell(f"{m.latency_p50_ms:.1f} / {m.latency_p95_ms:.1f}", "n") + "</tr>")
    head = ("<tr><th>mode</th><th>nDCG@10</th><th>recall@10</th><th>recall@100</th>"
            "<th>MRR@10</th><th>published nDCG@10</th><th>latency p50 / p95 ms</th></tr>")
    per_q = []
    modes = [m.mode for m in report.modes]
    for qid, text in report.queries_text.items():
        rels = report.qrels.get(qid, {})
        cells = [_cell(qid), _cell(text),
                 "<td>" + _esc(", ".join(d for d, g in rels.items() if g > 0)) + "</td>"]
        for m in report.modes:
            top = m.per_query_top10.get(qid, [])
            marked = " ".join(
                f'<span class="hit">{_esc(d)}</span>' if rels.get(d, 0) > 0
                else _esc(d) for d in top[:5])
            cells.append(f'<td class="n">{m.per_query_ndcg_10.get(qid, 0.0):.3f}</td>'
                         f"<td><code>{marked}</code></td>")
        per_q.append("<tr>" + "".join(cells) + "</tr>")
    q_head = "<tr><th>id</th><th>query</th><th>relevant</th>" + "".join(
        f"<th>{_esc(m)} nDCG@10</th><th>{_esc(m)} top 5</th>" for m in modes
    ) + "</tr>"
    intro = (f"KB <code>{_esc(report.kb)}</code>: {report.documents} documents, "
             f"{report.chunks} chunks; embedding model <code>"
             f"{_esc(report.embedding_model)}</code>; {report.queries} queries.")
    return _page(f"kbagent eval retrieval: {report.dataset}", intro, head + "".join(rows),
                 "Per query", q_head + "".join(per_q))


def _page(title: str, intro: str, summary: str, rows_title: str, rows: str) -> str:
    """One self-contained page: title, intro, the summary table, the per-item table."""
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{_esc(title)}</title>"
        f"<style>{_STYLE}</style></head><body><h1>{_esc(title)}</h1>"
        f"<p>{intro}</p><table>{summary}</table>"
        f"<h2>{_esc(rows_title)}</h2><table>{rows}</table></body></html>\n"
    )


def write_html(page: str, path: Path) -> None:
    path = Path(path).expanduser()
    path.parent.mkdir(parents=True, exist_ok=True)
    with open_private(path) as f:  # rows quote documents and answers: 0600
        f.write(page)


def write_retrieval_html(report: RetrievalReport, path: Path) -> None:
    write_html(retrieval_html(report), path)


def qa_html(report: QaReport) -> str:
    from dataclasses import asdict

    keys = [k for k in asdict(report.modes[0]) if k != "mode"]
    head = "<tr><th>metric</th>" + "".join(f"<th>{_esc(m.mode)}</th>"
                                           for m in report.modes) + "</tr>"
    rows = []
    for k in keys:
        vals = [asdict(m)[k] for m in report.modes]
        rows.append("<tr>" + _cell(k.replace("_", " ")) + "".join(
            _cell("-" if v is None else (f"{v:.3f}" if isinstance(v, float) else
                  (", ".join(f"{a} {b}" for a, b in v.items()) if isinstance(v, dict) else v)),
                  "n") for v in vals) + "</tr>")
    q_head = ("<tr><th>id</th><th>kind</th><th>mode</th><th>question</th><th>answer</th>"
              "<th>gold</th><th>cited paths</th><th>verdict</th><th>steps</th><th>s</th></tr>")
    q_rows = []
    for r in report.rows:
        verdict = "right" if r.correct else ("error: " + r.error if r.error else "wrong")
        cls = "hit" if r.correct else ""
        q_rows.append("<tr>" + "".join(_cell(v) for v in (
            r.id, r.kind, r.mode if r.mode == r.routed else f"{r.mode} -> {r.routed}",
            r.question, r.answer, " | ".join(r.golds) or "(does not say)",
            ", ".join(r.cited_paths))) + _cell(verdict, cls) + _cell(r.steps, "n")
            + _cell(f"{r.latency_s:.1f}", "n") + "</tr>")
    return _page(f"kbagent eval qa: {report.dataset}",
                 f"KB <code>{_esc(report.kb)}</code>.", head + "".join(rows),
                 "Per question", q_head + "".join(q_rows))


def write_qa_html(report: QaReport, path: Path) -> None:
    write_html(qa_html(report), path)
