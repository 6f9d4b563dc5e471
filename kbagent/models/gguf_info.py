"""What a GGUF file declares about itself: architecture, name, size label, parameter
count, context length, quantisation, licence, whether it carries a chat template.

The value types and names come from the ``gguf`` package (llama.cpp's own). The file
is read by a streaming header reader rather than ``gguf.GGUFReader``: the reader
parses every tensor and every tokenizer entry into numpy views (16 s for a 1.5B model
on a 2-core machine), where the header alone takes well under a second. The
parameter count is the sum of the tensor shapes in the tensor-info table that follows
the header (no tensor data is read).

:func:`declared_parameters` is the size an answer policy is chosen by (the model's own
declaration, never its file name).
"""

from __future__ import annotations

import re
import struct
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Any

from kbagent.errors import BadInputError, NotFoundError

MAGIC = b"GGUF"
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?",
            10: "<Q", 11: "<q", 12: "<d"}  # gguf.GGUFValueType numbers
_STRING, _ARRAY = 8, 9
_SIZE_LABEL = re.compile(r"^(?:(\d+)x)?(\d+(?:\.\d+)?)([KMBT])$", re.IGNORECASE)
_UNITS = {"K": 10**3, "M": 10**6, "B": 10**9, "T": 10**12}


@dataclass(frozen=True)
class GgufInfo:
    """The declared facts of one GGUF (None where the file does not say)."""

    path: str
    file_bytes: int
    gguf_version: int
    architecture: str | None
    name: str | None
    size_label: str | None
    parameter_count: int | None  # summed over the tensor shapes
    context_length: int | None
    quantisation: str | None
    license: str | None
    chat_template: bool

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def parameters_text(self) -> str:
        """The size label, else the counted parameters as 1.5B / 135M; "" if neither."""
        if self.size_label:
            return self.size_label
        return human_count(self.parameter_count) if self.parameter_count else ""


class _Reader:
    """Little-endian GGUF fields from a buffered file."""

    def __init__(self, f: IO[bytes], path: Path) -> None:
        self.f, self.path = f, path

    def take(self, n: int) -> bytes:
        data = self.f.read(n)
        if len(data) != n:
            raise BadInputError(f"{self.path} is a truncated GGUF file (header ends early)")
        return data

    def scalar(self, kind: int) -> Any:
        fmt = _SCALARS.get(kind)
        if fmt is None:
            raise BadInputError(f"{self.path}: unknown GGUF value type {kind}")
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def string(self) -> bytes:
        (n,) = struct.unpack("<Q", self.take(8))
        if n > 1 << 30:
            raise BadInputError(f"{self.path}: a GGUF string of {n} bytes; not a GGUF file?")
        return self.take(n)

    def skip_string(self) -> None:
        (n,) = struct.unpack("<Q", self.take(8))
        self.f.seek(n, 1)

    def value(self, kind: int, keep: bool) -> Any:
        """One value; arrays and strings not kept are skipped (tokenizer tables)."""
        if kind == _STRING:
            if not keep:
                self.skip_string()
                return None
            return self.string().decode("utf-8", "replace")
        if kind == _ARRAY:
            item, count = struct.unpack("<IQ", self.take(12))
            if item == _STRING:
                for _ in range(count):
                    self.skip_string()
            elif item in _SCALARS:
                self.f.seek(count * struct.calcsize(_SCALARS[item]), 1)
            else:
                for _ in range(count):
                    self.value(item, False)
            return None
        return self.scalar(kind)


def _wanted(key: str) -> bool:
    return key.startswith("general.") or key.endswith(".context_length") or \
        key == "tokenizer.chat_template"


def read_header(path: Path) -> tuple[int, dict[str, Any], int | None]:
    """(GGUF version, the kept key/values, parameter count) of ``path``."""
    path = Path(path)
    if not path.is_file():
        raise NotFoundError(f"model file not found: {path}")
    with open(path, "rb", buffering=1 << 16) as f:
        r = _Reader(f, path)
        if f.read(4) != MAGIC:
            raise BadInputError(f"{path} is not a GGUF model file")
        version = r.scalar(4)
        if version < 2:
            raise BadInputError(f"{path} is GGUF version {version}; kbagent reads 2 and 3")
        n_tensors, n_kv = struct.unpack("<QQ", r.take(16))
        kv: dict[str, Any] = {}
        for _ in range(n_kv):
            key = r.string().decode("utf-8", "replace")
            kind = r.scalar(4)
            value = r.value(kind, _wanted(key))
            if key == "tokenizer.chat_template":
                kv[key] = bool(value)
            elif value is not None:
                kv[key] = value
        params: int | None = 0
        try:
            for _ in range(n_tensors):
                r.skip_string()
                (n_dims,) = struct.unpack("<I", r.take(4))
                count = 1
                for d in struct.unpack(f"<{n_dims}Q", r.take(8 * n_dims)):
                    count *= d
                r.take(12)  # type (u32) and offset (u64)
                params = (params or 0) + count
        except BadInputError:
            params = None  # a file cut inside the tensor table: the header still says much
    return version, kv, params or None


def quantisation_name(file_type: int | None) -> str | None:
    """``general.file_type`` as llama.cpp names it (15 -> Q4_K_M)."""
    if file_type is None:
        return None
    from gguf import LlamaFileType

    try:
        name = LlamaFileType(int(file_type)).name
    except ValueError:
        return f"type {file_type}"
    return name.removeprefix("MOSTLY_").removeprefix("ALL_")


def read_info(path: Path) -> GgufInfo:
    """Everything :class:`GgufInfo` holds, read from the file's header."""
    path = Path(path)
    version, kv, params = read_header(path)
    arch = kv.get("general.architecture")
    ctx = kv.get(f"{arch}.context_length") if arch else None
    return GgufInfo(
        path=str(path), file_bytes=path.stat().st_size, gguf_version=version,
        architecture=arch, name=kv.get("general.name"), size_label=kv.get("general.size_label"),
        parameter_count=params, context_length=int(ctx) if ctx is not None else None,
        quantisation=quantisation_name(kv.get("general.file_type")),
        license=kv.get("general.license"), chat_template=bool(kv.get("tokenizer.chat_template")),
    )


def parse_size_label(label: str | None) -> int | None:
    """``1.5B`` -> 1_500_000_000, ``135M`` -> 135_000_000, ``8x7B`` -> 56e9; None if
    the label is no count (``general.size_label`` may be free text)."""
    m = _SIZE_LABEL.match((label or "").strip())
    if not m:
        return None
    experts = int(m.group(1) or 1)
    return round(experts * float(m.group(2)) * _UNITS[m.group(3).upper()])


def declared_parameters(path: Path) -> int | None:
    """The model's size as its GGUF declares it: ``general.size_label`` when that is a
    count, else the parameters summed over its tensor shapes; None when neither."""
    info = read_info(path)
    return parse_size_label(info.size_label) or info.parameter_count


def human_count(n: int | None) -> str:
    """1_543_714_304 -> 1.5B, 134_515_008 -> 135M."""
    if not n:
        return ""
    for unit, scale in (("T", 10**12), ("B", 10**9), ("M", 10**6), ("K", 10**3)):
        if n >= scale:
            value = n / scale
            return f"{value:.1f}{unit}" if value < 10 else f"{value:.0f}{unit}"
    return str(n)
