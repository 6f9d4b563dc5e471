"""What a GGUF declares (kbagent/models/gguf_info.py), read from real files: one
written by the ``gguf`` package's writer, and the bundled SmolLM2."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbagent.errors import BadInputError, NotFoundError
from kbagent.models import declared_parameters
from kbagent.models.catalogue import bundled_path
from kbagent.models.gguf_info import human_count, parse_size_label, read_info
from tests.models_support import write_gguf


def test_header_of_a_written_gguf(tmp_path: Path) -> None:
    path = tmp_path / "tiny.gguf"
    write_gguf(path, size_label="2.5M", context=4096, rows=16, cols=1024)
    info = read_info(path)
    assert (info.architecture, info.name, info.size_label) == ("llama", "Tiny Test Model", "2.5M")
    assert info.context_length == 4096
    assert info.parameter_count == 16 * 1024
    assert info.quantisation == "F32"
    assert info.license == "apache-2.0"
    assert info.chat_template is True
    assert info.file_bytes == path.stat().st_size


def test_declared_size_prefers_the_label_then_counts_tensors(tmp_path: Path) -> None:
    labelled, bare = tmp_path / "a.gguf", tmp_path / "b.gguf"
    write_gguf(labelled, size_label="1.5B")
    write_gguf(bare, size_label=None, rows=8, cols=512, chat_template=False)
    assert declared_parameters(labelled) == 1_500_000_000
    assert declared_parameters(bare) == 8 * 512
    assert read_info(bare).chat_template is False


def test_bundled_model_declares_135m() -> None:
    path = bundled_path()
    assert path is not None
    info = read_info(path)
    assert (info.architecture, info.size_label, info.context_length) == ("llama", "135M", 8192)
    assert info.quantisation == "Q4_1" and info.chat_template
    assert declared_parameters(path) == 135_000_000


@pytest.mark.parametrize(("label", "count"), [("135M", 135_000_000), ("1.5B", 1_500_000_000),
                                              ("8x7B", 56_000_000_000), ("big", None),
                                              (None, None)])
def test_size_labels(label: str | None, count: int | None) -> None:
    assert parse_size_label(label) == count


def test_human_count() -> None:
    assert (human_count(1_777_088_000), human_count(134_515_008), human_count(0)) == \
        ("1.8B", "135M", "")


def test_not_a_gguf_and_missing_and_truncated(tmp_path: Path) -> None:
    page = tmp_path / "page.gguf"
    page.write_bytes(b"<!DOCTYPE html>")
    with pytest.raises(BadInputError, match="is not a GGUF model file"):
        read_info(page)
    with pytest.raises(NotFoundError):
        read_info(tmp_path / "none.gguf")
    whole = write_gguf(tmp_path / "w.gguf")
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(whole[:40])
    with pytest.raises(BadInputError, match="truncated"):
        read_info(cut)


def test_models_package_imports_no_agent_and_no_ui() -> None:
    """kbagent/models/ sits below the agent and the surfaces (checked in a fresh
    interpreter, so nothing imported before can hide an import)."""
    import json
    import subprocess
    import sys

    code = ("import json, sys\n"
            "import kbagent.models, kbagent.models.pull, kbagent.models.store\n"
            "import kbagent.models.gguf_info, kbagent.models.fetch, kbagent.models.catalogue\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('textual', 'typer', 'rich', 'click') or m.startswith('kbagent.agent'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert json.loads(out) == []
