"""numpy semantics of linear algebra, embedding and convolution aten ops."""

from __future__ import annotations

import numpy as np
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    impl,
    register_impls,
)

from qopt.dialects.aten import nn
from qopt.dialects.aten.base import integer, ints
from qopt.dialects.tensors import dtype_of
from qopt.interpreters.common import as_result, checked_indices


def conv2d(
    x: np.ndarray,
    w: np.ndarray,
    bias: np.ndarray | None,
    stride: tuple[int, ...],
    padding: tuple[int, ...],
    dilation: tuple[int, ...],
    groups: int,
) -> np.ndarray:
    n, _c, h, wd = x.shape
    oc, icg, kh, kw = w.shape
    ph, pw = padding
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    sh, sw = stride
    dh, dw = dilation
    oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (wd + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    # patches[n, c, oh, ow, kh, kw]
    span_h, span_w = dh * (kh - 1) + 1, dw * (kw - 1) + 1
    windows = np.lib.stride_tricks.sliding_window_view(xp, (span_h, span_w), axis=(2, 3))
    patches = windows[:, :, : oh * sh : sh, : ow * sw : sw, ::dh, ::dw]
    ocg = oc // groups
    out = np.empty((n, oc, oh, ow), dtype=np.result_type(x.dtype, w.dtype))
    for g in range(groups):
        pg = patches[:, g * icg : (g + 1) * icg]
        wg = w[g * ocg : (g + 1) * ocg]
        out[:, g * ocg : (g + 1) * ocg] = np.einsum("nchwij,ocij->nohw", pg, wg, optimize=True)
    if bias is not None:
        out += bias.reshape(1, -1, 1, 1)
    return out


@register_impls
class AtenNNFunctions(InterpreterFunctions):
    @impl(nn.LinearOp)
    def run_linear(
        self, interpreter: Interpreter, op: nn.LinearOp, args: PythonValues
    ) -> PythonValues:
        x, w, *bias = args
        ct = dtype_of(op.result)
        y = np.matmul(x.astype(ct, copy=False), w.astype(ct, copy=False).T)
        if bias:
            y = y + bias[0].astype(ct, copy=False)
        return (as_result(y, op.result),)

    @impl(nn.MatmulOp)
    def run_matmul(
        self, interpreter: Interpreter, op: nn.MatmulOp, args: PythonValues
    ) -> PythonValues:
        a, b = args
        ct = dtype_of(op.result)
        return (
            as_result(np.matmul(a.astype(ct, copy=False), b.astype(ct, copy=False)), op.result),
        )

    @impl(nn.AddmmOp)
    def run_addmm(
        self, interpreter: Interpreter, op: nn.AddmmOp, args: PythonValues
    ) -> PythonValues:
        c, a, b = args
        ct = dtype_of(op.result)
        prod = np.matmul(a.astype(ct, copy=False), b.astype(ct, copy=False))
        if op.alpha is not None:
            prod = prod * np.asarray(op.alpha.value.data, ct)
        base = np.asarray(c).astype(ct, copy=False)
        if op.beta is not None:
            base = base * np.asarray(op.beta.value.data, ct)
        return (as_result(prod + base, op.result),)

    @impl(nn.EmbeddingOp)
    def run_embedding(
        self, interpreter: Interpreter, op: nn.EmbeddingOp, args: PythonValues
    ) -> PythonValues:
        w, idx = args
        rows = checked_indices(idx, w.shape[0], op)
        return (as_result(np.take(w, rows, axis=0), op.result),)

    @impl(nn.Conv2dOp)
    def run_conv2d(
        self, interpreter: Interpreter, op: nn.Conv2dOp, args: PythonValues
    ) -> PythonValues:
        x, w, *bias = args
        ct = dtype_of(op.result)
        y = conv2d(
            x.astype(ct, copy=False),
            w.astype(ct, copy=False),
            bias[0].astype(ct, copy=False) if bias else None,
            ints(op.stride),
            ints(op.padding),
            ints(op.dilation),
            integer(op.groups),
        )
        return (as_result(y, op.result),)
