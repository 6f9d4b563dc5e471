"""JSON Lines input, read one way everywhere (traces, answer files, BEIR and
HotpotQA question sets): blank lines skipped, a line that is not JSON named by file
and line number in a one-line :class:`~kbagent.errors.BadInputError`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kbagent.errors import BadInputError


def numbered_jsonl(path: Path, what: str = "a JSON object") -> list[tuple[int, Any]]:
    """(line number, parsed value) for every non-blank line of ``path``; ``what`` names
    a line's expected content in the error ("a trace record")."""
    rows = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if line.strip():
                try:
                    rows.append((n, json.loads(line)))
                except json.JSONDecodeError as e:
                    raise BadInputError(f"{path}:{n}: not {what} ({e.msg})") from e
    return rows
