"""Translation validation of convert-to-vkc, one rule at a time.

For every conversion rule (qopt/lowering/convert_to_vkc/, one module per op family),
a tiny module holding that op alone (plus the constants it needs) is interpreted
before and after convert-to-vkc (which runs vkc-plan-buffers and
vkc-insert-barriers at its end) on random inputs: the mid-level semantics
(qopt/interpreters/aten_*, quant, qfused) against the kernels' numpy references
(qopt/interpreters/kernels/). A broken rule fails the case named after its op.
Integer and boolean results must be equal; float results equal to float32
round-off (the references accumulate in their own order). `test_every_rule_has_a_case`
keeps the table complete as rules are added.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp, TensorType

import qopt
from qopt.context import make_context, parse_module
from qopt.dialects.queries import entry_function
from qopt.dtypes import numpy_dtype
from qopt.lowering.convert_to_vkc import FAMILIES, ConvertToVkcPass, get_rules


@dataclass(frozen=True)
class Case:
    """`body` is the text of `func.func @forward`; integer inputs are drawn from
    [low, high), floats from a normal distribution (positive ones if `positive`)."""

    id: str
    body: str
    low: int = -4
    high: int = 5
    positive: bool = False
    rtol: float = 1e-4


def unary(name: str, attrs: str = "", positive: bool = False) -> Case:
    body = f"""func.func @forward(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {{
  %r = aten.{name} %x {attrs}: (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}}"""
    return Case(
        name + ("_" + attrs.strip("{} ").split(" ")[0] if attrs else ""), body, positive=positive
    )


def binary(name: str, elem: str = "f32", out: str | None = None, attrs: str = "") -> Case:
    out = out or elem
    body = f"""func.func @forward(%a: tensor<2x3x{elem}>, %b: tensor<3x{elem}>) -> tensor<2x3x{out}> {{
  %r = aten.{name} %a, %b {attrs}: (tensor<2x3x{elem}>, tensor<3x{elem}>) -> tensor<2x3x{out}>
  func.return %r : tensor<2x3x{out}>
}}"""
    return Case(
        f"{name}_{elem}" + ("_attrs" if attrs else ""),
        body,
        low=1 if name in ("remainder", "fmod") else -4,
    )


def one(
    id: str,
    args: str,
    results: str,
    lines: str,
    low: int = -4,
    high: int = 5,
    rtol: float = 1e-4,
) -> Case:
    """A case from its argument list, result types and body lines (ending in the
    values returned, `func.return` added)."""
    *ops, ret = lines.strip().splitlines()
    body = f"func.func @forward({args}) -> ({results}) {{\n" + "\n".join(
        "  " + o.strip() for o in ops
    )
    body += f"\n  func.return {ret.strip()} : {results}\n}}"
    return Case(id, body, low=low, high=high, rtol=rtol)


F = "tensor<2x3x4xf32>"
WINDOW3 = "dense<[{}]>".format(
    ", ".join(
        "[" + ", ".join("true" if r - 3 < c <= r else "false" for c in range(6)) + "]"
        for r in range(6)
    )
)
"""A 6 x 6 sliding-window causal mask (each row sees its last 3 keys)."""

CASES: list[Case] = [
    # ----- views, layout changes, gathers ----------------------------------------------
    one(
        "view",
        f"%x: {F}",
        "tensor<6x4xf32>",
        "%r = aten.view %x : (tensor<2x3x4xf32>) -> tensor<6x4xf32>\n%r",
    ),
    one(
        "unsqueeze_squeeze",
        f"%x: {F}",
        F,
        """
        %u = aten.unsqueeze %x {dim = -1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4x1xf32>
        %r = aten.squeeze %u {dims = array<i64: 3>} : (tensor<2x3x4x1xf32>) -> tensor<2x3x4xf32>
        %r""",
    ),
    one(
        "clone",
        "%x: tensor<2x3xf32>",
        "tensor<2x3xf32>",
        "%r = aten.clone %x : (tensor<2x3xf32>) -> tensor<2x3xf32>\n%r",
    ),
    one(
        "permute",
        f"%x: {F}",
        "tensor<4x2x3xf32>",
        "%r = aten.permute %x {dims = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>\n%r",
    ),
    one(
        "transpose",
        f"%x: {F}",
        "tensor<4x3x2xf32>",
        "%r = aten.transpose %x {dim0 = 0 : i64, dim1 = 2 : i64} : (tensor<2x3x4xf32>) -> tensor<4x3x2xf32>\n%r",
    ),
    one(
        "expand",
        "%x: tensor<2x1x4xf32>",
        "tensor<3x2x5x4xf32>",
        "%r = aten.expand %x : (tensor<2x1x4xf32>) -> tensor<3x2x5x4xf32>\n%r",
    ),
    one(
        "slice",
        f"%x: {F}",
        "tensor<2x3x2xf32>",
        "%r = aten.slice %x {dim = 2 : i64, start = 1 : i64, end = 9223372036854775807 : i64, step = 2 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x2xf32>\n%r",
    ),
    one(
        "split",
        "%x: tensor<2x7xf32>",
        "tensor<2x3xf32>, tensor<2x4xf32>",
        """
        %a, %b = aten.split %x {sizes = array<i64: 3, 4>, dim = -1 : i64} : (tensor<2x7xf32>) -> (tensor<2x3xf32>, tensor<2x4xf32>)
        %a, %b""",
    ),
    one(
        "index",
        "%x: tensor<4x5xf32>",
        "tensor<2x2xf32>",
        """
        %i = arith.constant dense<[3, 0]> : tensor<2xi64>
        %j = arith.constant dense<[[4], [1]]> : tensor<2x1xi64>
        %r = aten.index %x, %i, %j {indexed_dims = array<i64: 0, 1>} : (tensor<4x5xf32>, tensor<2xi64>, tensor<2x1xi64>) -> tensor<2x2xf32>
        %r""",
    ),
    one(
        "select",
        "%x: tensor<2x4x5xf32>",
        "tensor<2x4xf32>",
        "%r = aten.select %x {dim = 2 : i64, index = -1 : i64} : (tensor<2x4x5xf32>) -> tensor<2x4xf32>\n%r",
    ),
    one(
        "cat",
        f"%x: {F}, %y: tensor<2x3x2xi64>",
        "tensor<2x3x6xf32>",
        """
        %r = aten.cat %x, %y {dim = -1 : i64} : (tensor<2x3x4xf32>, tensor<2x3x2xi64>) -> tensor<2x3x6xf32>
        %r""",
    ),
    one(
        "stack",
        f"%x: {F}, %y: {F}",
        "tensor<2x3x2x4xf32>",
        f"%r = aten.stack %x, %y {{dim = 2 : i64}} : ({F}, {F}) -> tensor<2x3x2x4xf32>\n%r",
    ),
    one(
        "constant_pad_nd",
        "%x: tensor<2x3xf32>",
        "tensor<4x4xf32>",
        "%r = aten.constant_pad_nd %x {pad = array<i64: 2, -1, 1, 1>, value = 5.000000e-01 : f64} : (tensor<2x3xf32>) -> tensor<4x4xf32>\n%r",
    ),
    one(
        "constant_pad_nd_i8_zero_point",
        "%x: tensor<2x3xi8>",
        "tensor<4x4xi8>",
        "%r = aten.constant_pad_nd %x {pad = array<i64: 2, -1, 1, 1>, value = -1.280000e+02 : f64} : (tensor<2x3xi8>) -> tensor<4x4xi8>\n%r",
        low=-128,
        high=128,
    ),
    one(
        "index_select_constant",
        "%x: tensor<4x5xf32>",
        "tensor<4x3xf32>",
        """
        %i = arith.constant dense<[4, 0, 2]> : tensor<3xi64>
        %r = aten.index_select %x, %i {dim = 1 : i64} : (tensor<4x5xf32>, tensor<3xi64>) -> tensor<4x3xf32>
        %r""",
    ),
    one(
        "index_select_runtime",
        "%x: tensor<4x5xf32>, %i: tensor<3xi64>",
        "tensor<3x5xf32>",
        """
        %r = aten.index_select %x, %i {dim = 0 : i64} : (tensor<4x5xf32>, tensor<3xi64>) -> tensor<3x5xf32>
        %r""",
        low=0,
        high=4,
    ),
    one(
        "index_select_runtime_dim1",
        "%x: tensor<3x5xf32>, %i: tensor<4xi64>",
        "tensor<3x4xf32>",
        """
        %r = aten.index_select %x, %i {dim = 1 : i64} : (tensor<3x5xf32>, tensor<4xi64>) -> tensor<3x4xf32>
        %r""",
        low=0,
        high=5,
    ),
    one(
        "index_runtime_negative",
        "%x: tensor<3x5x2xi32>, %i: tensor<2x2xi64>",
        "tensor<3x2x2x2xi32>",
        """
        %r = aten.index %x, %i {indexed_dims = array<i64: 1>} : (tensor<3x5x2xi32>, tensor<2x2xi64>) -> tensor<3x2x2x2xi32>
        %r""",
        low=-5,
        high=5,
    ),
    one(
        "index_put_runtime_broadcast",
        "%x: tensor<1x2x8x4xf32>, %v: tensor<2x1x4xf32>, %pos: tensor<3xi64>",
        "tensor<1x2x8x4xf32>",
        """
        %r = aten.index_put %x, %pos, %v {indexed_dims = array<i64: 2>} : (tensor<1x2x8x4xf32>, tensor<3xi64>, tensor<2x1x4xf32>) -> tensor<1x2x8x4xf32>
        %r""",
        low=-8,
        high=8,
    ),
    one(
        "index_copy_runtime_repeated",
        "%x: tensor<3x4x2xf32>, %src: tensor<3x6x2xf32>, %pos: tensor<6xi64>",
        "tensor<3x4x2xf32>",
        """
        %r = aten.index_copy %x, %pos, %src {dim = 1 : i64} : (tensor<3x4x2xf32>, tensor<6xi64>, tensor<3x6x2xf32>) -> tensor<3x4x2xf32>
        %r""",
        low=0,
        high=4,
    ),
    Case(
        "state_kv_update_in_place",
        """ml_program.global private mutable @k(dense<0.5> : tensor<1x2x8x4xf32>) : tensor<1x2x8x4xf32>
func.func @forward(%v: tensor<1x2x1x4xf32>, %pos: tensor<1xi64>) -> (tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>) {
  %c = ml_program.global_load @k : tensor<1x2x8x4xf32>
  %u = aten.index_copy %c, %pos, %v {dim = 2 : i64} : (tensor<1x2x8x4xf32>, tensor<1xi64>, tensor<1x2x1x4xf32>) -> tensor<1x2x8x4xf32>
  %r = aten.mul %u, %u : (tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32>
  ml_program.global_store @k = %u : tensor<1x2x8x4xf32>
  func.return %r, %u : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>
}""",
        low=0,
        high=8,
    ),
    Case(
        "state_store_copies_after_reads",
        """ml_program.global private mutable @a(dense<[1, 2, 3]> : tensor<3xi64>) : tensor<3xi64>
ml_program.global private mutable @b(dense<[10, 20, 30]> : tensor<3xi64>) : tensor<3xi64>
func.func @forward(%x: tensor<3xi64>) -> (tensor<3xi64>, tensor<3xi64>) {
  %a = ml_program.global_load @a : tensor<3xi64>
  %b = ml_program.global_load @b : tensor<3xi64>
  %s = aten.add %a, %x : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi64>
  ml_program.global_store @a = %b : tensor<3xi64>
  ml_program.global_store @b = %s : tensor<3xi64>
  func.return %a, %b : tensor<3xi64>, tensor<3xi64>
}""",
    ),
    one(
        "repeat",
        "%x: tensor<1x3x2xf32>",
        "tensor<2x3x6xf32>",
        "%r = aten.repeat %x {repeats = array<i64: 2, 1, 3>} : (tensor<1x3x2xf32>) -> tensor<2x3x6xf32>\n%r",
    ),
    one(
        "repeat_interleave",
        "%x: tensor<1x2x3x4xf32>",
        "tensor<1x4x3x4xf32>",
        "%r = aten.repeat_interleave %x {repeats = 2 : i64, dim = -3 : i64} : (tensor<1x2x3x4xf32>) -> tensor<1x4x3x4xf32>\n%r",
    ),
    one(
        "repeat_interleave_flattened_int",
        "%x: tensor<2x3xi32>",
        "tensor<18xi32>",
        "%r = aten.repeat_interleave %x {repeats = 3 : i64} : (tensor<2x3xi32>) -> tensor<18xi32>\n%r",
    ),
    one(
        "slice_scatter",
        "%x: tensor<1x2x8x4xf32>, %k: tensor<1x2x2x4xf32>",
        "tensor<1x2x8x4xf32>",
        "%r = aten.slice_scatter %x, %k {dim = 2 : i64, start = 3 : i64, end = 5 : i64, step = 1 : i64} : (tensor<1x2x8x4xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x8x4xf32>\n%r",
    ),
    one(
        "slice_scatter_step_cast",
        "%x: tensor<3x5xf32>, %k: tensor<3x2xi64>",
        "tensor<3x5xf32>",
        "%r = aten.slice_scatter %x, %k {dim = -1 : i64, start = 1 : i64, end = 9223372036854775807 : i64, step = 2 : i64} : (tensor<3x5xf32>, tensor<3x2xi64>) -> tensor<3x5xf32>\n%r",
    ),
    one(
        "select_scatter",
        "%x: tensor<1x2x8x4xf32>, %k: tensor<1x2x4xf32>",
        "tensor<1x2x8x4xf32>",
        "%r = aten.select_scatter %x, %k {dim = 2 : i64, index = -1 : i64} : (tensor<1x2x8x4xf32>, tensor<1x2x4xf32>) -> tensor<1x2x8x4xf32>\n%r",
    ),
    one(
        "select_scatter_to_bool",
        "%x: tensor<3xi1>, %k: tensor<f32>",
        "tensor<3xi1>",
        "%r = aten.select_scatter %x, %k {dim = 0 : i64, index = 1 : i64} : (tensor<3xi1>, tensor<f32>) -> tensor<3xi1>\n%r",
    ),
    one(
        "pixel_shuffle",
        "%x: tensor<1x8x1x2xf32>",
        "tensor<1x2x2x4xf32>",
        "%r = aten.pixel_shuffle %x {upscale_factor = 2 : i64} : (tensor<1x8x1x2xf32>) -> tensor<1x2x2x4xf32>\n%r",
    ),
    one("flip", f"%x: {F}", F, f"%r = aten.flip %x {{dims = array<i64: 0, 2>}} : ({F}) -> {F}\n%r"),
    one(  # torch.gather: an index smaller than x in another dim; int values (RoBERTa)
        "gather",
        "%x: tensor<3x5xf32>, %t: tensor<1x6xi64>",
        "tensor<2x4xf32>, tensor<1x3xi64>",
        """
        %i = arith.constant dense<[[4, 0, 2, 2], [1, 3, 0, 4]]> : tensor<2x4xi64>
        %j = arith.constant dense<[[5, 0, 1]]> : tensor<1x3xi64>
        %r = aten.gather %x, %i {dim = 1 : i64} : (tensor<3x5xf32>, tensor<2x4xi64>) -> tensor<2x4xf32>
        %s = aten.gather %t, %j {dim = -1 : i64} : (tensor<1x6xi64>, tensor<1x3xi64>) -> tensor<1x3xi64>
        %r, %s
        """,
    ),
    one(  # a scan of 3 rounds over 7; RoBERTa's int32 padding mask summed as int64
        "cumsum",
        "%x: tensor<2x7x3xf32>, %m: tensor<2x5xi32>",
        "tensor<2x7x3xf32>, tensor<2x5xi64>",
        """
        %r = aten.cumsum %x {dim = -2 : i64} : (tensor<2x7x3xf32>) -> tensor<2x7x3xf32>
        %s = aten.cumsum %m {dim = 1 : i64} : (tensor<2x5xi32>) -> tensor<2x5xi64>
        %r, %s
        """,
    ),
    one(
        "roll",
        f"%x: {F}",
        F,
        f"%r = aten.roll %x {{shifts = array<i64: 1, -2>, dims = array<i64: 0, 2>}} : ({F}) -> {F}\n%r",
    ),
    one(
        "embedding",
        "%t: tensor<5x4xf32>, %ids: tensor<1x3xi64>",
        "tensor<1x3x4xf32>",
        """
        %r = aten.embedding %t, %ids : (tensor<5x4xf32>, tensor<1x3xi64>) -> tensor<1x3x4xf32>
        %r""",
        low=0,
        high=5,
    ),
    # ----- elementwise ---------------------------------------------------------------------
    *(
        unary(n, positive=n in ("log", "sqrt", "rsqrt"))
        for n in (
            "relu",
            "silu",
            "sigmoid",
            "tanh",
            "exp",
            "log",
            "sqrt",
            "rsqrt",
            "reciprocal",
            "sin",
            "cos",
            "erf",
            "neg",
            "abs",
            "floor",
            "ceil",
            "round",
            "hardswish",
            "hardsigmoid",
            "gelu",
        )
    ),
    unary("gelu", '{approximate = "tanh"} '),
    unary("clamp", "{min = -1.000000e+00 : f64, max = 5.000000e-01 : f64} "),
    unary("leaky_relu", "{negative_slope = 2.000000e-01 : f64} "),
    *(unary(n, positive=True) for n in ("log10", "log2")),
    unary("tan"),
    *(unary(n) for n in ("asin", "acos", "atan", "sinh", "cosh", "trunc", "sign")),
    *(unary(n) for n in ("expm1", "log1p")),
    one(
        "isinf_isfinite_sign_i32",
        "%x: tensor<2x3xf32>, %i: tensor<2x3xi32>",
        "tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi32>, tensor<2x3xi1>",
        """%a = aten.isinf %x : (tensor<2x3xf32>) -> tensor<2x3xi1>
%b = aten.isfinite %x : (tensor<2x3xf32>) -> tensor<2x3xi1>
%c = aten.sign %i : (tensor<2x3xi32>) -> tensor<2x3xi32>
%d = aten.isfinite %i : (tensor<2x3xi32>) -> tensor<2x3xi1>
%a, %b, %c, %d""",
    ),
    one(
        "signbit_f32_i32",
        "%x: tensor<2x3xf32>, %i: tensor<2x3xi32>",
        "tensor<2x3xi1>, tensor<2x3xi1>",
        """%a = aten.signbit %x : (tensor<2x3xf32>) -> tensor<2x3xi1>
%b = aten.signbit %i : (tensor<2x3xi32>) -> tensor<2x3xi1>
%a, %b""",
    ),
    unary("hardshrink", "{lambd = 2.500000e-01 : f64} "),
    unary("softshrink"),
    one(
        "group_norm",
        "%x: tensor<2x4x3xf32>, %w: tensor<4xf32>, %b: tensor<4xf32>",
        "tensor<2x4x3xf32>",
        "%r = aten.group_norm %x weight(%w : tensor<4xf32>) bias(%b : tensor<4xf32>) {num_groups = 2 : i64} : tensor<2x4x3xf32> -> tensor<2x4x3xf32>\n%r",
    ),
    one(
        "upsample_bilinear",
        "%x: tensor<1x2x3x4xf32>",
        "tensor<1x2x5x7xf32>",
        "%r = aten.upsample_bilinear2d %x : (tensor<1x2x3x4xf32>) -> tensor<1x2x5x7xf32>\n%r",
    ),
    one(
        "upsample_nearest",
        "%x: tensor<1x2x3x4xf32>",
        "tensor<1x2x5x9xf32>",
        "%r = aten.upsample_nearest2d %x {scales_h = 1.700000e+00 : f64, scales_w = 2.300000e+00 : f64} : (tensor<1x2x3x4xf32>) -> tensor<1x2x5x9xf32>\n%r",
    ),
    one(
        "relu_i32",
        "%x: tensor<2x3xi32>",
        "tensor<2x3xi32>",
        "%r = aten.relu %x : (tensor<2x3xi32>) -> tensor<2x3xi32>\n%r",
    ),
    one(
        "clamp_min_i64",
        "%x: tensor<2x3xi64>",
        "tensor<2x3xi64>",
        "%r = aten.clamp %x {min = -1.000000e+00 : f64} : (tensor<2x3xi64>) -> tensor<2x3xi64>\n%r",
    ),
    one(
        "floor_i64",
        "%x: tensor<2x3xi64>",
        "tensor<2x3xi64>",
        "%r = aten.floor %x : (tensor<2x3xi64>) -> tensor<2x3xi64>\n%r",
    ),
    one(
        "to_f32_i32",
        "%x: tensor<2x3xf32>",
        "tensor<2x3xi32>",
        "%r = aten.to %x : (tensor<2x3xf32>) -> tensor<2x3xi32>\n%r",
    ),
    one(
        "to_i64_f32",
        "%x: tensor<2x3xi64>",
        "tensor<2x3xf32>",
        "%r = aten.to %x : (tensor<2x3xi64>) -> tensor<2x3xf32>\n%r",
    ),
    one(
        "to_f32_bool",
        "%x: tensor<2x3xf32>",
        "tensor<2x3xi1>",
        "%r = aten.to %x : (tensor<2x3xf32>) -> tensor<2x3xi1>\n%r",
    ),
    one(
        "logical_not",
        "%x: tensor<2x3xi1>",
        "tensor<2x3xi1>",
        "%r = aten.logical_not %x : (tensor<2x3xi1>) -> tensor<2x3xi1>\n%r",
    ),
    one(
        "bitwise_not_i32",
        "%x: tensor<2x3xi32>",
        "tensor<2x3xi32>",
        "%r = aten.bitwise_not %x : (tensor<2x3xi32>) -> tensor<2x3xi32>\n%r",
    ),
    one(
        "bitwise_not_bool",
        "%x: tensor<2x3xi1>",
        "tensor<2x3xi1>",
        "%r = aten.bitwise_not %x : (tensor<2x3xi1>) -> tensor<2x3xi1>\n%r",
    ),
    one(
        "isnan",
        "%x: tensor<2x3xf32>",
        "tensor<2x3xi1>",
        """
        %z = arith.constant dense<0.0> : tensor<2x3xf32>
        %n = aten.div %x, %z : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
        %d = aten.sub %n, %n : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
        %r = aten.isnan %d : (tensor<2x3xf32>) -> tensor<2x3xi1>
        %r""",
    ),
    *(binary(n) for n in ("add", "sub", "mul", "div", "maximum", "minimum", "remainder", "fmod")),
    binary("add", attrs="{alpha = 2.000000e+00 : f64} "),
    binary("sub", "i32", attrs="{alpha = 3.000000e+00 : f64} "),
    binary("div", attrs='{rounding_mode = "floor"} '),
    one(
        "div_trunc_f32_i32",
        "%x: tensor<2x3xf32>, %y: tensor<3xf32>, %i: tensor<2x3xi32>, %j: tensor<3xi32>",
        "tensor<2x3xf32>, tensor<2x3xi32>",
        """%a = aten.div %x, %y {rounding_mode = "trunc"} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
%b = aten.div %i, %j {rounding_mode = "trunc"} : (tensor<2x3xi32>, tensor<3xi32>) -> tensor<2x3xi32>
%a, %b""",
        low=1,
    ),
    binary("pow"),
    *(
        binary(n, "i32")
        for n in (
            "mul",
            "maximum",
            "remainder",
            "bitwise_and",
            "bitwise_or",
            "bitwise_xor",
            "bitwise_left_shift",
            "bitwise_right_shift",
        )
    ),
    *(binary(n, "f32", "i1") for n in ("eq", "ne", "lt", "le", "gt", "ge")),
    *(binary(n, "i1") for n in ("logical_and", "logical_or", "logical_xor")),
    one(
        "logical_xor_f32",
        "%a: tensor<2x3xf32>, %b: tensor<3xi32>",
        "tensor<2x3xi1>",
        """
        %r = aten.logical_xor %a, %b : (tensor<2x3xf32>, tensor<3xi32>) -> tensor<2x3xi1>
        %r""",
        low=-1,
        high=2,
    ),
    one(
        "where",
        "%c: tensor<4x5xi1>, %x: tensor<4x5xf32>, %y: tensor<5xf32>",
        "tensor<4x5xf32>",
        """
        %r = aten.where %c, %x, %y : (tensor<4x5xi1>, tensor<4x5xf32>, tensor<5xf32>) -> tensor<4x5xf32>
        %r""",
    ),
    one(
        "masked_fill",
        "%x: tensor<2x3xf32>, %m: tensor<1x3xi1>",
        "tensor<2x3xf32>",
        """
        %v = arith.constant dense<-2.5> : tensor<f32>
        %r = aten.masked_fill %x, %m, %v : (tensor<2x3xf32>, tensor<1x3xi1>, tensor<f32>) -> tensor<2x3xf32>
        %r""",
    ),
    one("tril", f"%x: {F}", F, f"%r = aten.tril %x {{diagonal = 0 : i64}} : ({F}) -> {F}\n%r"),
    one(
        "triu",
        "%x: tensor<3x4xi32>",
        "tensor<3x4xi32>",
        "%r = aten.triu %x {diagonal = 1 : i64} : (tensor<3x4xi32>) -> tensor<3x4xi32>\n%r",
    ),
    # ----- reductions and normalisation ------------------------------------------------------
    one(
        "sum",
        f"%x: {F}",
        "tensor<2x1x4xf32>",
        f"%r = aten.sum %x {{dims = array<i64: 1>, keepdim = true}} : ({F}) -> tensor<2x1x4xf32>\n%r",
    ),
    one(
        "mean",
        f"%x: {F}",
        "tensor<2x3xf32>",
        f"%r = aten.mean %x {{dims = array<i64: -1>}} : ({F}) -> tensor<2x3xf32>\n%r",
    ),
    one("amax", f"%x: {F}", "tensor<f32>", f"%r = aten.amax %x : ({F}) -> tensor<f32>\n%r"),
    one(
        "amin",
        f"%x: {F}",
        "tensor<2x4xf32>",
        f"%r = aten.amin %x {{dims = array<i64: 1>}} : ({F}) -> tensor<2x4xf32>\n%r",
    ),
    one("softmax", f"%x: {F}", F, f"%r = aten.softmax %x {{dim = -1 : i64}} : ({F}) -> {F}\n%r"),
    one(
        "log_softmax",
        f"%x: {F}",
        F,
        f"%r = aten.log_softmax %x {{dim = 1 : i64}} : ({F}) -> {F}\n%r",
    ),
    one(
        "layer_norm",
        f"%x: {F}, %w: tensor<4xf32>, %b: tensor<4xf32>",
        F,
        f"""
        %r = aten.layer_norm %x weight(%w : tensor<4xf32>) bias(%b : tensor<4xf32>) {{normalized_shape = array<i64: 4>, eps = 1.000000e-05 : f64}} : {F} -> {F}
        %r""",
    ),
    one(
        "layer_norm_plain",
        f"%x: {F}",
        F,
        f"""
        %r = aten.layer_norm %x {{normalized_shape = array<i64: 3, 4>, eps = 1.000000e-05 : f64}} : {F} -> {F}
        %r""",
    ),
    one(
        "batch_norm",
        "%x: tensor<1x2x3x3xf32>",
        "tensor<1x2x3x3xf32>",
        """
        %m = arith.constant dense<[0.5, -1.0]> : tensor<2xf32>
        %v = arith.constant dense<[2.0, 0.25]> : tensor<2xf32>
        %w = arith.constant dense<[1.5, -0.5]> : tensor<2xf32>
        %b = arith.constant dense<[0.1, 0.2]> : tensor<2xf32>
        %y = aten.batch_norm %x, %m, %v weight(%w : tensor<2xf32>) bias(%b : tensor<2xf32>) {eps = 1.000000e-03 : f64} : tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<1x2x3x3xf32>
        %y""",
    ),
    one(
        "argmax",
        f"%x: {F}",
        "tensor<2x3xi64>",
        f"%r = aten.argmax %x {{dim = -1 : i64}} : ({F}) -> tensor<2x3xi64>\n%r",
    ),
    one("argmin", f"%x: {F}", "tensor<i64>", f"%r = aten.argmin %x : ({F}) -> tensor<i64>\n%r"),
    one(
        "max_dim",
        f"%x: {F}",
        "tensor<2x4xf32>, tensor<2x4xi64>",
        f"""
        %v, %i = aten.max_dim %x {{dim = 1 : i64}} : ({F}) -> (tensor<2x4xf32>, tensor<2x4xi64>)
        %v, %i""",
    ),
    one(
        "min_dim",
        f"%x: {F}",
        "tensor<2x3x1xf32>, tensor<2x3x1xi64>",
        f"""
        %v, %i = aten.min_dim %x {{dim = -1 : i64, keepdim = true}} : ({F}) -> (tensor<2x3x1xf32>, tensor<2x3x1xi64>)
        %v, %i""",
    ),
    one(
        "var",
        f"%x: {F}",
        "tensor<2x4xf32>",
        f"%r = aten.var %x {{dims = array<i64: 1>}} : ({F}) -> tensor<2x4xf32>\n%r",
    ),
    one(
        "std",
        f"%x: {F}",
        "tensor<1x3x1xf32>",
        f"%r = aten.std %x {{dims = array<i64: 0, 2>, keepdim = true, correction = 0.000000e+00 : f64}} : ({F}) -> tensor<1x3x1xf32>\n%r",
    ),
    one(  # 1-D matmul operands (benchmarks/conformance.py)
        "matmul_vectors",
        "%v: tensor<3xf32>, %m: tensor<2x3x4xf32>, %w: tensor<4xf32>",
        "tensor<f32>, tensor<2x4xf32>, tensor<2x3xf32>",
        """
        %d = aten.matmul %v, %v : (tensor<3xf32>, tensor<3xf32>) -> tensor<f32>
        %l = aten.matmul %v, %m : (tensor<3xf32>, tensor<2x3x4xf32>) -> tensor<2x4xf32>
        %r = aten.matmul %m, %w : (tensor<2x3x4xf32>, tensor<4xf32>) -> tensor<2x3xf32>
        %d, %l, %r""",
    ),
    one(  # float results of integer operands, computed in f32 (benchmarks/conformance.py)
        "int_to_float",
        "%i: tensor<2x3xi32>, %j: tensor<3xi64>",
        "tensor<2x3xf32>, tensor<2x3xf32>",
        """
        %e = aten.exp %i : (tensor<2x3xi32>) -> tensor<2x3xf32>
        %d = aten.div %i, %j : (tensor<2x3xi32>, tensor<3xi64>) -> tensor<2x3xf32>
        %e, %d""",
        low=1,
    ),
    one(  # torch's dim 0 / -1 of a rank-0 tensor (found by benchmarks/conformance.py)
        "sum_rank0",
        "%x: tensor<f32>, %b: tensor<i1>",
        "tensor<f32>, tensor<i1>",
        """
        %r = aten.sum %x {dims = array<i64: 0>} : (tensor<f32>) -> tensor<f32>
        %a = aten.any %b {dims = array<i64: -1>, keepdim = true} : (tensor<i1>) -> tensor<i1>
        %r, %a""",
    ),
    one(
        "any",
        "%x: tensor<2x3x4xi1>",
        "tensor<i1>",
        "%r = aten.any %x : (tensor<2x3x4xi1>) -> tensor<i1>\n%r",
    ),
    one(
        "all",
        f"%x: {F}",
        "tensor<2x4xi1>",
        f"%r = aten.all %x {{dims = array<i64: 1>}} : ({F}) -> tensor<2x4xi1>\n%r",
    ),
    one("max", f"%x: {F}", "tensor<f32>", f"%r = aten.max %x : ({F}) -> tensor<f32>\n%r"),
    one("min", f"%x: {F}", "tensor<f32>", f"%r = aten.min %x : ({F}) -> tensor<f32>\n%r"),
    # ----- linear algebra, convolution, pooling ------------------------------------------
    one(
        "linear",
        "%x: tensor<2x5x4xf32>, %w: tensor<3x4xf32>, %b: tensor<3xf32>",
        "tensor<2x5x3xf32>",
        """
        %r = aten.linear %x, %w, %b : (tensor<2x5x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<2x5x3xf32>
        %r""",
    ),
    one(
        "addmm",
        "%b: tensor<2xf32>, %x: tensor<4x3xf32>, %w: tensor<3x2xf32>",
        "tensor<4x2xf32>",
        """
        %r = aten.addmm %b, %x, %w : (tensor<2xf32>, tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
        %r""",
    ),
    one(  # batched and scaled (baddbmm): composed as matmul, mul and add (compose.py)
        "baddbmm",
        "%c: tensor<2x2x2xf32>, %a: tensor<2x2x3xf32>, %b: tensor<2x3x2xf32>",
        "tensor<2x2x2xf32>",
        """
        %r = aten.addmm %c, %a, %b {beta = 5.000000e-01 : f64, alpha = 2.000000e+00 : f64} : (tensor<2x2x2xf32>, tensor<2x2x3xf32>, tensor<2x3x2xf32>) -> tensor<2x2x2xf32>
        %r""",
    ),
    one(
        "matmul",
        "%a: tensor<2x1x3x4xf32>, %b: tensor<3x4x5xf32>",
        "tensor<2x3x3x5xf32>",
        """
        %r = aten.matmul %a, %b : (tensor<2x1x3x4xf32>, tensor<3x4x5xf32>) -> tensor<2x3x3x5xf32>
        %r""",
    ),
    one(
        "conv2d",
        "%x: tensor<1x2x4x4xf32>, %w: tensor<3x2x3x3xf32>, %b: tensor<3xf32>",
        "tensor<1x3x2x2xf32>",
        """
        %r = aten.conv2d %x, %w, %b {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32>, tensor<3xf32>) -> tensor<1x3x2x2xf32>
        %r""",
    ),
    one(
        "max_pool2d",
        "%x: tensor<1x2x5x5xf32>",
        "tensor<1x2x3x3xf32>",
        """
        %r = aten.max_pool2d %x {kernel_size = array<i64: 3, 3>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>} : (tensor<1x2x5x5xf32>) -> tensor<1x2x3x3xf32>
        %r""",
    ),
    one(
        "avg_pool2d",
        "%x: tensor<1x2x4x4xf32>",
        "tensor<1x2x2x2xf32>",
        """
        %r = aten.avg_pool2d %x {kernel_size = array<i64: 3, 3>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, count_include_pad = false} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
        %r""",
    ),
    one(
        "adaptive_avg_pool2d_1x1",
        "%x: tensor<1x2x4x4xf32>",
        "tensor<1x2x1x1xf32>",
        """
        %r = aten.adaptive_avg_pool2d %x {output_size = array<i64: 1, 1>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x1x1xf32>
        %r""",
    ),
    one(
        "adaptive_avg_pool2d_2x3",
        "%x: tensor<1x2x5x4xf32>",
        "tensor<1x2x2x3xf32>",
        """
        %r = aten.adaptive_avg_pool2d %x {output_size = array<i64: 2, 3>} : (tensor<1x2x5x4xf32>) -> tensor<1x2x2x3xf32>
        %r""",
    ),
    # ----- attention ---------------------------------------------------------------------------
    one(
        "sdpa_causal",
        "%q: tensor<1x2x3x8xf32>, %k: tensor<1x2x3x8xf32>, %v: tensor<1x2x3x8xf32>",
        "tensor<1x2x3x8xf32>",
        """
        %r = aten.scaled_dot_product_attention %q, %k, %v {is_causal = true} : (tensor<1x2x3x8xf32>, tensor<1x2x3x8xf32>, tensor<1x2x3x8xf32>) -> tensor<1x2x3x8xf32>
        %r""",
    ),
    one(
        "sdpa_bool_mask_gqa",
        "%q: tensor<1x4x3x8xf32>, %k: tensor<1x2x5x8xf32>, %v: tensor<1x2x5x6xf32>, %m: tensor<3x5xi1>",
        "tensor<1x4x3x6xf32>",
        """
        %r = aten.scaled_dot_product_attention %q, %k, %v, %m {enable_gqa = true, scale = 2.500000e-01 : f64} : (tensor<1x4x3x8xf32>, tensor<1x2x5x8xf32>, tensor<1x2x5x6xf32>, tensor<3x5xi1>) -> tensor<1x4x3x6xf32>
        %r""",
        low=1,
        high=2,
    ),
    one(
        "sdpa_repeat_interleave_heads",
        "%q: tensor<2x6x3x8xf32>, %k: tensor<2x2x5x8xf32>, %v: tensor<2x2x5x8xf32>, %m: tensor<3x5xf32>",
        "tensor<2x6x3x8xf32>",
        """
        %kr = aten.repeat_interleave %k {repeats = 3 : i64, dim = 1 : i64} : (tensor<2x2x5x8xf32>) -> tensor<2x6x5x8xf32>
        %vr = aten.repeat_interleave %v {repeats = 3 : i64, dim = -3 : i64} : (tensor<2x2x5x8xf32>) -> tensor<2x6x5x8xf32>
        %r = aten.scaled_dot_product_attention %q, %kr, %vr, %m : (tensor<2x6x3x8xf32>, tensor<2x6x5x8xf32>, tensor<2x6x5x8xf32>, tensor<3x5xf32>) -> tensor<2x6x3x8xf32>
        %r""",
    ),
    one(
        "sdpa_mixed_groups_and_broadcast",
        "%q: tensor<2x4x3x8xf32>, %k: tensor<2x2x5x8xf32>, %v: tensor<2x4x5x8xf32>, %kb: tensor<1x1x5x8xf32>",
        "tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>",
        """
        %kr = aten.repeat_interleave %k {repeats = 2 : i64, dim = 1 : i64} : (tensor<2x2x5x8xf32>) -> tensor<2x4x5x8xf32>
        %a = aten.scaled_dot_product_attention %q, %kr, %v : (tensor<2x4x3x8xf32>, tensor<2x4x5x8xf32>, tensor<2x4x5x8xf32>) -> tensor<2x4x3x8xf32>
        %b = aten.scaled_dot_product_attention %q, %kb, %kb {is_causal = true} : (tensor<2x4x3x8xf32>, tensor<1x1x5x8xf32>, tensor<1x1x5x8xf32>) -> tensor<2x4x3x8xf32>
        %kr2 = aten.repeat_interleave %k {repeats = 2 : i64, dim = 1 : i64} : (tensor<2x2x5x8xf32>) -> tensor<2x4x5x8xf32>
        %c = aten.scaled_dot_product_attention %q, %kr2, %kr2 : (tensor<2x4x3x8xf32>, tensor<2x4x5x8xf32>, tensor<2x4x5x8xf32>) -> tensor<2x4x3x8xf32>
        %a, %b, %c""",
    ),
    # attention over a 6-row cache at run-time position %p (bounded by mask_bound): a
    # sliding-window boolean mask gathered from a table (ExecuTorch's `mask[input_pos]`)
    # and an additive causal mask built from the position (HF's `cache_position`)
    one(
        "sdpa_kv_cache_position_masks",
        "%q: tensor<1x4x1x8xf32>, %k: tensor<1x2x6x8xf32>, %v: tensor<1x2x6x8xf32>, %p: tensor<1xi64>",
        "tensor<1x4x1x8xf32>, tensor<1x4x1x8xf32>",
        f"""
        %t = arith.constant {WINDOW3} : tensor<6x6xi1>
        %m = aten.index_select %t, %p {{dim = 0 : i64}} : (tensor<6x6xi1>, tensor<1xi64>) -> tensor<1x6xi1>
        %z = arith.constant dense<0.0> : tensor<f32>
        %n = aten.log %z : (tensor<f32>) -> tensor<f32>
        %c = arith.constant dense<[[0, 1, 2, 3, 4, 5]]> : tensor<1x6xi64>
        %le = aten.le %c, %p : (tensor<1x6xi64>, tensor<1xi64>) -> tensor<1x6xi1>
        %f = aten.where %le, %z, %n : (tensor<1x6xi1>, tensor<f32>, tensor<f32>) -> tensor<1x6xf32>
        %a = aten.scaled_dot_product_attention %q, %k, %v, %m {{enable_gqa = true}} : (tensor<1x4x1x8xf32>, tensor<1x2x6x8xf32>, tensor<1x2x6x8xf32>, tensor<1x6xi1>) -> tensor<1x4x1x8xf32>
        %b = aten.scaled_dot_product_attention %q, %k, %v, %f {{enable_gqa = true}} : (tensor<1x4x1x8xf32>, tensor<1x2x6x8xf32>, tensor<1x2x6x8xf32>, tensor<1x6xf32>) -> tensor<1x4x1x8xf32>
        %a, %b""",
        low=0,
        high=6,
    ),
    # ----- standalone quantization ----------------------------------------------------------
    one(
        "quantize_dequantize",
        "%x: tensor<2x4xf32>",
        "tensor<2x4xi8>, tensor<2x4xf32>",
        """
        %s = arith.constant dense<0.05> : tensor<f32>
        %zp = arith.constant dense<3> : tensor<i8>
        %q = quant.quantize %x, %s, %zp {block_size = array<i64: 2, 4>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<2x4xf32>, tensor<f32>, tensor<i8>) -> tensor<2x4xi8>
        %d = quant.dequantize %q, %s, %zp {block_size = array<i64: 2, 4>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<2x4xi8>, tensor<f32>, tensor<i8>) -> tensor<2x4xf32>
        %q, %d""",
    ),
    # ----- fused quantized ops ---------------------------------------------------------------
    one(
        "qfused_linear_q4gsw",
        "%x: tensor<2x8xf32>",
        "tensor<2x3xf32>",
        """
        %w = arith.constant dense<[[1, -2, 3, -4, 5, -6, 7, -8], [0, 1, 2, 3, 4, 5, 6, 7], [-1, -1, -1, -1, 1, 1, 1, 1]]> : tensor<3x8xi8>
        %s = arith.constant dense<[[0.5, 0.25], [0.125, 1.0], [2.0, 0.5]]> : tensor<3x2xf32>
        %b = arith.constant dense<[0.1, 0.2, 0.3]> : tensor<3xf32>
        %y = qfused.linear %x, %w, %s bias %b {weight_scheme = #qfused.affine<bits = 4, range = [-8, 7], block = [1, 4]>, kernel = "linear_q4gsw"} : tensor<2x8xf32>, tensor<3x8xi8>, tensor<3x2xf32> bias tensor<3xf32> -> tensor<2x3xf32>
        %y""",
    ),
    one(
        "qfused_linear_q8ta_requant",
        "%x: tensor<2x8xi8>",
        "tensor<2x3xi8>",
        """
        %w = arith.constant dense<[[1, -2, 3, -4, 5, -6, 7, -8], [0, 1, 2, 3, 4, 5, 6, 7], [-1, -1, -1, -1, 1, 1, 1, 1]]> : tensor<3x8xi8>
        %s = arith.constant dense<[[0.5], [0.25], [0.125]]> : tensor<3x1xf32>
        %y = qfused.linear %x, %w, %s {weight_scheme = #qfused.affine<bits = 8, range = [-127, 127], block = [1, 8]>, act = #qfused.static<scale = 0.05, zero_point = 3, range = [-128, 127]>, requant = #qfused.static<scale = 0.1, zero_point = -128, range = [-128, 127]>, clamp_min = 0.0 : f64, clamp_max = 6.0 : f64, kernel = "linear_q8ta_q8csw_q8to"} : tensor<2x8xi8>, tensor<3x8xi8>, tensor<3x1xf32> -> tensor<2x3xi8>
        %y""",
        low=-60,
        high=60,
    ),
    one(  # .item() + narrow (expand_dynamic_windows); the check is an assert_true dispatch
        "item_narrow_assert",
        "%p: tensor<1xi64>, %x: tensor<4x2xf32>",
        "tensor<2x2xf32>",
        """
        %s0 = aten.select %p {dim = 0 : i64, index = 0 : i64} : (tensor<1xi64>) -> tensor<i64>
        %s = aten.item %s0 {range = array<i64: 0, 2>} : (tensor<i64>) -> tensor<i64>
        %three = arith.constant dense<3> : tensor<i64>
        %ok = aten.lt %s, %three : (tensor<i64>, tensor<i64>) -> tensor<i1>
        aten.assert_scalar %ok {message = "u0 < 3"} : tensor<i1>
        %w = aten.dynamic_slice %x, %s {dim = 0 : i64} : (tensor<4x2xf32>, tensor<i64>) -> tensor<2x2xf32>
        %w
        """,
        low=0,
        high=3,
    ),
    one(
        "qfused_linear_dq8ca",
        "%x: tensor<2x8xf32>",
        "tensor<2x3xf32>",
        """
        %w = arith.constant dense<[[1, -2, 3, -4, 5, -6, 7, -8], [0, 1, 2, 3, 4, 5, 6, 7], [-1, -1, -1, -1, 1, 1, 1, 1]]> : tensor<3x8xi8>
        %s = arith.constant dense<[[0.5, 0.25], [0.125, 1.0], [2.0, 0.5]]> : tensor<3x2xf32>
        %y = qfused.linear %x, %w, %s {weight_scheme = #qfused.affine<bits = 4, range = [-8, 7], block = [1, 4]>, act = #qfused.dynamic<per_token, asymmetric, range = [-128, 127], eps = 1.1920928955078125e-07, scale_type = f32>, kernel = "linear_dq8ca_q4gsw"} : tensor<2x8xf32>, tensor<3x8xi8>, tensor<3x2xf32> -> tensor<2x3xf32>
        %y""",
        rtol=1e-3,
    ),
    one(
        "qfused_linear_lut",
        "%x: tensor<2x8xf32>",
        "tensor<2x3xf32>",
        """
        %c = arith.constant dense<[[0, 1, 2, 3, 4, 5, 6, 7], [7, 6, 5, 4, 3, 2, 1, 0], [1, 1, 1, 1, 2, 2, 2, 2]]> : tensor<3x8xui8>
        %book = arith.constant dense<[[[[0.5], [-1.0], [0.25], [2.0], [1.5], [-0.5], [0.0], [3.0]], [[1.0], [1.0], [-2.0], [0.5], [0.5], [0.75], [-0.25], [1.0]]]]> : tensor<1x2x8x1xf32>
        %y = qfused.linear %x, %c, %book {weight_scheme = #qfused.lut<nbits = 3, block = [-1, 4]>, kernel = "linear_lut3w"} : tensor<2x8xf32>, tensor<3x8xui8>, tensor<1x2x8x1xf32> -> tensor<2x3xf32>
        %y""",
    ),
    one(  # palette blocks of whole words: codebook (padded to whole vec4s) and x uniform
        "qfused_linear_lut_uniform",
        "%x: tensor<2x8xf32>",
        "tensor<2x3xf32>",
        """
        %c = arith.constant dense<[[0, 1, 2, 3, 4, 5, 6, 7], [7, 6, 5, 4, 3, 2, 1, 0], [1, 1, 1, 1, 2, 2, 2, 2]]> : tensor<3x8xui8>
        %book = arith.constant dense<[[[[0.5], [-1.0], [0.25], [2.0], [1.5], [-0.5], [0.0], [3.0]]], [[[1.0], [1.0], [-2.0], [0.5], [0.5], [0.75], [-0.25], [1.0]]], [[[2.0], [-3.0], [0.125], [1.0], [0.5], [4.0], [-1.5], [0.25]]]]> : tensor<3x1x8x1xf32>
        %b = arith.constant dense<[0.5, -1.0, 2.0]> : tensor<3xf32>
        %y = qfused.linear %x, %c, %book bias %b {weight_scheme = #qfused.lut<nbits = 3, block = [1, -1]>, kernel = "linear_lut3w"} : tensor<2x8xf32>, tensor<3x8xui8>, tensor<3x1x8x1xf32> bias tensor<3xf32> -> tensor<2x3xf32>
        %y""",
    ),
    one(
        "qfused_embedding_q4gaw",
        "%idx: tensor<1x3xi64>",
        "tensor<1x3x8xf32>",
        """
        %w = arith.constant dense<[[1, -2, 3, -4, 5, -6, 7, -8], [0, 1, 2, 3, 4, 5, 6, 7], [-1, -1, -1, -1, 1, 1, 1, 1]]> : tensor<3x8xi8>
        %s = arith.constant dense<[[0.5, 0.25], [0.125, 1.0], [2.0, 0.5]]> : tensor<3x2xf32>
        %z = arith.constant dense<[[0, 1], [2, -1], [0, 0]]> : tensor<3x2xi8>
        %y = qfused.embedding %idx, %w, %s zero_point %z {weight_scheme = #qfused.affine<bits = 4, range = [-8, 7], block = [1, 4]>, kernel = "embedding_q4gaw"} : tensor<1x3xi64>, tensor<3x8xi8>, tensor<3x2xf32> zero_point tensor<3x2xi8> -> tensor<1x3x8xf32>
        %y""",
        low=0,
        high=3,
    ),
    one(
        "qfused_embedding_lut",
        "%i: tensor<3xi32>",
        "tensor<3x8xf32>",
        """
        %c = arith.constant dense<[[0, 1, 2, 3, 4, 5, 6, 7], [8, 9, 10, 11, 12, 13, 14, 15], [15, 0, 15, 0, 1, 2, 3, 4], [2, 2, 2, 2, 2, 2, 2, 2], [9, 8, 7, 6, 5, 4, 3, 2]]> : tensor<5x8xui8>
        %book = arith.constant dense<[[[[0.0], [0.5], [1.0], [1.5], [2.0], [2.5], [3.0], [3.5], [-0.5], [-1.0], [-1.5], [-2.0], [-2.5], [-3.0], [-3.5], [4.0]]]]> : tensor<1x1x16x1xf32>
        %y = qfused.embedding %i, %c, %book {weight_scheme = #qfused.lut<nbits = 4, block = [-1, -1]>, kernel = "embedding_lut4w"} : tensor<3xi32>, tensor<5x8xui8>, tensor<1x1x16x1xf32> -> tensor<3x8xf32>
        %y""",
        low=0,
        high=5,
    ),
    one(
        "qfused_conv2d_add",
        "%x: tensor<1x2x4x4xf32>",
        "tensor<1x4x4x4xi8>",
        """
        %w = arith.constant dense<[[[[1, -2, 3], [0, 1, -1], [2, 2, -3]], [[-1, 0, 1], [3, -3, 2], [0, 0, 1]]], [[[2, 1, 0], [-1, -2, 1], [0, 3, 1]], [[1, 1, 1], [1, -1, 1], [1, 1, -1]]], [[[0, 0, 0], [1, 2, 3], [-3, -2, -1]], [[2, -2, 2], [-2, 2, -2], [0, 1, 0]]], [[[5, -5, 0], [0, 5, -5], [1, 0, -1]], [[3, 0, -3], [0, 0, 0], [-1, 1, 2]]]]> : tensor<4x2x3x3xi8>
        %s = arith.constant dense<[[[[0.01]]], [[[0.02]]], [[[0.015]]], [[[0.005]]]]> : tensor<4x1x1x1xf32>
        %b = arith.constant dense<[0.5, -0.25, 0.0, 0.125]> : tensor<4xf32>
        %y = qfused.conv2d %x, %w, %s bias %b {weight_scheme = #qfused.affine<bits = 8, range = [-127, 127], block = [1, 2, 3, 3]>, act = #qfused.static<scale = 0.05, zero_point = -3, range = [-128, 127]>, requant = #qfused.static<scale = 0.02, zero_point = -128, range = [-128, 127]>, clamp_min = 0.0 : f64, stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64, kernel = "conv2d_q8ta_q8csw_q8to"} : tensor<1x2x4x4xf32>, tensor<4x2x3x3xi8>, tensor<4x1x1x1xf32> bias tensor<4xf32> -> tensor<1x4x4x4xi8>
        %a = qfused.add %y, %y {lhs_act = #qfused.static<scale = 0.02, zero_point = -128, range = [-128, 127]>, rhs_act = #qfused.static<scale = 0.02, zero_point = -128, range = [-128, 127]>, requant = #qfused.static<scale = 0.04, zero_point = -128, range = [-128, 127]>, kernel = "add_q8ta_q8ta_q8to"} : tensor<1x4x4x4xi8>, tensor<1x4x4x4xi8> -> tensor<1x4x4x4xi8>
        %a""",
    ),
    one(
        "qfused_mul_squeeze_excitation",
        "%x: tensor<1x2x3x3xf32>",
        "tensor<1x2x3x3xi8>",
        """
        %g = arith.constant dense<[[[[-100]], [[27]]]]> : tensor<1x2x1x1xi8>
        %y = qfused.mul %x, %g {lhs_act = #qfused.static<scale = 0.05, zero_point = 3, range = [-128, 127]>, rhs_act = #qfused.static<scale = 0.0039, zero_point = -128, range = [-128, 127]>, requant = #qfused.static<scale = 0.04, zero_point = 1, range = [-128, 127]>, clamp_min = 0.0 : f64, kernel = "mul_q8ta_q8ta_q8to"} : tensor<1x2x3x3xf32>, tensor<1x2x1x1xi8> -> tensor<1x2x3x3xi8>
        %y""",
    ),
]


def parse(text: str) -> ModuleOp:
    return parse_module(text)


def random_inputs(case: Case, module: ModuleOp) -> list[np.ndarray]:
    rng = np.random.default_rng(zlib.crc32(case.id.encode()))
    arrays: list[np.ndarray] = []
    for arg_type in entry_function(module).function_type.inputs.data:
        assert isinstance(arg_type, TensorType)
        dims = tuple(arg_type.get_shape())
        dtype = numpy_dtype(arg_type.get_element_type())
        if dtype == np.bool_:
            arrays.append(rng.integers(0, 2, dims).astype(np.bool_))
        elif dtype.kind in "iu":
            arrays.append(rng.integers(case.low, case.high, dims).astype(dtype))
        else:
            x = rng.standard_normal(dims).astype(dtype)
            arrays.append(np.abs(x) + dtype.type(0.1) if case.positive else x)
    return arrays


def assert_same(got: tuple[np.ndarray, ...], want: tuple[np.ndarray, ...], case: Case) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape, case.id
        assert g.dtype == w.dtype, case.id
        if w.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=case.rtol, atol=case.rtol, equal_nan=True)
        else:
            np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_rule_matches_the_mid_level(case: Case) -> None:
    module = parse(case.body)
    module.verify()
    inputs = random_inputs(case, module)
    want = qopt.interpret(module, *inputs)
    ConvertToVkcPass().apply(make_context(), module)
    module.verify()
    assert not any(op.name.split(".")[0] in ("aten", "quant", "qfused") for op in module.walk())
    assert_same(qopt.interpret(module, *inputs), want, case)


def test_every_rule_has_a_case() -> None:
    """Every op class with a rule appears in some case (a new rule needs one)."""
    covered = {op.name for case in CASES for op in parse(case.body).walk()}
    missing = sorted(cls.name for cls in get_rules() if cls.name not in covered)
    assert not missing, f"add cases for {missing}"


def test_rule_tables_are_merged_explicitly() -> None:
    """The merged table is exactly the union of the family tables (no import side
    effects, no duplicates), keyed by op class."""
    rules = get_rules()
    assert len(rules) == sum(len(family.RULES) for family in FAMILIES)
    for family in FAMILIES:
        for op_type, fn in family.RULES.items():
            assert rules[op_type] is fn


# ----- state kept between calls ----------------------------------------------------------


STATE_CASES = [c for c in CASES if c.id.startswith("state_")]


@pytest.mark.parametrize("case", STATE_CASES, ids=[c.id for c in STATE_CASES])
def test_state_across_calls_matches_the_mid_level(case: Case) -> None:
    """Sessions before and after convert-to-vkc: the same outputs call after call and
    the same states after each call (the vkc interpreter keeps a state buffer in
    the session's State, in 32-bit words, and read_state gives the global's dtype)."""
    module = parse(case.body)
    lowered = parse(case.body)
    ConvertToVkcPass().apply(make_context(), lowered)
    lowered.verify()
    mid, low = qopt.session(module), qopt.session(lowered)
    assert low.state_names == mid.state_names
    for call in range(3):
        inputs = random_inputs(Case(f"{case.id}{call}", case.body, case.low, case.high), module)
        assert_same(low.run(*inputs), mid.run(*inputs), case)
        for name in mid.state_names:
            got, want = low.read_state(name), mid.read_state(name)
            assert got.dtype == want.dtype, name
            np.testing.assert_array_equal(got, want)
    low.reset()
    fresh = qopt.session(module)
    for name in mid.state_names:
        np.testing.assert_array_equal(low.read_state(name), fresh.read_state(name))


def test_kv_cache_update_scatters_into_the_state_buffer() -> None:
    """The cache update writes the state buffer in place: one scatter_dim dispatch into
    `vkc.state`, no copy of the cache anywhere in the function."""
    from qopt.dialects import vkc

    (case,) = [c for c in CASES if c.id == "state_kv_update_in_place"]
    module = parse(case.body)
    ConvertToVkcPass().apply(make_context(), module)
    (state,) = [op for op in module.walk() if isinstance(op, vkc.StateOp)]
    kernels = {k.sym_name.data: k.kernel.data for k in module.walk() if isinstance(k, vkc.KernelOp)}
    dispatches = [op for op in module.walk() if isinstance(op, vkc.DispatchOp)]
    names = [kernels[d.kernel.root_reference.data] for d in dispatches]
    assert "copy_strided" not in names
    (scatter,) = [d for d, n in zip(dispatches, names, strict=True) if n == "scatter_dim"]
    assert scatter.buffers[2] is state.result


def test_kv_attention_reads_the_keys_in_use_at_every_position() -> None:
    """Both masks of `sdpa_kv_cache_position_masks` bound their sdpa by a mask_bound
    computed on the device (one per mask, BOUNDED = 1), and the lowered program equals
    the mid level at every cache position, the first and the last included."""
    from qopt.dialects import vkc

    (case,) = [c for c in CASES if c.id == "sdpa_kv_cache_position_masks"]
    module = parse(case.body)
    lowered = parse(case.body)
    ConvertToVkcPass().apply(make_context(), lowered)
    kernels = {k.sym_name.data: k for k in lowered.walk() if isinstance(k, vkc.KernelOp)}
    called = [
        kernels[d.kernel.root_reference.data]
        for d in lowered.walk()
        if isinstance(d, vkc.DispatchOp)
    ]
    assert [k.kernel.data for k in called].count("mask_bound") == 2
    assert [k.spec_values()["BOUNDED"] for k in called if k.kernel.data == "sdpa"] == [1, 1]
    q, k, v, _ = random_inputs(case, module)
    for position in range(6):
        inputs = (q, k, v, np.array([position]))
        assert_same(qopt.interpret(lowered, *inputs), qopt.interpret(module, *inputs), case)


# ----- ops without a Vulkan lowering --------------------------------------------------


UNSUPPORTED_SCATTERS = {
    # (values broadcast to the indexed shape: a form compose's index_add_as_sums leaves)
    "index_put with accumulate=True": (
        "%k: tensor<2x1x4xf32>",
        "%r = aten.index_put %cache, %pos, %k {indexed_dims = array<i64: 2>, accumulate = true} : (tensor<1x2x8x4xf32>, tensor<1xi64>, tensor<2x1x4xf32>) -> tensor<1x2x8x4xf32>",
    ),
    "index_put indexing 2 dims": (
        "%k: tensor<1x4xf32>",
        "%r = aten.index_put %cache, %pos, %pos, %k {indexed_dims = array<i64: 1, 2>} : (tensor<1x2x8x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1x4xf32>) -> tensor<1x2x8x4xf32>",
    ),
}


@pytest.mark.parametrize("name", list(UNSUPPORTED_SCATTERS))
def test_unsupported_scatters_name_the_op(name: str) -> None:
    """A scatter form without a kernel (accumulate, several indexed dims) is a QoptError
    naming the op, never a wrong answer."""
    arg, line = UNSUPPORTED_SCATTERS[name]
    body = f"""func.func @forward(%cache: tensor<1x2x8x4xf32>, {arg}, %pos: tensor<1xi64>) -> tensor<1x2x8x4xf32> {{
  {line}
  func.return %r : tensor<1x2x8x4xf32>
}}"""
    module = parse(body)
    module.verify()
    with pytest.raises(
        qopt.QoptError, match=rf"convert-to-vkc: 'aten.index_put': {name} has no Vulkan lowering"
    ):
        ConvertToVkcPass().apply(make_context(), module)


UNSUPPORTED_FORMS = {  # found by benchmarks/conformance.py: a crash before, now a QoptError
    "integer matmul": (
        "%a: tensor<2x2x3xi32>, %b: tensor<2x3x2xi32>",
        "tensor<2x2x2xi32>",
        "%r = aten.matmul %a, %b : (tensor<2x2x3xi32>, tensor<2x3x2xi32>) -> tensor<2x2x2xi32>",
        r"the Vulkan kernels compute it in f32, not on int32 tensors",
    ),
    "_safe_softmax": (  # was NaN where torch gives 0
        "%x: tensor<2x3xf32>",
        "tensor<2x3xf32>",
        "%r = aten.softmax %x {dim = 1 : i64, safe = true} : (tensor<2x3xf32>) -> tensor<2x3xf32>",
        r"_safe_softmax .* has no Vulkan kernel",
    ),
}


@pytest.mark.parametrize("name", list(UNSUPPORTED_FORMS))
def test_unsupported_forms_name_the_op(name: str) -> None:
    args, result, line, message = UNSUPPORTED_FORMS[name]
    module = parse(
        f"func.func @forward({args}) -> {result} {{\n  {line}\n  func.return %r : {result}\n}}"
    )
    module.verify()
    with pytest.raises(qopt.QoptError, match=rf"convert-to-vkc: 'aten\.\w+'.*{message}"):
        ConvertToVkcPass().apply(make_context(), module)
