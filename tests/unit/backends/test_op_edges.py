"""Edge values on every target (issue: wrong answers at signed zeros, NaN, infinities,
and precision near 0): each model is exported with torch.export and run through the
interpreter, CoreML (saved, read back from the `.mlpackage` and interpreted) and
Vulkan, and compared element by element with torch: NaN where torch has NaN, the same
infinities, the same sign on every zero, and finite values within a relative
tolerance of the float64 answer rounded to float32 (`want64`) or of torch's float32
answer. Subnormal inputs are left out (lavapipe flushes them to zero).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import qopt

NAN, INF = float("nan"), float("inf")


def run_targets(
    model: torch.nn.Module, inputs: tuple[torch.Tensor, ...], tmp_path: Path
) -> dict[str, list[np.ndarray]]:
    """The exported model's outputs on the interpreter, CoreML and (where a device is
    present) Vulkan."""
    from qopt.backends.vulkan.runtime import vulkan_available

    ep = torch.export.export(model.eval(), inputs)
    runs = {"interp": list(qopt.interpret(qopt.import_program(ep), *inputs))}
    path = tmp_path / "model.mlpackage"
    qopt.compile(ep, target="coreml", compute_precision="fp32").save(path)
    runs["coreml"] = list(qopt.interpret(qopt.read_mlpackage(path), *inputs))
    if vulkan_available() is None:
        runs["vulkan"] = list(qopt.compile(ep, target="vulkan")(*inputs))
    return runs


def assert_edges(where: str, got: np.ndarray, want: np.ndarray, rtol: float) -> None:
    """NaN, infinities and zeros' signs as `want`; finite values within `rtol`."""
    g = np.asarray(got)
    assert g.shape == want.shape, (where, g.shape)
    if want.dtype.kind != "f":  # by value: Core ML programs return bools as fp32 0 / 1
        assert np.array_equal(g, want), (where, g, want)
        return
    assert g.dtype == want.dtype, (where, g.dtype)
    g64, w64 = g.astype(np.float64), want.astype(np.float64)
    nan = np.isnan(w64)
    assert np.array_equal(np.isnan(g64), nan), (where, g, want)
    exact = ~nan & (~np.isfinite(w64) | (w64 == 0))
    assert np.array_equal(g64[exact], w64[exact]), (where, g[exact], want[exact])
    assert np.array_equal(np.signbit(g64[exact]), np.signbit(w64[exact])), (where, g, want)
    rest = ~nan & ~exact
    rel = np.abs(g64[rest] - w64[rest]) / np.abs(w64[rest])
    assert rel.size == 0 or rel.max() <= rtol, (where, rel.max(), g[rest], want[rest])


def want64(fn: Callable[..., tuple[torch.Tensor, ...]], *inputs: torch.Tensor) -> list[np.ndarray]:
    """`fn` in float64 (integer inputs unchanged), each float result rounded to f32."""
    wide = [t.double() if t.is_floating_point() else t for t in inputs]
    return [t.float().numpy() if t.is_floating_point() else t.numpy() for t in fn(*wide)]


# ----- reciprocal / rsqrt / round / pow at zeros and NaN; tanh / sinh / cosh / erf -------


class Signed(torch.nn.Module):
    def forward(self, x: torch.Tensor, e: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return (
            torch.reciprocal(x),
            torch.rsqrt(x),
            torch.round(x),
            torch.pow(x, 3.0),
            torch.pow(x, -1.0),
            torch.pow(x, -2.0),
            torch.pow(x, e),
        )


def test_signed_zeros_infinities_and_nan(tmp_path: Path) -> None:
    """reciprocal / rsqrt of -0.0 are -inf (CoreML gave +inf: MIL inverse / rsqrt add
    their epsilon), round of (-0.5, 0) is -0.0 (CoreML gave +0.0), pow keeps -0.0 for
    odd powers and gives +-inf for negative ones, NaN for a NaN base (Vulkan gave 0)."""
    xs = [0.0, -0.0, -0.5, -0.3, 0.5, 2.5, -2.5, 1.5, 4.0, -3.0, INF, -INF, NAN, 1e-3, 1.0]
    es = [3.0, 3.0, 2.0, -1.0, -2.0, 0.5, 0.5, INF, -INF, 3.0, -3.0, 0.0, 2.0, 1.5, NAN]
    x, e = torch.tensor(xs), torch.tensor(es)
    want = [t.numpy() for t in Signed()(x, e)]
    for where, got in run_targets(Signed(), (x, e), tmp_path).items():
        for k, (g, w) in enumerate(zip(got, want, strict=True)):
            assert_edges(f"{where} output {k}", g, w, 2e-7 if k < 3 else 1e-6)


class Hyperbolic(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return torch.tanh(x), torch.sinh(x), torch.cosh(x), torch.erf(x)


def test_hyperbolic_near_zero_large_and_nan(tmp_path: Path) -> None:
    """tanh / sinh to a few ulp near 0 (Vulkan's builtins were off by 1e-4 relative at
    1e-5), sinh / cosh finite up to 89 (the builtins overflowed at 88.7), NaN passes
    through tanh and erf (Vulkan gave -1), -0.0 keeps its sign. Beyond 5 the device's
    exp (2^(x log2 e): the product's rounding, ~|x| ulp) bounds sinh / cosh to 1e-5."""
    small = [1e-7, -1e-6, 1e-5, -3e-4, 1e-2, 0.3, -0.6, 1.0, -2.0, 5.0, 0.0, -0.0]
    large = [15.0, -20.5, 30.0, 88.9, -89.0, 89.4, 100.0, INF, -INF, NAN]
    x = torch.tensor(small + large)
    want = want64(Hyperbolic(), x)
    for where, got in run_targets(Hyperbolic(), (x,), tmp_path).items():
        n = len(small)
        for k, (g, w) in enumerate(zip(got[:3], want[:3], strict=True)):
            assert_edges(f"{where} output {k} small", g[:n], w[:n], 1e-6)
            assert_edges(f"{where} output {k} large", g[n:], w[n:], 1e-5)
        nan = np.isnan(got[3])
        assert np.array_equal(nan, np.isnan(want[3])), where


# ----- signbit, copysign by the sign bit --------------------------------------------------


class Signbit(torch.nn.Module):
    def forward(self, x: torch.Tensor, i: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return (
            torch.signbit(x),
            torch.signbit(i),
            torch.copysign(torch.full_like(x, 2.5), x),
            torch.copysign(i, x),
        )


def test_signbit_and_copysign_read_the_sign_bit(tmp_path: Path) -> None:
    """signbit / copysign take the sign bit as torch: -0.0 and a NaN with its bit set
    are negative (copysign treated every NaN as positive) on the interpreter and
    Vulkan; CoreML cannot read a NaN's bit (no bitcast in MIL): there a NaN counts
    as positive, every other value as torch."""
    bits = np.array([0.0, -0.0, 1.5, -1.5, np.inf, -np.inf, 1e-3, -1e30], np.float32)
    nans = np.array([0x7FC00000, 0xFFC00000, 0x7F800001, 0xFF812345], np.uint32).view(np.float32)
    x = torch.from_numpy(np.concatenate([bits, nans]))
    i = torch.tensor([0, -1, 3, -7, 2**30, -(2**31), 5, 0, 1, -2, 0, 9])
    want = [t.numpy() for t in Signbit()(x, i)]
    n = len(bits)
    for where, got in run_targets(Signbit(), (x, i), tmp_path).items():
        keep = slice(None) if where != "coreml" else slice(0, n)
        for k, (g, w) in enumerate(zip(got, want, strict=True)):
            piece = slice(None) if k == 1 else keep
            assert_edges(f"{where} output {k}", np.asarray(g)[piece], w[piece], 0.0)
        if where == "coreml":
            assert not np.asarray(got[0])[n:].any()


# ----- fmod, remainder --------------------------------------------------------------------


class Modulo(torch.nn.Module):
    def forward(
        self, x: torch.Tensor, y: torch.Tensor, i: torch.Tensor, j: torch.Tensor
    ) -> tuple[torch.Tensor, ...]:
        return (
            torch.fmod(x, y),
            torch.remainder(x, y),
            torch.fmod(x, 1.5),
            torch.fmod(i, j),
            torch.remainder(i, j),
            torch.fmod(i, -3),
        )


def test_fmod_and_remainder(tmp_path: Path) -> None:
    """fmod is C's, exact (huge quotients, tiny rests) with x's sign on zeros; remainder
    is torch's (fmod, then + y): zeros keep x's sign (numpy's mod gave y's), 3 % -inf
    is -inf (Vulkan gave NaN), NaN for inf % y and x % 0; integers truncate / floor.
    Bit-exact on the interpreter and Vulkan; CoreML's remainder goes through MIL's
    floor-mod (rounding of `mod + y` as torch's own)."""
    xs = [-4.0, 4.0, -0.0, 0.0, 3.0, -3.0, 1e30, -1e30, 5.5, -5.5, -1e-3, 7.25, INF, NAN]
    ys = [2.0, -2.0, 7.0, -7.0, -INF, INF, -0.5, 0.7, 0.0, 2.0, 2.0, 1e-3, 3.0, 1.0]
    xs += [123456.78, -3.3e38, 1e-30, 2.5e-3, 17.0, -17.0]
    ys += [0.1, 7.0, 3.0, -1e-4, 5.0, -5.0]
    x, y = torch.tensor(xs), torch.tensor(ys)
    i = torch.tensor([-7, 7, -7, 7, 0, 100003, -100003, 5, -2147483, 9])
    j = torch.tensor([2, -2, -2, 2, 3, 7, 7, -1, 1000, 9])
    want = [t.numpy() for t in Modulo()(x, y, i, j)]
    for where, got in run_targets(Modulo(), (x, y, i, j), tmp_path).items():
        for k, (g, w) in enumerate(zip(got, want, strict=True)):
            assert_edges(f"{where} output {k}", g, w, 1e-6 if where == "coreml" else 0.0)


class ByZero(torch.nn.Module):
    def __init__(self, fn: Callable[[torch.Tensor], torch.Tensor]) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, i: torch.Tensor) -> torch.Tensor:
        return self.fn(i)


@pytest.mark.parametrize(
    "fn",
    [
        lambda i: torch.fmod(i, 0),
        lambda i: torch.remainder(i, 0),
        lambda i: i // 0,
        lambda i: torch.div(i, 0, rounding_mode="trunc"),
    ],
    ids=["fmod", "remainder", "floor_divide", "div_trunc"],
)
def test_integer_division_by_the_number_zero_is_refused(
    fn: Callable[[torch.Tensor], torch.Tensor],
) -> None:
    """torch raises ZeroDivisionError for an integer fmod / remainder / rounding division
    by the number 0: a clean QoptError at import (floats divide: inf / NaN)."""
    ep = torch.export.export(ByZero(fn), (torch.tensor([1, 2]),))
    with pytest.raises(qopt.QoptError, match="ZeroDivisionError"):
        qopt.import_program(ep)
    ep = torch.export.export(ByZero(fn), (torch.tensor([1.0, 2.0]),))
    qopt.import_program(ep)


# ----- hypot, logaddexp, logaddexp2, asinh, acosh, atanh -----------------------------------


class Composed(torch.nn.Module):
    def forward(
        self, x: torch.Tensor, y: torch.Tensor, i: torch.Tensor
    ) -> tuple[torch.Tensor, ...]:
        return (
            torch.hypot(x, y),
            torch.logaddexp(x, y),
            torch.logaddexp2(x, y),
            torch.asinh(x),
            torch.acosh(1 / x),
            torch.acosh(x),
            torch.atanh(y / 4),
            torch.asinh(i),
            torch.atanh(i),
        )


def test_hypot_logaddexp_inverse_hyperbolics(tmp_path: Path) -> None:
    """Each within 1e-6 relative (a few ulp) of float64 torch on every target, near 0
    (no cancellation), near the poles (atanh at +-0.99999, acosh at 1 + 1e-7), huge (no
    overflow of x * x: hypot 3e38, asinh / acosh 1e30), at +-inf, -0.0 and NaN; integers
    promote."""
    xs = [1e-7, -1e-7, 1e-4, -0.3, 0.5, 1.0000001, 1.5, -2.0, 3.0, 10.0, -100.0, 3e5]
    ys = [2e-7, 1e-7, -3.0, 0.7, -0.5, 3.9999, -3.99996, 4.0, -4.0, 1e-3, 20.0, 0.0]
    xs += [1e30, -1e30, 3e38, 2e38, 0.0, -0.0, INF, -INF, INF, NAN, 5.0, NAN, -INF]
    ys += [1e30, 3.0, 3e38, -1e-30, -0.0, 0.0, INF, -INF, NAN, INF, NAN, 1.0, 2.0]
    x, y = torch.tensor(xs), torch.tensor(ys)
    i = torch.tensor([-3, -1, 0, 1, 2, 5] * 4 + [7])
    want = want64(Composed(), x, y, i)
    for where, got in run_targets(Composed(), (x, y, i), tmp_path).items():
        for k, (g, w) in enumerate(zip(got, want, strict=True)):
            assert_edges(f"{where} output {k}", g, w, 1e-6)


# ----- activations through expm1 / log1p ---------------------------------------------------


class Activations(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return (
            F.elu(x),
            F.elu(x, alpha=0.5),
            F.selu(x),
            F.celu(x, alpha=2.0),
            F.softplus(x),
            F.softplus(x, beta=2.0, threshold=10.0),
            F.mish(x),
            F.logsigmoid(x),
        )


def test_activations_are_accurate_where_small(tmp_path: Path) -> None:
    """elu / selu / celu through expm1 and softplus / mish / log_sigmoid through log1p:
    within 1e-6 relative of float64 torch where the result is tiny (elu(-1e-6) was 7%
    off on Vulkan through exp(x) - 1; log_sigmoid(7), softplus(-7) 5e-5 through log(1 +
    exp)); -0.0 kept by elu; inf and NaN as torch. 5e-6 on Vulkan: the device's exp
    is off by ~|x| ulp (2.6e-6 at exp(-60) in softplus(-30, beta=2)); no subnormal results."""
    xs = [-1e-6, 1e-6, -3e-4, -0.1, 0.2, -1.0, 2.0, -5.0, 7.0, -7.0, 15.0, -15.0, -30.0]
    xs += [0.0, -0.0, 25.0, -80.0, INF, -INF, NAN]
    x = torch.tensor(xs)
    want = want64(Activations(), x)
    for where, got in run_targets(Activations(), (x,), tmp_path).items():
        for k, (g, w) in enumerate(zip(got, want, strict=True)):
            assert_edges(f"{where} output {k}", g, w, 5e-6 if where == "vulkan" else 1e-6)


# ----- bit shifts ------------------------------------------------------------------------------


class Shifts(torch.nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return (
            a << b,
            a >> b,
            torch.bitwise_left_shift(a, 3),
            torch.bitwise_right_shift(a, 2),
            torch.bitwise_right_shift(-100, b),
        )


def test_bit_shifts(tmp_path: Path) -> None:
    """`<<` / `>>` as torch on the interpreter (int32 and int64 widths) and Vulkan (i32:
    int64 tensors compute in int32, exact while the results fit): left shifts wrap, a
    shift amount < 0 or >= the width gives 0 (left) or the sign fill (right). MIL has
    no shift op: CoreML refuses them with a clean QoptError naming the Vulkan target."""
    from qopt.backends.vulkan.runtime import vulkan_available

    a = [1, -1, 5, -8, 2**30, -(2**31) + 1, 7, 7, 7, -7, -7, 123456, -5, 0]
    b = [1, 1, 3, 2, 2, 1, -1, 32, 40, -3, 33, 31, 30, 64]
    for dtype in (torch.int32, torch.int64):
        x, y = torch.tensor(a, dtype=dtype), torch.tensor(b, dtype=dtype)
        want = [t.numpy() for t in Shifts()(x, y)]
        ep = torch.export.export(Shifts(), (x, y))
        runs = {"interp": qopt.interpret(qopt.import_program(ep), x, y)}
        if vulkan_available() is None:
            runs["vulkan"] = qopt.compile(ep, target="vulkan")(x, y)
        for where, got in runs.items():
            for k, (g, w) in enumerate(zip(got, want, strict=True)):
                if where == "vulkan" and dtype == torch.int64:
                    fits = (w >= -(2**31)) & (w < 2**31) & (y.numpy() < 32)
                    g, w = np.asarray(g)[fits], w[fits]
                assert_edges(f"{where} {dtype} output {k}", g, w, 0.0)
        with pytest.raises(
            qopt.QoptError, match=r"no CoreML lowering for .aten.bitwise_left_shift.*Vulkan"
        ):
            qopt.compile(ep, target="coreml")


# ----- zero-size values --------------------------------------------------------------------


class ZeroSize(torch.nn.Module):
    def forward(self, x: torch.Tensor, i: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return (
            x[:, :0] * 2,  # an empty output
            x[:, :0].sum(1) + x[:, 0],  # a reduction over an empty dim, then a kernel
            torch.cat([x[:, :0], x], 1) * 2,
            x.index_select(1, i[:0]).sum(1) + 1,  # empty indices
            (x[:0] + 1).mean(0),  # the mean of nothing: NaN
        )


def test_zero_size_intermediates(tmp_path: Path) -> None:
    """A zero-size value inside the program holds no data: every target computes with
    it (Vulkan refused it: `a zero-size result is not supported`); its readers fold
    (sum 0, mean NaN) or drop it (cat). A zero-size program input stays a clean
    QoptError that names it and says what to do."""
    x, i = torch.randn(2, 3, generator=torch.Generator().manual_seed(3)), torch.tensor([0, 2])
    want = [t.numpy() for t in ZeroSize()(x, i)]
    for where, got in run_targets(ZeroSize(), (x, i), tmp_path).items():
        for k, (g, w) in enumerate(zip(got, want, strict=True)):
            assert_edges(f"{where} output {k}", g, w, 1e-6)

    class EmptyInput(torch.nn.Module):
        def forward(self, e: torch.Tensor) -> torch.Tensor:
            return torch.relu(e)

    ep = torch.export.export(EmptyInput(), (torch.zeros(0, 3),))
    for target in ("coreml", "vulkan"):
        with pytest.raises(qopt.QoptError, match=r"input 0 of @forward has the zero-size"):
            qopt.compile(ep, target=target)


class FloorDivide(torch.nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return torch.floor_divide(x, y), torch.div(x, y, rounding_mode="floor"), x // 0.1


def test_floor_division_is_torchs(tmp_path: Path) -> None:
    """Float floor division as torch (and Python) compute it, from the exact fmod: 1 //
    0.1 is 9 (floor(1 / 0.1) gave 10 on every target), 3 // -inf is -1 (gave -0), inf
    // 3 is NaN (gave -inf), x // 0 is x / 0, zeros carry x / y's sign; bit-exact."""
    xs = [1.0, 3.0, -3.0, INF, -INF, 5.0, -5.0, 0.0, -0.0, 7.5, 1e30, -1.0, 0.7, NAN, 2.0]
    ys = [0.1, -INF, INF, -3.0, 3.0, 0.0, 0.0, 2.0, 2.0, 2.5, 3e-8, 0.1, -0.1, 1.0, NAN]
    x, y = torch.tensor(xs), torch.tensor(ys)
    want = [t.numpy() for t in FloorDivide()(x, y)]
    for where, got in run_targets(FloorDivide(), (x, y), tmp_path).items():
        for k, (g, w) in enumerate(zip(got, want, strict=True)):
            assert_edges(f"{where} output {k}", g, w, 0.0)


class FmaxFmin(torch.nn.Module):
    def forward(
        self, x: torch.Tensor, y: torch.Tensor, i: torch.Tensor
    ) -> tuple[torch.Tensor, ...]:
        return torch.fmax(x, y), torch.fmin(x, y), torch.fmax(i, x), torch.fmin(i, i.flip(0))


def test_fmax_fmin_ignore_nan(tmp_path: Path) -> None:
    """fmax / fmin take the other operand where one is NaN (maximum / minimum give NaN),
    NaN where both are; integers are the plain maximum / minimum, mixed types promote."""
    x = torch.tensor([1.0, NAN, NAN, -2.0, INF, -INF, 3.0, 0.5])
    y = torch.tensor([NAN, 2.0, NAN, -3.0, 1.0, 1.0, 3.0, -0.5])
    i = torch.tensor([4, -1, 0, 7, 2, -9, 3, 1])
    want = [t.numpy() for t in FmaxFmin()(x, y, i)]
    for where, got in run_targets(FmaxFmin(), (x, y, i), tmp_path).items():
        for k, (g, w) in enumerate(zip(got, want, strict=True)):
            assert_edges(f"{where} output {k}", g, w, 0.0)


class TruncDivide(torch.nn.Module):
    def forward(
        self, x: torch.Tensor, y: torch.Tensor, i: torch.Tensor, j: torch.Tensor
    ) -> tuple[torch.Tensor, ...]:
        return (
            torch.div(x, y, rounding_mode="trunc"),
            torch.div(i, j, rounding_mode="trunc"),
            torch.sgn(x),
        )


def test_trunc_division_and_sgn(tmp_path: Path) -> None:
    """div(rounding_mode='trunc') on every target (Vulkan refused it): trunc(x / y) on
    floats (-0.0 for a negative quotient above -1), truncating integer division; sgn of
    a real tensor is sign."""
    x = torch.tensor([7.0, -7.0, 0.5, -0.5, INF, 1.0, NAN, -0.0, 1e30])
    y = torch.tensor([2.0, 2.0, -3.0, 3.0, 2.0, 0.0, 1.0, 5.0, 3e-9])
    i = torch.tensor([7, -7, 7, -7, 0, -2147483647, 100003])
    j = torch.tensor([2, 2, -2, -2, 5, 3, -7])
    want = [t.numpy() for t in TruncDivide()(x, y, i, j)]
    for where, got in run_targets(TruncDivide(), (x, y, i, j), tmp_path).items():
        for k, (g, w) in enumerate(zip(got, want, strict=True)):
            assert_edges(f"{where} output {k}", g, w, 0.0)


class Clamps(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return torch.relu(x), F.relu6(x), F.hardtanh(x), torch.clamp(x, min=0.0), x.clamp(2.0, 1.0)


def test_relu_and_clamp_keep_negative_zero(tmp_path: Path) -> None:
    """relu / relu6 / hardtanh / clamp as torch's comparisons: -0.0 stays -0.0 (numpy's
    maximum and the device's max gave +0.0), NaN passes, max where min > max; on the
    interpreter and Vulkan (CoreML: MIL relu / clip, whose zero sign is the backend's)."""
    x = torch.tensor([-0.0, 0.0, -1.0, 0.5, 7.0, NAN, -INF, INF, 1.5, -0.0])
    want = [t.numpy() for t in Clamps()(x)]
    runs = run_targets(Clamps(), (x,), tmp_path)
    for where, got in runs.items():
        for k, (g, w) in enumerate(zip(got, want, strict=True)):
            if where == "coreml":  # values only
                np.testing.assert_array_equal(np.asarray(g), w)
            else:
                assert_edges(f"{where} output {k}", g, w, 0.0)


class ExtremesWithNan(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return (
            torch.amax(x, dim=0, keepdim=True),
            torch.amin(x, dim=1),
            torch.amax(x),
            torch.max_pool2d(x[None, None], 2),
        )


def test_max_and_min_reductions_propagate_nan(tmp_path: Path) -> None:
    """amax / amin (and max_pool2d) give NaN where a reduced slice holds a NaN, as torch
    (the Vulkan reduction once took GLSL's max / min, which may drop a NaN), in every
    position of the slice (first, middle, last) and in both tree halves."""
    x = torch.arange(6 * 40, dtype=torch.float32).reshape(6, 40).sin() * 5.0
    x[0, 0] = NAN
    x[1, 17] = NAN
    x[2, 39] = NAN
    x[5, 3] = -INF
    want = [t.numpy() for t in ExtremesWithNan()(x)]
    assert np.isnan(want[0]).sum() == 3
    assert np.isnan(want[1]).sum() == 3
    for where, got in run_targets(ExtremesWithNan(), (x,), tmp_path).items():
        for k, (g, w) in enumerate(zip(got, want, strict=True)):
            assert_edges(f"{where} output {k}", g, w, 0.0)


class GatherScalar(torch.nn.Module):
    def forward(self, x: torch.Tensor, i: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return (torch.gather(x, 0, i),)


def test_gather_of_a_0d_tensor_has_the_index_shape(tmp_path: Path) -> None:
    """torch.gather of a 0-d input by a [1] index gives [1] (Core ML once returned the
    0-d value itself)."""
    x, i = torch.tensor(-8.5), torch.tensor([0])
    want = [t.numpy() for t in GatherScalar()(x, i)]
    assert want[0].shape == (1,)
    for where, got in run_targets(GatherScalar(), (x, i), tmp_path).items():
        assert_edges(where, got[0], want[0], 0.0)


class TransposeScalar(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return (torch.transpose(x, 0, -1) * 2.0, x.permute([]) + 1.0)


def test_transpose_of_a_0d_tensor_is_the_tensor(tmp_path: Path) -> None:
    """transpose(x, 0, -1) / permute([]) of a 0-d tensor are the tensor (CoreML and
    Vulkan once failed with a ZeroDivisionError / IndexError inside the lowering)."""
    x = torch.tensor(-3.25)
    want = [t.numpy() for t in TransposeScalar()(x)]
    for where, got in run_targets(TransposeScalar(), (x,), tmp_path).items():
        for k, (g, w) in enumerate(zip(got, want, strict=True)):
            assert_edges(f"{where} output {k}", g, w, 0.0)


class SplitWithEmpty(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        a, b, c = torch.split_with_sizes(x, [0, 3, 2])
        return a, b * 2.0, c + 1.0


def test_split_with_a_zero_size_piece(tmp_path: Path) -> None:
    """A split whose pieces include a zero-size one: the empty piece returned as is, the
    others computed (Vulkan once failed verifying a [0, ...] buffer inside the lowering);
    Core ML refuses it cleanly."""
    from qopt.backends.vulkan.runtime import vulkan_available

    x = torch.arange(25, dtype=torch.float32).reshape(5, 5)
    want = [t.numpy() for t in SplitWithEmpty()(x)]
    ep = torch.export.export(SplitWithEmpty(), (x,))
    runs = {"interp": list(qopt.interpret(qopt.import_program(ep), x))}
    if vulkan_available() is None:
        runs["vulkan"] = list(qopt.compile(ep, target="vulkan")(x))
    for where, got in runs.items():
        for k, (g, w) in enumerate(zip(got, want, strict=True)):
            assert_edges(f"{where} output {k}", g, w, 0.0)
    with pytest.raises(qopt.QoptError, match="empty piece"):  # Core ML tensors are never empty
        qopt.compile(ep, target="coreml")
