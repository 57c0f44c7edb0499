"""Translation validation of `coreml-fp16`: a coreml module interpreted before
and after the pass, on random inputs, agrees within fp16 round-off.

The fp32 module (convert-to-coreml's output) is the reference. Tolerance: a
relative L2 error below 1e-2, the bound test_coreml.py puts on fp16 packages
against torch (float ops round every result to 11 bits; a static int8 region
keeps fp32, but a value rounded to fp16 on its way into a quantize can land one
step away; measured 1.5e-4 to 7.6e-4). Structure is checked too: the signature stays fp32, every quantize /
dequantize parameter stays fp32, and int8-region ops keep fp32 results.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from shared_exports import exported
from xdsl.dialects.builtin import Float16Type, Float32Type, ModuleOp, StringAttr, TensorType
from xdsl.dialects.func import FuncOp

import qopt
from qopt.context import make_context, parse_module
from qopt.dialects import coreml
from qopt.dialects.queries import entry_function
from qopt.examples import random_inputs
from qopt.lowering.convert_to_coreml import ConvertToCoremlPass
from qopt.lowering.coreml_fp16 import CoremlFp16Pass, integer_regions
from qopt.lowering.pipelines import QoptCoremlPipeline
from qopt.resources import clone_module, resource_references, weights_of

TOLERANCE = 1e-2

#: Hand-written mid-level programs: float ops of several kinds, a static int8
#: region followed by a float op, a mask fill that overflows fp16, an integer path.
PROGRAMS = {
    "float": """
    func.func @forward(%x: tensor<4x8xf32>) -> tensor<4x6xf32> {
      %w = arith.constant dense<[[0.5, -0.25, 0.125, 1.0, -1.0, 0.75, 0.3, -0.6],
        [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8], [-0.8, -0.7, -0.6, -0.5, -0.4, -0.3, -0.2, -0.1],
        [1.5, 0.0, -1.5, 0.0, 1.5, 0.0, -1.5, 0.0], [0.33, 0.66, 0.99, -0.33, -0.66, -0.99, 0.0, 0.5],
        [0.05, -0.05, 0.15, -0.15, 0.25, -0.25, 0.35, -0.35]]> : tensor<6x8xf32>
      %b = arith.constant dense<[0.1, -0.2, 0.3, -0.4, 0.5, -0.6]> : tensor<6xf32>
      %y = aten.linear %x, %w, %b : (tensor<4x8xf32>, tensor<6x8xf32>, tensor<6xf32>) -> tensor<4x6xf32>
      %g = aten.gelu %y : (tensor<4x6xf32>) -> tensor<4x6xf32>
      %s = aten.softmax %g {dim = 1 : i64} : (tensor<4x6xf32>) -> tensor<4x6xf32>
      %t = aten.tanh %y : (tensor<4x6xf32>) -> tensor<4x6xf32>
      %o = aten.add %s, %t : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
      func.return %o : tensor<4x6xf32>
    }
    """,
    "int8_region": """
    func.func @forward(%x: tensor<4x8xf32>) -> tensor<4x6xf32> {
      %s = arith.constant dense<2.000000e-02> : tensor<f32>
      %z = arith.constant dense<3> : tensor<i8>
      %q = quant.quantize %x, %s, %z {block_size = array<i64: 4, 8>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<4x8xf32>, tensor<f32>, tensor<i8>) -> tensor<4x8xi8>
      %d = quant.dequantize %q, %s, %z {block_size = array<i64: 4, 8>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<4x8xi8>, tensor<f32>, tensor<i8>) -> tensor<4x8xf32>
      %w = arith.constant dense<2.500000e-01> : tensor<6x8xf32>
      %b = arith.constant dense<1.000000e-01> : tensor<6xf32>
      %y = aten.linear %d, %w, %b : (tensor<4x8xf32>, tensor<6x8xf32>, tensor<6xf32>) -> tensor<4x6xf32>
      %s2 = arith.constant dense<5.000000e-02> : tensor<f32>
      %z2 = arith.constant dense<-2> : tensor<i8>
      %q2 = quant.quantize %y, %s2, %z2 {block_size = array<i64: 4, 6>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<4x6xf32>, tensor<f32>, tensor<i8>) -> tensor<4x6xi8>
      %d2 = quant.dequantize %q2, %s2, %z2 {block_size = array<i64: 4, 6>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<4x6xi8>, tensor<f32>, tensor<i8>) -> tensor<4x6xf32>
      %t = aten.sigmoid %d2 : (tensor<4x6xf32>) -> tensor<4x6xf32>
      func.return %t : tensor<4x6xf32>
    }
    """,
    "mask_and_ints": """
    func.func @forward(%x: tensor<4x8xf32>, %ids: tensor<4xi32>) -> (tensor<4x8xf32>, tensor<4xi32>) {
      %z = arith.constant dense<0.000000e+00> : tensor<4x8xf32>
      %lt = aten.lt %x, %z : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xi1>
      %fill = arith.constant dense<-3.400000e+38> : tensor<f32>
      %m = aten.masked_fill %x, %lt, %fill : (tensor<4x8xf32>, tensor<4x8xi1>, tensor<f32>) -> tensor<4x8xf32>
      %s = aten.softmax %m {dim = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
      %i = aten.add %ids, %ids : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
      func.return %s, %i : tensor<4x8xf32>, tensor<4xi32>
    }
    """,
}

#: Example models (export is the slow part: a few pairs, one per kind of region).
MODEL_PAIRS = [("mlp", "float"), ("mlp", "pt2e_static"), ("convnet", "pt2e_static"),
               ("llama", "w4g32")]  # fmt: skip


def rel_err(got: np.ndarray, want: np.ndarray) -> float:
    g, w = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return float(np.linalg.norm(g - w) / max(np.linalg.norm(w), 1e-30))


def random_arguments(module: ModuleOp, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    args = []
    for arg in entry_function(module).body.block.args:
        assert isinstance(arg.type, TensorType)
        shape = tuple(arg.type.get_shape())
        if isinstance(arg.type.get_element_type(), Float32Type):
            args.append(rng.standard_normal(shape).astype(np.float32))
        else:
            args.append(rng.integers(-5, 5, shape).astype(np.int32))
    return args


def lowered(text: str) -> ModuleOp:
    module = parse_module(text)
    ConvertToCoremlPass().apply(make_context(), module)
    return module


def model_lowered(model: str, scheme: str) -> ModuleOp:
    module = qopt.import_program(exported(model, scheme))
    QoptCoremlPipeline(compute_precision="fp32").apply(make_context(), module)
    return module


def check_fp16(fp32: ModuleOp, inputs: list[Any]) -> None:
    want = qopt.interpret(fp32, *inputs)
    fp16 = clone_module(fp32)
    CoremlFp16Pass().apply(make_context(), fp16)
    fp16.verify()
    got = qopt.interpret(fp16, *inputs)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype
        assert g.shape == w.shape
        if np.issubdtype(w.dtype, np.floating):
            assert rel_err(g, w) < TOLERANCE, rel_err(g, w)
        else:
            assert np.array_equal(g, w)
    before, after = entry_function(fp32), entry_function(fp16)
    assert after.function_type == before.function_type  # fp32 in, fp32 out
    check_structure(after)


def check_structure(func: FuncOp) -> None:
    kept = integer_regions(func.body.block)
    for op in func.body.block.ops:
        if isinstance(op, coreml.QuantizeOp | coreml.DequantizeOp):
            scale = op.scale
            assert isinstance(scale.type, TensorType)
            assert isinstance(scale.type.get_element_type(), Float32Type), op
        if isinstance(op, coreml.QuantizeOp):
            x = op.input.type
            assert isinstance(x, TensorType)
            assert isinstance(x.get_element_type(), Float32Type)
        if op in kept:  # int8 regions compute in fp32
            for result in op.results:
                assert isinstance(result.type, TensorType)
                assert not isinstance(result.type.get_element_type(), Float16Type), op


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_fp16_matches_fp32_programs(name: str) -> None:
    module = lowered(PROGRAMS[name])
    for seed in range(3):
        check_fp16(module, random_arguments(module, seed))


def test_int8_region_is_kept_fp32() -> None:
    module = lowered(PROGRAMS["int8_region"])
    region = integer_regions(entry_function(module).body.block)
    # the linear, and the mul by 1 / scale of the quantize after it (torch's rounding)
    assert sorted(op.name for op in region) == ["coreml.linear", "coreml.mul"]


@pytest.mark.parametrize(("model", "scheme"), MODEL_PAIRS)
def test_fp16_matches_fp32_models(model: str, scheme: str) -> None:
    module = model_lowered(model, scheme)
    inputs = [np.asarray(t) for t in random_inputs(model, 7)]
    check_fp16(module, inputs)


def test_conv_batch_norm_folds_into_the_conv() -> None:
    """A conv read only by a batch_norm becomes one conv (weight and bias folded,
    as coremltools does); fp16 against the fp32 program within TOLERANCE, and a
    batch norm after something else stays."""
    module = parse_module("""
    func.func @forward(%x: tensor<1x2x5x5xf32>) -> (tensor<1x3x3x3xf32>, tensor<1x2x5x5xf32>) {
      %w = arith.constant dense<[[[[0.5, -1.0, 0.25], [1.0, 0.0, -0.5], [0.75, 0.5, 1.0]],
        [[0.1, 0.2, 0.3], [-0.4, 0.5, -0.6], [0.7, -0.8, 0.9]]], [[[1.0, 1.0, 1.0], [0.0, 0.0,
        0.0], [-1.0, -1.0, -1.0]], [[0.5, 0.5, 0.5], [0.5, 0.5, 0.5], [0.5, 0.5, 0.5]]],
        [[[0.2, -0.2, 0.2], [-0.2, 0.2, -0.2], [0.2, -0.2, 0.2]], [[1.5, 0.0, -1.5], [0.0, 1.0,
        0.0], [-1.5, 0.0, 1.5]]]]> : tensor<3x2x3x3xf32>
      %b = arith.constant dense<[0.5, -0.25, 1.0]> : tensor<3xf32>
      %m = arith.constant dense<[0.1, -0.2, 0.3]> : tensor<3xf32>
      %v = arith.constant dense<[1.5, 0.25, 4.0]> : tensor<3xf32>
      %g = arith.constant dense<[2.0, -0.5, 1.0]> : tensor<3xf32>
      %e = arith.constant dense<[0.0, 1.0, -1.0]> : tensor<3xf32>
      %m2 = arith.constant dense<[0.5, -0.5]> : tensor<2xf32>
      %v2 = arith.constant dense<[2.0, 0.5]> : tensor<2xf32>
      %c = aten.conv2d %x, %w, %b {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x2x5x5xf32>, tensor<3x2x3x3xf32>, tensor<3xf32>) -> tensor<1x3x3x3xf32>
      %y = aten.batch_norm %c, %m, %v weight(%g : tensor<3xf32>) bias(%e : tensor<3xf32>) {eps = 1.000000e-03 : f64} : tensor<1x3x3x3xf32>, tensor<3xf32>, tensor<3xf32> -> tensor<1x3x3x3xf32>
      %r = aten.relu %x : (tensor<1x2x5x5xf32>) -> tensor<1x2x5x5xf32>
      %z = aten.batch_norm %r, %m2, %v2 {eps = 1.000000e-05 : f64} : tensor<1x2x5x5xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<1x2x5x5xf32>
      func.return %y, %z : tensor<1x3x3x3xf32>, tensor<1x2x5x5xf32>
    }""")
    ConvertToCoremlPass().apply(make_context(), module)
    assert sum(isinstance(op, coreml.BatchNormOp) for op in module.walk()) == 2
    inputs = [np.random.default_rng(0).standard_normal((1, 2, 5, 5)).astype(np.float32)]
    check_fp16(module, inputs)
    fp16 = clone_module(module)
    CoremlFp16Pass().apply(make_context(), fp16)
    names = [op.name for op in entry_function(fp16).body.block.ops]
    assert names.count("coreml.batch_norm") == 1  # the one after relu
    assert names.count("coreml.conv") == 1


def test_fp32_weights_are_dropped_as_they_are_replaced() -> None:
    """The pass drops each fp32 weight's blob once the last op naming it is replaced by
    its fp16 copy (not all at the pass's end): a blob named by two functions (a
    multifunction package's shared weight) only after both; never one an op still names.
    The program computes the same (against the fp32 program, which keeps its blobs)."""
    reference = lowered(PROGRAMS["float"])
    module = lowered(PROGRAMS["float"])
    twin = entry_function(module).clone()
    twin.sym_name = StringAttr("twin")
    module.body.block.add_op(twin)
    store = weights_of(module)
    assert store.releasable
    fp32 = {
        key
        for key in resource_references(module)
        if isinstance(store.get(key), np.ndarray) and store.get(key).dtype == np.float32
    }
    assert fp32  # the linear's weight at least
    released: list[str] = []
    release = store.release

    def spy(key: str) -> bool:
        assert key not in resource_references(module), f"{key} dropped while still named"
        released.append(key)
        return release(key)

    store.release = spy  # pyright: ignore[reportAttributeAccessIssue]
    CoremlFp16Pass().apply(make_context(), module)
    module.verify()
    assert sorted(released) == sorted(fp32)  # during the pass, each once
    assert not any(key in store for key in fp32)
    for seed in range(2):
        inputs = random_arguments(reference, seed)
        (want,) = qopt.interpret(reference, *inputs)
        for function in ("forward", "twin"):
            (got,) = qopt.interpret(module, *inputs, function=function)
            assert rel_err(got, want) < TOLERANCE
