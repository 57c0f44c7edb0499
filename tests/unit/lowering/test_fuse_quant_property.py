"""Property-based translation validation of `fuse-quant` (hypothesis).

Random small torch models made of Linear / Conv2d / Embedding layers and
residual adds, quantized with a random scheme of `qopt.examples.SCHEMES`
(`apply_scheme`), exported with `torch.export`, imported, fused and validated
as in test_equiv_fuse_quant.py: op by op (every fused op against the unfused
value it replaces, on the unfused inputs), end to end (within 1e-5 relative
unless a dynamic activation quantizer or a counted rounding-boundary step may
amplify a last-bit difference), and no dequantize left feeding a linear /
conv2d / embedding / matmul. Graphs stay tiny so the file runs in well under a
minute.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import qopt
from qopt import examples as E
from qopt import testing as T

DYNAMIC = frozenset({"pt2e_dynamic", "8da4w"})
SETTINGS = settings(
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


# ----- model specs --------------------------------------------------------------------------


@dataclass(frozen=True)
class SeqSpec:
    """[embedding ->] (linear [+relu] | residual linear)* -> linear, on [B, (T,) D]."""

    embed: bool
    tokens: int  # 0: 2-D input [B, D]
    dims: tuple[int, ...]  # feature width after each block (dims[0]: input width)
    blocks: tuple[tuple[str, bool], ...]  # ("linear" | "residual", relu)
    bias: bool


@dataclass(frozen=True)
class ConvSpec:
    """(conv [+relu] | residual conv)* -> global average pool -> linear -> relu ->
    linear (K = head, so that every weight-only scheme has a layer), on [1, C, H, W]."""

    channels: tuple[int, ...]
    size: int
    blocks: tuple[tuple[str, int, int, bool, bool], ...]  # (kind, k, stride, depthwise, relu)
    head: int


WIDTHS = st.sampled_from([16, 32, 64])


@st.composite
def seq_specs(draw: st.DrawFn) -> SeqSpec:
    n = draw(st.integers(1, 3))
    kinds = draw(st.lists(st.sampled_from(["linear", "residual"]), min_size=n, max_size=n))
    relus = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    dims = [draw(WIDTHS)]
    for kind in kinds:
        dims.append(dims[-1] if kind == "residual" else draw(WIDTHS))
    dims.append(draw(st.sampled_from([8, 32])))  # the head
    return SeqSpec(
        embed=draw(st.booleans()),
        tokens=draw(st.sampled_from([0, 3])),
        dims=tuple(dims),
        blocks=tuple(zip(kinds, relus, strict=True)),
        bias=draw(st.booleans()),
    )


@st.composite
def conv_specs(draw: st.DrawFn) -> ConvSpec:
    n = draw(st.integers(1, 3))
    channels = [draw(st.sampled_from([3, 4, 8]))]
    blocks = []
    for _ in range(n):
        kind = draw(st.sampled_from(["conv", "residual"]))
        k = draw(st.sampled_from([1, 3]))
        depthwise = kind == "conv" and draw(st.booleans()) and channels[-1] > 3
        stride = 1 if kind == "residual" else draw(st.sampled_from([1, 2]))
        out = channels[-1] if kind == "residual" or depthwise else draw(st.sampled_from([8, 16]))
        blocks.append((kind, k, stride, depthwise, draw(st.booleans())))
        channels.append(out)
    return ConvSpec(tuple(channels), draw(st.sampled_from([6, 8])), tuple(blocks), 32)


class Residual(nn.Module):
    def __init__(self, inner: nn.Module):
        super().__init__()
        self.inner = inner

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.inner(x)


class SeqNet(nn.Module):
    def __init__(self, spec: SeqSpec):
        super().__init__()
        d = spec.dims
        self.embedding = nn.Embedding(40, d[0]) if spec.embed else None
        layers: list[nn.Module] = []
        for i, (kind, _) in enumerate(spec.blocks):
            linear = nn.Linear(d[i], d[i + 1], bias=spec.bias)
            layers.append(Residual(linear) if kind == "residual" else linear)
        self.layers = nn.ModuleList(layers)
        self.relus = [relu for _, relu in spec.blocks]
        self.head = nn.Linear(d[-2], d[-1], bias=spec.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.embedding is not None:
            x = self.embedding(x)
        for layer, relu in zip(self.layers, self.relus, strict=True):
            x = layer(x)
            if relu:
                x = F.relu(x)
        return self.head(x)


class ConvNet(nn.Module):
    def __init__(self, spec: ConvSpec):
        super().__init__()
        c = spec.channels
        layers: list[nn.Module] = []
        for i, (kind, k, stride, depthwise, _) in enumerate(spec.blocks):
            conv = nn.Conv2d(
                c[i], c[i + 1], k, stride=stride, padding=k // 2, groups=c[i] if depthwise else 1
            )
            layers.append(Residual(conv) if kind == "residual" else conv)
        self.layers = nn.ModuleList(layers)
        self.relus = [b[-1] for b in spec.blocks]
        self.fc = nn.Linear(c[-1], spec.head)
        self.head = nn.Linear(spec.head, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer, relu in zip(self.layers, self.relus, strict=True):
            x = layer(x)
            if relu:
                x = F.relu(x)
        x = F.adaptive_avg_pool2d(x, 1)
        return self.head(F.relu(self.fc(torch.flatten(x, 1))))


def build(spec: SeqSpec | ConvSpec, seed: int) -> nn.Module:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = SeqNet(spec) if isinstance(spec, SeqSpec) else ConvNet(spec)
    return model.eval()


def make_inputs(spec: SeqSpec | ConvSpec, seed: int) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(seed)
    if isinstance(spec, ConvSpec):
        return (torch.randn((1, spec.channels[0], spec.size, spec.size), generator=g),)
    shape = (2, spec.tokens) if spec.tokens else (4,)
    if spec.embed:
        return (torch.randint(0, 40, shape, generator=g),)
    return (torch.randn((*shape, spec.dims[0]), generator=g),)


# ----- the property -------------------------------------------------------------------------


def check(spec: SeqSpec | ConvSpec, scheme: str, seed: int) -> None:
    model = build(spec, seed)
    example = make_inputs(spec, seed)
    calibration = [make_inputs(spec, seed + 100 + i) for i in range(2)]
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        quantized = E.apply_scheme(model, scheme, example, calibration, seed)
        ep = torch.export.export(quantized, example, strict=False)
    module = qopt.import_program(ep)
    inputs = make_inputs(spec, seed + 1000)  # fresh: neither example nor calibration
    result = T.fuse_and_validate(module, inputs, rtol=1e-5)
    assert not result.mismatches, "\n".join(map(str, result.mismatches))
    if result.end_to_end:
        assert scheme in DYNAMIC or result.boundary_steps > 0, "\n".join(
            map(str, result.end_to_end)
        )
    left = T.dequantized_anchor_operands(module)
    assert not left, (
        "\n".join(left)
        + "\n"
        + "\n".join(f"{op.name}: {why}" for op, why in result.log.unfused(module))
    )


SCHEME = st.sampled_from([s for s in E.SCHEMES if s != "float"])
# Only PT2E static quantizes convolutions: draw it more often for conv graphs.
CONV_SCHEME = st.sampled_from(["pt2e_static"] * 4 + [s for s in E.SCHEMES if s != "float"])
SEED = st.integers(0, 2**16)


@settings(SETTINGS, max_examples=14)
@given(spec=seq_specs(), scheme=SCHEME, seed=SEED)
def test_linear_embedding_graphs(spec: SeqSpec, scheme: str, seed: int):
    check(spec, scheme, seed)


@settings(SETTINGS, max_examples=11)
@given(spec=conv_specs(), scheme=CONV_SCHEME, seed=SEED)
def test_conv_graphs(spec: ConvSpec, scheme: str, seed: int):
    check(spec, scheme, seed)


@pytest.mark.parametrize("scheme", ["pt2e_static", "w4g32", "8da4w", "codebook4"])
def test_a_residual_embedding_model(scheme: str):
    """Fixed graphs with the layer kinds the draws may miss."""
    spec = SeqSpec(True, 3, (32, 64, 64, 32), (("linear", True), ("residual", False)), True)
    check(spec, scheme, seed=5)


@pytest.mark.parametrize("scheme", ["pt2e_static", "pt2e_dynamic", "w8c"])
def test_a_strided_depthwise_conv_model(scheme: str):
    blocks = (
        ("conv", 3, 2, False, True),
        ("conv", 3, 2, True, True),
        ("residual", 3, 1, False, False),
    )
    check(ConvSpec((3, 8, 8, 8), 8, blocks, 32), scheme, seed=6)
