"""References of the standalone quantization kernels: the shaders compute in f32 in
torch's operation order, so each reference is the shared implementation
(`qopt.numerics.quant`) on f32 buffers."""

from __future__ import annotations

import numpy as np

from qopt.interpreters.kernels.common import F32, as_words, f32s, i32s, quantize, rows_of, store
from qopt.kernels.extents import spec_int
from qopt.kernels.opcodes import MAPPINGS, opcode_name
from qopt.kernels.packing import unpack_bits
from qopt.kernels.spec import PushValues, Reference, SpecValues
from qopt.numerics import quant as nq


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
    zeros = i32s(buffers["zeros"])[blk] if spec_int(spec, "HAS_ZERO_POINT", 0) else None
    store(buffers, "y", nq.dequantize(v, f32s(buffers["scales"])[blk], zeros, None, F32))


def _choose_ref(buffers: dict[str, np.ndarray], push: PushValues, spec: SpecValues) -> None:
    x = rows_of(buffers, "x", push)
    mapping = opcode_name(MAPPINGS, spec_int(spec, "MAPPING", MAPPINGS["asymmetric"]))
    scale, zp = nq.choose_qparams(
        x,
        (1, x.shape[1]),
        int(push["qmin"]),
        int(push["qmax"]),
        mapping,
        float(F32(push["eps"])),
        F32,
        np.int32,
    )
    store(buffers, "scale", scale)
    store(buffers, "zp", zp)


def _quantize_rows_ref(buffers: dict[str, np.ndarray], push: PushValues, spec: SpecValues) -> None:
    x = rows_of(buffers, "x", push)
    rows = x.shape[0]
    q = nq.quantize(
        x,
        f32s(buffers["scale"])[:rows, None],
        i32s(buffers["zp"])[:rows, None],
        None,
        int(push["qmin"]),
        int(push["qmax"]),
        np.int32,
        F32,
        zero_point_before_rounding=bool(spec_int(spec, "ZP_BEFORE_ROUND", 0)),
    )
    store(buffers, "q", q)


def quantize_dynamic_ref(
    buffers: dict[str, np.ndarray], push: PushValues, spec: SpecValues
) -> None:
    _choose_ref(buffers, push, spec)
    quantize = {**push, "qmin": push["q_qmin"], "qmax": push["q_qmax"]}
    _quantize_rows_ref(buffers, quantize, spec)


REFERENCES: dict[str, Reference] = {
    "quantize_per_tensor": _qpt_ref,
    "dequantize": _dequantize_ref,
    "choose_qparams_rows": _choose_ref,
    "quantize_rows": _quantize_rows_ref,
    "quantize_rows_dynamic": quantize_dynamic_ref,
}
