"""convert-to-coreml rules for the quant ops fuse-quant left (qopt/dialects/quant.py):
per-tensor activation quantize / dequantize, constant weights kept compressed
(stored once however often they are used), dynamic chains computed in float."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np
from xdsl.ir import Operation, SSAValue

from qopt.dialects import qfused, quant
from qopt.dialects.tensors import dtype_of, elem_of
from qopt.errors import QoptError, where
from qopt.lowering.convert_to_coreml.lowering import Lowering, RuleTable
from qopt.numerics.quant import dequantize

RULES = RuleTable()


def _per_tensor(lw: Lowering, op: Operation, scale_v: SSAValue, zp_v: SSAValue | None):
    scale = lw.const_of(scale_v, op, "the activation scale")
    zp = np.zeros(()) if zp_v is None else lw.const_of(zp_v, op, "the activation zero point")
    if scale.size != 1 or zp.size != 1:
        raise QoptError(
            f"convert-to-coreml: {where(op)}: only per-tensor activation quantization "
            "lowers to Core ML quantize/dequantize"
        )
    return float(scale.reshape(())), int(zp.reshape(()))


def _digest(array: np.ndarray) -> tuple[str, tuple[int, ...], bytes]:
    """`array` identified by its dtype, shape and the SHA-256 of its bytes."""
    data = np.ascontiguousarray(array)
    return data.dtype.str, data.shape, hashlib.sha256(data.reshape(-1).view(np.uint8).data).digest()


def _is_dynamic(op: Operation) -> bool:
    return isinstance(op, quant.QuantizeOp) and isinstance(op.scale.owner, quant.ChooseQParamsOp)


@RULES(quant.ChooseQParamsOp)
def _choose(lw: Lowering, op: quant.ChooseQParamsOp) -> None:
    """Dynamic parameters: Core ML computes these activations in float (deferred,
    erased once the dequantize that consumes the chain is lowered)."""
    return None


@RULES(quant.QuantizeOp)
def _quantize(lw: Lowering, op: quant.QuantizeOp) -> Sequence[SSAValue] | None:
    if _is_dynamic(op):
        lw.float_of[op.output] = op.input
        return None
    if lw.array(op.input) is not None:
        raise QoptError(
            f"convert-to-coreml: {where(op)}: quantizing a constant is not supported "
            "(fuse-quant folds it: run it first)"
        )
    scale, zp = _per_tensor(lw, op, op.scale, op.zero_point)
    return [lw.quantize(op, op.input, scale, zp, op.qmin.value.data, op.qmax.value.data)]


@RULES(quant.DequantizeOp)
def _dequantize(lw: Lowering, op: quant.DequantizeOp) -> Sequence[SSAValue]:
    if (x := lw.float_of.get(op.input)) is not None:
        return [x]  # dynamic activation: float on Core ML
    data = lw.array(op.input)
    if data is None:
        scale, zp = _per_tensor(lw, op, op.scale, op.zero_point)
        return [lw.dequantize(op, op.input, scale, zp)]
    if data.ndim == 0:
        # A scalar: MIL's constexpr ops take rank >= 1 data, and one value gains
        # nothing from compression; its float value, computed now.
        scale = lw.const_of(op.scale, op, "the scale")
        zp = None if op.zero_point is None else lw.const_of(op.zero_point, op, "the zero point")
        out_dtype = dtype_of(op.output)
        value = dequantize(data, scale, zp, (), out_dtype, op.compute_dtype())
        return [lw.const(np.asarray(value, out_dtype).reshape(()), elem_of(op.output))]
    # A constant weight: keep it compressed (and store it once however often it is used).
    block = quant.resolve_block_size(op.block_size.get_values(), data.shape)
    grid = quant.reduced_shape(block, data.shape)
    scale = lw.const_of(op.scale, op, "the weight scale").reshape(grid)
    zp = None
    if op.zero_point is not None:
        zp = lw.const_of(op.zero_point, op, "the weight zero point").reshape(grid)
        zp = None if not np.any(zp) else zp
    scale = scale.astype(np.float32, copy=False)
    key = (  # the parameters by digest: no copy of them is kept for the pass
        op.input,
        _digest(scale),
        None if zp is None else _digest(zp),
        op.qmin.value.data,
        op.qmax.value.data,
        tuple(block),
    )
    if key in lw.weights:
        return [lw.weights[key]]
    scheme = qfused.AffineWeightAttr.get(op.qmin.value.data, op.qmax.value.data, block)
    lw.weights[key] = lw.weight(op, scheme, data, scale, zp)
    return [lw.weights[key]]


@RULES(quant.DequantizeCodebookOp)
def _dequantize_codebook(lw: Lowering, op: quant.DequantizeCodebookOp) -> Sequence[SSAValue]:
    codes = lw.const_of(op.codes, op, "codebook codes")
    book = lw.const_of(op.codebook, op, "the codebook")
    scheme = qfused.LutWeightAttr.get(op.nbits.value.data, op.block_size.get_values())
    return [lw.lut_weight(op, scheme, codes, book)]
