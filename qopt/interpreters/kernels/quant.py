"""References of the standalone quantization kernels."""

from __future__ import annotations

import numpy as np

from qopt.interpreters.kernels.common import F32, as_words, f32s, i32s, quantize, rows_of, store
from qopt.kernels.extents import spec_int
from qopt.kernels.opcodes import MAPPINGS
from qopt.kernels.packing import unpack_bits
from qopt.kernels.spec import PushValues, Reference, SpecValues


def _qpt_ref(buffers: dict[str, np.ndarray], push: PushValues, spec: SpecValues) -> None:
    n = int(push["n"])
    x = f32s(buffers["x"])[:n]
    q = quantize(
        x,
        push["inv_scale"],
        push["zp"],
        push["qmin"],
        push["qmax"],
        bool(spec_int(spec, "ZP_BEFORE_ROUND", 0)),
    )
    store(buffers, "q", q.astype(np.int32))


def _dequantize_ref(buffers: dict[str, np.ndarray], push: PushValues, spec: SpecValues) -> None:
    n = int(push["n"])
    dims = [int(push[f"d{i}"]) for i in range(4)]
    blocks = [int(push[f"b{i}"]) for i in range(4)]
    pstr = [int(push[f"ps{i}"]) for i in range(4)]
    idx = np.indices(dims).reshape(4, -1)
    blk = sum((idx[j] // blocks[j]) * pstr[j] for j in range(4))
    bits = spec_int(spec, "BITS", 32)
    if bits == 32:
        v = i32s(buffers["data"])[:n].astype(np.int64)
    else:
        rows = n // dims[3]
        words = as_words(buffers["data"])[: rows * int(push["row_words"])]
        v = unpack_bits(words.reshape(rows, -1), bits, dims[3], int(push["lo"])).reshape(-1)
    f = v.astype(F32)
    if spec_int(spec, "HAS_ZERO_POINT", 0):
        f = f - i32s(buffers["zeros"])[blk].astype(F32)
    store(buffers, "y", (f * f32s(buffers["scales"])[blk]).astype(F32))


def _choose_ref(buffers: dict[str, np.ndarray], push: PushValues, spec: SpecValues) -> None:
    x = rows_of(buffers, "x", push)
    qmin, qmax = int(push["qmin"]), int(push["qmax"])
    eps = F32(push["eps"])
    mn = np.minimum(x.min(axis=1), F32(0))
    mx = np.maximum(x.max(axis=1), F32(0))
    mapping = spec_int(spec, "MAPPING", MAPPINGS["asymmetric"])
    with np.errstate(all="ignore"):
        if mapping == MAPPINGS["asymmetric"]:
            scale = np.maximum((mx - mn) / F32(qmax - qmin), eps)
            zp = np.clip(F32(qmin) - np.round(mn / scale), F32(qmin), F32(qmax))
        else:
            if mapping == MAPPINGS["symmetric"]:
                scale = np.maximum(-mn, mx) / F32(F32(qmax - qmin) / F32(2))
            else:
                smin, smax = mn / F32(qmin), mx / F32(qmax)
                scale = np.where(smin > smax, smin, smax)
            scale = np.maximum(scale, eps)
            zp = np.full_like(scale, int((qmax + qmin + 1) / 2))
    store(buffers, "scale", scale.astype(F32))
    store(buffers, "zp", zp.astype(np.int32))


def _quantize_rows_ref(buffers: dict[str, np.ndarray], push: PushValues, spec: SpecValues) -> None:
    x = rows_of(buffers, "x", push)
    rows = x.shape[0]
    scale = f32s(buffers["scale"])[:rows]
    zp = i32s(buffers["zp"])[:rows].astype(F32)
    inv = (F32(1) / scale).astype(F32)
    v = x * inv[:, None]
    if spec_int(spec, "ZP_BEFORE_ROUND", 0):
        r = np.round(v + zp[:, None])
    else:
        r = np.round(v) + zp[:, None]
    q = np.clip(r, F32(push["qmin"]), F32(push["qmax"]))
    store(buffers, "q", q.astype(np.int32))


REFERENCES: dict[str, Reference] = {
    "quantize_per_tensor": _qpt_ref,
    "dequantize": _dequantize_ref,
    "choose_qparams_rows": _choose_ref,
    "quantize_rows": _quantize_rows_ref,
}
