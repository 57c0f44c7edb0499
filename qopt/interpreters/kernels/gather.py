"""References of the gather kernels (gather_rows and the embeddings): each sets its
status word for an index outside [0, V), as the shaders' atomicOr."""

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
from qopt.kernels.spec import PushValues, Reference, SpecValues


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


REFERENCES: dict[str, Reference] = {
    "gather_rows": _gather_ref,
    "embedding_q4gsw": _embedding_q_ref,
    "embedding_q8csw": _embedding_q_ref,
    "embedding_lut": _embedding_lut_ref,
}
