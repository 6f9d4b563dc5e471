"""The fp32 ONNX graph with onnxruntime's transformer kernels fused in.

onnxruntime's own session optimiser (``ORT_ENABLE_EXTENDED``) fuses only the
GELU bias into ``BiasGelu`` on the exported BERT graph; its offline transformer
optimiser (``onnxruntime.transformers.optimizer``) also fuses each layer's
self-attention into one ``Attention`` kernel, the embeddings and their layer
norm into ``EmbedLayerNormalization`` and every residual + layer norm into
``SkipLayerNormalization`` (18 MatMuls and 25 fused nodes left of ~600 nodes).
It is an option (``OnnxEmbedder(fused=True)``), not the default: on the
shared 2-core machine it was not measurably faster than the plain export on
NFCorpus ingest (BENCHMARKS.md, "Embedding runtimes side by side").

The fused graph is made once, beside the export and named for the onnxruntime
version that made it (its contrib ops belong to that build), written whole or
not at all. Before it is used the first time its vectors are compared with the
export's on padded probe texts; a graph that does not match (a model the
optimiser mis-reads) is not used again (a ``.rejected`` marker), and any
failure to make or read one leaves the plain export in use, silently: the
fused graph is only ever a faster way to the same vectors.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import Callable
from pathlib import Path

import numpy as np

# HF model types whose exported graph the optimiser's "bert" fusions read
BERT_LIKE = {"bert", "roberta", "xlm-roberta", "camembert", "distilbert"}
# the fused graph's vectors against the export's (fp32 kernels in another order)
MIN_PROBE_COSINE = 0.99999
PROBE_TEXTS = [
    "a short probe",
    "a longer probe text so that the batch is padded and the attention mask matters "
    "for the shorter one, with punctuation, numbers (3.14) and UTF-8: café, 東京",
]


def fused_path(plain: Path, ort_version: str) -> Path:
    """``onnx/model.onnx`` -> ``onnx/model.fused-ort-<version>.onnx``."""
    return plain.with_name(f"{plain.stem}.fused-ort-{ort_version}.onnx")


def rejected_marker(fused: Path) -> Path:
    return fused.with_suffix(".rejected")


def heads_and_hidden(model_folder: Path) -> tuple[int, int] | None:
    """(attention heads, hidden size) from the model's ``config.json``, or None
    when it is not a BERT-like encoder the optimiser knows."""
    try:
        cfg = json.loads((model_folder / "config.json").read_text(encoding="utf-8"))
        if cfg.get("model_type") not in BERT_LIKE:
            return None
        heads = int(cfg.get("num_attention_heads") or cfg.get("n_heads"))
        hidden = int(cfg.get("hidden_size") or cfg.get("dim"))
    except (OSError, ValueError, TypeError):
        return None
    return heads, hidden


def ensure_fused(plain: Path, model_folder: Path, ort_version: str,
                 embed_probe: Callable[[str], np.ndarray]) -> Path | None:
    """The fused graph of ``plain`` (made now if missing), or None when it cannot be
    made or does not reproduce the export's vectors. ``embed_probe(path)`` embeds
    :data:`PROBE_TEXTS` with the graph at ``path`` (unit vectors)."""
    fused = fused_path(plain, ort_version)
    if fused.is_file():
        return fused
    if rejected_marker(fused).exists():
        return None
    shape = heads_and_hidden(model_folder)
    if shape is None:
        return None
    tmp = fused.with_name(f"{fused.name}.{os.getpid()}.tmp")
    try:
        _optimise(plain, tmp, *shape)
        cos = (embed_probe(str(tmp)) * embed_probe(str(plain))).sum(axis=1)
        if not float(cos.min()) >= MIN_PROBE_COSINE:
            rejected_marker(fused).write_text(f"probe cosine {float(cos.min()):.6f}\n")
            return None
        os.replace(tmp, fused)  # appears whole or not at all
    except Exception:  # the optimiser, onnx or a read-only cache: keep the plain export
        return None
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()
    return fused


def _optimise(plain: Path, out: Path, num_heads: int, hidden_size: int) -> None:
    from onnxruntime.transformers.optimizer import optimize_model

    quiet = [logging.getLogger(n) for n in ("onnx_model", "fusion_base", "fusion_utils",
                                              "onnx_model_bert", "fusion_attention",
                                              "fusion_embedlayer", "fusion_skiplayernorm")]
    levels = [lg.level for lg in quiet]
    for lg in quiet:
        lg.setLevel(logging.ERROR)
    try:
        # opt_level 0: the optimiser's own fusions only; the session optimiser runs
        # on top when the graph is loaded (and its result is saved, see OnnxEmbedder)
        model = optimize_model(str(plain), model_type="bert", num_heads=num_heads,
                               hidden_size=hidden_size, opt_level=0)
        model.save_model_to_file(str(out))
    finally:
        for lg, level in zip(quiet, levels, strict=True):
            lg.setLevel(level)
