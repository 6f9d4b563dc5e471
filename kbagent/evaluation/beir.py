"""BEIR-format data sets: ``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``.

A data set becomes a folder of Markdown files (one per corpus document,
``# title`` then the text) that the ordinary ingest turns into a KB, so the
evaluation measures exactly what ``kbagent search`` does. Search returns
chunks; a chunk maps back to its corpus document through the file name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from kbagent.errors import BadInputError, NotFoundError
from kbagent.jsonl import numbered_jsonl
from kbagent.kb.file_modes import open_private, private_dir

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass
class BeirDataset:
    name: str
    root: Path
    docs: list[dict[str, str]]  # {"_id", "title", "text"}
    queries: dict[str, str]  # query id -> text, only queries with judgements
    qrels: dict[str, dict[str, int]]  # query id -> document id -> grade


def _read_jsonl(path: Path, required: tuple[str, ...]) -> list[dict[str, str]]:
    if not path.is_file():
        raise NotFoundError(f"missing {path.name} in {path.parent} (a BEIR folder holds "
                            "corpus.jsonl, queries.jsonl and qrels/test.tsv)")
    rows = []
    for n, row in numbered_jsonl(path):
        if not isinstance(row, dict) or any(k not in row for k in required):
            raise BadInputError(f"{path}:{n}: expected the keys {', '.join(required)}")
        rows.append({k: str(v) for k, v in row.items() if isinstance(v, str | int)})
    return rows


def _read_qrels(path: Path) -> dict[str, dict[str, int]]:
    if not path.is_file():
        raise NotFoundError(f"missing qrels file {path}")
    qrels: dict[str, dict[str, int]] = {}
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            parts = line.rstrip("\n").split("\t")
            if n == 1 and parts[:1] == ["query-id"]:
                continue  # header
            if not line.strip():
                continue
            if len(parts) != 3:
                raise BadInputError(f"{path}:{n}: expected 'query-id<TAB>corpus-id<TAB>score'")
            try:
                grade = int(float(parts[2]))
            except ValueError as e:
                raise BadInputError(f"{path}:{n}: score {parts[2]!r} is not a number") from e
            qrels.setdefault(parts[0], {})[parts[1]] = grade
    return qrels


def load_beir(root: Path, split: str = "test", max_queries: int | None = None) -> BeirDataset:
    """Load a BEIR folder; keep only queries judged in ``split`` (sorted by id,
    the first ``max_queries`` of them when given)."""
    root = Path(root).expanduser()
    if not root.is_dir():
        raise NotFoundError(f"no such data set folder: {root}")
    docs = _read_jsonl(root / "corpus.jsonl", ("_id", "text"))
    if not docs:
        raise BadInputError(f"{root / 'corpus.jsonl'} holds no documents")
    all_queries = {q["_id"]: q["text"] for q in _read_jsonl(root / "queries.jsonl",
                                                            ("_id", "text"))}
    qrels = _read_qrels(root / "qrels" / f"{split}.tsv")
    qids = sorted(q for q in qrels if q in all_queries and any(g > 0 for g in qrels[q].values()))
    if max_queries is not None:
        qids = qids[:max_queries]
    if not qids:
        raise BadInputError(f"no judged query of {root / 'queries.jsonl'} appears in "
                            f"qrels/{split}.tsv")
    return BeirDataset(root.name, root, docs, {q: all_queries[q] for q in qids},
                       {q: qrels[q] for q in qids})


def write_corpus(ds: BeirDataset, folder: Path) -> dict[str, str]:
    """Write one Markdown file per document (unchanged files are left alone so a
    re-run ingests nothing) and return file stem -> document id."""
    private_dir(folder)
    stems: dict[str, str] = {}
    for d in ds.docs:
        stem = _UNSAFE.sub("_", d["_id"])[:80] or "doc"
        base, n = stem, 1
        while stem in stems:  # two ids that differ only in unsafe characters
            n += 1
            stem = f"{base}~{n}"
        stems[stem] = d["_id"]
        title = " ".join(d.get("title", "").split())
        text = f"# {title}\n\n{d['text']}\n" if title else f"{d['text']}\n"
        path = folder / f"{stem}.md"
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            with open_private(path) as f:  # under $KBAGENT_HOME: 0600
                f.write(text)
    wanted = {f"{s}.md" for s in stems}
    for old in folder.glob("*.md"):
        if old.name not in wanted:
            old.unlink()
    return stems
