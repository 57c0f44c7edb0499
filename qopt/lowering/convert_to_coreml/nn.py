"""convert-to-coreml rules for the aten nn family (qopt/dialects/aten/nn.py):
linear, matmul, addmm, embedding, conv2d."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import SSAValue

from qopt.dialects import coreml
from qopt.dialects.aten import nn
from qopt.dialects.coreml import storage_dtype
from qopt.dialects.tensors import shape_of
from qopt.errors import QoptError, where
from qopt.lowering.convert_to_coreml.lowering import (
    Lowering,
    RuleTable,
    bool_attr,
    int_attr,
    ints,
    mil_tensor,
)

RULES = RuleTable()


@RULES(nn.LinearOp)
def _linear(lw: Lowering, op: nn.LinearOp) -> Sequence[SSAValue]:
    return [lw.linear(op.input, op.weight, op.bias, mil_tensor(op.result.type))]


@RULES(nn.MatmulOp)
def _matmul(lw: Lowering, op: nn.MatmulOp) -> Sequence[SSAValue]:
    """MIL `matmul`; a 1-D operand is reshaped to a matrix first ([K] -> [1, K] on the
    left, [K, 1] on the right) and the added dim dropped after, as torch defines it
    (coremltools' type inference fails on 1-D operands)."""
    out = mil_tensor(op.results[0].type)
    elem = out.get_element_type()
    f = bool_attr(False)
    x, y = (lw.as_elem(v, elem) for v in op.operands)
    x_dims, y_dims = shape_of(x), shape_of(y)
    if len(x_dims) > 1 and len(y_dims) > 1:
        return [lw.build(coreml.MatmulOp, [x, y], out, transpose_x=f, transpose_y=f)]
    dims = list(out.get_shape())
    if len(x_dims) == 1:
        x = lw.build(
            coreml.ReshapeOp, [x], TensorType(elem, (1, *x_dims)), shape=ints((1, *x_dims))
        )
        dims.insert(len(dims) - (len(y_dims) > 1), 1)
    if len(y_dims) == 1:
        y = lw.build(
            coreml.ReshapeOp, [y], TensorType(elem, (*y_dims, 1)), shape=ints((*y_dims, 1))
        )
        dims.append(1)
    product = lw.build(
        coreml.MatmulOp, [x, y], TensorType(elem, dims), transpose_x=f, transpose_y=f
    )
    return [lw.build(coreml.ReshapeOp, [product], out, shape=ints(out.get_shape()))]


@RULES(nn.AddmmOp)
def _addmm(lw: Lowering, op: nn.AddmmOp) -> Sequence[SSAValue]:
    """`beta * input + alpha * (mat1 @ mat2)` (GPT-2's Conv1D: bias + x @ W, W `[K, N]`).

    A constant 2-D mat2 with alpha = beta = 1 and a constant bias of N values is
    MIL `linear` with the weight transposed at compile time (`[N, K]`) and the
    bias. Otherwise `matmul`, scaled by alpha with `mul`, plus `input` scaled by
    beta (at compile time when constant); beta = 0 drops `input`, as torch does.
    A compressed mat2 (constexpr op) stays compressed and feeds the matmul.
    """
    out = mil_tensor(op.result.type)
    elem = out.get_element_type()
    if coreml.mil_dtype_name(elem) not in ("fp16", "fp32"):
        raise QoptError(
            f"convert-to-coreml: {where(op)}: addmm on {coreml.mil_dtype_name(elem)} tensors "
            "is not supported (CoreML lowers float addmm only): cast the operands to float"
        )
    dtype = storage_dtype(elem)
    beta = 1.0 if op.beta is None else float(op.beta.value.data)
    alpha = 1.0 if op.alpha is None else float(op.alpha.value.data)
    n = shape_of(op.result)[-1]
    weight = lw.array(op.mat2)
    bias = lw.array(op.input) if beta != 0.0 else None
    if (
        weight is not None
        and weight.ndim == 2
        and bias is not None
        and bias.size == n
        and bias.shape[-1:] == (n,)
        and alpha == beta == 1.0
    ):
        w = lw.const(np.ascontiguousarray(weight.T).astype(dtype), elem, "addmm_weight")
        b = lw.const(bias.reshape(n).astype(dtype), elem, "addmm_bias")
        return [lw.build(coreml.LinearOp, [op.mat1, w, b], out)]
    f = bool_attr(False)
    y = lw.build(coreml.MatmulOp, [op.mat1, op.mat2], out, transpose_x=f, transpose_y=f)
    if alpha != 1.0:
        y = lw.build(coreml.MulOp, [y, lw.scalar(alpha, y)], out)
    if beta == 0.0:
        return [y]
    term = op.input
    if bias is not None and beta != 1.0:
        term = lw.const((bias * beta).astype(dtype), elem, "addmm_bias")
    elif beta != 1.0:
        term = lw.build(coreml.MulOp, [term, lw.scalar(beta, term)], term.type)
    return [lw.build(coreml.AddOp, [term, y], out)]


@RULES(nn.EmbeddingOp)
def _embedding(lw: Lowering, op: nn.EmbeddingOp) -> Sequence[SSAValue]:
    out = mil_tensor(op.result.type)
    indices = lw.to_int32(op.indices)
    return [lw.build(coreml.GatherOp, [op.weight, indices], out, axis=int_attr(0))]


@RULES(nn.Conv2dOp)
def _conv2d(lw: Lowering, op: nn.Conv2dOp) -> Sequence[SSAValue]:
    return [lw.conv(op, op.input, op.weight, op.bias, mil_tensor(op.result.type))]
