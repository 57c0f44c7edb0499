"""References of the fused quantized conv2d and add kernels."""

from __future__ import annotations

import numpy as np

from qopt.interpreters.kernels.common import (
    F32,
    affine_weight,
    as_words,
    f32s,
    quantize,
    requantize,
    store,
    torch_conv,
)
from qopt.kernels.extents import spec_int
from qopt.kernels.opcodes import CONV_ACT
from qopt.kernels.spec import PushValues, Reference, SpecValues


def _conv_q8_ref(buffers: dict[str, np.ndarray], push: PushValues, spec: SpecValues) -> None:
    import torch

    n, c, h, w_ = (int(push[k]) for k in ("N", "C", "H", "W"))
    oc, kh, kw, groups = (int(push[k]) for k in ("OC", "KH", "KW", "groups"))
    cg = c // groups
    kk = cg * kh * kw
    wz, s, _ = affine_weight(
        buffers, oc, kk, int(push["row_words"]), 1, 8, 1 << 30, spec_int(spec, "HAS_ZERO_POINT", 0)
    )
    wz = wz.reshape(oc, cg, kh, kw)
    act = spec_int(spec, "ACT", CONV_ACT["static"])
    x = as_words(buffers["x"])[: n * c * h * w_]
    if act == CONV_ACT["none"]:
        acc = torch_conv(torch, x.view(F32).reshape(n, c, h, w_), wz, None, push)
        y = acc.astype(F32) * s[:, 0][None, :, None, None]
    else:
        if act == CONV_ACT["quantized"]:
            xq = x.view(np.int32).astype(np.int64)
        else:
            xq = quantize(
                x.view(F32), push["in_inv_scale"], push["in_zp"], push["in_qmin"], push["in_qmax"]
            )
        xc = (xq - int(push["in_zp"])).reshape(n, c, h, w_)
        acc = np.rint(torch_conv(torch, xc, wz, None, push)).astype(np.int64)  # exact in f64
        ws = (F32(push["in_scale"]) * s[:, 0]).astype(F32)
        y = acc.astype(F32) * ws[None, :, None, None]
    if spec_int(spec, "HAS_BIAS", 0):
        y = y + f32s(buffers["bias"])[:oc][None, :, None, None]
    store(buffers, "y", requantize(y, push, bool(spec_int(spec, "REQUANT", 1))))


def _add_q8_ref(buffers: dict[str, np.ndarray], push: PushValues, spec: SpecValues) -> None:
    n = int(push["n"])

    def deq(name: str, quantized: int, prefix: str) -> np.ndarray:
        words = as_words(buffers[name])[:n]
        if quantized:
            q = words.view(np.int32).astype(np.int64)
        else:
            q = quantize(
                words.view(F32),
                push[f"{prefix}_inv_scale"],
                push[f"{prefix}_zp"],
                push[f"{prefix}_qmin"],
                push[f"{prefix}_qmax"],
            )
        # The shader's order, `f32(q - zp) * scale` (an integer subtraction first), not
        # qopt.numerics.quant.dequantize's `(f32(q) - f32(zp)) * scale`: the same for
        # every |q|, |zp| < 2^24, and q here is an 8-bit activation.
        return (q - int(push[f"{prefix}_zp"])).astype(F32) * F32(push[f"{prefix}_scale"])

    da = deq("a", spec_int(spec, "A_QUANTIZED", 0), "a")
    db = deq("b", spec_int(spec, "B_QUANTIZED", 0), "b")
    y = da * db if spec_int(spec, "MUL", 0) else da + db * F32(push["alpha"])
    store(buffers, "out", requantize(y, push, bool(spec_int(spec, "REQUANT", 1))))


REFERENCES: dict[str, Reference] = {
    "conv2d_q8ta_q8csw_q8to": _conv_q8_ref,
    "add_q8ta_q8ta_q8to": _add_q8_ref,
}
