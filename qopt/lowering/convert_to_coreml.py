"""`convert-to-coreml`: aten + qfused (+ leftover quant) -> the `coreml` dialect.

Option `target` is the minimum deployment target (`iOS18` default; `iOS16`,
`iOS17`); it becomes the function's `coreml.opset` attribute.

How each kind of quantization lowers (PATTERNS.md §2.8, §3):

- Weight-only affine (`w4g32`, `w8c`, PT2E's per-channel weights): the packed
  integers stay packed, as a constexpr op feeding `linear` / `conv` / `gather`:
  `constexpr_blockwise_shift_scale` on iOS18 (int4 / uint4 for ranges that fit
  4 bits, else int8 / uint8; `offset` only with a zero point);
  `constexpr_affine_dequantize` on iOS16/17, which can express only 8-bit
  per-channel (one axis) weights.
- LUT / codebook weights: `constexpr_lut_to_dense` with per-block palettes on
  iOS18 (indices typed `uN`); on iOS16/17 only a single table for the whole
  tensor with nbits in {1, 2, 4, 6, 8} (bit-packed indices).
- Static activations (PT2E static): `quantize` / `dequantize` (iOS17+) around
  the float op, as Core ML expects; an output requantization is a `quantize`
  after the (clamped) float result.
- Dynamic activations (`pt2e_dynamic`, `8da4w`): Core ML has no run-time
  choose-qparams, so the weights stay compressed and **the activation path is
  computed in float**: the per-token / per-tensor activation quantization is
  dropped (documented; results then differ from torch's quantized eager output by
  the activation quantization error, not by float round-off).

A scheme the target cannot express is a `QoptError` naming the op, the scheme
(the qfused op's kernel name) and the lowest target that can: never a silent
float fallback.

Indexing and normalization (the same MIL ops on iOS16-18): `select` is
`slice_by_index` with its dim in `squeeze_mask`; `index_select` is `gather`
(int32 indices); comparisons are `equal` / `less` / ... on two operands of one
type (fp32, fp16 or int32); `where` is `select`; inference `batch_norm` is MIL
`batch_norm` for inputs of rank 3 to 5 and `x * a + b` with constant `a`, `b`
(torch's order) for `[N, C]`.

Transformer glue (what tiny Llama / GPT-2 / BERT keep after fold-constants):
`expand` is `reshape` (when it adds leading dims) + MIL `tile`; `addmm` with a
constant `[K, N]` weight (GPT-2's Conv1D) is `linear` with the weight
transposed at compile time, else `matmul` + `add` (alpha / beta by `mul`);
`split` is one `slice_by_index` per piece; `index` with compile-time index
tensors is one `gather` of flat offsets computed with numpy on the input
reshaped to 1-D (run-time indices are an error); `&`, `|`, `^` on bools and
`logical_and/or/xor` are MIL `logical_and/or/xor` (integer bitwise ops have no
MIL op: an error). MIL `select` is typed by coremltools from its branches only,
so `where` gives one branch the result's shape when cond is the larger.

Activations, rounding and index reductions: `hardsigmoid` is MIL `sigmoid_hard`
(alpha 1/6, beta 0.5) and `hardswish` is `x * sigmoid_hard(x)`; `leaky_relu`,
`abs`, `floor`, `ceil` are the MIL ops of their names; `log` and `reciprocal`
are `log` / `inverse` with epsilon 0. MIL leaves the rounding of halves, the sign
rule of `mod` on device and the ties of `reduce_argmax` unspecified or
untested, so torch's semantics are composed from exact steps: `round` (half to
even) from floor and comparisons, `remainder` as `mod` plus a sign fix-up, and
`argmax` / `argmin` (first extreme, first NaN) as the first index where x equals
its `reduce_max` / `reduce_min`. `log_softmax` is `(x - max) - log(sum(exp(x -
max)))`; `amin` is `reduce_min`; `masked_fill` is `select` with the fill value.

Linear layers without bias lower to `matmul(x, W, transpose_y=True)`, so no
all-zero bias constant (which coremltools' `linear` would materialise) bloats
the package.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    BytesAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    Float64Type,
    FloatAttr,
    FunctionType,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    Signedness,
    StringAttr,
    TensorType,
    f32,
    i1,
    i8,
    i32,
    i64,
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from qopt.backends.coreml.packing import pack_bits
from qopt.dialects import coreml, qfused, quant
from qopt.dialects.aten import elementwise as ew
from qopt.dialects.aten import layers, nn, reduction, shape
from qopt.dialects.coreml import OPSET_ATTR, opset_number, storage_dtype
from qopt.dialects.dtypes import element_type, numpy_dtype
from qopt.errors import QoptError, where
from qopt.interpreters.builtin import constant_array
from qopt.interpreters.coreml import const_array
from qopt.resources import make_resource, printable_inline

ui8 = IntegerType(8, Signedness.UNSIGNED)


def _ints(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, [int(v) for v in values])


def _int(value: int) -> IntegerAttr:
    return IntegerAttr(int(value), i64)


def _bool(value: bool) -> IntegerAttr:
    return IntegerAttr(int(bool(value)), i1)


def _bools(values: Sequence[bool]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i1, [bool(v) for v in values])


def _float(value: float) -> FloatAttr:
    return FloatAttr(float(value), 64)


def _shape(value: SSAValue) -> tuple[int, ...]:
    assert isinstance(value.type, TensorType)
    return tuple(value.type.get_shape())


def _elem(value: SSAValue) -> Attribute:
    assert isinstance(value.type, TensorType)
    return value.type.get_element_type()


def mil_elem(elem: Attribute) -> Attribute:
    """The element type Core ML uses for `elem` (no f64 / i64 in MIL)."""
    if isinstance(elem, Float64Type):
        return f32
    if elem == i64:
        return i32
    return elem


def mil_tensor(type: Attribute) -> TensorType:
    assert isinstance(type, TensorType)
    return TensorType(mil_elem(type.get_element_type()), type.get_shape())


def _sub_byte(bits: int, signed: bool) -> IntegerType:
    return IntegerType(bits, Signedness.SIGNLESS if signed else Signedness.UNSIGNED)


def _weight_storage(bits: int, signed: bool) -> IntegerType:
    """Core ML's narrowest storage for a `bits`-wide affine weight."""
    if bits <= 4:
        return _sub_byte(4, signed)
    return i8 if signed else ui8


def _describe(scheme: Attribute) -> str:
    if isinstance(scheme, qfused.LutWeightAttr):
        return f"{scheme.nbits.data}-bit LUT (block {list(scheme.block_size)})"
    assert isinstance(scheme, qfused.AffineWeightAttr)
    return f"{scheme.bits.data}-bit affine (block {list(scheme.block_size)})"


def _subject(op: Operation) -> str:
    """The op and its location, with its scheme's kernel name for a qfused op."""
    if isinstance(op, qfused.QFusedOp):
        return f"{where(op)} (scheme {op.kernel_name()})"
    return where(op)


class Lowering:
    """Lowers one function in place, op by op, in program order."""

    def __init__(self, func: FuncOp, opset: int, target: str):
        self.func = func
        self.opset = opset
        self.target = target
        self.new_ops: list[Operation] = []
        self.full_precision: dict[SSAValue, np.ndarray] = {}
        self.float_of: dict[SSAValue, SSAValue] = {}
        """Dynamic-quantized values (quant.quantize results) -> their float input."""
        self.weights: dict[tuple[object, ...], SSAValue] = {}
        """Constant-weight dequantizes already lowered, by (data, scale, zero point,
        range, block): a weight the model uses several times is stored once."""

    # ----- building blocks ------------------------------------------------------------

    def emit(self, op: Operation) -> SSAValue:
        self.new_ops.append(op)
        return op.results[0]

    def const(self, array: np.ndarray, elem: Attribute | None = None, hint: str = "c") -> SSAValue:
        array = np.asarray(array, order="C")
        elem = element_type(array.dtype) if elem is None else elem
        type = TensorType(elem, list(array.shape))
        width = elem.width.data if isinstance(elem, IntegerType) else 32
        if array.size <= 16 and width >= 8 and printable_inline(np.asarray(array)):
            value: Attribute = DenseIntOrFPElementsAttr(type, BytesAttr(array.tobytes()))
        else:
            value = make_resource(hint, array, type)
        op = coreml.ConstOp.build(properties={"value": value}, result_types=[type])
        return self.emit(op)

    def array(self, value: SSAValue | None) -> np.ndarray | None:
        """The compile-time value of an (already lowered) operand, else None."""
        if value is None:
            return None
        if value in self.full_precision:
            return self.full_precision[value]
        if isinstance(value.owner, coreml.ConstOp):
            return const_array(value.owner)
        return None

    def const_of(self, value: SSAValue, op: Operation, what: str) -> np.ndarray:
        array = self.array(value)
        if array is None:
            raise QoptError(
                f"convert-to-coreml: {where(op)}: {what} must be a compile-time constant"
            )
        return array

    def build(
        self,
        cls: type[coreml.CoremlOp],
        operands: Sequence[SSAValue | None],
        result_type: Attribute,
        **props: Attribute,
    ) -> SSAValue:
        op = cls.build(operands=list(operands), properties=props, result_types=[result_type])
        return self.emit(op)

    def unary(self, cls: type[coreml.CoremlOp], x: SSAValue, out: Attribute, **p: Attribute):
        return self.build(cls, [x], mil_tensor(out), **p)

    def scalar(self, value: float, like: SSAValue) -> SSAValue:
        return self.const(np.asarray(value, storage_dtype(_elem(like))))

    def to_int32(self, value: SSAValue) -> SSAValue:
        if _elem(value) == i32:
            return value
        type = TensorType(i32, _shape(value))
        return self.build(coreml.CastOp, [value], type, dtype=StringAttr("int32"))

    def as_elem(self, value: SSAValue, elem: Attribute) -> SSAValue:
        """`value` with element type `elem`: a constant is converted at compile time,
        anything else gets a `cast`."""
        if _elem(value) == elem:
            return value
        if (array := self.array(value)) is not None:
            return self.const(array.astype(storage_dtype(elem)), elem)
        type = TensorType(elem, _shape(value))
        name = StringAttr(coreml.mil_dtype_name(elem))
        return self.build(coreml.CastOp, [value], type, dtype=name)

    def broadcast_to(self, op: Operation, x: SSAValue, shape: Sequence[int]) -> SSAValue:
        """`x` broadcast to `shape` (numpy rules): a `reshape` to the rank of `shape`
        (leading 1s), then MIL `tile` of the size-1 dims (fp16, fp32, int32, bool)."""
        src, dst = _shape(x), tuple(shape)
        elem = _elem(x)
        name = coreml.mil_dtype_name(elem)
        if name not in ("fp16", "fp32", "int32", "bool"):
            raise QoptError(
                f"convert-to-coreml: {where(op)}: broadcasting a {name} tensor has no CoreML "
                "lowering (MIL tile takes fp16, fp32, int32 or bool): cast the input first"
            )
        if 0 in dst:
            raise QoptError(
                f"convert-to-coreml: {where(op)}: broadcasting to the empty shape {list(dst)} "
                "is not supported (Core ML tensors are not empty)"
            )
        ranked = (1,) * (len(dst) - len(src)) + src
        if ranked != src:
            x = self.build(coreml.ReshapeOp, [x], TensorType(elem, ranked), shape=_ints(ranked))
        reps = [d if s == 1 else 1 for s, d in zip(ranked, dst, strict=True)]
        if all(r == 1 for r in reps):
            return x
        return self.build(coreml.TileOp, [x], TensorType(elem, dst), reps=_ints(reps))

    def unsupported(self, op: Operation, scheme: Attribute, reason: str) -> QoptError:
        return QoptError(
            f"convert-to-coreml: {_subject(op)} has {_describe(scheme)} weights, which CoreML "
            f"{self.target} cannot express ({reason}); the lowest target that can is iOS18: "
            "use convert-to-coreml{target=iOS18} / minimum_deployment_target='iOS18'"
        )

    # ----- weights ----------------------------------------------------------------------

    def weight(
        self,
        op: Operation,
        scheme: Attribute,
        data: np.ndarray,
        scale: np.ndarray,
        zero_point: np.ndarray | None,
    ) -> SSAValue:
        """A constexpr op producing the dense float weight from its packed form."""
        if isinstance(scheme, qfused.LutWeightAttr):
            return self.lut_weight(op, scheme, data, scale)
        assert isinstance(scheme, qfused.AffineWeightAttr)
        bits, signed = scheme.bits.data, scheme.qmin.data < 0
        out = TensorType(f32, data.shape)
        grid = scale.shape
        if bits > 8:
            raise self.unsupported(op, scheme, "Core ML stores weights in at most 8 bits")
        if self.opset >= 18:
            storage = _weight_storage(bits, signed)
            data_v = self.const(data.astype(storage_dtype(storage)), storage, "weight_data")
            scale_v = self.const(scale.astype(np.float32).reshape(grid), f32, "weight_scale")
            offset = None
            if zero_point is not None and np.any(zero_point):
                offset = self.const(
                    zero_point.reshape(grid).astype(storage_dtype(storage)), storage, "weight_zp"
                )
            return self.build(coreml.ConstexprBlockwiseShiftScaleOp, [data_v, scale_v, offset], out)
        if bits <= 4:
            raise self.unsupported(op, scheme, "int4 weights exist from iOS18")
        axes = [i for i, g in enumerate(grid) if g != 1]
        if len(axes) > 1 or any(g not in (1, d) for g, d in zip(grid, data.shape, strict=True)):
            raise self.unsupported(op, scheme, "blockwise (per-group) weights need iOS18")
        axis = axes[0] if axes else 0
        # Per-tensor parameters are scalars: a length-1 vector must match dim[axis] in MIL.
        flat = (-1,) if axes else ()
        storage = i8 if signed else ui8
        zp = np.zeros(grid, storage_dtype(storage)) if zero_point is None else zero_point
        data_v = self.const(data.astype(storage_dtype(storage)), storage, "weight_data")
        zp_v = self.const(zp.reshape(flat).astype(storage_dtype(storage)), storage, "weight_zp")
        scale_v = self.const(scale.reshape(flat).astype(np.float32), f32, "weight_scale")
        return self.build(
            coreml.ConstexprAffineDequantizeOp, [data_v, zp_v, scale_v], out, axis=_int(axis)
        )

    def lut_weight(
        self, op: Operation, scheme: qfused.LutWeightAttr, codes: np.ndarray, book: np.ndarray
    ) -> SSAValue:
        nbits = scheme.nbits.data
        out = TensorType(f32, codes.shape)
        lut = book.astype(np.float32)
        if self.opset >= 18:
            storage = IntegerType(nbits, Signedness.UNSIGNED)
            idx = self.const(codes.astype(np.uint8), storage, "lut_indices")
            return self.build(coreml.ConstexprLutToDenseOp, [idx, self.const(lut, f32, "lut")], out)
        if any(g != 1 for g in lut.shape[:-2]) or lut.shape[-1] != 1:
            raise self.unsupported(op, scheme, "per-block palettes need iOS18")
        if nbits not in (1, 2, 4, 6, 8):
            raise self.unsupported(op, scheme, f"{nbits}-bit palettes need iOS18")
        packed = self.const(pack_bits(codes, nbits), ui8, "lut_indices")
        table = self.const(lut.reshape(-1), f32, "lut")
        return self.build(
            coreml.ConstexprLutToDenseOp, [packed, table], out, shape=_ints(codes.shape)
        )

    def fused_weight(self, op: qfused.QFusedOp) -> SSAValue:
        weight = op.operands[1]
        data = self.const_of(weight, op, "weight data")
        scale = self.const_of(op.operands[2], op, "weight scale")
        zp_value = getattr(op, "zero_point", None)
        zp = None if zp_value is None else self.const_of(zp_value, op, "weight zero point")
        return self.weight(op, op.weight_scheme, data, scale, zp)  # type: ignore[attr-defined]

    # ----- activations ------------------------------------------------------------------

    def act_dtype(self, op: Operation, act: qfused.StaticQParamsAttr) -> Attribute:
        if act.qmin.data >= -128 and act.qmax.data <= 127:
            return i8
        if act.qmin.data >= 0 and act.qmax.data <= 255:
            return ui8
        raise QoptError(
            f"convert-to-coreml: {where(op)}: activation range [{act.qmin.data}, "
            f"{act.qmax.data}] does not fit Core ML's int8/uint8 quantize"
        )

    def need_opset(self, op: Operation, minimum: int, what: str) -> None:
        if self.opset < minimum:
            raise QoptError(
                f"convert-to-coreml: {_subject(op)} needs {what}, which CoreML has from "
                f"iOS{minimum}; the target is {self.target}; the lowest target that can is "
                f"iOS{minimum}: use convert-to-coreml{{target=iOS{minimum}}} / "
                f"minimum_deployment_target='iOS{minimum}'"
            )

    def quantize(
        self, op: Operation, x: SSAValue, scale: float, zp: int, qmin: int, qmax: int
    ) -> SSAValue:
        self.need_opset(op, 17, "static activation quantization (quantize)")
        act = qfused.StaticQParamsAttr.get(scale, zp, qmin, qmax)
        dtype = self.act_dtype(op, act)
        lo, hi = coreml.int_bounds(dtype)
        if (qmin, qmax) != (lo, hi):  # MIL clips to the full type range only
            x = self.build(
                coreml.ClipOp,
                [x],
                x.type,
                alpha=_float((qmin - zp) * scale),
                beta=_float((qmax - zp) * scale),
            )
        np_dtype = storage_dtype(dtype)
        zp_v = self.const(np.asarray(zp, np_dtype), dtype)
        scale_v = self.const(np.asarray(scale, np.float32), f32)
        out = TensorType(dtype, _shape(x))
        return self.build(
            coreml.QuantizeOp,
            [x, zp_v, scale_v],
            out,
            output_dtype=StringAttr(coreml.mil_dtype_name(dtype)),
        )

    def dequantize(self, op: Operation, q: SSAValue, scale: float, zp: int) -> SSAValue:
        self.need_opset(op, 17, "static activation quantization (dequantize)")
        zp_v = self.const(np.asarray(zp, storage_dtype(_elem(q))), _elem(q))
        scale_v = self.const(np.asarray(scale, np.float32), f32)
        return self.build(coreml.DequantizeOp, [q, zp_v, scale_v], TensorType(f32, _shape(q)))

    def fused_input(self, op: Operation, x: SSAValue, act: Attribute | None) -> SSAValue:
        if isinstance(act, qfused.StaticQParamsAttr):
            s, z = act.scale.value.data, act.zero_point.data
            if isinstance(_elem(x), IntegerType):
                return self.dequantize(op, x, s, z)
            q = self.quantize(op, x, s, z, act.qmin.data, act.qmax.data)
            return self.dequantize(op, q, s, z)
        # Dynamic activations: computed in float on Core ML (see the module docstring).
        return x

    def fused_output(self, op: Operation, y: SSAValue) -> SSAValue:
        lo = getattr(op, "clamp_min", None)
        hi = getattr(op, "clamp_max", None)
        if lo is not None and hi is None and lo.value.data == 0.0:
            y = self.unary(coreml.ReluOp, y, y.type)
        elif lo is not None or hi is not None:
            y = self.build(
                coreml.ClipOp,
                [y],
                y.type,
                alpha=_float(-math.inf if lo is None else lo.value.data),
                beta=_float(math.inf if hi is None else hi.value.data),
            )
        requant = getattr(op, "requant", None)
        if requant is None:
            return y
        return self.quantize(
            op, y, requant.scale.value.data, requant.zero_point.data,
            requant.qmin.data, requant.qmax.data,
        )  # fmt: skip

    def linear(self, x: SSAValue, w: SSAValue, bias: SSAValue | None, out: Attribute) -> SSAValue:
        if bias is None:
            return self.build(
                coreml.MatmulOp, [x, w], out, transpose_x=_bool(False), transpose_y=_bool(True)
            )
        return self.build(coreml.LinearOp, [x, w, bias], out)

    # ----- rules ------------------------------------------------------------------------

    def run(self) -> None:
        block = self.func.body.block
        for arg in block.args:
            if _elem(arg) == i64:
                Rewriter.replace_value_with_new_type(arg, TensorType(i32, _shape(arg)))
        for op in list(block.ops):
            if isinstance(op, ReturnOp):
                continue
            rule = RULES.get(type(op))
            if rule is None:
                raise QoptError(
                    f"convert-to-coreml: no CoreML lowering for {where(op)}; supported ops: "
                    "see qopt/lowering/convert_to_coreml.py RULES"
                )
            self.new_ops = []
            results = rule(self, op)
            if results is None:  # deferred: erased once unused
                continue
            Rewriter.replace_op(op, self.new_ops, list(results))
        self.erase_dead()
        for op in block.ops:
            if not isinstance(op, coreml.CoremlOp | ReturnOp):
                raise QoptError(
                    f"convert-to-coreml: {where(op)} is still used after lowering "
                    "(a dynamic quantization chain whose float value is needed elsewhere)"
                )
        ret = block.last_op
        assert isinstance(ret, ReturnOp)
        self.func.function_type = FunctionType.from_lists(
            [a.type for a in block.args], [v.type for v in ret.operands]
        )
        self.func.attributes[OPSET_ATTR] = StringAttr(self.target)

    def erase_dead(self) -> None:
        changed = True
        while changed:
            changed = False
            for op in reversed(list(self.func.body.block.ops)):
                if isinstance(op, ReturnOp) or any(r.uses for r in op.results):
                    continue
                Rewriter.erase_op(op)
                changed = True


Rule = Callable[[Lowering, Operation], Sequence[SSAValue] | None]
RULES: dict[type[Operation], Rule] = {}


def rule(*op_types: type[Operation]) -> Callable[[Rule], Rule]:
    def register(fn: Rule) -> Rule:
        for op_type in op_types:
            RULES[op_type] = fn
        return fn

    return register


@rule(arith.ConstantOp)
def _constant(lw: Lowering, op: Operation) -> Sequence[SSAValue]:
    assert isinstance(op, arith.ConstantOp)
    array = np.asarray(constant_array(op))
    elem = mil_elem(_elem(op.result))
    value = lw.const(array.astype(storage_dtype(elem)), elem, op.result.name_hint or "const")
    lw.full_precision[value] = array
    return [value]


def _simple(cls: type[coreml.CoremlOp], **props: Callable[[Operation], Attribute]) -> Rule:
    def lower(lw: Lowering, op: Operation) -> Sequence[SSAValue]:
        attrs = {k: fn(op) for k, fn in props.items()}
        return [lw.build(cls, list(op.operands), mil_tensor(op.results[0].type), **attrs)]

    return lower


for _aten, _coreml in (
    (ew.ReluOp, coreml.ReluOp), (ew.SiluOp, coreml.SiluOp), (ew.SigmoidOp, coreml.SigmoidOp),
    (ew.TanhOp, coreml.TanhOp), (ew.ExpOp, coreml.ExpOp), (ew.SqrtOp, coreml.SqrtOp),
    (ew.SinOp, coreml.SinOp), (ew.CosOp, coreml.CosOp), (ew.ErfOp, coreml.ErfOp),
    (ew.MulOp, coreml.MulOp), (ew.PowOp, coreml.PowOp), (ew.MaximumOp, coreml.MaximumOp),
    (ew.MinimumOp, coreml.MinimumOp),
):  # fmt: skip
    RULES[_aten] = _simple(_coreml)
RULES[ew.RsqrtOp] = _simple(coreml.RsqrtOp, epsilon=lambda op: _float(0.0))
RULES[ew.GeluOp] = _simple(
    coreml.GeluOp,
    mode=lambda op: StringAttr(
        "TANH_APPROXIMATION"
        if getattr(op, "approximate", None) is not None and op.approximate.data == "tanh"  # type: ignore[attr-defined]
        else "EXACT"
    ),
)


@rule(ew.AddOp, ew.SubOp)
def _add_sub(lw: Lowering, op: Operation) -> Sequence[SSAValue]:
    x, y = op.operands
    out = mil_tensor(op.results[0].type)
    alpha = getattr(op, "alpha", None)
    if alpha is not None and float(alpha.value.data) != 1.0:
        y = lw.build(coreml.MulOp, [y, lw.scalar(float(alpha.value.data), y)], y.type)
    cls = coreml.AddOp if isinstance(op, ew.AddOp) else coreml.SubOp
    return [lw.build(cls, [x, y], out)]


_COMPARISONS: dict[type[Operation], type[coreml.CoremlOp]] = {
    ew.EqOp: coreml.EqualOp,
    ew.NeOp: coreml.NotEqualOp,
    ew.LtOp: coreml.LessOp,
    ew.LeOp: coreml.LessEqualOp,
    ew.GtOp: coreml.GreaterOp,
    ew.GeOp: coreml.GreaterEqualOp,
}


def _compared_elem(a: Attribute, b: Attribute) -> Attribute:
    """The type both sides of a MIL comparison get (fp16, fp32 or int32)."""
    for elem in (a, b):
        if coreml.mil_dtype_name(elem) in ("fp32", "fp16"):
            return f32 if f32 in (a, b) else elem
    return i32


@rule(*_COMPARISONS)
def _compare(lw: Lowering, op: Operation) -> Sequence[SSAValue]:
    """Comparisons: MIL compares two operands of one type (fp16, fp32, int32)."""
    x, y = op.operands
    elem = _compared_elem(mil_elem(_elem(x)), mil_elem(_elem(y)))
    x, y = lw.as_elem(x, elem), lw.as_elem(y, elem)
    out = mil_tensor(op.results[0].type)
    return [lw.build(_COMPARISONS[type(op)], [x, y], out)]


@rule(ew.WhereOp)
def _where(lw: Lowering, op: Operation) -> Sequence[SSAValue]:
    """`where(cond, a, b)`: MIL select, both branches in the result's type."""
    assert isinstance(op, ew.WhereOp)
    out = mil_tensor(op.result.type)
    elem = out.get_element_type()
    if coreml.mil_dtype_name(elem) not in ("fp16", "fp32", "int32", "bool"):
        raise QoptError(
            f"convert-to-coreml: {where(op)}: MIL select takes fp16, fp32, int32 or bool "
            f"values, not {coreml.mil_dtype_name(elem)}; cast the operands first"
        )
    a, b = lw.as_elem(op.lhs, elem), lw.as_elem(op.rhs, elem)
    shape = tuple(out.get_shape())
    if coreml.broadcast(_shape(a), _shape(b)) != shape:
        # coremltools types select as broadcast(a, b), without cond: one branch
        # gets the result's shape (a constant at compile time).
        if (array := lw.array(b)) is not None:
            b = lw.const(np.broadcast_to(array.astype(storage_dtype(elem)), shape), elem, "where")
        elif (array := lw.array(a)) is not None:
            a = lw.const(np.broadcast_to(array.astype(storage_dtype(elem)), shape), elem, "where")
        else:
            a = lw.broadcast_to(op, a, shape)
    return [lw.build(coreml.SelectOp, [op.condition, a, b], out)]


_LOGICAL: dict[type[Operation], type[coreml.CoremlOp]] = {
    ew.BitwiseAndOp: coreml.LogicalAndOp,
    ew.BitwiseOrOp: coreml.LogicalOrOp,
    ew.BitwiseXorOp: coreml.LogicalXorOp,
    ew.LogicalAndOp: coreml.LogicalAndOp,
    ew.LogicalOrOp: coreml.LogicalOrOp,
    ew.LogicalXorOp: coreml.LogicalXorOp,
}
_BITWISE = (ew.BitwiseAndOp, ew.BitwiseOrOp, ew.BitwiseXorOp)


@rule(*_LOGICAL)
def _logical(lw: Lowering, op: Operation) -> Sequence[SSAValue]:
    """`&`, `|`, `^` on bools and `logical_and/or/xor`: MIL logical_and/or/xor,
    which take bools only. Integer bitwise ops have no MIL op (an error); the
    operands of a logical op that are not bools become `x != 0` through a cast."""
    x, y = op.operands
    if isinstance(op, _BITWISE) and (_elem(x) != i1 or _elem(y) != i1):
        names = ", ".join(coreml.mil_dtype_name(mil_elem(_elem(v))) for v in (x, y))
        raise QoptError(
            f"convert-to-coreml: {where(op)}: integer bitwise operations ({names} operands) "
            "have no CoreML (MIL) op; only bool operands lower (to logical_and/or/xor): "
            "compute the mask as a bool tensor in the model, or run this model on Vulkan"
        )
    out = mil_tensor(op.results[0].type)
    return [lw.build(_LOGICAL[type(op)], [lw.as_elem(x, i1), lw.as_elem(y, i1)], out)]


@rule(ew.DivOp)
def _div(lw: Lowering, op: Operation) -> Sequence[SSAValue]:
    assert isinstance(op, ew.DivOp)
    if op.rounding_mode is not None:
        raise QoptError(f"convert-to-coreml: {where(op)}: rounding division is not supported")
    return [lw.build(coreml.RealDivOp, list(op.operands), mil_tensor(op.result.type))]


@rule(ew.NegOp)
def _neg(lw: Lowering, op: Operation) -> Sequence[SSAValue]:
    x = op.operands[0]
    return [lw.build(coreml.MulOp, [x, lw.scalar(-1.0, x)], mil_tensor(op.results[0].type))]


@rule(ew.ClampOp)
def _clamp(lw: Lowering, op: Operation) -> Sequence[SSAValue]:
    assert isinstance(op, ew.ClampOp)
    lo = -math.inf if op.min is None else float(op.min.value.data)  # type: ignore[union-attr]
    hi = math.inf if op.max is None else float(op.max.value.data)  # type: ignore[union-attr]
    out = mil_tensor(op.result.type)
    return [lw.build(coreml.ClipOp, [op.input], out, alpha=_float(lo), beta=_float(hi))]


@rule(ew.CastOp, ew.CloneOp)
def _cast(lw: Lowering, op: Operation) -> Sequence[SSAValue]:
    x = op.operands[0]
    out = mil_tensor(op.results[0].type)
    if (array := lw.array(x)) is not None:  # fold: casts of constants (codebook codes)
        return [
            lw.const(array.astype(storage_dtype(out.get_element_type())), out.get_element_type())
        ]
    if out == x.type:
        return [x]
    dtype = coreml.mil_dtype_name(out.get_element_type())
    return [lw.build(coreml.CastOp, [x], out, dtype=StringAttr(dtype))]


@rule(nn.LinearOp)
def _linear(lw: Lowering, op: Operation) -> Sequence[SSAValue]:
    assert isinstance(op, nn.LinearOp)
    return [lw.linear(op.input, op.weight, op.bias, mil_tensor(op.result.type))]


@rule(nn.MatmulOp)
def _matmul(lw: Lowering, op: Operation) -> Sequence[SSAValue]:
    out = mil_tensor(op.results[0].type)
    f = _bool(False)
    return [lw.build(coreml.MatmulOp, list(op.operands), out, transpose_x=f, transpose_y=f)]


@rule(nn.AddmmOp)
def _addmm(lw: Lowering, op: Operation) -> Sequence[SSAValue]:
    """`beta * input + alpha * (mat1 @ mat2)` (GPT-2's Conv1D: bias + x @ W, W `[K, N]`).

    A constant 2-D mat2 with alpha = beta = 1 and a constant bias of N values is
    MIL `linear` with the weight transposed at compile time (`[N, K]`) and the
    bias. Otherwise `matmul`, scaled by alpha with `mul`, plus `input` scaled by
    beta (at compile time when constant); beta = 0 drops `input`, as torch does.
    A compressed mat2 (constexpr op) stays compressed and feeds the matmul.
    """
    assert isinstance(op, nn.AddmmOp)
    out = mil_tensor(op.result.type)
    elem = out.get_element_type()
    if coreml.mil_dtype_name(elem) not in ("fp16", "fp32"):
        raise QoptError(
            f"convert-to-coreml: {where(op)}: addmm on {coreml.mil_dtype_name(elem)} tensors "
            "is not supported (CoreML lowers float addmm only): cast the operands to float"
        )
    dtype = storage_dtype(elem)
    beta = 1.0 if op.beta is None else float(op.beta.value.data)
    alpha = 1.0 if op.alpha is None else float(op.alpha.value.data)
    n = _shape(op.result)[-1]
    weight = lw.array(op.mat2)
    bias = lw.array(op.input) if beta != 0.0 else None
    if (
        weight is not None
        and weight.ndim == 2
        and bias is not None
        and bias.size == n
        and bias.shape[-1:] == (n,)
        and alpha == beta == 1.0
    ):
        w = lw.const(np.ascontiguousarray(weight.T).astype(dtype), elem, "addmm_weight")
        b = lw.const(bias.reshape(n).astype(dtype), elem, "addmm_bias")
        return [lw.build(coreml.LinearOp, [op.mat1, w, b], out)]
    f = _bool(False)
    y = lw.build(coreml.MatmulOp, [op.mat1, op.mat2], out, transpose_x=f, transpose_y=f)
    if alpha != 1.0:
        y = lw.build(coreml.MulOp, [y, lw.scalar(alpha, y)], out)
    if beta == 0.0:
        return [y]
    term = op.input
    if bias is not None and beta != 1.0:
        term = lw.const((bias * beta).astype(dtype), elem, "addmm_bias")
    elif beta != 1.0:
        term = lw.build(coreml.MulOp, [term, lw.scalar(beta, term)], term.type)
    return [lw.build(coreml.AddOp, [term, y], out)]


@rule(nn.EmbeddingOp)
def _embedding(lw: Lowering, op: Operation) -> Sequence[SSAValue]:
    assert isinstance(op, nn.EmbeddingOp)
    out = mil_tensor(op.result.type)
    indices = lw.to_int32(op.indices)
    return [lw.build(coreml.GatherOp, [op.weight, indices], out, axis=_int(0))]


def _conv(
    lw: Lowering, op: Operation, x: SSAValue, w: SSAValue, bias: SSAValue | None, out: Attribute
) -> SSAValue:
    ph, pw = op.padding.get_values()  # type: ignore[attr-defined]
    return lw.build(
        coreml.ConvOp,
        [x, w, bias],
        out,
        strides=_ints(op.stride.get_values()),  # type: ignore[attr-defined]
        pad_type=StringAttr("custom"),
        pad=_ints((ph, ph, pw, pw)),
        dilations=_ints(op.dilation.get_values()),  # type: ignore[attr-defined]
        groups=_int(op.groups.value.data),  # type: ignore[attr-defined]
    )


@rule(nn.Conv2dOp)
def _conv2d(lw: Lowering, op: Operation) -> Sequence[SSAValue]:
    assert isinstance(op, nn.Conv2dOp)
    return [_conv(lw, op, op.input, op.weight, op.bias, mil_tensor(op.result.type))]


@rule(shape.ViewOp, shape.UnsqueezeOp, shape.SqueezeOp)
def _reshape(lw: Lowering, op: Operation) -> Sequence[SSAValue]:
    out = mil_tensor(op.results[0].type)
    return [lw.build(coreml.ReshapeOp, [op.operands[0]], out, shape=_ints(out.get_shape()))]


@rule(shape.TransposeOp, shape.PermuteOp)
def _transpose(lw: Lowering, op: Operation) -> Sequence[SSAValue]:
    x = op.operands[0]
    rank = len(_shape(x))
    if isinstance(op, shape.TransposeOp):
        perm = list(range(rank))
        a, b = op.dim0.value.data % rank, op.dim1.value.data % rank
        perm[a], perm[b] = perm[b], perm[a]
    else:
        perm = [d % rank for d in op.dims.get_values()]  # type: ignore[attr-defined]
    return [lw.build(coreml.TransposeOp, [x], mil_tensor(op.results[0].type), perm=_ints(perm))]


@rule(shape.SliceOp)
def _slice(lw: Lowering, op: Operation) -> Sequence[SSAValue]:
    assert isinstance(op, shape.SliceOp)
    dims = _shape(op.input)
    axis = op.dim.value.data % len(dims)
    begin, end, stride = [0] * len(dims), list(dims), [1] * len(dims)
    start = op.start.value.data if op.start is not None else 0
    stop = op.end.value.data if op.end is not None else dims[axis]
    begin[axis] = max(0, min(dims[axis], start + dims[axis] if start < 0 else start))
    end[axis] = max(0, min(dims[axis], stop + dims[axis] if stop < 0 else stop))
    stride[axis] = op.step.value.data if op.step is not None else 1
    out = mil_tensor(op.result.type)
    return [
        lw.build(
            coreml.SliceByIndexOp,
            [op.input],
            out,
            begin=_ints(begin),
            end=_ints(end),
            stride=_ints(stride),
        )
    ]


@rule(shape.SelectOp)
def _select(lw: Lowering, op: Operation) -> Sequence[SSAValue]:
    """`x.select(dim, i)`: slice_by_index taking `[i, i + 1)` on dim with its
    squeeze_mask set (the dim is removed)."""
    assert isinstance(op, shape.SelectOp)
    dims = _shape(op.input)
    axis = op.dim.value.data % len(dims)
    index = op.index.value.data % dims[axis]
    begin, end = [0] * len(dims), list(dims)
    begin[axis], end[axis] = index, index + 1
    squeeze = [i == axis for i in range(len(dims))]
    return [
        lw.build(
            coreml.SliceByIndexOp,
            [op.input],
            mil_tensor(op.result.type),
            begin=_ints(begin),
            end=_ints(end),
            stride=_ints([1] * len(dims)),
            squeeze_mask=_bools(squeeze),
        )
    ]


@rule(shape.IndexSelectOp)
def _index_select(lw: Lowering, op: Operation) -> Sequence[SSAValue]:
    """`index_select(x, dim, index)`: MIL gather on `dim` with 1-D int32 indices."""
    assert isinstance(op, shape.IndexSelectOp)
    dims = _shape(op.input)
    if not dims:
        raise QoptError(
            f"convert-to-coreml: {where(op)}: index_select of a 0-d tensor is not supported; "
            "reshape the input to 1-D first"
        )
    axis = op.dim.value.data % len(dims)
    if (index := lw.array(op.index)) is not None:
        flat = index.reshape(-1).astype(np.int64)
        bad = flat[(flat < 0) | (flat >= dims[axis])]
        if bad.size:
            raise QoptError(
                f"convert-to-coreml: {where(op)}: index {int(bad[0])} ({bad.size} in all) is out "
                f"of range for dim {axis} of size {dims[axis]}"
            )
        indices = lw.const(flat.astype(np.int32), i32, "indices")
    else:
        indices = lw.to_int32(op.index)
        if not _shape(indices):
            indices = lw.build(coreml.ReshapeOp, [indices], TensorType(i32, [1]), shape=_ints([1]))
    out = mil_tensor(op.result.type)
    return [lw.build(coreml.GatherOp, [op.input, indices], out, axis=_int(axis))]


@rule(shape.CatOp)
def _cat(lw: Lowering, op: Operation) -> Sequence[SSAValue]:
    assert isinstance(op, shape.CatOp)
    rank = len(_shape(op.result))
    out = mil_tensor(op.result.type)
    values = list(op.inputs)
    concat = coreml.ConcatOp.build(
        operands=[values],
        properties={"axis": _int(op.dim.value.data % rank), "interleave": _bool(False)},
        result_types=[out],
    )
    return [lw.emit(concat)]


@rule(shape.ExpandOp)
def _expand(lw: Lowering, op: Operation) -> Sequence[SSAValue]:
    """`expand` (broadcast to the result shape): MIL `tile` with `reps[i] =
    result[i]` on the input's size-1 dims; a `reshape` first gives the input
    the result's rank (leading 1s). An expand that changes nothing is its input."""
    assert isinstance(op, shape.ExpandOp)
    return [lw.broadcast_to(op, op.input, _shape(op.result))]


@rule(shape.SplitOp)
def _split(lw: Lowering, op: Operation) -> Sequence[SSAValue]:
    """`split` / `split_with_sizes` / `chunk`: one `slice_by_index` per piece."""
    assert isinstance(op, shape.SplitOp)
    dims = _shape(op.input)
    axis = op.dim.value.data % len(dims)
    sizes = [int(v) for v in op.sizes.get_values()]
    if 0 in sizes:
        raise QoptError(
            f"convert-to-coreml: {where(op)}: split into an empty piece (sizes {sizes}) is "
            "not supported (Core ML tensors are not empty)"
        )
    if len(sizes) == 1:
        return [op.input]
    pieces: list[SSAValue] = []
    start = 0
    for size, result in zip(sizes, op.outputs, strict=True):
        begin, end = [0] * len(dims), list(dims)
        begin[axis], end[axis] = start, start + size
        start += size
        pieces.append(
            lw.build(
                coreml.SliceByIndexOp,
                [op.input],
                mil_tensor(result.type),
                begin=_ints(begin),
                end=_ints(end),
                stride=_ints([1] * len(dims)),
            )
        )
    return pieces


@rule(shape.IndexOp)
def _index(lw: Lowering, op: Operation) -> Sequence[SSAValue]:
    """Advanced indexing with compile-time index tensors (after fold-constants,
    the position and mask indices of transformers are constants): the flat
    offsets `arange(numel).reshape(shape)[indices]` are computed with numpy, and
    the input, reshaped to 1-D, is read with one MIL `gather` of those int32
    offsets, which has the result's shape. Offsets that read the whole input in
    order are a `reshape`. Bool (and, before iOS17, 8/16-bit) inputs are gathered
    as int32 (MIL gather takes no bools)."""
    assert isinstance(op, shape.IndexOp)
    dims = _shape(op.input)
    key: list[slice | np.ndarray] = [slice(None)] * len(dims)
    for dim, index in zip(op.indexed_dims.get_values(), op.indices, strict=True):
        array = lw.array(index)
        if array is None:
            raise QoptError(
                f"convert-to-coreml: {where(op)}: index tensor {index.type} is computed at "
                "run time; CoreML lowers advanced indexing only with compile-time indices "
                "(use index_select / gather on one dim, or make the indices constants)"
            )
        key[int(dim)] = array.astype(np.int64)
    numel = math.prod(dims)
    if numel >= 2**31:
        raise QoptError(
            f"convert-to-coreml: {where(op)}: the input has {numel} elements, more than "
            "int32 gather offsets address"
        )
    try:
        offsets = np.arange(numel, dtype=np.int64).reshape(dims)[tuple(key)]
    except IndexError as e:
        raise QoptError(f"convert-to-coreml: {where(op)}: {e}") from None
    out = mil_tensor(op.result.type)
    result_shape = tuple(out.get_shape())
    assert offsets.shape == result_shape, (offsets.shape, result_shape)
    x = op.input
    if offsets.size == numel and np.array_equal(offsets.reshape(-1), np.arange(numel)):
        if result_shape == dims:
            return [x]
        return [lw.build(coreml.ReshapeOp, [x], out, shape=_ints(result_shape))]
    elem = out.get_element_type()
    gathered = coreml.mil_dtype_name(elem)
    allowed = {"fp16", "fp32", "int32"}
    if lw.opset >= 17:
        allowed |= {"int8", "uint8", "int16", "uint16"}
    work = elem if gathered in allowed else i32
    if gathered not in allowed and gathered != "bool":
        raise QoptError(
            f"convert-to-coreml: {where(op)}: indexing a {gathered} tensor needs iOS17 "
            f"(MIL gather), the target is {lw.target}: cast the input to int32 or float first"
        )
    if len(dims) != 1:
        x = lw.build(coreml.ReshapeOp, [x], TensorType(_elem(x), [numel]), shape=_ints([numel]))
    x = lw.as_elem(x, work)
    indices = lw.const(offsets.astype(np.int32), i32, "index_offsets")
    value = lw.build(coreml.GatherOp, [x, indices], TensorType(work, result_shape), axis=_int(0))
    return [lw.as_elem(value, elem)]


def _reduce(cls: type[coreml.CoremlOp]) -> Rule:
    def lower(lw: Lowering, op: Operation) -> Sequence[SSAValue]:
        x = op.operands[0]
        rank = len(_shape(x))
        dims = getattr(op, "dims", None)
        axes = list(range(rank)) if dims is None else [d % rank for d in dims.get_values()]
        keep = getattr(op, "keepdim", None)
        keep_dims = keep is not None and bool(keep.value.data)
        out = mil_tensor(op.results[0].type)
        return [lw.build(cls, [x], out, axes=_ints(axes), keep_dims=_bool(keep_dims))]

    return lower


RULES[reduction.MeanOp] = _reduce(coreml.ReduceMeanOp)
RULES[reduction.SumOp] = _reduce(coreml.ReduceSumOp)
RULES[reduction.AmaxOp] = _reduce(coreml.ReduceMaxOp)
RULES[reduction.AminOp] = _reduce(coreml.ReduceMinOp)


@rule(reduction.SoftmaxOp)
def _softmax(lw: Lowering, op: Operation) -> Sequence[SSAValue]:
    assert isinstance(op, reduction.SoftmaxOp)
    x = op.input
    axis = _int(op.dim.value.data % len(_shape(x)))
    return [lw.build(coreml.SoftmaxOp, [x], mil_tensor(op.result.type), axis=axis)]


@rule(layers.LayerNormOp)
def _layer_norm(lw: Lowering, op: Operation) -> Sequence[SSAValue]:
    assert isinstance(op, layers.LayerNormOp)
    rank = len(_shape(op.input))
    n = len(op.normalized_shape.get_values())
    axes = list(range(rank - n, rank))
    return [
        lw.build(
            coreml.LayerNormOp,
            [op.input, op.weight, op.bias],
            mil_tensor(op.result.type),
            axes=_ints(axes),
            epsilon=_float(op.eps.value.data),
        )
    ]


@rule(layers.BatchNormOp)
def _batch_norm(lw: Lowering, op: Operation) -> Sequence[SSAValue]:
    """Inference batch norm: MIL batch_norm for rank 3 to 5 (its range); a rank-2
    input `[N, C]` becomes `x * a + b` with `a = weight / sqrt(var + eps)` and
    `b = bias - mean * a` computed at compile time (torch's order)."""
    assert isinstance(op, layers.BatchNormOp)
    if any(r.uses for r in op.stats):
        raise QoptError(
            f"convert-to-coreml: {where(op)}: the saved batch statistics of batch_norm are "
            "not supported (export the model in eval mode)"
        )
    x = op.input
    out = mil_tensor(op.result.type)
    elem = out.get_element_type()
    dtype = storage_dtype(elem)
    eps = op.eps.value.data if op.eps is not None else 1e-5
    params = {
        "running_mean": op.running_mean,
        "running_var": op.running_var,
        "weight": op.weight,
        "bias": op.bias,
    }
    arrays: dict[str, np.ndarray | None] = {}
    for key, value in params.items():
        array = None if value is None else lw.array(value)
        if value is not None and array is None:
            raise QoptError(
                f"convert-to-coreml: {where(op)}: batch_norm's {key} is computed at run time; "
                "Core ML takes constant statistics and affine parameters: export the model "
                "in eval mode with the statistics as parameters or buffers"
            )
        arrays[key] = None if array is None else array.astype(dtype)
    mean, var, gamma, beta = arrays.values()
    assert mean is not None
    assert var is not None
    rank = len(_shape(x))
    if 3 <= rank <= 5:
        operands = [
            x,
            lw.const(mean, elem, "bn_mean"),
            lw.const(var, elem, "bn_variance"),
            None if gamma is None else lw.const(gamma, elem, "bn_gamma"),
            None if beta is None else lw.const(beta, elem, "bn_beta"),
        ]
        value = lw.build(coreml.BatchNormOp, operands, out, epsilon=_float(eps))
        return [value] * len(op.results)
    if rank != 2:
        raise QoptError(
            f"convert-to-coreml: {where(op)}: batch_norm needs an input [N, C, *] of rank 2 "
            f"to 5, got rank {rank}"
        )
    alpha = np.asarray(1, dtype) / np.sqrt(var + np.asarray(eps, dtype))
    if gamma is not None:
        alpha = alpha * gamma
    shift = -mean * alpha
    if beta is not None:
        shift = shift + beta
    scaled = lw.build(coreml.MulOp, [x, lw.const(alpha, elem, "bn_scale")], out)
    value = lw.build(coreml.AddOp, [scaled, lw.const(shift, elem, "bn_shift")], out)
    return [value] * len(op.results)


def _pool_props(op: layers.Pool2dOp) -> dict[str, Attribute]:
    kernel, stride, padding, dilation = op.window()
    if any(d != 1 for d in dilation):
        raise QoptError(f"convert-to-coreml: {where(op)}: dilated pooling is not supported")
    ceil = getattr(op, "ceil_mode", None)
    return {
        "kernel_sizes": _ints(kernel),
        "strides": _ints(stride),
        "pad_type": StringAttr("custom"),
        "pad": _ints((padding[0], padding[0], padding[1], padding[1])),
        "ceil_mode": _bool(ceil is not None and bool(ceil.value.data)),
    }


@rule(layers.MaxPool2dOp)
def _max_pool(lw: Lowering, op: Operation) -> Sequence[SSAValue]:
    assert isinstance(op, layers.MaxPool2dOp)
    if any(v.uses for v in op.indices):
        raise QoptError(f"convert-to-coreml: {where(op)}: max_pool2d indices are not supported")
    out = mil_tensor(op.result.type)
    value = lw.build(coreml.MaxPoolOp, [op.input], out, **_pool_props(op))
    return [value] * len(op.results)


@rule(layers.AvgPool2dOp)
def _avg_pool(lw: Lowering, op: Operation) -> Sequence[SSAValue]:
    assert isinstance(op, layers.AvgPool2dOp)
    if op.divisor_override is not None:
        raise QoptError(f"convert-to-coreml: {where(op)}: divisor_override is not supported")
    include = op.count_include_pad is None or bool(op.count_include_pad.value.data)
    props = _pool_props(op) | {"exclude_padding_from_average": _bool(not include)}
    return [lw.build(coreml.AvgPoolOp, [op.input], mil_tensor(op.result.type), **props)]


@rule(layers.AdaptiveAvgPool2dOp)
def _adaptive_avg_pool(lw: Lowering, op: Operation) -> Sequence[SSAValue]:
    assert isinstance(op, layers.AdaptiveAvgPool2dOp)
    x = op.input
    h, w = _shape(x)[-2:]
    oh, ow = _shape(op.result)[-2:]
    out = mil_tensor(op.result.type)
    if (oh, ow) == (1, 1):
        rank = len(_shape(x))
        axes = _ints((rank - 2, rank - 1))
        return [lw.build(coreml.ReduceMeanOp, [x], out, axes=axes, keep_dims=_bool(True))]
    if h % oh or w % ow:
        raise QoptError(
            f"convert-to-coreml: {where(op)}: adaptive pooling to {oh}x{ow} needs input "
            f"sizes divisible by it (got {h}x{w})"
        )
    kernel = _ints((h // oh, w // ow))
    return [
        lw.build(
            coreml.AvgPoolOp,
            [x],
            out,
            kernel_sizes=kernel,
            strides=kernel,
            pad_type=StringAttr("valid"),
            pad=_ints((0, 0, 0, 0)),
            ceil_mode=_bool(False),
            exclude_padding_from_average=_bool(False),
        )
    ]


@rule(layers.ScaledDotProductAttentionOp)
def _sdpa(lw: Lowering, op: Operation) -> Sequence[SSAValue]:
    assert isinstance(op, layers.ScaledDotProductAttentionOp)
    q, k, v = op.query, op.key, op.value
    out = mil_tensor(op.result.type)
    e = _shape(q)[-1]
    length, source = _shape(q)[-2], _shape(k)[-2]
    mask = op.attn_mask
    if op.is_causal is not None and bool(op.is_causal.value.data):
        if mask is not None:
            raise QoptError(f"convert-to-coreml: {where(op)}: is_causal with attn_mask")
        mask = lw.const(np.tril(np.ones((length, source), np.bool_)), i1, "causal_mask")
    if op.scale is not None and not math.isclose(op.scale.value.data, 1 / math.sqrt(e)):
        factor = op.scale.value.data * math.sqrt(e)
        q = lw.build(coreml.MulOp, [q, lw.scalar(factor, q)], q.type)
    if lw.opset >= 18:
        return [lw.build(coreml.ScaledDotProductAttentionOp, [q, k, v, mask], out)]
    # Before iOS18: the decomposition coremltools itself uses.
    scores_type = TensorType(f32, [*_shape(q)[:-1], source])
    f = _bool(False)
    scores = lw.build(coreml.MatmulOp, [q, k], scores_type, transpose_x=f, transpose_y=_bool(True))
    scores = lw.build(coreml.MulOp, [scores, lw.scalar(1 / math.sqrt(e), scores)], scores_type)
    if mask is not None:
        if _elem(mask) == i1:
            scores = lw.build(
                coreml.SelectOp, [mask, scores, lw.scalar(-math.inf, scores)], scores_type
            )
        else:
            scores = lw.build(coreml.AddOp, [scores, mask], scores_type)
    probs = lw.build(coreml.SoftmaxOp, [scores], scores_type, axis=_int(-1))
    return [lw.build(coreml.MatmulOp, [probs, v], out, transpose_x=f, transpose_y=f)]


# ----- activations, rounding, logs and index reductions ---------------------------------

_BOOL = i1


def _float_input(lw: Lowering, op: Operation) -> tuple[SSAValue, TensorType]:
    """The input of a float-valued unary op in the result's float type (torch's
    `log` / `reciprocal` of an integer tensor computes in float)."""
    out = mil_tensor(op.results[0].type)
    elem = out.get_element_type()
    name = coreml.mil_dtype_name(elem)
    if name not in ("fp16", "fp32"):
        raise QoptError(
            f"convert-to-coreml: {where(op)}: the result is a {name} tensor; CoreML lowers "
            f"{op.name.removeprefix('aten.')} on fp16 / fp32 tensors only: cast the input "
            "to float first"
        )
    return lw.as_elem(op.operands[0], elem), out


def _bool_like(value: SSAValue) -> TensorType:
    return TensorType(_BOOL, _shape(value))


@rule(ew.HardsigmoidOp, ew.HardswishOp)
def _hard_activation(lw: Lowering, op: Operation) -> Sequence[SSAValue]:
    """`hardsigmoid(x) = clamp(x + 3, 0, 6) / 6` is MIL `sigmoid_hard(x, alpha=1/6,
    beta=0.5)` = `clip(x / 6 + 0.5, 0, 1)`; `hardswish(x) = x * hardsigmoid(x)` is a
    `mul` with it (coremltools' MIL has no hardswish op in any opset up to iOS18).
    The two forms round differently: a few ulp from torch (measured in
    tests/unit/test_coreml_ops.py)."""
    x, out = _float_input(lw, op)
    gate = lw.build(coreml.SigmoidHardOp, [x], out, alpha=_float(1.0 / 6.0), beta=_float(0.5))
    if isinstance(op, ew.HardsigmoidOp):
        return [gate]
    return [lw.build(coreml.MulOp, [x, gate], out)]


@rule(ew.LeakyReluOp)
def _leaky_relu(lw: Lowering, op: Operation) -> Sequence[SSAValue]:
    """MIL `leaky_relu` with `alpha = negative_slope` (torch's default 0.01)."""
    assert isinstance(op, ew.LeakyReluOp)
    x, out = _float_input(lw, op)
    slope = 0.01 if op.negative_slope is None else float(op.negative_slope.value.data)
    return [lw.build(coreml.LeakyReluOp, [x], out, alpha=_float(slope))]


@rule(ew.LogOp)
def _log(lw: Lowering, op: Operation) -> Sequence[SSAValue]:
    """MIL `log` with epsilon 0 (its default 1e-45 would make log(0) finite)."""
    x, out = _float_input(lw, op)
    return [lw.build(coreml.LogOp, [x], out, epsilon=_float(0.0))]


@rule(ew.ReciprocalOp)
def _reciprocal(lw: Lowering, op: Operation) -> Sequence[SSAValue]:
    """MIL `inverse` with epsilon 0 (its default 1e-4 would shift every value)."""
    x, out = _float_input(lw, op)
    return [lw.build(coreml.InverseOp, [x], out, epsilon=_float(0.0))]


@rule(ew.AbsOp)
def _abs(lw: Lowering, op: Operation) -> Sequence[SSAValue]:
    x = op.operands[0]
    name = coreml.mil_dtype_name(_elem(x))
    if name not in coreml.FI:
        raise QoptError(
            f"convert-to-coreml: {where(op)}: abs of a {name} tensor has no CoreML lowering "
            "(MIL abs takes fp16, fp32 or int32): cast the input first"
        )
    return [lw.build(coreml.AbsOp, [x], mil_tensor(op.results[0].type))]


@rule(ew.FloorOp, ew.CeilOp)
def _floor_ceil(lw: Lowering, op: Operation) -> Sequence[SSAValue]:
    """MIL `floor` / `ceil`; of an integer tensor they are the input, as in torch."""
    x = op.operands[0]
    if isinstance(_elem(x), IntegerType):
        return [x]
    cls = coreml.FloorOp if isinstance(op, ew.FloorOp) else coreml.CeilOp
    return [lw.build(cls, [x], mil_tensor(op.results[0].type))]


@rule(ew.RoundOp)
def _round(lw: Lowering, op: Operation) -> Sequence[SSAValue]:
    """torch rounds halves to even. MIL `round` leaves halves to the backend (the
    spec's "0.5 is rounded to 0"; Apple: X.5 may go up or down depending on the
    compute unit, webmachinelearning/webnn#817), so round is composed from exact
    steps: `f = floor(x)`, `d = x - f` (exact), `f + 1` where `d > 0.5`, or where
    `d == 0.5` and f is odd (`floor(f / 2) != f / 2`), else `f`. NaN and +-inf
    pass through; a negative result that rounds to zero is +0 where torch has -0.
    Integer tensors are their input."""
    x = op.operands[0]
    if isinstance(_elem(x), IntegerType):
        return [x]
    out = mil_tensor(op.results[0].type)
    flags = TensorType(_BOOL, out.get_shape())
    floor = lw.build(coreml.FloorOp, [x], out)
    frac = lw.build(coreml.SubOp, [x, floor], out)
    half = lw.scalar(0.5, x)
    above = lw.build(coreml.GreaterOp, [frac, half], flags)
    tie = lw.build(coreml.EqualOp, [frac, half], flags)
    halved = lw.build(coreml.MulOp, [floor, half], out)
    odd = lw.build(coreml.NotEqualOp, [lw.build(coreml.FloorOp, [halved], out), halved], flags)
    odd_tie = lw.build(coreml.LogicalAndOp, [tie, odd], flags)
    bump = lw.build(coreml.LogicalOrOp, [above, odd_tie], flags)
    up = lw.build(coreml.AddOp, [floor, lw.scalar(1.0, x)], out)
    return [lw.build(coreml.SelectOp, [bump, up, floor], out)]


@rule(ew.RemainderOp)
def _remainder(lw: Lowering, op: Operation) -> Sequence[SSAValue]:
    """torch's `remainder` has the sign of the divisor (floor-mod, computed as
    `m = fmod(x, y)`, then `m + y` where `m != 0` and its sign differs from y's).
    MIL `mod` is Python's `%` in coremltools' definition, but its device tests
    use positive operands only, so the sign fix-up is emitted too: it is exact
    whether the backend computes floor-mod (never fires) or fmod. With a constant
    divisor of one sign the fix-up is one comparison."""
    out = mil_tensor(op.results[0].type)
    elem = out.get_element_type()
    name = coreml.mil_dtype_name(elem)
    if name not in coreml.FI:
        raise QoptError(
            f"convert-to-coreml: {where(op)}: remainder on {name} tensors has no CoreML "
            "lowering (MIL mod takes fp16, fp32 or int32): cast the operands first"
        )
    x, y = (lw.as_elem(v, elem) for v in op.operands)
    flags = TensorType(_BOOL, out.get_shape())
    rem = lw.build(coreml.ModOp, [x, y], out)
    zero = lw.scalar(0, rem)
    divisor = lw.array(y)
    if divisor is not None and np.all(divisor > 0):
        fix = lw.build(coreml.LessOp, [rem, zero], flags)
    elif divisor is not None and np.all(divisor < 0):
        fix = lw.build(coreml.GreaterOp, [rem, zero], flags)
    else:
        nonzero = lw.build(coreml.NotEqualOp, [rem, zero], flags)
        rem_negative = lw.build(coreml.LessOp, [rem, zero], flags)
        y_negative = lw.build(coreml.LessOp, [y, lw.scalar(0, y)], _bool_like(y))
        signs = lw.build(coreml.LogicalXorOp, [rem_negative, y_negative], flags)
        fix = lw.build(coreml.LogicalAndOp, [nonzero, signs], flags)
    shifted = lw.build(coreml.AddOp, [rem, y], out)
    return [lw.build(coreml.SelectOp, [fix, shifted, rem], out)]


@rule(ew.MaskedFillOp)
def _masked_fill(lw: Lowering, op: Operation) -> Sequence[SSAValue]:
    """`select(mask, value, input)`: the 0-d value (a constant in the input's type,
    or a run-time 0-d tensor cast to it) broadcasts against the input, which has
    the result's shape, so coremltools types the select from its branches."""
    assert isinstance(op, ew.MaskedFillOp)
    out = mil_tensor(op.result.type)
    elem = out.get_element_type()
    name = coreml.mil_dtype_name(elem)
    if name not in ("fp16", "fp32", "int32", "bool"):
        raise QoptError(
            f"convert-to-coreml: {where(op)}: masked_fill of a {name} tensor has no CoreML "
            "lowering (MIL select takes fp16, fp32, int32 or bool): cast the input first"
        )
    x = lw.as_elem(op.input, elem)
    if (array := lw.array(op.value)) is not None:
        value = lw.const(np.asarray(array).reshape(()).astype(storage_dtype(elem)), elem, "fill")
    else:
        value = lw.as_elem(op.value, elem)
    return [lw.build(coreml.SelectOp, [op.mask, value, x], out)]


@rule(reduction.LogSoftmaxOp)
def _log_softmax(lw: Lowering, op: Operation) -> Sequence[SSAValue]:
    """`(x - max) - log(sum(exp(x - max)))` along dim, torch's order (MIL has no
    log_softmax, and `log(softmax(x))` underflows to -inf for large negative
    logits): reduce_max, sub, exp, reduce_sum, log (epsilon 0), sub."""
    assert isinstance(op, reduction.LogSoftmaxOp)
    x, out = _float_input(lw, op)
    dims = _shape(x)
    axis = op.dim.value.data % len(dims)
    kept = TensorType(out.get_element_type(), [1 if i == axis else d for i, d in enumerate(dims)])
    axes, keep = _ints([axis]), _bool(True)
    top = lw.build(coreml.ReduceMaxOp, [x], kept, axes=axes, keep_dims=keep)
    shifted = lw.build(coreml.SubOp, [x, top], out)
    exp = lw.build(coreml.ExpOp, [shifted], out)
    total = lw.build(coreml.ReduceSumOp, [exp], kept, axes=axes, keep_dims=keep)
    log_total = lw.build(coreml.LogOp, [total], kept, epsilon=_float(0.0))
    return [lw.build(coreml.SubOp, [shifted, log_total], out)]


@rule(reduction.ArgmaxOp, reduction.ArgminOp)
def _arg_extreme(lw: Lowering, op: Operation) -> Sequence[SSAValue]:
    """torch's argmax / argmin: the first index of the extreme, and the first NaN
    where a slice has one. MIL `reduce_argmax` / `reduce_argmin` leave ties
    unspecified ("the identity of the return value is not guaranteed"), so the
    index is composed: `hit = x == reduce_max(x)` (a NaN slice: `hit = x != x`),
    then `reduce_min(select(hit, iota, n))` over the dim, in int32 (the int64
    result is int32 in MIL, as every integer result). No dim: the flattened
    input."""
    assert isinstance(op, reduction.ArgmaxOp | reduction.ArgminOp)
    x = op.input
    name = coreml.mil_dtype_name(_elem(x))
    if name not in coreml.FI:
        raise QoptError(
            f"convert-to-coreml: {where(op)}: {op.name.removeprefix('aten.')} of a {name} "
            "tensor has no CoreML lowering (MIL reductions take fp16, fp32 or int32): cast "
            "the input first"
        )
    out = mil_tensor(op.result.type)
    dims = _shape(x)
    keep = op.keepdim is not None and bool(op.keepdim.value.data)
    if not dims or math.prod(dims) == 0:
        raise QoptError(
            f"convert-to-coreml: {where(op)}: {op.name.removeprefix('aten.')} of a tensor "
            f"of shape {list(dims)} is not supported (Core ML reduces non-empty tensors of "
            "rank 1 or more): reshape the input to 1-D first"
        )
    if op.dim is None:
        numel = math.prod(dims)
        if len(dims) != 1:
            x = lw.build(coreml.ReshapeOp, [x], TensorType(_elem(x), [numel]), shape=_ints([numel]))
        dims, axis = (numel,), 0
    else:
        axis = op.dim.value.data % len(dims)
    elem = _elem(x)
    n = dims[axis]
    kept = [1 if i == axis else d for i, d in enumerate(dims)]
    axes = _ints([axis])
    flags = TensorType(_BOOL, dims)
    reduce = coreml.ReduceMaxOp if isinstance(op, reduction.ArgmaxOp) else coreml.ReduceMinOp
    extreme = lw.build(reduce, [x], TensorType(elem, kept), axes=axes, keep_dims=_bool(True))
    hit = lw.build(coreml.EqualOp, [x, extreme], flags)
    if coreml.mil_dtype_name(elem) != "int32":
        nan = lw.build(coreml.NotEqualOp, [x, x], flags)
        nan_count = lw.as_elem(nan, i32)
        has_nan = lw.build(
            coreml.ReduceMaxOp, [nan_count], TensorType(i32, kept), axes=axes, keep_dims=_bool(True)
        )
        hit = lw.build(coreml.SelectOp, [lw.as_elem(has_nan, _BOOL), nan, hit], flags)
    iota_shape = [1] * len(dims)
    iota_shape[axis] = n
    iota = lw.const(np.arange(n, dtype=np.int32).reshape(iota_shape), i32, "arg_index")
    iota = lw.broadcast_to(op, iota, dims)
    missing = lw.const(np.asarray(n, np.int32), i32, "arg_size")
    candidates = lw.build(coreml.SelectOp, [hit, iota, missing], TensorType(i32, dims))
    result_shape = tuple(out.get_shape())
    if op.dim is not None or not keep:
        reduced = lw.build(coreml.ReduceMinOp, [candidates], out, axes=axes, keep_dims=_bool(keep))
        return [reduced]
    first = lw.build(
        coreml.ReduceMinOp, [candidates], TensorType(i32, [1]), axes=axes, keep_dims=_bool(True)
    )
    return [lw.build(coreml.ReshapeOp, [first], out, shape=_ints(result_shape))]


# ----- qfused ----------------------------------------------------------------------------


@rule(qfused.LinearOp)
def _qlinear(lw: Lowering, op: Operation) -> Sequence[SSAValue]:
    assert isinstance(op, qfused.LinearOp)
    x = lw.fused_input(op, op.input, op.act)
    w = lw.fused_weight(op)
    y = lw.linear(x, w, op.bias, TensorType(f32, _shape(op.result)))
    return [lw.fused_output(op, y)]


@rule(qfused.Conv2dOp)
def _qconv(lw: Lowering, op: Operation) -> Sequence[SSAValue]:
    assert isinstance(op, qfused.Conv2dOp)
    x = lw.fused_input(op, op.input, op.act)
    w = lw.fused_weight(op)
    y = _conv(lw, op, x, w, op.bias, TensorType(f32, _shape(op.result)))
    return [lw.fused_output(op, y)]


@rule(qfused.EmbeddingOp)
def _qembedding(lw: Lowering, op: Operation) -> Sequence[SSAValue]:
    assert isinstance(op, qfused.EmbeddingOp)
    w = lw.fused_weight(op)
    out = TensorType(f32, _shape(op.result))
    return [lw.build(coreml.GatherOp, [w, lw.to_int32(op.indices)], out, axis=_int(0))]


@rule(qfused.AddOp)
def _qadd(lw: Lowering, op: Operation) -> Sequence[SSAValue]:
    assert isinstance(op, qfused.AddOp)
    a = lw.fused_input(op, op.lhs, op.lhs_act)
    b = lw.fused_input(op, op.rhs, op.rhs_act)
    if op.alpha is not None and op.alpha.value.data != 1.0:
        b = lw.build(coreml.MulOp, [b, lw.scalar(op.alpha.value.data, b)], b.type)
    y = lw.build(coreml.AddOp, [a, b], TensorType(f32, _shape(op.result)))
    return [lw.fused_output(op, y)]


# ----- leftover quant ops ---------------------------------------------------------------


def _per_tensor(lw: Lowering, op: Operation, scale_v: SSAValue, zp_v: SSAValue | None):
    scale = lw.const_of(scale_v, op, "the activation scale")
    zp = np.zeros(()) if zp_v is None else lw.const_of(zp_v, op, "the activation zero point")
    if scale.size != 1 or zp.size != 1:
        raise QoptError(
            f"convert-to-coreml: {where(op)}: only per-tensor activation quantization "
            "lowers to Core ML quantize/dequantize"
        )
    return float(scale.reshape(())), int(zp.reshape(()))


def _is_dynamic(op: Operation) -> bool:
    return isinstance(op, quant.QuantizeOp) and isinstance(op.scale.owner, quant.ChooseQParamsOp)


@rule(quant.ChooseQParamsOp)
def _choose(lw: Lowering, op: Operation) -> None:
    """Dynamic parameters: Core ML computes these activations in float (deferred,
    erased once the dequantize that consumes the chain is lowered)."""
    return None


@rule(quant.QuantizeOp)
def _quantize(lw: Lowering, op: Operation) -> Sequence[SSAValue] | None:
    assert isinstance(op, quant.QuantizeOp)
    if _is_dynamic(op):
        lw.float_of[op.output] = op.input
        return None
    if lw.array(op.input) is not None:
        raise QoptError(f"convert-to-coreml: {where(op)}: quantizing a constant is not supported")
    scale, zp = _per_tensor(lw, op, op.scale, op.zero_point)
    return [lw.quantize(op, op.input, scale, zp, op.qmin.value.data, op.qmax.value.data)]


@rule(quant.DequantizeOp)
def _dequantize(lw: Lowering, op: Operation) -> Sequence[SSAValue]:
    assert isinstance(op, quant.DequantizeOp)
    if (x := lw.float_of.get(op.input)) is not None:
        return [x]  # dynamic activation: float on Core ML
    data = lw.array(op.input)
    if data is None:
        scale, zp = _per_tensor(lw, op, op.scale, op.zero_point)
        return [lw.dequantize(op, op.input, scale, zp)]
    # A constant weight: keep it compressed (and store it once however often it is used).
    block = quant.resolve_block_size(op.block_size.get_values(), data.shape)
    grid = quant.reduced_shape(block, data.shape)
    scale = lw.const_of(op.scale, op, "the weight scale").reshape(grid)
    zp = None
    if op.zero_point is not None:
        zp = lw.const_of(op.zero_point, op, "the weight zero point").reshape(grid)
        zp = None if not np.any(zp) else zp
    key = (
        op.input,
        scale.astype(np.float32).tobytes(),
        None if zp is None else zp.tobytes(),
        op.qmin.value.data,
        op.qmax.value.data,
        tuple(block),
    )
    if key in lw.weights:
        return [lw.weights[key]]
    scheme = qfused.AffineWeightAttr.get(op.qmin.value.data, op.qmax.value.data, block)
    lw.weights[key] = lw.weight(op, scheme, data, scale.astype(np.float32), zp)
    return [lw.weights[key]]


@rule(quant.DequantizeCodebookOp)
def _dequantize_codebook(lw: Lowering, op: Operation) -> Sequence[SSAValue]:
    assert isinstance(op, quant.DequantizeCodebookOp)
    codes = lw.const_of(op.codes, op, "codebook codes")
    book = lw.const_of(op.codebook, op, "the codebook")
    scheme = qfused.LutWeightAttr.get(op.nbits.value.data, op.block_size.get_values())
    return [lw.lut_weight(op, scheme, codes, book)]


@dataclass(frozen=True)
class ConvertToCoremlPass(ModulePass):
    """aten + qfused (+ quant) -> coreml, for a minimum deployment target."""

    name = "convert-to-coreml"

    target: str = "iOS18"
    """Minimum deployment target: iOS16, iOS17 or iOS18."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        try:
            opset = opset_number(self.target)
        except ValueError as e:
            raise QoptError(f"convert-to-coreml: {e}") from None
        if opset < 16:
            raise QoptError("convert-to-coreml: the minimum target is iOS16")
        for func in list(op.ops):
            if isinstance(func, FuncOp):
                Lowering(func, opset, self.target).run()


__all__ = ["RULES", "ConvertToCoremlPass", "mil_elem", "numpy_dtype"]
