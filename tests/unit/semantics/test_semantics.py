"""qopt.numerics against torch, function by function.

`qopt.numerics` holds the one numpy implementation of quantize, dequantize,
choose_qparams, codebook decoding and the activations that every interpreter,
kernel reference and lowering calls; here each is compared with the torch op it
models (`torch.ops.quantized_decomposed.*`, `torch.ops.torchao.*`,
`torch.ops.quant.dequantize_codebook`, `torch.nn.functional`), bit for bit on
integer results. Inputs are seeded random tensors plus the hard cases: exact
rounding ties (x * f32(1 / scale) = k + 0.5), values beyond the clamp range,
signed zeros, per-channel / per-group / per-token blocks, float16, negative and
zero scales (where torch defines the result), all-zero and constant blocks for
choose_qparams. The IR-core helpers the numerics rest on (constant decoding,
tensor shapes) are checked at the end.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torchao  # noqa: F401  (registers torch.ops.torchao)
from torch.ao.quantization.fx import _decomposed  # noqa: F401  (registers quantized_decomposed)
from torchao.prototype.quantization.codebook_coreml import codebook_ops  # noqa: F401
from xdsl.dialects.arith import ConstantOp
from xdsl.dialects.builtin import (
    BytesAttr,
    DenseIntOrFPElementsAttr,
    ModuleOp,
    TensorType,
    f32,
    i1,
    i8,
    i32,
)
from xdsl.utils.exceptions import VerifyException

from qopt.dialects.tensors import dtype_of, elem_of, numel, shape_of
from qopt.errors import QoptError
from qopt.numerics import activations as act
from qopt.numerics import bits
from qopt.numerics import quant as nq
from qopt.resources import WeightStore, attach, elements_array, make_resource

qd = torch.ops.quantized_decomposed
ao = torch.ops.torchao

F32 = np.float32

TORCH_OF = {
    np.dtype(np.int8): torch.int8,
    np.dtype(np.uint8): torch.uint8,
    np.dtype(np.int16): torch.int16,
    np.dtype(np.uint16): torch.uint16,
    np.dtype(np.int32): torch.int32,
    np.dtype(np.float16): torch.float16,
    np.dtype(np.float32): torch.float32,
    np.dtype(np.float64): torch.float64,
}


def rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def with_ties(x: np.ndarray, scale: float, seed: int) -> np.ndarray:
    """`x` (f32) with about a third of its elements replaced by exact rounding ties of
    torch's quantizer: values v with v * f32(1 / scale) == k + 0.5 in f32."""
    r = rng(seed)
    inv = F32(1.0 / scale)
    k = r.integers(-300, 300, x.shape).astype(F32) + F32(0.5)
    cand = (k / inv).astype(F32)
    for nudge in (0, 1, -1):  # the candidate or a neighbour lands exactly on the tie
        trial = np.nextafter(cand, np.inf if nudge > 0 else -np.inf) if nudge else cand
        hit = (trial * inv) == k
        cand = np.where(hit, trial, cand)
    exact = (cand * inv) == k
    pick = (r.random(x.shape) < 0.35) & exact
    out = np.where(pick, cand, x).astype(F32)
    out.reshape(-1)[:4] = [0.0, -0.0, 1e6, -1e6]
    return out


def assert_same(got: np.ndarray, want: torch.Tensor) -> None:
    w = want.detach().numpy()
    assert got.dtype == w.dtype, (got.dtype, w.dtype)
    assert got.shape == w.shape, (got.shape, w.shape)
    if got.dtype.kind == "f":  # bit for bit, NaN and signed zero included
        view = {2: np.uint16, 4: np.uint32, 8: np.uint64}[got.dtype.itemsize]
        assert np.array_equal(got.view(view), w.view(view)), np.abs(got - w).max()
    else:
        np.testing.assert_array_equal(got, w)


def t(x: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(x))


# ----- quantize / dequantize: quantized_decomposed -----------------------------------

RANGES = [
    (np.int8, -128, 127),
    (np.uint8, 0, 255),
    (np.int8, -8, 7),
    (np.int16, -32768, 32767),
    (np.int32, -(2**24), 2**24),  # f32 holds every bound (2^31 - 1 it would not)
]


@pytest.mark.parametrize("dtype,qmin,qmax", RANGES)
@pytest.mark.parametrize("scale", [0.25, 0.05, 0.0173, 1 / 3, 3.7e-5, -0.125])
def test_quantize_per_tensor(dtype, qmin, qmax, scale):
    """`clamp(rne(x * f32(1 / scale)) + zp)` in f32, the reciprocal of the Python float
    scale taken in double; negative scales mirror the values."""
    x = with_ties((rng(0).standard_normal((16, 33)) * 4).astype(F32), scale, 1)
    zp = (qmin + qmax + 1) // 2 - 3
    want = qd.quantize_per_tensor.default(t(x), scale, zp, qmin, qmax, TORCH_OF[np.dtype(dtype)])
    got = nq.quantize(x, np.float64(scale), zp, x.shape, qmin, qmax, dtype, F32)
    assert_same(got, want)
    # .tensor overload: scale / zero point as f64 / i64 tensors, read with .item()
    st, zt = torch.tensor([scale], dtype=torch.float64), torch.tensor([zp])
    want = qd.quantize_per_tensor.tensor(t(x), st, zt, qmin, qmax, TORCH_OF[np.dtype(dtype)])
    got = nq.quantize(x, st.numpy(), zt.numpy(), x.shape, qmin, qmax, dtype, F32)
    assert_same(got, want)


def test_quantize_per_tensor_float16_input():
    """f16 input is upcast to f32 (exact), so the f32 quantizer applies."""
    x = (rng(2).standard_normal((8, 40)) * 3).astype(np.float16)
    want = qd.quantize_per_tensor.default(t(x), 0.021, -5, -128, 127, torch.int8)
    got = nq.quantize(x, np.float64(0.021), -5, x.shape, -128, 127, np.int8, F32)
    assert_same(got, want)


@pytest.mark.parametrize("out", [np.float32, np.float16])
@pytest.mark.parametrize("dtype,qmin,qmax", RANGES[:4])
def test_dequantize_per_tensor(dtype, qmin, qmax, out):
    """`(q.to(out) - zp) * scale` with zp and scale Python numbers: torch computes an
    f16 result in f32 ("opmath", the scale not rounded to f16) and rounds it, so the
    frontend gives f16 dequantizes compute_type f32; computing in f16 differs."""
    q = rng(3).integers(qmin, qmax + 1, (40, 50)).astype(dtype)
    td, tout = TORCH_OF[np.dtype(dtype)], TORCH_OF[np.dtype(out)]
    want = qd.dequantize_per_tensor.default(t(q), 0.0173, 3, qmin, qmax, td, out_dtype=tout)
    got = nq.dequantize(q, np.float64(0.0173), 3, q.shape, out, F32)
    if (qmin >= -2048 and qmax <= 2048) or out == np.float32:  # q - zp exact in f16
        assert_same(got, want)
    if out == np.float16:
        in_f16 = nq.dequantize(q, np.float64(0.0173), 3, q.shape, out)
        assert not np.array_equal(in_f16, want.numpy())


def test_imported_float16_dequantize_per_tensor_matches_torch():
    """End to end: the frontend gives an f16 dequantize_per_tensor compute type f32,
    so the interpreter reproduces torch's opmath result bit for bit."""
    import qopt

    class M(torch.nn.Module):
        def forward(self, q):
            return qd.dequantize_per_tensor.default(
                q, 0.0173, 3, -128, 127, torch.int8, out_dtype=torch.float16
            )

    q = t(rng(25).integers(-128, 128, (32, 64)).astype(np.int8))
    (got,) = qopt.interpret(qopt.import_program(torch.export.export(M(), (q,))), q)
    assert_same(got, M()(q))


@pytest.mark.parametrize("scale_dtype", [np.float32, np.float64])
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_quantize_dequantize_per_channel(axis, scale_dtype):
    """Per channel on `axis`: `x * (1 / s[c])` in promote(x, scales); dequantize
    `(q - z[c]) * s[c]`."""
    r = rng(4)
    x = (r.standard_normal((6, 5, 4)) * 2).astype(F32)
    c = x.shape[axis]
    scales = (r.random(c) * 0.1 + 0.005).astype(scale_dtype)
    scales[0] = 0.125  # exact ties for this channel
    x = np.where(
        np.arange(c).reshape([-1 if i == axis else 1 for i in range(3)]) == 0,
        with_ties(x, 0.125, 5),
        x,
    ).astype(F32)
    zps = r.integers(-10, 10, c).astype(np.int64)
    block = [1 if i == axis else d for i, d in enumerate(x.shape)]
    compute = np.promote_types(F32, scale_dtype)
    want = qd.quantize_per_channel(t(x), t(scales), t(zps), axis, -128, 127, torch.int8)
    got = nq.quantize(x, scales, zps, block, -128, 127, np.int8, compute)
    assert_same(got, want)
    want_dq = qd.dequantize_per_channel(t(got), t(scales), t(zps), axis, -128, 127, torch.int8)
    got_dq = nq.dequantize(got, scales, zps, block, np.float32, compute)
    assert_same(got_dq, want_dq)
    no_zp = qd.dequantize_per_channel(t(got), t(scales), None, axis, -128, 127, torch.int8)
    assert_same(nq.dequantize(got, scales, None, block, np.float32, compute), no_zp)


@pytest.mark.parametrize("group", [2, 8, 32])
def test_quantize_dequantize_per_channel_group(group):
    """Per group along the last dim, the zero point added before rounding:
    `clamp(rne(x * (1 / s) + zp))`."""
    r = rng(6)
    x = with_ties((r.standard_normal((4, 64)) * 2).astype(F32), 0.0625, 7)
    n_groups = x.size // group
    scales = np.full(n_groups, 0.0625, F32)
    scales[1::2] = (r.random(n_groups // 2) * 0.1 + 0.01).astype(F32)
    zps = r.integers(-4, 4, n_groups).astype(np.int64)
    want = qd.quantize_per_channel_group(t(x), t(scales), t(zps), -8, 7, torch.int8, group)
    got = nq.quantize(
        x, scales, zps, (1, group), -8, 7, np.int8, F32, zero_point_before_rounding=True
    )
    assert_same(got, want)
    want_dq = qd.dequantize_per_channel_group(
        t(got), t(scales), t(zps), -8, 7, torch.int8, group, torch.float32
    )
    assert_same(nq.dequantize(got, scales, zps, (1, group), np.float32), want_dq)


def test_zero_point_before_and_after_rounding_differ_at_ties():
    """Adding an integral zero point before or after rne gives the same integers except
    at exact ties with an odd zero point (rne rounds k + 0.5 to the even neighbour, and
    an odd zp flips which one that is): the two orders are different operations
    (`quantize_per_token` / `_per_channel_group` against the others), not an
    implementation detail; both match torch (test_quantize_per_tensor,
    test_quantize_dequantize_per_channel_group)."""
    x = with_ties((rng(8).standard_normal(4096) * 100).astype(F32), 0.25, 9)
    v = x * F32(4)
    tie = v - np.floor(v) == F32(0.5)
    for zp in (6, 7):
        before = nq.quantize(
            x,
            F32(0.25),
            zp,
            None,
            -(2**31),
            2**31 - 1,
            np.int64,
            F32,
            zero_point_before_rounding=True,
        )
        after = nq.quantize(x, F32(0.25), zp, None, -(2**31), 2**31 - 1, np.int64, F32)
        differ = before != after
        if zp % 2 == 0:
            assert not differ.any()
        else:
            assert tie.any()
            np.testing.assert_array_equal(differ, tie)


# ----- quantize / dequantize: torchao affine (block sizes) ---------------------------

BLOCKS = [
    ((6, 64), (6, 64)),  # per tensor
    ((6, 64), (1, 64)),  # per channel (rows)
    ((6, 64), (6, 1)),  # per column
    ((6, 64), (1, 16)),  # per group
    ((2, 3, 32), (1, 1, 32)),  # per token
    ((4, 8, 3, 3), (1, 4, 1, 1)),  # Intx conv weight: every tap its own scale
]


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("shape,block", BLOCKS)
def test_quantize_dequantize_affine(shape, block, dtype):
    """torchao's quantize_affine: the reciprocal in the scale's dtype, the product in
    promote(x, scale); dequantize_affine: `(q.to(o) - zp.to(o)) * scale`."""
    r = rng(10)
    x = (r.standard_normal(shape) * 3).astype(F32)
    grid = tuple(d // b for d, b in zip(shape, block, strict=True))
    scale = (r.random(grid) * 0.1 + 0.01).astype(dtype)
    scale.reshape(-1)[0] = 0.125
    x = np.clip(with_ties(x, 0.125, 11), -6e4, 6e4).astype(dtype)  # finite in f16
    zp = r.integers(-20, 20, grid).astype(np.int8)
    want = ao.quantize_affine(t(x), list(block), t(scale), t(zp), torch.int8, -128, 127)
    got = nq.quantize(x, scale, zp, block, -128, 127, np.int8)  # compute: promote(x, scale)
    assert_same(got, want)
    for out in (np.float32, np.float16):
        want_dq = ao.dequantize_affine(
            t(got), list(block), t(scale), t(zp), torch.int8, -128, 127, TORCH_OF[np.dtype(out)]
        )
        compute = np.promote_types(scale.dtype, out)
        assert_same(nq.dequantize(got, scale, zp, block, out, compute), want_dq)


@pytest.mark.parametrize("scale_value", [0.0, -0.05])
def test_quantize_affine_zero_and_negative_scale(scale_value):
    """A zero scale makes `1 / scale` inf (x * inf clamps to qmin / qmax; x = 0 gives
    NaN, left out as torch's cast of NaN is undefined); a negative one mirrors x."""
    x = (rng(12).standard_normal((4, 16)) * 3).astype(F32)
    x[x == 0] = 1.0
    scale = np.full((4, 1), scale_value, F32)
    zp = np.full((4, 1), 3, np.int32)
    want = ao.quantize_affine(t(x), [1, 16], t(scale), t(zp), torch.uint8, 0, 255)
    got = nq.quantize(x, scale, zp, (1, 16), 0, 255, np.uint8)
    assert_same(got, want)


def test_divide_rule_is_mils_quantize():
    """rule=DIVIDE computes `rne(x / scale)` (MIL quantize, MLIR qcast), which differs
    from torch's reciprocal product next to rounding boundaries: x within two ulps of
    (k + 0.5) * scale, where the two products round to different sides."""
    scale = F32(1 / 3)
    mid = ((np.arange(-127, 127) + F32(0.5)) * scale).astype(F32)
    up, down = np.nextafter(mid, F32(np.inf)), np.nextafter(mid, F32(-np.inf))
    x = np.concatenate(
        [mid, up, down, np.nextafter(up, F32(np.inf)), np.nextafter(down, F32(-np.inf))]
    )
    by_div = nq.quantize(x, scale, 0, None, -128, 127, np.int8, F32, rule=nq.DIVIDE)
    want = torch.clamp(torch.round(t(x) / float(scale)), -128, 127).to(torch.int8)
    assert_same(by_div, want)
    torch_q = qd.quantize_per_tensor.default(t(x), float(scale), 0, -128, 127, torch.int8)
    by_inv = nq.quantize(x, np.float64(scale), 0, None, -128, 127, np.int8, F32)
    assert_same(by_inv, torch_q)
    assert (by_div != by_inv).sum() > 10, "the two rules should differ next to ties"


def test_scaled_is_the_pre_rounding_value():
    x = (rng(14).standard_normal((3, 8)) * 3).astype(F32)
    s = np.array([0.1, 0.2, 0.3], F32)
    v = nq.scaled(x, s, (1, 8), F32)
    np.testing.assert_array_equal(v, x * (F32(1) / s)[:, None])
    np.testing.assert_array_equal(
        nq.quantize_scaled(v, None, -128, 127, np.int8),
        np.clip(np.round(v), -128, 127).astype(np.int8),
    )
    with pytest.raises(ValueError, match="unknown quantize rule"):
        nq.scaled(x, s, (1, 8), F32, rule="truncate")


# ----- choose_qparams --------------------------------------------------------------


def _choose_inputs(shape: tuple[int, ...], seed: int) -> list[np.ndarray]:
    r = rng(seed)
    x = (r.standard_normal(shape) * 2 + 0.3).astype(F32)
    positive = np.abs(x) + F32(0.01)
    zeros = np.zeros(shape, F32)
    constant = np.full(shape, -0.7, F32)
    mixed = x.copy()
    mixed.reshape(shape[0], -1)[0] = 0  # one all-zero row / block
    return [x, positive, zeros, constant, mixed]


@pytest.mark.parametrize("eps", [2**-12, 1e-5, 0.0])
@pytest.mark.parametrize(
    "dtype,qmin,qmax", [(torch.int8, -128, 127), (torch.uint8, 0, 255), (torch.int8, -8, 7)]
)
def test_choose_qparams_tensor(dtype, qmin, qmax, eps):
    """quantized_decomposed.choose_qparams.tensor: per tensor, asymmetric, in f32,
    eps f32-rounded; f64 scale, i64 zero point."""
    for x in _choose_inputs((5, 24), 15):
        if eps == 0.0 and not x.any():
            continue  # torch divides 0 / 0 for the zero point (undefined cast of NaN)
        s, z = qd.choose_qparams.tensor(t(x), qmin, qmax, eps, dtype)
        gs, gz = nq.choose_qparams(x, x.shape, qmin, qmax, nq.ASYMMETRIC, eps, np.float64, np.int64)
        assert_same(gs.reshape(-1), s)
        assert_same(gz.reshape(-1), z)


@pytest.mark.parametrize(
    "dtype,qmin,qmax", [(torch.int8, -128, 127), (torch.int8, -127, 127), (torch.uint8, 0, 255)]
)
def test_choose_qparams_symmetric_tensor(dtype, qmin, qmax):
    """choose_qparams_symmetric.tensor on the ranges where torch's zero point (128 for
    uint8, else 0) is torchao's `int((qmax + qmin + 1) / 2)`; the frontend refuses the
    others (test_decomposed_symmetric_zero_point_mismatch_is_refused)."""
    for x in _choose_inputs((5, 24), 16):
        s, z = qd.choose_qparams_symmetric.tensor(t(x), qmin, qmax, 2**-12, dtype)
        gs, gz = nq.choose_qparams(
            x, x.shape, qmin, qmax, nq.SYMMETRIC, 2**-12, np.float64, np.int64
        )
        assert_same(gs.reshape(-1), s)
        assert_same(gz.reshape(-1), z)


@pytest.mark.parametrize("mapping", ["ASYMMETRIC", "SYMMETRIC", "SYMMETRIC_NO_CLIPPING_ERR"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize(
    "shape,block",
    [((6, 64), (1, 64)), ((6, 64), (1, 16)), ((2, 3, 32), (1, 1, 32)), ((6, 64), (6, 64))],
)
@pytest.mark.parametrize(
    "target,qmin,qmax", [(torch.int8, -128, 127), (torch.int8, -8, 7), (torch.uint8, 0, 255)]
)
def test_choose_qparams_affine(shape, block, dtype, mapping, target, qmin, qmax):
    """torchao's choose_qparams_affine: min/max per block in x's dtype, eps defaults
    to finfo(x).smallest_normal, scale in x's dtype, zero point i32 (quant_min 0 with
    SYMMETRIC_NO_CLIPPING_ERR included: mn / 0 is -inf or NaN and mx / qmax wins)."""
    for x in _choose_inputs(shape, 17):
        x = x.astype(dtype)
        eps = float(np.finfo(dtype).smallest_normal)
        s, z = ao.choose_qparams_affine(
            t(x), mapping, list(block), target, qmin, qmax, None, None, torch.int32
        )
        gs, gz = nq.choose_qparams(x, block, qmin, qmax, mapping.lower(), eps, dtype, np.int32)
        assert_same(gs.reshape(s.shape), s)
        assert_same(gz.reshape(z.shape), z)


def test_choose_qparams_then_quantize_per_token():
    """The dynamic chain of Int8DynamicActivationIntxWeightConfig: choose per token,
    quantize and dequantize with the chosen parameters."""
    x = (rng(18).standard_normal((2, 5, 32)) * 2).astype(F32)
    block = [1, 1, 32]
    s, z = ao.choose_qparams_affine(
        t(x), "ASYMMETRIC", block, torch.int8, -128, 127, None, None, torch.int8
    )
    q = ao.quantize_affine(t(x), block, s, z, torch.int8, -128, 127)
    dq = ao.dequantize_affine(q, block, s, z, torch.int8, -128, 127)
    eps = float(np.finfo(F32).smallest_normal)
    gs, gz = nq.choose_qparams(x, block, -128, 127, nq.ASYMMETRIC, eps, F32, np.int8)
    gq = nq.quantize(x, gs, gz, block, -128, 127, np.int8)
    assert_same(gs.reshape(s.shape), s)
    assert_same(gz.reshape(z.shape), z)
    assert_same(gq, q)
    assert_same(nq.dequantize(gq, gs, gz, block, F32), dq)


def test_choose_qparams_unknown_mapping():
    with pytest.raises(ValueError, match="unknown choose_qparams mapping"):
        nq.choose_qparams(np.ones((2, 2), F32), (2, 2), -128, 127, "minmax", 1e-5, F32, np.int32)


def test_decomposed_symmetric_zero_point_mismatch_is_refused():
    """torch's choose_qparams_symmetric gives zp 128 for uint8 and 0 otherwise,
    whatever the range; where torchao's rule differs (a custom uint8 range, uint16)
    the frontend refuses the op instead of computing a different zero point."""
    import qopt

    assert nq.symmetric_zero_point(0, 255) == 128
    assert nq.symmetric_zero_point(-127, 127) == 0
    x = torch.randn(3, 8, generator=torch.Generator().manual_seed(19))
    _, z = qd.choose_qparams_symmetric.tensor(x, 0, 127, 2**-12, torch.uint8)
    assert int(z) == 128 != nq.symmetric_zero_point(0, 127)

    class M(torch.nn.Module):
        def forward(self, x):
            return qd.choose_qparams_symmetric.tensor(x, 0, 127, 2**-12, torch.uint8)

    ep = torch.export.export(M(), (x,))
    with pytest.raises(QoptError, match="zero point 128"):
        qopt.import_program(ep)


# ----- codebooks -------------------------------------------------------------------


@pytest.mark.parametrize("out", [np.float32, np.float16])
@pytest.mark.parametrize(
    "shape,block,nbits",
    [
        ((8, 32), [-1, 8], 4),
        ((8, 32), [2, -1], 3),
        ((8, 32), [-1, -1], 1),
        ((4, 6), [1, 2], 8),
        ((2, 4, 6), [1, -1, 3], 2),
    ],
)
def test_dequantize_codebook(shape, block, nbits, out):
    """torchao's quant.dequantize_codebook: codebook[i0 // b0, ..., codes[i], 0]."""
    r = rng(20)
    codes = r.integers(0, 2**nbits, shape).astype(np.int32)
    full = [d if b == -1 else b for b, d in zip(block, shape, strict=True)]
    grid = tuple(d // b for d, b in zip(shape, full, strict=True))
    book = r.standard_normal((*grid, 2**nbits, 1))  # float64, as torchao fits it
    want = torch.ops.quant.dequantize_codebook(
        t(codes), t(book), nbits, block, TORCH_OF[np.dtype(out)]
    )
    assert_same(nq.dequantize_codebook(codes, book, block, out), want)


def test_lut_to_dense_vectors_and_palettes():
    """MIL's iOS18 constexpr_lut_to_dense: one palette per block, V > 1 expands the
    output along vector_axis (the same lookup as the codebook)."""
    r = rng(21)
    idx = r.integers(0, 4, (4, 6)).astype(np.uint8)
    lut = r.standard_normal((2, 3, 4, 1)).astype(F32)
    want = lut[np.arange(4)[:, None] // 2, np.arange(6)[None, :] // 2, idx, 0]
    np.testing.assert_array_equal(nq.lut_to_dense(idx, lut), want)
    vec = r.standard_normal((1, 1, 4, 2)).astype(F32)
    dense = nq.lut_to_dense(idx, vec, vector_axis=1)
    assert dense.shape == (4, 12)
    np.testing.assert_array_equal(dense[:, 0::2], vec[0, 0, idx, 0])
    np.testing.assert_array_equal(dense[:, 1::2], vec[0, 0, idx, 1])
    with pytest.raises(ValueError, match="vector_axis"):
        nq.lut_to_dense(idx, vec)


# ----- activations -----------------------------------------------------------------


def _act_inputs(dtype) -> np.ndarray:
    r = rng(22)
    x = np.concatenate(
        [r.standard_normal(20000) * 3, r.uniform(-12, 12, 20000), [0.0, -0.0, -3.0, 3.0]]
    )
    return x.astype(dtype)


@pytest.mark.parametrize(
    "name,ours,theirs",
    [
        ("hardswish", act.hardswish, torch.nn.functional.hardswish),
        ("hardsigmoid", act.hardsigmoid, torch.nn.functional.hardsigmoid),
        (
            "leaky_relu",
            lambda x: act.leaky_relu(x, 0.01),
            lambda x: torch.nn.functional.leaky_relu(x, 0.01),
        ),
        (
            "leaky_relu_neg",
            lambda x: act.leaky_relu(x, -0.2),
            lambda x: torch.nn.functional.leaky_relu(x, -0.2),
        ),
    ],
)
def test_rational_activations_bit_exact(name, ours, theirs):
    x = _act_inputs(F32)
    assert_same(ours(x), theirs(t(x)))


@pytest.mark.parametrize(
    "name,ours,theirs,tol",
    [
        ("sigmoid", act.sigmoid, torch.sigmoid, 5e-7),
        ("silu", act.silu, torch.nn.functional.silu, 5e-7),
        ("erf", act.erf, torch.erf, 1.2e-7),
        ("gelu", act.gelu, torch.nn.functional.gelu, 5e-7),
        (
            "gelu_tanh",
            lambda x: act.gelu(x, "tanh"),
            lambda x: torch.nn.functional.gelu(x, approximate="tanh"),
            5e-7,
        ),
    ],
)
def test_transcendental_activations_close(name, ours, theirs, tol):
    """Same operation order as torch's CPU kernels; only exp / tanh / erf themselves
    differ (numpy's and SciPy's against torch's vectorized approximations), within
    `tol * (|x| + 1)` (a relative bound would fail where GELU's `1 + erf` cancels: there
    torch's vectorized erf is the less accurate of the two)."""
    x = _act_inputs(F32)
    got, want = ours(x), theirs(t(x)).numpy()
    assert got.dtype == np.float32
    err = np.abs(got.astype(np.float64) - want.astype(np.float64))
    assert (err <= tol * (np.abs(x) + 1)).all(), err.max()


def test_silu_and_gelu_follow_torchs_order():
    """x / (1 + exp(-x)) matches torch's SiLU far more often than x * sigmoid(x); the
    exact GELU is `x * 0.5 * (1 + erf(x * f32(1 / sqrt(2))))` bit for bit when both
    use the same erf (torch's)."""
    x = _act_inputs(F32)
    want = torch.nn.functional.silu(t(x)).numpy()
    ours = np.mean(act.silu(x) == want)
    product = np.mean(x * act.sigmoid(x) == want)
    assert ours > product
    tx = t(x)
    formula = tx * 0.5 * (1 + torch.erf(tx * 0.7071067811865476))
    assert_same(act.gelu(x, erf=lambda v: torch.erf(t(v)).numpy()), formula)
    tanh_formula = (
        0.5 * tx * (1 + torch.tanh(0.7978845608028654 * (tx + 0.044715 * (tx * tx * tx))))
    )
    assert_same(act.gelu(x, "tanh", tanh=lambda v: torch.tanh(t(v)).numpy()), tanh_formula)


def test_gelu_modes():
    x = _act_inputs(F32)
    np.testing.assert_array_equal(act.gelu(x, "sigmoid"), x / (1 + np.exp(F32(-1.702) * x)))
    assert act.gelu(x.astype(np.float16)).dtype == np.float16
    with pytest.raises(ValueError, match="GELU approximation"):
        act.gelu(x, "cubic")


# ----- sub-byte bit streams ---------------------------------------------------------


@pytest.mark.parametrize(
    "nbits,signed",
    [(1, False), (2, False), (3, False), (4, True), (4, False), (6, False), (8, True)],
)
def test_bit_stream_matches_coremltools(nbits, signed):
    """LSB-first streams, values straddling bytes, as coremltools packs them."""
    from coremltools.optimize._utils import pack_elements_into_bits

    r = rng(23)
    lo, hi = (-(2 ** (nbits - 1)), 2 ** (nbits - 1)) if signed else (0, 2**nbits)
    values = r.integers(lo, hi, 1001).astype(np.int8 if signed else np.uint8)
    packed = bits.pack_bits(values, nbits)
    assert packed.size == bits.packed_nbytes(values.size, nbits)
    np.testing.assert_array_equal(packed, pack_elements_into_bits(values, nbits))
    np.testing.assert_array_equal(bits.unpack_bits(packed, nbits, values.size, signed), values)
    np.testing.assert_array_equal(
        bits.unpack_bits(packed.tobytes(), nbits, values.size, signed), values
    )


def test_bit_stream_unpacks_in_chunks(monkeypatch):
    """A stream longer than UNPACK_CHUNK is unpacked a chunk at a time, with the
    same values (chunks start on a byte boundary)."""
    values = rng(24).integers(0, 8, 1000).astype(np.uint8)
    packed = bits.pack_bits(values, 3)
    monkeypatch.setattr(bits, "UNPACK_CHUNK", 64)
    np.testing.assert_array_equal(bits.unpack_bits(packed, 3, values.size, False), values)


# ----- IR core: constant decoding and tensor helpers --------------------------------


def _module_with(*ops):
    module = ModuleOp(list(ops))
    return module


def test_elements_array_dense_splat_bool_and_storage_dtype():
    splat = DenseIntOrFPElementsAttr(TensorType(f32, [2, 3]), BytesAttr(F32(1.5).tobytes()))
    op = ConstantOp(splat, TensorType(f32, [2, 3]))  # pyright: ignore[reportArgumentType]
    np.testing.assert_array_equal(elements_array(splat, op), np.full((2, 3), 1.5, F32))
    flags = DenseIntOrFPElementsAttr(TensorType(i1, [3]), BytesAttr(bytes([1, 0, 1])))
    got = elements_array(flags, op)
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got, [True, False, True])
    raw = DenseIntOrFPElementsAttr(TensorType(i8, [4]), BytesAttr(bytes([0xF8, 7, 0, 1])))
    assert elements_array(raw, op).tolist() == [-8, 7, 0, 1]
    assert elements_array(raw, op, np.dtype(np.uint8)).tolist() == [248, 7, 0, 1]


def test_elements_array_resources_and_missing_blobs():
    store = WeightStore()
    value = np.arange(6, dtype=np.int32).reshape(2, 3)
    type = TensorType(i32, [2, 3])
    attr = make_resource("w", value, type, store)
    op = ConstantOp(attr, type)  # pyright: ignore[reportArgumentType]
    attach(_module_with(op), store)
    np.testing.assert_array_equal(elements_array(attr, op), value)
    store.set_bytes("w", value.tobytes())  # a blob parsed from text
    np.testing.assert_array_equal(elements_array(attr, op), value)
    other = ConstantOp(attr, type)  # pyright: ignore[reportArgumentType]
    attach(_module_with(other), WeightStore())  # its module does not hold the blob
    with pytest.raises(QoptError, match="--print-weights"):
        elements_array(attr, other)


def test_tensor_helpers():
    type = TensorType(f32, [2, 3, 4])
    op = ConstantOp(
        DenseIntOrFPElementsAttr(type, BytesAttr(F32(0).tobytes())),  # pyright: ignore[reportArgumentType]
        type,
    )
    for v in (op.result, type):
        assert shape_of(v) == (2, 3, 4)
        assert elem_of(v) == f32
        assert dtype_of(v) == np.float32
        assert numel(v) == 24
    assert numel(()) == 1
    assert numel([5, 0, 2]) == 0
    with pytest.raises(VerifyException, match="expected a tensor"):
        shape_of(f32)


def test_expand_params_layouts():
    """Block parameters in row-major reduced order; flat and grid-shaped both work."""
    p = np.arange(6)
    grid = nq.expand_params(p, (2, 4), (4, 12))
    assert grid.shape == (4, 12)
    assert grid[3, 11] == p.reshape(2, 3)[1, 2]
    np.testing.assert_array_equal(grid, nq.expand_params(p.reshape(2, 3), (2, 4), (4, 12)))
    assert nq.expand_params(p, None, (4, 12)) is not None
    assert math.prod(nq.block_view(np.zeros((4, 12)), (2, 4)).shape) == 48


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64])
def test_int_pow_is_torchs_powi(dtype):
    """Negative exponents (0, or +-1 for a base of +-1), results beyond 2**24 (exact,
    not through float) and wrapping overflow, as torch.pow of integer tensors."""
    from qopt.numerics.integers import int_pow

    base = torch.arange(-9, 10, dtype=dtype).reshape(-1, 1)
    exponent = torch.tensor([-5, -2, -1, 0, 1, 2, 3, 8, 9, 31, 63], dtype=dtype)
    got = int_pow(base.numpy(), exponent.numpy())
    want = torch.pow(base, exponent).numpy()
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
