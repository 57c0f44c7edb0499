"""The `quant` dialect: quantization ops of exported graphs, in one affine form.

`quantized_decomposed.*` (PT2E), `torchao.*_affine` and `quant.dequantize_codebook`
all import into these ops. Every parameter tensor is described by an explicit
block size, as in MLIR's sub-channel `!quant.uniform` type: element
`(i0, ..., i_{r-1})` uses parameter number `(i0 // b0, ..., i_{r-1} // b_{r-1})` of
the reduced shape `(d0 / b0, ...)` in row-major order. Per-tensor is the whole
shape, per-channel on axis a is 1 at a and full elsewhere, per-group G is
`[1, G]`. Exact semantics (rounding, clamping, dtypes): docs/ir.md, `quant`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import (
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
    UnitAttr,
    i64,
)
from xdsl.ir import Attribute, Dialect, SSAValue, TypeAttribute
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from qopt.dialects.tensors import dtype_of, elem_of, numel, shape_of
from qopt.dtypes import int_range, is_float, is_int, numpy_dtype
from qopt.errors import where


class Mapping(StrEnum):
    """How `quant.choose_qparams` maps a block's [min, max] to (scale, zero point)."""

    ASYMMETRIC = "asymmetric"
    SYMMETRIC = "symmetric"
    SYMMETRIC_NO_CLIPPING_ERR = "symmetric_no_clipping_err"


def resolve_block_size(block: Sequence[int], shape: Sequence[int]) -> tuple[int, ...]:
    """Replace -1 entries (whole dimension) by the dimension's size."""
    return tuple(d if b == -1 else b for b, d in zip(block, shape, strict=True))


def reduced_shape(block: Sequence[int], shape: Sequence[int]) -> tuple[int, ...]:
    return tuple(d // b for b, d in zip(block, shape, strict=True))


def _affine_props(
    block_size: Sequence[int], qmin: int, qmax: int, compute_type: TypeAttribute | None
) -> dict[str, Attribute]:
    props: dict[str, Attribute] = {
        "block_size": DenseArrayBase.from_list(i64, list(block_size)),
        "qmin": IntegerAttr(qmin, i64),
        "qmax": IntegerAttr(qmax, i64),
    }
    if compute_type is not None:
        props["compute_type"] = compute_type
    return props


class QuantOpBase(IRDLOperation):
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "operands attr-dict `:` functional-type(operands, results)"
    traits = traits_def(Pure())

    def _fail(self, message: str) -> VerifyException:
        return VerifyException(f"{where(self)}: {message}")

    def _check_block(self, block: Sequence[int], shape: Sequence[int]) -> None:
        if len(block) != len(shape):
            raise self._fail(
                f"block_size has {len(block)} entries but the tensor has rank {len(shape)}"
            )
        for i, (b, d) in enumerate(zip(block, shape, strict=True)):
            if b < 1 or d % b != 0:
                raise self._fail(
                    f"block_size[{i}] = {b} must be positive and divide dimension {i} ({d})"
                )

    def _check_params(
        self,
        block: Sequence[int],
        shape: Sequence[int],
        scale: SSAValue,
        zp: SSAValue | None,
    ) -> None:
        blocks = numel(reduced_shape(block, shape))
        if not is_float(elem_of(scale)):
            raise self._fail(f"scale must be a float tensor, got {scale.type}")
        if numel(shape_of(scale)) != blocks:
            raise self._fail(
                f"scale has {numel(shape_of(scale))} elements but block_size "
                f"{list(block)} splits shape {list(shape)} into {blocks} blocks"
            )
        if zp is not None and numel(shape_of(zp)) != blocks:
            raise self._fail(
                f"zero_point has {numel(shape_of(zp))} elements but there are {blocks} blocks"
            )

    def _check_range(self, qmin: int, qmax: int, storage: Attribute) -> None:
        if not is_int(storage):
            raise self._fail(f"storage type must be an integer type, got {storage}")
        lo, hi = int_range(storage)
        if not lo <= qmin <= qmax <= hi:
            raise self._fail(
                f"quant range [{qmin}, {qmax}] must be ordered and fit storage {storage} "
                f"[{lo}, {hi}]"
            )


@irdl_op_definition
class QuantizeOp(QuantOpBase):
    """Affine quantization of a float tensor.

    `q = clamp(rne(x * (1 / scale)) + zero_point, qmin, qmax)`, cast to the
    result's integer type. `1 / scale` is computed in the scale's type, the
    product in `compute_type` (default: the promotion of input and scale
    types). With `zero_point_before_rounding` the zero point is added before
    rounding (`quantize_per_token` / `_per_channel_group`).
    torch: `quantized_decomposed.quantize_per_*`, `torchao.quantize_affine`.
    """

    name = "quant.quantize"
    input = operand_def(TensorType)
    scale = operand_def(TensorType)
    zero_point = opt_operand_def(TensorType)
    block_size = prop_def(DenseArrayBase[IntegerType])
    qmin = prop_def(IntegerAttr)
    qmax = prop_def(IntegerAttr)
    compute_type = opt_prop_def(TypeAttribute)
    zero_point_before_rounding = opt_prop_def(UnitAttr)
    output = result_def(TensorType)

    def __init__(
        self,
        input: SSAValue,
        scale: SSAValue,
        zero_point: SSAValue | None,
        block_size: Sequence[int],
        qmin: int,
        qmax: int,
        result_type: TensorType,
        compute_type: TypeAttribute | None = None,
        zero_point_before_rounding: bool = False,
    ):
        props = _affine_props(block_size, qmin, qmax, compute_type)
        if zero_point_before_rounding:
            props["zero_point_before_rounding"] = UnitAttr()
        super().__init__(
            operands=[input, scale, zero_point],
            properties=props,
            result_types=[result_type],
        )

    def verify_(self) -> None:
        shape = shape_of(self.input)
        if not is_float(elem_of(self.input)):
            raise self._fail(f"input must be a float tensor, got {self.input.type}")
        if shape_of(self.output) != shape:
            raise self._fail("result shape must equal the input shape")
        block = self.block_size.get_values()
        self._check_block(block, shape)
        self._check_params(block, shape, self.scale, self.zero_point)
        self._check_range(self.qmin.value.data, self.qmax.value.data, elem_of(self.output))
        if self.compute_type is not None and not is_float(self.compute_type):
            raise self._fail(f"compute_type must be a float type, got {self.compute_type}")

    def compute_dtype(self) -> np.dtype:
        """The numpy type the product is computed in: `compute_type`, else the
        promotion of the input and scale types."""
        if self.compute_type is not None:
            return numpy_dtype(self.compute_type)
        return np.promote_types(dtype_of(self.input), dtype_of(self.scale))


@irdl_op_definition
class DequantizeOp(QuantOpBase):
    """Affine dequantization: `(x - zero_point) * scale` in `compute_type`
    (default: the result type), cast to the result's float type.
    qmin/qmax describe the stored range (checked, not used in the arithmetic).
    torch: `quantized_decomposed.dequantize_per_*`, `torchao.dequantize_affine`.
    """

    name = "quant.dequantize"
    input = operand_def(TensorType)
    scale = operand_def(TensorType)
    zero_point = opt_operand_def(TensorType)
    block_size = prop_def(DenseArrayBase[IntegerType])
    qmin = prop_def(IntegerAttr)
    qmax = prop_def(IntegerAttr)
    compute_type = opt_prop_def(TypeAttribute)
    output = result_def(TensorType)

    def __init__(
        self,
        input: SSAValue,
        scale: SSAValue,
        zero_point: SSAValue | None,
        block_size: Sequence[int],
        qmin: int,
        qmax: int,
        result_type: TensorType,
        compute_type: TypeAttribute | None = None,
    ):
        props = _affine_props(block_size, qmin, qmax, compute_type)
        super().__init__(
            operands=[input, scale, zero_point],
            properties=props,
            result_types=[result_type],
        )

    def verify_(self) -> None:
        shape = shape_of(self.input)
        if not is_int(elem_of(self.input)):
            raise self._fail(f"input must be an integer tensor, got {self.input.type}")
        if not is_float(elem_of(self.output)):
            raise self._fail(f"result must be a float tensor, got {self.output.type}")
        if shape_of(self.output) != shape:
            raise self._fail("result shape must equal the input shape")
        block = self.block_size.get_values()
        self._check_block(block, shape)
        self._check_params(block, shape, self.scale, self.zero_point)
        self._check_range(self.qmin.value.data, self.qmax.value.data, elem_of(self.input))
        if self.compute_type is not None and not is_float(self.compute_type):
            raise self._fail(f"compute_type must be a float type, got {self.compute_type}")

    def compute_dtype(self) -> np.dtype:
        """The numpy type `(x - zero_point) * scale` is computed in: `compute_type`,
        else the result type."""
        if self.compute_type is not None:
            return numpy_dtype(self.compute_type)
        return dtype_of(self.output)


@irdl_op_definition
class ChooseQParamsOp(QuantOpBase):
    """Run-time (dynamic) scale and zero point per block.

    Over each block: `mn = min(min(x), 0)`, `mx = max(max(x), 0)` in the input
    type; `symmetric`: `s = max(-mn, mx) / ((qmax - qmin) / 2)`,
    `zp = int((qmax + qmin + 1) / 2)`; `symmetric_no_clipping_err`:
    `s = max(mn / qmin, mx / qmax)`, same zp; `asymmetric`:
    `s = (mx - mn) / (qmax - qmin)`, `zp = clamp(qmin - rne(mn / s), qmin, qmax)`;
    then `s = max(s, eps)` (before computing the asymmetric zp). Results are
    cast to their types. torch: `quantized_decomposed.choose_qparams{,_symmetric}.tensor`,
    `torchao.choose_qparams_affine`.
    """

    name = "quant.choose_qparams"
    input = operand_def(TensorType)
    block_size = prop_def(DenseArrayBase[IntegerType])
    qmin = prop_def(IntegerAttr)
    qmax = prop_def(IntegerAttr)
    mapping = prop_def(StringAttr)
    eps = prop_def(FloatAttr)
    scale = result_def(TensorType)
    zero_point = result_def(TensorType)

    def __init__(
        self,
        input: SSAValue,
        block_size: Sequence[int],
        qmin: int,
        qmax: int,
        mapping: Mapping,
        eps: float,
        scale_type: TensorType,
        zero_point_type: TensorType,
    ):
        super().__init__(
            operands=[input],
            properties={
                "block_size": DenseArrayBase.from_list(i64, list(block_size)),
                "qmin": IntegerAttr(qmin, i64),
                "qmax": IntegerAttr(qmax, i64),
                "mapping": StringAttr(mapping.value),
                "eps": FloatAttr(eps, 64),
            },
            result_types=[scale_type, zero_point_type],
        )

    def verify_(self) -> None:
        shape = shape_of(self.input)
        if not is_float(elem_of(self.input)):
            raise self._fail(f"input must be a float tensor, got {self.input.type}")
        if self.mapping.data not in {m.value for m in Mapping}:
            raise self._fail(
                f"mapping must be one of {', '.join(m.value for m in Mapping)}, "
                f"got '{self.mapping.data}'"
            )
        block = self.block_size.get_values()
        self._check_block(block, shape)
        self._check_params(block, shape, self.scale, self.zero_point)
        qmin, qmax = self.qmin.value.data, self.qmax.value.data
        if qmin >= qmax:
            raise self._fail(f"quant range [{qmin}, {qmax}] must have qmin < qmax")
        if self.eps.value.data < 0:
            raise self._fail("eps must be non-negative")


@irdl_op_definition
class DequantizeCodebookOp(QuantOpBase):
    """Look-up-table dequantization: `out[i] = codebook[i0 // b0, ..., codes[i], 0]`.

    The codebook has shape `(d0 / b0, ..., 2^nbits, 1)`; a block size of -1
    means the whole dimension. torch: `quant.dequantize_codebook`.
    """

    name = "quant.dequantize_codebook"
    codes = operand_def(TensorType)
    codebook = operand_def(TensorType)
    nbits = prop_def(IntegerAttr)
    block_size = prop_def(DenseArrayBase[IntegerType])
    output = result_def(TensorType)

    def __init__(
        self,
        codes: SSAValue,
        codebook: SSAValue,
        nbits: int,
        block_size: Sequence[int],
        result_type: TensorType,
    ):
        super().__init__(
            operands=[codes, codebook],
            properties={
                "nbits": IntegerAttr(nbits, i64),
                "block_size": DenseArrayBase.from_list(i64, list(block_size)),
            },
            result_types=[result_type],
        )

    def verify_(self) -> None:
        shape = shape_of(self.codes)
        book = shape_of(self.codebook)
        nbits = self.nbits.value.data
        if not is_int(elem_of(self.codes)):
            raise self._fail(f"codes must be an integer tensor, got {self.codes.type}")
        if not is_float(elem_of(self.codebook)) or not is_float(elem_of(self.output)):
            raise self._fail("codebook and result must be float tensors")
        if not 1 <= nbits <= 8:
            raise self._fail(f"nbits must be in [1, 8], got {nbits}")
        if shape_of(self.output) != shape:
            raise self._fail("result shape must equal the codes shape")
        if len(book) != len(shape) + 2:
            raise self._fail(
                f"codebook must have rank {len(shape) + 2} (codes rank + 2), got {len(book)}"
            )
        if book[-2] != 2**nbits:
            raise self._fail(f"codebook dimension -2 must be 2^nbits = {2**nbits}, got {book[-2]}")
        if book[-1] != 1:
            raise self._fail(
                f"only scalar LUT entries are supported (vector size 1), got {book[-1]}"
            )
        raw_block = self.block_size.get_values()
        if len(raw_block) != len(shape):
            raise self._fail(f"block_size must have {len(shape)} entries")
        block = resolve_block_size(raw_block, shape)
        self._check_block(block, shape)
        if reduced_shape(block, shape) != book[:-2]:
            raise self._fail(
                f"codebook leading dims {list(book[:-2])} must equal shape / block_size "
                f"= {list(reduced_shape(block, shape))}"
            )


Quant = Dialect(
    "quant",
    [QuantizeOp, DequantizeOp, ChooseQParamsOp, DequantizeCodebookOp],
    [],
)
