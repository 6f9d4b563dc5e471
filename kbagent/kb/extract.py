"""Turn a file's bytes into an :class:`ExtractedDoc` of numbered clean lines.

Formats: Markdown, plain text, reStructuredText, HTML (tags stripped, see
:mod:`kbagent.kb.html_text`), source code, and through :mod:`kbagent.kb.formats`
PDF, Word, PowerPoint, Excel/CSV, EPUB and Jupyter notebooks. Files that are
binary, undecodable, empty or of an unsupported type raise :class:`Skip` with
a reason a person can act on; parse failures raise :class:`ExtractError`.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Any

from kbagent.kb.access import HIDDEN_GROUP, MalformedAccess, front_matter_groups
from kbagent.kb.formats import RICH_FORMATS
from kbagent.kb.formats.builder import ExtractLimits
from kbagent.kb.models import MD_HEADING, ExtractedDoc, Line
from kbagent.kb.source_text import Skip, decode_text

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

_FRONT_MATTER_END = {"---": ("---", "..."), "+++": ("+++",)}  # YAML, TOML
_FRONT_MATTER_LINES = 200  # a block must close within this many lines
# does a block mention an access key? A block that never closes must look like a key
# (``access:``/``access =``); one that closes but does not parse needs only a line that
# starts with the word (``access>``, ``Access [hr``): either way it then fails closed
_ACCESS_KEY = re.compile(r"""^[\s-]*["']?access["']?\s*[:=]""", re.IGNORECASE | re.MULTILINE)
_ACCESS_WORD = re.compile(r"""^[\s\-?"']*access\b""", re.IGNORECASE | re.MULTILINE)


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


def split_lines(text: str) -> list[Line]:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if text.endswith("\n"):
        text = text[:-1]
    return [Line(i + 1, t) for i, t in enumerate(text.split("\n"))]


def _front_matter(lines: list[Line]) -> tuple[dict[str, Any], int, str]:
    """Parse a leading YAML ``---`` or TOML ``+++`` block (blank lines before it are
    allowed); return (data, index of the first body line, access problem or '').

    The ``access`` key is found whatever its case (``Access:``) and returned as
    ``data["access"]``. A block that mentions an access key but cannot be parsed (or
    never closes, or is not a mapping, or says it twice) yields an access problem:
    the caller then stores the document readable by nobody. A block that does not
    mention access and does not parse is body text, as before."""
    start = 0
    while start < len(lines) and not lines[start].text.strip():
        start += 1
    opener = lines[start].text.strip() if start < len(lines) else ""
    if opener not in _FRONT_MATTER_END:
        return {}, 0, ""
    ends = _FRONT_MATTER_END[opener]
    end = next((i for i in range(start + 1, min(len(lines), start + _FRONT_MATTER_LINES))
                if lines[i].text.strip() in ends), None)
    stop = end if end is not None else min(len(lines), start + _FRONT_MATTER_LINES)
    block = "\n".join(ln.text for ln in lines[start + 1:stop])
    mentions = bool(_ACCESS_KEY.search(block))
    if end is None:
        return {}, 0, (f"front-matter opened with '{opener}' never closes" if mentions else "")
    mentions = mentions or bool(_ACCESS_WORD.search(block))
    try:
        data, keys = _parse_block(block, opener)
    except ValueError as e:
        return {}, 0, (f"front-matter is not valid {e}" if mentions else "")
    if not isinstance(data, dict):
        return {}, end + 1, ("front-matter is not a mapping" if mentions else "")
    read = _access_keys(list(data))  # as the parser kept them (the last of a repeated key)
    if len(keys) > 1 or len(read) > 1:
        return {}, end + 1, ("front-matter declares access twice ("
                             f"{', '.join(map(repr, keys if len(keys) > 1 else read))})")
    if len(read) != len(keys):  # a tagged key (!!null access) or one only a merge (<<) gave
        return {}, end + 1, "front-matter access key is not a plain 'access:' line"
    if read:
        data = {**data, "access": data[read[0]]}
    return data, end + 1, ""


def _access_keys(keys: list[object]) -> list[str]:
    return [k for k in keys if isinstance(k, str) and k.strip().lower() == "access"]


def _parse_block(block: str, opener: str) -> tuple[Any, list[str]]:
    """YAML (``---``) or TOML (``+++``) -> (data, the access keys as written, each time
    written: YAML keeps only the last of a repeated key, so they are read off the parse
    tree); ValueError('YAML: ...') when it does not parse."""
    if opener == "+++":
        import tomllib

        try:  # TOML itself refuses a repeated key
            data = tomllib.loads(block)
            return data, _access_keys(list(data))
        except tomllib.TOMLDecodeError as e:
            raise ValueError(f"TOML: {e}") from None
    import yaml

    if not block.strip():
        return {}, []
    loader = yaml.SafeLoader(block)
    try:
        node = loader.get_single_node()
        keys = _access_keys([k.value for k, _ in node.value if isinstance(k, yaml.ScalarNode)]
                            if isinstance(node, yaml.MappingNode) else [])
        return loader.construct_document(node) if node is not None else None, keys
    except yaml.YAMLError as e:
        raise ValueError(f"YAML: {' '.join(str(e).split())[:120]}") from None
    except (ValueError, TypeError, OverflowError, RecursionError) as e:  # e.g. 2026-02-30
        raise ValueError(f"YAML: {type(e).__name__}: {str(e)[:120]}") from None
    finally:
        loader.dispose()


def _access(meta: dict[str, Any], problem: str) -> tuple[list[str], bool, str]:
    """(groups, declared, problem) from the front-matter; a problem hides the document."""
    if problem:
        return [HIDDEN_GROUP], True, problem
    if "access" not in meta:
        return [], False, ""
    try:
        return front_matter_groups(meta["access"]), True, ""
    except MalformedAccess as e:
        return [HIDDEN_GROUP], True, str(e)


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
    body, problem = 0, ""
    if fmt in ("markdown", "text", "rst"):
        meta, body, problem = _front_matter(lines)
    access, declared, problem = _access(meta, problem)
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
        access=access,
        access_declared=declared,
        access_error=problem,
        body_start=body,
        language=language,
    )
