"""fuse-quant-fixpoint: fuse-quant and fold-constants again until neither changes the
module, so a value quantized by PT2E that becomes a constant only after
fold-constants (the rotary tables of a `transformers` decoder) is quantized at
compile time and both targets compile the model.

The equivalence test interprets the IR before and after the pass; the decoder test
compiles a tiny Phi decoder layer (random weights, its own rotary embedding, no
download) under PT2E static for CoreML and Vulkan and checks both against torch.
Before the pass, CoreML refused it: "'quant.quantize' ... in rot: quantizing a
constant is not supported (fuse-quant folds it: run it first)".
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

import qopt
from qopt.context import make_context, parse_module
from qopt.dialects import quant
from qopt.lowering.fold_constants import FoldConstantsPass
from qopt.lowering.fuse_fixpoint import FuseQuantFixpointPass, census
from qopt.lowering.fuse_quant import FuseQuantPass

LIT = Path(__file__).parents[2] / "lit" / "fuse-quant-fixpoint" / "fixpoint.mlir"


def _functions() -> list[str]:
    """The lit test's functions, one module each."""
    return [text for text in LIT.read_text().split("// -----") if "func.func" in text]


@pytest.mark.parametrize("index", range(2))
def test_fixpoint_is_equivalent_and_leaves_no_quantize_of_a_constant(index: int) -> None:
    module = parse_module(_functions()[index])
    ctx = make_context()
    FuseQuantPass().apply(ctx, module)
    FoldConstantsPass().apply(ctx, module)
    rng = np.random.default_rng(index)
    (func,) = [op for op in module.body.ops if hasattr(op, "function_type")]
    shape = tuple(func.function_type.inputs.data[0].get_shape())  # pyright: ignore
    x = rng.normal(size=shape).astype(np.float32)
    (before,) = qopt.interpret(module, x)
    FuseQuantFixpointPass().apply(ctx, module)
    (after,) = qopt.interpret(module, x)
    # a fused linear sums in float64 where aten.linear sums in float32: float rounding
    np.testing.assert_allclose(np.asarray(after), np.asarray(before), rtol=1e-6, atol=1e-6)
    for op in module.walk():
        if isinstance(op, quant.QuantizeOp):
            assert op.input.owner.name != "arith.constant", "a quantize of a constant is left"
    again = census(module)
    FuseQuantFixpointPass().apply(ctx, module)
    assert census(module) == again  # a fixed point: nothing changes the second time


transformers = pytest.importorskip(
    "transformers", reason="the transformers package is not installed"
)


class _DecoderLayer(torch.nn.Module):
    """One decoder layer with its rotary embedding computed in the graph (from
    arange: input-independent) and the final norm, on hidden states: PT2E's own
    prepare fails on the whole models' mask construction (tests/unit/models)."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.rot = model.model.rotary_emb
        self.layer = model.model.layers[0]
        self.norm = model.model.final_layernorm

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(h.shape[1])[None]
        cos, sin = self.rot(h, pos)
        out = self.layer(h, attention_mask=None, position_ids=pos, position_embeddings=(cos, sin))
        return self.norm(out[0] if isinstance(out, tuple) else out)


def _hidden(seed: int) -> tuple[torch.Tensor]:
    return (torch.randn(1, 8, 64, generator=torch.Generator().manual_seed(seed)),)


@pytest.fixture(scope="module")
def phi_pt2e() -> torch.export.ExportedProgram:
    from qopt.examples import apply_scheme

    config = transformers.PhiConfig(
        vocab_size=128,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=1,
        num_attention_heads=4,
        max_position_embeddings=64,
        use_cache=False,
        attn_implementation="sdpa",
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = _DecoderLayer(transformers.PhiForCausalLM(config).eval())
        quantized = apply_scheme(model, "pt2e_static", _hidden(0), [_hidden(1), _hidden(2)])
    with torch.no_grad():
        return torch.export.export(quantized, _hidden(0), strict=False)


@pytest.mark.parametrize("target", ["coreml", "vulkan"])
def test_pt2e_static_decoder_compiles_on_both_targets(
    phi_pt2e: torch.export.ExportedProgram, target: str, tmp_path: Path
) -> None:
    from qopt import zoo

    cell = zoo.check(phi_pt2e, _hidden(99), "pt2e_static", target, tmp_path)
    assert cell["status"] == "pass", cell
