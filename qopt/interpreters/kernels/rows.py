"""References of the row kernels: reduce_rows, softmax_rows, layer_norm_rows."""

from __future__ import annotations

import numpy as np

from qopt.interpreters.kernels.common import F32, f32s, rows_of, store
from qopt.kernels.extents import spec_int
from qopt.kernels.opcodes import REDUCE_OPS, opcode_name
from qopt.kernels.spec import PushValues, Reference, SpecValues
from qopt.numerics import torch_sum_last


def _reduce_ref(buffers: dict[str, np.ndarray], push: PushValues, spec: SpecValues) -> None:
    x = rows_of(buffers, "x", push)
    if spec_int(spec, "PRE", 0) == 1:
        with np.errstate(all="ignore"):
            x = x * x  # f32, as the shader squares each element it reads
    op = opcode_name(REDUCE_OPS, spec_int(spec, "OP", REDUCE_OPS["sum"]))
    if op in ("sum", "mean"):
        r = torch_sum_last(x)  # torch's CPU order, as the kernel adds
        if op == "mean":
            r = r / F32(x.shape[1])
    elif op in ("argmax", "argmin"):
        # torch: the first extreme; NaN is the extreme (numpy's argmax/argmin agree)
        index = np.argmax(x, axis=1) if op == "argmax" else np.argmin(x, axis=1)
        store(buffers, "y", index.astype(np.int32).view(F32))
        return
    else:
        r = x.max(axis=1) if op == "max" else x.min(axis=1)
    store(buffers, "y", r.astype(F32))


def _softmax_ref(buffers: dict[str, np.ndarray], push: PushValues, spec: SpecValues) -> None:
    x = rows_of(buffers, "x", push).astype(np.float64)
    z = x - x.max(axis=1, keepdims=True)
    lse = np.log(np.exp(z).sum(axis=1, keepdims=True))
    r = z - lse if spec_int(spec, "LOG", 0) else np.exp(z - lse)
    store(buffers, "y", r.astype(F32))


def _layer_norm_ref(buffers: dict[str, np.ndarray], push: PushValues, spec: SpecValues) -> None:
    x = rows_of(buffers, "x", push).astype(np.float64)
    cols = x.shape[1]
    if spec_int(spec, "RMS", 0):
        y = x / np.sqrt((x * x).mean(axis=1, keepdims=True) + float(F32(push["eps"])))
    else:
        mean = x.mean(axis=1, keepdims=True)
        var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
        y = (x - mean) / np.sqrt(var + float(F32(push["eps"])))
    if spec_int(spec, "HAS_WEIGHT", 1):
        y = y * f32s(buffers["weight"])[:cols]
    if spec_int(spec, "HAS_BIAS", 1):
        y = y + f32s(buffers["bias"])[:cols]
    store(buffers, "y", y.astype(F32))


REFERENCES: dict[str, Reference] = {
    "reduce_rows": _reduce_ref,
    "softmax_rows": _softmax_ref,
    "layer_norm_rows": _layer_norm_ref,
}
