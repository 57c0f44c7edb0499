"""Op families real graphs use that qopt once stopped at (issue 12 item 2): each
model is exported with torch.export and run four ways against torch eager:
imported and interpreted, compiled for CoreML (saved, read back from the
`.mlpackage` and interpreted), and compiled for Vulkan (run on the device).

Tolerances are the relative L2 error against torch eager. Measured: 0 for the
data-movement ops and the shrinks, below 1e-7 on CoreML for log10 / log2 (log then
a division by ln(10) / ln(2)) and tan, below 1e-7 on Vulkan for log2 / tan (the
GLSL builtins) and log10 (log2 times log10(2)).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import qopt


def rel_err(got: np.ndarray, want: np.ndarray) -> float:
    g, w = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if g.size == 0:
        return 0.0
    return float(np.linalg.norm(g - w) / max(np.linalg.norm(w), 1e-30))


def _outputs(result: Any) -> list[np.ndarray]:
    items = result if isinstance(result, tuple | list) else (result,)
    return [t.detach().numpy() for t in items]


def check(
    model: torch.nn.Module,
    inputs: tuple[torch.Tensor, ...],
    tmp_path: Path,
    tol: float = 1e-6,
    vulkan: bool = True,
) -> None:
    """The model through the interpreter, CoreML (read back) and Vulkan, against torch."""
    from qopt.backends.vulkan.runtime import vulkan_available

    ep = torch.export.export(model.eval(), inputs)
    want = _outputs(model(*inputs))
    runs: dict[str, list[np.ndarray]] = {}
    runs["interp"] = list(qopt.interpret(qopt.import_program(ep), *inputs))
    path = tmp_path / "model.mlpackage"
    qopt.compile(ep, target="coreml", compute_precision="fp32").save(path)
    runs["coreml"] = list(qopt.interpret(qopt.read_mlpackage(path), *inputs))
    if vulkan and vulkan_available() is None:
        runs["vulkan"] = list(qopt.compile(ep, target="vulkan")(*inputs))
    for where, got in runs.items():
        assert len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            assert g.shape == w.shape, (where, i, g.shape, w.shape)
            assert np.array_equal(np.isnan(g), np.isnan(w)), (where, i)
            if w.dtype.kind in "iub":
                assert np.array_equal(g, w), (where, i)
            else:
                finite = ~np.isnan(w)
                assert rel_err(g[finite], w[finite]) <= tol, (where, i, rel_err(g, w))


# ----- elementwise ---------------------------------------------------------------------


class Elementwise(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        positive = x.abs() + 0.01
        return (
            torch.log10(positive),
            torch.log2(positive),
            torch.tan(x[2:].clamp(-1.4, 1.4)),  # (Vulkan clamp drops NaN: row 1)
            F.hardshrink(x),
            F.hardshrink(x, 1.25),
            F.softshrink(x),
            F.softshrink(x, 0.75),
        )


def test_elementwise(tmp_path: Path) -> None:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(4, 16, generator=g) * 2
    # the thresholds themselves, zeros of both signs, powers of ten and two, a NaN
    x[0, :10] = torch.tensor([0.5, -0.5, 1.25, -1.25, 0.75, -0.75, 0.0, -0.0, 9.99, 1.99])
    x[1, 0] = float("nan")
    check(Elementwise(), (x,), tmp_path, 1e-6)


# ----- inverse trigonometry, hyperbolic, trunc / sign, isinf / isfinite ---------------


class TrigSign(torch.nn.Module):
    def forward(self, x: torch.Tensor, i: torch.Tensor) -> tuple[torch.Tensor, ...]:
        unit = (x / 4).clamp(-1, 1)
        return (
            torch.asin(unit),
            torch.acos(unit),
            torch.atan(x * 100),
            torch.sinh(x),
            torch.cosh(x),
            torch.trunc(x),
            torch.sign(x),
            torch.sign(i),
            torch.isinf(x / 0.0),
            torch.isfinite(x / 0.0),
            torch.isfinite(i),
        )


def test_trig_sign_trunc_isinf(tmp_path: Path) -> None:
    """asin / acos / atan to a few ulp on Vulkan too (not the GLSL builtins: 1e-4 on
    lavapipe); trunc and sign exact (sign(NaN) = 0, as torch); isinf / isfinite of
    +-inf, NaN (0 / 0) and integers."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(4, 16, generator=g) * 3
    x[0, :8] = torch.tensor([0.0, -0.0, 4.0, -4.0, 2.5, -2.5, float("nan"), 0.9999])
    i = torch.randint(-5, 6, (4, 16), generator=g)
    check(TrigSign(), (x, i), tmp_path, 1e-6)


class Activations(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return (
            F.elu(x),
            F.elu(x, 0.5),
            F.selu(x),
            F.celu(x, 2.0),
            F.softplus(x),
            F.softplus(x, 2.0, 3.0),
            F.mish(x),
            F.logsigmoid(x),
        )


def test_composed_activations(tmp_path: Path) -> None:
    """elu / selu / celu, softplus, mish and logsigmoid import as chains of elementwise
    ops: within float32 round-off of torch on every target, far tails and NaN included."""
    g = torch.Generator().manual_seed(2)
    x = torch.randn(4, 16, generator=g) * 4
    x[0, :8] = torch.tensor([0.0, -0.0, 30.0, -30.0, 100.0, -100.0, float("nan"), 1.5])
    check(Activations(), (x,), tmp_path, 1e-6)


class TensorClamps(torch.nn.Module):
    def forward(
        self, x: torch.Tensor, lo: torch.Tensor, hi: torch.Tensor, i: torch.Tensor
    ) -> tuple[torch.Tensor, ...]:
        return (
            torch.clamp(x, lo, hi),
            torch.clamp_min(x, lo),
            torch.clamp_max(i, i[0]),
            torch.positive(x),
            torch.square(i),
            torch.true_divide(i, i.abs() + 1),
            torch.deg2rad(x * 100),
            torch.rad2deg(i),
            torch.heaviside(x, hi[0]),
            torch.xlogy(x, lo.abs()),
        )


def test_tensor_clamps_and_aliases(tmp_path: Path) -> None:
    """clamp with tensor bounds is maximum then minimum (a NaN bound gives NaN, as
    torch); positive, square and true_divide import as clone, mul and div; deg2rad /
    rad2deg as a mul, heaviside and xlogy as selects (xlogy: NaN where y is, 0 where
    x is 0)."""
    g = torch.Generator().manual_seed(3)
    x, lo = torch.randn(4, 5, generator=g), torch.randn(5, generator=g) - 0.5
    hi = torch.randn(4, 1, generator=g) + 0.5
    lo[1] = float("nan")
    x[0, :2] = torch.tensor([0.0, -0.0])
    i = torch.randint(-9, 9, (4, 5), generator=g)
    check(TensorClamps(), (x, lo, hi, i), tmp_path, 1e-6)


class Interpolations(torch.nn.Module):
    def forward(
        self, a: torch.Tensor, b: torch.Tensor, w: torch.Tensor, i: torch.Tensor
    ) -> tuple[torch.Tensor, ...]:
        return (
            torch.lerp(a, b, 0.25),
            torch.lerp(a, b, 0.75),
            torch.lerp(a, b, -3.0),
            torch.lerp(a, b, w),
            torch.lerp(a, b[0], w[:, :1]),
            torch.addcmul(a, b, w),
            torch.addcmul(a, b, w[0], value=-0.3),
            torch.addcmul(i, i, i[0], value=3),
            torch.addcmul(a, i, b, value=2),
            torch.addcdiv(a, b, w),
            torch.addcdiv(a, b, w + 2, value=0.7),
        )


def test_lerp_addcmul_addcdiv(tmp_path: Path) -> None:
    """lerp with torch's two formulas (`|w| < 0.5`: from start, else from end; a NaN
    weight gives NaN), a scalar weight choosing at import; addcmul / addcdiv as
    `x + (value * t1) op t2`, integers and mixed int / float promoted as torch."""
    g = torch.Generator().manual_seed(4)
    a, b = torch.randn(4, 6, generator=g) * 3, torch.randn(4, 6, generator=g) * 3
    w = torch.rand(4, 6, generator=g) * 3 - 1
    w[0, :5] = torch.tensor([0.5, -0.5, 0.4999, 1.0, float("nan")])
    i = torch.randint(-9, 9, (4, 6), generator=g)
    check(Interpolations(), (a, b, w, i), tmp_path, 1e-6)


class Expm1Log1p(torch.nn.Module):
    def forward(self, x: torch.Tensor, i: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return torch.expm1(x), torch.log1p(x), torch.expm1(i), torch.log1p(i)


def test_expm1_log1p_near_zero(tmp_path: Path) -> None:
    """expm1 / log1p keep their precision near 0 on every target: each element within
    1e-6 relative error of the float64 reference rounded to float32 (exp(x) - 1 and
    log(1 + x) are off by up to 100% at 1e-8), +-0, +-inf, -1 and NaN as torch;
    integers promote to float."""
    from qopt.backends.vulkan.runtime import vulkan_available

    tiny = [1e-6, -1e-6, 1e-8, -1e-8, 3e-5, -3e-5, 1e-30, 0.0, -0.0, 0.1, -0.2, 0.3]
    big = [5.0, -5.0, 80.0, 100.0, -100.0, 1e30, -1.0, -0.999, -2.0, float("inf")]
    x = torch.tensor(tiny + big + [float("-inf"), float("nan")], dtype=torch.float32)
    i = torch.tensor([-3, -1, 0, 1, 7])
    ep = torch.export.export(Expm1Log1p(), (x, i))
    want_int = [t.numpy() for t in Expm1Log1p()(x, i)[2:]]
    runs = {"interp": qopt.interpret(qopt.import_program(ep), x, i)}
    path = tmp_path / "near0.mlpackage"
    qopt.compile(ep, target="coreml", compute_precision="fp32").save(path)
    runs["coreml"] = qopt.interpret(qopt.read_mlpackage(path), x, i)
    if vulkan_available() is None:
        runs["vulkan"] = qopt.compile(ep, target="vulkan")(x, i)
    x64 = x.double().numpy()
    with np.errstate(all="ignore"):
        wants = [f(x64).astype(np.float32).astype(np.float64) for f in (np.expm1, np.log1p)]
    for where, got in runs.items():
        for g, want in zip(got[2:], want_int, strict=True):
            assert g.dtype == want.dtype
            np.testing.assert_allclose(g, want, rtol=1e-6)
        for g, want in zip(got[:2], wants, strict=True):
            g = np.asarray(g, np.float64)
            assert np.array_equal(np.isnan(g), np.isnan(want))
            finite = np.isfinite(want)
            assert np.array_equal(g[~finite & ~np.isnan(want)], want[~finite & ~np.isnan(want)])
            rel = np.abs(g[finite] - want[finite]) / np.maximum(np.abs(want[finite]), 1e-38)
            assert rel.max() <= 1e-6, (where, rel, x[finite])
            assert np.array_equal(np.signbit(g[7:9]), [False, True])  # +-0 kept


class NanToNum(torch.nn.Module):
    def forward(self, x: torch.Tensor, i: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return (
            torch.nan_to_num(x),
            torch.nan_to_num(x, nan=1.5, posinf=7.0, neginf=-2.0),
            torch.nan_to_num(x, posinf=1e38, neginf=-5),
            torch.nan_to_num(i),
        )


def test_nan_to_num(tmp_path: Path) -> None:
    """NaN, +inf and -inf replaced (defaults 0 and the float32 extremes), finite values
    and -0.0 kept, bit for bit on every target; an integer tensor is a copy."""
    x = torch.tensor([float("nan"), float("inf"), float("-inf"), -0.0, 1.25, -3e38])
    check(NanToNum(), (x, torch.tensor([3, -4])), tmp_path, 0.0)


class Copysign(torch.nn.Module):
    def forward(
        self, a: torch.Tensor, b: torch.Tensor, i: torch.Tensor
    ) -> tuple[torch.Tensor, ...]:
        return (
            torch.copysign(a, b),
            torch.copysign(a, b[0]),
            torch.copysign(i, b),
            torch.copysign(a, i),
            torch.copysign(a, -0.0),
            torch.copysign(i, 2),
            # the zeros' signs, as +-1 (a div: 1 / x exports as reciprocal, which CoreML
            # computes as 1 / (x + 0), +inf for -0.0)
            ((b.abs() + 1) / torch.copysign(a * 0, b)).clamp(-1, 1),
        )


def test_copysign(tmp_path: Path) -> None:
    """|a| with b's sign on every target, -0.0 (signs checked), tiny and huge b included
    (a NaN b is left out: torch takes its sign bit); integers promote to float."""
    a = torch.tensor([[1.5, -2.0, 0.0, -0.0, 3e38, 3.0, -1e-30, 7.0]] * 2)
    b = torch.tensor([[-1.0, 2.0, -0.0, 0.0, -3.0, -1e-40, 3e38, -3e38]] * 2)
    b[1] = b[1].flip(0)
    i = torch.tensor([[4, -5, 0, 6, -1, 2, 0, -9]] * 2)
    check(Copysign(), (a, b, i), tmp_path, 0.0)


class Atan2(torch.nn.Module):
    def forward(
        self, y: torch.Tensor, x: torch.Tensor, i: torch.Tensor
    ) -> tuple[torch.Tensor, ...]:
        zeros = torch.atan2(y * 0, x.abs() + 1)  # +-0 with y's sign
        signs = ((x.abs() + 1) / zeros).clamp(-1, 1)  # as +-1 (NaN where y is)
        return torch.atan2(y, x), torch.atan2(y, x[0]), torch.atan2(i, x), signs


def test_atan2(tmp_path: Path) -> None:
    """atan2 as C's on every target: the four quadrants, both signs of zero on either
    side, infinities (both infinite: +-pi/4, +-3pi/4), NaN; integers promote."""
    inf, nan = float("inf"), float("nan")
    ys = [1.0, 1.0, -1.0, -1.0, 0.0, -0.0, 0.0, -0.0, 2.0, -2.0, 0.0, -0.0, inf, inf, -inf]
    xs = [2.0, -2.0, 2.0, -2.0, 1.0, 1.0, -1.0, -1.0, 0.0, -0.0, 0.0, -0.0, inf, -inf, -inf]
    ys += [-inf, 3.0, 3.0, -3.0, inf, nan, 1.0, 1e-30, 5e37]
    xs += [inf, inf, -inf, -inf, 4.0, 1.0, nan, -1e30, 1e-37]
    y, x = torch.tensor([ys]), torch.tensor([xs])
    y = torch.cat([y, torch.randn(3, y.shape[1], generator=torch.Generator().manual_seed(5))])
    x = torch.cat([x, torch.randn(3, x.shape[1], generator=torch.Generator().manual_seed(6))])
    i = torch.randint(-3, 4, y.shape, generator=torch.Generator().manual_seed(7))
    check(Atan2(), (y, x, i), tmp_path, 1e-6)


# ----- tensor_split, repeat_interleave -----------------------------------------------


class Splits(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        a, b, c = torch.tensor_split(x, 3, dim=1)  # 7 = 3 + 2 + 2
        d, e, f, g = torch.tensor_split(x, [1, -2, 6], dim=-1)  # [0:1], [1:5], [5:6], [6:]
        return a * 2, b, c, d, e + 1, f, g, torch.repeat_interleave(x, 2, dim=0)


def test_tensor_split_repeat_interleave(tmp_path: Path) -> None:
    g = torch.Generator().manual_seed(1)
    check(Splits(), (torch.randn(3, 7, generator=g),), tmp_path, 0.0)


# ----- conv1d ----------------------------------------------------------------------------


class Conv1d(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.strided = torch.nn.Conv1d(4, 6, 3, stride=2, padding=1, groups=2)
        self.dilated = torch.nn.Conv1d(6, 4, 3, padding="same", dilation=2, bias=False)

    def forward(self, x: torch.Tensor, u: torch.Tensor) -> tuple[torch.Tensor, ...]:
        y = self.dilated(torch.relu(self.strided(x)))
        return y, self.strided(u)  # u unbatched: [C, L]


def test_conv1d(tmp_path: Path) -> None:
    g = torch.Generator().manual_seed(2)
    torch.manual_seed(2)
    inputs = (torch.randn(2, 4, 9, generator=g), torch.randn(4, 8, generator=g))
    check(Conv1d(), inputs, tmp_path, 1e-6)


def test_conv1d_imports_as_conv2d_on_a_unit_height() -> None:
    from qopt.dialects.aten import nn

    model = torch.nn.Conv1d(4, 6, 3, stride=2, padding=1, dilation=3, groups=2)
    ep = torch.export.export(model, (torch.randn(1, 4, 12),))
    (conv,) = [op for op in qopt.import_program(ep).walk() if isinstance(op, nn.Conv2dOp)]
    assert conv.stride.get_values() == (1, 2)
    assert conv.padding.get_values() == (0, 1)
    assert conv.dilation.get_values() == (1, 3)
    assert [t.get_shape() for t in (conv.input.type, conv.weight.type, conv.result.type)] == [
        (1, 4, 1, 12), (6, 2, 1, 3), (1, 6, 1, 4),
    ]  # fmt: skip


class SamePadding(torch.nn.Module):
    """padding="same" whose total is odd (an even kernel, or dilation x (kernel - 1)
    odd): torch puts the odd element after; once refused at import."""

    def __init__(self) -> None:
        super().__init__()
        self.even1d = torch.nn.Conv1d(4, 6, 4, padding="same")
        self.even2d = torch.nn.Conv2d(3, 5, (2, 3), padding="same")
        self.dilated = torch.nn.Conv2d(5, 2, 2, padding="same", dilation=(3, 1), bias=False)

    def forward(self, s: torch.Tensor, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        y = self.even2d(x)
        return self.even1d(s), y, self.dilated(torch.relu(y)), self.even2d(x[0])


def test_conv_same_padding_with_an_odd_total(tmp_path: Path) -> None:
    g = torch.Generator().manual_seed(4)
    torch.manual_seed(4)
    inputs = (torch.randn(2, 4, 9, generator=g), torch.randn(2, 3, 6, 7, generator=g))
    check(SamePadding(), inputs, tmp_path, 1e-6)


# ----- group_norm ----------------------------------------------------------------------


class GroupNorm(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.affine = torch.nn.GroupNorm(2, 6, eps=1e-3)
        self.plain = torch.nn.GroupNorm(3, 6, affine=False)
        with torch.no_grad():
            self.affine.weight.uniform_(0.5, 1.5)
            self.affine.bias.uniform_(-1, 1)

    def forward(self, x: torch.Tensor, s: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return self.affine(x), self.plain(x * 3 + 1), self.affine(s)  # s: [N, C, L]


def test_group_norm(tmp_path: Path) -> None:
    g = torch.Generator().manual_seed(3)
    torch.manual_seed(3)
    inputs = (torch.randn(2, 6, 3, 4, generator=g), torch.randn(2, 6, 5, generator=g))
    check(GroupNorm(), inputs, tmp_path, 1e-6)


# ----- interpolate ---------------------------------------------------------------------


class Interpolate(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        outputs = []
        for size in ((7, 9), (2, 3)):  # up and down by sizes
            outputs.append(F.interpolate(x, size=size, mode="nearest"))
            for corners in (False, True):
                outputs.append(F.interpolate(x, size=size, mode="bilinear", align_corners=corners))
        for factor in (2.0, (1.5, 0.75)):  # scale factors: torch maps with 1 / factor
            outputs.append(F.interpolate(x, scale_factor=factor, mode="nearest"))
            for corners in (False, True):
                outputs.append(
                    F.interpolate(x, scale_factor=factor, mode="bilinear", align_corners=corners)
                )
        return tuple(outputs)


def test_interpolate(tmp_path: Path) -> None:
    """Nearest is exact (the same source pixels); bilinear within a few ulp of torch
    (torch's vectorized CPU blend rounds differently; measured max 1.2e-6 absolute)."""
    g = torch.Generator().manual_seed(4)
    check(Interpolate(), (torch.randn(2, 3, 4, 5, generator=g),), tmp_path, 1e-6)


def test_interpolate_nearest_is_exact(tmp_path: Path) -> None:
    g = torch.Generator().manual_seed(5)
    x = torch.randn(1, 2, 5, 3, generator=g)

    class Nearest(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
            return F.interpolate(x, size=(8, 7)), F.interpolate(x, scale_factor=(1.7, 2.4))

    check(Nearest(), (x,), tmp_path, 0.0)


# ----- CoreML lowerings of ops Vulkan already had ----------------------------------------


class DataMovement(torch.nn.Module):
    def forward(self, x: torch.Tensor, n: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return (
            F.pixel_shuffle(x, 2),
            F.pad(x, (1, 2, -1, 3), value=0.5),  # a negative amount crops
            F.pad(x, (0, 0, 2, 0)),
            x.repeat(2, 1, 1, 3),
            x[0].repeat(1, 2, 1, 1),  # repeat adding a leading dim
            x.flip(1, -1),
            n.flip(0),
            torch.stack([x[0], x[0] * 2, x[0] + 1], dim=1),
            torch.stack([n, n * 3], dim=-1),
            x.var(dim=(2, 3)),
            x.var(dim=1, keepdim=True, correction=0),
            x.std(dim=-1),
        )


def test_coreml_data_movement_and_moments(tmp_path: Path) -> None:
    g = torch.Generator().manual_seed(6)
    inputs = (torch.randn(2, 4, 3, 5, generator=g), torch.randint(-9, 9, (3, 4), generator=g))
    check(DataMovement(), inputs, tmp_path, 1e-6)


# ----- conv_transpose ------------------------------------------------------------------


class ConvTranspose(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.t2 = torch.nn.ConvTranspose2d(
            4, 6, (3, 2), stride=(2, 3), padding=(1, 0), output_padding=(1, 2), groups=2,
            dilation=(2, 1),
        )  # fmt: skip
        self.crop = torch.nn.ConvTranspose2d(4, 2, 3, stride=2, padding=3, bias=False)  # p > d(k-1)
        self.t1 = torch.nn.ConvTranspose1d(4, 3, 4, stride=2, padding=1, output_padding=1)

    def forward(self, x: torch.Tensor, s: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return self.t2(x), self.crop(x), self.t1(s), self.t1(s[0]), self.t2(x[0])


def test_conv_transpose(tmp_path: Path) -> None:
    g = torch.Generator().manual_seed(7)
    torch.manual_seed(7)
    inputs = (torch.randn(2, 4, 5, 4, generator=g), torch.randn(2, 4, 6, generator=g))
    check(ConvTranspose(), inputs, tmp_path, 1e-6)


def test_conv_transpose_to_an_empty_output_is_a_clear_error() -> None:
    model = torch.nn.ConvTranspose2d(2, 2, 3, padding=3)
    ep = torch.export.export(model, (torch.randn(1, 2, 5, 4),))
    with pytest.raises(qopt.QoptError, match=r"conv_transpose2d .* gives an empty output"):
        qopt.import_program(ep)


class FloorDivision(torch.nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor, a: torch.Tensor, b: torch.Tensor):
        return x // y, x // 0.75, a // b, a // 3


class TruncDivision(torch.nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor, a: torch.Tensor, b: torch.Tensor):
        return torch.div(x, y, rounding_mode="trunc"), torch.div(a, b, rounding_mode="trunc")


@pytest.mark.parametrize("model", [FloorDivision(), TruncDivision()], ids=["floor", "trunc"])
def test_rounding_division(model: torch.nn.Module, tmp_path: Path) -> None:
    """Exact (integers bit for bit, floats as torch: floor division from the exact fmod,
    truncation of the quotient) on every target."""
    g = torch.Generator().manual_seed(8)
    x, y = torch.randn(3, 5, generator=g) * 4, torch.randn(3, 5, generator=g)
    a = torch.randint(-20, 20, (3, 5), generator=g)
    b = torch.randint(1, 6, (3, 5), generator=g) * torch.where(
        torch.rand(3, 5, generator=g) > 0.5, 1, -1
    )
    a[0, :4] = torch.tensor([6, -6, 0, -7])  # exact multiples and zero
    b[0, :4] = torch.tensor([3, 3, -2, 7])
    check(model, (x, y, a, b), tmp_path, 0.0)


# ----- layer norm with run-time parameters, native forms (benchmarks/conformance.py) --------


class RuntimeNorms(torch.nn.Module):
    def forward(
        self, x: torch.Tensor, w: torch.Tensor, b: torch.Tensor
    ) -> tuple[torch.Tensor, ...]:
        y = F.layer_norm(x, (4,), w, b)  # MIL layer_norm takes constant gamma / beta only
        z = torch.native_layer_norm(x, (4,), w, None, 1e-5)[0]  # mean / rstd unused
        g = torch.native_group_norm(x.reshape(2, 4, 3), None, None, 2, 4, 3, 2, 1e-5)[0]
        return y, z, g


def test_runtime_layer_norm_parameters_and_native_forms(tmp_path: Path) -> None:
    g = torch.Generator().manual_seed(4)
    inputs = tuple(torch.randn(*s, generator=g) for s in ((2, 3, 4), (4,), (4,)))
    check(RuntimeNorms(), inputs, tmp_path, 1e-6)
