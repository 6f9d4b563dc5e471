"""Per-language rules of the symbol index: which tree-sitter node types define,
call and name things, and which grammar wheel parses each language.

:mod:`kbagent.kb.symbols` runs one generic walk with these rules. A rule gets a
node and the kind of its enclosing container and returns ``None`` (not a
definition) or ``(kind, name node[, owner])``; ``owner`` names the container a
definition belongs to when the syntax says so from outside it (a Go receiver,
C++'s ``Stack::push``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
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


Node = Any  # tree_sitter.Node
DefRule = Callable[[Node, str], tuple[Any, ...] | None]
"""(node, container kind) -> None or (kind, name node[, owner qualname])."""


def child_field(node: Node, name: str) -> Node | None:
    return node.child_by_field_name(name)


def _named(kind: str, name_field: str = "name") -> DefRule:
    return lambda node, container: (kind, child_field(node, name_field))


def _function(node: Node, container: str) -> tuple[str, Node | None]:
    kind = "method" if container in CONTAINERS else "function"
    return kind, child_field(node, "name")


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
            node = child_field(node, "name")
            continue
        inner = child_field(node, "declarator")
        if inner is None:
            named = [c for c in node.named_children if c.type != "parameter_list"]
            inner = named[0] if named else None
        node = inner
    return None


# ---------------------------------------------------------------- per language
def _py_assignment(node: Node, container: str) -> tuple[str, Node | None] | None:
    if container not in ("", "class"):
        return None
    left = child_field(node, "left")
    if left is None or left.type != "identifier" or node.parent.type != "expression_statement":
        return None
    return ("constant", left) if _is_const_name(left.text.decode("utf-8", "replace")) else None


def _go_const(node: Node, container: str) -> tuple[str, Node | None]:
    return "constant", child_field(node, "name")


def _go_var(node: Node, container: str) -> tuple[str, Node | None] | None:
    decl = node.parent
    top = decl is not None and decl.type == "var_declaration" and decl.parent is not None \
        and decl.parent.type == "source_file"
    return ("variable", child_field(node, "name")) if top else None


def _go_method(node: Node, container: str) -> tuple[str, Node | None, str]:
    receiver = child_field(node, "receiver")
    owner = ""
    if receiver is not None:
        for ident in _descendants(receiver):
            if ident.type == "type_identifier":
                owner = ident.text.decode("utf-8", "replace")
                break
    return "method", child_field(node, "name"), owner


def _descendants(node: Node) -> list[Node]:
    out, stack = [], [node]
    while stack:
        n = stack.pop()
        out.append(n)
        stack.extend(reversed(n.named_children))
    return out


def _js_declarator(node: Node, container: str) -> tuple[str, Node | None] | None:
    name = child_field(node, "name")
    value = child_field(node, "value")
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
        decl = child_field(node, "declarator")
        return "constant", child_field(decl, "name") if decl is not None else None
    return None


def _c_function(node: Node, container: str) -> tuple[str, Node | None, str]:
    decl = child_field(node, "declarator")
    while decl is not None and decl.type not in ("function_declarator", "qualified_identifier"):
        decl = child_field(decl, "declarator")
    inner = child_field(decl, "declarator") if decl is not None and \
        decl.type == "function_declarator" else decl
    owner = ""
    if inner is not None and inner.type == "qualified_identifier":  # Stack::push
        scope = child_field(inner, "scope")
        owner = scope.text.decode("utf-8", "replace").replace("::", ".") if scope else ""
    kind = "method" if container in CONTAINERS or owner else "function"
    return kind, _c_declarator_name(child_field(node, "declarator")), owner


def _c_tagged(kind: str) -> DefRule:
    def rule(node: Node, container: str) -> tuple[str, Node | None] | None:
        if child_field(node, "body") is None:  # a use ("struct foo *p"), not a definition
            return None
        return kind, child_field(node, "name")
    return rule


def _c_typedef(node: Node, container: str) -> tuple[str, Node | None]:
    return "type", _c_declarator_name(child_field(node, "declarator"))


def _rust_impl(node: Node, container: str) -> tuple[str, Node | None]:
    return "impl", child_field(node, "type")


@dataclass
class LangSpec:
    defs: dict[str, DefRule]
    calls: Mapping[str, tuple[str, ...]]  # call node type -> fields that hold the callee
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
