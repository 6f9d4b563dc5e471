"""An evaluation corpus's KB is derived from its dataset: one that an older kbagent
built (another extraction/chunking version) is rebuilt by `eval`, while a person's own
KB still asks for --rebuild."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kbagent.errors import IncompatibleKBError
from kbagent.evaluation.retrieval import ingest_corpus
from kbagent.kb.ingest import Ingestor
from kbagent.kb.knowledge_base import CHUNKER_VERSION
from kbagent.settings import Settings


def _age(kb_dir: Path) -> None:
    """Mark the KB's current generation as written by the chunker before this one."""
    gen = kb_dir / (kb_dir / "CURRENT").read_text().strip()
    manifest = json.loads((gen / "manifest.json").read_text())
    manifest["chunker"]["version"] = CHUNKER_VERSION - 1
    (gen / "manifest.json").write_text(json.dumps(manifest))


def test_an_eval_kb_built_by_an_older_kbagent_is_rebuilt(tmp_path: Path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "d1.md").write_text("# Frob\n\nThe frob daemon listens on port 7514.\n")
    settings = Settings.load(home=tmp_path / "home")
    ingest_corpus(settings, "eval-frob", corpus)
    kb_dir = settings.kbs_dir / "eval-frob"
    _age(kb_dir)
    with pytest.raises(IncompatibleKBError, match="--rebuild"):
        Ingestor(settings, "eval-frob").run(corpus)  # what `kbagent ingest` says
    report = ingest_corpus(settings, "eval-frob", corpus)
    gen = kb_dir / (kb_dir / "CURRENT").read_text().strip()
    assert json.loads((gen / "manifest.json").read_text())["chunker"]["version"] == \
        CHUNKER_VERSION
    assert report.seconds >= 0
