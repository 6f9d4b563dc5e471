"""A small JSON-schema subset for tool arguments: validation with messages worded
for the model, and the same schema turned into GBNF so llama.cpp can only
generate arguments of the right shape.

Supported: ``object`` with ``properties``/``required`` (no extra keys), and
property types ``string`` (``enum``, ``minLength``, ``maxLength``),
``integer``/``number`` (``minimum``, ``maximum``), ``boolean`` and ``array``
of strings (``maxItems``). ``default`` fills omitted optional arguments.
"""

from __future__ import annotations

import json
from typing import Any

from kbagent.safe_text import valid_unicode


class ArgumentError(ValueError):
    """Arguments do not match the tool's schema; the message is for the model."""


def validate(tool: str, schema: dict[str, Any], args: Any) -> dict[str, Any]:
    if not isinstance(args, dict):
        raise ArgumentError(f"{tool}: Action Input must be a JSON object like "
                            f"{example_args(schema)}")
    props: dict[str, Any] = schema.get("properties", {})
    unknown = [k for k in args if k not in props]
    if unknown:
        allowed = ", ".join(props) or "none"
        # a name that is not an identifier (a newline, 10 000 characters) is quoted, cut
        names = ", ".join(k if k.isidentifier() and len(k) <= 40 else repr(k)[:40]
                          for k in unknown)
        raise ArgumentError(f"{tool}: unknown argument(s) {names}; "
                            f"allowed: {allowed}")
    out: dict[str, Any] = {}
    for name in schema.get("required", []):
        if name not in args or args[name] is None:
            raise ArgumentError(f"{tool}: missing required argument '{name}'")
    for name, spec in props.items():
        if name not in args or args[name] is None:
            if "default" in spec:
                out[name] = spec["default"]
            continue
        out[name] = _check(tool, name, spec, args[name])
    return out


def _check(tool: str, name: str, spec: dict[str, Any], value: Any) -> Any:
    typ = spec.get("type")
    where = f"{tool}: argument '{name}'"
    if typ == "string":
        if not isinstance(value, str):
            raise ArgumentError(f"{where} must be a string")
        # JSON may carry lone surrogates ("\\udcff"); no tool, index or encoder takes them
        value = valid_unicode(value).strip()
        if "enum" in spec and value not in spec["enum"]:
            raise ArgumentError(f"{where} must be one of {', '.join(spec['enum'])}")
        if len(value) < spec.get("minLength", 0):
            raise ArgumentError(f"{where} must not be empty")
        if len(value) > spec.get("maxLength", 10_000):
            raise ArgumentError(f"{where} is longer than {spec['maxLength']} characters")
        return value
    if typ in ("integer", "number"):
        if isinstance(value, bool) or not isinstance(value, int | float):
            if isinstance(value, str) and value.strip().lstrip("-").isdigit():
                value = int(value)
            else:
                raise ArgumentError(f"{where} must be a number")
        if typ == "integer":
            if isinstance(value, float) and not value.is_integer():
                raise ArgumentError(f"{where} must be a whole number")
            value = int(value)
        lo, hi = spec.get("minimum"), spec.get("maximum")
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            raise ArgumentError(f"{where} must be between {lo} and {hi}")
        return value
    if typ == "boolean":
        if not isinstance(value, bool):
            raise ArgumentError(f"{where} must be true or false")
        return value
    if typ == "array":
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ArgumentError(f"{where} must be a list of strings")
        value = [valid_unicode(v) for v in value]
        if len(value) > spec.get("maxItems", 50):
            raise ArgumentError(f"{where} has more than {spec['maxItems']} items")
        return [v.strip() for v in value if v.strip()]
    return value


def example_args(schema: dict[str, Any]) -> str:
    ex = {}
    for name in schema.get("required", []):
        spec = schema["properties"][name]
        ex[name] = {"string": "...", "integer": 1, "number": 1.0, "boolean": True,
                    "array": ["..."]}.get(spec.get("type"), "...")
    return json.dumps(ex)


# ------------------------------------------------------------------ GBNF
GBNF_COMMON = r"""
ws ::= [ ]?
jchar ::= [^"\\\x00-\x1f] | "\\" ["\\/bfnrt]
jint ::= "-"? [0-9]{1,7}
jnumber ::= "-"? [0-9]{1,15} ("." [0-9]{1,10})?
jbool ::= "true" | "false"
"""
# Grammar strings are bounded so that a whole tool call has a known worst-case size:
# at most 4 UTF-8 bytes per character and at least one byte per token, so the step's
# token limit can always fit a complete call (see worst_case_bytes and the loop).
# Tool schemas keep their own, longer limits for backends without grammars.
MAX_GRAMMAR_STRING = 120
BYTES_PER_CHAR = 4


def _string_rule(spec: dict[str, Any]) -> str:
    lo = max(0, int(spec.get("minLength", 0)))
    hi = min(int(spec.get("maxLength", MAX_GRAMMAR_STRING)), MAX_GRAMMAR_STRING)
    return f'("\\"" jchar{{{lo},{hi}}} "\\"")'


def _value_rule(spec: dict[str, Any]) -> str:
    typ: str | None = spec.get("type")
    if typ == "string":
        if "enum" in spec:
            return "(" + " | ".join(json.dumps(json.dumps(v)) for v in spec["enum"]) + ")"
        return _string_rule(spec)
    if typ == "integer":
        return _int_rule(spec)
    if typ == "array":
        item = _string_rule(spec.get("items", {"minLength": 1}))
        n = int(spec.get("maxItems", 10))
        return f'("[" ws ({item} ("," ws {item}){{0,{n - 1}}})? ws "]")'
    rules: dict[str | None, str] = {"number": "jnumber", "boolean": "jbool"}
    return rules.get(typ, _string_rule({}))


def worst_case_bytes(schema: dict[str, Any]) -> int:
    """An upper bound on the UTF-8 bytes of an argument object the grammar allows."""
    total = 2
    for name, spec in schema.get("properties", {}).items():
        total += len(name) + 6  # quotes, colon, comma, spaces
        typ = spec.get("type")
        if typ == "string" and "enum" in spec:
            total += 2 + max(len(str(v).encode()) for v in spec["enum"])
        elif typ == "string":
            cap = min(int(spec.get("maxLength", MAX_GRAMMAR_STRING)), MAX_GRAMMAR_STRING)
            total += 2 + cap * BYTES_PER_CHAR
        elif typ == "array":
            item = spec.get("items", {})
            cap = min(int(item.get("maxLength", MAX_GRAMMAR_STRING)), MAX_GRAMMAR_STRING)
            total += 2 + int(spec.get("maxItems", 10)) * (cap * BYTES_PER_CHAR + 4)
        else:
            total += 27
    return total


def _int_rule(spec: dict[str, Any]) -> str:
    """Integers inside [minimum, maximum]: every value the grammar allows is valid (a
    large range may lose its top end: max 100 generates 1-99)."""
    lo, hi = spec.get("minimum"), spec.get("maximum")
    if lo is None or hi is None or lo < 0:
        return "jint"
    if hi - lo <= 40:
        return "(" + " | ".join(f'"{v}"' for v in range(hi, lo - 1, -1)) + ")"
    digits = len(str(hi)) - 1  # numbers with fewer digits than hi are all <= hi
    first = "[1-9]" if lo >= 1 else "[0-9]"
    return f"{first} [0-9]{{0,{max(0, digits - 1)}}}" if digits > 1 else first


def with_kb_names(schema: dict[str, Any], names: list[str]) -> dict[str, Any]:
    """The schema with its ``kb`` argument restricted to the KBs of this session."""
    props = schema.get("properties", {})
    if "kb" not in props or not names:
        return schema
    return {**schema, "properties": {**props, "kb": {**props["kb"], "enum": list(names)}}}


def schema_to_gbnf(rule: str, schema: dict[str, Any]) -> str:
    """One GBNF rule named ``rule`` generating a JSON object for ``schema``: required
    properties first (in order), then each optional one that may be left out."""
    props: dict[str, Any] = schema.get("properties", {})
    required = [p for p in schema.get("required", []) if p in props]
    optional = [p for p in props if p not in required]
    parts: list[str] = []
    first = True
    for name in required:
        sep = "" if first else '"," ws '
        parts.append(f'{sep}{json.dumps(json.dumps(name))} ws ":" ws {_value_rule(props[name])}')
        first = False
    if not required:
        # objects without required keys: optional keys, the first one without a comma
        if not optional:
            return f'{rule} ::= "{{" ws "}}"'
        alts = []
        for i, name in enumerate(optional):
            tail = " ".join(
                f'("," ws {json.dumps(json.dumps(o))} ws ":" ws {_value_rule(props[o])})?'
                for o in optional[i + 1 :]
            )
            alts.append(f'{json.dumps(json.dumps(name))} ws ":" ws {_value_rule(props[name])} '
                        f"{tail}".strip())
        body = "(" + " | ".join(f"({a})" for a in alts) + ")?"
        return f'{rule} ::= "{{" ws {body} ws "}}"'
    for name in optional:
        parts.append(f'("," ws {json.dumps(json.dumps(name))} ws ":" ws '
                     f"{_value_rule(props[name])})?")
    return f'{rule} ::= "{{" ws ' + " ".join(parts) + ' ws "}"'
