"""Which store holds a KB: the local one (default) or a PostgreSQL database.

``kbagent ingest DIR --kb K --store postgresql://...`` records K's store in
``$KBAGENT_HOME/stores.json`` (mode 0600: a DSN may hold a password), and every
other command opens K from there without further flags. A KB not named in the
file is a local one. ``--replica postgresql://...`` (repeatable) records read
replicas of that store beside it (``{"K": {"store": ..., "replicas": [...]}}``;
see :mod:`kbagent.kb.pg.replicas`).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kbagent.errors import BadInputError, KbCorruptError
from kbagent.kb.file_modes import private_dir
from kbagent.kb.knowledge_base import validate_name
from kbagent.settings import Settings

SCHEMES = ("postgresql://", "postgres://")


def registry_path(settings: Settings) -> Path:
    return settings.home / "stores.json"


def check_dsn(dsn: str, option: str = "--store") -> str:
    if not dsn.startswith(SCHEMES):
        hint = "(the local store is the default)" if option == "--store" else ""
        raise BadInputError(f"unsupported {option} {redact(dsn)!r}: give a postgresql:// URL "
                            f"{hint}".rstrip())
    return dsn


def redact(dsn: str) -> str:
    """``dsn`` with its password replaced by ``***`` (for messages and listings)."""
    scheme, sep, rest = dsn.partition("://")
    if not sep or "@" not in rest:
        return dsn
    cred, _, host = rest.rpartition("@")
    user, colon, _pw = cred.partition(":")
    return f"{scheme}://{user}{':***' if colon else ''}@{host}"


def _entries(settings: Settings) -> dict[str, dict[str, Any]]:
    """KB name -> ``{"store": DSN, "replicas": [DSN, ...]}`` of every KB held in
    PostgreSQL."""
    path = registry_path(settings)
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as e:
        raise KbCorruptError(f"unreadable store registry {path}: {e}") from e
    if not isinstance(data, dict) or not all(
            isinstance(v, dict) and isinstance(v.get("store"), str)
            and isinstance(v.get("replicas", []), list)
            and all(isinstance(r, str) for r in v.get("replicas", [])) for v in data.values()):
        raise KbCorruptError(f"unreadable store registry {path}: expected "
                             '{"<kb>": {"store": "postgresql://...", "replicas": [...]}}')
    return {str(k): {"store": str(v["store"]), "replicas": [str(r) for r in
                                                           v.get("replicas", [])]}
            for k, v in data.items()}


def load(settings: Settings) -> dict[str, str]:
    """KB name -> DSN of every KB held in PostgreSQL."""
    return {k: v["store"] for k, v in _entries(settings).items()}


def replicas_of(settings: Settings, name: str) -> list[str]:
    """The read replicas recorded for KB ``name`` (none: reads go to its store)."""
    return list(_entries(settings).get(name, {}).get("replicas", []))


def store_of(settings: Settings, name: str) -> str | None:
    return load(settings).get(name)


@contextlib.contextmanager
def _locked(settings: Settings) -> Iterator[None]:
    """Serialise read-modify-write of the registry (several ingests at once)."""
    path = registry_path(settings)
    private_dir(path.parent)
    fd = os.open(path.with_name(path.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _write(settings: Settings, entries: dict[str, dict[str, Any]]) -> None:
    path = registry_path(settings)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump({k: {"store": v["store"], **({"replicas": v["replicas"]} if v["replicas"]
                                                else {})}
                   for k, v in sorted(entries.items())}, f, indent=2)
        f.flush()
        os.fsync(f.fileno())
    os.chmod(tmp, 0o600)  # an existing .tmp keeps its mode through O_CREAT
    os.replace(tmp, path)


def register(settings: Settings, name: str, dsn: str) -> None:
    """Record that KB ``name`` is held in ``dsn`` (its replicas, if any, kept)."""
    with _locked(settings):
        entries = _entries(settings)
        known = entries.get(validate_name(name))
        if known is None or known["store"] != check_dsn(dsn):
            entries[name] = {"store": dsn, "replicas": []}
            _write(settings, entries)


def set_replicas(settings: Settings, name: str, replicas: list[str]) -> None:
    """Record ``replicas`` as KB ``name``'s read replicas (empty: none); ``name`` must be
    registered with its store first."""
    with _locked(settings):
        entries = _entries(settings)
        if name not in entries:
            raise BadInputError(f"KB '{name}' is not held in PostgreSQL: replicas need a "
                                "--store")
        if entries[name]["replicas"] != replicas:
            entries[name]["replicas"] = [check_dsn(r, "--replica") for r in replicas]
            _write(settings, entries)


def unregister(settings: Settings, name: str) -> None:
    with _locked(settings):
        entries = _entries(settings)
        if entries.pop(name, None) is not None:
            _write(settings, entries)
