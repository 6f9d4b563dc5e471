"""File views over a KB's *stored* text with true line numbers: ls, glob, grep, cat.

They read documents from the KB database, never from the file system, so no
argument can reach outside the KB; paths are still validated so that a
traversal attempt gets a clear refusal instead of a confusing "not found".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from pathspec.patterns.gitignore.basic import GitIgnoreBasicPattern

from kbagent.errors import BadInputError, NotFoundError
from kbagent.kb.access import ANONYMOUS, Principal, may_read
from kbagent.kb.models import Line
from kbagent.kb.store_protocol import KbReader

MAX_LINE_CHARS = 2000  # longer lines are matched and shown truncated


class PathRefused(BadInputError):
    """A path that tries to leave the KB (absolute, ``..``, NUL)."""


def normalize_path(path: str) -> str:
    """Validate a KB-relative path; return it in canonical ``a/b/c.md`` form."""
    raw = (path or "").strip().replace("\\", "/")
    if "\x00" in raw:
        raise PathRefused("path contains a NUL byte")
    if raw.startswith("/") or re.match(r"^[A-Za-z]:", raw) or raw.startswith("~"):
        raise PathRefused(f"absolute paths are not allowed ({path!r}); use a KB-relative path")
    parts = [p for p in raw.split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise PathRefused(f"'..' is not allowed in paths ({path!r}); paths are KB-relative")
    return "/".join(parts)


@lru_cache(maxsize=256)
def glob_regex(pattern: str) -> re.Pattern[str]:
    """Translate a glob (``*``, ``?``, ``[..]``, ``**``) to a regex over KB paths.
    A pattern without ``/`` matches file names at any depth, like ``.gitignore``.

    The translation is pathspec's gitignore one, less two gitignore rules that do
    not fit a search over files: a leading ``!`` or ``#`` is an ordinary character,
    and a pattern matches files only (in a .gitignore, a pattern that names a folder
    also matches all below it)."""
    pat = normalize_path(pattern) if pattern.strip() not in ("", "*", "**") else pattern.strip()
    if "/" not in pat:
        pat = "**/" + pat
    if pat[:1] in ("!", "#"):
        pat = "\\" + pat
    regex, _ = GitIgnoreBasicPattern.pattern_to_regex(pat)
    if regex is None:  # nothing left to match (an empty pattern)
        return re.compile(r"(?!)")
    if regex.endswith(_FOLDER_TOO):
        regex = regex[: -len(_FOLDER_TOO)] + "$"
    return re.compile(regex)


_FOLDER_TOO = "(?:/|$)"  # pathspec's ending that lets a pattern match a folder


@dataclass
class GrepMatch:
    path: str
    line: Line


@dataclass
class GrepResult:
    matches: list[GrepMatch]
    files_searched: int
    truncated: bool


@dataclass
class CatResult:
    path: str
    title: str
    lines: list[Line]
    total_lines: int  # highest line number in the document
    next_line: int | None  # where to continue, None at the end
    location: str = ""  # where the lines shown lie in the source (page, slide, cells...)


class FileViews:
    """ls/glob/grep/cat over the documents ``principal`` may read. A document it may
    not read does not exist here: same message, same exit code, same code path as a
    path that was never ingested."""

    def __init__(self, kb: KbReader, principal: Principal = ANONYMOUS) -> None:
        self.kb = kb
        self.principal = principal

    def paths(self) -> list[str]:
        return [p for p, groups in self.kb.store.access_by_path().items()
                if may_read(self.principal, groups)]

    def ls(self, folder: str = "") -> list[str]:
        """Entries directly inside ``folder``: sub-folders end with ``/``."""
        base = normalize_path(folder)
        prefix = base + "/" if base else ""
        entries: set[str] = set()
        for p in self.paths():
            if not p.startswith(prefix):
                continue
            rest = p[len(prefix) :]
            entries.add(rest.split("/", 1)[0] + "/" if "/" in rest else rest)
        if base and not entries:
            raise NotFoundError(f"no folder '{base}' in KB '{self.kb.name}'")
        return sorted(entries, key=lambda e: (not e.endswith("/"), e))

    def glob(self, pattern: str) -> list[str]:
        rx = glob_regex(pattern)
        return [p for p in self.paths() if rx.match(p)]

    def grep(
        self,
        pattern: str,
        *,
        regex: bool = False,
        ignore_case: bool = True,
        path_glob: str = "",
        max_matches: int = 50,
    ) -> GrepResult:
        if not pattern:
            raise BadInputError("empty grep pattern")
        flags = re.IGNORECASE if ignore_case else 0
        try:
            rx = re.compile(pattern if regex else re.escape(pattern), flags)
        except re.error as e:
            raise BadInputError(f"invalid regular expression {pattern!r}: {e}") from e
        paths = self.glob(path_glob) if path_glob else self.paths()
        matches: list[GrepMatch] = []
        truncated = False
        for path in paths:
            loaded = self.kb.store.document_lines(path)
            if loaded is None or not may_read(self.principal, loaded[0].access):
                continue
            for ln in loaded[1]:
                if rx.search(ln.text[:MAX_LINE_CHARS]):
                    if len(matches) >= max_matches:
                        truncated = True
                        break
                    matches.append(GrepMatch(path, ln))
            if truncated:
                break
        return GrepResult(matches, len(paths), truncated)

    def cat(self, path: str, start: int = 1, end: int | None = None,
            max_lines: int = 200) -> CatResult:
        norm = normalize_path(path)
        loaded = self.kb.store.document_lines(norm)
        if loaded is None or not may_read(self.principal, loaded[0].access):
            raise NotFoundError(f"no file '{norm}' in KB '{self.kb.name}'")
        doc, lines = loaded
        total = max((ln.last for ln in lines), default=0)
        start = max(1, int(start))
        if start > total:
            raise BadInputError(f"'{norm}' has {total} lines; start_line {start} is past the end")
        end = total if end is None else max(start, int(end))
        chosen = [ln for ln in lines if ln.last >= start and ln.number <= end]
        next_line = None
        if len(chosen) > max_lines:
            next_line = chosen[max_lines].number
            chosen = chosen[:max_lines]
        elif end < total:
            later = [ln.number for ln in lines if ln.number > end]
            next_line = later[0] if later else None
        where = self.kb.store.locate(norm, chosen[0].number, chosen[-1].last) if chosen else ""
        return CatResult(norm, doc.title, chosen, total, next_line, where)
