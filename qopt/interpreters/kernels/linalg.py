"""References of the linear algebra and pooling kernels (matmul, conv2d, pool2d,
adaptive_avg_pool2d)."""

from __future__ import annotations

import numpy as np

from qopt.interpreters.kernels.common import F32, f32s, store, torch_conv
from qopt.kernels.extents import ceil_div, spec_int
from qopt.kernels.opcodes import POOL_OPS
from qopt.kernels.spec import PushValues, Reference, SpecValues
from qopt.numerics import sequential_sum


def _matmul_ref(buffers: dict[str, np.ndarray], push: PushValues, spec: SpecValues) -> None:
    m, n, k, batch = (int(push[x]) for x in ("M", "N", "K", "batch"))
    a_bs, b_bs = int(push["a_bs"]), int(push["b_bs"])
    a, b = f32s(buffers["a"]).astype(np.float64), f32s(buffers["b"]).astype(np.float64)
    out = np.empty((batch, m, n), dtype=np.float64)
    for z in range(batch):
        az = a[z * a_bs : z * a_bs + m * k].reshape(m, k)
        bz = b[z * b_bs : z * b_bs + n * k]
        bz = bz.reshape(n, k).T if spec_int(spec, "TRANS_B", 1) else bz.reshape(k, n)
        out[z] = az @ bz
    if spec_int(spec, "HAS_BIAS", 0):
        out = out + f32s(buffers["bias"])[:n]
    store(buffers, "out", out.astype(F32))


def _conv_ref(buffers: dict[str, np.ndarray], push: PushValues, spec: SpecValues) -> None:
    import torch  # the reference of a float conv is torch's own (exact up to summation order)

    x, w, bias = _conv_arrays(buffers, push)
    has_bias = spec_int(spec, "HAS_BIAS", 0)
    y = torch_conv(torch, x, w, bias if has_bias else None, push)
    store(buffers, "y", y.astype(F32))


def _conv_arrays(buffers: dict[str, np.ndarray], push: PushValues):
    n, c, h, w_ = (int(push[k]) for k in ("N", "C", "H", "W"))
    oc, kh, kw, g = (int(push[k]) for k in ("OC", "KH", "KW", "groups"))
    x = f32s(buffers["x"])[: n * c * h * w_].reshape(n, c, h, w_)
    w = f32s(buffers["w"])[: oc * (c // g) * kh * kw].reshape(oc, c // g, kh, kw)
    return x, w, f32s(buffers["bias"])[:oc]


def _pool_ref(buffers: dict[str, np.ndarray], push: PushValues, spec: SpecValues) -> None:
    planes, h, w = int(push["planes"]), int(push["H"]), int(push["W"])
    oh_n, ow_n = int(push["OH"]), int(push["OW"])
    kh, kw, sh, sw = (int(push[k]) for k in ("KH", "KW", "sh", "sw"))
    ph, pw, dh, dw = (int(push[k]) for k in ("ph", "pw", "dh", "dw"))
    x = f32s(buffers["x"])[: planes * h * w].reshape(planes, h, w)
    out = np.empty((planes, oh_n, ow_n), dtype=F32)
    is_max = spec_int(spec, "OP", POOL_OPS["max"]) == POOL_OPS["max"]
    include_pad = spec_int(spec, "COUNT_INCLUDE_PAD", 1)
    div_override = int(push["divisor_override"])
    for oh in range(oh_n):
        for ow in range(ow_n):
            h0, w0 = oh * sh - ph, ow * sw - pw
            if is_max:
                hs = [h0 + i * dh for i in range(kh) if 0 <= h0 + i * dh < h]
                ws = [w0 + j * dw for j in range(kw) if 0 <= w0 + j * dw < w]
                win = x[:, hs][:, :, ws].reshape(planes, -1)
                out[:, oh, ow] = win.max(axis=1) if win.shape[1] else -np.inf
            else:
                h1, w1 = min(h0 + kh, h + ph), min(w0 + kw, w + pw)
                pool = (h1 - h0) * (w1 - w0)
                hs_, ws_, he, we = max(h0, 0), max(w0, 0), min(h1, h), min(w1, w)
                s = sequential_sum(x[:, hs_:he, ws_:we])  # torch's row-major f32 order
                div = div_override or (pool if include_pad else (he - hs_) * (we - ws_))
                out[:, oh, ow] = s / F32(div)
    store(buffers, "y", out)


def _adaptive_ref(buffers: dict[str, np.ndarray], push: PushValues, spec: SpecValues) -> None:
    planes, h, w, oh_n, ow_n = (int(push[k]) for k in ("planes", "H", "W", "OH", "OW"))
    x = f32s(buffers["x"])[: planes * h * w].reshape(planes, h, w)
    out = np.empty((planes, oh_n, ow_n), dtype=F32)
    for oh in range(oh_n):
        hs, he = oh * h // oh_n, ceil_div((oh + 1) * h, oh_n)
        for ow in range(ow_n):
            ws, we = ow * w // ow_n, ceil_div((ow + 1) * w, ow_n)
            # torch: row-major sum, then / height / width (f32)
            total = sequential_sum(x[:, hs:he, ws:we])
            out[:, oh, ow] = total / F32(he - hs) / F32(we - ws)
    store(buffers, "y", out)


REFERENCES: dict[str, Reference] = {
    "matmul": _matmul_ref,
    "conv2d": _conv_ref,
    "pool2d": _pool_ref,
    "adaptive_avg_pool2d": _adaptive_ref,
}
