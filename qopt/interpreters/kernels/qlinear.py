"""References of the fused quantized linear kernels."""

from __future__ import annotations

import numpy as np

from qopt.interpreters.kernels.common import (
    F32,
    affine_weight,
    f32s,
    i32s,
    lut_table,
    quantize,
    requantize,
    store,
)
from qopt.kernels.extents import spec_int
from qopt.kernels.spec import PushValues, Reference, SpecValues


def _linear_qw_ref(buffers: dict[str, np.ndarray], push: PushValues, spec: SpecValues) -> None:
    m, n, k = int(push["M"]), int(push["N"]), int(push["K"])
    wz, s, g = affine_weight(
        buffers,
        n,
        k,
        int(push["row_words"]),
        int(push["ngroups"]),
        spec_int(spec, "WBITS", 4),
        spec_int(spec, "GROUP_SIZE", 32),
        spec_int(spec, "HAS_ZERO_POINT", 0),
    )
    w = wz.astype(np.float64) * s[:, g].astype(np.float64)
    x = f32s(buffers["x"])[: m * k].reshape(m, k).astype(np.float64)
    y = x @ w.T
    if spec_int(spec, "HAS_BIAS", 0):
        y = y + f32s(buffers["bias"])[:n]
    store(buffers, "out", y.astype(F32))


def _linear_q8ta_ref(buffers: dict[str, np.ndarray], push: PushValues, spec: SpecValues) -> None:
    m, n, k = int(push["M"]), int(push["N"]), int(push["K"])
    wz, s, _ = affine_weight(
        buffers, n, k, int(push["row_words"]), 1, 8, 1 << 30, spec_int(spec, "HAS_ZERO_POINT", 0)
    )
    if spec_int(spec, "INPUT_QUANTIZED", 0):
        xq = i32s(buffers["x"])[: m * k].astype(np.int64)
    else:
        xq = quantize(
            f32s(buffers["x"])[: m * k],
            push["in_inv_scale"],
            push["in_zp"],
            push["in_qmin"],
            push["in_qmax"],
        )
    acc = (xq.reshape(m, k) - int(push["in_zp"])) @ wz.T
    ws = (F32(push["in_scale"]) * s[:, 0]).astype(F32)
    y = acc.astype(F32) * ws
    if spec_int(spec, "HAS_BIAS", 0):
        y = y + f32s(buffers["bias"])[:n]
    store(buffers, "out", requantize(y, push, bool(spec_int(spec, "REQUANT", 0))))


def _linear_dq8ca_ref(buffers: dict[str, np.ndarray], push: PushValues, spec: SpecValues) -> None:
    m, n, k = int(push["M"]), int(push["N"]), int(push["K"])
    ng = int(push["ngroups"])
    group = spec_int(spec, "GROUP_SIZE", 32)
    wz, s, g = affine_weight(
        buffers,
        n,
        k,
        int(push["row_words"]),
        ng,
        spec_int(spec, "WBITS", 4),
        group,
        spec_int(spec, "HAS_ZERO_POINT", 0),
    )
    xq = i32s(buffers["xq"])[: m * k].reshape(m, k).astype(np.int64)
    xq = xq - i32s(buffers["x_zp"])[:m].astype(np.int64)[:, None]
    y = np.zeros((m, n), dtype=F32)
    for gi in range(ng):
        cols = g == gi
        acc = xq[:, cols] @ wz[:, cols].T
        y = (y + acc.astype(F32) * s[:, gi]).astype(F32)
    y = y * f32s(buffers["x_scale"])[:m][:, None]
    if spec_int(spec, "HAS_BIAS", 0):
        y = y + f32s(buffers["bias"])[:n]
    store(buffers, "out", y.astype(F32))


def _linear_lut_ref(buffers: dict[str, np.ndarray], push: PushValues, spec: SpecValues) -> None:
    m, n, k = int(push["M"]), int(push["N"]), int(push["K"])
    w = lut_table(buffers, n, k, push, spec, "BN", "BK", "GK").astype(np.float64)
    y = f32s(buffers["x"])[: m * k].reshape(m, k).astype(np.float64) @ w.T
    if spec_int(spec, "HAS_BIAS", 0):
        y = y + f32s(buffers["bias"])[:n]
    store(buffers, "out", y.astype(F32))


REFERENCES: dict[str, Reference] = {
    "linear_q4gsw": _linear_qw_ref,
    "linear_q8csw": _linear_qw_ref,
    "linear_q8ta_q8csw": _linear_q8ta_ref,
    "linear_dq8ca_q4gsw": _linear_dq8ca_ref,
    "linear_dq8ca_q8csw": _linear_dq8ca_ref,
    "linear_lut": _linear_lut_ref,
}
