"""Code symbols from a real parser: definitions and references of one source file.

Tree-sitter grammars come from their own PyPI wheels (``tree-sitter-python``,
``tree-sitter-go``, ...), each shipping its compiled parser, so nothing is
downloaded at run time. One generic walk serves every language; a
:class:`~kbagent.kb.symbol_langs.LangSpec` names the node types that define something, that call
something, and that are identifiers. Tree-sitter is error-tolerant: a file
with a syntax error still yields every definition in the parts that parse,
and :func:`parse_symbols` says where the first error is.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kbagent.kb.symbol_langs import (
    CONTAINERS,
    GRAMMARS,
    LANGUAGES,
    SPECS,
    LangSpec,
    Node,
    child_field,
)

__all__ = ["LANGUAGES", "Definition", "FileSymbols", "GrammarMissing", "Reference",
           "grammar_for", "parse_symbols"]
SKIP_NAMES = {"self", "cls", "this", "super"}  # everywhere, and never what anyone looks up


@dataclass
class Definition:
    name: str
    qualname: str  # "Class.method"; "" parts for anonymous containers are dropped
    kind: str  # function, method, class, type, constant, macro, namespace, ...
    start_line: int
    end_line: int
    parent: str = ""


@dataclass
class Reference:
    name: str
    line: int
    kind: str  # "call" or "ref"
    scope: str = ""  # qualname of the innermost enclosing definition ("" = top level)


@dataclass
class FileSymbols:
    definitions: list[Definition] = field(default_factory=list)
    references: list[Reference] = field(default_factory=list)
    error: str = ""  # "parse error at line N ..." when the parse was not clean


_PARSERS: dict[str, Any] = {}


class GrammarMissing(Exception):
    """The grammar wheel of a language is not installed."""


def grammar_for(language: str, path: str = "") -> str | None:
    """The grammar that parses a file of extract.py's ``language``; None = not indexed."""
    if language == "typescript" and path.endswith(".tsx"):
        return "tsx"
    return language if language in SPECS else None


def _parser(grammar: str) -> Any:
    parser = _PARSERS.get(grammar)
    if parser is None:
        import tree_sitter

        module, fn = GRAMMARS[grammar]
        try:
            lang = tree_sitter.Language(getattr(importlib.import_module(module), fn)())
        except ImportError as e:
            raise GrammarMissing(f"grammar package {module} is not installed") from e
        parser = _PARSERS[grammar] = tree_sitter.Parser(lang)
    return parser


def _callee(node: Node | None, spec: LangSpec) -> Node | None:
    """The node naming what is called: ``f`` in ``f()``, ``b`` in ``a.b()``."""
    while node is not None and node.type in spec.member_fields:
        name = spec.member_fields[node.type]
        nxt = child_field(node, name) if name else (node.named_children or [None])[0]
        if nxt is None:
            break
        node = nxt
    if node is None:
        return None
    if node.type in spec.idents or node.type in ("word", "type_identifier", "identifier",
                                                 "field_identifier", "property_identifier"):
        return node
    return None


def _first_error(root: Node) -> int | None:
    """Row of the first innermost error: an ERROR node that wraps a whole file (as
    tree-sitter's recovery sometimes does) is looked into, not reported at row 0."""
    stack = [root]
    while stack:
        node = stack.pop()
        if not node.has_error:
            continue
        inner = [c for c in node.children if c.has_error]
        if node.is_missing or (node.is_error and not inner):
            row: int = node.start_point[0]
            return row
        stack.extend(reversed(inner))
    return None


def parse_symbols(text: str, language: str, line_numbers: list[int] | None = None
                  ) -> FileSymbols:
    """Definitions and references in ``text``; ``line_numbers[row]`` maps a parser row to
    the line number on disk (default: row + 1). Raises GrammarMissing for an unknown
    grammar; never raises on a bad file."""
    spec = SPECS[language]
    tree = _parser(language).parse(text.encode("utf-8", "surrogatepass"))

    def line(row: int) -> int:
        if line_numbers is not None and row < len(line_numbers):
            return line_numbers[row]
        return row + 1

    out = FileSymbols()
    seen_refs: set[tuple[str, int, str]] = set()
    claimed: set[int] = set()  # node ids already counted as a definition or a call
    # (node, container kind, container qualname, scope qualname)
    stack: list[tuple[Node, str, str, str]] = [(tree.root_node, "", "", "")]
    while stack:
        node, ckind, cname, scope = stack.pop()
        kind_, qual = ckind, cname
        rule = spec.defs.get(node.type)
        got = rule(node, ckind) if rule else None
        if got is not None and got[1] is not None:
            kind, name_node = got[0], got[1]
            if len(got) > 2 and got[2]:
                cname = f"{cname}.{got[2]}" if cname else got[2]
            name = name_node.text.decode("utf-8", "replace")
            if kind == "impl":  # Rust: methods inside belong to the type, no definition
                kind_, qual = "impl", name.split("<")[0]
            else:
                qualname = f"{cname}.{name}" if cname else name
                out.definitions.append(Definition(
                    name, qualname, kind, line(node.start_point[0]), line(node.end_point[0]),
                    cname))
                claimed.add(name_node.id)
                scope = qualname
                if kind in CONTAINERS:
                    kind_, qual = kind, qualname
                else:
                    kind_, qual = "function", qualname
        fields = spec.calls.get(node.type)
        if fields:
            for f in fields:
                callee = _callee(child_field(node, f), spec)
                if callee is not None and callee.id not in claimed:
                    claimed.add(callee.id)
                    _add_ref(out, seen_refs, callee, "call", scope, line)
                    break
        elif node.type in spec.idents and node.id not in claimed:
            _add_ref(out, seen_refs, node, "ref", scope, line)
        for child in reversed(node.named_children):
            stack.append((child, kind_, qual, scope))
    err = _first_error(tree.root_node) if tree.root_node.has_error else None
    if err is not None:
        out.error = (f"parse error at line {line(err)}; symbols indexed from the parts "
                     "that parse")
    out.definitions.sort(key=lambda d: (d.start_line, d.end_line))
    return out


def _add_ref(out: FileSymbols, seen: set[tuple[str, int, str]], node: Node, kind: str,
             scope: str, line: Callable[[int], int]) -> None:
    name = node.text.decode("utf-8", "replace")
    if not name or name in SKIP_NAMES or len(name) > 200:
        return
    key = (name, line(node.start_point[0]), kind)
    if key in seen:
        return
    seen.add(key)
    out.references.append(Reference(name, key[1], kind, scope))
