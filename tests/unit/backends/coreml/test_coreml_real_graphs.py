"""CoreML on graphs written by others (issue 12's wrong answers and crashes): each
model is exported with torch.export, compiled with `qopt.compile(ep,
target="coreml")`, saved, read back with `qopt.read_mlpackage` and interpreted; the
result must equal torch eager (integers exactly, floats within 1e-6 relative L2
error) or the compile must fail with a QoptError naming the op."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from torch.ao.quantization.fx import _decomposed  # noqa: F401  (registers quantized_decomposed)
from torch.nn import functional as F
from xdsl.dialects.builtin import ModuleOp

import qopt


def _round_trip(
    model: torch.nn.Module, inputs: tuple[torch.Tensor, ...], tmp_path: Path
) -> tuple[ModuleOp, list[np.ndarray], list[np.ndarray]]:
    """(read-back module, its outputs, torch eager's outputs)."""
    ep = torch.export.export(model.eval(), inputs)
    artifact = qopt.compile(ep, target="coreml", compute_precision="fp32")
    path = tmp_path / "model.mlpackage"
    artifact.save(path)
    back = qopt.read_mlpackage(path)
    got = list(qopt.interpret(back, *inputs))
    want = ep.module()(*inputs)
    want = [want] if isinstance(want, torch.Tensor) else list(want)
    return back, got, [t.detach().numpy() for t in want]


def _assert_equal(got: list[np.ndarray], want: list[np.ndarray], rtol: float = 1e-6) -> None:
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert g.shape == w.shape, (i, g.shape, w.shape)
        assert g.dtype.kind == w.dtype.kind, (i, g.dtype, w.dtype)  # int64 travels as int32
        if w.dtype.kind != "f":
            np.testing.assert_array_equal(g, w, err_msg=f"output {i}")
            continue
        err = np.linalg.norm(g - w) / max(float(np.linalg.norm(w)), 1e-30)
        assert err <= rtol, (i, err)


class Pools(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return (
            F.avg_pool2d(x, 3, 2, 1, ceil_mode=True),
            F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
            F.avg_pool2d(x, 3, 2, 0, ceil_mode=True),
            F.avg_pool2d(x, (2, 3), 2, divisor_override=4),
            F.avg_pool2d(x[0], 3, 2, 1, ceil_mode=True),  # unbatched
            F.max_pool2d(x, 3, 2, 1, ceil_mode=True),
            F.max_pool2d(x[0], 2),
        )


def test_pooling_windows_equal_torch(tmp_path: Path) -> None:
    """ceil_mode (windows starting in the end padding dropped, the divisor clipped
    to the padded input), count_include_pad both ways, divisor_override and
    unbatched inputs."""
    x = torch.randn(2, 3, 7, 6, generator=torch.Generator().manual_seed(0))
    _, got, want = _round_trip(Pools(), (x,), tmp_path)
    _assert_equal(got, want)


class IntegerClamp(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return (
            torch.clamp(x, min=-3),
            torch.clamp(x, -2, 4),
            torch.clamp(x, max=1),
            torch.clamp(x, min=-2.5),  # a float bound: a float result
            torch.maximum(x, 1 - x),
            torch.minimum(x, x * 2),
        )


def test_integer_clamp_is_exact(tmp_path: Path) -> None:
    """MIL clip takes floats only: integer clamp is maximum/minimum, exact."""
    x = torch.arange(-6, 6, dtype=torch.int64).reshape(3, 4)
    back, got, want = _round_trip(IntegerClamp(), (x,), tmp_path)
    assert "coreml.clip" in {op.name for op in back.walk()}  # only the float-bound one
    _assert_equal(got, want)


class FloatClamps(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return torch.clamp(x, -1.0, 1.0), torch.clamp(x, 0.5, 0.5), torch.clamp(x, 1.0, -1.0)


@pytest.mark.parametrize("precision", ["fp32", "fp16"])
def test_float_clamp_any_bounds_and_precision(precision: str) -> None:
    """clip's bounds have x's type (fp16 compute: was coremltools' ValueError), and
    bounds with min >= max (MIL clip needs min < max) are maximum then minimum: max
    wherever min >= max, as torch."""
    x = torch.randn(3, 8)
    ep = torch.export.export(FloatClamps(), (x,))
    got = qopt.compile(ep, "coreml", compute_precision=precision)(x.numpy())
    tol = 1e-3 if precision == "fp16" else 0.0
    for g, w in zip(got, FloatClamps()(x), strict=True):
        np.testing.assert_allclose(g, w.numpy(), atol=tol, rtol=tol)


class UnbatchedConv(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(2, 3, 3, padding=1, stride=2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


def test_unbatched_conv2d(tmp_path: Path) -> None:
    """A [C, H, W] conv2d input imports as a batch of one; the interpreter and the
    package both equal torch."""
    torch.manual_seed(0)
    x = torch.randn(2, 5, 6, generator=torch.Generator().manual_seed(1))
    model = UnbatchedConv()
    ep = torch.export.export(model.eval(), (x,))
    (interpreted,) = qopt.interpret(qopt.import_program(ep), x)
    _, got, want = _round_trip(model, (x,), tmp_path)
    _assert_equal([interpreted, *got], [*want, *want], rtol=1e-6)


class CatEmpty(torch.nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, ...]:
        promoted = torch.cat([x * 2, y[:0]], dim=0) + 1  # the empty float makes it float
        legacy = torch.cat([y, torch.zeros(0)], 0) * 3  # a 1-D empty of another rank
        return promoted, legacy, torch.cat([y[:, :0], y, y[:, 1:]], dim=1)


def test_cat_drops_empty_inputs(tmp_path: Path) -> None:
    x = torch.arange(6, dtype=torch.int32).reshape(2, 3)
    y = torch.randn(2, 3, generator=torch.Generator().manual_seed(0))
    _, got, want = _round_trip(CatEmpty(), (x, y), tmp_path)
    _assert_equal(got, want, rtol=0.0)


class Rank6(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        y = x.reshape(1, 2, 2, 2, 2, 3)
        elementwise = (torch.relu(y * 2 + 1) - y).reshape(4, 12)
        windows = y.permute(0, 1, 3, 2, 4, 5).reshape(1, 4, 4, 3)  # Swin's partition
        return elementwise, windows


class Rank6Sum(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.reshape(1, 2, 2, 2, 2, 3).sum(-1)


def test_rank6_collapses_or_names_the_op(tmp_path: Path) -> None:
    """coremltools refuses rank-6 tensors: elementwise ops and adjacent-run transposes
    between reshapes are collapsed; a rank-6 reduction is a QoptError naming it."""
    x = torch.randn(1, 4, 4, 3, generator=torch.Generator().manual_seed(0))
    _, got, want = _round_trip(Rank6(), (x,), tmp_path)
    _assert_equal(got, want, rtol=0.0)
    ep = torch.export.export(Rank6Sum(), (x,))
    with pytest.raises(qopt.QoptError, match=r"'coreml.reduce_sum'.*rank-6 tensor"):
        qopt.compile(ep, target="coreml")


class QuantizedConstants(torch.nn.Module):
    """PT2E's constant quantization: a tensor and a scalar quantized in the graph (at
    rounding ties) and a rank-0 per-tensor quantized constant."""

    def __init__(self) -> None:
        super().__init__()
        ties = [0.125, 0.375, -0.125, -0.375, 0.625, 100.0, -100.0, 0.3]
        self.register_buffer("c", torch.tensor(ties))
        self.register_buffer("s", torch.tensor(0.625))
        self.register_buffer("q0", torch.tensor(-7, dtype=torch.int8))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        qd = torch.ops.quantized_decomposed
        q = qd.quantize_per_tensor(self.c, 0.25, 0, -128, 127, torch.int8)
        q0 = qd.quantize_per_tensor(self.s, 0.25, 1, -128, 127, torch.int8)
        a = qd.dequantize_per_tensor(q, 0.25, 0, -128, 127, torch.int8)
        b = qd.dequantize_per_tensor(q0, 0.25, 1, -128, 127, torch.int8)
        c = qd.dequantize_per_tensor(self.q0, 0.5, 2, -128, 127, torch.int8)
        return x + a * b * c


def test_quantized_constants_fold(tmp_path: Path) -> None:
    """quant.quantize of a constant folds at compile time (ties to even, as torch);
    rank-0 quantized constants lower (coremltools refuses rank-0 constexpr data)."""
    x = torch.randn(8, generator=torch.Generator().manual_seed(0))
    back, got, want = _round_trip(QuantizedConstants(), (x,), tmp_path)
    assert not {"coreml.quantize", "coreml.dequantize"} & {op.name for op in back.walk()}
    _assert_equal(got, want, rtol=0.0)


def test_every_emitted_mil_op_is_read() -> None:
    """Each MIL op type the emitter can write (its table: the coreml dialect's ops,
    const, identity) is one read_mlpackage reads."""
    from qopt.backends.coreml.emitter import emitted_mil_ops
    from qopt.backends.coreml.reader import READ_MIL_OPS

    assert {"const", "identity", "linear"} <= emitted_mil_ops()
    assert not emitted_mil_ops() - READ_MIL_OPS


class ConstantsAndCopies(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return (
            torch.full((2, 3), 1.5),
            torch.zeros(4),
            torch.ones_like(x),
            x.clone(),
            torch.arange(5),
            x,
        )


def test_constant_and_copy_programs_read_back(tmp_path: Path) -> None:
    """A program whose outputs are constants or its input is written with MIL
    `identity` (the outputs need their own names) and reads back."""
    x = torch.randn(2, 3, generator=torch.Generator().manual_seed(0))
    back, got, want = _round_trip(ConstantsAndCopies(), (x,), tmp_path)
    _assert_equal(got, want, rtol=0.0)
    assert not any(op.name == "coreml.identity" for op in back.walk())
