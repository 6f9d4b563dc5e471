"""Route a KB to the store that holds it (see :mod:`kbagent.kb.registry`)."""

from __future__ import annotations

import contextlib
from typing import Any

from kbagent.errors import BadInputError
from kbagent.kb.knowledge_base import KbInfo, KnowledgeBase, current_generation, kb_dir, list_kbs
from kbagent.kb.registry import check_dsn, load, redact, store_of, unregister
from kbagent.kb.store_protocol import KbReader
from kbagent.settings import Settings


def _need_pg() -> None:
    try:
        import pgvector  # noqa: F401
        import psycopg  # noqa: F401
    except ImportError:
        raise BadInputError("the PostgreSQL store needs psycopg and pgvector: "
                            "pip install 'kbagent[pg]'") from None


def open_kb(settings: Settings, name: str) -> KbReader:
    """Open KB ``name`` from the store that holds it."""
    dsn = store_of(settings, name)
    if dsn is None:
        return KnowledgeBase(settings, name)
    _need_pg()
    from kbagent.kb.pg.kb import PgKnowledgeBase

    return PgKnowledgeBase(settings, name, dsn)


def ingestor_for(settings: Settings, name: str, store: str | None, **kw: Any) -> Any:
    """The writer of KB ``name``: ``store`` (a DSN) or the one it is registered with,
    else the local one. A name cannot live in both stores."""
    from kbagent.kb.ingest import Ingestor

    known = store_of(settings, name)
    if store and known and known != store:
        raise BadInputError(f"KB '{name}' is held in {redact(known)}, not {redact(store)}; "
                            f"remove it first (kbagent kbs rm {name}) or choose another --kb")
    dsn = check_dsn(store) if store else known
    if dsn is None:
        return Ingestor(settings, name, **kw)
    if current_generation(kb_dir(settings, name)) is not None:
        raise BadInputError(f"KB '{name}' is a local KB; remove it first (kbagent kbs rm "
                            f"{name}) or choose another --kb name for {redact(dsn)}")
    _need_pg()
    from kbagent.kb.pg.ingest import PgIngestor

    return PgIngestor(settings, name, dsn, **kw)


def list_all_kbs(settings: Settings) -> list[KbInfo]:
    """Local KBs, then the KBs held in PostgreSQL (an unreachable one with its error)."""
    out = list_kbs(settings)
    for name, dsn in sorted(load(settings).items()):
        try:
            _need_pg()
            from kbagent.kb.pg.kb import PgKnowledgeBase

            kb = PgKnowledgeBase(settings, name, dsn)
        except Exception as e:  # unreachable server, dropped tables: listed with the reason
            out.append(KbInfo(name, "", 0, 0, "", 0, 0.0, redact(dsn), error=str(e)))
            continue
        with contextlib.closing(kb):
            m = kb.manifest
            out.append(KbInfo(name, str(m.get("source", "")), kb.documents, kb.chunks,
                              str(m.get("embedding_model", "")), 0,
                              float(m.get("updated_at", 0)), redact(dsn)))
    return out


def remove_any_kb(settings: Settings, name: str) -> None:
    """Remove KB ``name`` from the store that holds it."""
    from kbagent.kb.knowledge_base import remove_kb

    dsn = store_of(settings, name)
    if dsn is None:
        remove_kb(settings, name)
        return
    _need_pg()
    from kbagent.kb.pg.ingest import remove_pg_kb

    remove_pg_kb(name, dsn)
    unregister(settings, name)
