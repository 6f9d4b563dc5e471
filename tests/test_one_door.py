"""One door (issue 21): the surfaces search and ask through the session layer.

- ``kbagent search`` runs through :class:`~kbagent.session.Session`: each caller
  (``--as``/``--groups``) gets exactly the hits the KB layer's searcher gives that
  caller, and the command loads neither the LLM nor the TUI;
- the session pool (:mod:`kbagent.session_pool`) serves ``kbagent batch`` and
  ``kbagent eval qa``: one model load for every question, mode and KB set;
- no CLI command module imports another (shared pieces live in ``cli/shared.py``
  under public names), and outside ``kb/`` (and the history database) no module
  runs SQL.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import grimp
import pytest
from typer.testing import CliRunner

import kbagent.agent.llm as llm_module
from kbagent.agent.llm.base import Message
from kbagent.cli import app
from kbagent.kb.access import ANONYMOUS, Principal
from kbagent.kb.knowledge_base import KnowledgeBase
from kbagent.kb.search import HybridSearcher
from kbagent.session_pool import SessionPool
from tests.scripted_llm import ScriptedLLM

runner = CliRunner()
ROOT = Path(__file__).resolve().parent.parent
PLAN = "hr/executive_compensation_2026.md"  # readable by the executives group only
CALLERS = [([], ANONYMOUS), (["--as", "maya"], Principal("maya", frozenset({"executives"}))),
           (["--as", "sam"], Principal("sam", frozenset({"engineering"}))),
           (["--groups", "hr,finance"], Principal(None, frozenset({"hr", "finance"})))]


@pytest.fixture
def users(sample_settings):
    (sample_settings.home / "users.toml").write_text(
        '[users]\nmaya = ["executives"]\nsam = ["engineering"]\n')
    return sample_settings


# ------------------------------------------------------------------ search
@pytest.mark.parametrize("mode", ["hybrid", "bm25", "vector"])
def test_cli_search_gives_each_caller_exactly_the_searchers_hits(users, mode):
    kb = KnowledgeBase(users, "sample")
    try:
        for query in ("CEO base salary and severance", "retry backoff jitter"):
            for flags, principal in CALLERS:
                res = runner.invoke(app, ["search", query, "--json", "-k", "15", "--mode", mode,
                                          *flags])
                assert res.exit_code == 0, res.stderr
                got = [(h["kb"], h["path"], h["start_line"], h["end_line"], h["score"])
                       for h in json.loads(res.stdout)]
                want = [(h.kb, h.path, h.start_line, h.end_line, h.score) for h in
                        HybridSearcher([kb]).search(query, 15, mode, principal=principal).hits]
                assert got == want, (query, flags)
    finally:
        kb.close()
    res = runner.invoke(app, ["search", "CEO base salary", "--json", "--as", "maya"])
    assert PLAN in res.stdout  # the comparison above is not between two empty lists
    res = runner.invoke(app, ["search", "CEO base salary", "--json", "--groups", "hr"])
    assert PLAN not in res.stdout


def test_cli_search_loads_neither_the_llm_nor_the_tui(users):
    probe = ("import json, sys\nfrom kbagent.cli import app\n"
             "try:\n    app(['search', 'retry backoff', '--json'])\n"
             "except SystemExit as e:\n    code = e.code\n"
             "print(json.dumps([code, sorted(m for m in sys.modules if m.split('.')[0] in "
             "('llama_cpp', 'textual', 'torch') or m.startswith(('kbagent.tui', "
             "'kbagent.agent.llm', 'kbagent.agent.run')))]))\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         cwd=ROOT, check=True)
    code, loaded = json.loads(out.stdout.splitlines()[-1])
    assert code == 0, out.stderr
    assert json.loads("\n".join(out.stdout.splitlines()[:-1]))  # hits came back
    assert loaded == []


# -------------------------------------------------------------------- pool
class CountingLoader:
    """``load_llm`` for the tests: counts the loads, each a scripted model."""

    def __init__(self) -> None:
        self.loads = 0

    def __call__(self, settings) -> ScriptedLLM:
        self.loads += 1
        return ScriptedLLM([lambda messages: _answer(messages)] * 50)


def _answer(messages: list[Message]) -> str:
    return "Answer: " + messages[-1].content.rsplit("Question:", 1)[-1].strip()[:40]


@pytest.fixture
def loader(monkeypatch, sample_settings) -> CountingLoader:
    counting = CountingLoader()
    monkeypatch.setattr(llm_module, "load_llm", counting)
    return counting


def test_batch_loads_the_model_once_for_every_mode_and_kb_set(loader, tmp_path):
    lines = [{"id": "a", "question": "What is the default TTL for prompt cache entries?"},
             {"id": "b", "question": "Who is the CEO?", "mode": "agent"},
             {"id": "c", "question": "Which port does the gateway use?", "kb": ["sample"]},
             {"id": "d", "question": "What is 2 + 2?", "mode": "direct"}]
    src = tmp_path / "q.jsonl"
    src.write_text("".join(json.dumps(line) + "\n" for line in lines))
    out = tmp_path / "a.jsonl"
    res = runner.invoke(app, ["batch", str(src), "-o", str(out), "--mode", "rag", "-q"])
    assert res.exit_code == 0, res.stderr
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["error"] for r in recs] == [None] * 4
    assert [r["requested_mode"] for r in recs] == ["rag", "agent", "rag", "direct"]
    assert loader.loads == 1


def test_eval_qa_loads_the_model_once_for_every_mode(loader, tmp_path):
    src = tmp_path / "qa.jsonl"
    src.write_text("".join(json.dumps(row) + "\n" for row in [
        {"id": "q1", "question": "What was Kestrel's gross margin in Q3 2026?",
         "answer": "66.2%", "gold_paths": ["finance/q3_2026_report.html"], "kind": "factoid"},
        {"id": "q2", "question": "Who is the CEO of Kestrel Systems?", "answer": "Maya Okafor",
         "gold_paths": ["company/overview.md"], "kind": "factoid"}]))
    res = runner.invoke(app, ["eval", "qa", str(src), "--compare-modes", "rag,agent,direct",
                              "--json", "-q"])
    assert res.exit_code == 0, res.stderr
    report = json.loads(res.stdout)
    assert [m["mode"] for m in report["modes"]] == ["rag", "agent", "direct"]
    assert loader.loads == 1


def test_the_pool_reuses_a_session_per_kbs_mode_and_tools(loader, sample_settings):
    pool = SessionPool(sample_settings, None, "rag", "knowledge")
    try:
        first = pool.session(None, "rag", "knowledge")
        assert pool.session(None, "rag", "knowledge") is first
        other = pool.session(["sample"], "agent", "full")
        assert other is not first and other.load_llm() is first.load_llm()
        assert [kb.name for kb in other.kbs] == ["sample"]
    finally:
        pool.close()
    assert loader.loads == 1 and first.kbs == [] and other.kbs == []


# -------------------------------------------------------------- structure
COMMANDS = sorted(p.stem for p in (ROOT / "kbagent" / "cli").glob("*_commands.py"))


def test_no_cli_command_module_imports_another():
    graph = grimp.build_graph("kbagent", exclude_type_checking_imports=False, cache_dir=None)
    assert len(COMMANDS) >= 8
    for name in COMMANDS:
        imported = graph.find_modules_directly_imported_by(f"kbagent.cli.{name}")
        others = sorted(m for m in imported if m.removeprefix("kbagent.cli.") in COMMANDS)
        assert others == [], name


def _private_imports(path: Path) -> list[str]:
    """``from kbagent... import _name`` statements of one file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [f"{node.module}.{a.name}" for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("kbagent")
            for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]


def test_surfaces_and_the_session_layer_borrow_no_private_names():
    where = [ROOT / "kbagent" / d for d in ("cli", "tui", "server")]
    files = [f for d in where for f in d.glob("*.py")]
    files += [ROOT / "kbagent" / f for f in ("session.py", "session_kbs.py",
                                               "session_pool.py", "batch.py", "verify.py")]
    assert len(files) > 20
    assert {str(f.relative_to(ROOT)): _private_imports(f) for f in files
            if _private_imports(f)} == {}


def _sql_calls(path: Path) -> list[str]:
    """Where ``path`` reaches for a database connection or runs a statement."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [f"{path.name}:{node.lineno}" for node in ast.walk(tree)
            if isinstance(node, ast.Attribute)
            and node.attr in ("conn", "execute", "executemany", "executescript", "cursor")]


def test_no_sql_outside_the_kb_layer_and_the_history_database():
    package = ROOT / "kbagent"
    files = [f for f in package.rglob("*.py")
             if "kb" not in f.relative_to(package).parts[:1] and f.name != "history.py"]
    assert len(files) > 50
    assert [c for f in files for c in _sql_calls(f)] == []
    assert _sql_calls(package / "history.py")  # the check does see SQL where there is some
