"""Shared fixtures. Every test gets its own ``KBAGENT_HOME``; the real embedding
model is loaded once per session; the sample KB is ingested once per session
and copied for tests that change it."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from kbagent.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
SAMPLE_KB = ROOT / "sample_kb"


@pytest.fixture(autouse=True)
def kb_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("KBAGENT_HOME", str(home))
    for var in ("KBAGENT_CONFIG", "KBAGENT_EMBEDDING_MODEL", "KBAGENT_LLM_URL",
                "KBAGENT_EMBEDDING_RUNTIME", "KBAGENT_EMBEDDING_PRECISION", "KBAGENT_EMBED_URL"):
        monkeypatch.delenv(var, raising=False)
    # Surface tests (CLI, batch, session, TUI) script the model's answer and check how it
    # is carried: they run with grounding off, so the scripted text arrives as written.
    # Grounded answers are tested on the Agent itself (tests/test_grounding.py, whose
    # AgentConfig defaults to grounded) and through the CLI (tests/test_cli_grounded.py,
    # which removes this variable).
    monkeypatch.setenv("KBAGENT_GROUNDED", "false")
    return home


@pytest.fixture
def settings(kb_home: Path) -> Settings:
    return Settings.load()


@pytest.fixture(scope="session")
def embedder():
    from kbagent.kb.embedder import load_embedder

    return load_embedder("bundled")


@pytest.fixture
def make_folder(tmp_path: Path) -> Callable[[dict[str, str | bytes]], Path]:
    """Write ``{relative path: text or bytes}`` into a fresh folder and return it."""
    counter = [0]

    def make(files: dict[str, str | bytes]) -> Path:
        counter[0] += 1
        root = tmp_path / f"src{counter[0]}"
        root.mkdir()
        for rel, content in files.items():
            p = root / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                p.write_bytes(content)
            else:
                p.write_text(content, encoding="utf-8")
        return root

    return make


@pytest.fixture(scope="session")
def sample_home(tmp_path_factory: pytest.TempPathFactory, embedder) -> Path:
    """A data home holding the sample KB as ``sample`` (ingested once per session)."""
    from kbagent.kb.ingest import Ingestor

    home = tmp_path_factory.mktemp("sample_home")
    Ingestor(Settings.load(home=home), "sample", embedder=embedder).run(SAMPLE_KB)
    return home


@pytest.fixture
def sample_settings(sample_home: Path, kb_home: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """A private copy of the sample KB's home, safe to modify."""
    shutil.copytree(sample_home, kb_home, dirs_exist_ok=True)
    return Settings.load()


SMALL_DOCS = {
    "guide/retry.md": (
        "---\ntitle: Retry policy\nowner: platform\n---\n"
        "# Retry policy\n\nClients retry idempotent requests.\n\n"
        "## Backoff\n\nWe use exponential backoff with a base of 200 ms and a cap of 5 s.\n"
        "Jitter is full jitter.\n\n## Status codes\n\nRetry on 429, 502, 503 and 504.\n"
        "Never retry 400 or 401.\n"
    ),
    "finance/q3.md": (
        "# Q3 report\n\n## Gross margin\n\nGross margin fell to 66.2% in Q3 from 71.4% in Q2,\n"
        "because of a GPU reserved-capacity contract.\n"
    ),
    "notes.txt": "Meeting notes\n\nThe cafeteria opens at 8 am.\nParking is free on Fridays.\n",
}
