"""The symbol index of a KB held in PostgreSQL: written by the ingest's transaction,
read by :class:`kbagent.kb.symbol_index.SymbolIndex` through :class:`PgSymbols`.

The same parser and rules as the local store (:mod:`kbagent.kb.symbols`,
:mod:`kbagent.kb.symbol_langs`); the tables (``kbagent_symbol_files``,
``kbagent_symbols``, ``kbagent_symbol_refs``, :mod:`.schema`) reference their
document with ``ON DELETE CASCADE``, so a changed or removed document loses its
symbols in the transaction that replaces it. Lookups filter by the caller's
groups in SQL (the rule of :func:`kbagent.kb.access.may_read`: a document with no
groups is open, else one group in common), so a restricted file's symbols never
leave the server; :class:`SymbolIndex` checks every row again.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from kbagent.kb.access import Principal
from kbagent.kb.symbol_index import SymbolDef, SymbolRef
from kbagent.kb.symbols import FileSymbols, GrammarMissing, grammar_for, parse_symbols

# the caller's documents: the may_read rule in SQL (%(groups)s: the caller's groups)
_READABLE = "(cardinality(d.access) = 0 OR d.access && %(groups)s::text[])"


@dataclass
class CodeDoc:
    """One code document to index: its id, path, language and lines."""

    doc_id: int
    path: str
    language: str
    texts: list[str]
    numbers: list[int] | None = None


def _parse(doc: CodeDoc) -> tuple[str, FileSymbols | None, str]:
    """(grammar or '', symbols or None, problem) -- as symbol_index.index_document."""
    grammar = grammar_for(doc.language, doc.path)
    if grammar is None:
        return "", None, ""
    try:
        fs = parse_symbols("\n".join(doc.texts), grammar, doc.numbers)
    except GrammarMissing as e:
        return "", None, f"no symbols: {e}"
    return grammar, fs, fs.error


def write_symbols(conn: Any, kb: str, docs: list[CodeDoc]) -> dict[str, str]:
    """Parse ``docs`` and COPY their symbols (inside the caller's transaction).
    Returns {path: why} for files indexed partly (a syntax error) or not at all."""
    problems: dict[str, str] = {}
    parsed: list[tuple[CodeDoc, str, FileSymbols]] = []
    for doc in docs:
        grammar, fs, why = _parse(doc)
        if why:
            problems[doc.path] = why
        if fs is not None:
            parsed.append((doc, grammar, fs))
    if not parsed:
        return problems
    n = sum(len(fs.definitions) for _, _, fs in parsed)
    ids = iter([r[0] for r in conn.execute(
        "SELECT nextval('kbagent_symbols_id_seq') FROM generate_series(1, %s)", (n,))]
        if n else [])
    refs: list[tuple[int, str, int, bool, int | None]] = []
    with conn.cursor().copy("COPY kbagent_symbols(kb,id,doc_id,name,qualname,kind,start_line,"
                            "end_line,parent) FROM STDIN") as cp:
        for doc, _, fs in parsed:
            scope: dict[str, int] = {}
            for d in fs.definitions:
                sid = next(ids)
                scope.setdefault(d.qualname, sid)
                cp.write_row((kb, sid, doc.doc_id, d.name, d.qualname, d.kind, d.start_line,
                              d.end_line, d.parent))
            refs += [(doc.doc_id, r.name, r.line, r.kind == "call", scope.get(r.scope))
                     for r in fs.references]
    with conn.cursor().copy("COPY kbagent_symbol_refs(kb,doc_id,name,line,is_call,scope_id) "
                            "FROM STDIN") as cp:
        for row in refs:
            cp.write_row((kb, *row))
    with conn.cursor().copy("COPY kbagent_symbol_files(kb,doc_id,language,error) "
                            "FROM STDIN") as cp:
        for doc, grammar, fs in parsed:
            cp.write_row((kb, doc.doc_id, grammar, fs.error))
    return problems


def backfill(conn: Any, kb: str) -> dict[str, str]:
    """Index every code document of KB ``kb`` afresh (a KB built before the index)."""
    for table in ("kbagent_symbol_refs", "kbagent_symbols", "kbagent_symbol_files"):
        conn.execute(f"DELETE FROM {table} WHERE kb=%s", (kb,))  # three fixed names
    rows = conn.execute("SELECT id, path, language, text FROM kbagent_documents "
                        "WHERE kb=%s AND format='code' ORDER BY id", (kb,)).fetchall()
    return write_symbols(conn, kb, [CodeDoc(int(i), p, lang, text.split("\n"))
                                    for i, p, lang, text in rows])


class PgSymbols:
    """The symbol rows of one KB (the SymbolReader protocol of
    :mod:`kbagent.kb.symbol_index`), through its store's connection."""

    def __init__(self, store: Any) -> None:  # a PgStore
        self.store = store
        self.kb = store.name

    def definitions(self, name: str, principal: Principal) -> Iterator[SymbolDef]:
        for p, a, b, n, k, q, access in self.store._rows(
                "SELECT d.path, s.start_line, s.end_line, s.name, s.kind, s.qualname, d.access "
                "FROM kbagent_symbols s JOIN kbagent_documents d ON d.kb = s.kb "
                "AND d.id = s.doc_id WHERE s.kb = %(kb)s AND s.name = %(name)s AND "
                f"{_READABLE} ORDER BY d.path COLLATE \"C\", s.start_line, s.id",
                {"kb": self.kb, "name": name, "groups": sorted(principal.groups)}):
            yield p, int(a), int(b), n, k, q, list(access)

    def references(self, name: str, calls_only: bool, principal: Principal,
                   limit: int) -> Iterator[SymbolRef]:
        for p, ln, c, s, access in self.store._rows(
                "SELECT d.path, r.line, r.is_call, coalesce(s.qualname, ''), d.access "
                "FROM kbagent_symbol_refs r JOIN kbagent_documents d ON d.kb = r.kb "
                "AND d.id = r.doc_id LEFT JOIN kbagent_symbols s ON s.kb = r.kb "
                "AND s.id = r.scope_id WHERE r.kb = %(kb)s AND r.name = %(name)s "
                f"AND r.is_call = ANY(%(kinds)s) AND {_READABLE} "
                "ORDER BY d.path COLLATE \"C\", r.line, r.is_call DESC LIMIT %(limit)s",
                {"kb": self.kb, "name": name, "groups": sorted(principal.groups),
                 "kinds": [True] if calls_only else [True, False], "limit": limit}):
            yield p, int(ln), bool(c), s, list(access)

    def file(self, path: str) -> tuple[int, str | None, list[str]] | None:
        rows = self.store._rows(
            "SELECT d.id, f.error, d.access FROM kbagent_documents d "
            "LEFT JOIN kbagent_symbol_files f ON f.kb = d.kb AND f.doc_id = d.id "
            "WHERE d.kb = %s AND d.path = %s", (self.kb, path))
        return (int(rows[0][0]), rows[0][1], list(rows[0][2])) if rows else None

    def outline(self, doc_id: int) -> list[tuple[int, int, str, str, str]]:
        return [(int(a), int(b), n, k, q) for a, b, n, k, q in self.store._rows(
            "SELECT start_line, end_line, name, kind, qualname FROM kbagent_symbols "
            "WHERE kb = %s AND doc_id = %s ORDER BY start_line, end_line DESC, id",
            (self.kb, doc_id))]

    def stats(self) -> dict[str, int]:
        row = self.store._rows(
            "SELECT (SELECT count(*) FROM kbagent_symbol_files WHERE kb = %(kb)s), "
            "(SELECT count(*) FROM kbagent_symbols WHERE kb = %(kb)s), "
            "(SELECT count(*) FROM kbagent_symbol_refs WHERE kb = %(kb)s)", {"kb": self.kb})
        return {"files": int(row[0][0]), "definitions": int(row[0][1]),
                "references": int(row[0][2])}
