"""Connections to the PostgreSQL store, with one-line errors."""

from __future__ import annotations

import contextlib
from typing import Any

from kbagent.errors import BackendError, BadInputError


def connect(dsn: str, *, autocommit: bool = True, vectors: bool = True, timeout: int = 10,
            **params: Any) -> Any:
    """A psycopg connection to ``dsn`` (pgvector's types registered when ``vectors``;
    ``params``: further libpq parameters, e.g. keepalives)."""
    try:
        import psycopg
    except ImportError:
        raise BadInputError("the PostgreSQL store needs psycopg and pgvector: "
                            "pip install 'kbagent[pg]'") from None
    from kbagent.kb.registry import redact

    try:
        conn = psycopg.connect(dsn, autocommit=autocommit, connect_timeout=timeout, **params)
    except psycopg.Error as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise BackendError(f"cannot connect to {redact(dsn)}: {first}") from None
    if vectors:
        from pgvector.psycopg import register_vector

        # no vector extension yet: the first ingest creates it
        with contextlib.suppress(psycopg.ProgrammingError):
            register_vector(conn)
    return conn
