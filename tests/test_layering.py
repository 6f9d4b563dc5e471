"""Layers stay apart: kb/, agent/, the session layer, batch, history and evaluation
import no UI library. Each module is imported in a fresh interpreter state of its own
(a child forked from a bare interpreter), so a module cannot hide behind another that
was imported before it; every offender is named with the UI modules it pulled in.
The import-linter contract in pyproject.toml states the same layers for `make lint`."""

from __future__ import annotations

import json
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


NEUTRAL = [*_modules("kbagent.kb"), *_modules("kbagent.agent"), *_modules("kbagent.evaluation"),
           "kbagent.session", "kbagent.session_kbs", "kbagent.session_pool", "kbagent.batch",
           "kbagent.history", "kbagent.settings", "kbagent.defaults", "kbagent.errors"]

# imports each module in a child forked from this bare interpreter: one clean
# sys.modules per module, without paying an interpreter start for each
_PROBE = """
import importlib, json, os, sys
names, ui = json.loads(sys.argv[1]), json.loads(sys.argv[2])
bad = {}
for name in names:
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            importlib.import_module(name)
            found = [m for m in ui if m in sys.modules]
        except BaseException as e:
            found = ["import failed: %s: %s" % (type(e).__name__, e)]
        os.write(w, json.dumps(found).encode())
        os._exit(0)
    os.close(w)
    data = b""
    while chunk := os.read(r, 65536):
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    found = json.loads(data or b'["no answer"]')
    if found:
        bad[name] = found
print(json.dumps(bad))
"""


def test_every_neutral_module_is_listed():
    for name in ("kbagent.agent.llm.llama", "kbagent.kb.views", "kbagent.agent.run.loop",
                 "kbagent.session", "kbagent.kb.search", "kbagent.agent.events",
                 "kbagent.batch", "kbagent.evaluation.metrics"):
        assert name in NEUTRAL
    kb_files = list((ROOT / "kbagent" / "kb").rglob("*.py"))  # kb/formats/, kb/pg/ too
    assert len([n for n in NEUTRAL if n.startswith("kbagent.kb.")]) == len(kb_files) - 1


def test_each_neutral_module_alone_imports_no_ui_library():
    out = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(NEUTRAL), json.dumps(UI)],
                         capture_output=True, text=True, check=True, cwd=ROOT)
    assert json.loads(out.stdout) == {}


def test_the_package_ships_no_test_double():
    """The scripted LLM is a test double: it lives in tests/ and no module of the
    package imports from tests/ or names it (a wheel holds only kbagent/)."""
    offenders = []
    for f in sorted((ROOT / "kbagent").rglob("*.py")):
        text = f.read_text(encoding="utf-8")
        if "ScriptedLLM" in text or "scripted_llm" in text or "from tests" in text \
                or "import tests" in text:
            offenders.append(str(f.relative_to(ROOT)))
    assert offenders == []
    assert (ROOT / "tests" / "scripted_llm.py").is_file()
