"""vkc-merge-siblings, vkc-fuse-norms, vkc-fuse-row-quant and vkc-fold-copies: translation validation (interpret the vkc IR
before and after each pass: bit-identical outputs), fewer dispatches, idempotence, and
on the Vulkan device bit-identical outputs with every dispatch fusion of qopt-vulkan on
and off, at seq 16 (strided column loads) and at seq 1 (KV-cache decode steps)."""

from __future__ import annotations

import copy
import functools
from pathlib import Path

import numpy as np
import pytest
import torch
from shared_exports import exported as shared_exported
from xdsl.dialects.builtin import ModuleOp

import qopt
from qopt.backends.vulkan.artifact import compile_artifact
from qopt.backends.vulkan.runtime import vulkan_available
from qopt.context import make_context
from qopt.dialects import vkc
from qopt.examples import apply_scheme, build_kv_llama, random_inputs
from qopt.lowering.convert_to_vkc import ConvertToVkcPass
from qopt.lowering.pipelines import QoptVulkanPipeline
from qopt.lowering.vkc_fold_copies import VkcFoldCopiesPass
from qopt.lowering.vkc_fuse_elementwise import VkcFuseElementwisePass
from qopt.lowering.vkc_fuse_norms import VkcFuseNormsPass
from qopt.lowering.vkc_fuse_row_quant import VkcFuseRowQuantPass
from qopt.lowering.vkc_merge_siblings import ROW_KERNELS, VkcMergeSiblingsPass
from qopt.resources import clone_module


def exported(scheme: str):
    return shared_exported("llama", scheme)


@functools.cache
def decode_step(scheme: str):
    torch.manual_seed(0)
    example = (torch.tensor([[1]]), torch.tensor([0]))
    model = apply_scheme(
        build_kv_llama(vocab_size=64, dim=64, n_layers=1, n_heads=4, hidden_dim=128, max_seq_len=8),
        scheme,
        example,
    )
    with torch.no_grad():
        return torch.export.export(copy.deepcopy(model), example, strict=False)


def fused(ep) -> ModuleOp:
    module = qopt.fuse(qopt.import_program(ep))
    ConvertToVkcPass(schedule=False).apply(make_context(), module)
    VkcFuseElementwisePass().apply(make_context(), module)
    module.verify()
    return module


def linears(module: ModuleOp) -> int:
    return sum(
        isinstance(op, vkc.DispatchOp) and op.kernel_op().kernel.data in ROW_KERNELS
        for op in module.walk()
    )


def same(a: tuple[np.ndarray, ...], b: tuple[np.ndarray, ...]) -> bool:
    return len(a) == len(b) and all(
        x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()
        for x, y in zip(a, b, strict=True)
    )


def test_merge_keeps_the_interpreted_outputs() -> None:
    """TinyLlama w4g32 (2 layers, seq 16): wq/wk/wv and w1/w3 of each layer become one
    dispatch each (7 -> 4 linears per layer), outputs bit-identical; a second run
    changes nothing."""
    module = fused(exported("w4g32"))
    inputs = random_inputs("llama", 3)
    before, count = qopt.interpret(module, *inputs), linears(module)
    VkcMergeSiblingsPass().apply(make_context(), module)
    module.verify()
    assert linears(module) == count - 3 * 2
    assert same(qopt.interpret(module, *inputs), before)
    once = str(module)
    VkcMergeSiblingsPass().apply(make_context(), module)
    assert str(module) == once


def test_merge_keeps_a_decode_step() -> None:
    """KV-cache decode steps (seq 1, 8da4w: each x quantized once for its siblings):
    the merged output's columns are read at an offset; outputs bit-identical over two
    steps."""
    module = fused(decode_step("8da4w"))
    merged = clone_module(module)
    VkcMergeSiblingsPass().apply(make_context(), merged)
    merged.verify()
    assert linears(merged) == linears(module) - 3
    a, b = qopt.session(module), qopt.session(merged)
    for step in range(2):
        inputs = (np.array([[step + 3]]), np.array([step]))
        assert same(a.run(*inputs), b.run(*inputs))


def test_merge_needs_the_same_activations() -> None:
    """Linears reading different inputs, or whose output is a program output (read
    by no dispatch), stay apart."""
    from qopt.context import parse_module

    text = """func.func @f(%x: tensor<1x32xf32>, %y: tensor<1x32xf32>) -> (tensor<1x8xf32>, tensor<1x8xf32>) {
  %w = arith.constant dense<1> : tensor<8x32xi8>
  %s = arith.constant dense<0.5> : tensor<8x1xf32>
  %z = arith.constant dense<0> : tensor<8x1xi8>
  %wd = quant.dequantize %w, %s, %z {block_size = array<i64: 1, 32>, qmin = -8 : i64, qmax = 7 : i64} : (tensor<8x32xi8>, tensor<8x1xf32>, tensor<8x1xi8>) -> tensor<8x32xf32>
  %a = aten.linear %x, %wd : (tensor<1x32xf32>, tensor<8x32xf32>) -> tensor<1x8xf32>
  %b = aten.linear %y, %wd : (tensor<1x32xf32>, tensor<8x32xf32>) -> tensor<1x8xf32>
  func.return %a, %b : tensor<1x8xf32>, tensor<1x8xf32>
}"""
    module = parse_module(text)
    QoptVulkanPipeline().apply(make_context(), module)
    assert linears(module) == 2


def kinds(module: ModuleOp) -> list[str]:
    return [op.kernel_op().kernel.data for op in module.walk() if isinstance(op, vkc.DispatchOp)]


def test_fuse_norms_keeps_the_interpreted_outputs() -> None:
    """TinyLlama w4g32 (2 layers, seq 16): each RMSNorm (reduce_rows + its tail) is one
    rms_norm_rows dispatch, the residual adds before the second norm of each layer and
    the final norm folded in (5 norms, 4 adds: 14 dispatches -> 5); outputs
    bit-identical; a second run changes nothing."""
    module = fused(exported("w4g32"))
    inputs = random_inputs("llama", 3)
    before, count = qopt.interpret(module, *inputs), len(kinds(module))
    VkcFuseNormsPass().apply(make_context(), module)
    module.verify()
    assert kinds(module).count("rms_norm_rows") == 5
    assert "reduce_rows" not in kinds(module)
    assert len(kinds(module)) == count - 9
    assert same(qopt.interpret(module, *inputs), before)
    once = str(module)
    VkcFuseNormsPass().apply(make_context(), module)
    assert str(module) == once


LIT = Path(__file__).parents[2] / "lit"


@pytest.mark.parametrize(
    ("lit", "passes"),
    [
        ("vkc-fuse-norms/norms.mlir", [VkcFuseNormsPass]),
        ("vkc-merge-siblings/merge.mlir", [VkcMergeSiblingsPass]),
        (
            "vkc-fuse-row-quant/row_quant.mlir",
            [VkcFuseNormsPass, VkcMergeSiblingsPass, VkcFuseRowQuantPass],
        ),
    ],
)
def test_lit_cases_keep_their_outputs(lit: str, passes: list[type]) -> None:
    """Every function of the pass's lit file (float inputs), lowered and fused
    elementwise, interpreted before and after the pass: bit-identical outputs."""
    from xdsl.dialects import func

    from qopt.context import parse_module

    rng = np.random.default_rng(0)
    for chunk in (LIT / lit).read_text().split("// -----"):
        before = parse_module(chunk)
        ConvertToVkcPass(schedule=False).apply(make_context(), before)
        VkcFuseElementwisePass().apply(make_context(), before)
        after = clone_module(before)
        for pass_type in passes:
            pass_type().apply(make_context(), after)
        after.verify()
        (function,) = [op for op in before.ops if isinstance(op, func.FuncOp)]
        inputs = [
            rng.standard_normal(tuple(t.get_shape())).astype(np.float32)  # pyright: ignore[reportAttributeAccessIssue]
            for t in function.function_type.inputs.data
        ]
        assert same(qopt.interpret(after, *inputs), qopt.interpret(before, *inputs)), chunk


def test_fuse_norms_keeps_a_dynamic_decode_step() -> None:
    """An 8da4w decode step (seq 1): each linear's choose_qparams_rows + quantize_rows
    is one quantize_rows_dynamic (7 linears + the head), the norms one dispatch each;
    outputs bit-identical over two steps."""
    module = fused(decode_step("8da4w"))
    normed = clone_module(module)
    VkcFuseNormsPass().apply(make_context(), normed)
    normed.verify()
    assert kinds(normed).count("quantize_rows_dynamic") == kinds(module).count("quantize_rows")
    assert kinds(normed).count("quantize_rows_dynamic") == 8
    assert not {"choose_qparams_rows", "quantize_rows", "reduce_rows"} & set(kinds(normed))
    a, b = qopt.session(module), qopt.session(normed)
    for step in range(2):
        inputs = (np.array([[step + 3]]), np.array([step]))
        assert same(a.run(*inputs), b.run(*inputs))


def test_fuse_row_quant_keeps_a_dynamic_decode_step() -> None:
    """An 8da4w decode step (seq 1), normed and merged: the per-token quantizations of
    the two norms' outputs and the final norm's go into their rms_norm_rows (QUANT = 1;
    3 dispatches fewer), the attention output's and the SiLU gate's stay; outputs
    bit-identical over two steps; a second run changes nothing."""
    module = fused(decode_step("8da4w"))
    VkcFuseNormsPass().apply(make_context(), module)
    VkcMergeSiblingsPass().apply(make_context(), module)
    quantized = clone_module(module)
    VkcFuseRowQuantPass().apply(make_context(), quantized)
    quantized.verify()
    assert kinds(module).count("quantize_rows_dynamic") == 5
    assert kinds(quantized).count("quantize_rows_dynamic") == 2
    assert len(kinds(quantized)) == len(kinds(module)) - 3
    a, b = qopt.session(module), qopt.session(quantized)
    for step in range(2):
        inputs = (np.array([[step + 3]]), np.array([step]))
        assert same(a.run(*inputs), b.run(*inputs))
    once = str(quantized)
    VkcFuseRowQuantPass().apply(make_context(), quantized)
    assert str(quantized) == once


def test_fold_copies_keeps_a_decode_step() -> None:
    """A merged, normed decode step (seq 1, w4g32): the attention output's transpose
    (size-1 dims: an identity copy) becomes a view, v's copy out of the merged q/k/v
    output is read by its cache scatter (VMAP); no copy_strided is left; outputs
    bit-identical over two steps."""
    module = fused(decode_step("w4g32"))
    VkcFuseNormsPass().apply(make_context(), module)
    VkcMergeSiblingsPass().apply(make_context(), module)
    folded = clone_module(module)
    VkcFoldCopiesPass().apply(make_context(), folded)
    folded.verify()
    assert kinds(module).count("copy_strided") == 2
    assert "copy_strided" not in kinds(folded)
    assert len(kinds(folded)) == len(kinds(module)) - 2
    a, b = qopt.session(module), qopt.session(folded)
    for step in range(2):
        inputs = (np.array([[step + 3]]), np.array([step]))
        assert same(a.run(*inputs), b.run(*inputs))


def test_fold_copies_into_attention() -> None:
    """TinyLlama w4g32 (2 layers, seq 16), normed and merged: each layer's v transpose
    is read by its sdpa through a stride map (VMAP) and the attention output's
    transpose written by the sdpa (OMAP): 4 copies -> 0; outputs bit-identical."""
    module = fused(exported("w4g32"))
    VkcFuseNormsPass().apply(make_context(), module)
    VkcMergeSiblingsPass().apply(make_context(), module)
    folded = clone_module(module)
    VkcFoldCopiesPass().apply(make_context(), folded)
    folded.verify()
    assert kinds(module).count("copy_strided") == 4
    assert "copy_strided" not in kinds(folded)
    assert len(kinds(folded)) == len(kinds(module)) - 4
    inputs = random_inputs("llama", 3)
    assert same(qopt.interpret(folded, *inputs), qopt.interpret(module, *inputs))


def test_dispatch_fusions_on_the_device() -> None:
    """qopt-vulkan with every dispatch fusion off and on: bit-identical device outputs
    at seq 16 (TinyLlama w4g32) and over two decode steps (seq 1: w4g32, 12 dispatches
    per layer; 8da4w)."""
    if reason := vulkan_available():
        pytest.skip(f"no Vulkan device: {reason}")
    for ep, calls in (
        (exported("w4g32"), [tuple(t.numpy() for t in random_inputs("llama", 5))]),
        (
            decode_step("8da4w"),
            [(np.array([[3]]), np.array([0])), (np.array([[5]]), np.array([1]))],
        ),
    ):
        outputs = []
        for on in (False, True):
            module = qopt.import_program(ep)
            pipeline = QoptVulkanPipeline(
                fuse_elementwise=on,
                fuse_norms=on,
                merge_siblings=on,
                fuse_row_quant=on,
                fold_copies=on,
            )
            pipeline.apply(make_context(), module)
            artifact = compile_artifact(module)
            try:
                session = artifact.session()
                outputs.append([session.run(*inputs) for inputs in calls])
            finally:
                artifact.close()
        for a, b in zip(*outputs, strict=True):
            assert same(a, b)
