"""`coreml` elementwise ops: arithmetic and comparisons with numpy
broadcasting, boolean logic, unary math and activations, `cast`, `select`.

Most classes are made by the factories below (one MIL op each); every op
prints in the base class's functional form, `coreml.add %x, %y : (...) -> ...`,
with its parameters (`alpha`, `epsilon`, `mode`, ...) in the attribute dictionary.
"""

from __future__ import annotations

from typing import ClassVar, TypeVar, cast

from xdsl.dialects.builtin import FloatAttr, IntegerAttr, StringAttr, TensorType
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def

from qopt.dialects.coreml.base import ANY, FI, CoremlOp, broadcast, same_shape_result, type_name
from qopt.dialects.tensors import elem_of, shape_of


def _broadcast_xy(op: CoremlOp) -> tuple[int, ...]:
    x, y = shape_of(op.operands[0]), shape_of(op.operands[1])
    out = broadcast(x, y)
    if out is None:
        raise op.fail(f"x and y shapes do not broadcast: {list(x)} and {list(y)}")
    return out


class BinaryOp(CoremlOp):
    """Elementwise arithmetic (numpy broadcasting): x and y share one element type
    `T` (fp16, fp32 or int32, every opset up to iOS18), the result is `T` with the
    broadcast shape of x and y (coremltools' `elementwise_binary`; real_div and
    pow keep `T` too)."""

    MIL_OPERANDS: ClassVar[tuple[str, ...]] = ("x", "y")
    INPUT_TYPES: ClassVar[frozenset[str]] = FI

    def check(self) -> None:
        elem = self.same_elem((("x", self.operands[0]), ("y", self.operands[1])))
        self.check_result(_broadcast_xy(self), elem)


class UnaryOp(CoremlOp):
    """One input `x`; the result has x's shape and element type."""

    def check(self) -> None:
        same_shape_result(self, self.operands[0], self.results[0])
        if (got := elem_of(self.results[0])) != (want := elem_of(self.operands[0])):
            raise self.fail(
                f"result must have the element type of x, {type_name(want)}, got {type_name(got)}"
            )
        axis = self.properties.get("axis")  # softmax
        if isinstance(axis, IntegerAttr):
            self.check_axis(axis.value.data, len(shape_of(self.operands[0])))


_OpT = TypeVar("_OpT", bound="CoremlOp")


def _two_operand(base: type[_OpT], mil_name: str, doc: str) -> type[_OpT]:
    """An `x`, `y` -> `result` MIL op class on `base` (elementwise, compare, logical)."""
    namespace: dict[str, object] = {
        "__doc__": doc,
        "name": f"coreml.{mil_name}",
        "x": operand_def(TensorType),
        "y": operand_def(TensorType),
        "result": result_def(TensorType),
        "__module__": __name__,
    }
    class_name = f"{''.join(p.title() for p in mil_name.split('_'))}Op"
    # a class made by type() from a TypeVar base: the checker cannot see it is an _OpT
    cls = cast(type[_OpT], type(class_name, (base,), namespace))
    return irdl_op_definition(cls)


def _binary(mil_name: str, doc: str) -> type[BinaryOp]:
    return _two_operand(BinaryOp, mil_name, doc)


def _unary(mil_name: str, doc: str, **params: tuple[object, str]) -> type[UnaryOp]:
    namespace: dict[str, object] = {
        "__doc__": doc,
        "name": f"coreml.{mil_name}",
        "x": operand_def(TensorType),
        "result": result_def(TensorType),
        "__module__": __name__,
    }
    kinds: dict[str, str] = {}
    for key, (definition, kind) in params.items():
        namespace[key] = definition
        kinds[key] = kind
    namespace["MIL_PARAMS"] = kinds
    namespace["__annotations__"] = {"MIL_PARAMS": ClassVar[dict[str, str]]}
    cls = type(f"{''.join(p.title() for p in mil_name.split('_'))}Op", (UnaryOp,), namespace)
    return irdl_op_definition(cls)


class CompareOp(BinaryOp):
    """Elementwise comparison (numpy broadcasting): bool result; x and y share one
    element type, fp16, fp32 or int32 (MIL's `T` in every opset up to iOS18)."""

    def check(self) -> None:
        self.same_elem((("x", self.operands[0]), ("y", self.operands[1])))
        _bool_result(self, _broadcast_xy(self))


def _bool_result(op: CoremlOp, out: tuple[int, ...]) -> None:
    result = op.results[0]
    if shape_of(result) != out or type_name(elem_of(result)) != "bool":
        raise op.fail(f"result must be a bool tensor of shape {list(out)}, got {result.type}")


def _compare(mil_name: str, doc: str) -> type[CompareOp]:
    return _two_operand(CompareOp, mil_name, doc)


AddOp = _binary("add", "x + y (numpy broadcasting)")
SubOp = _binary("sub", "x - y")
MulOp = _binary("mul", "x * y")
RealDivOp = _binary("real_div", "x / y")
FloorDivOp = _binary(
    "floor_div",
    "`floor(x / y)` (coremltools' `iOS15.elementwise_binary.floor_div`, numpy's "
    "floor_divide); qopt emits it for int32 operands only",
)
PowOp = _binary("pow", "x ** y")
MaximumOp = _binary("maximum", "max(x, y)")
MinimumOp = _binary("minimum", "min(x, y)")
ModOp = _binary(
    "mod",
    "`x % y` with Python's sign rule (the result has the sign of y; coremltools' "
    "`iOS15.elementwise_binary.mod` defines it as `operator.mod`); fp16, fp32 or int32",
)

EqualOp = _compare("equal", "x == y")
NotEqualOp = _compare("not_equal", "x != y")
LessOp = _compare("less", "x < y")
LessEqualOp = _compare("less_equal", "x <= y")
GreaterOp = _compare("greater", "x > y")
GreaterEqualOp = _compare("greater_equal", "x >= y")


class LogicalOp(BinaryOp):
    """Elementwise logic on bools (numpy broadcasting): x and y bool, bool result
    (MIL's `T` is bool only in every opset up to iOS18)."""

    INPUT_TYPES: ClassVar[frozenset[str]] = frozenset({"bool"})

    def check(self) -> None:
        _bool_result(self, _broadcast_xy(self))


def _logical(mil_name: str, doc: str) -> type[LogicalOp]:
    return _two_operand(LogicalOp, mil_name, doc)


LogicalAndOp = _logical("logical_and", "x AND y")
LogicalOrOp = _logical("logical_or", "x OR y")
LogicalXorOp = _logical("logical_xor", "x XOR y")

ReluOp = _unary("relu", "max(x, 0)")
SiluOp = _unary("silu", "x * sigmoid(x)")
SigmoidOp = _unary("sigmoid", "1 / (1 + exp(-x))")
TanhOp = _unary("tanh", "tanh(x)")
ExpOp = _unary("exp", "exp(x)")
SqrtOp = _unary("sqrt", "sqrt(x)")
SinOp = _unary("sin", "sin(x)")
CosOp = _unary("cos", "cos(x)")
TanOp = _unary("tan", "tan(x); x fp16 or fp32: coremltools' `iOS15.elementwise_unary.tan`")
AsinOp = _unary("asin", "arcsin(x); x fp16 or fp32: coremltools' `iOS15.elementwise_unary.asin`")
AcosOp = _unary("acos", "arccos(x); x fp16 or fp32: coremltools' `iOS15.elementwise_unary.acos`")
AtanOp = _unary("atan", "arctan(x); x fp16 or fp32: coremltools' `iOS15.elementwise_unary.atan`")
SinhOp = _unary("sinh", "sinh(x); x fp16 or fp32: coremltools' `iOS15.elementwise_unary.sinh`")
CoshOp = _unary("cosh", "cosh(x); x fp16 or fp32: coremltools' `iOS15.elementwise_unary.cosh`")
ErfOp = _unary("erf", "erf(x)")
RsqrtOp = _unary("rsqrt", "1 / sqrt(x + epsilon)", epsilon=(prop_def(FloatAttr), "float"))
GeluOp = _unary(
    "gelu", "GELU, mode EXACT or TANH_APPROXIMATION", mode=(prop_def(StringAttr), "str")
)
SoftmaxOp = _unary("softmax", "softmax along axis", axis=(prop_def(IntegerAttr), "int"))
ClipOp = _unary(
    "clip",
    "min(max(x, alpha), beta)",
    alpha=(prop_def(FloatAttr), "float"),
    beta=(prop_def(FloatAttr), "float"),
)
SigmoidHardOp = _unary(
    "sigmoid_hard",
    "`min(max(alpha * x + beta, 0), 1)`; x fp16 or fp32: coremltools' "
    "`iOS15.activation.sigmoid_hard`",
    alpha=(prop_def(FloatAttr), "float"),
    beta=(prop_def(FloatAttr), "float"),
)
LeakyReluOp = _unary(
    "leaky_relu",
    "`x` where `x >= 0`, else `alpha * x`; x fp16 or fp32: coremltools' "
    "`iOS15.activation.leaky_relu`",
    alpha=(prop_def(FloatAttr), "float"),
)
CeilOp = _unary("ceil", "ceil(x); x fp16 or fp32")
FloorOp = _unary("floor", "floor(x) (towards -inf); x fp16 or fp32")
LogOp = _unary(
    "log",
    "`log(x + epsilon)` (MIL's default epsilon is 1e-45; qopt emits 0); x fp16 or fp32",
    epsilon=(prop_def(FloatAttr), "float"),
)
InverseOp = _unary(
    "inverse",
    "`1 / (x + epsilon)` (MIL's default epsilon is 1e-4; qopt emits 0); x fp16 or fp32",
    epsilon=(prop_def(FloatAttr), "float"),
)


@irdl_op_definition
class AbsOp(UnaryOp):
    """`|x|`; x fp16, fp32 or int32 (coremltools' `elementwise_unary_with_int`)."""

    name = "coreml.abs"
    x = operand_def(TensorType)
    result = result_def(TensorType)
    INPUT_TYPES: ClassVar[frozenset[str]] = FI


@irdl_op_definition
class CastOp(CoremlOp):
    """Element type conversion; `dtype` names the result type (MIL's names)."""

    name = "coreml.cast"
    x = operand_def(TensorType)
    dtype = prop_def(StringAttr)
    result = result_def(TensorType)
    MIL_PARAMS: ClassVar[dict[str, str]] = {"dtype": "str"}
    INPUT_TYPES: ClassVar[frozenset[str]] = ANY

    def check(self) -> None:
        if type_name(elem_of(self.result)) != self.dtype.data:
            raise self.fail("dtype must name the result's element type")
        allowed = {"fp16", "fp32", "int32", "bool"}
        if self.opset() >= 17:
            allowed |= {"int8", "uint8", "int16", "uint16"}
        if self.dtype.data not in allowed:
            raise self.fail(f"cannot cast to {self.dtype.data} on iOS{self.opset()}")
        same_shape_result(self, self.x, self.result)


@irdl_op_definition
class SelectOp(CoremlOp):
    """`where(cond, a, b)` with broadcasting."""

    name = "coreml.select"
    cond = operand_def(TensorType)
    a = operand_def(TensorType)
    b = operand_def(TensorType)
    result = result_def(TensorType)
    MIL_OPERANDS: ClassVar[tuple[str, ...]] = ("cond", "a", "b")
    INPUT_TYPES: ClassVar[frozenset[str]] = FI | {"bool"}

    def check(self) -> None:
        self.require(self.cond, "cond", frozenset({"bool"}))
        elem = self.same_elem((("a", self.a), ("b", self.b)))
        shapes = [list(shape_of(v)) for v in (self.cond, self.a, self.b)]
        out = broadcast(shape_of(self.cond), shape_of(self.a), shape_of(self.b))
        if out is None:
            raise self.fail(f"cond, a and b shapes do not broadcast: {shapes}")
        self.check_result(out, elem)
