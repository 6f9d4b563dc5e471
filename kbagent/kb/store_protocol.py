"""What the read side of a KB offers, whatever holds it.

Two implementations:

* local (:class:`kbagent.kb.knowledge_base.KnowledgeBase`): a generation of
  ``kb.sqlite`` + tantivy + usearch on local disk;
* PostgreSQL + pgvector (:class:`kbagent.kb.pg.kb.PgKnowledgeBase`): tables
  shared by every KB of a database, registered by
  ``kbagent ingest DIR --kb K --store postgresql://...`` (:mod:`kbagent.kb.registry`).

Search (:mod:`kbagent.kb.search`), the file views (:mod:`kbagent.kb.views`),
access checks and the symbol index (:mod:`kbagent.kb.symbol_index`, through
:class:`~kbagent.kb.symbol_index.SymbolReader`) read a KB only through these
methods. What ingest writes is the same for both (documents with their text
and access groups, chunks with line spans, heading trail and text, one vector
per chunk, the definitions and references of code documents); each store has
its own writer (:mod:`kbagent.kb.ingest`, :mod:`kbagent.kb.pg.ingest`).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, Protocol

import numpy as np

from kbagent.kb.access import Principal
from kbagent.kb.models import Line
from kbagent.kb.store import ChunkRow, DocRow
from kbagent.kb.symbol_index import SymbolReader
from kbagent.settings import Settings


class ChunkReader(Protocol):
    """Documents and chunks by id or path, and the access data behind them."""

    def count(self) -> tuple[int, int]: ...

    def documents(self) -> dict[str, DocRow]: ...

    def chunks(self, ids: list[int]) -> dict[int, ChunkRow]: ...

    def document_lines(self, path: str) -> tuple[DocRow, list[Line]] | None: ...

    def locate(self, path: str, start: int, end: int) -> str: ...

    def paths(self) -> list[str]: ...

    def access_by_path(self) -> dict[str, list[str]]: ...

    def visible_counts(self, principal: Principal) -> tuple[int, int]: ...

    def visible_bytes(self, principal: Principal) -> int: ...

    def chunk_spans(self, path: str) -> list[tuple[int, int]]: ...

    def first_headings(self) -> list[tuple[str, str, str | None, list[str]]]: ...

    def text_candidates(self, doc_hash: str, words: list[str], exclude: str
                        ) -> tuple[list[str], list[str]]: ...


class LexicalReader(Protocol):
    def search(self, query: str, limit: int,
               principal: Principal | None = ...) -> list[tuple[int, float]]: ...


class VectorReader(Protocol):
    def __len__(self) -> int: ...

    def search(self, vector: np.ndarray, limit: int,
               denied: Collection[int] | None = None) -> list[tuple[int, float]]: ...


class KbReader(Protocol):
    """One open KB."""

    settings: Settings
    name: str
    generation: str  # the published generation open now (its id, or the PG store's stamp)
    manifest: dict[str, Any]
    documents: int
    chunks: int
    vectors_pending: bool

    @property
    def store(self) -> ChunkReader: ...

    @property
    def lexical(self) -> LexicalReader: ...

    @property
    def vectors(self) -> VectorReader: ...

    @property
    def embedding_space(self) -> str: ...

    @property
    def embedding_model(self) -> str: ...

    def refresh(self) -> bool: ...

    def denied_chunks(self, principal: Principal) -> frozenset[int]: ...

    def mentions(self, word: str, principal: Principal) -> bool: ...

    def symbol_reader(self) -> SymbolReader: ...

    def close(self) -> None: ...
