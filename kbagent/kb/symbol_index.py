"""The symbol index of a KB generation: tables in its ``kb.sqlite`` and the lookups
(:class:`SymbolIndex`, which reads a PostgreSQL KB's tables the same way:
:mod:`kbagent.kb.pg.symbols`).

Ingest fills three tables beside ``documents`` (created here, not in the
store's schema, so a KB made before them stays readable):

* ``symbol_files``: one row per code document that was parsed (language, and
  the syntax error found, if any);
* ``symbols``: definitions with their line span and enclosing definition;
* ``symbol_refs``: references (a call or another use) with their line and the
  definition they occur in; names are interned in ``symbol_names`` and the
  enclosing definition is a ``symbols`` id, which keeps the largest table
  small (a reference row is a handful of small integers).

All three reference ``documents(id) ON DELETE CASCADE``, so deleting a changed
or removed document (which ingest does anyway) drops its symbols in the same
transaction; the generation is then committed and published like the rest,
so the index is exactly as crash-safe and incremental as the chunks are.

A KB built before the index has no ``symbol_index`` key in its manifest:
lookups then raise :class:`NoSymbolIndex`, and the next ``kbagent ingest``
builds the index from the stored text of its code documents (no re-embedding,
no ``--rebuild`` needed).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from kbagent.errors import NotFoundError
from kbagent.kb.access import ANONYMOUS, Principal, may_read
from kbagent.kb.models import ExtractedDoc
from kbagent.kb.store import in_batches
from kbagent.kb.symbols import GrammarMissing, grammar_for, parse_symbols

# (path, start line, end line, name, kind, qualname, the document's access groups)
SymbolDef = tuple[str, int, int, str, str, str, list[str]]
# (path, line, is a call, qualname of the enclosing definition, the document's groups)
SymbolRef = tuple[str, int, bool, str, list[str]]

VERSION = 1  # manifest["symbol_index"]; bump when what is extracted changes
MANIFEST_KEY = "symbol_index"

SCHEMA = """
CREATE TABLE IF NOT EXISTS symbol_files(
    doc_id INTEGER PRIMARY KEY REFERENCES documents(id) ON DELETE CASCADE,
    language TEXT NOT NULL,
    error TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS symbols(
    id INTEGER PRIMARY KEY,
    doc_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    qualname TEXT NOT NULL,
    kind TEXT NOT NULL,
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    parent TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS symbols_name ON symbols(name);
CREATE INDEX IF NOT EXISTS symbols_doc ON symbols(doc_id);
CREATE TABLE IF NOT EXISTS symbol_names(
    id INTEGER PRIMARY KEY,
    name TEXT UNIQUE NOT NULL
);
CREATE TABLE IF NOT EXISTS symbol_refs(
    doc_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    name_id INTEGER NOT NULL,
    line INTEGER NOT NULL,
    is_call INTEGER NOT NULL,
    scope_id INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY(name_id, is_call, doc_id, line)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS symbol_refs_doc ON symbol_refs(doc_id);
"""


class NoSymbolIndex(NotFoundError):
    """The KB was built before the symbol index existed."""


def create_tables(conn: sqlite3.Connection) -> None:
    conn.executescript(SCHEMA)


def index_document(conn: sqlite3.Connection, doc_id: int, path: str, language: str,
                   texts: list[str], numbers: list[int] | None = None) -> str:
    """Parse one document's lines and store its symbols. Returns '' or the reason the
    index of this file is partial (a syntax error) or empty (no grammar)."""
    grammar = grammar_for(language, path)
    if grammar is None:
        return ""
    try:
        fs = parse_symbols("\n".join(texts), grammar, numbers)
    except GrammarMissing as e:
        return f"no symbols: {e}"
    conn.execute("INSERT OR REPLACE INTO symbol_files(doc_id,language,error) VALUES(?,?,?)",
                 (doc_id, grammar, fs.error))
    scope_ids: dict[str, int] = {}
    for d in fs.definitions:
        cur = conn.execute(
            "INSERT INTO symbols(doc_id,name,qualname,kind,start_line,end_line,parent) "
            "VALUES(?,?,?,?,?,?,?)",
            (doc_id, d.name, d.qualname, d.kind, d.start_line, d.end_line, d.parent))
        assert cur.lastrowid is not None  # set by every INSERT
        scope_ids.setdefault(d.qualname, int(cur.lastrowid))
    name_ids = _intern(conn, {r.name for r in fs.references})
    conn.executemany(
        "INSERT INTO symbol_refs(doc_id,name_id,line,is_call,scope_id) VALUES(?,?,?,?,?)",
        [(doc_id, name_ids[r.name], r.line, int(r.kind == "call"), scope_ids.get(r.scope, 0))
         for r in fs.references])
    return fs.error


def _intern(conn: sqlite3.Connection, names: set[str]) -> dict[str, int]:
    """Ids of ``names`` in ``symbol_names``, adding the new ones."""
    ordered = sorted(names)
    conn.executemany("INSERT OR IGNORE INTO symbol_names(name) VALUES(?)",
                     [(n,) for n in ordered])
    out: dict[str, int] = {}
    for marks, part in in_batches(ordered):
        out.update((n, i_) for i_, n in conn.execute(
            f"SELECT id,name FROM symbol_names WHERE name IN ({marks})", part))
    return out


def index_extracted(conn: sqlite3.Connection, doc_id: int, doc: ExtractedDoc) -> str:
    """:func:`index_document` for a freshly extracted document (ingest's hook)."""
    if doc.format != "code":
        return ""
    return index_document(conn, doc_id, doc.path, doc.language,
                          [ln.text for ln in doc.lines], [ln.number for ln in doc.lines])


def backfill(conn: sqlite3.Connection) -> dict[str, str]:
    """Index every code document of a generation that has none of its symbols yet
    (a KB built before the index, or by an older index version). Returns
    {path: reason} for files whose index is partial."""
    conn.execute("DELETE FROM symbol_refs")
    conn.execute("DELETE FROM symbol_names")
    conn.execute("DELETE FROM symbols")
    conn.execute("DELETE FROM symbol_files")
    problems = {}
    rows = conn.execute("SELECT id,path,language,text FROM documents WHERE format='code'")
    for doc_id, path, language, text in rows.fetchall():
        why = index_document(conn, doc_id, path, language, text.split("\n"))
        if why:
            problems[path] = why
    return problems


def has_index(manifest: dict[str, Any] | None) -> bool:
    return manifest is not None and manifest.get(MANIFEST_KEY) == VERSION


@dataclass
class SymbolHit:
    """One definition or reference, at ``path:line``."""

    kb: str
    path: str
    line: int
    end_line: int
    name: str
    kind: str  # definition kind, or "call" / "ref"
    qualname: str = ""  # the definition's full name, or for a reference its scope
    text: str = ""  # the source line

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _split(symbol: str) -> tuple[str, str]:
    """("a.b.c" or "a::b" or "a#b") -> (last name, qualified form with dots)."""
    dotted = symbol.strip().replace("::", ".").replace("#", ".").replace("->", ".")
    dotted = dotted.rstrip("()").strip(".")
    return dotted.rsplit(".", 1)[-1], dotted


class SymbolReader(Protocol):
    """The symbol index's rows in path and line order. A store may leave out rows
    ``principal`` may not read (PostgreSQL filters in SQL); :class:`SymbolIndex`
    applies :func:`may_read` to every row itself before any limit."""

    def definitions(self, name: str, principal: Principal) -> Iterable[SymbolDef]: ...

    def references(self, name: str, calls_only: bool, principal: Principal,
                   limit: int) -> Iterable[SymbolRef]: ...

    def file(self, path: str) -> tuple[int, str | None, list[str]] | None:
        """(document id, parse error or None if not parsed, access groups)."""

    def outline(self, doc_id: int) -> list[tuple[int, int, str, str, str]]: ...

    def stats(self) -> dict[str, int]: ...


class SqliteSymbols:
    """The symbol tables of a local generation's ``kb.sqlite`` (the
    :class:`SymbolReader` protocol). Rows come unfiltered;
    :class:`SymbolIndex` applies the access rule before any limit."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def definitions(self, name: str, principal: Principal) -> Iterator[SymbolDef]:
        for p, a, b, n, k, q, access in self.conn.execute(
                "SELECT d.path,s.start_line,s.end_line,s.name,s.kind,s.qualname,d.access "
                "FROM symbols s JOIN documents d ON d.id=s.doc_id WHERE s.name=? "
                "ORDER BY d.path,s.start_line,s.id", (name,)):
            yield p, a, b, n, k, q, json.loads(access)

    def references(self, name: str, calls_only: bool, principal: Principal,
                   limit: int) -> Iterator[SymbolRef]:
        row = self.conn.execute("SELECT id FROM symbol_names WHERE name=?", (name,)).fetchone()
        if row is None:
            return
        kinds = (1,) if calls_only else (1, 0)
        marks = ",".join("?" * len(kinds))
        for p, ln, c, s, access in self.conn.execute(
                "SELECT d.path,r.line,r.is_call,COALESCE(s.qualname,''),d.access "
                "FROM symbol_refs r JOIN documents d ON d.id=r.doc_id "
                "LEFT JOIN symbols s ON s.id=r.scope_id "
                f"WHERE r.name_id=? AND r.is_call IN ({marks}) "
                "ORDER BY d.path,r.line,r.is_call DESC", (row[0], *kinds)):
            yield p, ln, bool(c), s, json.loads(access)

    def file(self, path: str) -> tuple[int, str | None, list[str]] | None:
        row = self.conn.execute(
            "SELECT d.id,f.error,d.access FROM documents d "
            "LEFT JOIN symbol_files f ON f.doc_id=d.id WHERE d.path=?", (path,)).fetchone()
        return None if row is None else (int(row[0]), row[1], json.loads(row[2]))

    def outline(self, doc_id: int) -> list[tuple[int, int, str, str, str]]:
        return [(int(a), int(b), n, k, q) for a, b, n, k, q in self.conn.execute(
            "SELECT start_line,end_line,name,kind,qualname FROM symbols WHERE doc_id=? "
            "ORDER BY start_line,end_line DESC,id", (doc_id,))]

    def stats(self) -> dict[str, int]:
        one = self.conn.execute
        return {"files": one("SELECT COUNT(*) FROM symbol_files").fetchone()[0],
                "definitions": one("SELECT COUNT(*) FROM symbols").fetchone()[0],
                "references": one("SELECT COUNT(*) FROM symbol_refs").fetchone()[0]}


class SymbolIndex:
    """Lookups over one open KB's symbol index (read-only), as ``principal`` sees them.

    The rows come through the KB's store (:meth:`symbol_reader`: the local
    ``kb.sqlite`` tables, or PostgreSQL's ``kbagent_symbol*`` tables). Every result
    comes from a document ``principal`` may read (:func:`may_read`, the one rule):
    definitions, references and their source lines are filtered before any limit is
    applied, and a file it may not read is answered exactly like a file that is not
    there (the same :class:`NotFoundError`, the same message)."""

    def __init__(self, kb: Any, principal: Principal = ANONYMOUS) -> None:  # a KbReader
        self.kb = kb
        self.principal = principal
        if not has_index(kb.manifest):
            source = kb.manifest.get("source") or "<folder>"
            raise NoSymbolIndex(
                f"KB '{kb.name}' has no symbol index (built before code indexing); "
                f"run: kbagent ingest {source} --kb {kb.name}")
        self.rows: SymbolReader = kb.symbol_reader()
        self._lines: dict[str, dict[int, str]] = {}  # path -> line number -> text
        self._readable: dict[tuple[str, ...], bool] = {}  # document groups -> may_read

    def _may_read(self, access: list[str]) -> bool:
        key = tuple(access)
        if key not in self._readable:
            self._readable[key] = may_read(self.principal, access)
        return self._readable[key]

    def _line_text(self, path: str, line: int) -> str:
        if path not in self._lines:
            got = self.kb.store.document_lines(path)
            readable = got is not None and may_read(self.principal, got[0].access)
            self._lines[path] = {ln.number: ln.text for ln in got[1]} if got and readable else {}
        return self._lines[path].get(line, "")

    def definitions(self, symbol: str, limit: int = 50) -> list[SymbolHit]:
        """Where ``symbol`` (a name or a qualified ``Class.method``) is defined."""
        name, dotted = _split(symbol)
        rows = [r[:6] for r in self.rows.definitions(name, self.principal)
                if self._may_read(r[6])]
        if dotted != name:
            rows = [r for r in rows if r[5] == dotted or r[5].endswith("." + dotted)]
        return [SymbolHit(self.kb.name, p, a, b, n, k, q, self._line_text(p, a))
                for p, a, b, n, k, q in rows[:limit]]

    def references(self, symbol: str, calls_only: bool = False,
                   limit: int = 200) -> list[SymbolHit]:
        """Lines that use ``symbol`` (calls first kind in order of file and line)."""
        name, _ = _split(symbol)
        hits: list[SymbolHit] = []
        for p, ln, c, s, access in self.rows.references(name, calls_only, self.principal,
                                                        limit):
            if not self._may_read(access):
                continue
            hits.append(SymbolHit(self.kb.name, p, ln, ln, name, "call" if c else "ref", s,
                                  self._line_text(p, ln)))
            if len(hits) >= limit:
                break
        return hits

    def callers(self, symbol: str, limit: int = 200) -> list[SymbolHit]:
        """Call sites of ``symbol``; ``qualname`` is the calling definition."""
        return self.references(symbol, calls_only=True, limit=limit)

    def outline(self, path: str) -> tuple[list[SymbolHit], str]:
        """Definitions of one file in line order, and its parse problem ('' if none).
        A file the caller may not read raises the same error as a missing one."""
        p = path.strip().lstrip("/")
        row = self.rows.file(p)
        if row is None or not self._may_read(row[2]):
            raise NotFoundError(f"no file '{path}' in KB '{self.kb.name}'")
        if row[1] is None:
            raise NotFoundError(f"'{path}' is not a source file the symbol index parses")
        return [SymbolHit(self.kb.name, p, a, b, n, k, q, self._line_text(p, a))
                for a, b, n, k, q in self.rows.outline(row[0])], row[1]

    def stats(self) -> dict[str, int]:
        """How many files, definitions and references the index holds."""
        return self.rows.stats()
