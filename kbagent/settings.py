"""Settings in one place: defaults < config file < ``KBAGENT_*`` env < flags.

Built on pydantic-settings: :class:`Settings` declares each setting's type, the
sources are the flags (keyword arguments), the environment (``KBAGENT_<NAME>``)
and the TOML config file, in that order of precedence, and a bad value is a
one-line :class:`SettingsError` naming the setting, where it came from and the
value. Defaults live in :mod:`kbagent.defaults` (read them with :func:`default`).

The data home is ``$KBAGENT_HOME`` (default: the platform's user data dir).
The config file is ``$KBAGENT_HOME/config.toml`` unless ``KBAGENT_CONFIG``
names another; keys are the field names of :class:`Settings`; an unknown key is
an error. Tests point ``KBAGENT_HOME`` at a temporary directory so nothing
touches a user's data.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, ValidationError
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from kbagent.defaults import (
    DEFAULTS as D,
)
from kbagent.defaults import (
    ENV_PREFIX,
    AnswerPolicy,
    EmbeddingPrecision,
    EmbeddingRuntime,
    SearchFirst,
    ShortAnswerMode,
    default,
)
from kbagent.errors import BadInputError

__all__ = [
    "ENV_PREFIX",
    "AnswerPolicy",
    "EmbeddingPrecision",
    "EmbeddingRuntime",
    "SearchFirst",
    "Settings",
    "SettingsError",
    "ShortAnswerMode",
    "default",
    "default_home",
]


class SettingsError(BadInputError):
    """A setting with a bad value or an unknown name (exit code 2, like any bad input)."""


def default_home() -> Path:
    env = os.environ.get(ENV_PREFIX + "HOME")
    if env:
        return Path(env).expanduser()
    from platformdirs import user_data_dir

    return Path(user_data_dir("kbagent", appauthor=False))


# --- value types ------------------------------------------------------------------
# Values come from TOML (already typed), the environment (always text) or flags.
# Each type accepts both and refuses anything it would have to guess at (a bool for
# an int, 2.5 for an int, a list for a string): the checks run before pydantic's own
# (lax) ones, which would take True for 1.
class _Bad(ValueError):
    """A value of the wrong kind; ``kind`` words what was expected ("int")."""

    def __init__(self, kind: str) -> None:
        super().__init__(f"must be {kind}")
        self.kind = kind


def _kind(kind: str, fn: Callable[[Any], Any]) -> BeforeValidator:
    def check(raw: Any) -> Any:
        try:
            return fn(raw)
        except (TypeError, ValueError) as e:
            raise _Bad(kind) from e

    return BeforeValidator(check)


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


def _keymap(raw: Any) -> dict[str, str]:
    """Binding id -> keys, from a TOML table (``[tui_keymap]`` with ``"ask.submit" =
    "ctrl+s"``; an unquoted ``ask.submit`` makes a nested table, read the same) or the
    older string form ``"ask.submit=ctrl+s;screen.search=f6"`` (the form of the
    environment); parts without ``=`` or with an empty side are skipped, as before."""
    pairs: list[tuple[str, Any]] = []
    if isinstance(raw, str):
        pairs = [tuple(part.split("=", 1)) for part in raw.split(";")  # type: ignore[misc]
                 if "=" in part]
    elif isinstance(raw, dict):
        stack = [("", raw)]
        while stack:
            prefix, table = stack.pop()
            for k, v in table.items():
                (stack.append((f"{prefix}{k}.", v)) if isinstance(v, dict)
                 else pairs.append((f"{prefix}{k}", v)))
    else:
        raise TypeError(raw)
    if not all(isinstance(keys, str) for _, keys in pairs):
        raise TypeError(raw)
    return {bid.strip(): keys.strip() for bid, keys in pairs if bid.strip() and keys.strip()}


Bool = Annotated[bool, _kind("bool", _bool)]
Int = Annotated[int, _kind("int", _int)]
Float = Annotated[float, _kind("float", _float)]
Str = Annotated[str, _kind("str", _str)]
FilePath = Annotated[Path, _kind("Path", _path)]
Keymap = Annotated[dict[str, str], NoDecode,
                   _kind('a table of binding id = keys (or "id=keys;...")', _keymap)]

# the config file Settings.load reads (None: the default home's)
_CONFIG_FILE: ContextVar[Path | None] = ContextVar("kbagent_config_file", default=None)


class _EnvSource(EnvSettingsSource):
    """``KBAGENT_<NAME>`` for every setting but ``home``: ``KBAGENT_HOME`` is read by
    :func:`default_home` (where an empty one means the platform's default), and it
    decides where the config file is, which may then set ``home`` itself."""

    def _load_env_vars(self) -> Mapping[str, str | None]:
        # exactly KBAGENT_<NAME> in capitals, as before pydantic-settings: its default
        # matching ignores case, so a stray ``kbagent_max_steps`` would change a setting
        return {k.lower(): v for k, v in os.environ.items()
                if k.startswith(ENV_PREFIX) and k == k.upper()}

    def __call__(self) -> dict[str, Any]:
        return {k: v for k, v in super().__call__().items() if k != "home"}


class _TomlSource(TomlConfigSettingsSource):
    """The config file; its keys are the field names exactly (pydantic-settings would
    also take ``MAX_STEPS``): anything else is an unknown setting."""

    def __init__(self, settings_cls: type[BaseSettings], path: Path) -> None:
        super().__init__(settings_cls, path)
        for key in self.toml_data:
            if key not in settings_cls.model_fields:
                raise SettingsError(f"unknown setting {key!r} in config file {path}")


class Settings(BaseSettings):
    """All tunables. Field names double as config keys and env suffixes."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="forbid",
                                      validate_assignment=True)

    home: FilePath = Field(default_factory=default_home)
    # Knowledge base
    embedding_model: Str = D.embedding_model  # "bundled" or a local sentence-transformers dir
    chunk_tokens: Int = D.chunk_tokens  # token budget per chunk (all-MiniLM-L6-v2 reads 256)
    chunk_overlap: Int = D.chunk_overlap  # tokens of overlap when a long section is split
    max_file_mb: Float = D.max_file_mb  # larger files are skipped with a reason
    max_pdf_pages: Int = D.max_pdf_pages  # PDFs with more pages are skipped with a reason
    max_sheet_rows: Int = D.max_sheet_rows  # workbooks/CSVs with more non-empty rows: the same
    embed_batch: Int = D.embed_batch
    embedding_runtime: EmbeddingRuntime = D.embedding_runtime  # auto (ONNX, else torch) | ...
    embedding_precision: EmbeddingPrecision = D.embedding_precision  # int8: ONNX only
    embed_url: Str = D.embed_url  # OpenAI-compatible embeddings server, e.g. http://…:8081/v1
    embed_model: Str = D.embed_model  # model name to send to it (default: the one it reports)
    embed_timeout: Float = D.embed_timeout  # seconds per embeddings request
    bm25_first_chunks: Int = D.bm25_first_chunks  # a first ingest this big is searchable
    # (BM25) before embedding; meanwhile the vectors made so far are published this often
    vectors_publish_s: Float = D.vectors_publish_s
    # LLM
    llm_model: Str = D.llm_model  # "auto", "bundled", an installed name or a GGUF path
    llm_url: Str = D.llm_url  # OpenAI-compatible server, e.g. http://127.0.0.1:8080/v1
    llm_server_model: Str = D.llm_server_model  # model name to send to the server
    llm_api_key_env: Str = D.llm_api_key_env  # env var holding the server's key
    # the model's size for answer_policy auto, over what its file declares (a server's
    # model has no file): "7B", "1.5B"
    llm_size: Str = D.llm_size
    n_ctx: Int = D.n_ctx
    n_threads: Int = D.n_threads  # 0 = one per physical core (kbagent/agent/llm/cpu.py)
    temperature: Float = D.temperature
    seed: Int = D.seed
    max_tokens_per_step: Int = D.max_tokens_per_step  # at least; a step may use more to
    # finish a tool call
    # Agent
    search_first: SearchFirst = D.search_first  # question | model | off (see AgentConfig)
    max_steps: Int = D.max_steps
    token_budget: Int = D.token_budget  # prompt tokens evaluated + tokens generated, per question
    time_limit: Float = D.time_limit  # seconds of wall time per question
    # grounded answers: facts checked against what they cite (repaired or removed),
    # multi-part and arithmetic questions taken apart by the harness, abstention when
    # nothing covers the question (kbagent/agent/harness/grounding.py)
    grounded: Bool = D.grounded
    # who states the short answer the answer begins with: auto (the harness's best span
    # with the bundled model, any other model writes it, checked), harness (no LLM
    # call), pick (the model picks a span under a grammar), write
    # (kbagent/agent/harness/short_turn.py)
    short_answer: ShortAnswerMode = D.short_answer
    # the model judges which of the five best units states the answer, one yes/no
    # reading each, no generation (kbagent/agent/harness/judge.py); off by default: it did
    # not put the fact first more often with the models measured
    answer_judge: Bool = D.answer_judge
    # who writes a knowledge answer (issue 44): the model, checked (from 1B parameters,
    # as the GGUF or llm_size declares), or the harness's frozen rules; auto picks
    answer_policy: AnswerPolicy = D.answer_policy
    # TUI: remapped keys, binding id -> keys (ids in the README's TUI section)
    tui_keymap: Keymap = Field(default_factory=dict)
    # Access control
    users_file: Str = D.users_file  # user -> groups (TOML); default: $KBAGENT_HOME/users.toml
    code_tools: Bool = D.code_tools  # code_definition/references/callers/outline in knowledge mode
    # Rerank after fusion (off unless a URL or a local CrossEncoder path is set)
    rerank_url: Str = D.rerank_url  # /v1/rerank endpoint, e.g. http://127.0.0.1:8081/v1/rerank
    rerank_model: Str = D.rerank_model  # model name sent to the server, or a CrossEncoder dir
    rerank_top_n: Int = D.rerank_top_n  # fused hits the reranker reorders
    rerank_timeout: Float = D.rerank_timeout  # seconds before a reranker counts as down
    # Servers: questions running or waiting for the one model, in all and per caller;
    # one more is refused at once ("server busy; retry later") instead of queueing
    serve_max_asks: Int = D.serve_max_asks
    serve_max_asks_per_caller: Int = D.serve_max_asks_per_caller

    @property
    def config_path(self) -> Path:
        return config_path(self.home)

    @property
    def users_path(self) -> Path:
        return Path(self.users_file).expanduser() if self.users_file else self.home / "users.toml"

    @property
    def kbs_dir(self) -> Path:
        return self.home / "kbs"

    @classmethod
    def settings_customise_sources(
        cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource, dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Flags (keyword arguments) > ``KBAGENT_*`` environment > the config file."""
        path = _CONFIG_FILE.get() or config_path(default_home())
        return init_settings, _EnvSource(settings_cls), _TomlSource(settings_cls, path)

    @classmethod
    def load(cls, **overrides: Any) -> Settings:
        """Build settings from defaults, config file, env and explicit overrides
        (flags); ``None`` overrides are ignored so unset flags do not win."""
        flags = {k: v for k, v in overrides.items() if v is not None}
        for key in flags:
            if key not in cls.model_fields:
                raise SettingsError(f"unknown setting {key!r} in flags")
        # home decides where the config file lives, so settle it first
        home = _path(flags["home"]) if "home" in flags else default_home()
        path = config_path(home)
        token = _CONFIG_FILE.set(path)
        try:
            return cls(**flags)
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
            raise SettingsError(f"config file {path} is not valid TOML: {e}") from e
        except ValidationError as e:
            raise _one_line(e, flags, path) from None
        finally:
            _CONFIG_FILE.reset(token)


def config_path(home: Path) -> Path:
    env = os.environ.get(ENV_PREFIX + "CONFIG")
    return Path(env).expanduser() if env else home / "config.toml"


def _one_line(e: ValidationError, flags: dict[str, Any], path: Path) -> SettingsError:
    """The first problem of ``e`` as one line: the setting, where its value came from,
    what it must be and the value."""
    err = e.errors()[0]
    key = str(err["loc"][0]) if err["loc"] else "?"
    env = {k.upper() for k in os.environ}
    origin = ("flags" if key in flags
              else "environment" if ENV_PREFIX + key.upper() in env and key != "home"
              else f"config file {path}")
    if err["type"] == "extra_forbidden":  # not reached through load(), which checks first
        return SettingsError(f"unknown setting {key!r} in {origin}")
    bad = err.get("ctx", {}).get("error")
    field = Settings.model_fields.get(key)
    choices = field.annotation if field else None
    if isinstance(bad, _Bad):
        kind = bad.kind
    elif isinstance(choices, type) and issubclass(choices, Enum):
        kind = "one of " + ", ".join(str(m.value) for m in choices)
    else:
        kind = str(err["msg"])
    return SettingsError(f"setting {key!r} from {origin} must be {kind}, got {err['input']!r}")
