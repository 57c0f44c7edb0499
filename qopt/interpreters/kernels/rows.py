"""References of the row kernels: reduce_rows, softmax_rows, layer_norm_rows,
rms_norm_rows."""

from __future__ import annotations

import numpy as np

from qopt.interpreters.kernels.common import F32, f32s, rows_of, store
from qopt.interpreters.kernels.elementwise import binary_words, unary_words
from qopt.interpreters.kernels.quant import quantize_dynamic_ref
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


def _rms_norm_ref(buffers: dict[str, np.ndarray], push: PushValues, spec: SpecValues) -> None:
    rows, cols = int(push["rows"]), int(push["cols"])
    words = rows_of(buffers, "a", push).reshape(-1).view(np.uint32)
    if spec_int(spec, "HAS_ADD", 0) == 1:
        b = rows_of(buffers, "b", push).reshape(-1).view(np.uint32)
        words = binary_words("add", False, words, b, float(push["alpha"])).view(np.uint32)
    h = words.view(F32).reshape(rows, cols)
    with np.errstate(all="ignore"):
        mean = (torch_sum_last(h * h) / F32(cols)).astype(F32)
        eps = np.full(rows, F32(push["eps"]), F32).view(np.uint32)
        shifted = binary_words("add", False, mean.view(np.uint32), eps, 1.0)
        inv = unary_words("rsqrt", False, shifted.view(np.uint32), 0.0, 0.0)
        w_off = int(push["w_off"])
        w = f32s(buffers["w"])[w_off : w_off + cols]
        scaled = binary_words(
            "mul",
            False,
            h.view(np.uint32),
            np.repeat(inv.view(np.uint32), cols).reshape(rows, cols),
            1.0,
        )
        y = binary_words(
            "mul",
            False,
            scaled.view(np.uint32),
            np.broadcast_to(w.view(np.uint32), (rows, cols)),
            1.0,
        )
    if spec_int(spec, "HAS_H", 0) == 1:
        store(buffers, "h", h.reshape(-1))
    store(buffers, "y", np.asarray(y, F32).reshape(-1))
    if spec_int(spec, "QUANT", 0) == 1:  # quantize_rows_dynamic of y
        rows_of_y = {**buffers, "x": buffers["y"]}
        quantize_dynamic_ref(rows_of_y, {**push, "eps": push["q_eps"]}, spec)
        for name in ("scale", "zp", "q"):
            buffers[name] = rows_of_y[name]


REFERENCES: dict[str, Reference] = {
    "reduce_rows": _reduce_ref,
    "softmax_rows": _softmax_ref,
    "layer_norm_rows": _layer_norm_ref,
    "rms_norm_rows": _rms_norm_ref,
}
