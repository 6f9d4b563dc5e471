"""Turn a file's bytes into an :class:`ExtractedDoc` of numbered clean lines.

Formats: Markdown, plain text, reStructuredText, HTML (tags stripped, see
:mod:`kbagent.kb.html_text`), source code, and through :mod:`kbagent.kb.formats`
PDF, Word, PowerPoint, Excel/CSV, EPUB and Jupyter notebooks. Files that are
binary, undecodable, empty or of an unsupported type raise :class:`Skip` with
a reason a person can act on; parse failures raise :class:`ExtractError`.
"""

from __future__ import annotations

import codecs
from pathlib import PurePosixPath
from typing import Any

from kbagent.kb.formats import RICH_FORMATS, ExtractLimits
from kbagent.kb.models import MD_HEADING, ExtractedDoc, Line

MARKDOWN = {".md", ".markdown", ".mdx", ".mdown"}
TEXT = {".txt", ".text", ".csv", ".tsv", ".org", ".adoc", ".tex", ".log"}
RST = {".rst", ".rest"}
HTML = {".html", ".htm", ".xhtml"}
PDF = {".pdf"}
CODE = {
    ".py": "python", ".pyi": "python", ".go": "go", ".js": "javascript", ".mjs": "javascript",
    ".cjs": "javascript", ".jsx": "javascript", ".ts": "typescript", ".tsx": "typescript",
    ".java": "java", ".kt": "kotlin", ".scala": "scala", ".c": "c", ".h": "c", ".cc": "cpp",
    ".cpp": "cpp", ".hpp": "cpp", ".cs": "csharp", ".rs": "rust", ".rb": "ruby", ".php": "php",
    ".swift": "swift", ".lua": "lua", ".r": "r", ".pl": "perl", ".sh": "shell",
    ".bash": "shell", ".zsh": "shell", ".ps1": "powershell", ".sql": "sql", ".yaml": "yaml",
    ".yml": "yaml", ".toml": "toml", ".json": "json", ".ini": "ini", ".cfg": "ini",
    ".conf": "ini", ".proto": "protobuf", ".tf": "terraform", ".css": "css", ".scss": "css",
    ".xml": "xml", ".gradle": "groovy", ".cmake": "cmake", ".mk": "make", ".dockerfile": "docker",
}
CODE_NAMES = {"makefile": "make", "dockerfile": "docker", "justfile": "make",
              "jenkinsfile": "groovy", "vagrantfile": "ruby"}
BINARY = {".png", ".jpg", ".jpeg", ".gif", ".bmp", ".ico", ".webp", ".tiff", ".zip", ".gz",
          ".tgz", ".bz2", ".xz", ".7z", ".rar", ".tar", ".exe", ".dll", ".so", ".dylib", ".bin",
          ".o", ".a", ".class", ".jar", ".pyc", ".whl", ".mp3", ".mp4", ".wav", ".mov", ".avi",
          ".woff", ".woff2", ".ttf", ".otf", ".eot", ".sqlite", ".db", ".gguf", ".onnx", ".pt",
          ".safetensors", ".npy", ".parquet", ".odt", ".usearch"}

_FRONT_MATTER_END = {"---", "..."}


class Skip(Exception):
    """The file is deliberately not ingested; the message is the reason."""


class ExtractError(Exception):
    """The file looked ingestible but could not be parsed; the message is why."""


def detect_format(path: str) -> tuple[str, str]:
    """Return (format, language) for a path, format '' when only sniffing can tell."""
    p = PurePosixPath(path)
    ext = p.suffix.lower()
    if ext in MARKDOWN:
        return "markdown", ""
    if ext in RST:
        return "rst", ""
    if ext in HTML:
        return "html", ""
    if ext in RICH_FORMATS:  # pdf, docx, pptx, xlsx, csv, epub, ipynb
        return RICH_FORMATS[ext], ""
    if ext in CODE:
        return "code", CODE[ext]
    if p.name.lower() in CODE_NAMES:
        return "code", CODE_NAMES[p.name.lower()]
    if ext in TEXT:
        return "text", ""
    if ext in BINARY:
        return "binary", ""
    return "", ""


def decode_text(data: bytes) -> str:
    """Decode UTF-8 (with or without BOM) or BOM-marked UTF-16; otherwise :class:`Skip`."""
    if b"\x00" in data[:8192] and not data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise Skip("binary content (NUL bytes)")
    try:
        if data.startswith(codecs.BOM_UTF8):
            return data[3:].decode("utf-8")
        if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
            return data.decode("utf-16")
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise Skip(f"not valid UTF-8 (byte 0x{data[e.start]:02x} at offset {e.start})") from e


def split_lines(text: str) -> list[Line]:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if text.endswith("\n"):
        text = text[:-1]
    return [Line(i + 1, t) for i, t in enumerate(text.split("\n"))]


def _front_matter(lines: list[Line]) -> tuple[dict[str, Any], int]:
    """Parse a leading YAML ``---`` block; return (data, index of first body line)."""
    if not lines or lines[0].text.strip() != "---":
        return {}, 0
    for i in range(1, min(len(lines), 200)):
        if lines[i].text.strip() in _FRONT_MATTER_END:
            import yaml

            try:
                data = yaml.safe_load("\n".join(ln.text for ln in lines[1:i])) or {}
            except yaml.YAMLError:
                return {}, 0
            return (data if isinstance(data, dict) else {}), i + 1
    return {}, 0


def _access(value: object) -> list[str]:
    if value is None:
        return []
    items = [value] if isinstance(value, str) else list(value) if isinstance(value, list) else []
    acl = sorted({str(v).strip().lower() for v in items if str(v).strip()})
    return [] if acl in (["all"], ["everyone"], ["public"]) else acl


def _first_heading(lines: list[Line]) -> str:
    for ln in lines[:80]:
        m = MD_HEADING.match(ln.text)
        if m:
            return m.group(2).strip()
    return ""


def extract(path: str, data: bytes, limits: ExtractLimits | None = None) -> ExtractedDoc:
    """Extract one file. ``path`` is KB-relative with forward slashes."""
    fmt, language = detect_format(path)
    if fmt == "binary":
        raise Skip(f"binary file type '{PurePosixPath(path).suffix.lower()}'")
    if not data.strip():
        raise Skip("empty file")
    stem = PurePosixPath(path).stem
    if fmt in RICH_FORMATS.values():
        from kbagent.kb.formats import extract_rich

        return extract_rich(fmt, path, data, stem, limits or ExtractLimits())
    text = decode_text(data)
    if not fmt:  # unknown extension: ingest as plain text once it decodes
        fmt = "text"
    if fmt == "html":
        from kbagent.kb.html_text import html_to_lines

        lines, title = html_to_lines(text)
        if not lines:
            raise Skip("HTML has no text content")
        return ExtractedDoc(path, "html", lines, title=title or _first_heading(lines) or stem)
    lines = split_lines(text)
    meta: dict[str, Any] = {}
    body = 0
    if fmt in ("markdown", "text", "rst"):
        meta, body = _front_matter(lines)
    if not any(ln.text.strip() for ln in lines[body:]):
        raise Skip("no text content")
    title = str(meta.get("title") or "").strip()
    if not title and fmt == "markdown":
        title = _first_heading(lines[body:])
    return ExtractedDoc(
        path,
        fmt,
        lines,
        title=title or (PurePosixPath(path).name if fmt == "code" else stem),
        access=_access(meta.get("access")),
        access_declared="access" in meta,
        body_start=body,
        language=language,
    )
