"""Embeddings without torch: the model's ONNX export run by onnxruntime + tokenizers.

Importing torch and sentence-transformers and loading the model costs ~6-8 s
per process; a search needs ~25 ms. So the sentence-transformers model is
exported to ONNX once into a cache folder *outside* any KB home, keyed by the
model id and a fingerprint of the model's files (so every temporary
``KBAGENT_HOME`` of the test suite shares one export). Later processes load
only onnxruntime, tokenizers and numpy.

Why not sentence-transformers' own exporter (``backend="onnx"``): it needs
``optimum-onnx``, whose only release (0.1.0) requires transformers < 4.58,
while sentence-transformers 6 requires transformers >= 5 (``optimum.onnxruntime``
fails to import against transformers 5). So the model is saved by
sentence-transformers (tokenizer, pooling, normalisation config) and its
transformer exported by ``torch.onnx.export``; int8 is onnxruntime's dynamic
quantization with the settings of sentence-transformers' ``avx2`` config.

Pooling and normalisation follow the model's own sentence-transformers
config (``modules.json``, ``1_Pooling/config.json``); a model with modules
this runner does not reproduce (e.g. a Dense layer) is refused here, and the
caller falls back to sentence-transformers.

``int8`` (the ``avx2`` settings: they run on any x86-64 CPU, so a KB built on
one machine is queried with the same vectors on another).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from tokenizers import Encoding

from kbagent.errors import BackendError

PRECISIONS = ("fp32", "int8")
QUANT_CONFIG = "avx2"
RUNNER_CONFIG = "kbagent_onnx.json"
ONNX_FILES = {"fp32": "onnx/model.onnx", "int8": f"onnx/model_qint8_{QUANT_CONFIG}.onnx"}
# Up to this many texts (a query) run on one onnxruntime thread: a query is a few
# milliseconds of work, a thread pool start costs more than it saves, and on a
# machine where another process keeps a core busy a multi-threaded run stalls on
# its barriers (the same effect measured for torch, see BENCHMARKS.md).
SINGLE_THREAD_MAX_TEXTS = 8
# sentence-transformers module classes this runner reproduces (by class name: the
# module paths moved between sentence-transformers versions)
SUPPORTED_MODULES = {"Transformer", "Pooling", "Normalize"}
# part of the export folder's name: exports made before version 2 used PyTorch's SDPA
# attention, whose exported pattern onnxruntime's optimiser cannot fuse (eager can)
EXPORT_VERSION = 2


def cache_root() -> Path:
    """Where exports live: ``$KBAGENT_CACHE_DIR`` or the platform's user cache dir."""
    env = os.environ.get("KBAGENT_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("kbagent", appauthor=False))


def model_fingerprint(model_dir: Path) -> str:
    """Hash of the model folder: small files by content, large ones (weights) by size."""
    h = hashlib.sha256()
    for f in sorted(model_dir.rglob("*")):
        rel = f.relative_to(model_dir)
        if not f.is_file() or rel.parts[0] == "onnx":
            continue
        size = f.stat().st_size
        h.update(f"{rel}\0{size}\n".encode())
        if size < 1_000_000:
            h.update(f.read_bytes())
    return h.hexdigest()[:16]


def export_dir(model_id: str, model_dir: Path) -> Path:
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", model_id).strip("_")[-60:]
    return cache_root() / "onnx" / f"{slug}-{model_fingerprint(model_dir)}-e{EXPORT_VERSION}"


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def ensure_export(model_id: str, model_dir: Path, precision: str = "fp32") -> Path:
    """Return the export folder holding ``precision``'s ONNX file, exporting it first
    if needed (imports torch + sentence-transformers; once per machine and model)."""
    out = export_dir(model_id, model_dir)
    if (out / ONNX_FILES[precision]).is_file() and (out / RUNNER_CONFIG).is_file():
        return out
    with _file_lock(out.with_name(out.name + ".lock")):
        if (out / ONNX_FILES[precision]).is_file() and (out / RUNNER_CONFIG).is_file():
            # another process made it meanwhile
            return out
        try:
            _export(model_dir, out, precision)
        except Exception as e:  # optimum/torch/onnx raise many types
            raise BackendError(f"cannot export {model_id} to ONNX: "
                               f"{str(e).splitlines()[0] if str(e) else type(e).__name__}") from e
    return out


def _export(model_dir: Path, out: Path, precision: str) -> None:
    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    if not (out / ONNX_FILES["fp32"]).is_file() or not (out / RUNNER_CONFIG).is_file():
        _export_fp32(model_dir, tmp)
        shutil.rmtree(out, ignore_errors=True)
        os.replace(tmp, out)  # the folder appears whole or not at all
    if precision == "int8":
        import logging

        from onnxruntime.quantization import QuantType, quantize_dynamic

        tmp.mkdir(parents=True)
        logging.disable(logging.WARNING)  # "consider pre-processing" advice on the root logger
        # sentence-transformers' "avx2" dynamic config: uint8 activations and weights,
        # symmetric per-channel weights, reduced range (safe on AVX2 without VNNI)
        quantize_dynamic(out / ONNX_FILES["fp32"], tmp / "q.onnx", per_channel=True,
                         reduce_range=True, weight_type=QuantType.QUInt8,
                         op_types_to_quantize=["MatMul"],
                         extra_options={"WeightSymmetric": True, "ActivationSymmetric": False})
        logging.disable(logging.NOTSET)
        os.replace(tmp / "q.onnx", out / ONNX_FILES["int8"])
        shutil.rmtree(tmp, ignore_errors=True)


def _export_fp32(model_dir: Path, tmp: Path) -> None:
    """Save the sentence-transformers model (its tokenizer, pooling and normalisation
    config) and its transformer as ``onnx/model.onnx``: inputs ``input_ids``,
    ``attention_mask``, ``token_type_ids`` (batch x tokens), output
    ``last_hidden_state`` (the token embeddings the pooling averages)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    import logging
    import warnings

    import torch
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as hf_logging

    logging.getLogger("sentence_transformers").setLevel(logging.ERROR)
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        st = SentenceTransformer(str(model_dir), device="cpu")
        kinds = [type(m).__name__ for m in st]
        if any(k not in SUPPORTED_MODULES for k in kinds) or kinds[:2] != [
                "Transformer", "Pooling"]:
            raise BackendError(f"the ONNX runner does not support modules {kinds}")
        # the modules are checked by class name above; torch types them as Module
        pool: Any = st[1]
        transformer: Any = st[0]
        mode = getattr(pool, "pooling_mode", None) or pool.get_pooling_mode_str()
        if mode not in ("mean", "cls"):
            raise BackendError(f"the ONNX runner does not support {mode!r} pooling")
        getter = getattr(st, "get_embedding_dimension", None) or (
            st.get_sentence_embedding_dimension)
        st.save(str(tmp))
        max_seq_length, dim = st.max_seq_length, getter()
        if max_seq_length is None or dim is None:
            raise BackendError("the model declares no max_seq_length or embedding dimension")
        # what the runner needs, read from the live model (file layouts differ by version)
        (tmp / RUNNER_CONFIG).write_text(json.dumps({
            "max_seq_length": int(max_seq_length), "pooling": mode,
            "normalize": "Normalize" in kinds, "dim": int(dim),
        }))
        for weights in ("model.safetensors", "pytorch_model.bin"):
            (tmp / weights).unlink(missing_ok=True)  # the ONNX file holds them
        hf = transformer.auto_model.eval()
        # eager attention exports as plain MatMul/Softmax, which onnxruntime fuses into
        # its Attention kernel (kbagent/kb/onnx_fused.py); same vectors as SDPA
        with contextlib.suppress(Exception):  # older transformers: keep its default
            hf.set_attn_implementation("eager")
        tok = st.tokenizer(["an example text", "and another, longer example text"],
                           padding=True, return_tensors="pt")
        names = [n for n in ("input_ids", "attention_mask", "token_type_ids") if n in tok]
        (tmp / "onnx").mkdir(parents=True, exist_ok=True)

        class _Wrapped(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.hf = hf

            def forward(self, *args: torch.Tensor) -> torch.Tensor:
                hidden: torch.Tensor = self.hf(
                    **dict(zip(names, args, strict=True))).last_hidden_state
                return hidden

        axes = {n: {0: "batch", 1: "tokens"} for n in names}
        axes["last_hidden_state"] = {0: "batch", 1: "tokens"}
        with torch.no_grad():
            torch.onnx.export(_Wrapped(), tuple(tok[n] for n in names),
                              str(tmp / ONNX_FILES["fp32"]), input_names=names,
                              output_names=["last_hidden_state"], dynamic_axes=axes,
                              opset_version=17, dynamo=False)


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


class OnnxEmbedder:
    """A sentence-transformers model's ONNX export on the CPU (no torch)."""

    runtime = "onnx"

    def __init__(self, model_id: str, folder: Path, precision: str = "fp32",
                 batch_size: int = 32, *, threads: int = 0, sort_by_length: bool = True,
                 fused: bool = False, graph: Path | None = None, spin: bool = True) -> None:
        """``threads``: onnxruntime intra-op threads for batches (0 = its default, one
        per core); ``sort_by_length``: batch texts of similar length together;
        ``fused``: run fp32 on the fused-kernel graph (:mod:`kbagent.kb.onnx_fused`,
        the same vectors; off by default: not measurably faster on ingest, see
        BENCHMARKS.md); ``graph``: run this ONNX file instead of the
        export's own (benchmarks); ``spin``: onnxruntime's worker threads spin
        between kernels (its default; off yields the core to other processes)."""
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.model_id = model_id
        self.precision = precision
        self.batch_size = batch_size
        self.folder = folder
        self.threads = threads
        self.sort_by_length = sort_by_length
        cfg = _read_json(folder / RUNNER_CONFIG)
        self.pooling = str(cfg["pooling"])
        self.dim = int(cfg["dim"])
        max_len = int(cfg["max_seq_length"])
        self._tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
        # what sentence-transformers asks of the HF tokenizer: truncate to max_seq_length,
        # pad to the longest text of the batch (tokenizer.json may carry other settings)
        self._tok.enable_truncation(max_length=max_len)
        self._tok.no_padding()
        tcfg_path = folder / "tokenizer_config.json"
        pad = _read_json(tcfg_path).get("pad_token") if tcfg_path.is_file() else None
        if isinstance(pad, dict):
            pad = pad.get("content")
        self._pad_id = self._tok.token_to_id(pad) if pad else 0
        self._pad_id = self._pad_id or 0
        self._ort = ort
        self._path = str(graph or folder / ONNX_FILES[precision])
        self.fused = fused and precision == "fp32" and graph is None
        self.graph_kind = "plain"  # "fused" once a session runs the fused graph
        self.spin = spin
        self._sessions: dict[int, Any] = {}  # onnxruntime.InferenceSession (untyped)
        self._lock = threading.Lock()
        self._session(1)  # load now so a broken file fails here, not mid-search

    def _session(self, threads: int) -> Any:
        sess = self._sessions.get(threads)
        if sess is None:
            sess = self._new_session(threads)
            self._sessions[threads] = sess
        return sess

    def _new_session(self, threads: int) -> Any:
        """An inference session on the fused graph when one can be made (and read;
        a damaged one is made again once), else on the export itself."""
        plain = Path(self._path)
        if self.fused:
            for _attempt in range(2):
                fused = self._fused_graph()
                if fused is None:
                    break
                try:
                    sess = self._load(fused, fused.with_suffix(".opt.onnx"), threads)
                except Exception:  # damaged: remove it (and its optimised form), remake
                    for f in (fused, fused.with_suffix(".opt.onnx")):
                        with contextlib.suppress(OSError):
                            f.unlink()
                    continue
                self.graph_kind = "fused"
                return sess
        self.graph_kind = "plain"
        return self._load(plain, plain.with_suffix(f".ort-{self._ort.__version__}.opt.onnx"),
                          threads)

    def _fused_graph(self) -> Path | None:
        from kbagent.kb.onnx_fused import PROBE_TEXTS, ensure_fused

        def probe(path: str) -> np.ndarray:
            opts = self._ort.SessionOptions()
            opts.intra_op_num_threads = 1
            opts.log_severity_level = 3
            sess = self._ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
            return self._encode_batch(self._tok.encode_batch(PROBE_TEXTS), sess)

        return ensure_fused(Path(self._path), self.folder, self._ort.__version__, probe)

    def _load(self, source: Path, optimised: Path, threads: int) -> Any:
        """An inference session on ``source``. onnxruntime optimises the graph on
        every load (a third of a cold ``kbagent search``'s model time), so the first
        load saves the optimised graph as ``optimised`` (named for this onnxruntime
        version), and later loads read it with optimisation off. The saved graph
        computes the same vectors (checked by tests/test_onnx_embedder.py); an
        unreadable one is removed and ``source`` is loaded as usual."""
        ort = self._ort

        def options(level: Any) -> Any:
            opts = ort.SessionOptions()
            opts.intra_op_num_threads = threads  # 0 = onnxruntime's default (all cores)
            opts.inter_op_num_threads = 1
            opts.log_severity_level = 3
            opts.graph_optimization_level = level
            if not self.spin:
                opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
            return opts

        levels = ort.GraphOptimizationLevel
        cpu = ["CPUExecutionProvider"]
        if optimised.is_file():
            try:
                return ort.InferenceSession(str(optimised), options(levels.ORT_DISABLE_ALL),
                                            providers=cpu)
            except Exception:  # damaged or from another build: make it again
                with contextlib.suppress(OSError):
                    optimised.unlink()
        # EXTENDED, not ALL: ALL adds layout changes tied to this CPU
        opts = options(levels.ORT_ENABLE_EXTENDED)
        tmp = optimised.with_name(f"{optimised.name}.{os.getpid()}.tmp")
        opts.optimized_model_filepath = str(tmp)
        try:
            sess = ort.InferenceSession(str(source), opts, providers=cpu)
        except Exception:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise
        with contextlib.suppress(OSError):  # a read-only cache still works, unsaved
            os.replace(tmp, optimised)
        return sess

    def is_word(self, word: str) -> bool:
        """Is ``word`` one token of the vocabulary (not a name: "certbot" is "ce ##rt ##bot")?"""
        return len(self._tok.encode(word, add_special_tokens=False).ids) == 1

    def encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        encodings = self._tok.encode_batch(list(texts))
        # length-sorted batches: short texts are not padded to a long neighbour's length
        order = (np.argsort([len(e.ids) for e in encodings], kind="stable")
                 if self.sort_by_length else np.arange(len(texts)))
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        with self._lock:
            sess = self._session(1 if len(texts) <= SINGLE_THREAD_MAX_TEXTS else self.threads)
            for start in range(0, len(texts), self.batch_size):
                idx = order[start : start + self.batch_size]
                out[idx] = self._encode_batch([encodings[i] for i in idx], sess)
        return out

    def _encode_batch(self, encodings: list[Encoding], sess: Any) -> np.ndarray:
        width = max(len(e.ids) for e in encodings)
        ids = np.full((len(encodings), width), self._pad_id, dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        types = np.zeros((len(encodings), width), dtype=np.int64)
        for row, e in enumerate(encodings):
            n = len(e.ids)
            ids[row, :n] = e.ids
            mask[row, :n] = 1
            types[row, :n] = e.type_ids
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        inputs = {i.name for i in sess.get_inputs()}
        names = [o.name for o in sess.get_outputs()]
        output = next((n for n in ("token_embeddings", "last_hidden_state") if n in names),
                      names[0])
        tokens: np.ndarray = sess.run([output], {k: v for k, v in feeds.items()
                                                 if k in inputs})[0].astype(np.float32)
        vecs: np.ndarray
        if self.pooling == "cls":
            vecs = tokens[:, 0]
        else:
            m = mask[:, :, None].astype(np.float32)
            vecs = (tokens * m).sum(axis=1) / np.clip(m.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(vecs, axis=1, keepdims=True)
        unit: np.ndarray = vecs / np.clip(norms, 1e-12, None)
        return unit
