"""Access control through the symbol index (issue 20, item 1): ``kbagent code
outline|def|refs|callers`` and the agent's code tools show nothing from a file the
caller may not read, never fall back to unfiltered line text, and answer a denied
path exactly like a missing one."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from kbagent.agent.answer.citations import CitationLedger
from kbagent.agent.tools.base import ToolContext
from kbagent.agent.tools.schema import validate
from kbagent.agent.tools.toolset import registry, run_tool
from kbagent.cli import app
from kbagent.kb.access import ANONYMOUS, Principal
from kbagent.kb.ingest import Ingestor
from kbagent.kb.knowledge_base import KnowledgeBase
from kbagent.kb.search import HybridSearcher
from kbagent.kb.symbol_index import SymbolIndex

runner = CliRunner()
SECRET = "src/secret/payroll.py"
MISSING = "src/secret/payroll2.py"
# words that exist only in the restricted file
SECRETS = ("SECRET_SALARY_TABLE", "424242", "payroll", "run_payroll", "ceo_bonus")
EXEC = Principal("maya", frozenset({"executives"}))
FILES = {
    ".kbaccess": "src/secret/** executives\n",
    SECRET: (
        'SECRET_SALARY_TABLE = {"ceo": 424242}\n\n\n'
        "def ceo_bonus(rate):\n"
        "    return SECRET_SALARY_TABLE[\"ceo\"] * rate\n\n\n"
        "def run_payroll():\n"
        "    total = helper(ceo_bonus(2))\n"
        "    return format_total(total)\n"
    ),
    "src/public/util.py": (
        "def helper(x):\n"
        "    return x + 1\n\n\n"
        "def format_total(t):\n"
        "    return helper(t)\n"
    ),
    "src/zz/late.py": "from util import helper\n\nVALUE = helper(41)\n",
}


@pytest.fixture
def kb(settings, make_folder, embedder):
    Ingestor(settings, "k", embedder=embedder).run(make_folder(FILES))
    return KnowledgeBase(settings, "k")


def leaked(text: str) -> list[str]:
    return [s for s in SECRETS if s.lower() in text.lower()]


def cli(*args: str) -> tuple[int, str]:
    res = runner.invoke(app, list(args))
    return res.exit_code, res.output


# --------------------------------------------------------------- the index itself
def test_symbol_index_filters_every_lookup_by_the_callers_groups(kb):
    anon, exec_ = SymbolIndex(kb), SymbolIndex(kb, EXEC)
    assert anon.definitions("SECRET_SALARY_TABLE") == []
    assert anon.definitions("ceo_bonus") == [] and anon.references("ceo_bonus") == []
    assert [h.where for h in anon.callers("helper")] == ["src/public/util.py:6",
                                                         "src/zz/late.py:3"]
    assert [h.where for h in anon.references("format_total")] == []  # only called in secret
    assert [h.where for h in anon.definitions("format_total")] == ["src/public/util.py:5"]
    # an executive sees the restricted file, with its source lines
    hit, = exec_.definitions("SECRET_SALARY_TABLE")
    assert hit.where == f"{SECRET}:1" and "424242" in hit.text
    assert [h.where for h in exec_.callers("helper")] == [
        "src/public/util.py:6", f"{SECRET}:9", "src/zz/late.py:3"]


def test_outline_of_a_denied_file_is_exactly_a_missing_file(kb):
    anon = SymbolIndex(kb)
    with pytest.raises(Exception) as denied:
        anon.outline(SECRET)
    with pytest.raises(Exception) as missing:
        anon.outline(MISSING)
    assert type(denied.value) is type(missing.value)
    assert str(denied.value).replace(SECRET, MISSING) == str(missing.value)
    hits, _ = SymbolIndex(kb, EXEC).outline(SECRET)
    assert [h.name for h in hits] == ["SECRET_SALARY_TABLE", "ceo_bonus", "run_payroll"]


def test_the_limit_applies_after_the_filter(kb):
    # call sites in path order: public/util.py, secret/payroll.py, zz/late.py
    assert [h.where for h in SymbolIndex(kb).callers("helper", limit=2)] == [
        "src/public/util.py:6", "src/zz/late.py:3"]
    assert [h.where for h in SymbolIndex(kb, EXEC).callers("helper", limit=2)] == [
        "src/public/util.py:6", f"{SECRET}:9"]


# ------------------------------------------------------------------------ CLI
@pytest.mark.parametrize("args", [
    ["code", "outline", SECRET], ["code", "def", "SECRET_SALARY_TABLE"],
    ["code", "def", "ceo_bonus"], ["code", "refs", "SECRET_SALARY_TABLE"],
    ["code", "refs", "helper"], ["code", "callers", "helper"], ["code", "callers", "ceo_bonus"],
    ["code", "outline", SECRET, "--json"], ["code", "def", "SECRET_SALARY_TABLE", "--json"],
    ["code", "refs", "helper", "--json"], ["code", "callers", "helper", "--json"],
    ["code", "refs", "helper", "--groups", "hr"],
])
def test_cli_code_commands_leak_nothing_to_a_caller_without_the_group(kb, args):
    _, out = cli(*args, "--kb", "k")
    typed = " ".join(args).lower()
    assert not [s for s in leaked(out) if s.lower() not in typed], (args, out)
    assert "424242" not in out and (SECRET not in out or SECRET in args), out


def test_cli_outline_denied_reads_like_missing(kb):
    denied = cli("code", "outline", SECRET, "--kb", "k")
    missing = cli("code", "outline", MISSING, "--kb", "k")
    assert denied[0] == missing[0] != 0
    assert denied[1].replace(SECRET, MISSING) == missing[1]
    assert "424242" not in denied[1]


def test_cli_an_executive_sees_the_restricted_code(kb, kb_home):
    code, out = cli("code", "outline", SECRET, "--kb", "k", "--groups", "executives")
    assert code == 0 and "SECRET_SALARY_TABLE" in out
    code, out = cli("code", "def", "SECRET_SALARY_TABLE", "--kb", "k", "--groups", "executives")
    assert code == 0 and "424242" in out and SECRET in out
    (kb_home / "users.toml").write_text('[users]\nmaya = ["executives"]\n')
    code, out = cli("code", "callers", "helper", "--kb", "k", "--as", "maya", "--json")
    assert code == 0 and SECRET in {h["path"] for h in json.loads(out)}


# ---------------------------------------------------------------- agent tools
def call(ctx: ToolContext, name: str, args: dict):
    tool = registry("full")[name]
    out, _ = run_tool(tool, ctx, validate(name, tool.parameters, args))
    return out


def ctx_for(kb, principal) -> ToolContext:
    return ToolContext({"k": kb}, HybridSearcher([kb]), CitationLedger(50), principal=principal)


PROBES = [("code_outline", {"path": SECRET}),
          ("code_definition", {"symbol": "SECRET_SALARY_TABLE"}),
          ("code_definition", {"symbol": "ceo_bonus"}),
          ("code_definition", {"symbol": "run_payroll"}),
          ("code_references", {"symbol": "SECRET_SALARY_TABLE"}),
          ("code_references", {"symbol": "helper"}), ("code_callers", {"symbol": "helper"}),
          ("code_callers", {"symbol": "ceo_bonus"}),
          ("code_references", {"symbol": "format_total"})]


def test_code_tools_leak_nothing_and_cite_nothing_restricted(kb):
    for principal in (ANONYMOUS, Principal(None, frozenset({"hr"}))):
        ctx = ctx_for(kb, principal)
        for name, args in PROBES:
            out = call(ctx, name, args)
            shown = out.text + out.summary + " ".join(map(str, out.sources))
            typed = json.dumps(args)
            assert not [s for s in leaked(shown) if s.lower() not in typed.lower()], \
                (name, args, out.text)
            assert SECRET not in shown or name == "code_outline", (name, out.text)
        assert not [c for c in ctx.ledger if c.path == SECRET]
        assert not leaked(" ".join(c.text for c in ctx.ledger))


def test_code_outline_tool_denied_reads_like_missing(kb):
    ctx = ctx_for(kb, ANONYMOUS)
    denied = call(ctx, "code_outline", {"path": SECRET})
    missing = call(ctx, "code_outline", {"path": MISSING})
    assert not denied.ok and not missing.ok
    assert denied.text.replace(SECRET, MISSING) == missing.text
    assert denied.summary.replace(SECRET, MISSING) == missing.summary


def test_code_tools_show_an_executive_the_restricted_code_with_citations(kb):
    ctx = ctx_for(kb, EXEC)
    out = call(ctx, "code_definition", {"symbol": "SECRET_SALARY_TABLE"})
    assert out.ok and "424242" in out.text and out.citations
    out = call(ctx, "code_outline", {"path": SECRET})
    assert out.ok and "ceo_bonus" in out.text
    assert any(c.path == SECRET and "424242" in c.text for c in ctx.ledger)
