"""The ``kbagent`` command (Typer).

Answers and results go to stdout, progress and diagnostics to stderr. Every
:class:`~kbagent.errors.KbagentError` becomes one red line on stderr and its
exit code (see :mod:`kbagent.cli.common`). Heavy modules are imported inside
the commands so ``kbagent --help`` stays fast.
"""

from __future__ import annotations

# importing the command modules registers their commands on ``app``
from kbagent.cli import (  # noqa: F401
    ask_commands,
    batch_commands,
    code_commands,
    eval_commands,
    kb_commands,
    models_commands,
    serve_commands,
    tui_commands,
    verify_commands,
)
from kbagent.cli.app import app, main

__all__ = ["app", "main"]
