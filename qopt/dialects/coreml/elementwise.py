"""`coreml` elementwise ops: arithmetic and comparisons with numpy
broadcasting, boolean logic, unary math and activations, `cast`, `select`.

One class per MIL op; the base classes (`BinaryOp`, `CompareOp`, `LogicalOp`,
`UnaryOp`) carry the operands, the result and the verifier, so each op names its MIL
op and adds only its parameters. Every op prints in the functional form,
`coreml.add %x, %y : (...) -> ...`, with its parameters (`alpha`, `epsilon`, `mode`,
...) in the attribute dictionary.
"""

from __future__ import annotations

from typing import ClassVar

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

    x = operand_def(TensorType)
    y = operand_def(TensorType)
    result = result_def(TensorType)
    MIL_OPERANDS: ClassVar[tuple[str, ...]] = ("x", "y")
    INPUT_TYPES: ClassVar[frozenset[str]] = FI

    def check(self) -> None:
        elem = self.same_elem((("x", self.operands[0]), ("y", self.operands[1])))
        self.check_result(_broadcast_xy(self), elem)


class UnaryOp(CoremlOp):
    """One input `x`; the result has x's shape and element type."""

    x = operand_def(TensorType)
    result = result_def(TensorType)

    def check(self) -> None:
        same_shape_result(self, self.operands[0], self.results[0])
        if (got := elem_of(self.results[0])) != (want := elem_of(self.operands[0])):
            raise self.fail(
                f"result must have the element type of x, {type_name(want)}, got {type_name(got)}"
            )
        axis = self.properties.get("axis")  # softmax
        if isinstance(axis, IntegerAttr):
            self.check_axis(axis.value.data, len(shape_of(self.operands[0])))


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


@irdl_op_definition
class AddOp(BinaryOp):
    """x + y (numpy broadcasting)"""

    name = "coreml.add"


@irdl_op_definition
class SubOp(BinaryOp):
    """x - y"""

    name = "coreml.sub"


@irdl_op_definition
class MulOp(BinaryOp):
    """x * y"""

    name = "coreml.mul"


@irdl_op_definition
class RealDivOp(BinaryOp):
    """x / y"""

    name = "coreml.real_div"


@irdl_op_definition
class FloorDivOp(BinaryOp):
    """`floor(x / y)` (coremltools' `iOS15.elementwise_binary.floor_div`, numpy's floor_divide);
    qopt emits it for int32 operands only"""

    name = "coreml.floor_div"


@irdl_op_definition
class PowOp(BinaryOp):
    """x ** y"""

    name = "coreml.pow"


@irdl_op_definition
class MaximumOp(BinaryOp):
    """max(x, y)"""

    name = "coreml.maximum"


@irdl_op_definition
class MinimumOp(BinaryOp):
    """min(x, y)"""

    name = "coreml.minimum"


@irdl_op_definition
class ModOp(BinaryOp):
    """`x % y` with Python's sign rule (the result has the sign of y; coremltools'
    `iOS15.elementwise_binary.mod` defines it as `operator.mod`); fp16, fp32 or int32"""

    name = "coreml.mod"


@irdl_op_definition
class EqualOp(CompareOp):
    """x == y"""

    name = "coreml.equal"


@irdl_op_definition
class NotEqualOp(CompareOp):
    """x != y"""

    name = "coreml.not_equal"


@irdl_op_definition
class LessOp(CompareOp):
    """x < y"""

    name = "coreml.less"


@irdl_op_definition
class LessEqualOp(CompareOp):
    """x <= y"""

    name = "coreml.less_equal"


@irdl_op_definition
class GreaterOp(CompareOp):
    """x > y"""

    name = "coreml.greater"


@irdl_op_definition
class GreaterEqualOp(CompareOp):
    """x >= y"""

    name = "coreml.greater_equal"


class LogicalOp(BinaryOp):
    """Elementwise logic on bools (numpy broadcasting): x and y bool, bool result
    (MIL's `T` is bool only in every opset up to iOS18)."""

    INPUT_TYPES: ClassVar[frozenset[str]] = frozenset({"bool"})

    def check(self) -> None:
        _bool_result(self, _broadcast_xy(self))


@irdl_op_definition
class LogicalAndOp(LogicalOp):
    """x AND y"""

    name = "coreml.logical_and"


@irdl_op_definition
class LogicalOrOp(LogicalOp):
    """x OR y"""

    name = "coreml.logical_or"


@irdl_op_definition
class LogicalXorOp(LogicalOp):
    """x XOR y"""

    name = "coreml.logical_xor"


@irdl_op_definition
class ReluOp(UnaryOp):
    """max(x, 0)"""

    name = "coreml.relu"


@irdl_op_definition
class SiluOp(UnaryOp):
    """x * sigmoid(x)"""

    name = "coreml.silu"


@irdl_op_definition
class SigmoidOp(UnaryOp):
    """1 / (1 + exp(-x))"""

    name = "coreml.sigmoid"


@irdl_op_definition
class TanhOp(UnaryOp):
    """tanh(x)"""

    name = "coreml.tanh"


@irdl_op_definition
class ExpOp(UnaryOp):
    """exp(x)"""

    name = "coreml.exp"


@irdl_op_definition
class SqrtOp(UnaryOp):
    """sqrt(x)"""

    name = "coreml.sqrt"


@irdl_op_definition
class SinOp(UnaryOp):
    """sin(x)"""

    name = "coreml.sin"


@irdl_op_definition
class CosOp(UnaryOp):
    """cos(x)"""

    name = "coreml.cos"


@irdl_op_definition
class TanOp(UnaryOp):
    """tan(x); x fp16 or fp32: coremltools' `iOS15.elementwise_unary.tan`"""

    name = "coreml.tan"


@irdl_op_definition
class AsinOp(UnaryOp):
    """arcsin(x); x fp16 or fp32: coremltools' `iOS15.elementwise_unary.asin`"""

    name = "coreml.asin"


@irdl_op_definition
class AcosOp(UnaryOp):
    """arccos(x); x fp16 or fp32: coremltools' `iOS15.elementwise_unary.acos`"""

    name = "coreml.acos"


@irdl_op_definition
class AtanOp(UnaryOp):
    """arctan(x); x fp16 or fp32: coremltools' `iOS15.elementwise_unary.atan`"""

    name = "coreml.atan"


@irdl_op_definition
class SinhOp(UnaryOp):
    """sinh(x); x fp16 or fp32: coremltools' `iOS15.elementwise_unary.sinh`"""

    name = "coreml.sinh"


@irdl_op_definition
class CoshOp(UnaryOp):
    """cosh(x); x fp16 or fp32: coremltools' `iOS15.elementwise_unary.cosh`"""

    name = "coreml.cosh"


@irdl_op_definition
class ErfOp(UnaryOp):
    """erf(x)"""

    name = "coreml.erf"


@irdl_op_definition
class RsqrtOp(UnaryOp):
    """1 / sqrt(x + epsilon)"""

    name = "coreml.rsqrt"
    epsilon = prop_def(FloatAttr)
    MIL_PARAMS: ClassVar[dict[str, str]] = {"epsilon": "float"}


@irdl_op_definition
class GeluOp(UnaryOp):
    """GELU, mode EXACT or TANH_APPROXIMATION"""

    name = "coreml.gelu"
    mode = prop_def(StringAttr)
    MIL_PARAMS: ClassVar[dict[str, str]] = {"mode": "str"}


@irdl_op_definition
class SoftmaxOp(UnaryOp):
    """softmax along axis"""

    name = "coreml.softmax"
    axis = prop_def(IntegerAttr)
    MIL_PARAMS: ClassVar[dict[str, str]] = {"axis": "int"}


@irdl_op_definition
class ClipOp(UnaryOp):
    """min(max(x, alpha), beta)"""

    name = "coreml.clip"
    alpha = prop_def(FloatAttr)
    beta = prop_def(FloatAttr)
    MIL_PARAMS: ClassVar[dict[str, str]] = {"alpha": "float", "beta": "float"}


@irdl_op_definition
class SigmoidHardOp(UnaryOp):
    """`min(max(alpha * x + beta, 0), 1)`; x fp16 or fp32: coremltools'
    `iOS15.activation.sigmoid_hard`"""

    name = "coreml.sigmoid_hard"
    alpha = prop_def(FloatAttr)
    beta = prop_def(FloatAttr)
    MIL_PARAMS: ClassVar[dict[str, str]] = {"alpha": "float", "beta": "float"}


@irdl_op_definition
class LeakyReluOp(UnaryOp):
    """`x` where `x >= 0`, else `alpha * x`; x fp16 or fp32: coremltools'
    `iOS15.activation.leaky_relu`"""

    name = "coreml.leaky_relu"
    alpha = prop_def(FloatAttr)
    MIL_PARAMS: ClassVar[dict[str, str]] = {"alpha": "float"}


@irdl_op_definition
class CeilOp(UnaryOp):
    """ceil(x); x fp16 or fp32"""

    name = "coreml.ceil"


@irdl_op_definition
class FloorOp(UnaryOp):
    """floor(x) (towards -inf); x fp16 or fp32"""

    name = "coreml.floor"


@irdl_op_definition
class LogOp(UnaryOp):
    """`log(x + epsilon)` (MIL's default epsilon is 1e-45; qopt emits 0); x fp16 or fp32"""

    name = "coreml.log"
    epsilon = prop_def(FloatAttr)
    MIL_PARAMS: ClassVar[dict[str, str]] = {"epsilon": "float"}


@irdl_op_definition
class InverseOp(UnaryOp):
    """`1 / (x + epsilon)` (MIL's default epsilon is 1e-4; qopt emits 0); x fp16 or fp32"""

    name = "coreml.inverse"
    epsilon = prop_def(FloatAttr)
    MIL_PARAMS: ClassVar[dict[str, str]] = {"epsilon": "float"}


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


#: This family's ops, in the order the dialect lists them.
OPS: tuple[type[CoremlOp], ...] = (
    AddOp,
    SubOp,
    MulOp,
    RealDivOp,
    FloorDivOp,
    PowOp,
    MaximumOp,
    MinimumOp,
    ModOp,
    EqualOp,
    NotEqualOp,
    LessOp,
    LessEqualOp,
    GreaterOp,
    GreaterEqualOp,
    LogicalAndOp,
    LogicalOrOp,
    LogicalXorOp,
    ReluOp,
    SiluOp,
    SigmoidOp,
    TanhOp,
    ExpOp,
    SqrtOp,
    SinOp,
    CosOp,
    TanOp,
    AsinOp,
    AcosOp,
    AtanOp,
    SinhOp,
    CoshOp,
    ErfOp,
    RsqrtOp,
    GeluOp,
    SoftmaxOp,
    ClipOp,
    SigmoidHardOp,
    LeakyReluOp,
    CeilOp,
    FloorOp,
    LogOp,
    InverseOp,
    AbsOp,
    CastOp,
    SelectOp,
)
