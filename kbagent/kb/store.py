"""The SQLite part of a KB generation: documents (with their stored text) and chunks.

Chunk ids come from ``AUTOINCREMENT`` so an id is never reused within a KB's
history; they are the keys of the tantivy and usearch indexes too.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from kbagent.kb.access import Principal, may_read
from kbagent.kb.file_modes import FILE_MODE, private_file, tighten
from kbagent.kb.locations import describe, dumps, loads
from kbagent.kb.models import Chunk, ExtractedDoc, Line

SQL_BATCH = 500  # ids per ``IN (...)``: well below SQLite's limit on bound parameters


T = TypeVar("T")


def text_hash(model_id: str, text: str) -> str:
    """A chunk's ``text_hash``: its vector is reused when model and indexed text match."""
    return hashlib.sha1(f"{model_id}\n{text}".encode()).hexdigest()


def in_batches(values: Sequence[T], size: int = SQL_BATCH) -> Iterator[tuple[str, list[T]]]:
    """``values`` in parts of ``size``, each with its ``?,?,…`` placeholders for a
    SQL ``IN (...)``."""
    for i in range(0, len(values), size):
        part = list(values[i : i + size])
        yield ",".join("?" * len(part)), part

SCHEMA = """
CREATE TABLE IF NOT EXISTS documents(
    id INTEGER PRIMARY KEY,
    path TEXT UNIQUE NOT NULL,
    title TEXT NOT NULL DEFAULT '',
    format TEXT NOT NULL,
    language TEXT NOT NULL DEFAULT '',
    content_hash TEXT NOT NULL,
    size INTEGER NOT NULL,
    access TEXT NOT NULL DEFAULT '[]',
    text TEXT NOT NULL,
    line_map TEXT,
    locations TEXT,
    n_chunks INTEGER NOT NULL DEFAULT 0,
    ingested_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS chunks(
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    doc_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    ordinal INTEGER NOT NULL,
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    heading TEXT NOT NULL DEFAULT '',
    text TEXT NOT NULL,
    text_hash TEXT NOT NULL,
    location TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS chunks_doc ON chunks(doc_id);
CREATE INDEX IF NOT EXISTS chunks_hash ON chunks(text_hash);
"""


@dataclass
class DocRow:
    id: int
    path: str
    title: str
    format: str
    content_hash: str
    size: int
    access: list[str]
    n_chunks: int
    located: bool = True  # False: stored before locations were (re-extract to get them)


@dataclass
class ChunkRow:
    id: int
    doc_id: int
    path: str
    title: str
    start_line: int
    end_line: int
    heading: str
    text: str
    access: list[str]
    location: str = ""  # page/slide/sheet cells (kb/locations.py); '' when unknown


# Columns added after schema version 2 was released: an older generation lacks them. A
# writer adds them (its documents then get them as they are re-extracted); a reader of
# an old generation reads '' (citations by line only) and ingest re-extracts the
# formats that have locations.
_ADDED_COLUMNS = (("documents", "locations", "TEXT"),
                  ("chunks", "location", "TEXT NOT NULL DEFAULT ''"))
# files extracted with locations now (a .csv was plain text before, a .docx skipped)
LOCATED_SUFFIXES = (".pdf", ".docx", ".pptx", ".xlsx", ".xlsm", ".csv", ".tsv", ".epub",
                    ".ipynb")


def _line_map(lines: list[Line]) -> str | None:
    if all(ln.number == i + 1 and ln.end in (0, ln.number) for i, ln in enumerate(lines)):
        return None
    return json.dumps([[ln.number, ln.last] for ln in lines], separators=(",", ":"))

def like_pattern(word: str) -> str:
    """``%word%`` for LIKE / ILIKE with ``\\`` as the escape character."""
    return "%" + word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def spellings(word: str) -> list[str]:
    """``word`` as typed and as printed: an apostrophe may be the keyboard's (') or the
    typographic one (’), and a user types the first where documents often print the
    second ("I'm", "don't")."""
    return list(dict.fromkeys([word, word.replace("'", "\u2019"), word.replace("\u2019", "'")]))


class Store:
    """Thin typed wrapper over one generation's ``kb.sqlite``."""

    def __init__(self, path: Path, readonly: bool = False) -> None:
        self.path = path
        if readonly:
            tighten(path, FILE_MODE)  # a KB written before its files were made private
            uri = f"file:{path}?mode=ro"
            self.conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
        else:
            # created 0600 before SQLite opens it: SQLite gives its journal the same mode
            self.conn = sqlite3.connect(private_file(path), check_same_thread=False)
            self.conn.execute("PRAGMA journal_mode=DELETE")
            self.conn.execute("PRAGMA synchronous=FULL")
            self.conn.executescript(SCHEMA)
        self.conn.execute("PRAGMA foreign_keys=ON")
        self.has_locations = self._added_columns(upgrade=not readonly)

    def _added_columns(self, upgrade: bool) -> bool:
        for table, column, decl in _ADDED_COLUMNS:
            have = {r[1] for r in self.conn.execute(f"PRAGMA table_info({table})")}
            if column not in have:
                if not upgrade:
                    return False
                self.conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {decl}")
        return True

    def close(self) -> None:
        self.conn.close()

    # --- writes ------------------------------------------------------------
    def add_document(self, doc: ExtractedDoc, content_hash: str, size: int) -> int:
        cur = self.conn.execute(
            "INSERT INTO documents(path,title,format,language,content_hash,size,access,text,"
            "line_map,ingested_at,locations) VALUES(?,?,?,?,?,?,?,?,?,?,?)",
            (
                doc.path, doc.title, doc.format, doc.language, content_hash, size,
                json.dumps(doc.access), "\n".join(ln.text for ln in doc.lines),
                _line_map(doc.lines), time.time(), dumps(doc.locations),
            ),
        )
        assert cur.lastrowid is not None  # set by every INSERT
        return int(cur.lastrowid)

    def add_chunks(self, doc_id: int, chunks: list[Chunk], hashes: list[str]) -> list[int]:
        ids = []
        for ch, h in zip(chunks, hashes, strict=True):
            cur = self.conn.execute(
                "INSERT INTO chunks(doc_id,ordinal,start_line,end_line,heading,text,text_hash,"
                "location) VALUES(?,?,?,?,?,?,?,?)",
                (doc_id, ch.ordinal, ch.start_line, ch.end_line, ch.heading, ch.text, h,
                 ch.location),
            )
            assert cur.lastrowid is not None  # set by every INSERT
            ids.append(int(cur.lastrowid))
        self.conn.execute("UPDATE documents SET n_chunks=? WHERE id=?", (len(chunks), doc_id))
        return ids

    def delete_documents(self, doc_ids: Iterable[int]) -> list[int]:
        """Delete documents and their chunks; return the deleted chunk ids."""
        ids = list(doc_ids)
        chunk_ids: list[int] = []
        for marks, part in in_batches(ids):
            chunk_ids += [
                r[0] for r in self.conn.execute(
                    f"SELECT id FROM chunks WHERE doc_id IN ({marks})", part
                )
            ]
            self.conn.execute(f"DELETE FROM chunks WHERE doc_id IN ({marks})", part)
            self.conn.execute(f"DELETE FROM documents WHERE id IN ({marks})", part)
        return chunk_ids

    def commit(self) -> None:
        self.conn.commit()

    # --- reads -------------------------------------------------------------
    def documents(self) -> dict[str, DocRow]:
        rows = self.conn.execute(
            "SELECT id,path,title,format,content_hash,size,access,n_chunks FROM documents"
        )
        return {
            r[1]: DocRow(r[0], r[1], r[2], r[3], r[4], r[5], json.loads(r[6]), r[7],
                         located=self.has_locations
                         or not r[1].lower().endswith(LOCATED_SUFFIXES))
            for r in rows
        }

    def chunk_ids_by_hash(self, doc_ids: list[int]) -> dict[str, int]:
        out: dict[str, int] = {}
        for marks, part in in_batches(doc_ids):
            for cid, h in self.conn.execute(
                f"SELECT id,text_hash FROM chunks WHERE doc_id IN ({marks})", part
            ):
                out[h] = cid
        return out

    def count(self) -> tuple[int, int]:
        docs = self.conn.execute("SELECT COUNT(*) FROM documents").fetchone()[0]
        chunks = self.conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
        return int(docs), int(chunks)

    def chunks(self, ids: list[int]) -> dict[int, ChunkRow]:
        out: dict[int, ChunkRow] = {}
        location = "c.location" if self.has_locations else "''"
        for marks, part in in_batches(ids):
            for r in self.conn.execute(
                "SELECT c.id,c.doc_id,d.path,d.title,c.start_line,c.end_line,c.heading,c.text,"
                f"d.access,{location} FROM chunks c JOIN documents d ON d.id=c.doc_id "
                f"WHERE c.id IN ({marks})",
                part,
            ):
                out[r[0]] = ChunkRow(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7],
                                     json.loads(r[8]), r[9] or "")
        return out

    def locate(self, path: str, start: int, end: int) -> str:
        """Where lines ``start``..``end`` of ``path`` lie in the source ('' if unknown)."""
        if not self.has_locations:
            return ""
        row = self.conn.execute("SELECT locations FROM documents WHERE path=?",
                                (path,)).fetchone()
        return describe(loads(row[0]), start, end) if row and row[0] else ""

    def document_lines(self, path: str) -> tuple[DocRow, list[Line]] | None:
        row = self.conn.execute(
            "SELECT id,path,title,format,content_hash,size,access,n_chunks,text,line_map "
            "FROM documents WHERE path=?",
            (path,),
        ).fetchone()
        if row is None:
            return None
        doc = DocRow(row[0], row[1], row[2], row[3], row[4], row[5], json.loads(row[6]), row[7])
        texts = row[8].split("\n")
        if row[9] is None:
            lines = [Line(i + 1, t) for i, t in enumerate(texts)]
        else:
            spans = json.loads(row[9])
            lines = [
                Line(n, t, e if e != n else 0) for (n, e), t in zip(spans, texts, strict=False)
            ]
        return doc, lines

    def paths(self) -> list[str]:
        return [r[0] for r in self.conn.execute("SELECT path FROM documents ORDER BY path")]

    # --- access (kbagent.kb.access.may_read decides) ------------------------
    def access_by_path(self) -> dict[str, list[str]]:
        """Every document's path and groups, sorted by path."""
        return {r[0]: json.loads(r[1]) for r in self.conn.execute(
            "SELECT path, access FROM documents ORDER BY path")}

    def denied_chunk_ids(self, principal: Principal) -> frozenset[int]:
        """Chunks of the documents ``principal`` may not read."""
        denied_docs = [r[0] for r in self.conn.execute(
            "SELECT id, access FROM documents WHERE access != '[]'")
            if not may_read(principal, json.loads(r[1]))]
        out: set[int] = set()
        for marks, part in in_batches(denied_docs):
            out.update(r[0] for r in self.conn.execute(
                f"SELECT id FROM chunks WHERE doc_id IN ({marks})", part))
        return frozenset(out)

    def mentions(self, word: str, denied: frozenset[int]) -> bool:
        """Does any chunk outside ``denied`` contain ``word`` (case-insensitive, as a
        substring, either apostrophe: :func:`spellings`)? One scan of the stored text a
        spelling, stopping at the first match."""
        for form in spellings(word):
            for (chunk_id,) in self.conn.execute(
                    "SELECT id FROM chunks WHERE text LIKE ? ESCAPE '\\'", (like_pattern(form),)):
                if chunk_id not in denied:
                    return True
        return False

    def text_candidates(self, doc_hash: str, words: list[str], exclude: str
                        ) -> tuple[list[str], list[str]]:
        """Paths other than ``exclude`` with content hash ``doc_hash``, and (at most 50)
        whose text holds every one of ``words`` (case-insensitive), in path order."""
        same = [r[0] for r in self.conn.execute(
            "SELECT path FROM documents WHERE content_hash = ? AND path != ? ORDER BY path",
            (doc_hash, exclude))]
        if not words:
            return same, []
        like = " AND ".join(["text LIKE ? ESCAPE '\\'"] * len(words))
        rows = self.conn.execute(f"SELECT path FROM documents WHERE path != ? AND {like} "
                                 "ORDER BY path LIMIT 50", (exclude, *map(like_pattern, words)))
        return same, [r[0] for r in rows]

    def visible_bytes(self, principal: Principal) -> int:
        """Bytes of the source files ``principal`` may read (what ``kbs`` shows as size:
        the index's size on disk would grow with the documents the caller cannot see)."""
        return sum(int(size) for access, size in self.conn.execute(
            "SELECT access, size FROM documents") if may_read(principal, json.loads(access)))

    def visible_counts(self, principal: Principal) -> tuple[int, int]:
        """(documents, chunks) that ``principal`` may read."""
        docs = chunks = 0
        for access, n_chunks in self.conn.execute("SELECT access, n_chunks FROM documents"):
            if may_read(principal, json.loads(access)):
                docs += 1
                chunks += n_chunks
        return docs, chunks

    # --- for the surfaces (kbagent.session) ----------------------------------
    def chunk_spans(self, path: str) -> list[tuple[int, int]]:
        """(start_line, end_line) of each chunk of ``path``, in order."""
        return [(int(a), int(b)) for a, b in self.conn.execute(
            "SELECT c.start_line, c.end_line FROM chunks c JOIN documents d ON d.id = c.doc_id "
            "WHERE d.path = ? ORDER BY c.ordinal", (path,))]

    def first_headings(self) -> list[tuple[str, str, str | None, list[str]]]:
        """(title, path, first non-empty heading, access) of every document, by path."""
        return [(r[0], r[1], r[2], json.loads(r[3])) for r in self.conn.execute(
            "SELECT d.title, d.path, (SELECT c.heading FROM chunks c WHERE c.doc_id = d.id "
            "AND c.heading != '' ORDER BY c.ordinal LIMIT 1), d.access FROM documents d "
            "ORDER BY d.path")]
