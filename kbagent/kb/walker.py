"""Walk a source folder: respect ``.gitignore`` and ``.kbagentignore`` files.

Ignore files apply to their own folder and below, like git's. Version-control
and tool folders (``.git``, ``node_modules``, virtual environments, caches)
are always skipped, as are symbolic links that lead outside the source root.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pathspec

IGNORE_FILES = (".gitignore", ".kbagentignore")
ALWAYS_SKIP_DIRS = {".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv",
                    ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox", ".idea", ".vscode",
                    ".DS_Store", ".cache"}
ALWAYS_SKIP_FILES = {".DS_Store", "Thumbs.db", ".kbaccess", *IGNORE_FILES}


@dataclass
class SourceFile:
    path: str  # relative to the source root, forward slashes
    abspath: Path
    size: int


def _load_spec(folder: Path) -> pathspec.GitIgnoreSpec | None:
    patterns: list[str] = []
    for name in IGNORE_FILES:
        f = folder / name
        if f.is_file():
            try:
                patterns.extend(f.read_text(encoding="utf-8", errors="replace").splitlines())
            except OSError:
                continue
    if not patterns:
        return None
    return pathspec.GitIgnoreSpec.from_lines(patterns)


def walk(root: Path) -> Iterator[SourceFile]:
    """Yield ingestible candidate files under ``root`` in a stable (sorted) order."""
    root = root.resolve()
    specs: list[tuple[Path, pathspec.GitIgnoreSpec]] = []

    def ignored(abspath: Path, is_dir: bool) -> bool:
        for base, spec in specs:
            try:
                rel = abspath.relative_to(base).as_posix()
            except ValueError:
                continue
            if spec.match_file(rel + "/" if is_dir else rel):
                return True
        return False

    def visit(folder: Path) -> Iterator[SourceFile]:
        spec = _load_spec(folder)
        if spec is not None:
            specs.append((folder, spec))
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            entries = []
        for entry in entries:
            p = Path(entry.path)
            try:
                if entry.is_symlink():
                    target = p.resolve()
                    if not target.is_relative_to(root) or target == root:
                        continue
                is_dir = entry.is_dir()
            except OSError:
                continue
            if is_dir:
                if entry.name in ALWAYS_SKIP_DIRS or ignored(p, True):
                    continue
                if entry.is_symlink():  # a link inside the tree would visit files twice
                    continue
                yield from visit(p)
            elif entry.is_file():
                if entry.name in ALWAYS_SKIP_FILES or ignored(p, False):
                    continue
                try:
                    size = entry.stat().st_size
                except OSError:
                    continue
                yield SourceFile(p.relative_to(root).as_posix(), p, size)
        if spec is not None:
            specs.pop()

    yield from visit(root)
