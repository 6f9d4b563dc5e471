"""Settings in one place: defaults < config file < ``KBAGENT_*`` env < flags.

The data home is ``$KBAGENT_HOME`` (default: the platform's user data dir).
The config file is ``$KBAGENT_HOME/config.toml`` unless ``KBAGENT_CONFIG``
names another; keys are the field names of :class:`Settings`. Tests point
``KBAGENT_HOME`` at a temporary directory so nothing touches a user's data.
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbagent.errors import BadInputError

ENV_PREFIX = "KBAGENT_"


def default_home() -> Path:
    env = os.environ.get("KBAGENT_HOME")
    if env:
        return Path(env).expanduser()
    from platformdirs import user_data_dir

    return Path(user_data_dir("kbagent", appauthor=False))


@dataclass
class Settings:
    """All tunables. Field names double as config keys and env suffixes."""

    home: Path = field(default_factory=default_home)
    # Knowledge base
    embedding_model: str = "bundled"  # "bundled" or a local sentence-transformers dir
    chunk_tokens: int = 200  # token budget per chunk (all-MiniLM-L6-v2 reads 256)
    chunk_overlap: int = 32  # tokens of overlap when a long section is split
    max_file_mb: float = 20.0  # larger files are skipped with a reason
    max_pdf_pages: int = 2000  # PDFs with more pages are skipped with a reason
    max_sheet_rows: int = 200_000  # workbooks/CSVs with more non-empty rows: the same
    embed_batch: int = 32
    embedding_runtime: str = "auto"  # auto (ONNX, else torch) | onnx | torch
    embedding_precision: str = "fp32"  # fp32 | int8 (int8: ONNX only)
    embed_url: str = ""  # OpenAI-compatible embeddings server, e.g. http://127.0.0.1:8081/v1
    embed_model: str = ""  # model name to send to it (default: the one it reports)
    embed_timeout: float = 30.0  # seconds per embeddings request
    bm25_first_chunks: int = 2000  # a first ingest this big is searchable (BM25) before embedding
    vectors_publish_s: float = 30.0  # meanwhile, publish the vectors made so far this often
    # LLM
    llm_model: str = "bundled"  # "bundled" or a path to a GGUF file
    llm_url: str = ""  # OpenAI-compatible server, e.g. http://127.0.0.1:8080/v1
    llm_server_model: str = ""  # model name to send to the server
    llm_api_key_env: str = "KBAGENT_LLM_API_KEY"  # env var holding the server's key
    n_ctx: int = 8192
    n_threads: int = 0  # 0 = llama.cpp's default
    temperature: float = 0.0
    seed: int = 42
    max_tokens_per_step: int = 384  # at least; a step may use more to finish a tool call
    # Agent
    search_first: str = "question"  # question | model | off (see AgentConfig)
    max_steps: int = 5
    token_budget: int = 24000  # prompt tokens evaluated + tokens generated, per question
    time_limit: float = 180.0  # seconds of wall time per question
    # grounded answers: facts checked against what they cite (repaired or removed),
    # multi-part and arithmetic questions taken apart by the harness, abstention when
    # nothing covers the question (kbagent/agent/answer/grounding.py)
    grounded: bool = True
    # TUI: remapped keys, "binding.id=keys;..." (ids in the README's TUI section)
    tui_keymap: str = ""
    # Access control
    users_file: str = ""  # user -> groups (TOML); default: $KBAGENT_HOME/users.toml
    code_tools: bool = False  # code_definition/references/callers/outline in knowledge mode
    # Rerank after fusion (off unless a URL or a local CrossEncoder path is set)
    rerank_url: str = ""  # /v1/rerank endpoint, e.g. http://127.0.0.1:8081/v1/rerank
    rerank_model: str = ""  # model name sent to the server, or a local CrossEncoder dir
    rerank_top_n: int = 20  # fused hits the reranker reorders
    rerank_timeout: float = 10.0  # seconds before a reranker counts as down

    @property
    def config_path(self) -> Path:
        env = os.environ.get(ENV_PREFIX + "CONFIG")
        return Path(env).expanduser() if env else self.home / "config.toml"

    @property
    def users_path(self) -> Path:
        return Path(self.users_file).expanduser() if self.users_file else self.home / "users.toml"

    @property
    def kbs_dir(self) -> Path:
        return self.home / "kbs"

    @classmethod
    def load(cls, **overrides: Any) -> Settings:
        """Build settings from defaults, config file, env and explicit overrides
        (flags); ``None`` overrides are ignored so unset flags do not win."""
        s = cls()
        # home decides where the config file lives, so settle it first
        if overrides.get("home") is not None:
            s.home = Path(overrides["home"]).expanduser()
        path = s.config_path
        if path.is_file():
            try:
                data = tomllib.loads(path.read_text(encoding="utf-8"))
            except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
                raise BadInputError(f"config file {path} is not valid TOML: {e}") from e
            s._apply(data, f"config file {path}")
        env = {
            f.name: os.environ[ENV_PREFIX + f.name.upper()]
            for f in dataclasses.fields(cls)
            if f.name != "home" and ENV_PREFIX + f.name.upper() in os.environ
        }
        s._apply(env, "environment")
        s._apply({k: v for k, v in overrides.items() if v is not None and k != "home"}, "flags")
        return s

    def _apply(self, data: dict[str, Any], origin: str) -> None:
        types = {f.name: f.type for f in dataclasses.fields(self)}
        for key, raw in data.items():
            if key not in types:
                raise BadInputError(f"unknown setting {key!r} in {origin}")
            setattr(self, key, _coerce(key, types[key], raw, origin))


def default(name: str) -> Any:
    """The default of setting ``name``: the one source that the agent's config,
    function signatures and CLI help text ("default 5") read."""
    f = _FIELDS[name]
    if f.default is dataclasses.MISSING:
        raise KeyError(f"setting {name!r} has no plain default")
    return f.default


def _coerce(key: str, typ: Any, raw: Any, origin: str) -> Any:
    name = typ if isinstance(typ, str) else getattr(typ, "__name__", str(typ))
    validator = VALIDATORS[name]  # every field type has one (tests check it)
    try:
        return validator(raw)
    except (TypeError, ValueError) as e:
        raise BadInputError(f"setting {key!r} from {origin} must be {name}, got {raw!r}") from e


# One validator per field type. Values come from TOML (already typed) or the
# environment (always text); each accepts both and refuses anything it would
# have to guess at (a bool for an int, 2.5 for an int, a list for a string).
def _bool(raw: Any) -> bool:
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, int) and raw in (0, 1):
        return bool(raw)
    if not isinstance(raw, str):
        raise TypeError(raw)
    text = raw.strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(raw)


def _int(raw: Any) -> int:
    if isinstance(raw, bool):
        raise TypeError(raw)
    if isinstance(raw, int):
        return raw
    if isinstance(raw, float):
        if not raw.is_integer():
            raise ValueError(raw)
        return int(raw)
    if not isinstance(raw, str):
        raise TypeError(raw)
    return int(raw.strip())


def _float(raw: Any) -> float:
    if isinstance(raw, bool):
        raise TypeError(raw)
    if isinstance(raw, int | float):
        return float(raw)
    if not isinstance(raw, str):
        raise TypeError(raw)
    return float(raw.strip())


def _str(raw: Any) -> str:
    if isinstance(raw, bool) or not isinstance(raw, str | int | float):
        raise TypeError(raw)
    return str(raw)


def _path(raw: Any) -> Path:
    if not isinstance(raw, str | Path):
        raise TypeError(raw)
    return Path(raw).expanduser()


VALIDATORS: dict[str, Any] = {"bool": _bool, "int": _int, "float": _float, "str": _str,
                              "Path": _path}
_FIELDS = {f.name: f for f in dataclasses.fields(Settings)}
