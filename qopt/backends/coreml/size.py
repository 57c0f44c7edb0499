"""Sizes: the bit-exact packed size of a mid-level module's weights, and what a
package's `weight.bin` holds.

`packed_weight_bytes` counts, from the mid level (aten + qfused + quant), every
weight at its scheme's bit width: integer data / LUT codes at `bits` (per
tensor, rounded up to a byte), scales and codebooks as floats, zero points at
the data's bit width, constant int8 operands of a quantized add / mul, and the
float constants that stay float. Tensors of
fewer than 10 elements are left out: Core ML stores them inline in the model
spec, not in `weight.bin` (docs/interfaces.md, `weight.bin`).
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.arith import ConstantOp
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation, SSAValue

from qopt.dialects import qfused, quant
from qopt.dialects.queries import constant_array
from qopt.dialects.tensors import numel
from qopt.dtypes import is_float

INLINE_LIMIT = 10


def _bits_bytes(count: int, bits: int) -> int:
    return -(-count * bits // 8) if count >= INLINE_LIMIT else 0


def packed_weight_bytes(module: ModuleOp, float_bytes: int = 4) -> int:
    """Bytes of the module's weights packed at their bit widths (see module doc)."""
    counted: set[SSAValue] = set()
    total = 0

    def floats(value: SSAValue | None) -> int:
        if value is None or value in counted:
            return 0
        counted.add(value)
        n = numel(value)
        return n * float_bytes if n >= INLINE_LIMIT else 0

    def ints(value: SSAValue | None, bits: int, zp: bool = False) -> int:
        if value is None or value in counted:
            return 0
        counted.add(value)
        if zp and isinstance(value.owner, ConstantOp):
            if not np.any(np.asarray(constant_array(value.owner))):
                return 0
        return _bits_bytes(numel(value), bits)

    for op in module.walk():
        scheme = getattr(op, "weight_scheme", None)
        if isinstance(op, qfused.QFusedOp) and scheme is not None:
            bits = (
                scheme.bits.data
                if isinstance(scheme, qfused.AffineWeightAttr)
                else scheme.nbits.data
            )
            total += ints(op.operands[1], bits) + floats(op.operands[2])
            total += ints(getattr(op, "zero_point", None), bits, zp=True)
            total += floats(getattr(op, "bias", None))
        elif isinstance(op, qfused.AddOp | qfused.MulOp):
            for operand in (op.lhs, op.rhs):  # a constant table's integers (rotary cos/sin)
                if isinstance(operand.owner, ConstantOp) and not is_float(
                    operand.type.get_element_type()  # pyright: ignore[reportAttributeAccessIssue]
                ):
                    total += ints(operand, 8)
        elif isinstance(op, quant.DequantizeOp) and isinstance(op.input.owner, ConstantOp):
            lo, hi = op.qmin.value.data, op.qmax.value.data
            bits = qfused.bits_for_range(lo, hi)
            total += ints(op.input, 4 if bits <= 4 else 8) + floats(op.scale)
            total += ints(op.zero_point, 4 if bits <= 4 else 8, zp=True)
        elif isinstance(op, quant.DequantizeCodebookOp):
            codes = op.codes
            if not isinstance(codes.owner, ConstantOp) and isinstance(codes.owner, Operation):
                codes = codes.owner.operands[0]  # the integer cast of the codes
            total += ints(codes, op.nbits.value.data) + floats(op.codebook)
            counted.add(op.codes)
    for op in module.walk():
        if not isinstance(op, ConstantOp) or op.result in counted:
            continue
        type = op.result.type
        if not isinstance(type, TensorType) or not is_float(type.get_element_type()):
            continue
        users = {use.operation.name for use in op.result.uses}
        if users and all(u.startswith("quant.") for u in users):
            continue  # quantization parameters (counted above, or inline scalars)
        total += floats(op.result)
    return total


@dataclass(frozen=True)
class WeightFile:
    """What `weight.bin` holds: blob payload bytes, blob count, file size."""

    payload: int
    blobs: int
    file_size: int

    @property
    def container_overhead(self) -> int:
        """Header, per-blob metadata records and 64-byte alignment padding."""
        return self.file_size - self.payload


def weight_file(package: str | os.PathLike[str]) -> WeightFile:
    path = os.path.join(os.fspath(package), "Data", "com.apple.CoreML", "weights", "weight.bin")
    if not os.path.exists(path):
        return WeightFile(0, 0, 0)
    with open(path, "rb") as f:
        raw = f.read()
    count = struct.unpack_from("<I", raw, 0)[0]
    offset, payload = 64, 0
    for _ in range(count):
        _sentinel, _dtype, size, data_offset = struct.unpack_from("<IIQQ", raw, offset)
        payload += size
        offset = -(-(data_offset + size) // 64) * 64
    return WeightFile(payload, count, len(raw))


__all__ = ["WeightFile", "packed_weight_bytes", "weight_file"]
