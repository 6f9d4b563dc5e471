"""Layers stay apart: kb/, agent/, the session layer and the history store import no
UI library (every module, imported one after another in a fresh interpreter: the first
that pulls one in is named)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

UI = ("textual", "typer", "rich", "click")
ROOT = Path(__file__).resolve().parent.parent


def _modules(package: str) -> list[str]:
    """Every module of ``package`` and its sub-packages, by walking its files."""
    base = ROOT.joinpath(*package.split("."))
    out = []
    for f in sorted(base.rglob("*.py")):
        parts = f.relative_to(ROOT).with_suffix("").parts
        out.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return out


NEUTRAL = [*_modules("kbagent.kb"), *_modules("kbagent.agent"), "kbagent.session",
           "kbagent.history"]


def test_every_agent_and_kb_module_is_listed():
    assert "kbagent.agent.llm.llama" in NEUTRAL and "kbagent.kb.views" in NEUTRAL
    assert "kbagent.agent.loop" in NEUTRAL and "kbagent.session" in NEUTRAL


def test_neutral_layers_import_no_ui_library():
    code = ("import importlib, sys\n"
            "bad = {}\n"
            f"for name in {NEUTRAL!r}:\n"
            "    importlib.import_module(name)\n"
            f"    ui = [m for m in {UI!r} if m in sys.modules]\n"
            "    if ui: bad[name] = ui; break\n"
            "print(bad or '')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT)
    assert out.stdout.strip() == ""
