"""A vkc fusion that gives up leaves nothing behind.

vkc-fuse-elementwise fuses a producer into each of its consumers; when a later
consumer has no elementwise form (a matmul reading the same copy), it gives up, and
the dispatches it had built for the earlier consumers stayed, outside the function
but still using its buffers. A later pass walking a buffer's users then met a
dispatch with no module around it: a tiny SegFormer under 8da4w crashed the Vulkan
compile in vkc-fuse-row-quant with a raw `ValueError: Operation ... vkc.dispatch
@copy_strided ... has no SymbolTable ancestor`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

import qopt
from qopt.context import make_context
from qopt.lowering.pipelines import QoptVulkanPipeline


def _dangling(module: object) -> int:
    """Uses of values of `module` by ops that are in no block."""
    return sum(
        1
        for op in module.walk()  # pyright: ignore[reportAttributeAccessIssue]
        for result in op.results
        for use in result.uses
        if use.operation.parent is None
    )


class _CopyTwoReaders(torch.nn.Module):
    """A copy read by an elementwise op (fusable) and a matmul (not)."""

    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(4, 4, generator=torch.Generator().manual_seed(0)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x.transpose(0, 1).contiguous()
        return torch.relu(y) + y @ self.w


def test_a_fusion_that_gives_up_leaves_no_dispatch_behind() -> None:
    x = torch.randn(4, 6, generator=torch.Generator().manual_seed(1))
    ep = torch.export.export(_CopyTwoReaders(), (x,))
    module = qopt.import_program(ep)
    ctx = make_context()
    for sub_pass in QoptVulkanPipeline().passes():
        sub_pass.apply(ctx, module)
        assert _dangling(module) == 0, sub_pass.name
    with torch.no_grad():
        want = ep.module()(x).numpy()
    with qopt.compile(ep, target="vulkan") as artifact:
        (got,) = artifact(x)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)


transformers = pytest.importorskip(
    "transformers", reason="the transformers package is not installed"
)


def test_segformer_8da4w_compiles_for_vulkan(tmp_path: Path) -> None:
    from qopt import zoo
    from qopt.examples import apply_scheme

    config = transformers.SegformerConfig(
        num_channels=3,
        num_encoder_blocks=2,
        depths=[1, 1],
        sr_ratios=[2, 1],
        hidden_sizes=[32, 64],
        patch_sizes=[7, 3],
        strides=[4, 2],
        num_attention_heads=[1, 2],
        mlp_ratios=[2, 2],
        decoder_hidden_size=32,
        num_labels=4,
    )

    def image(seed: int) -> tuple[torch.Tensor]:
        return (torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(seed)),)

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = zoo._First(transformers.SegformerForSemanticSegmentation(config).eval())
        quantized = apply_scheme(model, "8da4w", image(0))
    with torch.no_grad():
        ep = torch.export.export(quantized, image(0), strict=False)
    cell = zoo.check(ep, image(99), "8da4w", "vulkan", tmp_path)
    assert cell["status"] == "pass", cell
