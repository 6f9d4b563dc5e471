"""The torch-free query path (issue 8): ONNX vectors match torch's, a search never
imports torch, and a KB is only queried with vectors of its own kind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kbagent.errors import BadInputError
from kbagent.kb import embedder as embedder_module
from kbagent.kb.embedder import load_embedder
from kbagent.kb.ingest import Ingestor
from kbagent.kb.knowledge_base import KnowledgeBase, current_generation
from kbagent.kb.search import HybridSearcher
from kbagent.settings import Settings
from tests.conftest import ROOT, SMALL_DOCS

TEXTS = [
    "retry policy",
    "How many vacation days do employees get?",
    "Gross margin fell to 66.2% in Q3 from 71.4% in Q2 because of a GPU contract.",
    "Ünïcödé façade naïve café — 東京 and emoji 🚀 in one line.",
    # longer than the model's 256-token window: truncation must match too
    " ".join(f"paragraph {i} explains exponential backoff with jitter." for i in range(120)),
]


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def test_onnx_vectors_match_torch_vectors():
    onnx = load_embedder("bundled", runtime="onnx")
    torch_emb = load_embedder("bundled", runtime="torch")
    assert (onnx.runtime, torch_emb.runtime) == ("onnx", "torch")
    assert onnx.graph_kind == "plain"  # the default: the export itself (fused is opt-in)
    a, b = onnx.encode(TEXTS), torch_emb.encode(TEXTS)
    assert a.shape == b.shape == (len(TEXTS), 384)
    assert _cosines(a, b).min() >= 0.9999
    # a query alone (one thread, no padding) gives the same vector as inside a batch
    np.testing.assert_allclose(onnx.encode([TEXTS[1]])[0], a[1], atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)


def test_a_cli_search_never_imports_torch(sample_settings: Settings, embedder):
    assert embedder.runtime == "onnx"  # the export exists (made by the session fixture)
    code = (
        "import sys\n"
        "from kbagent.cli import main\n"
        "sys.argv = ['kbagent', 'search', 'retry backoff', '--json']\n"
        "try:\n    main()\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
        "heavy = [m for m in ('torch', 'sentence_transformers', 'transformers') "
        "if m in sys.modules]\n"
        "print('HEAVY=' + ','.join(heavy), file=sys.stderr)\n"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT), KBAGENT_HOME=str(sample_settings.home))
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    hits = json.loads(proc.stdout)
    assert hits and hits[0]["vector_rank"] is not None  # vectors were used
    assert "HEAVY=\n" in proc.stderr + "\n", proc.stderr


def test_manifest_records_runtime_and_precision(sample_settings: Settings):
    kb = KnowledgeBase(sample_settings, "sample")
    assert kb.manifest["embedding_runtime"] == "onnx"
    assert kb.manifest["embedding_precision"] == "fp32"
    assert kb.embedding_space == kb.embedding_model


def _strip_runtime_fields(settings: Settings, name: str) -> None:
    d = settings.kbs_dir / name
    path = d / current_generation(d) / "manifest.json"
    m = json.loads(path.read_text())
    del m["embedding_runtime"], m["embedding_precision"]
    path.write_text(json.dumps(m))


def test_an_old_kb_without_runtime_fields_keeps_working(make_folder, settings, embedder):
    # made by torch fp32 before runtimes were recorded = the same vectors as ONNX fp32
    src = make_folder(SMALL_DOCS)
    Ingestor(settings, "old", embedder=embedder).run(src)
    _strip_runtime_fields(settings, "old")
    kb = KnowledgeBase(settings, "old")
    hits = HybridSearcher([kb]).search("holiday allowance cafeteria", k=3, mode="vector").hits
    assert hits and hits[0].path == "notes.txt"
    (src / "extra.md").write_text("# Parking\n\nParking is free on Fridays.\n")
    report = Ingestor(settings, "old", embedder=embedder).run(src)  # incremental: accepted
    assert report.committed and report.chunks_embedded >= 1


@pytest.fixture(scope="module")
def int8_home(tmp_path_factory) -> Path:
    home = tmp_path_factory.mktemp("int8_home")
    src = home / "src"
    for rel, text in SMALL_DOCS.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(text)
    s = Settings.load(home=home, embedding_precision="int8")
    Ingestor(s, "q8").run(src)
    return home


def test_an_int8_kb_is_queried_with_int8_vectors(int8_home: Path):
    s = Settings.load(home=int8_home)  # defaults: runtime auto, precision fp32
    kb = KnowledgeBase(s, "q8")
    assert (kb.manifest["embedding_runtime"], kb.manifest["embedding_precision"]) == (
        "onnx", "int8")
    hits = HybridSearcher([kb]).search("exponential backoff", k=2, mode="vector").hits
    assert hits[0].path == "guide/retry.md"


def test_an_int8_kb_is_refused_by_an_fp32_path(int8_home: Path, embedder):
    kb = KnowledgeBase(Settings.load(home=int8_home, embedding_runtime="torch"), "q8")
    with pytest.raises(BadInputError, match=r"int8.*embedding_runtime = onnx"):
        HybridSearcher([kb]).search("backoff", k=2)
    # an embedder of another kind handed in explicitly is refused too
    kb = KnowledgeBase(Settings.load(home=int8_home), "q8")
    with pytest.raises(BadInputError, match=r"holds int8 vectors.*--rebuild"):
        HybridSearcher([kb], embedder_for=lambda _space: embedder).search("backoff", k=2)
    assert HybridSearcher([kb]).search("backoff", k=2, mode="bm25").hits  # BM25 still fine


def test_the_cli_refuses_an_int8_kb_on_torch_in_one_line(int8_home: Path):
    env = dict(os.environ, PYTHONPATH=str(ROOT), KBAGENT_HOME=str(int8_home),
               KBAGENT_EMBEDDING_RUNTIME="torch")
    proc = subprocess.run([sys.executable, "-m", "kbagent", "search", "backoff"], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "int8" in proc.stderr and "--rebuild" in proc.stderr


def test_an_fp32_ingest_into_an_int8_kb_is_refused(int8_home: Path, tmp_path: Path):
    s = Settings.load(home=int8_home)
    before = current_generation(s.kbs_dir / "q8")
    src = Path(KnowledgeBase(s, "q8").manifest["source"])
    with pytest.raises(BadInputError, match="--rebuild"):
        Ingestor(s, "q8").run(src)
    assert current_generation(s.kbs_dir / "q8") == before


def test_without_an_export_the_torch_path_is_used_with_a_notice(tmp_path, monkeypatch, capsys):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")  # the export cannot be written under a file
    monkeypatch.setenv("KBAGENT_CACHE_DIR", str(blocker))
    monkeypatch.setattr(embedder_module, "_CACHE", {})
    emb = load_embedder("bundled")  # runtime auto
    assert emb.runtime == "torch"
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "using sentence-transformers" in err[0]
    with pytest.raises(Exception, match="cannot run"):
        load_embedder("bundled", runtime="onnx")


def test_the_saved_optimised_graph_gives_the_same_vectors(tmp_path: Path):
    """The first load saves onnxruntime's optimised graph beside the export; later
    loads read it with optimisation off and must embed exactly as the export does. A
    damaged saved graph is replaced, never an error."""
    import shutil

    from kbagent.kb.onnx_embedder import OnnxEmbedder

    source = load_embedder("bundled", runtime="onnx")
    folder = tmp_path / "export"
    shutil.copytree(source.folder, folder,
                    ignore=shutil.ignore_patterns("*.opt.onnx", "*.tmp", "*.fused-ort-*"))
    first = OnnxEmbedder(source.model_id, folder)  # the plain export (the default)
    saved = list((folder / "onnx").glob("model.ort-*.opt.onnx"))
    assert len(saved) == 1
    again = OnnxEmbedder(source.model_id, folder)  # from the saved graph
    a, b = first.encode(TEXTS), again.encode(TEXTS)
    assert _cosines(a, b).min() >= 0.99999
    assert _cosines(b, source.encode(TEXTS)).min() >= 0.99999
    saved[0].write_bytes(b"not a graph")
    damaged = OnnxEmbedder(source.model_id, folder)
    assert _cosines(damaged.encode(TEXTS), a).min() >= 0.99999
    assert saved[0].stat().st_size > 1000  # made again


def _copy_export(tmp_path: Path):
    """The bundled model's export copied without any graph made from it."""
    import shutil

    import onnxruntime

    from kbagent.kb.onnx_fused import fused_path

    source = load_embedder("bundled", runtime="onnx")
    folder = tmp_path / "export"
    shutil.copytree(source.folder, folder,
                    ignore=shutil.ignore_patterns("*.opt.onnx", "*.tmp", "*.fused-ort-*"))
    return source, folder, fused_path(folder / "onnx" / "model.onnx", onnxruntime.__version__)


def test_the_fused_graph_is_made_once_and_remade_when_damaged(tmp_path: Path):
    from kbagent.kb.onnx_embedder import OnnxEmbedder

    source, folder, fused = _copy_export(tmp_path)
    first = OnnxEmbedder(source.model_id, folder, fused=True)
    assert first.graph_kind == "fused" and fused.is_file()
    import onnx

    ops = {n.op_type for n in onnx.load(str(fused)).graph.node}
    assert {"Attention", "SkipLayerNormalization", "EmbedLayerNormalization"} <= ops
    optimised = fused.with_suffix(".opt.onnx")
    assert optimised.is_file()  # its session-optimised form is saved too
    reference = load_embedder("bundled", runtime="torch").encode(TEXTS)
    assert _cosines(first.encode(TEXTS), reference).min() >= 0.9999
    made = fused.stat().st_mtime_ns
    assert OnnxEmbedder(source.model_id, folder, fused=True).graph_kind == "fused"
    assert fused.stat().st_mtime_ns == made  # read, not made again
    for f in (fused, optimised):
        f.write_bytes(b"not a graph")
    again = OnnxEmbedder(source.model_id, folder, fused=True)  # no error: made again
    assert again.graph_kind == "fused"
    assert fused.stat().st_size > 1000 and optimised.stat().st_size > 1000
    assert _cosines(again.encode(TEXTS), reference).min() >= 0.9999


def test_without_a_fused_graph_the_plain_export_runs_silently(tmp_path: Path, capfd):
    from kbagent.kb.onnx_embedder import OnnxEmbedder

    source, folder, fused = _copy_export(tmp_path)
    fused.mkdir()  # the fused graph cannot be written where it belongs
    emb = OnnxEmbedder(source.model_id, folder, fused=True)
    assert emb.graph_kind == "plain"
    assert _cosines(emb.encode(TEXTS), source.encode(TEXTS)).min() >= 0.99999
    assert capfd.readouterr().err == ""
