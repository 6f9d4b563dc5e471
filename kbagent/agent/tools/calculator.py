"""Safe arithmetic for the ``calculate`` tool: an AST whitelist, never ``eval``."""

from __future__ import annotations

import ast
import math
import operator
import re
from collections.abc import Callable

Number = float | int

_BIN: dict[type[ast.operator], Callable[[Number, Number], Number]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
    ast.Pow: operator.pow}
_UNARY: dict[type[ast.unaryop], Callable[[Number], Number]] = {
    ast.UAdd: operator.pos, ast.USub: operator.neg}
_FUNCS: dict[str, Callable[..., Number]] = {
    "abs": abs, "round": round, "min": min, "max": max, "sqrt": math.sqrt,
    "log": math.log, "log10": math.log10, "exp": math.exp, "floor": math.floor,
    "ceil": math.ceil, "sum": lambda *a: sum(a)}
_NAMES = {"pi": math.pi, "e": math.e}
MAX_LEN = 300
MAX_MAGNITUDE = 1e300


class CalcError(ValueError):
    pass


def _prepare(expr: str) -> str:
    expr = expr.replace("$", "").replace("€", "").replace("£", "").replace("×", "*")
    expr = expr.replace("÷", "/").replace("−", "-").replace("^", "**")
    expr = re.sub(r"(?<=\d),(?=\d{3}(?!\d))", "", expr)  # 3,654,750 -> 3654750
    # 12.5% -> (12.5/100) unless % is used between two operands (modulo)
    expr = re.sub(r"(\d+(?:\.\d+)?)\s*%(?!\s*[\d(.])", r"(\1/100)", expr)
    return expr


def calculate(expression: str) -> float | int:
    expr = _prepare(expression.strip())
    if not expr:
        raise CalcError("empty expression")
    if len(expr) > MAX_LEN:
        raise CalcError(f"expression longer than {MAX_LEN} characters")
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError as e:
        raise CalcError(f"cannot parse {expression!r}: {e.msg}") from e
    value = _eval(tree.body)
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return int(value)
    return value


def _eval(node: ast.AST) -> float | int:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not isinstance(
        node.value, bool
    ):
        return node.value
    if isinstance(node, ast.Name) and node.id in _NAMES:
        return _NAMES[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _BIN:
        left, right = _eval(node.left), _eval(node.right)
        if isinstance(node.op, ast.Pow) and (abs(right) > 100 or abs(left) > 1e6):
            raise CalcError("exponent too large")
        try:
            value = _BIN[type(node.op)](left, right)
        except ZeroDivisionError as e:
            raise CalcError("division by zero") from e
        if isinstance(value, complex) or abs(value) > MAX_MAGNITUDE:
            raise CalcError("result out of range")
        return value
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_eval(node.operand))
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id in _FUNCS and not node.keywords):
        args = [_eval(a) for a in node.args]
        try:
            return _FUNCS[node.func.id](*args)
        except (ValueError, TypeError) as e:
            raise CalcError(f"{node.func.id}: {e}") from e
    raise CalcError(f"unsupported element {ast.dump(node)[:40]!r}; use numbers, + - * / ** %, "
                    f"parentheses and {', '.join(sorted(_FUNCS))}")


def format_number(value: float | int) -> str:
    if isinstance(value, int):
        return f"{value}"
    return f"{value:.10g}"
