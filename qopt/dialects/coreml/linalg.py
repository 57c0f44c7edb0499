"""`coreml` linear algebra, convolution, pooling and attention: `linear`,
`matmul`, `conv`, `max_pool`, `avg_pool`, `scaled_dot_product_attention`.

A trailing optional operand (`bias`, `attn_mask`) prints positionally, as in
MIL: `coreml.linear %x, %w, %b : (...) -> ...`.
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, IntegerType, StringAttr, TensorType
from xdsl.ir import Attribute
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    prop_def,
    result_def,
)

from qopt.dialects.coreml.base import (
    FI,
    CompileTimeOp,
    CoremlOp,
    F,
    broadcast,
    matmul_shape,
    spatial_out_shape,
    trailing_optional_format,
    type_name,
    with_segments,
)
from qopt.dialects.tensors import elem_of, shape_of


@irdl_op_definition
class LinearOp(CoremlOp):
    """`y = x @ weight.T + bias`; weight `[Dout, Din]` constant (or constexpr)."""

    name = "coreml.linear"
    x = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    result = result_def(TensorType)
    irdl_options = with_segments()
    assembly_format = trailing_optional_format("x", "weight", optional="bias")
    MIL_OPERANDS: ClassVar[tuple[str, ...]] = ("x", "weight", "bias")
    INPUT_TYPES: ClassVar[frozenset[str]] = FI

    def check(self) -> None:
        self.require_const(self.weight, "weight")
        x, w = shape_of(self.x), shape_of(self.weight)
        if not 1 <= len(x) <= 3 and self.opset() < 17:
            raise self.fail("x must have rank 1 to 3")
        if len(w) != 2 or not x or x[-1] != w[1]:
            raise self.fail(f"weight must be [Dout, {x[-1] if x else '?'}], got {list(w)}")
        params = [("weight", self.weight)]
        if self.bias is not None:
            self.require_const(self.bias, "bias")
            if shape_of(self.bias) != (w[0],):
                raise self.fail(f"bias must have shape [{w[0]}]")
            params.append(("bias", self.bias))
        if self.opset() < 17:  # iOS17 lets weight and bias have their own type (U)
            self.same_elem([("x", self.x), *params])
        self.check_result((*x[:-1], w[0]), elem_of(self.x))


@irdl_op_definition
class MatmulOp(CoremlOp):
    """numpy matmul with optional transposes of the last two dims."""

    name = "coreml.matmul"
    x = operand_def(TensorType)
    y = operand_def(TensorType)
    transpose_x = prop_def(IntegerAttr)
    transpose_y = prop_def(IntegerAttr)
    result = result_def(TensorType)
    MIL_OPERANDS: ClassVar[tuple[str, ...]] = ("x", "y")
    MIL_PARAMS: ClassVar[dict[str, str]] = {"transpose_x": "bool", "transpose_y": "bool"}
    INPUT_TYPES: ClassVar[frozenset[str]] = FI

    def check(self) -> None:
        """Shapes: `base.matmul_shape`. Types: x, y and the result share one type;
        from iOS17 x and y may differ when exactly one is a compile-time constant,
        and the result has the other's type (coremltools' `iOS17.linear.matmul`)."""
        out = matmul_shape(
            shape_of(self.x),
            shape_of(self.y),
            bool(self.transpose_x.value.data),
            bool(self.transpose_y.value.data),
        )
        if isinstance(out, str):
            raise self.fail(out)
        elem = elem_of(self.x)
        if elem_of(self.y) != elem:
            x_const = isinstance(self.x.owner, CompileTimeOp)
            y_const = isinstance(self.y.owner, CompileTimeOp)
            if self.opset() < 17 or x_const == y_const:
                when = "before iOS17" if self.opset() < 17 else "unless one is a constant"
                raise self.fail(
                    f"x and y must have the same element type {when}, got "
                    f"{type_name(elem)} and {type_name(elem_of(self.y))}"
                )
            elem = elem_of(self.y) if x_const else elem
        self.check_result(out, elem)


@irdl_op_definition
class ConvOp(CoremlOp):
    """N-d convolution, NC[spatial]; `pad_type` custom with `pad` [begin, end per dim]."""

    name = "coreml.conv"
    x = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    strides = prop_def(DenseArrayBase[IntegerType])
    pad_type = prop_def(StringAttr)
    pad = prop_def(DenseArrayBase[IntegerType])
    dilations = prop_def(DenseArrayBase[IntegerType])
    groups = prop_def(IntegerAttr)
    result = result_def(TensorType)
    irdl_options = with_segments()
    assembly_format = trailing_optional_format("x", "weight", optional="bias")
    MIL_OPERANDS: ClassVar[tuple[str, ...]] = ("x", "weight", "bias")
    MIL_PARAMS: ClassVar[dict[str, str]] = {
        "strides": "ints",
        "pad_type": "str",
        "pad": "ints",
        "dilations": "ints",
        "groups": "int",
    }

    def check(self) -> None:
        """x `[N, Cin, *D]` (rank 3 to 5), weight `[Cout, Cin / groups, *K]`, bias
        `[Cout]`; result `[N, Cout, *D_out]` in x's type (`base.spatial_out_shape`).
        Before iOS17 weight and bias have x's type."""
        x, w = shape_of(self.x), shape_of(self.weight)
        groups = self.groups.value.data
        if not 3 <= len(x) <= 5:
            raise self.fail(f"x must be [N, C, *D] of rank 3 to 5, got {list(x)}")
        if groups < 1:
            raise self.fail(f"groups must be at least 1, got {groups}")
        if len(x) != len(w) or x[1] != w[1] * groups:
            raise self.fail(f"weight {list(w)} does not fit input {list(x)} with {groups} groups")
        if w[0] % groups:
            raise self.fail(f"output channels {w[0]} must be a multiple of groups {groups}")
        params = [("weight", self.weight)]
        if self.bias is not None:
            if shape_of(self.bias) != (w[0],):
                raise self.fail(f"bias must have shape [{w[0]}], got {list(shape_of(self.bias))}")
            params.append(("bias", self.bias))
        if self.opset() < 17:  # iOS17 lets weight and bias have their own type (U)
            self.same_elem([("x", self.x), *params])
        spatial = len(x) - 2
        pad_type = _pad_type(self, self.pad_type)
        strides = _window(self, "strides", self.strides.get_values(), spatial)
        dilations = _window(self, "dilations", self.dilations.get_values(), spatial)
        pad = tuple(self.pad.get_values())
        if pad_type == "custom":
            _check_pad(self, pad, spatial)
        out = spatial_out_shape(x[2:], w[2:], strides, dilations, pad_type, pad)
        _positive_out(self, x, out)
        self.check_result((x[0], w[0], *out), elem_of(self.x))


def _pad_type(op: CoremlOp, attr: Attribute) -> str:
    assert isinstance(attr, StringAttr)
    pad_type = attr.data
    if pad_type not in ("valid", "custom", "same", "same_lower"):
        raise op.fail(f"unknown pad_type '{pad_type}'")
    if pad_type == "same_lower" and op.opset() < 16:
        raise op.fail("pad_type same_lower needs iOS16 or newer")
    return pad_type


def _window(op: CoremlOp, what: str, values: tuple[int, ...], spatial: int) -> tuple[int, ...]:
    """`kernel_sizes` / `strides` / `dilations`: one entry per spatial dim, each >= 1."""
    values = tuple(int(v) for v in values)
    if len(values) != spatial:
        raise op.fail(f"{what} must have one entry per spatial dim ({spatial}), got {list(values)}")
    if any(v < 1 for v in values):
        raise op.fail(f"{what} {list(values)} must all be at least 1")
    return values


def _check_pad(op: CoremlOp, pad: tuple[int, ...], spatial: int) -> None:
    if len(pad) != 2 * spatial:
        raise op.fail(
            f"pad must have two entries (begin, end) per spatial dim ({2 * spatial}), "
            f"got {list(pad)}"
        )
    if any(p < 0 for p in pad):
        raise op.fail(f"pad {list(pad)} must not be negative")


def _positive_out(op: CoremlOp, x: tuple[int, ...], out: tuple[int, ...]) -> None:
    if any(n < 1 for n in out):
        raise op.fail(
            f"the window does not fit the padded input {list(x)}: output spatial size {list(out)}"
        )


class PoolOp(CoremlOp):
    """x `[N, C, *D]` (rank 3 to 5), result `[N, C, *D_out]` in x's type, D_out by
    `base.spatial_out_shape`; `pad` has two entries per spatial dim (read only for
    `custom`); `ceil_mode` only for 1-D and 2-D pools with pad_type valid or custom,
    and symmetric custom padding (coremltools' `iOS15.pool.Pooling`)."""

    MIL_PARAMS: ClassVar[dict[str, str]] = {
        "kernel_sizes": "ints",
        "strides": "ints",
        "pad_type": "str",
        "pad": "ints",
        "ceil_mode": "bool",
    }

    def check(self) -> None:
        x = shape_of(self.operands[0])
        if not 3 <= len(x) <= 5:
            raise self.fail(f"x must be [N, C, *D] of rank 3 to 5, got {list(x)}")
        spatial = len(x) - 2
        props = self.properties
        kernel = _window(self, "kernel_sizes", _ints(props["kernel_sizes"]), spatial)
        strides = _window(self, "strides", _ints(props["strides"]), spatial)
        pad_type = _pad_type(self, props["pad_type"])
        pad = _ints(props["pad"])
        _check_pad(self, pad, spatial)
        ceil_attr = props["ceil_mode"]
        assert isinstance(ceil_attr, IntegerAttr)
        ceil_mode = bool(ceil_attr.value.data)
        if ceil_mode:
            if spatial > 2:
                raise self.fail("ceil_mode is only for 1-D and 2-D pools")
            if pad_type not in ("valid", "custom"):
                raise self.fail(f"ceil_mode needs pad_type valid or custom, got {pad_type}")
            if pad_type == "custom" and any(pad[2 * i] != pad[2 * i + 1] for i in range(spatial)):
                raise self.fail(f"ceil_mode needs symmetric padding, got pad {list(pad)}")
        out = spatial_out_shape(x[2:], kernel, strides, (1,) * spatial, pad_type, pad, ceil_mode)
        _positive_out(self, x, out)
        self.check_result((*x[:2], *out), elem_of(self.operands[0]))


def _ints(attr: Attribute) -> tuple[int, ...]:
    assert isinstance(attr, DenseArrayBase)
    return tuple(int(v) for v in attr.get_values())


@irdl_op_definition
class MaxPoolOp(PoolOp):
    name = "coreml.max_pool"
    x = operand_def(TensorType)
    kernel_sizes = prop_def(DenseArrayBase[IntegerType])
    strides = prop_def(DenseArrayBase[IntegerType])
    pad_type = prop_def(StringAttr)
    pad = prop_def(DenseArrayBase[IntegerType])
    ceil_mode = prop_def(IntegerAttr)
    result = result_def(TensorType)


@irdl_op_definition
class AvgPoolOp(PoolOp):
    name = "coreml.avg_pool"
    x = operand_def(TensorType)
    kernel_sizes = prop_def(DenseArrayBase[IntegerType])
    strides = prop_def(DenseArrayBase[IntegerType])
    pad_type = prop_def(StringAttr)
    pad = prop_def(DenseArrayBase[IntegerType])
    ceil_mode = prop_def(IntegerAttr)
    exclude_padding_from_average = prop_def(IntegerAttr)
    result = result_def(TensorType)
    MIL_PARAMS: ClassVar[dict[str, str]] = {
        **PoolOp.MIL_PARAMS,
        "exclude_padding_from_average": "bool",
    }


@irdl_op_definition
class ScaledDotProductAttentionOp(CoremlOp):
    """iOS18: `softmax(q @ k.T / sqrt(E) + mask) @ v`; a bool mask keeps True entries."""

    name = "coreml.scaled_dot_product_attention"
    query = operand_def(TensorType)
    key = operand_def(TensorType)
    value = operand_def(TensorType)
    attn_mask = opt_operand_def(TensorType)
    result = result_def(TensorType)
    irdl_options = with_segments()
    assembly_format = trailing_optional_format("query", "key", "value", optional="attn_mask")
    MIL_OPERANDS: ClassVar[tuple[str, ...]] = ("query", "key", "value", "attn_mask")
    MIN_OPSET: ClassVar[int] = 18
    INPUT_TYPES: ClassVar[frozenset[str]] = F | {"bool"}

    def check(self) -> None:
        """query `[*B, L, E]`, key `[*B, S, E]`, value `[*B, S, EV]` of one float
        type and rank >= 3; attn_mask `[..., S]` broadcasting to `[*B, L, S]`;
        result `[*B, L, EV]` in the query's type (coremltools' `iOS18.transformers`)."""
        q, k, v = (shape_of(x) for x in (self.query, self.key, self.value))
        if not len(q) == len(k) == len(v) >= 3 or q[-1] != k[-1] or k[-2] != v[-2]:
            raise self.fail("query, key and value must have the same rank and matching dims")
        if not q[:-2] == k[:-2] == v[:-2]:
            raise self.fail(
                f"query, key and value must have the same batch dims, got {list(q[:-2])}, "
                f"{list(k[:-2])} and {list(v[:-2])}"
            )
        self.require(self.query, "query", F)
        elem = self.same_elem((("query", self.query), ("key", self.key), ("value", self.value)))
        if self.attn_mask is not None:
            m = shape_of(self.attn_mask)
            if not m or m[-1] != k[-2] or broadcast(q[:-1], m[:-1]) != q[:-1]:
                raise self.fail(f"attn_mask {list(m)} must broadcast to {[*q[:-1], k[-2]]}")
        self.check_result((*q[:-1], v[-1]), elem)


#: This family's ops, in the order the dialect lists them.
OPS: tuple[type[CoremlOp], ...] = (
    LinearOp,
    MatmulOp,
    ConvOp,
    MaxPoolOp,
    AvgPoolOp,
    ScaledDotProductAttentionOp,
)
