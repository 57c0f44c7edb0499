"""The `qfused` dialect: one op per quantized computation (the mid level).

`fuse-quant` rewrites Q/DQ and codebook patterns of the import level into these
ops; both backends lower from them. Each op holds its still-packed weight data
as operands (integer data or LUT codes, scales or codebook, optional zero
points) and describes its schemes with attributes:

- weight: `#qfused.affine<bits = 4, range = [-8, 7], block = [1, 32]>`
  (per-group G: block [1, G]; per-channel: the whole row) or
  `#qfused.lut<nbits = 4, block = [-1, 16]>` (codebook look-up);
  a weight is symmetric exactly when it has no zero-point operand;
- activation (absent = weight-only): `#qfused.static<scale = s, zero_point = z,
  range = [qmin, qmax]>` (compile-time per-tensor parameters; the input is either
  float, quantized in the kernel, or an integer tensor already quantized with
  exactly these parameters) or `#qfused.dynamic<per_token, asymmetric,
  range = [-128, 127], eps = e, scale_type = f32>` (parameters computed at run
  time, as `quant.choose_qparams` does);
- output requantization (`requant`, a `#qfused.static`) with an optional clamp
  (`clamp_min` / `clamp_max`: a fused ReLU is `clamp_min = 0.0`) applied to the
  float result before it is quantized.

Every op carries its kernel name in ExecuTorch's nomenclature (`kernel`,
checked by the verifier against the schemes) and reports it through
`kernel_name()`; `et_aliases()` lists the names ExecuTorch itself uses.
Semantics (the reference interpreter) are in qopt/interpreters/qfused.py.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    FloatAttr,
    IntAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
)
from xdsl.ir import Attribute, Dialect, ParametrizedAttribute, SSAValue, TypeAttribute
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from qopt.dialects.aten.base import broadcast_shapes
from qopt.dialects.aten.nn import conv_out
from qopt.dialects.tensors import elem_of, shape_of
from qopt.dtypes import int_range, is_float, is_int
from qopt.errors import where

# ----- attribute helpers ---------------------------------------------------------


def _parse_int_list(parser: AttrParser) -> list[int]:
    return parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_integer)


def _parse_range(parser: AttrParser) -> tuple[int, int]:
    parser.parse_keyword("range")
    parser.parse_punctuation("=")
    values = _parse_int_list(parser)
    if len(values) != 2:
        parser.raise_error("range must be [qmin, qmax]")
    return values[0], values[1]


def _print_ints(printer: Printer, values: Sequence[int]) -> None:
    printer.print_string("[" + ", ".join(str(v) for v in values) + "]")


def _ints(attr: ArrayAttr[IntAttr]) -> tuple[int, ...]:
    return tuple(v.data for v in attr.data)


def _int_array(values: Sequence[int]) -> ArrayAttr[IntAttr]:
    return ArrayAttr([IntAttr(int(v)) for v in values])


def bits_for_range(qmin: int, qmax: int) -> int:
    """The smallest bit width whose signed (or, for qmin >= 0, unsigned) range holds it."""
    for bits in range(1, 33):
        lo, hi = (0, 2**bits - 1) if qmin >= 0 else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
        if lo <= qmin and qmax <= hi:
            return bits
    raise VerifyException(f"range [{qmin}, {qmax}] needs more than 32 bits")


@irdl_attr_definition
class AffineWeightAttr(ParametrizedAttribute):
    """Affine (integer) weights: `w = (data - zero_point) * scale` per block."""

    name = "qfused.affine"
    bits: IntAttr
    qmin: IntAttr
    qmax: IntAttr
    block: ArrayAttr[IntAttr]

    @staticmethod
    def get(qmin: int, qmax: int, block: Sequence[int]) -> AffineWeightAttr:
        return AffineWeightAttr(
            IntAttr(bits_for_range(qmin, qmax)), IntAttr(qmin), IntAttr(qmax), _int_array(block)
        )

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        parser.parse_punctuation("<")
        parser.parse_keyword("bits")
        parser.parse_punctuation("=")
        bits = parser.parse_integer()
        parser.parse_punctuation(",")
        qmin, qmax = _parse_range(parser)
        parser.parse_punctuation(",")
        parser.parse_keyword("block")
        parser.parse_punctuation("=")
        block = _parse_int_list(parser)
        parser.parse_punctuation(">")
        return (IntAttr(bits), IntAttr(qmin), IntAttr(qmax), _int_array(block))

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<bits = {self.bits.data}, range = ")
        _print_ints(printer, (self.qmin.data, self.qmax.data))
        printer.print_string(", block = ")
        _print_ints(printer, _ints(self.block))
        printer.print_string(">")

    def verify(self) -> None:
        if self.qmin.data > self.qmax.data:
            raise VerifyException(f"range [{self.qmin.data}, {self.qmax.data}] is empty")
        if self.bits.data != bits_for_range(self.qmin.data, self.qmax.data):
            raise VerifyException(
                f"bits = {self.bits.data} does not match range [{self.qmin.data}, "
                f"{self.qmax.data}] ({bits_for_range(self.qmin.data, self.qmax.data)} bits)"
            )
        if any(b < 1 for b in _ints(self.block)):
            raise VerifyException("block sizes must be positive")

    @property
    def block_size(self) -> tuple[int, ...]:
        return _ints(self.block)


@irdl_attr_definition
class LutWeightAttr(ParametrizedAttribute):
    """Look-up-table weights: `w[i] = codebook[i // block, codes[i], 0]`."""

    name = "qfused.lut"
    nbits: IntAttr
    block: ArrayAttr[IntAttr]

    @staticmethod
    def get(nbits: int, block: Sequence[int]) -> LutWeightAttr:
        return LutWeightAttr(IntAttr(nbits), _int_array(block))

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        parser.parse_punctuation("<")
        parser.parse_keyword("nbits")
        parser.parse_punctuation("=")
        nbits = parser.parse_integer()
        parser.parse_punctuation(",")
        parser.parse_keyword("block")
        parser.parse_punctuation("=")
        block = _parse_int_list(parser)
        parser.parse_punctuation(">")
        return (IntAttr(nbits), _int_array(block))

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<nbits = {self.nbits.data}, block = ")
        _print_ints(printer, _ints(self.block))
        printer.print_string(">")

    def verify(self) -> None:
        if not 1 <= self.nbits.data <= 8:
            raise VerifyException(f"nbits must be in [1, 8], got {self.nbits.data}")
        if any(b < 1 and b != -1 for b in _ints(self.block)):
            raise VerifyException("block sizes must be positive or -1 (whole dimension)")

    @property
    def block_size(self) -> tuple[int, ...]:
        return _ints(self.block)


@irdl_attr_definition
class StaticQParamsAttr(ParametrizedAttribute):
    """Per-tensor quantization parameters known at compile time.

    `q = clamp(rne(x * f32(1 / scale)) + zero_point, qmin, qmax)` (PT2E's
    `quantize_per_tensor`: the reciprocal in double, the product in f32) and
    `x = (q - zero_point) * f32(scale)`.
    """

    name = "qfused.static"
    scale: FloatAttr
    zero_point: IntAttr
    qmin: IntAttr
    qmax: IntAttr

    @staticmethod
    def get(scale: float, zero_point: int, qmin: int, qmax: int) -> StaticQParamsAttr:
        return StaticQParamsAttr(
            FloatAttr(float(scale), 64), IntAttr(int(zero_point)), IntAttr(qmin), IntAttr(qmax)
        )

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        parser.parse_punctuation("<")
        parser.parse_keyword("scale")
        parser.parse_punctuation("=")
        scale = parser.parse_float()
        parser.parse_punctuation(",")
        parser.parse_keyword("zero_point")
        parser.parse_punctuation("=")
        zero_point = parser.parse_integer()
        parser.parse_punctuation(",")
        qmin, qmax = _parse_range(parser)
        parser.parse_punctuation(">")
        return (FloatAttr(scale, 64), IntAttr(zero_point), IntAttr(qmin), IntAttr(qmax))

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<scale = {self.scale.value.data!r}, zero_point = ")
        printer.print_string(f"{self.zero_point.data}, range = ")
        _print_ints(printer, (self.qmin.data, self.qmax.data))
        printer.print_string(">")

    def verify(self) -> None:
        if not self.scale.value.data > 0:
            raise VerifyException(f"scale must be positive, got {self.scale.value.data}")
        if not self.qmin.data <= self.zero_point.data <= self.qmax.data:
            raise VerifyException(
                f"zero_point {self.zero_point.data} must lie in range "
                f"[{self.qmin.data}, {self.qmax.data}]"
            )

    @property
    def bits(self) -> int:
        return bits_for_range(self.qmin.data, self.qmax.data)


_GRANULARITIES = ("per_token", "per_tensor")
_MAPPINGS = ("asymmetric", "symmetric", "symmetric_no_clipping_err")


@irdl_attr_definition
class DynamicQParamsAttr(ParametrizedAttribute):
    """Activation parameters computed at run time (see `quant.choose_qparams`):
    per token (one scale per row of the last dimension) or per tensor. The
    scale is rounded to `scale_type`; quantization then multiplies by
    `1 / scale` computed in `scale_type`, in f32."""

    name = "qfused.dynamic"
    granularity: StringAttr
    mapping: StringAttr
    qmin: IntAttr
    qmax: IntAttr
    eps: FloatAttr
    scale_type: TypeAttribute

    @staticmethod
    def get(
        granularity: str, mapping: str, qmin: int, qmax: int, eps: float, scale_type: TypeAttribute
    ) -> DynamicQParamsAttr:
        return DynamicQParamsAttr(
            StringAttr(granularity),
            StringAttr(mapping),
            IntAttr(qmin),
            IntAttr(qmax),
            FloatAttr(float(eps), 64),
            scale_type,
        )

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        parser.parse_punctuation("<")
        granularity = parser.parse_identifier()
        parser.parse_punctuation(",")
        mapping = parser.parse_identifier()
        parser.parse_punctuation(",")
        qmin, qmax = _parse_range(parser)
        parser.parse_punctuation(",")
        parser.parse_keyword("eps")
        parser.parse_punctuation("=")
        eps = parser.parse_float()
        parser.parse_punctuation(",")
        parser.parse_keyword("scale_type")
        parser.parse_punctuation("=")
        scale_type = parser.parse_type()
        parser.parse_punctuation(">")
        return (
            StringAttr(granularity),
            StringAttr(mapping),
            IntAttr(qmin),
            IntAttr(qmax),
            FloatAttr(eps, 64),
            scale_type,
        )

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{self.granularity.data}, {self.mapping.data}, range = ")
        _print_ints(printer, (self.qmin.data, self.qmax.data))
        printer.print_string(f", eps = {self.eps.value.data!r}, scale_type = ")
        printer.print_attribute(self.scale_type)
        printer.print_string(">")

    def verify(self) -> None:
        if self.granularity.data not in _GRANULARITIES:
            raise VerifyException(f"granularity must be one of {', '.join(_GRANULARITIES)}")
        if self.mapping.data not in _MAPPINGS:
            raise VerifyException(f"mapping must be one of {', '.join(_MAPPINGS)}")
        if self.qmin.data >= self.qmax.data:
            raise VerifyException(f"range [{self.qmin.data}, {self.qmax.data}] is empty")
        if not is_float(self.scale_type):
            raise VerifyException(f"scale_type must be a float type, got {self.scale_type}")

    @property
    def bits(self) -> int:
        return bits_for_range(self.qmin.data, self.qmax.data)


WeightScheme = AffineWeightAttr | LutWeightAttr
ActScheme = StaticQParamsAttr | DynamicQParamsAttr


# ----- kernel names ---------------------------------------------------------------


def weight_token(scheme: WeightScheme, symmetric: bool, reduced_dims: Sequence[int]) -> str:
    """`q4gsw`, `q8csw`, `q4gaw`, `lut4w` ... `reduced_dims` are the dims a per-channel
    scheme reduces over entirely (block == dim)."""
    if isinstance(scheme, LutWeightAttr):
        return f"lut{scheme.nbits.data}w"
    granularity = "c" if all(reduced_dims) else "g"
    return f"q{scheme.bits.data}{granularity}{'s' if symmetric else 'a'}w"


def act_token(act: ActScheme) -> str:
    if isinstance(act, StaticQParamsAttr):
        return f"q{act.bits}ta"
    per = "ca" if act.granularity.data == "per_token" else "ta"
    return f"dq{act.bits}{per}"


# ----- ops ------------------------------------------------------------------------


class QFusedOp(IRDLOperation):
    """Shared checks of the fused ops (weight operands, schemes, kernel name)."""

    irdl_options = (AttrSizedOperandSegments(as_property=True), ParsePropInAttrDict())
    traits = traits_def(Pure())

    kernel = prop_def(StringAttr)

    def fail(self, message: str) -> VerifyException:
        return VerifyException(f"{where(self)}: {message}")

    def kernel_name(self) -> str:
        raise NotImplementedError

    def et_aliases(self) -> tuple[str, ...]:
        """Names ExecuTorch's Vulkan backend uses for this kernel (if any)."""
        return ()

    def check_kernel(self) -> None:
        expected = self.kernel_name()
        if self.kernel.data != expected:
            raise self.fail(f"kernel is '{self.kernel.data}' but the schemes say '{expected}'")

    def check_weight(
        self,
        scheme: Attribute,
        weight: SSAValue,
        scale: SSAValue,
        zero_point: SSAValue | None,
    ) -> None:
        """Weight data/codes, scales/codebook and zero points agree with the scheme."""
        shape = shape_of(weight)
        if isinstance(scheme, AffineWeightAttr):
            block = scheme.block_size
            if len(block) != len(shape):
                raise self.fail(
                    f"weight block {list(block)} does not match weight rank {len(shape)}"
                )
            for i, (b, d) in enumerate(zip(block, shape, strict=True)):
                if d % b:
                    raise self.fail(f"block size {b} does not divide weight dimension {i} ({d})")
            reduced = tuple(d // b for b, d in zip(block, shape, strict=True))
            if not is_int(elem_of(weight)):
                raise self.fail(f"affine weight data must be integers, got {weight.type}")
            lo, hi = int_range(elem_of(weight))
            if not (lo <= scheme.qmin.data and scheme.qmax.data <= hi):
                raise self.fail(
                    f"weight range [{scheme.qmin.data}, {scheme.qmax.data}] does not fit "
                    f"storage {elem_of(weight)}"
                )
            if not is_float(elem_of(scale)) or shape_of(scale) != reduced:
                raise self.fail(
                    f"weight scale must be a float tensor of shape {list(reduced)} "
                    f"(weight shape / block), got {scale.type}"
                )
            if zero_point is not None and shape_of(zero_point) != reduced:
                raise self.fail(f"weight zero point must have shape {list(reduced)}")
        elif isinstance(scheme, LutWeightAttr):
            if zero_point is not None:
                raise self.fail("a LUT weight has no zero point")
            if not is_int(elem_of(weight)):
                raise self.fail(f"LUT codes must be integers, got {weight.type}")
            raw = scheme.block_size
            block = tuple(d if b == -1 else b for b, d in zip(raw, shape, strict=False))
            if len(block) != len(shape) or any(d % b for b, d in zip(block, shape, strict=True)):
                raise self.fail(f"LUT block {list(raw)} does not tile {list(shape)}")
            grid = tuple(d // b for b, d in zip(block, shape, strict=True))
            expected = (*grid, 2**scheme.nbits.data, 1)
            if shape_of(scale) != expected or not is_float(elem_of(scale)):
                raise self.fail(f"codebook must be a float tensor of shape {list(expected)}")
        else:
            raise self.fail(f"weight_scheme must be #qfused.affine or #qfused.lut, got {scheme}")

    def check_output(
        self,
        result: SSAValue,
        requant: StaticQParamsAttr | None,
        clamp_min: FloatAttr | None,
        clamp_max: FloatAttr | None,
    ) -> None:
        if requant is None:
            if not is_float(elem_of(result)):
                raise self.fail("without requant the result must be a float tensor")
        else:
            if not is_int(elem_of(result)):
                raise self.fail("with requant the result must be an integer tensor")
            lo, hi = int_range(elem_of(result))
            if not (lo <= requant.qmin.data and requant.qmax.data <= hi):
                raise self.fail(f"requant range does not fit the result type {elem_of(result)}")
        if clamp_min is not None and clamp_max is not None:
            if clamp_min.value.data > clamp_max.value.data:
                raise self.fail("clamp_min must not exceed clamp_max")

    def check_input(self, input: SSAValue, act: Attribute | None) -> None:
        elem = elem_of(input)
        if is_float(elem):
            return
        if not isinstance(act, StaticQParamsAttr):
            raise self.fail("an integer input needs static activation parameters (act)")
        lo, hi = int_range(elem)
        if not (lo <= act.qmin.data and act.qmax.data <= hi):
            raise self.fail(f"activation range does not fit the input type {elem}")


def _output_suffix(requant: StaticQParamsAttr | None) -> str:
    return "" if requant is None else f"_q{requant.bits}to"


def _symmetric(zero_point: SSAValue | None) -> bool:
    return zero_point is None


@irdl_op_definition
class LinearOp(QFusedOp):
    """`y = act(x) @ W.T + bias`, W `[N, K]` from its packed form; optional
    activation quantization (static or dynamic), clamp and output requant."""

    name = "qfused.linear"
    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    scale = operand_def(TensorType)
    zero_point = opt_operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    weight_scheme = prop_def(Attribute)
    act = opt_prop_def(Attribute)
    requant = opt_prop_def(StaticQParamsAttr)
    clamp_min = opt_prop_def(FloatAttr)
    clamp_max = opt_prop_def(FloatAttr)
    result = result_def(TensorType)

    assembly_format = (
        "$input `,` $weight `,` $scale (`zero_point` $zero_point^)? (`bias` $bias^)? attr-dict "
        "`:` type($input) `,` type($weight) `,` type($scale) "
        "(`zero_point` type($zero_point)^)? (`bias` type($bias)^)? `->` type($result)"
    )

    def kernel_name(self) -> str:
        k = shape_of(self.weight)[-1]
        scheme = self.weight_scheme
        assert isinstance(scheme, AffineWeightAttr | LutWeightAttr)
        reduced = [scheme.block_size[-1] == k] if isinstance(scheme, AffineWeightAttr) else []
        weight = weight_token(scheme, _symmetric(self.zero_point), reduced)
        act = self.act
        assert act is None or isinstance(act, ActScheme)
        prefix = "linear" if act is None else f"linear_{act_token(act)}"
        return f"{prefix}_{weight}{_output_suffix(self.requant)}"

    def et_aliases(self) -> tuple[str, ...]:
        name = self.kernel_name()
        aliases = {
            "linear_q8ta_q8csw_q8to": ("q8ta_linear", "q8ta_linear_gemv"),
            "linear_q8csw": ("aten._weight_int8pack_mm",),
            "linear_q4csw": ("linear_qcs4w",),
        }
        return aliases.get(name, ())

    def verify_(self) -> None:
        x, w = shape_of(self.input), shape_of(self.weight)
        if len(w) != 2:
            raise self.fail(f"weight must be 2-D [N, K], got {list(w)}")
        if not x or x[-1] != w[1]:
            raise self.fail(f"input's last dim must equal K = {w[1]}, got {list(x)}")
        if shape_of(self.result) != (*x[:-1], w[0]):
            raise self.fail(f"result must have shape {[*x[:-1], w[0]]}")
        if self.bias is not None and shape_of(self.bias) != (w[0],):
            raise self.fail(f"bias must have shape [{w[0]}]")
        self.check_weight(self.weight_scheme, self.weight, self.scale, self.zero_point)
        if self.act is not None and not isinstance(self.act, ActScheme):
            raise self.fail("act must be #qfused.static or #qfused.dynamic")
        self.check_input(self.input, self.act)
        self.check_output(self.result, self.requant, self.clamp_min, self.clamp_max)
        self.check_kernel()


@irdl_op_definition
class Conv2dOp(QFusedOp):
    """2-D convolution (NCHW, `[OC, IC / groups, KH, KW]` weights) with affine
    per-channel weights, optional static input quantization, clamp and requant."""

    name = "qfused.conv2d"
    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    scale = operand_def(TensorType)
    zero_point = opt_operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    stride = prop_def(DenseArrayBase[IntegerType])
    padding = prop_def(DenseArrayBase[IntegerType])
    dilation = prop_def(DenseArrayBase[IntegerType])
    groups = prop_def(IntegerAttr)
    weight_scheme = prop_def(Attribute)
    act = opt_prop_def(Attribute)
    requant = opt_prop_def(StaticQParamsAttr)
    clamp_min = opt_prop_def(FloatAttr)
    clamp_max = opt_prop_def(FloatAttr)
    result = result_def(TensorType)

    assembly_format = LinearOp.assembly_format

    def _variant(self) -> str:
        w = shape_of(self.weight)
        groups = self.groups.value.data
        if groups > 1 and groups == w[0] and w[1] == 1:
            return "_dw"
        strides = tuple(self.stride.get_values())
        pads = tuple(self.padding.get_values())
        dil = tuple(self.dilation.get_values())
        if w[2:] == (1, 1) and strides == (1, 1) and pads == (0, 0) and dil == (1, 1):
            return "_pw"
        return ""

    def kernel_name(self) -> str:
        scheme = self.weight_scheme
        assert isinstance(scheme, AffineWeightAttr | LutWeightAttr)
        w = shape_of(self.weight)
        reduced = (
            [b == d for b, d in zip(scheme.block_size[1:], w[1:], strict=True)]
            if isinstance(scheme, AffineWeightAttr)
            else []
        )
        weight = weight_token(scheme, _symmetric(self.zero_point), reduced)
        act = self.act
        assert act is None or isinstance(act, ActScheme)
        prefix = "conv2d" if act is None else f"conv2d_{act_token(act)}"
        return f"{prefix}_{weight}{_output_suffix(self.requant)}"

    def et_aliases(self) -> tuple[str, ...]:
        if self.kernel_name() != "conv2d_q8ta_q8csw_q8to":
            return ()
        return (f"q8ta_conv2d{self._variant()}", f"conv2d_q8ta_q8csw_q8to{self._variant()}")

    def verify_(self) -> None:
        x, w = shape_of(self.input), shape_of(self.weight)
        groups = self.groups.value.data
        params = [tuple(a.get_values()) for a in (self.stride, self.padding, self.dilation)]
        if any(len(p) != 2 for p in params):
            raise self.fail("stride, padding and dilation must have 2 entries")
        if len(x) != 4 or len(w) != 4:
            raise self.fail("input and weight must be 4-D (NCHW, OIHW)")
        if groups < 1 or x[1] % groups or w[0] % groups or x[1] // groups != w[1]:
            raise self.fail(
                f"channels do not match: input {x[1]}, weight {list(w)}, groups {groups}"
            )
        (sh, sw), (ph, pw), (dh, dw) = params
        expected = (x[0], w[0], conv_out(x[2], w[2], sh, ph, dh), conv_out(x[3], w[3], sw, pw, dw))
        if shape_of(self.result) != expected:
            raise self.fail(f"result must have shape {list(expected)}")
        if self.bias is not None and shape_of(self.bias) != (w[0],):
            raise self.fail(f"bias must have shape [{w[0]}]")
        self.check_weight(self.weight_scheme, self.weight, self.scale, self.zero_point)
        if self.act is not None and not isinstance(self.act, StaticQParamsAttr):
            raise self.fail("conv2d supports static activation parameters only")
        self.check_input(self.input, self.act)
        self.check_output(self.result, self.requant, self.clamp_min, self.clamp_max)
        self.check_kernel()


@irdl_op_definition
class EmbeddingOp(QFusedOp):
    """`out[..., :] = W[indices[...], :]` with W `[V, D]` from its packed form."""

    name = "qfused.embedding"
    indices = operand_def(TensorType)
    weight = operand_def(TensorType)
    scale = operand_def(TensorType)
    zero_point = opt_operand_def(TensorType)
    result = result_def(TensorType)
    weight_scheme = prop_def(Attribute)

    assembly_format = (
        "$indices `,` $weight `,` $scale (`zero_point` $zero_point^)? attr-dict "
        "`:` type($indices) `,` type($weight) `,` type($scale) "
        "(`zero_point` type($zero_point)^)? `->` type($result)"
    )

    def kernel_name(self) -> str:
        scheme = self.weight_scheme
        assert isinstance(scheme, AffineWeightAttr | LutWeightAttr)
        d = shape_of(self.weight)[-1]
        reduced = [scheme.block_size[-1] == d] if isinstance(scheme, AffineWeightAttr) else []
        return f"embedding_{weight_token(scheme, _symmetric(self.zero_point), reduced)}"

    def verify_(self) -> None:
        w = shape_of(self.weight)
        if len(w) != 2:
            raise self.fail(f"weight must be 2-D [V, D], got {list(w)}")
        if not is_int(elem_of(self.indices)):
            raise self.fail("indices must be an integer tensor")
        if shape_of(self.result) != (*shape_of(self.indices), w[1]):
            raise self.fail(f"result must have shape {[*shape_of(self.indices), w[1]]}")
        if not is_float(elem_of(self.result)):
            raise self.fail("result must be a float tensor")
        self.check_weight(self.weight_scheme, self.weight, self.scale, self.zero_point)
        self.check_kernel()


@irdl_op_definition
class AddOp(QFusedOp):
    """Quantized add: `requant(clamp(dq(lhs) + alpha * dq(rhs)))`; each operand is
    a float tensor quantized in the kernel or an integer tensor already quantized
    with its parameters (`lhs_act`, `rhs_act`)."""

    name = "qfused.add"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    lhs_act = prop_def(StaticQParamsAttr)
    rhs_act = prop_def(StaticQParamsAttr)
    alpha = opt_prop_def(FloatAttr)
    requant = opt_prop_def(StaticQParamsAttr)
    clamp_min = opt_prop_def(FloatAttr)
    clamp_max = opt_prop_def(FloatAttr)
    result = result_def(TensorType)

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)"

    def kernel_name(self) -> str:
        return (
            f"add_{act_token(self.lhs_act)}_{act_token(self.rhs_act)}{_output_suffix(self.requant)}"
        )

    def et_aliases(self) -> tuple[str, ...]:
        return ("q8ta_add",) if self.kernel_name() == "add_q8ta_q8ta_q8to" else ()

    def verify_(self) -> None:
        shape = broadcast_shapes(shape_of(self.lhs), shape_of(self.rhs))
        if shape is None or shape != shape_of(self.result):
            raise self.fail("operands must broadcast to the result shape")
        self.check_input(self.lhs, self.lhs_act)
        self.check_input(self.rhs, self.rhs_act)
        self.check_output(self.result, self.requant, self.clamp_min, self.clamp_max)
        self.check_kernel()


@irdl_op_definition
class MulOp(QFusedOp):
    """Quantized mul: `requant(clamp(dq(lhs) * dq(rhs)))`, operands as `qfused.add`'s
    (a float tensor quantized in the kernel or an integer tensor already quantized
    with `lhs_act` / `rhs_act`), broadcasting (a squeeze-excitation gate [N, C, 1, 1]
    times its feature map)."""

    name = "qfused.mul"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    lhs_act = prop_def(StaticQParamsAttr)
    rhs_act = prop_def(StaticQParamsAttr)
    requant = opt_prop_def(StaticQParamsAttr)
    clamp_min = opt_prop_def(FloatAttr)
    clamp_max = opt_prop_def(FloatAttr)
    result = result_def(TensorType)

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)"

    def kernel_name(self) -> str:
        return (
            f"mul_{act_token(self.lhs_act)}_{act_token(self.rhs_act)}{_output_suffix(self.requant)}"
        )

    def verify_(self) -> None:
        shape = broadcast_shapes(shape_of(self.lhs), shape_of(self.rhs))
        if shape is None or shape != shape_of(self.result):
            raise self.fail("operands must broadcast to the result shape")
        self.check_input(self.lhs, self.lhs_act)
        self.check_input(self.rhs, self.rhs_act)
        self.check_output(self.result, self.requant, self.clamp_min, self.clamp_max)
        self.check_kernel()


QFused = Dialect(
    "qfused",
    [LinearOp, Conv2dOp, EmbeddingOp, AddOp, MulOp],
    [AffineWeightAttr, LutWeightAttr, StaticQParamsAttr, DynamicQParamsAttr],
)

__all__ = [
    "AddOp",
    "AffineWeightAttr",
    "Conv2dOp",
    "DynamicQParamsAttr",
    "EmbeddingOp",
    "LinearOp",
    "LutWeightAttr",
    "MulOp",
    "QFused",
    "StaticQParamsAttr",
]
