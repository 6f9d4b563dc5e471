"""Walk a source folder: respect ``.gitignore`` and ``.kbagentignore`` files.

Ignore files apply to their own folder and below, like git's. Version-control
and tool folders (``.git``, ``node_modules``, virtual environments, caches) and
kbagent homes are always skipped.

Symbolic links (and Windows junctions) are never followed, to a file or a folder,
inside the source root or out of it: a link's own path would otherwise carry its
target's text past the target's ``.kbaccess`` line and ignore rules. A target inside
the root is read at its own path, under its own rules; one outside is not read. Each
link not ignored is named, with why, in the ``skipped`` list the caller passes (the
ingest report). The source root itself may be a link: it is resolved first.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
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


Skipped = list[tuple[str, str]]  # (root-relative path, why): the links met, not followed


def is_link(p: Path | os.DirEntry[str]) -> bool:
    """A symbolic link, or a Windows junction (a folder link Python does not call one)."""
    junction = getattr(p, "is_junction", None)  # Python 3.12+
    return p.is_symlink() or bool(junction is not None and junction())


def link_note(root: Path, p: Path) -> str:
    """Why the link ``p`` (under ``root``, resolved) is not followed, for a person."""
    try:
        target = p.resolve(strict=True)
    except (OSError, RuntimeError):  # broken, or a loop (RuntimeError before Python 3.13)
        return "symbolic link that leads nowhere (broken, or a loop): not followed"
    if not target.is_relative_to(root):
        return "symbolic link to outside the source folder: not followed"
    shown = target.relative_to(root).as_posix()
    return (f"symbolic link to {'the source folder' if shown == '.' else shown}: not followed "
            "(the target is read at its own path, under its own access and ignore rules)")


def read_source(path: Path) -> bytes:
    """A walked file's bytes, refusing a link put in its place since the walk (ELOOP)
    and never blocking on a FIFO."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as f:
        return f.read()


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


def is_kb_home(folder: Path) -> bool:
    """Is ``folder`` a kbagent home (``kbs/<name>/CURRENT``, or ``.lock`` while its first
    ingest runs)? A home inside the folder being ingested is never a source: its own
    store, lock files and indexes."""
    kbs = folder / "kbs"
    try:
        return kbs.is_dir() and any((k / "CURRENT").is_file() or (k / ".lock").exists()
                                    for k in kbs.iterdir())
    except OSError:
        return False


def in_kb_home(root: Path, parts: list[str]) -> bool:
    """Is the root-relative path ``parts`` (a file watcher's event, a named path) in or
    under a kbagent home inside ``root``?"""
    return any(is_kb_home(root.joinpath(*parts[:i])) for i in range(1, len(parts) + 1))


def walk(root: Path, skipped: Skipped | None = None) -> Iterator[SourceFile]:
    """Yield ingestible candidate files under ``root`` in a stable (sorted) order; the
    links met (not ignored) go to ``skipped``."""
    root = root.resolve()
    yield from _walk(root, root, [], [] if skipped is None else skipped)


def _walk(root: Path, start: Path, specs: list[tuple[Path, pathspec.GitIgnoreSpec]],
          skipped: Skipped) -> Iterator[SourceFile]:
    """The files under ``start`` (a folder in ``root``), ``specs`` being the ignore
    files of the folders above ``start``."""

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
                link = is_link(entry)
                is_dir = entry.is_dir(follow_symlinks=False) or (link and p.is_dir())
            except OSError:
                continue
            if link:  # never followed (module docstring); named unless ignored
                if (entry.name not in ALWAYS_SKIP_DIRS | ALWAYS_SKIP_FILES
                        and not ignored(p, is_dir)):
                    skipped.append((p.relative_to(root).as_posix(), link_note(root, p)))
                continue
            if is_dir:
                if entry.name in ALWAYS_SKIP_DIRS or ignored(p, True) or is_kb_home(p):
                    continue
                yield from visit(p)
            elif entry.is_file(follow_symlinks=False):
                if entry.name in ALWAYS_SKIP_FILES or ignored(p, False):
                    continue
                try:
                    size = entry.stat().st_size
                except OSError:
                    continue
                yield SourceFile(p.relative_to(root).as_posix(), p, size)
        if spec is not None:
            specs.pop()

    yield from visit(start)


def walk_named(root: Path, named: set[str], known: Iterable[str],
               skipped: Skipped | None = None) -> list[SourceFile]:
    """What :func:`walk` would yield when only the ``named`` paths (root-relative, as a
    file watcher reports them) may have changed since the ``known`` files were seen:
    each named file that is there and not ignored, each named folder walked whole,
    and every known file not named and not under a named path, assumed still there
    (size 0: the caller does not read it). Sorted by path. Links: as :func:`walk`."""
    root = root.resolve()
    skipped = [] if skipped is None else skipped
    out: dict[str, SourceFile] = {}
    for rel in named:
        p = root / rel
        parts = rel.split("/")
        try:
            is_dir = p.is_dir()
            if (any(x in ALWAYS_SKIP_DIRS for x in parts[:-1])
                    or _ignored_above(root, parts, is_dir) or in_kb_home(root, parts)):
                continue
            if any(is_link(root.joinpath(*parts[:i])) for i in range(1, len(parts))):
                continue  # under a linked folder: the link is never followed
            if is_link(p):
                if parts[-1] not in ALWAYS_SKIP_DIRS | ALWAYS_SKIP_FILES:
                    skipped.append((rel, link_note(root, p)))
                continue
            if is_dir:
                if parts[-1] in ALWAYS_SKIP_DIRS:
                    continue
                specs = _specs_above(root, parts)
                out.update((sf.path, sf) for sf in _walk(root, p, specs, skipped))
            elif p.is_file() and parts[-1] not in ALWAYS_SKIP_FILES:
                out[rel] = SourceFile(rel, p, p.stat().st_size)
        except OSError:
            continue
    for rel in known:
        if not is_named(rel, named) and rel not in out:
            out[rel] = SourceFile(rel, root / rel, 0)
    return [out[k] for k in sorted(out)]


def is_named(rel: str, named: set[str]) -> bool:
    """Is ``rel`` one of the ``named`` paths or under one of them?"""
    if rel in named:
        return True
    i = rel.find("/")
    while i != -1:  # each folder above it
        if rel[:i] in named:
            return True
        i = rel.find("/", i + 1)
    return False


def _specs_above(root: Path, parts: list[str]) -> list[tuple[Path, pathspec.GitIgnoreSpec]]:
    """The ignore files of each folder from ``root`` down to the parent of ``parts``."""
    specs = []
    for i in range(len(parts)):
        folder = root.joinpath(*parts[:i])
        spec = _load_spec(folder)
        if spec is not None:
            specs.append((folder, spec))
    return specs


def _ignored_above(root: Path, parts: list[str], is_dir: bool) -> bool:
    """Is the path (or a folder above it) ignored by an ignore file above it?"""
    for base, spec in _specs_above(root, parts):
        below = root.joinpath(*parts).relative_to(base).as_posix().split("/")
        for j in range(1, len(below) + 1):  # each folder between, then the path itself
            sub = "/".join(below[:j])
            if spec.match_file(sub if j == len(below) and not is_dir else sub + "/"):
                return True
    return False
