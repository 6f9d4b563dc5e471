"""Question sets with answers, read into one shape (:class:`QaItem`).

Formats (``--format auto`` tells them apart by their fields):

* ``sample``: kbagent's own JSONL (``id``, ``question``, ``answer``,
  ``gold_paths``, ``kind``; kind ``unanswerable`` means the KB does not say),
  asked against an existing KB;
* ``hotpotqa``: the IRCoT processed HotpotQA JSONL (``question_text``,
  ``answers_objects``, ``contexts`` with ``is_supporting``);
* ``musique``: HippoRAG's MuSiQue JSON list (``question``, ``answer``,
  ``answer_aliases``, ``paragraphs``) with ``<name>_corpus.json`` beside it.

For the last two every paragraph of every question (or of the corpus file)
becomes one Markdown document titled by its article, pooled into one KB
that is built once and reused; a question's supporting paragraphs become
its gold document paths.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbagent.errors import BadInputError, NotFoundError
from kbagent.jsonl import numbered_jsonl
from kbagent.kb.file_modes import open_private, private_dir

FORMATS = ("auto", "sample", "hotpotqa", "musique")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass
class QaItem:
    id: str
    question: str
    golds: list[str]  # accepted answers ([] for unanswerable / chit-chat)
    gold_docs: list[str] = field(default_factory=list)  # KB paths that support the answer
    # factoid | composite | calculation | unanswerable | chit-chat | multi-hop
    kind: str = "factoid"

    @property
    def unanswerable(self) -> bool:
        return self.kind == "unanswerable"


@dataclass
class QaDataset:
    name: str
    format: str
    items: list[QaItem]
    corpus: dict[str, str] | None = None  # path -> Markdown text, when the set brings its KB


class _Corpus:
    """Paragraphs -> unique Markdown files (same title and text = same file)."""

    def __init__(self) -> None:
        self.files: dict[str, str] = {}
        self._by_key: dict[tuple[str, str], str] = {}

    def add(self, title: str, text: str) -> str:
        title, text = " ".join(title.split()), text.strip()
        key = (title, text)
        if key in self._by_key:
            return self._by_key[key]
        stem = _UNSAFE.sub("_", title)[:80].strip("_.") or "paragraph"
        path = f"{stem}.md"
        if path in self.files:
            digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]
            path = f"{stem}~{digest}.md"
        self.files[path] = f"# {title}\n\n{text}\n"
        self._by_key[key] = path
        return path


def _jsonl(path: Path) -> list[dict[str, Any]]:
    rows = []
    for n, row in numbered_jsonl(path):
        if not isinstance(row, dict):
            raise BadInputError(f"{path}:{n}: not a JSON object")
        rows.append(row)
    return rows


def _sample(path: Path, rows: list[dict[str, Any]]) -> QaDataset:
    items = []
    for n, r in enumerate(rows, 1):
        if not isinstance(r.get("question"), str) or "answer" not in r:
            raise BadInputError(f"{path}:{n}: a sample question needs 'question' and 'answer'")
        kind = str(r.get("kind") or "factoid")
        golds = [] if kind in ("unanswerable", "chit-chat") else [str(r["answer"])]
        items.append(QaItem(str(r.get("id") or f"line-{n}"), r["question"], golds,
                            list(r.get("gold_paths") or []), kind))
    return QaDataset(path.stem, "sample", items)


def _hotpotqa(path: Path, rows: list[dict[str, Any]]) -> QaDataset:
    corpus = _Corpus()
    items = []
    for n, r in enumerate(rows, 1):
        try:
            golds = [s for a in r["answers_objects"] for s in a.get("spans", []) if s]
            paths = [(corpus.add(c["title"], c["paragraph_text"]), bool(c.get("is_supporting")))
                     for c in r["contexts"]]
            items.append(QaItem(str(r["question_id"]), r["question_text"], golds,
                                [p for p, sup in paths if sup], "multi-hop"))
        except (KeyError, TypeError) as e:
            raise BadInputError(f"{path}:{n}: not a HotpotQA record (missing {e})") from e
    return QaDataset("hotpotqa", "hotpotqa", items, corpus.files)


def _musique(path: Path) -> QaDataset:
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise BadInputError(f"{path} is not JSON ({e.msg})") from e
    corpus_path = path.with_name(path.stem + "_corpus.json")
    corpus = _Corpus()
    if corpus_path.is_file():
        for p in json.loads(corpus_path.read_text(encoding="utf-8")):
            corpus.add(p["title"], p["text"])
    items = []
    for n, r in enumerate(rows, 1):
        try:
            golds = [r["answer"], *r.get("answer_aliases", [])]
            gold_docs = [corpus.add(p["title"], p["paragraph_text"]) for p in r["paragraphs"]
                         if p.get("is_supporting")]
            for p in r["paragraphs"]:
                corpus.add(p["title"], p["paragraph_text"])
            kind = "multi-hop" if r.get("answerable", True) else "unanswerable"
            items.append(QaItem(str(r["id"]), r["question"], golds if kind != "unanswerable"
                                else [], gold_docs, kind))
        except (KeyError, TypeError) as e:
            raise BadInputError(f"{path}: question {n} is not a MuSiQue record (missing {e})") \
                from e
    return QaDataset("musique", "musique", items, corpus.files)


def load_qa(path: Path, fmt: str = "auto", max_questions: int | None = None) -> QaDataset:
    path = Path(path).expanduser()
    if fmt not in FORMATS:
        raise BadInputError(f"unknown format {fmt!r} (choose from {', '.join(FORMATS)})")
    if path.is_dir():
        found = sorted(path.glob("*.jsonl")) + sorted(
            p for p in path.glob("*.json") if not p.stem.endswith("_corpus"))
        if len(found) != 1:
            raise BadInputError(f"{path} holds {len(found)} question files; name one")
        path = found[0]
    if not path.is_file():
        raise NotFoundError(f"no such question file: {path}")
    if fmt == "musique" or (fmt == "auto" and path.suffix == ".json"):
        ds = _musique(path)
    else:
        rows = _jsonl(path)
        if not rows:
            raise BadInputError(f"no questions in {path}")
        if fmt == "hotpotqa" or (fmt == "auto" and "question_text" in rows[0]):
            ds = _hotpotqa(path, rows)
        else:
            ds = _sample(path, rows)
    if not ds.items:
        raise BadInputError(f"no questions in {path}")
    if max_questions is not None:
        ds.items = ds.items[:max_questions]
    return ds


def write_corpus_folder(files: dict[str, str], folder: Path) -> None:
    """Write the pooled paragraphs (unchanged files left alone, stale ones removed)."""
    private_dir(folder)
    for name, text in files.items():
        p = folder / name
        if not p.is_file() or p.read_text(encoding="utf-8") != text:
            with open_private(p) as f:  # under $KBAGENT_HOME: 0600
                f.write(text)
    for old in folder.glob("*.md"):
        if old.name not in files:
            old.unlink()
