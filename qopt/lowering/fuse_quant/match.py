"""Matchers shared by the fuse-quant patterns.

Each matcher looks at the producers of one value and returns a match object
with named roles, or a `Reject` saying why the value does not fit. Matching
never mutates the IR; `materialize` helpers build the new constants a rewrite
needs (scales reshaped to the block grid, zero points dropped when all zero).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects.arith import ConstantOp
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue, TypeAttribute

from qopt.dialects import qfused, quant
from qopt.dialects.aten import elementwise as ew
from qopt.dialects.queries import constant_array
from qopt.dialects.tensors import elem_of, shape_of
from qopt.dtypes import element_type, numpy_dtype
from qopt.resources import WeightStore, make_resource, weights_of


@dataclass(frozen=True)
class Reject:
    """Why a value does not match (reported by `fuse-quant{report=true}`)."""

    reason: str
    op: Operation | None = None


def const_value(value: SSAValue | None) -> np.ndarray | None:
    """The numpy value of an `arith.constant` (None if not a constant or data elided)."""
    if value is None or not isinstance(value.owner, ConstantOp):
        return None
    try:
        array = constant_array(value.owner)
    except ValueError:
        return None
    return np.asarray(array)


def new_constant(array: np.ndarray, hint: str, store: WeightStore) -> ConstantOp:
    array = np.asarray(array, order="C")
    type = TensorType(element_type(array.dtype), list(array.shape))
    return ConstantOp(make_resource(hint, array, type, store), type)


def single_use(value: SSAValue) -> Operation | None:
    uses = list(value.uses)
    return uses[0].operation if len(uses) == 1 else None


# ----- weights ---------------------------------------------------------------------


@dataclass
class WeightMatch:
    """A constant weight behind a dequantize: data (or LUT codes), scales (or
    codebook) reshaped to the block grid, and a zero point unless all zero."""

    scheme: qfused.AffineWeightAttr | qfused.LutWeightAttr
    data: SSAValue
    scale: np.ndarray
    zero_point: np.ndarray | None
    source: Operation  # the dequantize op
    new_ops: list[Operation] = field(default_factory=list)

    def materialize(self) -> tuple[SSAValue, SSAValue, SSAValue | None]:
        """Create the scale / zero-point constants (kept in `new_ops`)."""
        store = weights_of(self.source)
        scale_op = new_constant(self.scale, "fused_scale", store)
        self.new_ops = [scale_op]
        zp_value = None
        if self.zero_point is not None:
            zp_op = new_constant(self.zero_point, "fused_zero_point", store)
            self.new_ops.append(zp_op)
            zp_value = zp_op.result
        return self.data, scale_op.result, zp_value


def _is_const(value: SSAValue) -> bool:
    return isinstance(value.owner, ConstantOp)


def match_weight(value: SSAValue, rank: int = 2) -> WeightMatch | Reject:
    """`value` is a weight dequantized from constants (affine or codebook)."""
    producer = value.owner
    if isinstance(producer, quant.DequantizeOp):
        return _match_affine_weight(producer, rank)
    if isinstance(producer, quant.DequantizeCodebookOp):
        return _match_codebook_weight(producer, rank)
    return Reject("the weight is not dequantized")


def _match_affine_weight(dq: quant.DequantizeOp, rank: int) -> WeightMatch | Reject:
    data = dq.input
    if len(shape_of(data)) != rank:
        return Reject(f"weight has rank {len(shape_of(data))}, expected {rank}", dq)
    if not _is_const(data):
        return Reject("weight data is not a constant", dq)
    scale = const_value(dq.scale)
    if scale is None:
        return Reject("weight scale is not a constant", dq)
    zp = None
    if dq.zero_point is not None:
        zp = const_value(dq.zero_point)
        if zp is None:
            return Reject("weight zero point is not a constant", dq)
    if dq.compute_type is not None and dq.compute_type != elem_of(dq.output):
        if numpy_dtype(dq.compute_type).itemsize > 4:
            return Reject(f"dequantize computes in {dq.compute_type}, kernels use f32", dq)
    block = tuple(dq.block_size.get_values())
    grid = tuple(d // b for d, b in zip(shape_of(data), block, strict=True))
    scale = scale.reshape(grid)
    if zp is not None:
        zp = zp.reshape(grid)
        if not np.any(zp):
            zp = None
        elif zp.dtype.kind == "f" and not np.all(zp == np.round(zp)):
            return Reject("weight zero point is not an integer", dq)
        else:
            zp = zp.astype(numpy_dtype(elem_of(data)), copy=False)
    scheme = qfused.AffineWeightAttr.get(dq.qmin.value.data, dq.qmax.value.data, block)
    return WeightMatch(scheme, data, scale.astype(np.float32, copy=False), zp, dq)


def _match_codebook_weight(dq: quant.DequantizeCodebookOp, rank: int) -> WeightMatch | Reject:
    codes = dq.codes
    # Look through the integer cast torchao inserts (ui8 codes -> i32).
    if isinstance(codes.owner, ew.CastOp) and _is_const(codes.owner.input):
        codes = codes.owner.input
    if len(shape_of(codes)) != rank:
        return Reject(f"codes have rank {len(shape_of(codes))}, expected {rank}", dq)
    if not _is_const(codes):
        return Reject("codebook codes are not a constant", dq)
    book = const_value(dq.codebook)
    if book is None:
        return Reject("the codebook is not a constant", dq)
    scheme = qfused.LutWeightAttr.get(dq.nbits.value.data, dq.block_size.get_values())
    return WeightMatch(
        scheme, codes, book.astype(numpy_dtype(elem_of(dq.output)), copy=False), None, dq
    )


# ----- activations -----------------------------------------------------------------


@dataclass
class StaticInput:
    value: SSAValue  # float (quantized in the kernel) or the already-quantized integers
    act: qfused.StaticQParamsAttr


@dataclass
class DynamicInput:
    value: SSAValue  # the float activation
    act: qfused.DynamicQParamsAttr


def _scalar(value: SSAValue | None) -> float | int | None:
    array = const_value(value)
    if array is None or array.size != 1:
        return None
    return array.reshape(()).item()


def static_params(
    op: quant.QuantizeOp | quant.DequantizeOp,
) -> qfused.StaticQParamsAttr | Reject:
    """Per-tensor parameters given as constants (PT2E's `.default` overloads)."""
    if tuple(op.block_size.get_values()) != shape_of(op.input):
        return Reject("quantization is not per-tensor", op)
    scale = _scalar(op.scale)
    zp = 0 if op.zero_point is None else _scalar(op.zero_point)
    if scale is None or zp is None:
        return Reject("quantization parameters are not compile-time constants", op)
    if zp != int(zp):
        return Reject("zero point is not an integer", op)
    if isinstance(op, quant.QuantizeOp) and op.zero_point_before_rounding is not None:
        return Reject("zero point is added before rounding", op)
    compute = op.compute_type
    if compute is not None and numpy_dtype(compute) != np.float32:
        return Reject(f"quantization computes in {compute}, not f32", op)
    return qfused.StaticQParamsAttr.get(
        float(scale), int(zp), op.qmin.value.data, op.qmax.value.data
    )


def match_input(value: SSAValue) -> StaticInput | DynamicInput | SSAValue | Reject:
    """The activation feeding an anchor: a plain float (weight-only), a static
    Q/DQ (or a DQ of integers), or a dynamic choose_qparams/Q/DQ chain."""
    dq = value.owner
    if not isinstance(dq, quant.DequantizeOp):
        return value
    if isinstance(dq.input.owner, quant.QuantizeOp) and isinstance(
        dq.scale.owner, quant.ChooseQParamsOp
    ):
        return _match_dynamic(dq)
    params = static_params(dq)
    if isinstance(params, Reject):
        return params
    q = dq.input.owner
    if isinstance(q, quant.QuantizeOp):
        q_params = static_params(q)
        if isinstance(q_params, Reject):
            return q_params
        if q_params != params or elem_of(q.output) != elem_of(dq.input):
            return Reject("quantize and dequantize parameters differ", dq)
        return StaticInput(q.input, params)
    return StaticInput(dq.input, params)


def _match_dynamic(dq: quant.DequantizeOp) -> DynamicInput | Reject:
    q = dq.input.owner
    choose = dq.scale.owner
    assert isinstance(q, quant.QuantizeOp)
    assert isinstance(choose, quant.ChooseQParamsOp)
    if q.scale != dq.scale or q.zero_point != dq.zero_point or q.scale != choose.scale:
        return Reject("quantize and dequantize use different run-time parameters", dq)
    if dq.zero_point is not None and dq.zero_point != choose.zero_point:
        return Reject("the zero point does not come from the same choose_qparams", dq)
    if choose.input != q.input:
        return Reject("choose_qparams looks at a different tensor than it quantizes", dq)
    if q.zero_point_before_rounding is not None:
        return Reject("zero point is added before rounding", q)
    x_shape = shape_of(q.input)
    block = tuple(choose.block_size.get_values())
    if block != tuple(q.block_size.get_values()) or block != tuple(dq.block_size.get_values()):
        return Reject("choose_qparams, quantize and dequantize use different blocks", dq)
    if block == (*([1] * (len(x_shape) - 1)), x_shape[-1]):
        granularity = "per_token"
    elif block == x_shape:
        granularity = "per_tensor"
    else:
        return Reject(f"activation block {list(block)} is neither per-token nor per-tensor", dq)
    for op in (q, dq):
        if op.compute_type is not None and numpy_dtype(op.compute_type) != np.float32:
            return Reject(f"{op.name} computes in {op.compute_type}, not f32", op)
    if numpy_dtype(elem_of(q.input)) != np.float32:
        return Reject("dynamic activation quantization needs a float32 input", dq)
    if (q.qmin, q.qmax) != (choose.qmin, choose.qmax):
        return Reject("choose_qparams and quantize use different ranges", dq)
    scale_type = elem_of(choose.scale)
    assert isinstance(scale_type, TypeAttribute)
    act = qfused.DynamicQParamsAttr.get(
        granularity,
        choose.mapping.data,
        choose.qmin.value.data,
        choose.qmax.value.data,
        choose.eps.value.data,
        scale_type,
    )
    return DynamicInput(q.input, act)


# ----- outputs ---------------------------------------------------------------------


@dataclass
class OutputMatch:
    """anchor -> [relu | clamp] -> quantize (per-tensor constants)."""

    quantize: quant.QuantizeOp
    requant: qfused.StaticQParamsAttr
    clamp_min: float | None
    clamp_max: float | None


def _several_users(value: SSAValue) -> Reject | None:
    """A Reject naming the output quantize that cannot be fused because the value
    it quantizes is also used elsewhere (fusing would lose the float result)."""
    users = [use.operation for use in value.uses]
    quantizers = [op for op in users if isinstance(op, quant.QuantizeOp)]
    if len(users) > 1 and quantizers:
        return Reject(
            f"the value it quantizes has {len(users)} users, so the output quantize is not fused",
            quantizers[0],
        )
    return None


def match_output(result: SSAValue) -> OutputMatch | Reject | None:
    """The output requantization chain, None when the result stays float."""
    user = single_use(result)
    if user is None:
        return _several_users(result)
    clamp_min = clamp_max = None
    if isinstance(user, ew.ReluOp):
        clamp_min = 0.0
        result = user.result
        user = single_use(result)
    elif isinstance(user, ew.ClampOp):
        clamp_min = None if user.min is None else user.min.value.data
        clamp_max = None if user.max is None else user.max.value.data
        result = user.result
        user = single_use(result)
    if user is None:
        return _several_users(result)
    if not isinstance(user, quant.QuantizeOp):
        return None
    params = static_params(user)
    if isinstance(params, Reject):
        return params
    return OutputMatch(user, params, clamp_min, clamp_max)
