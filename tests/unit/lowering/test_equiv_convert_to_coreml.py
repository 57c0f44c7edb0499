"""Translation validation of convert-to-coreml, one rule at a time.

For every conversion rule (qopt/lowering/convert_to_coreml/, one module per op family,
merged by `get_rules`), a tiny module holding that op alone (plus the constants it
needs) is interpreted before and after convert-to-coreml on random inputs: the
mid-level semantics (qopt/interpreters/aten_*, quant, qfused) against the coreml
interpreter (qopt/interpreters/coreml.py, MIL's semantics). A broken rule fails the
case named after its op. `test_every_rule_has_a_case` keeps the table complete as
rules are added.

Tolerances, per case:
- integer and boolean results are equal (Core ML has no i64: an i64 result is
  compared as the i32 the lowering gives it);
- float results equal to float32 round-off (`rtol`, default 1e-5);
- `coreml.quantize` is interpreted with the MIL spec's rule, `round(x / scale)`:
  convert-to-coreml writes torch's `x * f32(1 / scale)` as a `mul` and gives the
  quantize scale 1, so a static quantized result is exact (before, the two rules
  differed in the last bit for some x, moving a value on a rounding tie one step);
- dynamic activation quantization (`quant.choose_qparams` chains, `#qfused.dynamic`)
  is computed in float on Core ML by design (the package docstring): those cases
  bound the relative L2 error (`l2`) by the activation quantization error instead.

Inputs the aten verifier accepts that once lowered to coreml modules that did not
verify (mixed-dtype `cat`, integer `relu`, `linear` with a run-time weight and a
bias, grouped-query attention) are ordinary cases here, next to their op.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.dialects.func import FuncOp, ReturnOp

import qopt
from qopt.context import make_context, parse_module
from qopt.dialects import coreml
from qopt.dialects.queries import entry_function
from qopt.dtypes import numpy_dtype
from qopt.lowering.convert_to_coreml import ConvertToCoremlPass, get_rules


@dataclass(frozen=True)
class Case:
    """`body` is the text of `func.func @forward`; integer inputs are drawn from
    [low, high), floats from a normal distribution (positive ones if `positive`,
    multiples of 1/2 in [low, high) / 2 if `halves`: exact rounding ties)."""

    id: str
    body: str
    low: int = -4
    high: int = 5
    positive: bool = False
    halves: bool = False
    rtol: float = 1e-5
    l2: float | None = None
    """Relative L2 error bound for float results (dynamic activations: see above)."""
    target: str = "iOS18"


def case(
    id: str,
    args: str,
    results: str,
    lines: str,
    **options: object,
) -> Case:
    """A case from its argument list, result types and body lines (ending in the
    values returned, `func.return` added)."""
    *ops, ret = lines.strip().splitlines()
    body = f"func.func @forward({args}) -> ({results}) {{\n" + "\n".join(
        "  " + o.strip() for o in ops
    )
    body += f"\n  func.return {ret.strip()} : {results}\n}}"
    return Case(id, body, **options)  # type: ignore[arg-type]


def unary(name: str, attrs: str = "", id: str = "", **options: object) -> Case:
    t = "tensor<2x3xf32>"
    return case(
        id or name, f"%x: {t}", t, f"%r = aten.{name} %x {attrs}: ({t}) -> {t}\n%r", **options
    )


def binary(
    name: str, elem: str = "f32", out: str | None = None, attrs: str = "", **options: object
) -> Case:
    """`[2, 3] op [3]`: the rule's broadcasting included."""
    out = out or elem
    a, b, r = f"tensor<2x3x{elem}>", f"tensor<3x{elem}>", f"tensor<2x3x{out}>"
    return case(
        f"{name}_{elem}" + ("_attrs" if attrs else ""),
        f"%a: {a}, %b: {b}",
        r,
        f"%r = aten.{name} %a, %b {attrs}: ({a}, {b}) -> {r}\n%r",
        **options,
    )


F = "tensor<2x3x4xf32>"
W8 = "dense<[[1, -2, 3, -4, 5, -6, 7, -8], [0, 1, 2, 3, 4, 5, 6, 7], [-1, -1, -1, -1, 1, 1, 1, 1]]> : tensor<3x8xi8>"
LUT_CODES = "dense<[[0, 1, 2, 3, 4, 5, 6, 7], [8, 9, 10, 11, 12, 13, 14, 15], [15, 0, 15, 0, 1, 2, 3, 4], [2, 2, 2, 2, 2, 2, 2, 2], [9, 8, 7, 6, 5, 4, 3, 2]]> : tensor<5x8xui8>"
LUT_BOOK = "dense<[[[[0.0], [0.5], [1.0], [1.5], [2.0], [2.5], [3.0], [3.5], [-0.5], [-1.0], [-1.5], [-2.0], [-2.5], [-3.0], [-3.5], [4.0]]]]> : tensor<1x1x16x1xf32>"
STATIC_QDQ = """
    %s = arith.constant dense<0.05> : tensor<f32>
    %zp = arith.constant dense<3> : tensor<i8>
    %q = quant.quantize %x, %s, %zp {block_size = array<i64: 2, 4>, qmin = QMIN : i64, qmax = 127 : i64} : (tensor<2x4xf32>, tensor<f32>, tensor<i8>) -> tensor<2x4xi8>
    %d = quant.dequantize %q, %s, %zp {block_size = array<i64: 2, 4>, qmin = QMIN : i64, qmax = 127 : i64} : (tensor<2x4xi8>, tensor<f32>, tensor<i8>) -> tensor<2x4xf32>
    %q, %d"""
WEIGHT_DQ = """
    %w = arith.constant dense<[[1, -2, 3, -4], [0, 1, 2, 3], [-1, -1, 1, 1]]> : tensor<3x4xi8>
    %s = arith.constant dense<[0.25, 0.5, 1.0]> : tensor<3xf32>
    %z = arith.constant dense<[0, 1, -2]> : tensor<3xi8>
    %d = quant.dequantize %w, %s, %z {block_size = array<i64: 1, 4>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<3x4xi8>, tensor<3xf32>, tensor<3xi8>) -> tensor<3x4xf32>
    %y = aten.linear %x, %d : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
    %y"""
CODEBOOK = """
    %c = arith.constant dense<[[0, 1, 2, 3], [3, 2, 1, 0], [1, 1, 1, 1]]> : tensor<3x4xui8>
    %book = arith.constant dense<[[[[0.5], [-1.0], [2.0], [0.25]]]]> : tensor<1x1x4x1xf32>
    %w = quant.dequantize_codebook %c, %book {nbits = 2 : i64, block_size = array<i64: -1, -1>} : (tensor<3x4xui8>, tensor<1x1x4x1xf32>) -> tensor<3x4xf32>
    %y = aten.linear %x, %w : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
    %y"""
Q8_REQUANT = f"""
    %w = arith.constant {W8}
    %s = arith.constant dense<[[0.5], [0.25], [0.125]]> : tensor<3x1xf32>
    %y = qfused.linear %x, %w, %s {{weight_scheme = #qfused.affine<bits = 8, range = [-127, 127], block = [1, 8]>, act = #qfused.static<scale = 0.05, zero_point = 3, range = [-128, 127]>, requant = #qfused.static<scale = 0.1, zero_point = -128, range = [-128, 127]>, clamp_min = 0.0 : f64, clamp_max = 6.0 : f64, kernel = "linear_q8ta_q8csw_q8to"}} : tensor<2x8xi8>, tensor<3x8xi8>, tensor<3x1xf32> -> tensor<2x3xi8>
    %y"""
Q8_WEIGHT_ONLY = f"""
    %w = arith.constant {W8}
    %s = arith.constant dense<[[0.5], [0.25], [0.125]]> : tensor<3x1xf32>
    %b = arith.constant dense<[0.1, 0.2, 0.3]> : tensor<3xf32>
    %y = qfused.linear %x, %w, %s bias %b {{weight_scheme = #qfused.affine<bits = 8, range = [-127, 127], block = [1, 8]>, kernel = "linear_q8csw"}} : tensor<2x8xf32>, tensor<3x8xi8>, tensor<3x1xf32> bias tensor<3xf32> -> tensor<2x3xf32>
    %y"""
EMBEDDING_LUT = f"""
    %c = arith.constant {LUT_CODES}
    %book = arith.constant {LUT_BOOK}
    %y = qfused.embedding %i, %c, %book {{weight_scheme = #qfused.lut<nbits = 4, block = [-1, -1]>, kernel = "embedding_lut4w"}} : tensor<3xi32>, tensor<5x8xui8>, tensor<1x1x16x1xf32> -> tensor<3x8xf32>
    %y"""
CONV_ADD = """
    %w = arith.constant dense<[[[[1, -2, 3], [0, 1, -1], [2, 2, -3]], [[-1, 0, 1], [3, -3, 2], [0, 0, 1]]], [[[2, 1, 0], [-1, -2, 1], [0, 3, 1]], [[1, 1, 1], [1, -1, 1], [1, 1, -1]]], [[[0, 0, 0], [1, 2, 3], [-3, -2, -1]], [[2, -2, 2], [-2, 2, -2], [0, 1, 0]]], [[[5, -5, 0], [0, 5, -5], [1, 0, -1]], [[3, 0, -3], [0, 0, 0], [-1, 1, 2]]]]> : tensor<4x2x3x3xi8>
    %s = arith.constant dense<[[[[0.01]]], [[[0.02]]], [[[0.015]]], [[[0.005]]]]> : tensor<4x1x1x1xf32>
    %b = arith.constant dense<[0.5, -0.25, 0.0, 0.125]> : tensor<4xf32>
    %y = qfused.conv2d %x, %w, %s bias %b {weight_scheme = #qfused.affine<bits = 8, range = [-127, 127], block = [1, 2, 3, 3]>, act = #qfused.static<scale = 0.05, zero_point = -3, range = [-128, 127]>, requant = #qfused.static<scale = 0.02, zero_point = -128, range = [-128, 127]>, clamp_min = 0.0 : f64, stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64, kernel = "conv2d_q8ta_q8csw_q8to"} : tensor<1x2x4x4xf32>, tensor<4x2x3x3xi8>, tensor<4x1x1x1xf32> bias tensor<4xf32> -> tensor<1x4x4x4xi8>
    %a = qfused.add %y, %y {lhs_act = #qfused.static<scale = 0.02, zero_point = -128, range = [-128, 127]>, rhs_act = #qfused.static<scale = 0.02, zero_point = -128, range = [-128, 127]>, requant = #qfused.static<scale = 0.04, zero_point = -128, range = [-128, 127]>, alpha = 2.0 : f64, kernel = "add_q8ta_q8ta_q8to"} : tensor<1x4x4x4xi8>, tensor<1x4x4x4xi8> -> tensor<1x4x4x4xi8>
    %a"""

STATE_F32 = Case(
    "state_f32_as_fp16",
    """func.func @forward(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %k = ml_program.global_load @layers.0.k : tensor<2x3xf32>
  %s = aten.add %k, %x : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  ml_program.global_store @layers.0.k = %s : tensor<2x3xf32>
  func.return %k, %s : tensor<2x3xf32>, tensor<2x3xf32>
}
ml_program.global private mutable @layers.0.k(dense<[[1.5, 0.0, -2.25], [0.0, 0.0, 0.0]]> : tensor<2x3xf32>) : tensor<2x3xf32>""",
)
"""A float state is fp16 on Core ML; its initial value is exact in fp16, and the
result of one call does not read back what it stores, so the outputs are equal."""

CASES: list[Case] = [
    # ----- builtin (arith.constant appears in most cases; one that only returns it) ------
    case(
        "constant",
        "",
        "tensor<2x2xi64>",
        "%c = arith.constant dense<[[1, -2], [3, 4]]> : tensor<2x2xi64>\n%c",
    ),
    # ----- shape: views, layout changes, gathers -----------------------------------------
    case(
        "view", f"%x: {F}", "tensor<6x4xf32>", f"%r = aten.view %x : ({F}) -> tensor<6x4xf32>\n%r"
    ),
    case(
        "unsqueeze_squeeze",
        f"%x: {F}",
        F,
        f"""
        %u = aten.unsqueeze %x {{dim = -1 : i64}} : ({F}) -> tensor<2x3x4x1xf32>
        %r = aten.squeeze %u {{dims = array<i64: 3>}} : (tensor<2x3x4x1xf32>) -> {F}
        %r""",
    ),
    case(
        "clone",
        "%x: tensor<2x3xi32>",
        "tensor<2x3xi32>",
        "%r = aten.clone %x : (tensor<2x3xi32>) -> tensor<2x3xi32>\n%r",
    ),
    case(
        "permute",
        f"%x: {F}",
        "tensor<4x2x3xf32>",
        f"%r = aten.permute %x {{dims = array<i64: 2, 0, 1>}} : ({F}) -> tensor<4x2x3xf32>\n%r",
    ),
    case(
        "transpose",
        f"%x: {F}",
        "tensor<4x3x2xf32>",
        f"%r = aten.transpose %x {{dim0 = 0 : i64, dim1 = 2 : i64}} : ({F}) -> tensor<4x3x2xf32>\n%r",
    ),
    case(
        "expand",
        "%x: tensor<2x1x4xf32>",
        "tensor<3x2x5x4xf32>",
        "%r = aten.expand %x : (tensor<2x1x4xf32>) -> tensor<3x2x5x4xf32>\n%r",
    ),
    case(
        "slice",
        f"%x: {F}",
        "tensor<2x3x2xf32>",
        f"%r = aten.slice %x {{dim = 2 : i64, start = 1 : i64, end = 9223372036854775807 : i64, step = 2 : i64}} : ({F}) -> tensor<2x3x2xf32>\n%r",
    ),
    case(
        "split",
        "%x: tensor<2x7xf32>",
        "tensor<2x3xf32>, tensor<2x4xf32>",
        """
        %a, %b = aten.split %x {sizes = array<i64: 3, 4>, dim = -1 : i64} : (tensor<2x7xf32>) -> (tensor<2x3xf32>, tensor<2x4xf32>)
        %a, %b""",
    ),
    case(
        "index",
        "%x: tensor<4x5xf32>",
        "tensor<2x2xf32>",
        """
        %i = arith.constant dense<[3, 0]> : tensor<2xi64>
        %j = arith.constant dense<[[4], [1]]> : tensor<2x1xi64>
        %r = aten.index %x, %i, %j {indexed_dims = array<i64: 0, 1>} : (tensor<4x5xf32>, tensor<2xi64>, tensor<2x1xi64>) -> tensor<2x2xf32>
        %r""",
    ),
    case(
        "select",
        "%x: tensor<2x4x5xf32>",
        "tensor<2x4xf32>",
        "%r = aten.select %x {dim = 2 : i64, index = -1 : i64} : (tensor<2x4x5xf32>) -> tensor<2x4xf32>\n%r",
    ),
    case(
        "cat",
        f"%x: {F}, %y: tensor<2x3x2xf32>",
        "tensor<2x3x6xf32>",
        f"%r = aten.cat %x, %y {{dim = -1 : i64}} : ({F}, tensor<2x3x2xf32>) -> tensor<2x3x6xf32>\n%r",
    ),
    case(
        "cat_mixed_dtypes",
        f"%x: {F}, %y: tensor<2x3x2xi64>",
        "tensor<2x3x6xf32>",
        f"%r = aten.cat %x, %y {{dim = -1 : i64}} : ({F}, tensor<2x3x2xi64>) -> tensor<2x3x6xf32>\n%r",
    ),
    case(
        "cat_mixed_dtypes_constant_iOS16",
        "%x: tensor<2x3xi32>, %y: tensor<1x3xi1>",
        "tensor<4x3xi64>",
        """
        %c = arith.constant dense<[[1, -2, 3]]> : tensor<1x3xi64>
        %r = aten.cat %x, %c, %y {dim = 0 : i64} : (tensor<2x3xi32>, tensor<1x3xi64>, tensor<1x3xi1>) -> tensor<4x3xi64>
        %r""",
        target="iOS16",
    ),
    case(
        "index_select_constant",
        "%x: tensor<4x5xf32>",
        "tensor<4x3xf32>",
        """
        %i = arith.constant dense<[4, 0, 2]> : tensor<3xi64>
        %r = aten.index_select %x, %i {dim = 1 : i64} : (tensor<4x5xf32>, tensor<3xi64>) -> tensor<4x3xf32>
        %r""",
    ),
    case(
        "index_select_runtime",
        "%x: tensor<4x5xf32>, %i: tensor<3xi64>",
        "tensor<3x5xf32>",
        "%r = aten.index_select %x, %i {dim = 0 : i64} : (tensor<4x5xf32>, tensor<3xi64>) -> tensor<3x5xf32>\n%r",
        low=0,
        high=4,
    ),
    case(
        "repeat_interleave",
        "%x: tensor<1x2x3x4xf32>",
        "tensor<1x4x3x4xf32>",
        "%r = aten.repeat_interleave %x {repeats = 2 : i64, dim = -3 : i64} : (tensor<1x2x3x4xf32>) -> tensor<1x4x3x4xf32>\n%r",
    ),
    case(
        "repeat_interleave_flattened_int",
        "%x: tensor<2x3xi64>",
        "tensor<18xi64>",
        "%r = aten.repeat_interleave %x {repeats = 3 : i64} : (tensor<2x3xi64>) -> tensor<18xi64>\n%r",
    ),
    case(
        "repeat_interleave_int8_iOS17",
        "%x: tensor<2x3xi8>",
        "tensor<2x6xi8>",
        "%r = aten.repeat_interleave %x {repeats = 2 : i64, dim = 1 : i64} : (tensor<2x3xi8>) -> tensor<2x6xi8>\n%r",
        target="iOS17",
    ),
    case(
        "slice_scatter",
        "%x: tensor<1x2x8x4xf32>, %k: tensor<1x2x2x4xf32>",
        "tensor<1x2x8x4xf32>",
        "%r = aten.slice_scatter %x, %k {dim = 2 : i64, start = 3 : i64, end = 5 : i64, step = 1 : i64} : (tensor<1x2x8x4xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x8x4xf32>\n%r",
    ),
    case(
        "slice_scatter_at_the_end_cast",
        "%x: tensor<3x5xf32>, %k: tensor<3x2xi64>",
        "tensor<3x5xf32>",
        "%r = aten.slice_scatter %x, %k {dim = -1 : i64, start = 3 : i64, end = 9223372036854775807 : i64, step = 1 : i64} : (tensor<3x5xf32>, tensor<3x2xi64>) -> tensor<3x5xf32>\n%r",
    ),
    case(
        "select_scatter",
        "%x: tensor<1x2x8x4xf32>, %k: tensor<1x2x4xf32>",
        "tensor<1x2x8x4xf32>",
        "%r = aten.select_scatter %x, %k {dim = 2 : i64, index = -1 : i64} : (tensor<1x2x8x4xf32>, tensor<1x2x4xf32>) -> tensor<1x2x8x4xf32>\n%r",
    ),
    case(
        "select_scatter_first_1d",
        "%x: tensor<3xi32>, %k: tensor<i32>",
        "tensor<3xi32>",
        "%r = aten.select_scatter %x, %k {dim = 0 : i64, index = 0 : i64} : (tensor<3xi32>, tensor<i32>) -> tensor<3xi32>\n%r",
    ),
    # KV-cache writes and reads at run-time positions (index_put / index_copy / index)
    case(
        "index_put_runtime_negative",
        "%cache: tensor<1x2x8x4xf32>, %k: tensor<2x1x4xf32>, %pos: tensor<1xi64>",
        "tensor<1x2x8x4xf32>",
        "%r = aten.index_put %cache, %pos, %k {indexed_dims = array<i64: 2>} : (tensor<1x2x8x4xf32>, tensor<1xi64>, tensor<2x1x4xf32>) -> tensor<1x2x8x4xf32>\n%r",
        low=-8,
        high=8,
    ),
    case(
        "index_put_runtime_2d_index_repeated",
        "%x: tensor<6x3xi64>, %i: tensor<2x2xi64>, %v: tensor<3xi64>",
        "tensor<6x3xi64>",
        "%r = aten.index_put %x, %i, %v {indexed_dims = array<i64: 0>} : (tensor<6x3xi64>, tensor<2x2xi64>, tensor<3xi64>) -> tensor<6x3xi64>\n%r",
        low=-6,
        high=6,
    ),
    case(
        "index_put_constant_index_bool",
        "%x: tensor<3x5xi1>, %v: tensor<3x2xi1>",
        "tensor<3x5xi1>",
        """
        %i = arith.constant dense<[4, -5]> : tensor<2xi64>
        %r = aten.index_put %x, %i, %v {indexed_dims = array<i64: 1>} : (tensor<3x5xi1>, tensor<2xi64>, tensor<3x2xi1>) -> tensor<3x5xi1>
        %r""",
    ),
    case(
        "index_copy_runtime",
        "%cache: tensor<1x2x8x4xf32>, %k: tensor<1x2x3x4xf32>, %pos: tensor<3xi64>",
        "tensor<1x2x8x4xf32>",
        "%r = aten.index_copy %cache, %pos, %k {dim = -2 : i64} : (tensor<1x2x8x4xf32>, tensor<3xi64>, tensor<1x2x3x4xf32>) -> tensor<1x2x8x4xf32>\n%r",
        low=0,
        high=8,
    ),
    case(
        "index_copy_scalar_source_int8_iOS17",
        "%x: tensor<5xi8>, %s: tensor<i8>, %pos: tensor<1xi64>",
        "tensor<5xi8>",
        "%r = aten.index_copy %x, %pos, %s {dim = 0 : i64} : (tensor<5xi8>, tensor<1xi64>, tensor<i8>) -> tensor<5xi8>\n%r",
        low=0,
        high=5,
        target="iOS17",
    ),
    case(
        "index_runtime_mask_rows",
        "%mask: tensor<8x8xf32>, %pos: tensor<2xi64>",
        "tensor<2x8xf32>",
        "%r = aten.index %mask, %pos {indexed_dims = array<i64: 0>} : (tensor<8x8xf32>, tensor<2xi64>) -> tensor<2x8xf32>\n%r",
        low=-8,
        high=8,
    ),
    case(
        "index_runtime_bool_2d_index_iOS16",
        "%m: tensor<3x4x5xi1>, %i: tensor<2x3xi64>",
        "tensor<3x2x3x5xi1>",
        "%r = aten.index %m, %i {indexed_dims = array<i64: 1>} : (tensor<3x4x5xi1>, tensor<2x3xi64>) -> tensor<3x2x3x5xi1>\n%r",
        low=-4,
        high=4,
        target="iOS16",
    ),
    case(
        "index_runtime_scalar_index",
        "%x: tensor<6x4xf32>, %i: tensor<i64>",
        "tensor<4xf32>",
        "%r = aten.index %x, %i {indexed_dims = array<i64: 0>} : (tensor<6x4xf32>, tensor<i64>) -> tensor<4xf32>\n%r",
        low=-6,
        high=6,
    ),
    case(
        "index_select_runtime_bool",
        "%x: tensor<4x5xi1>, %i: tensor<3xi64>",
        "tensor<4x3xi1>",
        "%r = aten.index_select %x, %i {dim = 1 : i64} : (tensor<4x5xi1>, tensor<3xi64>) -> tensor<4x3xi1>\n%r",
        low=0,
        high=5,
    ),
    # ----- program state: ml_program globals -> Core ML states (iOS18) -----------------
    STATE_F32,
    Case(
        "state_int64_nonzero_start",
        """func.func @forward(%x: tensor<1xi64>) -> (tensor<i64>, tensor<i64>) {
  %n = ml_program.global_load @cumulative_length : tensor<i64>
  %c = aten.view %x : (tensor<1xi64>) -> tensor<i64>
  %s = aten.add %n, %c : (tensor<i64>, tensor<i64>) -> tensor<i64>
  ml_program.global_store @cumulative_length = %s : tensor<i64>
  func.return %n, %s : tensor<i64>, tensor<i64>
}
ml_program.global private mutable @cumulative_length(dense<7> : tensor<i64>) : tensor<i64>""",
        low=0,
        high=100,
    ),
    Case(
        "global_load_const",
        """func.func @forward(%x: tensor<2xi32>) -> tensor<2xi32> {
  %t = ml_program.global_load_const @table : tensor<2xi32>
  %r = aten.add %x, %t : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
  func.return %r : tensor<2xi32>
}
ml_program.global private @table(dense<[1, 2]> : tensor<2xi32>) : tensor<2xi32>""",
    ),
    case(
        "embedding",
        "%t: tensor<5x4xf32>, %ids: tensor<1x3xi64>",
        "tensor<1x3x4xf32>",
        "%r = aten.embedding %t, %ids : (tensor<5x4xf32>, tensor<1x3xi64>) -> tensor<1x3x4xf32>\n%r",
        low=0,
        high=5,
    ),
    # ----- elementwise -------------------------------------------------------------------
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
            "hardswish",
            "hardsigmoid",
            "gelu",
        )
    ),
    *(unary(n, halves=True, low=-7, high=8) for n in ("floor", "ceil", "round")),
    unary("round", id="round_normal"),
    unary("gelu", '{approximate = "tanh"} ', id="gelu_tanh"),
    unary("clamp", "{min = -1.000000e+00 : f64, max = 5.000000e-01 : f64} "),
    unary("clamp", "{min = 0.000000e+00 : f64} ", id="clamp_min"),
    unary("leaky_relu", "{negative_slope = 2.000000e-01 : f64} "),
    *(unary(n, positive=True) for n in ("log10", "log2")),
    unary("tan"),
    *(unary(n) for n in ("asin", "acos", "atan", "sinh", "cosh", "trunc", "sign")),
    *(unary(n) for n in ("expm1", "log1p")),
    case(
        "isinf_isfinite_sign_i32",
        "%x: tensor<2x3xf32>, %i: tensor<2x3xi32>",
        "tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi32>, tensor<2x3xi1>",
        """%a = aten.isinf %x : (tensor<2x3xf32>) -> tensor<2x3xi1>
%b = aten.isfinite %x : (tensor<2x3xf32>) -> tensor<2x3xi1>
%c = aten.sign %i : (tensor<2x3xi32>) -> tensor<2x3xi32>
%d = aten.isfinite %i : (tensor<2x3xi32>) -> tensor<2x3xi1>
%a, %b, %c, %d""",
    ),
    case(
        "signbit_f32_i32",
        "%x: tensor<2x3xf32>, %i: tensor<2x3xi32>",
        "tensor<2x3xi1>, tensor<2x3xi1>",
        """%a = aten.signbit %x : (tensor<2x3xf32>) -> tensor<2x3xi1>
%b = aten.signbit %i : (tensor<2x3xi32>) -> tensor<2x3xi1>
%a, %b""",
    ),
    unary("hardshrink", "{lambd = 2.500000e-01 : f64} "),
    unary("softshrink"),
    case(
        "group_norm",
        "%x: tensor<2x4x3xf32>, %w: tensor<4xf32>, %b: tensor<4xf32>",
        "tensor<2x4x3xf32>",
        "%r = aten.group_norm %x weight(%w : tensor<4xf32>) bias(%b : tensor<4xf32>) {num_groups = 2 : i64} : tensor<2x4x3xf32> -> tensor<2x4x3xf32>\n%r",
    ),
    case(
        "upsample_bilinear",
        "%x: tensor<1x2x3x4xf32>",
        "tensor<1x2x5x7xf32>",
        "%r = aten.upsample_bilinear2d %x : (tensor<1x2x3x4xf32>) -> tensor<1x2x5x7xf32>\n%r",
    ),
    case(
        "upsample_nearest",
        "%x: tensor<1x2x3x4xf32>",
        "tensor<1x2x5x9xf32>",
        "%r = aten.upsample_nearest2d %x {scales_h = 1.700000e+00 : f64, scales_w = 2.300000e+00 : f64} : (tensor<1x2x3x4xf32>) -> tensor<1x2x5x9xf32>\n%r",
    ),
    case(
        "constant_pad_nd",
        "%x: tensor<2x3xf32>",
        "tensor<4x6xf32>",
        "%r = aten.constant_pad_nd %x {pad = array<i64: 1, 2, -1, 3>, value = 5.000000e-01 : f64} : (tensor<2x3xf32>) -> tensor<4x6xf32>\n%r",
    ),
    case(  # a zero pad read by a conv: folded into the conv's padding (no MIL pad)
        "constant_pad_nd_into_conv",
        "%x: tensor<1x2x5x5xf32>",
        "tensor<1x3x3x2xf32>",
        "%ww = arith.constant dense<5.000000e-01> : tensor<3x2x3x3xf32>\n"
        "%p = aten.constant_pad_nd %x {pad = array<i64: 0, 1, 1, 1>, value = 0.000000e+00 : f64} : (tensor<1x2x5x5xf32>) -> tensor<1x2x7x6xf32>\n"
        "%r = aten.conv2d %p, %ww {stride = array<i64: 2, 2>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x2x7x6xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x3x2xf32>\n%r",
    ),
    case(  # no negative amount: one MIL pad (MobileNetV2's TF-style padding)
        "constant_pad_nd_mil_pad",
        "%x: tensor<1x2x3x4xf32>",
        "tensor<1x2x6x5xf32>",
        "%r = aten.constant_pad_nd %x {pad = array<i64: 0, 1, 2, 1>, value = -2.500000e-01 : f64} : (tensor<1x2x3x4xf32>) -> tensor<1x2x6x5xf32>\n%r",
    ),
    case(
        "flip",
        "%x: tensor<2x3x4xf32>",
        "tensor<2x3x4xf32>",
        "%r = aten.flip %x {dims = array<i64: 0, -1>} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>\n%r",
    ),
    case(  # Swin's shifted windows: negative, larger-than-dim and flattened shifts
        "roll",
        "%x: tensor<2x3x4xf32>",
        "tensor<2x3x4xf32>, tensor<2x3x4xf32>",
        """
        %r = aten.roll %x {shifts = array<i64: -1, 5>, dims = array<i64: 1, -1>} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
        %s = aten.roll %x {shifts = array<i64: 7>, dims = array<i64>} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
        %r, %s
        """,
    ),
    case(  # torch.gather with an index smaller than x in another dim; int64 values
        "gather_dim",
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
    case(
        "cumsum",
        "%x: tensor<2x3x4xf32>",
        "tensor<2x3x4xf32>",
        "%r = aten.cumsum %x {dim = -2 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>\n%r",
    ),
    case(  # RoBERTa's position ids: the padding mask's prefix count, summed as int64
        "cumsum_int",
        "%x: tensor<2x5xi32>, %b: tensor<2x5xi1>",
        "tensor<2x5xi64>, tensor<2x5xi64>",
        """
        %r = aten.cumsum %x {dim = 1 : i64} : (tensor<2x5xi32>) -> tensor<2x5xi64>
        %s = aten.cumsum %b {dim = 0 : i64} : (tensor<2x5xi1>) -> tensor<2x5xi64>
        %r, %s
        """,
    ),
    case(
        "pixel_shuffle",
        "%x: tensor<2x8x3x2xf32>",
        "tensor<2x2x6x4xf32>",
        "%r = aten.pixel_shuffle %x {upscale_factor = 2 : i64} : (tensor<2x8x3x2xf32>) -> tensor<2x2x6x4xf32>\n%r",
    ),
    case(
        "repeat",
        "%x: tensor<2x3xf32>",
        "tensor<2x2x9xf32>",
        "%r = aten.repeat %x {repeats = array<i64: 2, 1, 3>} : (tensor<2x3xf32>) -> tensor<2x2x9xf32>\n%r",
    ),
    case(
        "stack",
        "%x: tensor<2x3xf32>, %y: tensor<2x3xf32>",
        "tensor<2x3x2xf32>",
        "%r = aten.stack %x, %y {dim = -1 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3x2xf32>\n%r",
    ),
    case(
        "var_std",
        "%x: tensor<2x3x4xf32>",
        "tensor<2x1x4xf32>, tensor<3xf32>",
        """%v = aten.var %x {dims = array<i64: 1>, keepdim = true} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
        %s = aten.std %x {dims = array<i64: 0, 2>, correction = 0.000000e+00 : f64} : (tensor<2x3x4xf32>) -> tensor<3xf32>
        %v, %s""",
    ),
    case(
        "neg_i32",
        "%x: tensor<2x3xi32>",
        "tensor<2x3xi32>",
        "%r = aten.neg %x : (tensor<2x3xi32>) -> tensor<2x3xi32>\n%r",
    ),
    case(
        "relu_i32",
        "%x: tensor<2x3xi32>",
        "tensor<2x3xi32>",
        "%r = aten.relu %x : (tensor<2x3xi32>) -> tensor<2x3xi32>\n%r",
    ),
    case(
        "rank6_window_partition",
        "%x: tensor<1x4x4x3xf32>",
        "tensor<1x4x4x3xf32>",
        "%0 = aten.view %x : (tensor<1x4x4x3xf32>) -> tensor<1x2x2x2x2x3xf32>\n%1 = aten.permute %0 {dims = array<i64: 0, 1, 3, 2, 4, 5>} : (tensor<1x2x2x2x2x3xf32>) -> tensor<1x2x2x2x2x3xf32>\n%2 = aten.neg %1 : (tensor<1x2x2x2x2x3xf32>) -> tensor<1x2x2x2x2x3xf32>\n%3 = aten.view %2 : (tensor<1x2x2x2x2x3xf32>) -> tensor<1x4x4x3xf32>\n%3",
    ),
    case(
        "clamp_i64",
        "%x: tensor<2x3xi64>",
        "tensor<2x3xi64>",
        "%r = aten.clamp %x {min = -1.000000e+00 : f64, max = 2.000000e+00 : f64} : (tensor<2x3xi64>) -> tensor<2x3xi64>\n%r",
    ),
    case(
        "relu_i64",
        "%x: tensor<2x3xi64>",
        "tensor<2x3xi64>",
        "%r = aten.relu %x : (tensor<2x3xi64>) -> tensor<2x3xi64>\n%r",
    ),
    case(
        "floor_i64",
        "%x: tensor<2x3xi64>",
        "tensor<2x3xi64>",
        "%r = aten.floor %x : (tensor<2x3xi64>) -> tensor<2x3xi64>\n%r",
    ),
    case(
        "log_i32",
        "%x: tensor<2x3xi32>",
        "tensor<2x3xf32>",
        "%r = aten.log %x : (tensor<2x3xi32>) -> tensor<2x3xf32>\n%r",
        low=1,
    ),
    case(
        "to_f32_i32",
        "%x: tensor<2x3xf32>",
        "tensor<2x3xi32>",
        "%r = aten.to %x : (tensor<2x3xf32>) -> tensor<2x3xi32>\n%r",
        halves=True,
        low=-9,
        high=9,
    ),
    case(
        "to_i64_f32",
        "%x: tensor<2x3xi64>",
        "tensor<2x3xf32>",
        "%r = aten.to %x : (tensor<2x3xi64>) -> tensor<2x3xf32>\n%r",
    ),
    case(
        "to_f32_bool",
        "%x: tensor<2x3xf32>",
        "tensor<2x3xi1>",
        "%r = aten.to %x : (tensor<2x3xf32>) -> tensor<2x3xi1>\n%r",
        halves=True,
        low=-2,
        high=2,
    ),
    *(
        binary(n)
        for n in ("add", "sub", "mul", "div", "maximum", "minimum", "remainder", "fmod", "pow")
    ),
    binary("add", attrs="{alpha = 2.000000e+00 : f64} "),
    binary("sub", "i32", attrs="{alpha = 3.000000e+00 : f64} "),
    *(binary(n, "i32", low=1) for n in ("add", "mul", "maximum", "minimum", "remainder", "fmod")),
    case(
        "remainder_i32_signs",
        "%a: tensor<2x3xi32>",
        "tensor<2x3xi32>",
        """
        %b = arith.constant dense<[3, -3, 4]> : tensor<3xi32>
        %r = aten.remainder %a, %b : (tensor<2x3xi32>, tensor<3xi32>) -> tensor<2x3xi32>
        %r""",
        low=-9,
        high=9,
    ),
    *(binary(n, "f32", "i1", halves=True) for n in ("eq", "ne", "lt", "le", "gt", "ge")),
    binary("lt", "i32", "i1"),
    *(binary(n, "i1") for n in ("logical_and", "logical_or", "logical_xor")),
    *(binary(n, "i1") for n in ("bitwise_and", "bitwise_or", "bitwise_xor")),
    case(  # equal(x, 0) / not_equal(x, x) (benchmarks/conformance.py)
        "logical_not_bitwise_not_isnan",
        "%a: tensor<2x3xf32>, %i: tensor<2x3xi32>, %b: tensor<2x3xi1>",
        "tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>",
        """
        %l = aten.logical_not %i : (tensor<2x3xi32>) -> tensor<2x3xi1>
        %n = aten.bitwise_not %b : (tensor<2x3xi1>) -> tensor<2x3xi1>
        %s = aten.sqrt %a : (tensor<2x3xf32>) -> tensor<2x3xf32>
        %q = aten.isnan %s : (tensor<2x3xf32>) -> tensor<2x3xi1>
        %m = aten.logical_not %b : (tensor<2x3xi1>) -> tensor<2x3xi1>
        %l, %n, %q, %m""",
        low=-1,
        high=2,
    ),
    case(
        "logical_xor_f32",
        "%a: tensor<2x3xf32>, %b: tensor<3xi32>",
        "tensor<2x3xi1>",
        "%r = aten.logical_xor %a, %b : (tensor<2x3xf32>, tensor<3xi32>) -> tensor<2x3xi1>\n%r",
        halves=True,
        low=-1,
        high=2,
    ),
    case(
        "where",
        "%c: tensor<4x5xi1>, %x: tensor<4x5xf32>, %y: tensor<5xf32>",
        "tensor<4x5xf32>",
        "%r = aten.where %c, %x, %y : (tensor<4x5xi1>, tensor<4x5xf32>, tensor<5xf32>) -> tensor<4x5xf32>\n%r",
    ),
    case(
        "where_cond_larger",
        "%c: tensor<4x5xi1>, %x: tensor<5xf32>, %y: tensor<f32>",
        "tensor<4x5xf32>",
        "%r = aten.where %c, %x, %y : (tensor<4x5xi1>, tensor<5xf32>, tensor<f32>) -> tensor<4x5xf32>\n%r",
    ),
    case(
        "masked_fill",
        "%x: tensor<2x3xf32>, %m: tensor<1x3xi1>",
        "tensor<2x3xf32>",
        """
        %v = arith.constant dense<-2.5> : tensor<f32>
        %r = aten.masked_fill %x, %m, %v : (tensor<2x3xf32>, tensor<1x3xi1>, tensor<f32>) -> tensor<2x3xf32>
        %r""",
    ),
    # ----- reductions and normalisation --------------------------------------------------
    case(
        "sum",
        f"%x: {F}",
        "tensor<2x1x4xf32>",
        f"%r = aten.sum %x {{dims = array<i64: 1>, keepdim = true}} : ({F}) -> tensor<2x1x4xf32>\n%r",
    ),
    case(
        "mean",
        f"%x: {F}",
        "tensor<2x3xf32>",
        f"%r = aten.mean %x {{dims = array<i64: -1>}} : ({F}) -> tensor<2x3xf32>\n%r",
    ),
    case("amax", f"%x: {F}", "tensor<f32>", f"%r = aten.amax %x : ({F}) -> tensor<f32>\n%r"),
    case(
        "amin",
        f"%x: {F}",
        "tensor<2x4xf32>",
        f"%r = aten.amin %x {{dims = array<i64: 1>}} : ({F}) -> tensor<2x4xf32>\n%r",
    ),
    case("softmax", f"%x: {F}", F, f"%r = aten.softmax %x {{dim = -1 : i64}} : ({F}) -> {F}\n%r"),
    case(
        "log_softmax",
        f"%x: {F}",
        F,
        f"%r = aten.log_softmax %x {{dim = 1 : i64}} : ({F}) -> {F}\n%r",
    ),
    case(
        "layer_norm",
        f"%x: {F}, %w: tensor<4xf32>, %b: tensor<4xf32>",
        F,
        f"%r = aten.layer_norm %x weight(%w : tensor<4xf32>) bias(%b : tensor<4xf32>) {{normalized_shape = array<i64: 4>, eps = 1.000000e-05 : f64}} : {F} -> {F}\n%r",
        rtol=1e-4,
    ),
    case(
        "layer_norm_plain",
        f"%x: {F}",
        F,
        f"%r = aten.layer_norm %x {{normalized_shape = array<i64: 3, 4>, eps = 1.000000e-05 : f64}} : {F} -> {F}\n%r",
        rtol=1e-4,
    ),
    *(
        case(
            f"batch_norm_rank{len(shape.split('x')) - 1}",
            f"%x: {shape}",
            shape,
            f"""
            %m = arith.constant dense<[0.5, -1.0]> : tensor<2xf32>
            %v = arith.constant dense<[2.0, 0.25]> : tensor<2xf32>
            %w = arith.constant dense<[1.5, -0.5]> : tensor<2xf32>
            %b = arith.constant dense<[0.1, 0.2]> : tensor<2xf32>
            %y = aten.batch_norm %x, %m, %v weight(%w : tensor<2xf32>) bias(%b : tensor<2xf32>) {{eps = 1.000000e-03 : f64}} : {shape}, tensor<2xf32>, tensor<2xf32> -> {shape}
            %y""",
        )
        for shape in ("tensor<1x2x3x3xf32>", "tensor<3x2xf32>")
    ),
    case(
        "argmax",
        f"%x: {F}",
        "tensor<2x3xi64>",
        f"%r = aten.argmax %x {{dim = -1 : i64}} : ({F}) -> tensor<2x3xi64>\n%r",
    ),
    case(
        "argmax_ties",
        f"%x: {F}",
        "tensor<2x4xi64>",
        f"%r = aten.argmax %x {{dim = 1 : i64}} : ({F}) -> tensor<2x4xi64>\n%r",
        halves=True,
        low=-2,
        high=2,
    ),
    case("argmin", f"%x: {F}", "tensor<i64>", f"%r = aten.argmin %x : ({F}) -> tensor<i64>\n%r"),
    # ----- layers: linear algebra, convolution, pooling, attention -----------------------
    case(
        "linear",
        "%x: tensor<2x5x4xf32>",
        "tensor<2x5x3xf32>",
        """
        %w = arith.constant dense<[[0.5, -1.0, 0.25, 2.0], [1.0, 1.0, -0.5, 0.0], [-2.0, 0.75, 0.5, 1.5]]> : tensor<3x4xf32>
        %b = arith.constant dense<[0.1, -0.2, 0.3]> : tensor<3xf32>
        %r = aten.linear %x, %w, %b : (tensor<2x5x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<2x5x3xf32>
        %r""",
    ),
    case(
        "linear_runtime_weight",
        "%x: tensor<2x4xf32>, %w: tensor<3x4xf32>",
        "tensor<2x3xf32>",
        "%r = aten.linear %x, %w : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>\n%r",
    ),
    *(
        case(
            f"linear_runtime_weight_bias_{t}",
            "%x: tensor<2x4xf32>, %w: tensor<3x4xf32>, %b: tensor<3xf32>",
            "tensor<2x3xf32>",
            "%r = aten.linear %x, %w, %b : (tensor<2x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<2x3xf32>\n%r",
            target=t,
        )
        for t in ("iOS18", "iOS16")
    ),
    case(
        "linear_runtime_bias",
        "%x: tensor<2x4xf32>, %b: tensor<3xf32>",
        "tensor<2x3xf32>",
        """
        %w = arith.constant dense<[[0.5, -1.0, 0.25, 2.0], [1.0, 1.0, -0.5, 0.0], [-2.0, 0.75, 0.5, 1.5]]> : tensor<3x4xf32>
        %r = aten.linear %x, %w, %b : (tensor<2x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<2x3xf32>
        %r""",
    ),
    case(
        "linear_rank4_iOS16",
        "%x: tensor<2x1x5x4xf32>",
        "tensor<2x1x5x3xf32>",
        """
        %w = arith.constant dense<[[0.5, -1.0, 0.25, 2.0], [1.0, 1.0, -0.5, 0.0], [-2.0, 0.75, 0.5, 1.5]]> : tensor<3x4xf32>
        %b = arith.constant dense<[0.1, -0.2, 0.3]> : tensor<3xf32>
        %r = aten.linear %x, %w, %b : (tensor<2x1x5x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<2x1x5x3xf32>
        %r""",
        target="iOS16",
    ),
    case(
        "linear_no_bias",
        "%x: tensor<2x4xf32>",
        "tensor<2x3xf32>",
        """
        %w = arith.constant dense<[[0.5, -1.0, 0.25, 2.0], [1.0, 1.0, -0.5, 0.0], [-2.0, 0.75, 0.5, 1.5]]> : tensor<3x4xf32>
        %r = aten.linear %x, %w : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
        %r""",
    ),
    case(
        "addmm_runtime",
        "%b: tensor<2xf32>, %x: tensor<4x3xf32>, %w: tensor<3x2xf32>",
        "tensor<4x2xf32>",
        "%r = aten.addmm %b, %x, %w : (tensor<2xf32>, tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>\n%r",
    ),
    case(
        "addmm_constant_weight",
        "%x: tensor<4x3xf32>",
        "tensor<4x2xf32>",
        """
        %b = arith.constant dense<[0.5, -0.5]> : tensor<2xf32>
        %w = arith.constant dense<[[1.0, -1.0], [0.5, 2.0], [-0.25, 0.75]]> : tensor<3x2xf32>
        %r = aten.addmm %b, %x, %w : (tensor<2xf32>, tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
        %r""",
    ),
    case(
        "addmm_alpha_beta",
        "%b: tensor<4x2xf32>, %x: tensor<4x3xf32>, %w: tensor<3x2xf32>",
        "tensor<4x2xf32>",
        "%r = aten.addmm %b, %x, %w {beta = 5.000000e-01 : f64, alpha = 2.000000e+00 : f64} : (tensor<4x2xf32>, tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>\n%r",
    ),
    case(
        "matmul",
        "%a: tensor<2x1x3x4xf32>, %b: tensor<3x4x5xf32>",
        "tensor<2x3x3x5xf32>",
        "%r = aten.matmul %a, %b : (tensor<2x1x3x4xf32>, tensor<3x4x5xf32>) -> tensor<2x3x3x5xf32>\n%r",
    ),
    case(
        "conv2d",
        "%x: tensor<1x2x4x4xf32>, %w: tensor<3x2x3x3xf32>, %b: tensor<3xf32>",
        "tensor<1x3x2x2xf32>",
        "%r = aten.conv2d %x, %w, %b {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32>, tensor<3xf32>) -> tensor<1x3x2x2xf32>\n%r",
    ),
    case(
        "conv2d_depthwise",
        "%x: tensor<1x2x5x5xf32>, %w: tensor<2x1x3x3xf32>",
        "tensor<1x2x3x3xf32>",
        "%r = aten.conv2d %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 2 : i64} : (tensor<1x2x5x5xf32>, tensor<2x1x3x3xf32>) -> tensor<1x2x3x3xf32>\n%r",
    ),
    case(
        "max_pool2d",
        "%x: tensor<1x2x5x5xf32>",
        "tensor<1x2x3x3xf32>",
        "%r = aten.max_pool2d %x {kernel_size = array<i64: 3, 3>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>} : (tensor<1x2x5x5xf32>) -> tensor<1x2x3x3xf32>\n%r",
    ),
    case(
        "avg_pool2d",
        "%x: tensor<1x2x4x4xf32>",
        "tensor<1x2x2x2xf32>",
        "%r = aten.avg_pool2d %x {kernel_size = array<i64: 3, 3>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, count_include_pad = false} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>\n%r",
    ),
    case(
        "avg_pool2d_ceil_include_pad",
        "%x: tensor<2x7x6xf32>",
        "tensor<2x4x3xf32>",
        "%r = aten.avg_pool2d %x {kernel_size = array<i64: 3, 3>, stride = array<i64: 2, 2>, padding = array<i64: 1, 0>, ceil_mode = true} : (tensor<2x7x6xf32>) -> tensor<2x4x3xf32>\n%r",
    ),
    case(
        "adaptive_avg_pool2d_1x1",
        "%x: tensor<1x2x4x4xf32>",
        "tensor<1x2x1x1xf32>",
        "%r = aten.adaptive_avg_pool2d %x {output_size = array<i64: 1, 1>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x1x1xf32>\n%r",
    ),
    case(
        "adaptive_avg_pool2d_2x2",
        "%x: tensor<1x2x6x4xf32>",
        "tensor<1x2x2x2xf32>",
        "%r = aten.adaptive_avg_pool2d %x {output_size = array<i64: 2, 2>} : (tensor<1x2x6x4xf32>) -> tensor<1x2x2x2xf32>\n%r",
    ),
    case(
        "sdpa_causal",
        "%q: tensor<1x2x3x8xf32>, %k: tensor<1x2x3x8xf32>, %v: tensor<1x2x3x8xf32>",
        "tensor<1x2x3x8xf32>",
        "%r = aten.scaled_dot_product_attention %q, %k, %v {is_causal = true} : (tensor<1x2x3x8xf32>, tensor<1x2x3x8xf32>, tensor<1x2x3x8xf32>) -> tensor<1x2x3x8xf32>\n%r",
    ),
    case(
        "sdpa_float_mask",
        "%q: tensor<1x2x3x8xf32>, %k: tensor<1x2x5x8xf32>, %v: tensor<1x2x5x6xf32>, %m: tensor<3x5xf32>",
        "tensor<1x2x3x6xf32>",
        "%r = aten.scaled_dot_product_attention %q, %k, %v, %m {scale = 2.500000e-01 : f64} : (tensor<1x2x3x8xf32>, tensor<1x2x5x8xf32>, tensor<1x2x5x6xf32>, tensor<3x5xf32>) -> tensor<1x2x3x6xf32>\n%r",
    ),
    *(
        case(
            f"sdpa_gqa_{t}",
            "%q: tensor<1x4x3x8xf32>, %k: tensor<1x2x5x8xf32>, %v: tensor<1x2x5x6xf32>",
            "tensor<1x4x3x6xf32>",
            "%r = aten.scaled_dot_product_attention %q, %k, %v {enable_gqa = true} : (tensor<1x4x3x8xf32>, tensor<1x2x5x8xf32>, tensor<1x2x5x6xf32>) -> tensor<1x4x3x6xf32>\n%r",
            target=t,
        )
        for t in ("iOS18", "iOS17")
    ),
    case(
        "sdpa_gqa_broadcast_batch_causal",
        "%q: tensor<2x6x3x4xf32>, %k: tensor<1x2x3x4xf32>, %v: tensor<1x2x3x5xf32>",
        "tensor<2x6x3x5xf32>",
        "%r = aten.scaled_dot_product_attention %q, %k, %v {is_causal = true, enable_gqa = true, scale = 5.000000e-01 : f64} : (tensor<2x6x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x5xf32>) -> tensor<2x6x3x5xf32>\n%r",
    ),
    case(
        "sdpa_gqa_rank3_bool_mask",
        "%q: tensor<4x3x8xf32>, %k: tensor<1x5x8xf32>, %v: tensor<1x5x6xf32>, %m: tensor<3x5xi1>",
        "tensor<4x3x6xf32>",
        "%r = aten.scaled_dot_product_attention %q, %k, %v, %m {enable_gqa = true} : (tensor<4x3x8xf32>, tensor<1x5x8xf32>, tensor<1x5x6xf32>, tensor<3x5xi1>) -> tensor<4x3x6xf32>\n%r",
    ),
    # ----- quant: standalone static, weights kept compressed, dynamic chains -------------
    case(
        "quantize_dequantize",
        "%x: tensor<2x4xf32>",
        "tensor<2x4xi8>, tensor<2x4xf32>",
        STATIC_QDQ.replace("QMIN", "-128"),
        target="iOS17",
    ),
    case(
        "quantize_dequantize_clip",
        "%x: tensor<2x4xf32>",
        "tensor<2x4xi8>, tensor<2x4xf32>",
        STATIC_QDQ.replace("QMIN", "-127"),
        halves=True,
        low=-20,
        high=20,
    ),
    *(
        case(
            f"dequantize_weight_{t}", "%x: tensor<2x4xf32>", "tensor<2x3xf32>", WEIGHT_DQ, target=t
        )
        for t in ("iOS18", "iOS16")
    ),
    *(
        case(
            f"dequantize_codebook_{t}", "%x: tensor<2x4xf32>", "tensor<2x3xf32>", CODEBOOK, target=t
        )
        for t in ("iOS18", "iOS16")
    ),
    case(  # .item() + narrow (expand_dynamic_windows); the check is dropped on Core ML
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
    case(
        "choose_qparams_dynamic",
        "%x: tensor<2x4xf32>",
        "tensor<2x4xf32>",
        """
        %s, %z = quant.choose_qparams %x {block_size = array<i64: 1, 4>, qmin = -128 : i64, qmax = 127 : i64, mapping = "asymmetric", eps = 1.1920928955078125e-07 : f64} : (tensor<2x4xf32>) -> (tensor<2x1xf32>, tensor<2x1xi64>)
        %q = quant.quantize %x, %s, %z {block_size = array<i64: 1, 4>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<2x4xf32>, tensor<2x1xf32>, tensor<2x1xi64>) -> tensor<2x4xi8>
        %d = quant.dequantize %q, %s, %z {block_size = array<i64: 1, 4>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<2x4xi8>, tensor<2x1xf32>, tensor<2x1xi64>) -> tensor<2x4xf32>
        %r = aten.relu %d : (tensor<2x4xf32>) -> tensor<2x4xf32>
        %r""",
        l2=1e-2,
    ),
    # ----- qfused ------------------------------------------------------------------------
    case(
        "qfused_linear_q4gsw",
        "%x: tensor<2x8xf32>",
        "tensor<2x3xf32>",
        f"""
        %w = arith.constant {W8}
        %s = arith.constant dense<[[0.5, 0.25], [0.125, 1.0], [2.0, 0.5]]> : tensor<3x2xf32>
        %b = arith.constant dense<[0.1, 0.2, 0.3]> : tensor<3xf32>
        %y = qfused.linear %x, %w, %s bias %b {{weight_scheme = #qfused.affine<bits = 4, range = [-8, 7], block = [1, 4]>, kernel = "linear_q4gsw"}} : tensor<2x8xf32>, tensor<3x8xi8>, tensor<3x2xf32> bias tensor<3xf32> -> tensor<2x3xf32>
        %y""",
    ),
    *(
        case(
            f"qfused_linear_q8csw_{t}",
            "%x: tensor<2x8xf32>",
            "tensor<2x3xf32>",
            Q8_WEIGHT_ONLY,
            target=t,
        )
        for t in ("iOS18", "iOS16")
    ),
    *(
        case(
            f"qfused_linear_q8ta_requant_{t}",
            "%x: tensor<2x8xi8>",
            "tensor<2x3xi8>",
            Q8_REQUANT,
            low=-60,
            high=60,
            target=t,
        )
        for t in ("iOS18", "iOS17")
    ),
    case(
        "qfused_linear_dq8ca",
        "%x: tensor<2x8xf32>",
        "tensor<2x3xf32>",
        f"""
        %w = arith.constant {W8}
        %s = arith.constant dense<[[0.5, 0.25], [0.125, 1.0], [2.0, 0.5]]> : tensor<3x2xf32>
        %y = qfused.linear %x, %w, %s {{weight_scheme = #qfused.affine<bits = 4, range = [-8, 7], block = [1, 4]>, act = #qfused.dynamic<per_token, asymmetric, range = [-128, 127], eps = 1.1920928955078125e-07, scale_type = f32>, kernel = "linear_dq8ca_q4gsw"}} : tensor<2x8xf32>, tensor<3x8xi8>, tensor<3x2xf32> -> tensor<2x3xf32>
        %y""",
        l2=1e-2,
    ),
    case(
        "qfused_linear_lut",
        "%x: tensor<2x8xf32>",
        "tensor<2x3xf32>",
        """
        %c = arith.constant dense<[[0, 1, 2, 3, 4, 5, 6, 7], [7, 6, 5, 4, 3, 2, 1, 0], [1, 1, 1, 1, 2, 2, 2, 2]]> : tensor<3x8xui8>
        %book = arith.constant dense<[[[[0.5], [-1.0], [0.25], [2.0], [1.5], [-0.5], [0.0], [3.0]], [[1.0], [1.0], [-2.0], [0.5], [0.5], [0.75], [-0.25], [1.0]]]]> : tensor<1x2x8x1xf32>
        %y = qfused.linear %x, %c, %book {weight_scheme = #qfused.lut<nbits = 3, block = [-1, 4]>, kernel = "linear_lut3w"} : tensor<2x8xf32>, tensor<3x8xui8>, tensor<1x2x8x1xf32> -> tensor<2x3xf32>
        %y""",
    ),
    case(
        "qfused_embedding_q4gaw",
        "%idx: tensor<1x3xi64>",
        "tensor<1x3x8xf32>",
        f"""
        %w = arith.constant {W8}
        %s = arith.constant dense<[[0.5, 0.25], [0.125, 1.0], [2.0, 0.5]]> : tensor<3x2xf32>
        %z = arith.constant dense<[[0, 1], [2, -1], [0, 0]]> : tensor<3x2xi8>
        %y = qfused.embedding %idx, %w, %s zero_point %z {{weight_scheme = #qfused.affine<bits = 4, range = [-8, 7], block = [1, 4]>, kernel = "embedding_q4gaw"}} : tensor<1x3xi64>, tensor<3x8xi8>, tensor<3x2xf32> zero_point tensor<3x2xi8> -> tensor<1x3x8xf32>
        %y""",
        low=0,
        high=3,
    ),
    *(
        case(
            f"qfused_embedding_lut_{t}",
            "%i: tensor<3xi32>",
            "tensor<3x8xf32>",
            EMBEDDING_LUT,
            low=0,
            high=5,
            target=t,
        )
        for t in ("iOS18", "iOS16")
    ),
    *(
        case(
            f"qfused_conv2d_add_{t}",
            "%x: tensor<1x2x4x4xf32>",
            "tensor<1x4x4x4xi8>",
            CONV_ADD,
            target=t,
        )
        for t in ("iOS18", "iOS17")
    ),
    case(
        "qfused_mul_squeeze_excitation",
        "%x: tensor<1x2x3x3xf32>",
        "tensor<1x2x3x3xi8>",
        """
        %g = arith.constant dense<[[[[-100]], [[27]]]]> : tensor<1x2x1x1xi8>
        %y = qfused.mul %x, %g {lhs_act = #qfused.static<scale = 0.05, zero_point = 3, range = [-128, 127]>, rhs_act = #qfused.static<scale = 0.0039, zero_point = -128, range = [-128, 127]>, requant = #qfused.static<scale = 0.04, zero_point = 1, range = [-128, 127]>, clamp_min = 0.0 : f64, kernel = "mul_q8ta_q8ta_q8to"} : tensor<1x2x3x3xf32>, tensor<1x2x1x1xi8> -> tensor<1x2x3x3xi8>
        %y""",
    ),
]

MIL_DTYPE = {np.dtype(np.int64): np.dtype(np.int32), np.dtype(np.float64): np.dtype(np.float32)}
"""Core ML has no 64-bit types: the lowering narrows i64 to i32 and f64 to f32."""


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
        elif case.halves:
            arrays.append((rng.integers(case.low, case.high, dims) / 2).astype(dtype))
        else:
            x = rng.standard_normal(dims).astype(dtype)
            arrays.append(np.abs(x) + dtype.type(0.1) if case.positive else x)
    return arrays


def rel_l2(got: np.ndarray, want: np.ndarray) -> float:
    g, w = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return float(np.linalg.norm(g - w) / max(np.linalg.norm(w), 1e-30))


def assert_same(got: tuple[np.ndarray, ...], want: tuple[np.ndarray, ...], case: Case) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape, case.id
        assert g.dtype == MIL_DTYPE.get(w.dtype, w.dtype), case.id
        if w.dtype.kind != "f":
            np.testing.assert_array_equal(g, w.astype(g.dtype))
        elif case.l2 is not None:
            assert rel_l2(g, w) < case.l2, (case.id, rel_l2(g, w))
        else:
            np.testing.assert_allclose(g, w, rtol=case.rtol, atol=case.rtol, equal_nan=True)


def check(case: Case) -> None:
    module = parse_module(case.body)
    module.verify()
    inputs = random_inputs(case, module)
    want = qopt.interpret(module, *inputs)
    ConvertToCoremlPass(target=case.target).apply(make_context(), module)
    module.verify()
    for op in entry_function(module).body.block.ops:
        assert isinstance(op, coreml.CoremlOp | ReturnOp), op.name
    got = qopt.interpret(module, *inputs)  # MIL's quantize rule (divide by the scale)
    assert_same(got, want, case)


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_rule_matches_the_mid_level(case: Case) -> None:
    check(case)


def test_every_rule_has_a_case() -> None:
    """Every op class with a rule appears in some passing case (a new rule needs one)."""
    covered = {op.name for case in CASES for op in parse_module(case.body).walk()}
    missing = sorted(cls.name for cls in get_rules() if cls.name not in covered)
    assert not missing, f"add cases for {missing}"


def test_cases_are_distinct() -> None:
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids))
    assert all(isinstance(parse_module(c.body).body.block.first_op, FuncOp) for c in CASES)


# ----- ops (and forms) without a CoreML lowering ---------------------------------------


def test_index_put_forms_without_a_lowering() -> None:
    """index_put with accumulate, or on several dims, is a QoptError naming the op."""
    bodies = {
        # values broadcast to the indexed shape: a form compose's index_add_as_sums leaves
        "accumulate=True": "%r = aten.index_put %x, %i, %u {indexed_dims = array<i64: 0>, accumulate = true} : (tensor<4x3xf32>, tensor<2xi64>, tensor<3xf32>) -> tensor<4x3xf32>",
        "on 2 dims": "%r = aten.index_put %x, %i, %i, %w {indexed_dims = array<i64: 0, 1>} : (tensor<4x3xf32>, tensor<2xi64>, tensor<2xi64>, tensor<2xf32>) -> tensor<4x3xf32>",
    }
    for message, line in bodies.items():
        body = f"""func.func @forward(%x: tensor<4x3xf32>, %i: tensor<2xi64>, %u: tensor<3xf32>, %w: tensor<2xf32>) -> tensor<4x3xf32> {{
  {line}
  func.return %r : tensor<4x3xf32>
}}"""
        module = parse_module(body)
        module.verify()
        with pytest.raises(qopt.QoptError, match=rf"'aten.index_put'.*{message}"):
            ConvertToCoremlPass().apply(make_context(), module)


def test_run_time_index_on_several_dims_is_unsupported() -> None:
    body = """func.func @forward(%x: tensor<4x3xf32>, %i: tensor<2xi64>) -> tensor<2xf32> {
  %r = aten.index %x, %i, %i {indexed_dims = array<i64: 0, 1>} : (tensor<4x3xf32>, tensor<2xi64>, tensor<2xi64>) -> tensor<2xf32>
  func.return %r : tensor<2xf32>
}"""
    with pytest.raises(
        qopt.QoptError, match=r"'aten.index'.*on 2 dims with index tensors computed at run time"
    ):
        ConvertToCoremlPass().apply(make_context(), parse_module(body))


@pytest.mark.parametrize("target", ["iOS16", "iOS17"])
def test_state_below_ios18_is_an_error(target: str) -> None:
    """States exist from iOS18: below it, one QoptError naming iOS18 and the state."""
    with pytest.raises(
        qopt.QoptError, match=rf"keeps state between calls \(layers\.0\.k\b.*iOS18.*{target}"
    ):
        ConvertToCoremlPass(target=target).apply(make_context(), parse_module(STATE_F32.body))


def test_slice_scatter_with_a_step_is_unsupported() -> None:
    body = """func.func @forward(%x: tensor<3x5xf32>, %k: tensor<3x2xf32>) -> tensor<3x5xf32> {
  %r = aten.slice_scatter %x, %k {dim = 1 : i64, start = 1 : i64, end = 5 : i64, step = 2 : i64} : (tensor<3x5xf32>, tensor<3x2xf32>) -> tensor<3x5xf32>
  func.return %r : tensor<3x5xf32>
}"""
    with pytest.raises(
        qopt.QoptError, match="slice_scatter with step 2 is not supported on CoreML"
    ):
        ConvertToCoremlPass().apply(make_context(), parse_module(body))


def test_rsqrt_of_a_sum_is_mil_rsqrt_and_bit_exact() -> None:
    """RMSNorm's `rsqrt(x + eps)` lowers to MIL rsqrt (epsilon 0): a sum with a constant
    holding no -0.0 is never -0.0, so on every edge value (-eps: +0.0 -> +inf; -0.0,
    +-inf, nan, subnormals) it equals torch's `1 / sqrt`, sign bits included; with a
    -0.0 addend the sum can be -0.0 and the lowering keeps `real_div(1, sqrt)`."""
    eps = np.float32(1e-6)
    x = np.array([[-eps, -0.0, 0.0, 1.0, np.inf, -np.inf], [np.nan, 1e-45, -1e-45, 4.0, -1, 3e38]],
                 np.float32)  # fmt: skip
    for addend, mil in (("1.000000e-06", "coreml.rsqrt"), ("-0.000000e+00", "coreml.real_div")):
        module = parse_module(f"""
        func.func @forward(%x: tensor<2x6xf32>) -> tensor<2x6xf32> {{
          %c = arith.constant dense<{addend}> : tensor<f32>
          %s = aten.add %x, %c : (tensor<2x6xf32>, tensor<f32>) -> tensor<2x6xf32>
          %y = aten.rsqrt %s : (tensor<2x6xf32>) -> tensor<2x6xf32>
          func.return %y : tensor<2x6xf32>
        }}""")
        with np.errstate(all="ignore"):
            (want,) = qopt.interpret(module, x)
            ConvertToCoremlPass().apply(make_context(), module)
            (got,) = qopt.interpret(module, x)
        assert mil in {op.name for op in module.walk()}
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
        assert np.isposinf(got[0, 0]) == (mil == "coreml.rsqrt")  # -eps + eps is +0.0
