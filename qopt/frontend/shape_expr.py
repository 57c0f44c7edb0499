"""Symbolic shape expressions of a `.pt2`, parsed without evaluating their text.

`torch.export.save` writes every symbolic size, stride and guard as the
`sympy.srepr` of a sympy expression (`"Mul(Integer(2), Symbol('s77', positive=True,
integer=True))"`), and torch's deserializer hands that text to `sympy.sympify`,
which is Python `eval`: a crafted archive runs code. qopt never lets torch see
the archive's text. `parse_shape_expr` reads it with `ast.parse(mode="eval")`,
accepts only this grammar and builds the sympy objects itself:

    expr  := call | name | int | -expr | expr (+ - * / // % **) expr
    call  := FUNC "(" expr, ... ")"       FUNC: sympy's expression classes that
                                          torch's printer writes (Add, Mul, Pow,
                                          Max, relations, And/Or/Not, Piecewise ...)
                                          and torch's own (FloorDiv, Mod, CeilToInt ...)
           | Symbol("name", assumption=True|False, ...)
           | Integer(int) | Rational(int, int) | Float("digits" | number, precision=int)
    name  := oo | zoo | nan | int_oo | true | false | True | False

with bounded text length, node count, nesting depth and integer literal size;
powers and shifts whose result would be huge are refused before sympy computes
them. `canonical_shape_expr` returns the `srepr` of the built expression: text
qopt generated from checked objects, which the archive's copy is replaced with
before torch deserializes it.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Callable
from typing import Any

from qopt.errors import QoptError
from qopt.limits import Limits

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
_MAX_DEPTH = 48
_MAX_ARGS = 256
#: Exponents (and shift amounts) qopt lets sympy compute with numeric operands.
_MAX_EXPONENT = 64
_MAX_RESULT_BITS = 4096

#: sympy classes torch's printer can write (by srepr name).
_SYMPY_FUNCTIONS = (
    "Add", "Mul", "Pow", "Max", "Min", "Abs", "floor", "ceiling", "sign",
    "Equality", "Unequality", "StrictLessThan", "LessThan", "StrictGreaterThan",
    "GreaterThan", "Eq", "Ne", "Lt", "Le", "Gt", "Ge",
    "And", "Or", "Not", "Xor", "Piecewise",
)  # fmt: skip
#: torch.utils._sympy.functions classes (the table torch's deserializer resolves).
_TORCH_FUNCTIONS = (
    "FloorDiv", "ModularIndexing", "Where", "PythonMod", "Mod", "CleanDiv", "CeilToInt",
    "FloorToInt", "CeilDiv", "LShift", "RShift", "PowByNatural", "FloatPow", "FloatTrueDiv",
    "IntTrueDiv", "IsNonOverlappingAndDenseIndicator", "TruncToFloat", "TruncToInt",
    "RoundToInt", "RoundDecimal", "ToFloat", "Identity",
)  # fmt: skip
_LITERAL_CALLS = frozenset({"Symbol", "Integer", "Rational", "Float"})
#: The Python syntax the grammar uses (anything else is refused before building).
_SYNTAX = (
    ast.Expression, ast.Call, ast.Name, ast.Load, ast.Constant, ast.keyword, ast.UnaryOp,
    ast.USub, ast.UAdd, ast.BinOp, ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv,
    ast.Mod, ast.Pow,
)  # fmt: skip
_POWERS = ("Pow", "PowByNatural", "FloatPow")
_SHIFTS = ("LShift", "RShift")


@functools.cache
def _vocabulary() -> tuple[dict[str, Callable[..., Any]], dict[str, Any], frozenset[str]]:
    """(functions by name, constants by name, assumption keywords of Symbol)."""
    import sympy
    from sympy.core.assumptions import _assume_defined
    from sympy.functions.elementary.piecewise import ExprCondPair
    from torch.utils._sympy import functions as torch_functions
    from torch.utils._sympy.numbers import int_oo

    funcs: dict[str, Callable[..., Any]] = {}
    for name in _SYMPY_FUNCTIONS:
        funcs[name] = getattr(sympy, name)
    funcs["ExprCondPair"] = ExprCondPair
    for name in _TORCH_FUNCTIONS:
        fn = getattr(torch_functions, name, None)
        if fn is not None:
            funcs[name] = fn
    consts: dict[str, Any] = {
        "oo": sympy.oo,
        "zoo": sympy.zoo,
        "nan": sympy.nan,
        "int_oo": int_oo,
        "true": sympy.true,
        "false": sympy.false,
        "True": True,
        "False": False,
    }
    return funcs, consts, frozenset(_assume_defined)


class _Builder:
    def __init__(self, text: str, limits: Limits, what: str):
        self.text = text
        self.limits = limits
        self.what = what
        self.funcs, self.consts, self.assumptions = _vocabulary()

    def fail(self, why: str) -> QoptError:
        shown = self.text if len(self.text) <= 80 else self.text[:77] + "..."
        return QoptError(
            f"{self.what}: symbolic shape expression {shown!r} is not one torch writes: "
            f"{why} (qopt parses these expressions, it never evaluates them)"
        )

    def integer(self, node: ast.AST) -> int:
        negative = False
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            negative, node = True, node.operand
        if not (
            isinstance(node, ast.Constant)
            and isinstance(node.value, int)
            and not isinstance(node.value, bool)
        ):
            raise self.fail("expected an integer literal")
        value = -node.value if negative else node.value
        if value.bit_length() > self.limits.max_int_bits:
            raise self.fail(f"integer literal of {value.bit_length()} bits")
        return value

    def build(self, node: ast.AST, depth: int = 0) -> Any:
        import sympy

        if depth > _MAX_DEPTH:
            raise self.fail(f"nested deeper than {_MAX_DEPTH}")
        if isinstance(node, ast.Constant):
            value = node.value
            if isinstance(value, bool):
                return sympy.true if value else sympy.false
            if isinstance(value, int):
                return sympy.Integer(self.integer(node))
            if isinstance(value, float):
                return sympy.Float(value)
            raise self.fail(f"literal {value!r} outside a Symbol or Float")
        if isinstance(node, ast.Name):
            if node.id not in self.consts:
                raise self.fail(f"unknown name '{node.id}'")
            return self.consts[node.id]
        if isinstance(node, ast.UnaryOp):
            operand = self.build(node.operand, depth + 1)
            if isinstance(node.op, ast.USub):
                return -operand
            if isinstance(node.op, ast.UAdd):
                return operand
            raise self.fail("unsupported unary operator")
        if isinstance(node, ast.BinOp):
            left = self.build(node.left, depth + 1)
            right = self.build(node.right, depth + 1)
            return self.binary(node.op, left, right)
        if isinstance(node, ast.Call):
            return self.call(node, depth)
        raise self.fail(f"unsupported syntax ({type(node).__name__})")

    def binary(self, op: ast.operator, left: Any, right: Any) -> Any:
        import sympy
        from torch.utils._sympy.functions import FloorDiv, Mod

        if isinstance(op, ast.Add):
            return left + right
        if isinstance(op, ast.Sub):
            return left - right
        if isinstance(op, ast.Mult):
            return left * right
        if isinstance(op, ast.Div):
            return left / right
        if isinstance(op, ast.FloorDiv):
            return FloorDiv(left, right)
        if isinstance(op, ast.Mod):
            return Mod(left, right)
        if isinstance(op, ast.Pow):
            self.check_power(left, right)
            return sympy.Pow(left, right)
        raise self.fail("unsupported operator")

    def check_power(self, base: Any, exponent: Any) -> None:
        """Refuse powers sympy would evaluate into a huge number (2**2**40)."""
        import sympy

        if not isinstance(exponent, sympy.Integer):
            if isinstance(exponent, sympy.Number):
                raise self.fail("non-integer numeric exponent")
            return  # symbolic exponent: sympy keeps the power unevaluated
        e = abs(int(exponent))
        if e > _MAX_EXPONENT:
            raise self.fail(f"exponent {e} (at most {_MAX_EXPONENT})")
        if isinstance(base, sympy.Rational):
            bits = max(int(base.p).bit_length(), int(base.q).bit_length())
            if bits * e > _MAX_RESULT_BITS:
                raise self.fail(f"a power of about {bits * e} bits")

    def call(self, node: ast.Call, depth: int) -> Any:
        import sympy

        if not isinstance(node.func, ast.Name):
            raise self.fail("only plain function names may be called")
        name = node.func.id
        if len(node.args) > _MAX_ARGS:
            raise self.fail(f"{len(node.args)} arguments")
        if name == "Symbol":
            return self.symbol(node)
        if name == "Integer":
            if len(node.args) != 1 or node.keywords:
                raise self.fail("Integer takes one integer literal")
            return sympy.Integer(self.integer(node.args[0]))
        if name == "Rational":
            if len(node.args) != 2 or node.keywords:
                raise self.fail("Rational takes two integer literals")
            p, q = (self.integer(a) for a in node.args)
            if q == 0:
                raise self.fail("Rational with a zero denominator")
            return sympy.Rational(p, q)
        if name == "Float":
            return self.float(node)
        fn = self.funcs.get(name)
        if fn is None:
            raise self.fail(f"unknown function '{name}'")
        if node.keywords:
            raise self.fail(f"{name} takes no keyword arguments")
        args = [self.build(a, depth + 1) for a in node.args]
        if name in _POWERS:
            if len(args) != 2:
                raise self.fail(f"{name} takes two arguments")
            self.check_power(args[0], args[1])
        if name in _SHIFTS:
            if len(args) != 2:
                raise self.fail(f"{name} takes two arguments")
            if isinstance(args[1], sympy.Number) and not (
                isinstance(args[1], sympy.Integer) and 0 <= int(args[1]) <= _MAX_EXPONENT
            ):
                raise self.fail(f"shift by {args[1]} (0 to {_MAX_EXPONENT})")
        return fn(*args)

    def symbol(self, node: ast.Call) -> Any:
        import sympy

        if len(node.args) != 1:
            raise self.fail("Symbol takes one name")
        arg = node.args[0]
        if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
            raise self.fail("Symbol takes a string name")
        if not _NAME.fullmatch(arg.value):
            raise self.fail(f"symbol name {arg.value!r}")
        assumptions: dict[str, bool] = {}
        for kw in node.keywords:
            if kw.arg not in self.assumptions or not (
                isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, bool)
            ):
                raise self.fail(f"Symbol assumption {kw.arg}=...")
            assumptions[kw.arg] = kw.value.value
        return sympy.Symbol(arg.value, **assumptions)

    def float(self, node: ast.Call) -> Any:
        import sympy

        if len(node.args) != 1:
            raise self.fail("Float takes one value")
        arg = node.args[0]
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            if len(arg.value) > 64 or not re.fullmatch(
                r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d{1,4})?|[-+]?inf|nan", arg.value
            ):
                raise self.fail(f"Float literal {arg.value!r}")
            value: Any = arg.value
        elif isinstance(arg, ast.Constant) and isinstance(arg.value, int | float):
            value = self.integer(arg) if isinstance(arg.value, int) else arg.value
        else:
            raise self.fail("Float takes a number")
        precision = 53
        for kw in node.keywords:
            if kw.arg != "precision" or not (
                isinstance(kw.value, ast.Constant)
                and isinstance(kw.value.value, int)
                and 1 <= kw.value.value <= 1024
            ):
                raise self.fail("Float takes only precision=<1..1024>")
            precision = kw.value.value
        return sympy.Float(value, precision=precision)


def parse_shape_expr(text: str, limits: Limits, what: str = "the program") -> Any:
    """The sympy expression `text` (a torch `srepr`) denotes, built without eval.

    Raises QoptError (naming `what`) for anything outside the grammar above."""
    builder = _Builder(text, limits, what)
    if not isinstance(text, str):
        raise builder.fail("not a string")
    if len(text) > limits.max_expr_chars:
        raise limits.exceeded(f"{what}: a symbolic shape expression's length", len(text),
                              "max_expr_chars")  # fmt: skip
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
        raise builder.fail(f"unparsable ({type(e).__name__})") from None
    count = 0
    names = builder.funcs.keys() | builder.consts.keys() | _LITERAL_CALLS
    for node in ast.walk(tree):
        if not isinstance(node, _SYNTAX):
            raise builder.fail(f"unsupported syntax ({type(node).__name__})")
        if isinstance(node, ast.Name) and node.id not in names:
            raise builder.fail(f"unknown name '{node.id}'")
        count += 1
        if count > limits.max_expr_nodes:
            raise limits.exceeded(f"{what}: a symbolic shape expression's node count",
                                  f"more than {count - 1}", "max_expr_nodes")  # fmt: skip
    try:
        return builder.build(tree.body)
    except QoptError:
        raise
    except (ArithmeticError, TypeError, ValueError, AttributeError, RecursionError) as e:
        raise builder.fail(f"sympy rejects it ({type(e).__name__}: {e})") from None


def canonical_shape_expr(text: str, limits: Limits, what: str = "the program") -> str:
    """`srepr` of the parsed expression: text safe to hand to torch's deserializer."""
    import sympy

    return sympy.srepr(parse_shape_expr(text, limits, what))
