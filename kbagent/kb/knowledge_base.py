"""KB directories, generations and the read side.

Layout of one KB under ``$KBAGENT_HOME/kbs/<name>/``::

    CURRENT                 name of the live generation ("gen-000003")
    .lock                   writer lock (flock)
    embed_cache.sqlite      embeddings of an unfinished ingest (resume after a kill)
    gen-000003/
        manifest.json       schema version, embedding model and dim, chunker, source
        kb.sqlite           documents (with stored text) and chunks
        tantivy/            BM25 index
        vectors.usearch     vector index

An ingest builds the next generation beside the live one and publishes it by
atomically replacing ``CURRENT``; a kill at any moment leaves the previous
generation live and intact. Readers resolve ``CURRENT`` once per open and
re-check it on :meth:`KnowledgeBase.refresh`. A reader holds a shared lock on
the generation it opened (kb/gen_locks.py); after publishing, ingest removes the
older generations no reader holds, so a reader that opened one just before a
commit keeps working and the disk holds one generation once it is done.

``CURRENT`` is data like any file: it must name a ``gen-NNNNNN`` folder inside the
KB (no separator, no ``..``, no link leading out), or the KB reads as corrupted.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import shutil
import stat
import threading
import time
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbagent.errors import BadInputError, KbCorruptError, NotFoundError
from kbagent.kb import gen_locks
from kbagent.kb.access import Principal
from kbagent.kb.file_modes import FILE_MODE, tighten
from kbagent.kb.lexical import LexicalIndex
from kbagent.kb.store import Store
from kbagent.kb.vectors import VectorIndex
from kbagent.settings import Settings

# 2: the BM25 index carries each chunk's access groups (issue 10). A v1 KB is
# refused with the rebuild hint (its index cannot filter; --rebuild reuses its vectors).
SCHEMA_VERSION = 2
CHUNKER_VERSION = 7  # bump when extraction or chunking output changes: KBs then need --rebuild
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
GEN_RE = gen_locks.GEN_RE  # a generation folder's name: "gen-" and six or more digits


def validate_name(name: str) -> str:
    if not NAME_RE.match(name or "") or name in (".", ".."):
        raise BadInputError(
            f"invalid KB name {name!r}: use 1-64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return name


def name_from_folder(folder: Path) -> str:
    """A valid default KB name derived from a folder name."""
    raw = re.sub(r"[^A-Za-z0-9._-]+", "-", folder.resolve().name).strip("-._")
    return (raw or "default")[:64]


def kb_dir(settings: Settings, name: str) -> Path:
    return settings.kbs_dir / validate_name(name)


def current_generation(directory: Path, name: str | None = None) -> str | None:
    """The live generation named by ``directory/CURRENT`` (None: not published yet).

    KbCorruptError, with the rebuild hint, when ``CURRENT`` names anything but a
    generation folder directly inside ``directory``: nothing outside the KB is read."""
    try:  # not through a link, and never blocking on a FIFO
        fd = os.open(directory / "CURRENT", os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise _bad_current(directory, name, "is a link" if e.errno == errno.ELOOP
                           else f"unreadable: {e.strerror}") from e
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise _bad_current(directory, name, "is not a file")
        raw = os.read(fd, 256)
    finally:
        os.close(fd)
    gen = raw.decode("utf-8", errors="replace").strip()
    if not gen:
        return None
    if not GEN_RE.match(gen):
        raise _bad_current(directory, name, f"names {gen[:60]!r}, not a generation folder")
    target = directory / gen
    if target.is_symlink() or (target.exists() and
                               target.resolve().parent != directory.resolve()):
        raise _bad_current(directory, name, f"{gen} leads outside the KB")
    return gen


def _bad_current(directory: Path, name: str | None, why: str) -> KbCorruptError:
    name = name or directory.name
    return KbCorruptError(f"KB '{name}' is corrupted (CURRENT {why}); "
                          f"{rebuild_hint(name, None)}")


def latest_generation(directory: Path) -> str | None:
    """The newest generation folder present, whatever ``CURRENT`` says (for a
    --rebuild of a KB whose ``CURRENT`` is damaged)."""
    gens = [d.name for d in directory.iterdir() if GEN_RE.match(d.name) and d.is_dir()
            and not d.is_symlink()] if directory.is_dir() else []
    return max(gens, key=lambda g: int(g.split("-")[1]), default=None)


def rebuild_hint(name: str, manifest: dict[str, Any] | None) -> str:
    source = (manifest or {}).get("source") or "<folder>"
    return f"rebuild it with: kbagent ingest {source} --kb {name} --rebuild"


@dataclass
class KbInfo:
    """What ``kbagent kbs`` shows about one KB."""

    name: str
    source: str
    documents: int
    chunks: int
    embedding_model: str
    size_bytes: int
    updated_at: float
    generation: str
    error: str = ""

    def to_dict(self) -> dict[str, Any]:
        return self.__dict__.copy()


def _dir_size(path: Path) -> int:
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            with contextlib.suppress(OSError):
                total += os.stat(os.path.join(root, f)).st_size
    return total


def read_manifest(gen_dir: Path) -> dict[str, Any]:
    manifest: dict[str, Any] = json.loads((gen_dir / "manifest.json").read_text(encoding="utf-8"))
    return manifest


def list_kbs(settings: Settings) -> list[KbInfo]:
    out: list[KbInfo] = []
    if not settings.kbs_dir.is_dir():
        return out
    for d in sorted(settings.kbs_dir.iterdir()):
        if not d.is_dir() or not NAME_RE.match(d.name):
            continue
        try:
            gen = current_generation(d)
        except KbCorruptError as e:
            out.append(KbInfo(d.name, "", 0, 0, "", _dir_size(d), 0.0, "", error=str(e)))
            continue
        if gen is None:
            continue  # a first ingest that never committed
        try:
            m = read_manifest(d / gen)
            out.append(KbInfo(d.name, m.get("source", ""), int(m.get("documents", 0)),
                              int(m.get("chunks", 0)), m.get("embedding_model", ""),
                              _dir_size(d), float(m.get("updated_at", 0)), gen))
        except (OSError, ValueError) as e:
            out.append(KbInfo(d.name, "", 0, 0, "", _dir_size(d), 0.0, gen,
                              error=f"unreadable manifest: {e}"))
    return out


def require_kb(settings: Settings, name: str) -> Path:
    d = kb_dir(settings, name)
    if current_generation(d, name) is None:
        known = [k.name for k in list_kbs(settings)]
        hint = f"known: {', '.join(known)}" if known else "run 'kbagent ingest PATH' first"
        raise NotFoundError(f"unknown KB '{name}' ({hint})")
    return d


def remove_kb(settings: Settings, name: str) -> None:
    from kbagent.kb.lock import WriterLock

    d = kb_dir(settings, name)
    if not (d / "CURRENT").is_file():  # not require_kb: a damaged CURRENT may be removed too
        require_kb(settings, name)
    with WriterLock(d, name):
        # Unpublish first so a half-finished delete never looks like a live KB.
        (d / "CURRENT").unlink(missing_ok=True)
        trash = d.with_name(f".{name}.deleting-{os.getpid()}")
        os.replace(d, trash)
    shutil.rmtree(trash, ignore_errors=True)


class KnowledgeBase:
    """Read access to the live generation of one KB."""

    def __init__(self, settings: Settings, name: str) -> None:
        self.settings = settings
        self.name = name
        self.dir = require_kb(settings, name)
        self.generation = ""
        self._retired: list[Store] = []  # the store refresh() replaced, closed by close()
        self._refresh_lock = threading.Lock()
        # shared locks on the generations this object reads, (generation, fd): ingest
        # does not delete them meanwhile. Released by close() (or garbage collection).
        # One rule for both: refresh() keeps the current generation and the one it
        # replaced open and locked (a search that started before the refresh may still
        # read that one), and closes and unlocks older ones, so a reader following a
        # watched folder holds two generations, not one per update.
        self._gen_locks: list[tuple[str, int]] = []
        weakref.finalize(self, gen_locks.release_all, self._gen_locks)
        self._open()

    def _open(self) -> None:
        gen, lock = gen_locks.open_current(self.dir, lambda: current_generation(self.dir,
                                                                                self.name))
        if gen is None:
            raise NotFoundError(f"KB '{self.name}' was removed")
        try:
            self._open_generation(gen)
        except BaseException:
            gen_locks.release(lock)
            raise
        if lock is not None:
            self._gen_locks.append((gen, lock))

    def _open_generation(self, gen: str) -> None:
        gen_dir = self.dir / gen
        manifest: dict[str, Any] | None = None
        tighten(gen_dir / "kb.sqlite", FILE_MODE)  # a KB written before files were private
        try:
            manifest = read_manifest(gen_dir)
            if manifest.get("schema_version") != SCHEMA_VERSION:
                raise KbCorruptError(
                    f"KB '{self.name}' has schema version {manifest.get('schema_version')}, "
                    f"this kbagent reads {SCHEMA_VERSION}; {rebuild_hint(self.name, manifest)}"
                )
            store = Store(gen_dir / "kb.sqlite", readonly=True)
            docs, chunks = store.count()
            lexical = LexicalIndex(gen_dir / "tantivy")
            vectors = VectorIndex(gen_dir / "vectors.usearch", int(manifest["embedding_dim"]))
        except KbCorruptError:
            raise
        except Exception as e:  # sqlite3, tantivy, usearch, json all raise their own types
            what = str(e).splitlines()[0] if str(e) else type(e).__name__
            raise KbCorruptError(
                f"KB '{self.name}' is corrupted ({what}); {rebuild_hint(self.name, manifest)}"
            ) from e
        n_lex = lexical.num_docs()
        # a BM25-only generation (kb/bm25_first.py) holds the vectors made so far
        pending = bool(manifest.get("vectors_pending"))
        if n_lex != chunks or (len(vectors) != chunks and not (pending and len(vectors) < chunks)):
            raise KbCorruptError(
                f"KB '{self.name}' is inconsistent ({chunks} chunks, {n_lex} in BM25 index, "
                f"{len(vectors)} vectors); {rebuild_hint(self.name, manifest)}"
            )
        self.generation = gen
        self.gen_dir = gen_dir
        self.manifest = manifest
        self.store = store
        self.lexical = lexical
        self.vectors = vectors
        self.vectors_pending = pending
        self._vectors_mark = _mark(gen_dir / "vectors.usearch") if pending else None
        self.documents = docs
        self.chunks = chunks
        self._denied: dict[frozenset[str], frozenset[int]] = {}

    def refresh(self) -> bool:
        """Reopen if an ingest published a new generation; return True if it did.

        The store it replaces is *not* closed here: another thread (a UI's search while
        the agent reads) may still be using it. It stays open and locked until the next
        refresh or :meth:`close`; older ones are closed and unlocked."""
        if current_generation(self.dir) == self.generation and not self._more_vectors():
            return False
        with self._refresh_lock:
            if current_generation(self.dir) == self.generation and not self._more_vectors():
                return False  # another thread reopened it meanwhile
            previous = self.generation
            self._retired.append(self.store)
            self._open()
            for older in self._retired[:-1]:  # only the store just replaced stays open
                older.close()
            del self._retired[:-1]
            gen_locks.release_older(self._gen_locks, {self.generation, previous})
        return True

    def _more_vectors(self) -> bool:
        """A BM25-only generation whose ingest published more vectors since we opened it."""
        return self.vectors_pending and _mark(self.gen_dir / "vectors.usearch") != \
            self._vectors_mark

    @property
    def vectors_partial(self) -> bool:
        """Vectors are still being built, and some are searchable already."""
        return self.vectors_pending and len(self.vectors) > 0

    def denied_chunks(self, principal: Principal) -> frozenset[int]:
        """Chunk ids ``principal`` may not read in this generation (cached per groups)."""
        if principal.groups not in self._denied:
            self._denied[principal.groups] = self.store.denied_chunk_ids(principal)
        return self._denied[principal.groups]

    def mentions(self, word: str, principal: Principal) -> bool:
        """Does a chunk ``principal`` may read contain ``word``?"""
        return self.store.mentions(word, self.denied_chunks(principal))

    def symbol_reader(self) -> Any:  # a SqliteSymbols (the SymbolReader protocol)
        from kbagent.kb.symbol_index import SqliteSymbols

        return SqliteSymbols(self.store.conn)

    @property
    def embedding_model(self) -> str:
        return str(self.manifest["embedding_model"])

    @property
    def embedding_space(self) -> str:
        """Model id plus precision. A KB made before runtime and precision were
        recorded was embedded by torch in fp32, the same vectors as ONNX fp32."""
        from kbagent.kb.embedder import vector_space

        return vector_space(self.embedding_model,
                            str(self.manifest.get("embedding_precision", "fp32")))

    def close(self) -> None:
        for store in [*self._retired, self.store]:
            store.close()
        self._retired.clear()
        gen_locks.release_all(self._gen_locks)


def _mark(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


def new_manifest(name: str, source: str, model_id: str, dim: int,
                 settings: Settings) -> dict[str, Any]:
    now = time.time()
    return {
        "schema_version": SCHEMA_VERSION,
        "name": name,
        "source": source,
        "embedding_model": model_id,
        "embedding_dim": dim,
        "chunker": {
            "version": CHUNKER_VERSION,
            "max_tokens": settings.chunk_tokens,
            "overlap": settings.chunk_overlap,
        },
        "created_at": now,
        "updated_at": now,
        "documents": 0,
        "chunks": 0,
    }
