"""Converters for quantization ops: PT2E `quantized_decomposed.*`, torchao
`*_affine` and `quant.dequantize_codebook`, normalised into the `quant` dialect."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch.fx import Node
from xdsl.dialects.builtin import f16, f32
from xdsl.ir import Operation, SSAValue, TypeAttribute

from qopt.dialects import quant
from qopt.dialects.tensors import elem_of, shape_of
from qopt.dtypes import element_type, numpy_dtype
from qopt.frontend.converters.table import ConverterTable
from qopt.frontend.importer import Importer
from qopt.numerics.quant import symmetric_zero_point

CONVERTERS = ConverterTable()

_SUB_BYTE_BOUNDS: dict[str, tuple[int, int]] = {
    **{f"torch.int{b}": (-(2 ** (b - 1)), 2 ** (b - 1) - 1) for b in range(1, 8)},
    **{f"torch.uint{b}": (0, 2**b - 1) for b in range(1, 8)},
}


def _dtype_bounds(dtype: torch.dtype) -> tuple[int, int]:
    if str(dtype) in _SUB_BYTE_BOUNDS:
        return _SUB_BYTE_BOUNDS[str(dtype)]
    info = torch.iinfo(dtype)
    return int(info.min), int(info.max)


def _range(args: dict[str, Any], dtype: torch.dtype) -> tuple[int, int]:
    lo, hi = _dtype_bounds(dtype)
    qmin, qmax = args.get("quant_min"), args.get("quant_max")
    return (lo if qmin is None else int(qmin)), (hi if qmax is None else int(qmax))


def _literal(imp: Importer, value: Any, dtype: type) -> SSAValue:
    if isinstance(value, Node):
        return imp.value(value)
    return imp.constant(np.array(value, dtype=dtype), "qparam")


def _per_channel_block(shape: Sequence[int], axis: int) -> list[int]:
    axis %= len(shape)
    return [1 if i == axis else d for i, d in enumerate(shape)]


# ----- PT2E (quantized_decomposed) -------------------------------------------


@CONVERTERS(
    "quantized_decomposed.quantize_per_tensor.default",
    "quantized_decomposed.quantize_per_tensor.tensor",
    "quantized_decomposed.quantize_per_tensor.tensor2",
)
def convert_quantize_per_tensor(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    x = imp.value(args["input"])
    qmin, qmax = (int(_scalar(imp, args[k])) for k in ("quant_min", "quant_max"))
    # The scale is read as a Python float (a weak scalar): the product is in f32.
    return quant.QuantizeOp(
        x,
        _literal(imp, args["scale"], np.float64),
        _literal(imp, args["zero_point"], np.int64),
        shape_of(x),
        qmin,
        qmax,
        imp.result_type(),
        compute_type=f32,
    )


@CONVERTERS(
    "quantized_decomposed.dequantize_per_tensor.default",
    "quantized_decomposed.dequantize_per_tensor.tensor",
    "quantized_decomposed.dequantize_per_tensor.tensor2",
)
def convert_dequantize_per_tensor(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    x = imp.value(args["input"])
    qmin, qmax = (int(_scalar(imp, args[k])) for k in ("quant_min", "quant_max"))
    result = imp.result_type()
    # `(x.to(out) - zp) * scale` with zp and scale Python numbers: torch computes a
    # float16 result in its f32 "opmath" type with the scale kept in f32 (not rounded
    # to f16 first), then rounds; f32 / f64 results compute in their own type.
    compute = f32 if result.get_element_type() == f16 else None
    return quant.DequantizeOp(
        x,
        _literal(imp, args["scale"], np.float64),
        _literal(imp, args["zero_point"], np.int64),
        shape_of(x),
        qmin,
        qmax,
        result,
        compute_type=compute,
    )


def _scalar(imp: Importer, value: Any) -> int | float:
    if isinstance(value, int | float):
        return value
    raise imp.error(
        f"quant range given as a tensor ({value}) is not supported: export with literal "
        "quant_min/quant_max"
    )


@CONVERTERS("quantized_decomposed.quantize_per_channel.default")
def convert_quantize_per_channel(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    x = imp.value(args["input"])
    return quant.QuantizeOp(
        x,
        imp.value(args["scales"]),
        imp.value(args["zero_points"]),
        _per_channel_block(shape_of(x), int(args["axis"])),
        int(args["quant_min"]),
        int(args["quant_max"]),
        imp.result_type(),
        compute_type=_promote(elem_of(x), elem_of(imp.value(args["scales"]))),
    )


@CONVERTERS("quantized_decomposed.dequantize_per_channel.default")
def convert_dequantize_per_channel(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    x = imp.value(args["input"])
    scales = imp.value(args["scales"])
    result = imp.result_type()
    return quant.DequantizeOp(
        x,
        scales,
        imp.optional_value(args.get("zero_points")),
        _per_channel_block(shape_of(x), int(args["axis"])),
        int(args["quant_min"]),
        int(args["quant_max"]),
        result,
        compute_type=_promote(elem_of(scales), result.get_element_type()),
    )


@CONVERTERS("quantized_decomposed.quantize_per_channel_group.default")
def convert_quantize_per_channel_group(
    imp: Importer, node: Node, args: dict[str, Any]
) -> Operation:
    x = imp.value(args["input"])
    scales = imp.value(args["scales"])
    return quant.QuantizeOp(
        x,
        scales,
        imp.value(args["zero_points"]),
        [1, int(args["group_size"])],
        int(args["quant_min"]),
        int(args["quant_max"]),
        imp.result_type(),
        compute_type=_promote(elem_of(x), elem_of(scales)),
        zero_point_before_rounding=True,
    )


@CONVERTERS("quantized_decomposed.dequantize_per_channel_group.default")
def convert_dequantize_per_channel_group(
    imp: Importer, node: Node, args: dict[str, Any]
) -> Operation:
    x = imp.value(args["input"])
    scales = imp.value(args["scales"])
    result = imp.result_type()
    group = int(args["group_size"])
    k = shape_of(x)[-1]
    if group > k and shape_of(scales)[-1] == 1:
        group = k
    return quant.DequantizeOp(
        x,
        scales,
        imp.optional_value(args.get("zero_points")),
        [1, group],
        int(args["quant_min"]),
        int(args["quant_max"]),
        result,
        compute_type=_promote(elem_of(scales), result.get_element_type()),
    )


def _choose_qparams(imp: Importer, args: dict[str, Any], mapping: quant.Mapping) -> Operation:
    x = imp.value(args["input"])
    scale_type, zp_type = imp.result_types()
    return quant.ChooseQParamsOp(
        x,
        shape_of(x),
        int(args["quant_min"]),
        int(args["quant_max"]),
        mapping,
        float(args["eps"]),
        scale_type,
        zp_type,
    )


@CONVERTERS("quantized_decomposed.choose_qparams.tensor")
def convert_choose_qparams(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    return _choose_qparams(imp, args, quant.Mapping.ASYMMETRIC)


@CONVERTERS("quantized_decomposed.choose_qparams_symmetric.tensor")
def convert_choose_qparams_symmetric(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    # torch's determine_qparams (no customized range) gives the zero point 128 for a
    # uint8 target and 0 for any other, whatever the range; quant.choose_qparams'
    # symmetric zero point is torchao's int((qmax + qmin + 1) / 2). They agree on the
    # default ranges (uint8 [0, 255], int8, int16, int32); refuse the others rather
    # than quantize around a different zero point than torch.
    qmin, qmax = int(args["quant_min"]), int(args["quant_max"])
    torch_zp = 128 if args["dtype"] == torch.uint8 else 0
    if symmetric_zero_point(qmin, qmax) != torch_zp:
        raise imp.error(
            f"choose_qparams_symmetric to {args['dtype']} with the range [{qmin}, {qmax}] "
            f"has torch's zero point {torch_zp}, which qopt's symmetric mapping (zero point "
            f"{symmetric_zero_point(qmin, qmax)}) does not reproduce: use the dtype's full "
            "range, or torchao's choose_qparams_affine"
        )
    return _choose_qparams(imp, args, quant.Mapping.SYMMETRIC)


# ----- torchao ---------------------------------------------------------------


def _promote(a: Any, b: Any) -> TypeAttribute:
    dtype = np.promote_types(numpy_dtype(a), numpy_dtype(b))
    result = element_type(dtype)
    assert isinstance(result, TypeAttribute)
    return result


@CONVERTERS("torchao.quantize_affine.default")
def convert_quantize_affine(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    x = imp.value(args["input"])
    zp = args.get("zero_point")
    if zp is None:
        raise imp.error("torchao.quantize_affine needs a zero point (torch raises without one)")
    qmin, qmax = _range(args, args["output_dtype"])
    return quant.QuantizeOp(
        x,
        imp.value(args["scale"]),
        imp.value(zp),
        [int(b) for b in args["block_size"]],
        qmin,
        qmax,
        imp.result_type(),
    )


@CONVERTERS("torchao.dequantize_affine.default")
def convert_dequantize_affine(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    x = imp.value(args["input"])
    scale = imp.value(args["scale"])
    result = imp.result_type()
    qmin, qmax = _range(args, args["input_dtype"])
    compute = _promote(elem_of(scale), result.get_element_type())
    return quant.DequantizeOp(
        x,
        scale,
        imp.optional_value(args.get("zero_point")),
        [int(b) for b in args["block_size"]],
        qmin,
        qmax,
        result,
        compute_type=None if compute == result.get_element_type() else compute,
    )


@CONVERTERS("torchao.choose_qparams_affine.default")
def convert_choose_qparams_affine(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    x = imp.value(args["input"])
    mapping_name = str(args["mapping_type"]).lower()
    try:
        mapping = quant.Mapping(mapping_name)
    except ValueError:
        raise imp.error(f"unsupported mapping type {args['mapping_type']}") from None
    qmin, qmax = _range(args, args["target_dtype"])
    eps = args.get("eps")
    if eps is None:
        eps = float(np.finfo(numpy_dtype(elem_of(x))).smallest_normal)
    scale_type, zp_type = imp.result_types()
    return quant.ChooseQParamsOp(
        x,
        [int(b) for b in args["block_size"]],
        qmin,
        qmax,
        mapping,
        float(eps),
        scale_type,
        zp_type,
    )


# ----- codebook --------------------------------------------------------------


@CONVERTERS("quant.dequantize_codebook.default")
def convert_dequantize_codebook(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    return quant.DequantizeCodebookOp(
        imp.value(args["codes"]),
        imp.value(args["codebook"]),
        int(args["nbits"]),
        [int(b) for b in args["block_size"]],
        imp.result_type(),
    )
