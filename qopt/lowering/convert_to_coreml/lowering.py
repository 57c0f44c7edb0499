"""The machinery of `convert-to-coreml`: the pass, the `Lowering` builder that
rebuilds one function op by op, and the rule tables' type (`RuleTable`).

The rules live in one module per op family (`elementwise`, `nn`, `shape`,
`reduction`, `layers`, `qfused`, `quant`: the aten dialect's families and the
quantized levels), each with a `RULES` table keyed by op class; `get_rules`
merges them (a class ruled twice is an error). Every coreml op a rule creates
carries the location of the op it lowers, so errors at the coreml level (the
verifier, the emitter) name the user's source line.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    AnyFloat,
    BytesAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    Float64Type,
    FloatAttr,
    FunctionType,
    IntegerAttr,
    IntegerType,
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
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.rewriter import Rewriter

from qopt.dialects import coreml, qfused
from qopt.dialects.aten import nn
from qopt.dialects.coreml import OPSET_ATTR, storage_dtype
from qopt.dialects.coreml.queries import const_array
from qopt.dialects.tensors import elem_of, shape_of
from qopt.dtypes import element_type
from qopt.errors import QoptError, where
from qopt.lowering import rules
from qopt.lowering.convert_to_coreml.rank import collapse_high_rank
from qopt.numerics.bits import pack_bits
from qopt.numerics.quant import reciprocal
from qopt.resources import make_resource, printable_inline, weights_of

ui8 = IntegerType(8, Signedness.UNSIGNED)


def ints(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, [int(v) for v in values])


def int_attr(value: int) -> IntegerAttr:
    return IntegerAttr(int(value), i64)


def bool_attr(value: bool) -> IntegerAttr:
    return IntegerAttr(int(bool(value)), i1)


def bools(values: Sequence[bool]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i1, [bool(v) for v in values])


def float_attr(value: float) -> FloatAttr:
    return FloatAttr(float(value), 64)


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

    def __init__(
        self,
        func: FuncOp,
        opset: int,
        target: str,
        rules: Rules,
        dynamic_activations: str = "quantized",
    ):
        self.func = func
        self.opset = opset
        self.target = target
        self.rules = rules
        self.dynamic_activations = dynamic_activations
        """"quantized": dynamic activation quantizers as torch computes them (MIL
        float ops); "float": the activations stay float (faster, not torch's values)."""
        self.source: Operation | None = None
        """The op being lowered: every op its rule emits takes its location."""
        self.new_ops: list[Operation] = []
        self.full_precision: dict[SSAValue, np.ndarray] = {}
        self.float_of: dict[SSAValue, SSAValue] = {}
        """Dynamic-quantized values (quant.quantize results) -> their float input."""
        self.weights: dict[tuple[object, ...], SSAValue] = {}
        """Constant-weight dequantizes already lowered, by (data, scale, zero point,
        range, block): a weight the model uses several times is stored once."""
        self.memo: dict[tuple[object, ...], SSAValue] = {}
        """Values a rule derives from an earlier value and reuses (a run-time index
        made non-negative, read by every cache write and mask lookup): defined
        before every later op, as rules run in program order."""

    # ----- building blocks ------------------------------------------------------------

    def emit(self, op: Operation) -> SSAValue:
        if self.source is not None:
            op.location = self.source.location
        self.new_ops.append(op)
        return op.results[0]

    def const(self, array: np.ndarray, elem: Attribute | None = None, hint: str = "c") -> SSAValue:
        array = np.asarray(array, order="C")
        elem = element_type(array.dtype) if elem is None else elem
        if not isinstance(elem, AnyFloat | IntegerType):
            raise QoptError(f"convert-to-coreml: a constant of element type {elem}")
        type = TensorType(elem, list(array.shape))
        width = elem.width.data if isinstance(elem, IntegerType) else 32
        if array.size <= 16 and width >= 8 and printable_inline(np.asarray(array)):
            value: Attribute = DenseIntOrFPElementsAttr(type, BytesAttr(array.tobytes()))
        else:
            value = make_resource(hint, array, type, weights_of(self.func))
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
        return self.const(np.asarray(value, storage_dtype(elem_of(like))))

    def to_int32(self, value: SSAValue) -> SSAValue:
        if elem_of(value) == i32:
            return value
        type = TensorType(i32, shape_of(value))
        return self.build(coreml.CastOp, [value], type, dtype=StringAttr("int32"))

    def as_elem(self, value: SSAValue, elem: Attribute) -> SSAValue:
        """`value` with element type `elem`: a constant is converted at compile time,
        anything else gets a `cast`."""
        if elem_of(value) == elem:
            return value
        if (array := self.array(value)) is not None:
            return self.const(array.astype(storage_dtype(elem)), elem)
        name = coreml.mil_dtype_name(elem)
        allowed = ("fp16", "fp32", "int32", "bool")
        if self.opset >= 17:
            allowed += ("int8", "uint8", "int16", "uint16")
        if name not in allowed:
            subject = "an op" if self.source is None else where(self.source)
            raise QoptError(
                f"convert-to-coreml: {subject}: an operand must be cast to {name}, which MIL "
                f"cast cannot produce on {self.target} (it casts to {', '.join(allowed)})"
            )
        type = TensorType(elem, shape_of(value))
        return self.build(coreml.CastOp, [value], type, dtype=StringAttr(name))

    def broadcast_to(self, op: Operation, x: SSAValue, shape: Sequence[int]) -> SSAValue:
        """`x` broadcast to `shape` (numpy rules): a `reshape` to the rank of `shape`
        (leading 1s), then MIL `tile` of the size-1 dims (fp16, fp32, int32, bool)."""
        src, dst = shape_of(x), tuple(shape)
        elem = elem_of(x)
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
            x = self.build(coreml.ReshapeOp, [x], TensorType(elem, ranked), shape=ints(ranked))
        reps = [d if s == 1 else 1 for s, d in zip(ranked, dst, strict=True)]
        if all(r == 1 for r in reps):
            return x
        return self.build(coreml.TileOp, [x], TensorType(elem, dst), reps=ints(reps))

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
            data_v = self.const(
                data.astype(storage_dtype(storage), copy=False), storage, "weight_data"
            )
            scale_v = self.const(
                scale.astype(np.float32, copy=False).reshape(grid), f32, "weight_scale"
            )
            offset = None
            if zero_point is not None and np.any(zero_point):
                offset = self.const(
                    zero_point.reshape(grid).astype(storage_dtype(storage), copy=False),
                    storage,
                    "weight_zp",
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
        data_v = self.const(data.astype(storage_dtype(storage), copy=False), storage, "weight_data")
        zp = zp.reshape(flat).astype(storage_dtype(storage), copy=False)
        zp_v = self.const(zp, storage, "weight_zp")
        scale_v = self.const(
            scale.reshape(flat).astype(np.float32, copy=False), f32, "weight_scale"
        )
        return self.build(
            coreml.ConstexprAffineDequantizeOp, [data_v, zp_v, scale_v], out, axis=int_attr(axis)
        )

    def lut_weight(
        self, op: Operation, scheme: qfused.LutWeightAttr, codes: np.ndarray, book: np.ndarray
    ) -> SSAValue:
        nbits = scheme.nbits.data
        out = TensorType(f32, codes.shape)
        lut = book.astype(np.float32, copy=False)
        if self.opset >= 18:
            storage = IntegerType(nbits, Signedness.UNSIGNED)
            idx = self.const(codes.astype(np.uint8, copy=False), storage, "lut_indices")
            return self.build(coreml.ConstexprLutToDenseOp, [idx, self.const(lut, f32, "lut")], out)
        if any(g != 1 for g in lut.shape[:-2]) or lut.shape[-1] != 1:
            raise self.unsupported(op, scheme, "per-block palettes need iOS18")
        if nbits not in (1, 2, 4, 6, 8):
            raise self.unsupported(op, scheme, f"{nbits}-bit palettes need iOS18")
        packed = self.const(pack_bits(codes, nbits), ui8, "lut_indices")
        table = self.const(lut.reshape(-1), f32, "lut")
        return self.build(
            coreml.ConstexprLutToDenseOp, [packed, table], out, shape=ints(codes.shape)
        )

    def fused_weight(self, op: qfused.QFusedOp) -> SSAValue:
        weight = op.operands[1]
        data = self.const_of(weight, op, "weight data")
        scale = self.const_of(op.operands[2], op, "weight scale")
        zp_value = getattr(op, "zero_point", None)
        zp = None if zp_value is None else self.const_of(zp_value, op, "weight zero point")
        return self.weight(op, getattr(op, "weight_scheme"), data, scale, zp)

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
        """torch's `clamp(rne(x * f(1 / scale)) + zp, qmin, qmax)`: MIL's `quantize`
        divides by its scale, and `x / scale` differs from `x * f32(1 / scale)` in the
        last bit for some x, which moves a value on a rounding tie one step. So the
        multiply is written out (`mul` by torch's reciprocal, in x's type) and the
        `quantize` gets scale 1 (`v / 1 == v` exactly); a range narrower than the
        type's clips the scaled value to the integers `[qmin - zp, qmax - zp]`
        (clipping before rounding to integer bounds equals clamping after it)."""
        self.need_opset(op, 17, "static activation quantization (quantize)")
        act = qfused.StaticQParamsAttr.get(scale, zp, qmin, qmax)
        dtype = self.act_dtype(op, act)
        lo, hi = coreml.int_bounds(dtype)
        inverse = reciprocal(np.float64(scale), storage_dtype(elem_of(x)))
        x = self.build(coreml.MulOp, [x, self.scalar(float(inverse), x)], x.type)
        if (qmin, qmax) != (lo, hi):  # MIL clips to the full type range only
            x = self.build(
                coreml.ClipOp,
                [x],
                x.type,
                alpha=float_attr(float(qmin - zp)),
                beta=float_attr(float(qmax - zp)),
            )
        np_dtype = storage_dtype(dtype)
        zp_v = self.const(np.asarray(zp, np_dtype), dtype)
        scale_v = self.const(np.asarray(1.0, np.float32), f32)
        out = TensorType(dtype, shape_of(x))
        return self.build(
            coreml.QuantizeOp,
            [x, zp_v, scale_v],
            out,
            output_dtype=StringAttr(coreml.mil_dtype_name(dtype)),
        )

    def dequantize(self, op: Operation, q: SSAValue, scale: float, zp: int) -> SSAValue:
        self.need_opset(op, 17, "static activation quantization (dequantize)")
        zp_v = self.const(np.asarray(zp, storage_dtype(elem_of(q))), elem_of(q))
        scale_v = self.const(np.asarray(scale, np.float32), f32)
        return self.build(coreml.DequantizeOp, [q, zp_v, scale_v], TensorType(f32, shape_of(q)))

    def fused_input(self, op: Operation, x: SSAValue, act: Attribute | None) -> SSAValue:
        if isinstance(act, qfused.StaticQParamsAttr):
            s, z = act.scale.value.data, act.zero_point.data
            if isinstance(elem_of(x), IntegerType):
                return self.dequantize(op, x, s, z)
            q = self.quantize(op, x, s, z, act.qmin.data, act.qmax.data)
            return self.dequantize(op, q, s, z)
        if isinstance(act, qfused.DynamicQParamsAttr) and self.dynamic_activations == "quantized":
            return self.dynamic_activation(op, x, act)
        return x  # weight-only, or dynamic activations left in float (the fast option)

    def round_half_to_even(self, x: SSAValue) -> SSAValue:
        """torch's rounding (halves to even) of a float tensor from exact MIL steps
        (MIL `round` leaves halves to the compute unit): `f = floor(x)`, `d = x - f`,
        `f + 1` where `d > 0.5`, or where `d == 0.5` and f is odd, else `f`."""
        out = x.type
        flags = TensorType(i1, shape_of(x))
        floor = self.build(coreml.FloorOp, [x], out)
        frac = self.build(coreml.SubOp, [x, floor], out)
        half = self.scalar(0.5, x)
        above = self.build(coreml.GreaterOp, [frac, half], flags)
        tie = self.build(coreml.EqualOp, [frac, half], flags)
        halved = self.build(coreml.MulOp, [floor, half], out)
        odd = self.build(
            coreml.NotEqualOp, [self.build(coreml.FloorOp, [halved], out), halved], flags
        )
        odd_tie = self.build(coreml.LogicalAndOp, [tie, odd], flags)
        bump = self.build(coreml.LogicalOrOp, [above, odd_tie], flags)
        up = self.build(coreml.AddOp, [floor, self.scalar(1.0, x)], out)
        return self.build(coreml.SelectOp, [bump, up, floor], out)

    def dynamic_activation(
        self, op: Operation, x: SSAValue, act: qfused.DynamicQParamsAttr
    ) -> SSAValue:
        """`x` quantized and dequantized as torch does at run time, in MIL float ops:
        choose_qparams per token (last dim) or per tensor (`qopt.numerics.quant.
        choose_qparams`: min/max with 0, scale clamped to eps, the asymmetric zero
        point rounded half to even and clamped), then `clamp(rne(x * (1 / scale)) +
        zp, qmin, qmax)` and `(q - zp) * scale`, every step in f32 as torch."""
        if act.scale_type not in (f32, Float64Type()):
            raise QoptError(
                f"convert-to-coreml: {where(op)}: dynamic activation scales of type "
                f"{act.scale_type} are not supported; compile with "
                "dynamic_activations='float' to compute the activations in float"
            )
        shape = shape_of(x)
        rank = len(shape)
        per_token = act.granularity.data == "per_token"
        axes = [rank - 1] if per_token else list(range(rank))
        reduced = TensorType(elem_of(x), [1 if i in axes else d for i, d in enumerate(shape)])
        qmin, qmax = act.qmin.data, act.qmax.data

        def reduce(cls: type[coreml.CoremlOp]) -> SSAValue:
            return self.build(cls, [x], reduced, axes=ints(axes), keep_dims=bool_attr(True))

        def binary(cls: type[coreml.CoremlOp], a: SSAValue, b: SSAValue) -> SSAValue:
            return self.build(cls, [a, b], reduced)

        zero = self.scalar(0.0, x)
        low = binary(coreml.MinimumOp, reduce(coreml.ReduceMinOp), zero)
        high = binary(coreml.MaximumOp, reduce(coreml.ReduceMaxOp), zero)
        mapping = act.mapping.data
        if mapping == "asymmetric":
            scale = binary(
                coreml.RealDivOp,
                binary(coreml.SubOp, high, low),
                self.scalar(float(qmax - qmin), x),
            )
        elif mapping == "symmetric":
            magnitude = binary(
                coreml.MaximumOp, binary(coreml.MulOp, low, self.scalar(-1.0, x)), high
            )
            scale = binary(coreml.RealDivOp, magnitude, self.scalar(float(qmax - qmin) / 2, x))
        elif mapping == "symmetric_no_clipping_err":
            from_low = binary(coreml.RealDivOp, low, self.scalar(float(qmin), x))
            from_high = binary(coreml.RealDivOp, high, self.scalar(float(qmax), x))
            larger = self.build(
                coreml.GreaterOp, [from_low, from_high], TensorType(i1, reduced.get_shape())
            )
            scale = self.build(coreml.SelectOp, [larger, from_low, from_high], reduced)
        else:
            raise QoptError(f"convert-to-coreml: {where(op)}: unknown dynamic mapping {mapping!r}")
        scale = binary(coreml.MaximumOp, scale, self.scalar(act.eps.value.data, x))
        if mapping == "asymmetric":
            offset = self.round_half_to_even(binary(coreml.RealDivOp, low, scale))
            zp = binary(coreml.SubOp, self.scalar(float(qmin), x), offset)
            zp = self.build(
                coreml.ClipOp, [zp], reduced, alpha=float_attr(qmin), beta=float_attr(qmax)
            )
        else:
            zp = self.scalar(float(int((qmax + qmin + 1) / 2)), x)  # symmetric_zero_point
        inverse = binary(coreml.RealDivOp, self.scalar(1.0, x), scale)
        units = self.build(coreml.MulOp, [x, inverse], x.type)
        q = self.build(coreml.AddOp, [self.round_half_to_even(units), zp], x.type)
        q = self.build(coreml.ClipOp, [q], x.type, alpha=float_attr(qmin), beta=float_attr(qmax))
        return self.build(coreml.MulOp, [self.build(coreml.SubOp, [q, zp], x.type), scale], x.type)

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
                alpha=float_attr(-math.inf if lo is None else lo.value.data),
                beta=float_attr(math.inf if hi is None else hi.value.data),
            )
        requant = getattr(op, "requant", None)
        if requant is None:
            return y
        return self.quantize(
            op, y, requant.scale.value.data, requant.zero_point.data,
            requant.qmin.data, requant.qmax.data,
        )  # fmt: skip

    def float_input(self, op: Operation) -> tuple[SSAValue, TensorType]:
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
        return self.as_elem(op.operands[0], elem), out

    def linear(self, x: SSAValue, w: SSAValue, bias: SSAValue | None, out: Attribute) -> SSAValue:
        """`x @ w.T + bias`. MIL `linear` wants a compile-time weight and bias (and x
        of rank 1 to 3 before iOS17): with a constant weight it is `linear`, as
        coremltools writes it, a missing bias a zero constant shared by every linear
        of that width (`zero_bias`: adding +0.0 changes no value but -0.0, which it
        makes +0.0, as torch's `addmm` of a zero bias would; the bytes are one
        vector per width, not per layer); otherwise `matmul(x, w, transpose_y=True)`,
        plus an `add` of the bias when there is one (torch's order: the product,
        then the bias)."""
        weight_constant = isinstance(w.owner, coreml.CompileTimeOp)
        bias_constant = bias is None or isinstance(bias.owner, coreml.CompileTimeOp)
        if weight_constant and bias_constant and (self.opset >= 17 or 1 <= len(shape_of(x)) <= 3):
            if bias is None:
                int8 = isinstance(x.owner, coreml.DequantizeOp)
                bias = self.zero_bias(shape_of(w)[0], elem_of(x), int8)
            return self.build(coreml.LinearOp, [x, w, bias], out)
        y = self.build(
            coreml.MatmulOp,
            [x, w],
            out,
            transpose_x=bool_attr(False),
            transpose_y=bool_attr(True),
        )
        if bias is None:
            return y
        return self.build(coreml.AddOp, [y, self.as_elem(bias, elem_of(y))], out)

    def zero_bias(self, width: int, elem: Attribute, int8: bool = False) -> SSAValue:
        """A `[width]` zero constant of `elem`, one per (width, elem) in the function
        (the bias of the linears that have none); those of static-activation int8
        regions (`int8`: x is a `dequantize`) apart, as coreml-fp16 keeps them fp32."""
        key = ("zero_bias", width, elem, int8)
        if key not in self.memo:
            self.memo[key] = self.const(np.zeros(width, storage_dtype(elem)), elem, "zero_bias")
        return self.memo[key]

    def conv(
        self,
        op: nn.Conv2dOp | qfused.Conv2dOp,
        x: SSAValue,
        w: SSAValue,
        bias: SSAValue | None,
        out: Attribute,
    ) -> SSAValue:
        """MIL `conv` with the window of `op` (aten or qfused conv2d). A run-time weight
        takes no dilation in coremltools: `compose` dilates it in the graph (static
        shapes); one it leaves is an error naming the op."""
        ph, pw = op.padding.get_values()
        dilation = op.dilation.get_values()
        if any(d != 1 for d in dilation) and not (
            self.array(w) is not None or isinstance(w.owner, coreml.CompileTimeOp)
        ):
            raise QoptError(
                f"convert-to-coreml: {where(op)}: a dilated convolution (dilation "
                f"{list(dilation)}) with a run-time weight has no CoreML lowering "
                "(coremltools supports dilations for constant weights only; qopt dilates "
                "a run-time weight in the graph for static shapes only)"
            )
        pad = [ph, ph, pw, pw]
        x = self.fold_zero_pad(x, pad)
        return self.build(
            coreml.ConvOp,
            [x, w, bias],
            out,
            strides=ints(op.stride.get_values()),
            pad_type=StringAttr("custom"),
            pad=ints(pad),
            dilations=ints(dilation),
            groups=int_attr(op.groups.value.data),
        )

    def fold_zero_pad(self, x: SSAValue, pad: list[int]) -> SSAValue:
        """The input of a conv read through a MIL `pad` of +0.0 on its spatial dims
        only (TF-style "same" padding, MobileNetV2's), with the amounts added to the
        conv's own `pad` ([top, bottom, left, right], updated in place): a conv pads
        with +0.0 too, so the result is the same, one op fewer (coremltools folds it
        the same way). Otherwise `x` as it is."""
        owner = x.owner
        if not isinstance(owner, coreml.PadOp) or len(shape_of(x)) != 4:
            return x
        value = owner.constant_val.value.data
        amounts = list(owner.pad.get_values())
        spatial = amounts[-4:]
        if value != 0.0 or math.copysign(1.0, value) < 0 or any(amounts[:-4]):
            return x
        spatial = [0] * (4 - len(spatial)) + spatial  # a pad of W only lists W
        for i, amount in enumerate(spatial):
            pad[i] += amount
        return owner.x

    # ----- rules ------------------------------------------------------------------------

    def run(self) -> None:
        block = self.func.body.block
        for i, arg in enumerate(block.args):
            if isinstance(arg.type, TensorType) and 0 in shape_of(arg):
                raise QoptError(
                    f"convert-to-coreml: input {i} of @{self.func.sym_name.data} has the "
                    f"zero-size shape {list(shape_of(arg))}; Core ML tensors are never "
                    "empty: export the program without the empty input"
                )
            if elem_of(arg) == i64:
                Rewriter.replace_value_with_new_type(arg, TensorType(i32, shape_of(arg)))
        independent = input_independent_ops(block)
        for op in list(block.ops):
            if isinstance(op, ReturnOp):
                continue
            rule = self.rules.get(type(op))
            if rule is None and op in independent:
                raise QoptError(
                    f"convert-to-coreml: {where(op)} depends on no input (a constant "
                    "computed at run time, e.g. a mask or position table) and Core ML has "
                    "no lowering for it: run fold-constants first, which evaluates it at "
                    "compile time (-p fold-constants,convert-to-coreml, or the qopt-coreml "
                    "pipeline)"
                )
            if rule is None:
                raise QoptError(
                    f"convert-to-coreml: no CoreML lowering for {where(op)}; supported ops: "
                    "see the RULES tables in qopt/lowering/convert_to_coreml/; "
                    f"{vulkan_alternative(op)}"
                )
            self.new_ops = []
            self.source = op
            results = rule(self, op)
            self.source = None
            if results is None:  # deferred: erased once unused
                continue
            Rewriter.replace_op(op, self.new_ops, list(results))
        self.erase_dead()
        collapse_high_rank(self.func, self.erase_dead)
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
                if isinstance(op, ReturnOp | coreml.CoremlUpdateStateOp):
                    continue  # the return and state writes are what the function does
                if any(r.uses for r in op.results):
                    continue
                Rewriter.erase_op(op)
                changed = True


# ----- rule tables ---------------------------------------------------------------------

OpT = TypeVar("OpT", bound=Operation)
Results = Sequence[SSAValue] | None
"""A rule's results: the values replacing the op's results, or None to defer (the
op stays until nothing uses it, then is erased: dynamic quantization chains)."""
Rule = Callable[[Lowering, OpT], Results]
"""A rule lowers one op of its class (the `OpT` it is registered for)."""
Rules = dict[type[Operation], Callable[[Lowering, Any], Results]]


class RuleTable(rules.RuleTable[Lowering, Results]):
    """One family's rules by op class: `@RULES(ew.AddOp, ew.SubOp)` registers a rule
    typed by those classes, `RULES.add(cls, rule)` one built by a factory
    (qopt/lowering/rules.py). A class ruled twice is an error, here and when
    `get_rules` merges the families."""

    pass_name = "convert-to-coreml"


__all__ = ["Lowering", "Results", "Rule", "RuleTable", "Rules", "mil_elem", "mil_tensor"]


def vulkan_alternative(op: Operation) -> str:
    """Which target would run `op`, for the error of an op without a CoreML lowering
    (CoreML has no host fallback). The Vulkan side is imported on this error path
    only: a CoreML compile loads no vkc dialect."""
    from qopt.dialects import vkc
    from qopt.lowering.convert_to_vkc import get_rules as vulkan_rules

    if type(op) in vulkan_rules():
        return "the Vulkan target has a kernel for it (qopt.compile(..., target='vulkan'))"
    if vkc.host_op_allowed(op.name):
        return (
            "CoreML has no host fallback; the Vulkan target runs it on the host with "
            "fallback=True (qopt.compile(..., target='vulkan', fallback=True), "
            "qopt-opt --host-fallback)"
        )
    return "no other target runs it either: rewrite the model without it"


def input_independent_ops(block: Block) -> set[Operation]:
    """The aten ops of `block` computed from constants only (what fold-constants
    evaluates at compile time, size limits aside)."""
    constant: set[SSAValue] = set()
    found: set[Operation] = set()
    for op in block.ops:
        if isinstance(op, arith.ConstantOp):
            constant.update(op.results)
        elif op.name.startswith("aten.") and not op.regions:
            if all(v in constant for v in op.operands):
                found.add(op)
                constant.update(op.results)
    return found
