"""References of the attention kernels (sdpa, mask_bound)."""

from __future__ import annotations

import numpy as np

from qopt.interpreters.kernels.common import F32, as_words, f32s, store
from qopt.kernels.extents import spec_int
from qopt.kernels.spec import PushValues, Reference, SpecValues


def _sdpa_ref(buffers: dict[str, np.ndarray], push: PushValues, spec: SpecValues) -> None:
    bh, heads, lq, s, e, ev = (int(push[k]) for k in ("BH", "H", "L", "S", "E", "EV"))
    if bh * lq == 0:
        return
    group = int(push["G"])
    kv_heads = (bh - 1) // group + 1  # query head i reads key/value head i // G
    q = f32s(buffers["q"])[: bh * lq * e].reshape(bh, lq, e).astype(np.float64)
    k = f32s(buffers["k"])[: kv_heads * s * e].reshape(kv_heads, s, e).astype(np.float64)
    if spec_int(spec, "VMAP", 0) == 1:
        vsh, vss, vse = (spec_int(spec, name, 0) for name in ("VSH", "VSS", "VSE"))
        at = spec_int(spec, "VOFF", 0) + digit_address((kv_heads, s, ev), (vsh, vss, vse))
        v = f32s(buffers["v"])[at].astype(np.float64)
    else:
        v = f32s(buffers["v"])[: kv_heads * s * ev].reshape(kv_heads, s, ev).astype(np.float64)
    k, v = k[np.arange(bh) // group], v[np.arange(bh) // group]
    scores = (q @ k.transpose(0, 2, 1)) * float(F32(push["scale"]))
    if spec_int(spec, "HAS_MASK", 0):
        mb, mh, ml, ms = (int(push[x]) for x in ("mb", "mh", "ml", "ms"))
        b_i = (np.arange(bh) // heads)[:, None, None]
        h_i = (np.arange(bh) % heads)[:, None, None]
        idx = b_i * mb + h_i * mh + np.arange(lq)[None, :, None] * ml + np.arange(s) * ms
        scores = scores + f32s(buffers["mask"])[idx].astype(np.float64)
    if spec_int(spec, "CAUSAL", 0):
        scores = np.where(np.arange(s)[None, :] <= np.arange(lq)[:, None], scores, -np.inf)
    if spec_int(spec, "BOUNDED", 0):  # keys at or past bound[0] are not read
        bound = int(as_words(buffers["bound"])[0])
        scores = np.where(np.arange(s) < bound, scores, -np.inf)
    with np.errstate(invalid="ignore"):
        m = scores.max(axis=-1, keepdims=True)
        p = np.exp(scores - m)
        out = (p / p.sum(axis=-1, keepdims=True)) @ v
    if spec_int(spec, "OMAP", 0) == 1:
        osh, osl, ose = (spec_int(spec, name, 0) for name in ("OSH", "OSL", "OSE"))
        at = spec_int(spec, "OOFF", 0) + digit_address((bh, lq, ev), (osh, osl, ose))
        words = f32s(buffers["out"]).copy()
        words[at] = out.astype(F32)
        store(buffers, "out", words)
    else:
        store(buffers, "out", out.astype(F32))


def digit_address(dims: tuple[int, ...], strides: tuple[int, ...]) -> np.ndarray:
    """The address sum(i_k * strides[k]) of every index of `dims`, shaped `dims`."""
    at = np.zeros(dims, dtype=np.int64)
    for axis, (d, stride) in enumerate(zip(dims, strides, strict=True)):
        shape = [1] * len(dims)
        shape[axis] = d
        at = at + (np.arange(d, dtype=np.int64) * stride).reshape(shape)
    return at


def _mask_bound_ref(buffers: dict[str, np.ndarray], push: PushValues, spec: SpecValues) -> None:
    rows, s = int(push["rows"]), int(push["S"])
    mask = f32s(buffers["mask"])[: rows * s].reshape(rows, s)
    open_keys = np.flatnonzero((mask != -np.inf).any(axis=0))
    bound = int(open_keys[-1]) + 1 if open_keys.size else 0
    store(buffers, "bound", np.array([bound], dtype=np.uint32))


REFERENCES: dict[str, Reference] = {"sdpa": _sdpa_ref, "mask_bound": _mask_bound_ref}
