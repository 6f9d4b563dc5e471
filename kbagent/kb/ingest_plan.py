"""The pieces of an ingest that do not need the :class:`~kbagent.kb.ingest.Ingestor`:
the source folder checked, what a scan decided (:class:`BuildPlan`), a document
hidden for a malformed access declaration, and the manifest's runtime fields."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbagent.errors import BadInputError, NotFoundError
from kbagent.kb.models import Chunk, ExtractedDoc, FileReport, IngestReport
from kbagent.settings import Settings


def check_source(source: Path) -> Path:
    """The folder to ingest, resolved; a one-line error for a missing, unreadable or
    non-folder path."""
    source = Path(source).expanduser()
    if not source.exists():
        raise NotFoundError(f"no such folder: {source}")
    if not source.is_dir():
        raise BadInputError(f"{source} is a file; kbagent ingest takes a folder")
    if not os.access(source, os.R_OK | os.X_OK):
        raise BadInputError(f"cannot read folder {source} (permission denied)")
    return source.resolve()


def hide_malformed(fr: FileReport, why: str) -> None:
    """Mark a file stored readable by nobody because its access declaration is malformed."""
    fr.hidden = True
    fr.reason = f"malformed access declaration ({why}); hidden until fixed"


@dataclass
class Pending:
    report: FileReport
    doc: ExtractedDoc
    chunks: list[Chunk]
    content_hash: str
    size: int
    hashes: list[str]


@dataclass
class BuildPlan:
    """What the scan decided, for :meth:`kbagent.kb.ingest.Ingestor._build` to write."""

    source: Path
    report: IngestReport
    base_gen: str | None  # the generation to build on (None: the first one)
    base_manifest: dict[str, Any] | None  # None: build it whole (no base, or a BM25-only one)
    base_docs: dict[str, Any]  # path -> the base's DocRow
    pending: list[Pending]  # documents to add
    removed: list[str]  # paths to delete
    model_id: str  # the vector space


def runtime_fields(settings: Settings, embedder: object,
                   base_manifest: dict[str, Any] | None) -> dict[str, Any]:
    """Manifest fields saying which runtime and precision made the vectors (the
    runtime of this run if it embedded anything, else the base's)."""
    runtime = getattr(embedder, "runtime", None) or (base_manifest or {}).get(
        "embedding_runtime", "torch")
    precision = "fp32" if settings.embed_url else settings.embedding_precision
    return {"embedding_runtime": runtime, "embedding_precision": precision}
