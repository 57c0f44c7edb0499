"""Compute-heavy aten ops: linear, matmul, embedding, convolution."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import DenseArrayBase, FloatAttr, IntegerAttr, IntegerType, TensorType
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
)

from qopt.dialects.aten.base import AtenOp, Shape, broadcast_shapes, integer, ints, shape_of


@irdl_op_definition
class LinearOp(AtenOp):
    """`input @ weight.T + bias`; weight `[N, K]`, input `[..., K]`."""

    name = "aten.linear"
    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    result = result_def(TensorType)

    def check(self) -> None:
        self.require_float(self.input, "input")

    def expected_shapes(self) -> Sequence[Shape]:
        x, w = shape_of(self.input), shape_of(self.weight)
        if len(w) != 2:
            raise self.fail(f"weight must be 2-D [N, K], got {list(w)}")
        if not x or x[-1] != w[1]:
            raise self.fail(f"input's last dim must equal weight's K = {w[1]}, got {list(x)}")
        if self.bias is not None and shape_of(self.bias) not in ((w[0],), ()):
            raise self.fail(f"bias must have shape [{w[0]}], got {list(shape_of(self.bias))}")
        return [(*x[:-1], w[0])]


def matmul_shape(a: Shape, b: Shape) -> Shape | None:
    """torch.matmul's result shape (1-D operands get a dim inserted and removed)."""
    if not a or not b:
        return None
    a2 = (1, *a) if len(a) == 1 else a
    b2 = (*b, 1) if len(b) == 1 else b
    if a2[-1] != b2[-2]:
        return None
    batch = broadcast_shapes(a2[:-2], b2[:-2])
    if batch is None:
        return None
    out = (*batch, a2[-2], b2[-1])
    if len(a) == 1:
        out = (*out[:-2], out[-1])
    if len(b) == 1:
        out = out[:-1]
    return out


@irdl_op_definition
class MatmulOp(AtenOp):
    """`torch.matmul` (also `mm`, `bmm`)."""

    name = "aten.matmul"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)

    def expected_shapes(self) -> Sequence[Shape]:
        shape = matmul_shape(shape_of(self.lhs), shape_of(self.rhs))
        if shape is None:
            raise self.fail(
                f"shapes {list(shape_of(self.lhs))} and {list(shape_of(self.rhs))} "
                "cannot be multiplied"
            )
        return [shape]


@irdl_op_definition
class AddmmOp(AtenOp):
    """`beta * input + alpha * (mat1 @ mat2)` (also `baddbmm` for 3-D)."""

    name = "aten.addmm"
    input = operand_def(TensorType)
    mat1 = operand_def(TensorType)
    mat2 = operand_def(TensorType)
    beta = opt_prop_def(FloatAttr)
    alpha = opt_prop_def(FloatAttr)
    result = result_def(TensorType)

    def expected_shapes(self) -> Sequence[Shape]:
        a, b = shape_of(self.mat1), shape_of(self.mat2)
        if len(a) != len(b) or len(a) not in (2, 3):
            raise self.fail("mat1 and mat2 must both be 2-D (addmm) or 3-D (baddbmm)")
        shape = matmul_shape(a, b)
        if shape is None:
            raise self.fail(f"shapes {list(a)} and {list(b)} cannot be multiplied")
        if broadcast_shapes(shape_of(self.input), shape) != shape:
            raise self.fail("input must broadcast to the product's shape")
        return [shape]


@irdl_op_definition
class EmbeddingOp(AtenOp):
    """`weight[indices]`: weight `[V, D]`, result `[*indices.shape, D]`."""

    name = "aten.embedding"
    weight = operand_def(TensorType)
    indices = operand_def(TensorType)
    result = result_def(TensorType)

    def check(self) -> None:
        self.require_integer(self.indices, "indices")

    def expected_shapes(self) -> Sequence[Shape]:
        w = shape_of(self.weight)
        if len(w) != 2:
            raise self.fail(f"weight must be 2-D [V, D], got {list(w)}")
        return [(*shape_of(self.indices), w[1])]


def conv_out(size: int, kernel: int, stride: int, pad: int, dilation: int) -> int:
    return (size + 2 * pad - dilation * (kernel - 1) - 1) // stride + 1


@irdl_op_definition
class Conv2dOp(AtenOp):
    """2-D convolution, NCHW input, `[OC, IC / groups, KH, KW]` weight."""

    name = "aten.conv2d"
    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    stride = prop_def(DenseArrayBase[IntegerType])
    padding = prop_def(DenseArrayBase[IntegerType])
    dilation = prop_def(DenseArrayBase[IntegerType])
    groups = prop_def(IntegerAttr)
    result = result_def(TensorType)

    def check(self) -> None:
        self.require_float(self.input, "input")
        for name, values in (
            ("stride", ints(self.stride)),
            ("padding", ints(self.padding)),
            ("dilation", ints(self.dilation)),
        ):
            if len(values) != 2:
                raise self.fail(f"{name} must have 2 entries, got {list(values)}")

    def expected_shapes(self) -> Sequence[Shape]:
        x, w = shape_of(self.input), shape_of(self.weight)
        groups = integer(self.groups)
        if len(x) != 4 or len(w) != 4:
            raise self.fail("input and weight must be 4-D (NCHW, OIHW)")
        if groups < 1 or x[1] % groups or w[0] % groups or x[1] // groups != w[1]:
            raise self.fail(
                f"channels do not match: input {x[1]}, weight {list(w)}, groups {groups}"
            )
        if self.bias is not None and shape_of(self.bias) != (w[0],):
            raise self.fail(f"bias must have shape [{w[0]}]")
        sh, sw = ints(self.stride)
        ph, pw = ints(self.padding)
        dh, dw = ints(self.dilation)
        return [
            (
                x[0],
                w[0],
                conv_out(x[2], w[2], sh, ph, dh),
                conv_out(x[3], w[3], sw, pw, dw),
            )
        ]


OPS = [LinearOp, MatmulOp, AddmmOp, EmbeddingOp, Conv2dOp]
