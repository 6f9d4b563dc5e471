"""Code symbols from a real parser: definitions and references of one source file.

Tree-sitter grammars come from their own PyPI wheels (``tree-sitter-python``,
``tree-sitter-go``, ...), each shipping its compiled parser, so nothing is
downloaded at run time. One generic walk serves every language; a
:class:`LangSpec` names the node types that define something, that call
something, and that are identifiers. Tree-sitter is error-tolerant: a file
with a syntax error still yields every definition in the parts that parse,
and :func:`parse_symbols` says where the first error is.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# extract.py's language names -> (grammar module, function returning the language)
GRAMMARS: dict[str, tuple[str, str]] = {
    "python": ("tree_sitter_python", "language"),
    "go": ("tree_sitter_go", "language"),
    "javascript": ("tree_sitter_javascript", "language"),
    "typescript": ("tree_sitter_typescript", "language_typescript"),
    "tsx": ("tree_sitter_typescript", "language_tsx"),
    "rust": ("tree_sitter_rust", "language"),
    "java": ("tree_sitter_java", "language"),
    "c": ("tree_sitter_c", "language"),
    "cpp": ("tree_sitter_cpp", "language"),
    "shell": ("tree_sitter_bash", "language"),
}
CONTAINERS = {"class", "type", "impl", "namespace", "module", "interface", "trait"}
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
    error: str = ""  # "syntax error at line N ..." when the parse was not clean


Node = Any  # tree_sitter.Node
DefRule = Callable[[Node, str], tuple | None]
"""(node, container kind) -> None or (kind, name node[, owner qualname])."""


def _field(node: Node, name: str) -> Node | None:
    return node.child_by_field_name(name)


def _named(kind: str, name_field: str = "name") -> DefRule:
    return lambda node, container: (kind, _field(node, name_field))


def _function(node: Node, container: str) -> tuple[str, Node | None]:
    kind = "method" if container in CONTAINERS else "function"
    return kind, _field(node, "name")


def _is_const_name(text: str) -> bool:
    letters = [c for c in text if c.isalpha()]
    return bool(letters) and text.upper() == text and len(text) > 1


def _c_declarator_name(node: Node | None) -> Node | None:
    """The identifier inside a C/C++ declarator (pointer, function, qualified ...)."""
    while node is not None:
        if node.type in ("identifier", "field_identifier", "type_identifier",
                         "destructor_name", "operator_name", "primitive_type"):
            return node
        if node.type == "qualified_identifier":
            node = _field(node, "name")
            continue
        inner = _field(node, "declarator")
        if inner is None:
            named = [c for c in node.named_children if c.type != "parameter_list"]
            inner = named[0] if named else None
        node = inner
    return None


# ---------------------------------------------------------------- per language
def _py_assignment(node: Node, container: str) -> tuple[str, Node | None] | None:
    if container not in ("", "class"):
        return None
    left = _field(node, "left")
    if left is None or left.type != "identifier" or node.parent.type != "expression_statement":
        return None
    return ("constant", left) if _is_const_name(left.text.decode("utf-8", "replace")) else None


def _go_const(node: Node, container: str) -> tuple[str, Node | None]:
    return "constant", _field(node, "name")


def _go_var(node: Node, container: str) -> tuple[str, Node | None] | None:
    decl = node.parent
    top = decl is not None and decl.type == "var_declaration" and decl.parent is not None \
        and decl.parent.type == "source_file"
    return ("variable", _field(node, "name")) if top else None


def _go_method(node: Node, container: str) -> tuple[str, Node | None, str]:
    receiver = _field(node, "receiver")
    owner = ""
    if receiver is not None:
        for ident in _descendants(receiver):
            if ident.type == "type_identifier":
                owner = ident.text.decode("utf-8", "replace")
                break
    return "method", _field(node, "name"), owner


def _descendants(node: Node) -> list[Node]:
    out, stack = [], [node]
    while stack:
        n = stack.pop()
        out.append(n)
        stack.extend(reversed(n.named_children))
    return out


def _js_declarator(node: Node, container: str) -> tuple[str, Node | None] | None:
    name = _field(node, "name")
    value = _field(node, "value")
    if name is None or name.type != "identifier":
        return None
    if value is not None and value.type in ("arrow_function", "function_expression",
                                            "function", "generator_function"):
        return "function", name
    decl = node.parent
    if (decl is not None and decl.type == "lexical_declaration" and decl.child(0) is not None
            and decl.child(0).type == "const" and container == ""
            and _is_const_name(name.text.decode("utf-8", "replace"))):
        return "constant", name
    return None


def _java_field(node: Node, container: str) -> tuple[str, Node | None] | None:
    mods = next((c for c in node.children if c.type == "modifiers"), None)
    words = mods.text.decode("utf-8", "replace").split() if mods is not None else []
    if "static" in words and "final" in words:
        decl = _field(node, "declarator")
        return "constant", _field(decl, "name") if decl is not None else None
    return None


def _c_function(node: Node, container: str) -> tuple[str, Node | None, str]:
    decl = _field(node, "declarator")
    while decl is not None and decl.type not in ("function_declarator", "qualified_identifier"):
        decl = _field(decl, "declarator")
    inner = _field(decl, "declarator") if decl is not None and \
        decl.type == "function_declarator" else decl
    owner = ""
    if inner is not None and inner.type == "qualified_identifier":  # Stack::push
        scope = _field(inner, "scope")
        owner = scope.text.decode("utf-8", "replace").replace("::", ".") if scope else ""
    kind = "method" if container in CONTAINERS or owner else "function"
    return kind, _c_declarator_name(_field(node, "declarator")), owner


def _c_tagged(kind: str) -> DefRule:
    def rule(node: Node, container: str) -> tuple[str, Node | None] | None:
        if _field(node, "body") is None:  # a use ("struct foo *p"), not a definition
            return None
        return kind, _field(node, "name")
    return rule


def _c_typedef(node: Node, container: str) -> tuple[str, Node | None]:
    return "type", _c_declarator_name(_field(node, "declarator"))


def _rust_impl(node: Node, container: str) -> tuple[str, Node | None]:
    return "impl", _field(node, "type")


@dataclass
class LangSpec:
    defs: dict[str, DefRule]
    calls: dict[str, tuple[str, ...]]  # call node type -> fields that hold the callee
    idents: set[str]
    member_fields: dict[str, str] = field(default_factory=dict)  # a.b node -> field of b


_JS_DEFS: dict[str, DefRule] = {
    "function_declaration": _named("function"),
    "generator_function_declaration": _named("function"),
    "class_declaration": _named("class"),
    "class": _named("class"),
    "method_definition": _named("method"),
    "variable_declarator": _js_declarator,
}
_TS_DEFS: dict[str, DefRule] = {
    **_JS_DEFS,
    "abstract_class_declaration": _named("class"),
    "interface_declaration": _named("interface"),
    "type_alias_declaration": _named("type"),
    "enum_declaration": _named("type"),
    "method_signature": _named("method"),
    "abstract_method_signature": _named("method"),
    "function_signature": _named("function"),
    "internal_module": _named("namespace"),
}
_JS_CALLS = {"call_expression": ("function",), "new_expression": ("constructor",)}
_JS_MEMBER = {"member_expression": "property"}
_C_DEFS: dict[str, DefRule] = {
    "function_definition": _c_function,
    "struct_specifier": _c_tagged("type"),
    "union_specifier": _c_tagged("type"),
    "enum_specifier": _c_tagged("type"),
    "type_definition": _c_typedef,
    "preproc_def": _named("macro"),
    "preproc_function_def": _named("macro"),
    "enumerator": _named("constant"),
}
_C_CALLS = {"call_expression": ("function",)}

SPECS: dict[str, LangSpec] = {
    "python": LangSpec(
        {"function_definition": _function, "class_definition": _named("class"),
         "assignment": _py_assignment},
        {"call": ("function",)}, {"identifier"}, {"attribute": "attribute"}),
    "go": LangSpec(
        {"function_declaration": _named("function"), "method_declaration": _go_method,
         "type_spec": _named("type"), "type_alias": _named("type"),
         "const_spec": _go_const, "var_spec": _go_var},
        {"call_expression": ("function",)}, {"identifier", "field_identifier", "type_identifier"},
        {"selector_expression": "field"}),
    "javascript": LangSpec(_JS_DEFS, _JS_CALLS, {"identifier", "property_identifier"},
                           _JS_MEMBER),
    "typescript": LangSpec(_TS_DEFS, _JS_CALLS,
                           {"identifier", "property_identifier", "type_identifier"}, _JS_MEMBER),
    "rust": LangSpec(
        {"function_item": _function, "function_signature_item": _function,
         "struct_item": _named("type"), "enum_item": _named("type"),
         "union_item": _named("type"), "trait_item": _named("trait"),
         "type_item": _named("type"), "const_item": _named("constant"),
         "static_item": _named("constant"), "mod_item": _named("module"),
         "macro_definition": _named("macro"), "impl_item": _rust_impl},
        {"call_expression": ("function",), "macro_invocation": ("macro",)},
        {"identifier", "field_identifier", "type_identifier"},
        {"field_expression": "field", "scoped_identifier": "name", "generic_function": "function"}),
    "java": LangSpec(
        {"class_declaration": _named("class"), "interface_declaration": _named("interface"),
         "enum_declaration": _named("type"), "record_declaration": _named("class"),
         "annotation_type_declaration": _named("type"),
         "method_declaration": _named("method"), "constructor_declaration": _named("method"),
         "field_declaration": _java_field},
        {"method_invocation": ("name",), "object_creation_expression": ("type",)},
        {"identifier", "type_identifier"}, {"generic_type": "type"}),
    "c": LangSpec(_C_DEFS, _C_CALLS, {"identifier", "field_identifier", "type_identifier"},
                  {"field_expression": "field"}),
    "cpp": LangSpec(
        {**_C_DEFS, "class_specifier": _c_tagged("class"),
         "namespace_definition": _named("namespace")},
        _C_CALLS, {"identifier", "field_identifier", "type_identifier", "namespace_identifier"},
        {"field_expression": "field", "qualified_identifier": "name",
         "template_function": "name"}),
    "shell": LangSpec({"function_definition": _named("function")},
                      {"command": ("name",)}, {"variable_name"}, {"command_name": ""}),
}
SPECS["tsx"] = SPECS["typescript"]
LANGUAGES = tuple(sorted(SPECS))
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
        nxt = _field(node, name) if name else (node.named_children or [None])[0]
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
    stack = [root]
    while stack:
        node = stack.pop()
        if not node.has_error:
            continue
        if node.is_error or node.is_missing:
            return node.start_point[0]
        stack.extend(reversed(node.children))
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
                callee = _callee(_field(node, f), spec)
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
        out.error = (f"syntax error at line {line(err)}; symbols indexed from the parts "
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
