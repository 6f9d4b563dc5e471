"""Layers stay apart: kb/ and agent/ import no UI library."""

from __future__ import annotations

import subprocess
import sys

import pytest

UI = ("textual", "typer", "rich", "click")


@pytest.mark.parametrize("module", ["kbagent.kb", "kbagent.kb.search", "kbagent.kb.ingest",
                                    "kbagent.kb.views"])
def test_kb_layer_imports_no_ui_library(module):
    code = (f"import sys, {module}; "
            f"print(','.join(m for m in {UI!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
