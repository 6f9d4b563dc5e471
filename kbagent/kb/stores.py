"""Route a KB to the store that holds it (see :mod:`kbagent.kb.registry`)."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

from kbagent.errors import BadInputError
from kbagent.kb.knowledge_base import KbInfo, KnowledgeBase, current_generation, kb_dir, list_kbs
from kbagent.kb.registry import check_dsn, load, redact, replicas_of, store_of, unregister
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

    return PgKnowledgeBase(settings, name, dsn, replicas_of(settings, name))


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


@dataclass
class PgKbInfo(KbInfo):
    """A KB held in PostgreSQL: with its read replicas, each one's generation against
    the primary's (:class:`kbagent.kb.pg.replicas.ReplicaState` as dicts)."""

    replicas: list[dict[str, Any]] = field(default_factory=list)


def list_all_kbs(settings: Settings, *, replica_status: bool = False) -> list[KbInfo]:
    """Local KBs, then the KBs held in PostgreSQL (an unreachable one with its error;
    read through its replicas; ``replica_status``: with where each replica stands)."""
    out = list_kbs(settings)
    for name, dsn in sorted(load(settings).items()):
        replicas = replicas_of(settings, name)
        try:
            _need_pg()
            from kbagent.kb.pg.kb import PgKnowledgeBase

            kb = PgKnowledgeBase(settings, name, dsn, replicas)
        except Exception as e:  # unreachable server, dropped tables: listed with the reason
            out.append(PgKbInfo(name, "", 0, 0, "", 0, 0.0, redact(dsn), error=str(e)))
            continue
        with contextlib.closing(kb):
            m = kb.manifest
            info = PgKbInfo(name, str(m.get("source", "")), kb.documents, kb.chunks,
                            str(m.get("embedding_model", "")), 0,
                            float(m.get("updated_at", 0)), redact(dsn))
        if replica_status and replicas:
            from kbagent.kb.pg.replicas import replica_states

            with contextlib.suppress(Exception):  # the primary down: its row says enough
                info.replicas = [r.to_dict() for r in replica_states(name, dsn, replicas)]
        out.append(info)
    return out


def plan_replicas(settings: Settings, name: str, store: str | None, replicas: list[str] | None,
                  forget: bool) -> tuple[list[str] | None, list[str]]:
    """What ``ingest --replica`` / ``--no-replicas`` will record for KB ``name`` once its
    ingest committed: (the replicas, or None to keep the recorded ones; notes to show).
    Checked before the ingest runs, so a bad URL stores nothing."""
    if forget and replicas:
        raise BadInputError("give --replica or --no-replicas, not both")
    if not replicas:  # --no-replicas for a KB held locally: nothing to forget
        return ([] if forget and (store or store_of(settings, name)) else None), []
    dsn = store or store_of(settings, name)
    if dsn is None:
        raise BadInputError("--replica needs a PostgreSQL store: give --store postgresql://...")
    _need_pg()
    from kbagent.kb.pg.replicas import check_replicas

    urls, notes = check_replicas(check_dsn(dsn), replicas)
    return urls, notes


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
