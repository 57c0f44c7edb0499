"""References of the gather and scatter kernels (gather_rows, the embeddings,
gather_dim, scatter_dim): each sets its status word for an invalid index, as the
shaders' atomicOr."""

from __future__ import annotations

import numpy as np

from qopt.interpreters.kernels.common import (
    F32,
    affine_weight,
    as_words,
    i32s,
    lut_table,
    row_index,
    store,
)
from qopt.kernels.extents import spec_int
from qopt.kernels.spec import STATUS, PushValues, Reference, SpecValues


def _gather_ref(buffers: dict[str, np.ndarray], push: PushValues, spec: SpecValues) -> None:
    n, d, v = int(push["n"]), int(push["D"]), int(push["V"])
    table = as_words(buffers["table"])[: v * d].reshape(v, d)
    rows, ok = row_index(buffers, i32s(buffers["idx"])[:n], v)
    store(buffers, "y", np.where(ok[:, None], table[rows], np.uint32(0)).astype(np.uint32))


def _embedding_q_ref(buffers: dict[str, np.ndarray], push: PushValues, spec: SpecValues) -> None:
    n, d, v = int(push["n"]), int(push["D"]), int(push["V"])
    rows, ok = row_index(buffers, i32s(buffers["idx"])[:n], v)
    wz, s, g = affine_weight(
        buffers,
        v,
        d,
        int(push["row_words"]),
        int(push["ngroups"]),
        spec_int(spec, "WBITS", 4),
        spec_int(spec, "GROUP_SIZE", 32),
        spec_int(spec, "HAS_ZERO_POINT", 0),
    )
    out = wz[rows].astype(F32) * s[rows][:, g]
    store(buffers, "out", np.where(ok[:, None], out, F32(0)).astype(F32))


def _embedding_lut_ref(buffers: dict[str, np.ndarray], push: PushValues, spec: SpecValues) -> None:
    n, d, v = int(push["n"]), int(push["D"]), int(push["V"])
    rows, ok = row_index(buffers, i32s(buffers["idx"])[:n], v)
    table = lut_table(buffers, v, d, push, spec, "BV", "BD", "GD")
    store(buffers, "out", np.where(ok[:, None], table[rows], F32(0)).astype(F32))


def _dim_rows(
    buffers: dict[str, np.ndarray], push: PushValues, spec: SpecValues
) -> tuple[int, int, int, int, np.ndarray, np.ndarray]:
    """(P, N, Q, S, rows, ok) of gather_dim / scatter_dim: the S indices as rows of N
    (negative ones from the end with NEG) and which are valid; an invalid one sets the
    status word."""
    p, n, q, s = (int(push[k]) for k in ("P", "N", "Q", "S"))
    raw = i32s(buffers["idx"])[:s].astype(np.int64)
    rows = np.where(raw < 0, raw + n, raw) if spec_int(spec, "NEG", 0) else raw
    ok = (rows >= 0) & (rows < n)
    if not bool(ok.all()) and p * q:
        status = buffers.get(STATUS)
        word = np.uint32(0) if status is None else as_words(status)[0]
        store(buffers, STATUS, np.array([word | np.uint32(1)], np.uint32))
    return p, n, q, s, np.where(ok, rows, 0), ok


def _gather_dim_ref(buffers: dict[str, np.ndarray], push: PushValues, spec: SpecValues) -> None:
    p, n, q, s, rows, ok = _dim_rows(buffers, push, spec)
    if p * s * q == 0:
        return
    x = as_words(buffers["x"])[: p * n * q].reshape(p, n, q)
    y = np.where(ok[None, :, None], x[:, rows, :], np.uint32(0)).astype(np.uint32)
    store(buffers, "y", y)


def _scatter_dim_ref(buffers: dict[str, np.ndarray], push: PushValues, spec: SpecValues) -> None:
    p, n, q, s, rows, ok = _dim_rows(buffers, push, spec)
    if p * s * q == 0:
        return
    if spec_int(spec, "VMAP", 0) == 1:
        off, sp, ss, sq = (spec_int(spec, k, 0) for k in ("VOFF", "VSP", "VSS", "VSQ"))
        at = (
            off
            + np.arange(p)[:, None, None] * sp
            + np.arange(s)[None, :, None] * ss
            + np.arange(q)[None, None, :] * sq
        )
        vals = as_words(buffers["vals"])[at]
    else:
        vals = as_words(buffers["vals"])[: p * s * q].reshape(p, s, q)
    out = as_words(buffers["out"])
    target = out[: p * n * q].reshape(p, n, q)
    valid = np.flatnonzero(ok)
    keep = valid[_last_occurrences(rows[valid])]  # repeated rows: the last one wins
    target[:, rows[keep], :] = vals[:, keep, :]
    store(buffers, "out", out)


def _last_occurrences(keys: np.ndarray) -> np.ndarray:
    """Positions of the last occurrence of each distinct value of the 1-D `keys`."""
    _, first_from_end = np.unique(keys[::-1], return_index=True)
    return keys.size - 1 - first_from_end


def _assert_true_ref(buffers: dict[str, np.ndarray], push: PushValues, spec: SpecValues) -> None:
    if i32s(buffers["cond"])[0] == 0:
        status = buffers.get(STATUS)
        word = np.uint32(0) if status is None else as_words(status)[0]
        store(buffers, STATUS, np.array([word | np.uint32(1)], np.uint32))


REFERENCES: dict[str, Reference] = {
    "assert_true": _assert_true_ref,
    "gather_rows": _gather_ref,
    "embedding_q4gsw": _embedding_q_ref,
    "embedding_q8csw": _embedding_q_ref,
    "embedding_lut": _embedding_lut_ref,
    "gather_dim": _gather_dim_ref,
    "scatter_dim": _scatter_dim_ref,
}
