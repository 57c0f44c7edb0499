"""Converters for the aten layers family (see qopt/dialects/aten/layers.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from torch.fx import Node
from xdsl.dialects.builtin import (
    BoolAttr,
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    TensorType,
    i32,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue

from qopt.dialects.aten import elementwise as ew
from qopt.dialects.aten import layers
from qopt.dialects.aten import reduction as red
from qopt.dialects.aten import shape as sh
from qopt.dialects.tensors import shape_of
from qopt.frontend.converters.table import ConverterTable
from qopt.frontend.importer import Importer, node_location

CONVERTERS = ConverterTable()


def array(values: Any) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, [int(v) for v in values])


def pair(value: Any) -> list[int]:
    """An `int[2]` argument (an int, or a list of 1 or 2 ints) as 2 ints."""
    values = [int(v) for v in (value if isinstance(value, list | tuple) else [value])]
    return values * 2 if len(values) == 1 else values


def f64(value: Any) -> FloatAttr:
    return FloatAttr(float(value), 64)


def true() -> BoolAttr:
    return BoolAttr.from_bool(True)


def segments(*groups: list[SSAValue]) -> tuple[list[SSAValue], DenseArrayBase]:
    """The flat operand list of operand groups and its `operandSegmentSizes`."""
    flat = [v for group in groups for v in group]
    return flat, DenseArrayBase.from_list(i32, [len(g) for g in groups])


def _affine(imp: Importer, args: dict[str, Any]) -> tuple[list[SSAValue], list[SSAValue]]:
    weight, bias = imp.optional_value(args.get("weight")), imp.optional_value(args.get("bias"))
    return ([] if weight is None else [weight]), ([] if bias is None else [bias])


def _norm(
    imp: Importer,
    op_type: type[layers.NormOp],
    args: dict[str, Any],
    extra: list[list[SSAValue]],
    props: dict[str, Attribute],
) -> Operation:
    weight, bias = _affine(imp, args)
    operands, sizes = segments([imp.value(args["input"])], weight, bias, *extra)
    return op_type.create(
        operands=operands,
        result_types=imp.result_types(),
        properties={**props, "operandSegmentSizes": sizes, "eps": f64(args["eps"])},
    )


@CONVERTERS("aten.layer_norm.default", "aten.native_layer_norm.default")
def convert_layer_norm(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    props: dict[str, Attribute] = {"normalized_shape": array(args["normalized_shape"])}
    return _norm(imp, layers.LayerNormOp, args, [], props)


@CONVERTERS("aten.group_norm.default")
def convert_group_norm(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    props: dict[str, Attribute] = {"num_groups": IntegerAttr(int(args["num_groups"]), i64)}
    return _norm(imp, layers.GroupNormOp, args, [], props)


@CONVERTERS("aten.native_group_norm.default")
def convert_native_group_norm(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    props: dict[str, Attribute] = {"num_groups": IntegerAttr(int(args["group"]), i64)}
    return _norm(imp, layers.GroupNormOp, args, [], props)


@CONVERTERS("aten._native_batch_norm_legit_no_training.default", "aten.batch_norm.default")
def convert_batch_norm(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    if args.get("training"):
        raise imp.error("batch norm in training mode: export the model in eval mode")
    if args.get("running_mean") is None or args.get("running_var") is None:
        raise imp.error("batch norm without running statistics is not supported")
    stats = [[imp.value(args["running_mean"])], [imp.value(args["running_var"])]]
    return _norm(imp, layers.BatchNormOp, args, stats, {})


def _pool_props(args: dict[str, Any]) -> dict[str, Attribute]:
    kernel = pair(args["kernel_size"])
    stride = args.get("stride")
    props: dict[str, Attribute] = {
        "kernel_size": array(kernel),
        "stride": array(pair(stride) if stride else kernel),
        "padding": array(pair(args.get("padding", 0))),
    }
    if args.get("ceil_mode"):
        props["ceil_mode"] = true()
    return props


@CONVERTERS("aten.max_pool2d.default", "aten.max_pool2d_with_indices.default")
def convert_max_pool2d(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    props = _pool_props(args)
    props["dilation"] = array(pair(args.get("dilation", 1)))
    return layers.MaxPool2dOp.create(
        operands=[imp.value(args["self"])], result_types=imp.result_types(), properties=props
    )


@CONVERTERS("aten.avg_pool2d.default")
def convert_avg_pool2d(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    props = _pool_props(args)
    if not args.get("count_include_pad", True):
        props["count_include_pad"] = BoolAttr.from_bool(False)
    if args.get("divisor_override") is not None:
        props["divisor_override"] = IntegerAttr(int(args["divisor_override"]), i64)
    return layers.AvgPool2dOp.create(
        operands=[imp.value(args["self"])], result_types=[imp.result_type()], properties=props
    )


@CONVERTERS("aten.adaptive_avg_pool2d.default", "aten._adaptive_avg_pool2d.default")
def convert_adaptive_avg_pool2d(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    return layers.AdaptiveAvgPool2dOp.create(
        operands=[imp.value(args["self"])],
        result_types=[imp.result_type()],
        properties={"output_size": array(pair(args["output_size"]))},
    )


@CONVERTERS("aten._weight_norm.default")
def convert_weight_norm(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    """`_weight_norm(v, g, dim)` (`nn.utils.weight_norm`: wav2vec2's positional
    convolution): `v * (g / ||v||)`, the 2-norm over every dim but `dim` (over all
    of v for dim = -1, torch's norm_except_dim), as mul, sum, sqrt, div and mul;
    fold-constants evaluates them once when v and g are weights."""
    v, g = imp.value(args["v"]), imp.value(args["g"])
    dims = list(shape_of(v))
    dim = int(args.get("dim", 0))
    keep = [] if dim == -1 else [dim % len(dims)]
    reduced = [d for d in range(len(dims)) if d not in keep]
    elem = imp.result_type().get_element_type()
    norm_type = TensorType(elem, [n if d in keep else 1 for d, n in enumerate(dims)])
    square = ew.MulOp.create(operands=[v, v], result_types=[TensorType(elem, dims)])
    total = red.SumOp.create(
        operands=[square.results[0]],
        result_types=[norm_type],
        properties={"dims": array(reduced), "keepdim": BoolAttr.from_bool(True)},
    )
    norm = ew.SqrtOp.create(operands=[total.results[0]], result_types=[norm_type])
    scale_type = TensorType(elem, _broadcast(shape_of(g), norm_type.get_shape()))
    scale = ew.DivOp.create(operands=[g, norm.results[0]], result_types=[scale_type])
    for op in (square, total, norm, scale):
        if (loc := node_location(node)) is not None:
            op.location = loc
        imp.builder.insert(op)
    return ew.MulOp.create(operands=[v, scale.results[0]], result_types=[imp.result_type()])


def _broadcast(a: Sequence[int], b: Sequence[int]) -> list[int]:
    rank = max(len(a), len(b))
    a, b = [1] * (rank - len(a)) + list(a), [1] * (rank - len(b)) + list(b)
    return [x if y == 1 else y for x, y in zip(a, b, strict=True)]


@CONVERTERS("aten.adaptive_avg_pool1d.default")
def convert_adaptive_avg_pool1d(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    """`adaptive_avg_pool1d(x [.., C, L], n)` as torch computes it: `x` unsqueezed
    to `[.., C, 1, L]`, adaptive_avg_pool2d to `(1, n)`, the 1 squeezed (Swin's
    final pooling)."""
    x = imp.value(args["self"])
    dims = list(shape_of(x))
    if len(dims) not in (2, 3):
        raise imp.error(f"adaptive_avg_pool1d takes a 2-D or 3-D input, got {len(dims)}-D")
    size = args["output_size"]
    (size,) = [int(v) for v in (size if isinstance(size, list | tuple) else [size])]
    out = imp.result_type()
    elem = out.get_element_type()
    wide = TensorType(elem, [*dims[:-1], 1, dims[-1]])
    pooled = TensorType(elem, [*dims[:-1], 1, size])
    ops: list[Operation] = [
        sh.UnsqueezeOp.create(
            operands=[x], result_types=[wide], properties={"dim": IntegerAttr(len(dims) - 1, i64)}
        )
    ]
    ops.append(
        layers.AdaptiveAvgPool2dOp.create(
            operands=[ops[0].results[0]],
            result_types=[pooled],
            properties={"output_size": array([1, size])},
        )
    )
    for op in ops:
        if (loc := node_location(node)) is not None:
            op.location = loc
        imp.builder.insert(op)
    return sh.SqueezeOp.create(
        operands=[ops[1].results[0]],
        result_types=[out],
        properties={"dims": array([len(dims) - 1])},
    )


@CONVERTERS("aten.scaled_dot_product_attention.default")
def convert_sdpa(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    if args.get("dropout_p"):
        raise imp.error(
            f"dropout_p={args['dropout_p']} makes attention random: export with dropout_p=0 "
            "(the model in eval mode)"
        )
    operands = [imp.value(args["query"]), imp.value(args["key"]), imp.value(args["value"])]
    if args.get("attn_mask") is not None:
        operands.append(imp.value(args["attn_mask"]))
    props: dict[str, Attribute] = {}
    if args.get("is_causal"):
        props["is_causal"] = true()
    if args.get("scale") is not None:
        props["scale"] = f64(args["scale"])
    if args.get("enable_gqa"):
        props["enable_gqa"] = true()
    return layers.ScaledDotProductAttentionOp.create(
        operands=operands, result_types=[imp.result_type()], properties=props
    )


@CONVERTERS("aten.pixel_shuffle.default")
def convert_pixel_shuffle(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    return layers.PixelShuffleOp.create(
        operands=[imp.value(args["self"])],
        result_types=[imp.result_type()],
        properties={"upscale_factor": IntegerAttr(int(args["upscale_factor"]), i64)},
    )


@CONVERTERS(
    "aten.upsample_nearest2d.vec",
    "aten.upsample_nearest2d.default",
    "aten.upsample_bilinear2d.vec",
    "aten.upsample_bilinear2d.default",
)
def convert_upsample2d(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    """`interpolate(mode="nearest" | "bilinear")`: the output size is the result
    type's; the scale factors (`scale_factors` of `.vec`, `scales_h` / `scales_w` of
    `.default`) are kept, as torch maps indices with them when they are given."""
    bilinear = "bilinear" in str(node.target)
    op_type = layers.UpsampleBilinear2dOp if bilinear else layers.UpsampleNearest2dOp
    if "scale_factors" in args:
        factors = args.get("scale_factors")
        scales = [None, None] if factors is None else list(factors)
    else:
        scales = [args.get("scales_h"), args.get("scales_w")]
    if len(scales) != 2 or any(s is not None and not isinstance(s, int | float) for s in scales):
        raise imp.error(f"{op_type.name} takes two constant scale factors, got {scales!r}")
    props: dict[str, Attribute] = {
        name: FloatAttr(float(s), 64)
        for name, s in zip(("scales_h", "scales_w"), scales, strict=True)
        if s is not None
    }
    if bilinear:
        props["align_corners"] = BoolAttr.from_bool(bool(args.get("align_corners")))
    return op_type.create(
        operands=[imp.value(args.get("input", args.get("self")))],
        result_types=[imp.result_type()],
        properties=props,
    )
