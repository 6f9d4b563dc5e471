"""The default of every setting, and the closed sets settings choose from.

:class:`kbagent.settings.Settings` (pydantic-settings) declares each setting's type
and meaning and takes its default from :data:`DEFAULTS`; a test checks that both
name the same settings. This module is apart, and imports nothing but the standard
library, so that ``kbagent --help`` prints the defaults ("default 5") without
importing pydantic (about 100 ms of a cold start). Read the defaults through
:func:`default` (re-exported by :mod:`kbagent.settings`): the one source that the
agent's config, function signatures and CLI help text use.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

ENV_PREFIX = "KBAGENT_"


class SearchFirst(StrEnum):
    """How a knowledge question starts (setting ``search_first``)."""

    QUESTION = "question"  # the harness searches the question itself as step 1
    MODEL = "model"  # the model's first step is grammar-forced to be a kb_search
    OFF = "off"  # the model decides freely


class ShortAnswerMode(StrEnum):
    """Who states the short answer (setting ``short_answer``;
    kbagent/agent/harness/short_turn.py)."""

    AUTO = "auto"  # harness with the bundled model, write with any other
    HARNESS = "harness"  # the harness's best span, no LLM call
    PICK = "pick"  # the model picks one span of the sentence, under a grammar
    WRITE = "write"  # the model writes it from the best sentences; checked


class AnswerPolicy(StrEnum):
    """Who writes a knowledge answer (setting ``answer_policy``; issue 44)."""

    AUTO = "auto"  # by the model's declared size: model from 1B parameters, else harness
    HARNESS = "harness"  # the extractive harness's rules (frozen): for models too small to read
    MODEL = "model"  # the model writes the whole answer; the code checks, asks again, flags


class EmbeddingRuntime(StrEnum):
    """What runs the embedding model (setting ``embedding_runtime``)."""

    AUTO = "auto"  # ONNX; if no export can be made, torch with a notice
    ONNX = "onnx"
    TORCH = "torch"  # the sentence-transformers path


class EmbeddingPrecision(StrEnum):
    """The precision of the vectors (setting ``embedding_precision``)."""

    FP32 = "fp32"
    INT8 = "int8"  # ONNX dynamic quantization: ONNX only


@dataclass(frozen=True)
class _Defaults:
    """Field for field as :class:`kbagent.settings.Settings` (which says what each
    means), except ``home``, whose default depends on the environment."""

    # Knowledge base
    embedding_model: str = "bundled"
    chunk_tokens: int = 200
    chunk_overlap: int = 32
    max_file_mb: float = 20.0
    max_pdf_pages: int = 2000
    max_sheet_rows: int = 200_000
    embed_batch: int = 32
    embedding_runtime: EmbeddingRuntime = EmbeddingRuntime.AUTO
    embedding_precision: EmbeddingPrecision = EmbeddingPrecision.FP32
    embed_url: str = ""
    embed_model: str = ""
    embed_timeout: float = 30.0
    bm25_first_chunks: int = 2000
    vectors_publish_s: float = 30.0
    # LLM
    llm_model: str = "auto"  # kbagent.models.catalogue.AUTO
    llm_url: str = ""
    llm_server_model: str = ""
    llm_api_key_env: str = "KBAGENT_LLM_API_KEY"
    n_ctx: int = 8192
    n_threads: int = 0
    temperature: float = 0.0
    seed: int = 42
    max_tokens_per_step: int = 384
    # Agent
    search_first: SearchFirst = SearchFirst.QUESTION
    max_steps: int = 5
    token_budget: int = 24000
    time_limit: float = 180.0
    grounded: bool = True
    short_answer: ShortAnswerMode = ShortAnswerMode.AUTO
    answer_judge: bool = False
    answer_policy: AnswerPolicy = AnswerPolicy.AUTO
    llm_size: str = ""
    # Access control
    users_file: str = ""
    code_tools: bool = False
    # Rerank
    rerank_url: str = ""
    rerank_model: str = ""
    rerank_top_n: int = 20
    rerank_timeout: float = 10.0
    # Servers (kbagent serve / mcp / acp)
    serve_max_asks: int = 8
    serve_max_asks_per_caller: int = 4


DEFAULTS = _Defaults()


def default(name: str) -> Any:
    """The default of setting ``name``: the one source that the agent's config,
    function signatures and CLI help text ("default 5") read."""
    if name not in _Defaults.__dataclass_fields__:
        raise KeyError(f"setting {name!r} has no plain default")
    return getattr(DEFAULTS, name)
