"""convert-to-vkc rules of the standalone quantization ops (Q/DQ that fuse-quant left
as `quant` ops): per-tensor quantize / dequantize with compile-time parameters."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.ir import SSAValue

from qopt.dialects import quant
from qopt.dialects.tensors import numel, shape_of
from qopt.lowering.convert_to_vkc.lowering import Buf, Lowering, RuleTable, unsupported
from qopt.numerics.quant import reciprocal

RULES = RuleTable()


def _per_tensor(op: quant.QuantizeOp | quant.DequantizeOp, dims: Sequence[int]) -> None:
    block = tuple(op.block_size.get_values())
    if block != tuple(dims) and numel(dims) > 1:
        raise unsupported(
            op,
            f"run-time {op.name} with block size {list(block)} (only per-tensor runs as a "
            "standalone Vulkan kernel)",
            "fuse it into a qfused op (fuse-quant) or make the parameters constants",
        )


def _scalar(
    lw: Lowering, op: quant.QuantizeOp | quant.DequantizeOp, value: SSAValue, what: str
) -> np.ndarray:
    found = lw.values[value]
    if isinstance(found, Buf):
        raise unsupported(op, f"a run-time {what}", "use compile-time quantization parameters")
    return np.asarray(found)


@RULES(quant.QuantizeOp)
def lower_quantize(lw: Lowering, op: quant.QuantizeOp) -> Sequence[Buf]:
    dims = shape_of(op.input)
    _per_tensor(op, dims)
    scale = _scalar(lw, op, op.scale, "scale")
    zp = _scalar(lw, op, op.zero_point, "zero point") if op.zero_point is not None else None
    inv = reciprocal(scale, np.float32).reshape(-1)[0]  # the shader multiplies by f32(1 / scale)
    x = lw.buffer(op.input)
    out = lw.alloc(dims or (1,), "i32")
    lw.dispatch(
        "quantize_per_tensor",
        [x, out],
        [
            numel(dims),
            float(inv),
            int(zp.reshape(-1)[0]) if zp is not None else 0,
            op.qmin.value.data,
            op.qmax.value.data,
        ],
        {"ZP_BEFORE_ROUND": int(op.zero_point_before_rounding is not None)},
    )
    return [out]


@RULES(quant.DequantizeOp)
def lower_dequantize(lw: Lowering, op: quant.DequantizeOp) -> Sequence[Buf]:
    dims = shape_of(op.input)
    _per_tensor(op, dims)
    scale = _scalar(lw, op, op.scale, "scale").astype(np.float32).reshape(-1)
    zp = None
    if op.zero_point is not None:
        zp = _scalar(lw, op, op.zero_point, "zero point").astype(np.int32).reshape(-1)
    x = lw.buffer(op.input)
    out = lw.alloc(dims or (1,), "f32")
    d4 = [1] * (4 - len(dims)) + list(dims or (1,))
    if len(d4) > 4:
        d4 = [1, 1, 1, numel(dims)]
    s = lw.constant(scale, "f32")
    z = lw.constant(zp, "i32") if zp is not None else s
    lw.dispatch(
        "dequantize",
        [x, s, z, out],
        [numel(dims), *d4, *d4, 0, 0, 0, 0, 0, 0],
        {"BITS": 32, "HAS_ZERO_POINT": int(zp is not None)},
    )
    return [out]
