"""quant ops: the interpreter equals torch bit for bit on integer results.

Each case is a tiny torch module calling the quantization op directly, exported
with torch.export, imported by qopt and interpreted; the inputs include exact
rounding ties (x / scale = k + 0.5), values beyond the clamp range and zeros.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torchao  # noqa: F401  (registers torch.ops.torchao)
from torch.ao.quantization.fx import _decomposed  # noqa: F401  (registers quantized_decomposed)

import qopt

qd = torch.ops.quantized_decomposed
ao = torch.ops.torchao


def _ties(shape: tuple[int, ...], scale: float, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=g) * 3
    ties = (torch.randint(-140, 140, shape, generator=g).float() + 0.5) * scale
    use_tie = torch.rand(shape, generator=g) < 0.4
    x = torch.where(use_tie, ties, x)
    x.view(-1)[:4] = torch.tensor([0.0, -0.0, 1e6, -1e6])
    return x


def _run(module: torch.nn.Module, *inputs: torch.Tensor) -> None:
    ep = torch.export.export(module, inputs)
    imported = qopt.import_program(ep)
    imported.verify()
    got = qopt.interpret(imported, *inputs)
    want = ep.module()(*inputs)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        w = w.detach().numpy()
        assert g.dtype == w.dtype
        assert g.shape == w.shape
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("dtype,qmin,qmax", [(torch.int8, -128, 127), (torch.uint8, 0, 255)])
@pytest.mark.parametrize("scale", [0.05, 0.0173, 1 / 3])
def test_quantize_per_tensor_default(dtype, qmin, qmax, scale):
    class M(torch.nn.Module):
        def forward(self, x):
            q = qd.quantize_per_tensor.default(x, scale, 3, qmin, qmax, dtype)
            return q, qd.dequantize_per_tensor.default(q, scale, 3, qmin, qmax, dtype)

    _run(M(), _ties((8, 33), scale, 0))


def test_choose_qparams_and_quantize_per_tensor_tensor():
    class M(torch.nn.Module):
        def forward(self, x):
            s, z = qd.choose_qparams.tensor(x, -128, 127, 2**-12, torch.int8)
            q = qd.quantize_per_tensor.tensor(x, s, z, -128, 127, torch.int8)
            return (
                s,
                z,
                q,
                qd.dequantize_per_tensor.tensor(q, s, z, -128, 127, torch.int8),
            )

    g = torch.Generator().manual_seed(1)
    _run(M(), torch.randn(4, 16, generator=g) + 0.7)
    _run(M(), torch.rand(4, 16, generator=g))  # all positive: min clamps to 0


def test_choose_qparams_symmetric():
    class M(torch.nn.Module):
        def forward(self, x):
            return qd.choose_qparams_symmetric.tensor(x, -128, 127, 2**-12, torch.int8)

    _run(M(), torch.randn(3, 5, generator=torch.Generator().manual_seed(2)))


@pytest.mark.parametrize("axis", [0, 1])
def test_quantize_per_channel(axis):
    scales = torch.tensor([0.02, 0.05, 0.1, 0.013])
    zps = torch.tensor([0, 3, -2, 1])

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("s", scales)
            self.register_buffer("z", zps)

        def forward(self, x):
            q = qd.quantize_per_channel.default(x, self.s, self.z, axis, -127, 127, torch.int8)
            return q, qd.dequantize_per_channel.default(
                q, self.s, self.z, axis, -127, 127, torch.int8
            )

    shape = (4, 6) if axis == 0 else (3, 4)
    _run(M(), _ties(shape, 0.05, 3))


@pytest.mark.parametrize(
    "mapping,dtype,qmin,qmax",
    [
        ("ASYMMETRIC", torch.int8, -128, 127),
        ("SYMMETRIC", torch.int8, -8, 7),
        ("SYMMETRIC", torch.uint8, 0, 255),
        ("SYMMETRIC_NO_CLIPPING_ERR", torch.int8, -8, 7),
    ],
)
@pytest.mark.parametrize("block", [(1, 64), (1, 16), (2, 8)])
def test_torchao_affine(mapping, dtype, qmin, qmax, block):
    class M(torch.nn.Module):
        def forward(self, x):
            s, z = ao.choose_qparams_affine.default(
                x, mapping, list(block), dtype, qmin, qmax, None, None, torch.int8
            )
            q = ao.quantize_affine.default(x, list(block), s, z, dtype, qmin, qmax)
            d = ao.dequantize_affine.default(q, list(block), s, z, dtype, qmin, qmax)
            return s, z, q, d

    g = torch.Generator().manual_seed(4)
    x = torch.randn(4, 64, generator=g)
    x[0, :16] = 0.0  # an all-zero block: scale clamps to eps
    _run(M(), x)


def test_dequantize_codebook():
    codes = torch.randint(
        0, 16, (8, 32), dtype=torch.uint8, generator=torch.Generator().manual_seed(5)
    )
    book = torch.randn(1, 2, 16, 1, dtype=torch.float64)

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("codes", codes)
            self.register_buffer("book", book)

        def forward(self, x):
            w = torch.ops.quant.dequantize_codebook.default(
                self.codes.to(torch.int32), self.book, 4, [-1, 16]
            )
            return w, x + w

    import torchao.prototype.quantization.codebook_coreml  # noqa: F401

    _run(M(), torch.zeros(8, 32))
