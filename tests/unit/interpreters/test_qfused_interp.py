"""The reference semantics of every `qfused` op, checked against an independent
torch computation: weights dequantized by their formula (or by torchao's
`quant.dequantize_codebook`), activations quantized with
`quantized_decomposed.*` / torchao's `*_affine` primitives, then `F.linear`,
`F.conv2d`, `F.embedding` or an add. Integer results must be equal, float
results within float32 rounding of the float64 reference."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from xdsl.dialects.builtin import (
    DenseArrayBase,
    FloatAttr,
    FunctionType,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    i64,
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, Region

import qopt
from qopt.dialects import qfused
from qopt.dtypes import tensor_type

QD = torch.ops.quantized_decomposed
F32_EPS = float(torch.finfo(torch.float32).eps)


# ----- building and running one fused op ------------------------------------------------


def run_fused(
    op_cls: type[qfused.QFusedOp],
    operands: list[np.ndarray | None],
    result: tuple[tuple[int, ...], object],
    properties: dict[str, Attribute],
) -> tuple[np.ndarray, str]:
    """Build `op_cls` in a one-op `@forward` whose arguments are the present
    operands, interpret it, and return (result, kernel name)."""
    present = [np.ascontiguousarray(a) for a in operands if a is not None]
    types = [tensor_type(a.dtype, a.shape) for a in present]
    block = Block(arg_types=types)
    args = iter(block.args)
    shape, dtype = result
    result_type = tensor_type(np.dtype(dtype), shape)  # pyright: ignore[reportArgumentType]
    op = op_cls.build(
        operands=[None if a is None else next(args) for a in operands],
        result_types=[result_type],
        properties=dict(properties),
    )
    op.properties["kernel"] = StringAttr(op.kernel_name())
    block.add_ops([op, ReturnOp(op.results[0])])
    func = FuncOp("forward", FunctionType.from_lists(types, [result_type]), Region(block))
    module = ModuleOp([func])
    module.verify()
    (out,) = qopt.interpret(module, *present)
    return out, op.kernel_name()


def rel_err(got: np.ndarray, want: torch.Tensor | np.ndarray) -> float:
    w = np.asarray(want, dtype=np.float64)
    g = np.asarray(got, dtype=np.float64)
    return float(np.linalg.norm(g - w) / max(np.linalg.norm(w), 1e-30))


def static(scale: float, zp: int, qmin: int = -128, qmax: int = 127) -> qfused.StaticQParamsAttr:
    return qfused.StaticQParamsAttr.get(scale, zp, qmin, qmax)


def q_per_tensor(x: torch.Tensor, act: qfused.StaticQParamsAttr) -> torch.Tensor:
    return QD.quantize_per_tensor(
        x, act.scale.value.data, act.zero_point.data, act.qmin.data, act.qmax.data, torch.int8
    )


def dq_per_tensor(q: torch.Tensor, act: qfused.StaticQParamsAttr) -> torch.Tensor:
    return QD.dequantize_per_tensor(
        q, act.scale.value.data, act.zero_point.data, act.qmin.data, act.qmax.data, torch.int8
    )


# ----- weights ------------------------------------------------------------------------------


def affine_weight(
    shape: tuple[int, ...], bits: int, group: int | None, symmetric: bool, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, torch.Tensor, qfused.AffineWeightAttr]:
    """Random packed affine weight (rows = output channels; `group` None = per channel
    over all other dims) and its float64 value by the formula."""
    g = torch.Generator().manual_seed(seed)
    qmin, qmax = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    if bits == 8 and symmetric:
        qmin = -127
    rest = int(np.prod(shape[1:]))
    group = rest if group is None else group
    block = (1, *shape[1:]) if group == rest else (1, group)
    data = torch.randint(qmin, qmax + 1, shape, generator=g, dtype=torch.int8)
    grid = tuple(d // b for d, b in zip(shape, block, strict=True))
    scale = (torch.rand(grid, generator=g) * 0.05 + 0.01).float()
    zp = None if symmetric else torch.randint(qmin, qmax + 1, grid, generator=g, dtype=torch.int8)
    # Formula: w = (q - zp) * scale, scale/zp repeated over each block.
    scale_full, zp_full = scale.double(), None if zp is None else zp.double()
    for axis, b in enumerate(block):
        scale_full = scale_full.repeat_interleave(b, dim=axis)
        if zp_full is not None:
            zp_full = zp_full.repeat_interleave(b, dim=axis)
    w = data.double() - (0 if zp_full is None else zp_full)
    w = w * scale_full
    scheme = qfused.AffineWeightAttr.get(qmin, qmax, block)
    return (
        data.numpy(),
        scale.numpy(),
        None if zp is None else zp.numpy(),
        w,
        scheme,
    )


def lut_weight(
    shape: tuple[int, int], nbits: int, seed: int
) -> tuple[np.ndarray, np.ndarray, torch.Tensor, qfused.LutWeightAttr]:
    """Codes [N, K] and a codebook per 16 columns (block [-1, 16]); the float value
    by torchao's `quant.dequantize_codebook`."""
    import torchao.prototype.quantization.codebook_coreml  # noqa: F401  (registers quant::)

    g = torch.Generator().manual_seed(seed)
    _, k = shape
    codes = torch.randint(0, 2**nbits, shape, generator=g, dtype=torch.uint8)
    codebook = torch.randn((1, k // 16, 2**nbits, 1), generator=g)
    w = torch.ops.quant.dequantize_codebook(codes.int(), codebook, nbits, [-1, 16], torch.float32)
    return codes.numpy(), codebook.numpy(), w.double(), qfused.LutWeightAttr.get(nbits, [-1, 16])


def randn(shape: tuple[int, ...], seed: int, scale: float = 1.0) -> torch.Tensor:
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed)) * scale


# ----- linear -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("bits", "group", "symmetric", "kernel"),
    [
        (4, 32, True, "linear_q4gsw"),
        (4, 32, False, "linear_q4gaw"),
        (4, None, True, "linear_q4csw"),
        (8, None, True, "linear_q8csw"),
        (8, None, False, "linear_q8caw"),
        (8, 16, True, "linear_q8gsw"),
    ],
)
@pytest.mark.parametrize("bias", [False, True])
def test_linear_weight_only_affine(bits, group, symmetric, kernel, bias):
    data, scale, zp, w, scheme = affine_weight((24, 64), bits, group, symmetric, seed=1)
    x = randn((2, 3, 64), seed=2)
    b = randn((24,), seed=3) if bias else None
    got, name = run_fused(
        qfused.LinearOp,
        [x.numpy(), data, scale, zp, None if b is None else b.numpy()],
        ((2, 3, 24), np.float32),
        {"weight_scheme": scheme},
    )
    want = F.linear(x.double(), w, None if b is None else b.double())
    assert name == kernel
    assert got.dtype == np.float32
    assert rel_err(got, want) < 1e-6


@pytest.mark.parametrize("nbits", [2, 3, 4])
def test_linear_lut(nbits):
    codes, codebook, w, scheme = lut_weight((16, 48), nbits, seed=4)
    x = randn((5, 48), seed=5)
    got, name = run_fused(
        qfused.LinearOp,
        [x.numpy(), codes, codebook, None, None],
        ((5, 16), np.float32),
        {"weight_scheme": scheme},
    )
    assert name == f"linear_lut{nbits}w"
    assert rel_err(got, F.linear(x.double(), w)) < 1e-6


def _static_reference(
    x: torch.Tensor,
    w: torch.Tensor,
    bias: torch.Tensor | None,
    act: qfused.StaticQParamsAttr,
    requant: qfused.StaticQParamsAttr | None,
    clamp: tuple[float | None, float | None],
    conv: dict | None = None,
) -> torch.Tensor:
    q = x if x.dtype == torch.int8 else q_per_tensor(x, act)
    xd = dq_per_tensor(q, act).double()
    b = None if bias is None else bias.double()
    y = F.linear(xd, w, b) if conv is None else F.conv2d(xd, w, b, **conv)
    y = y.float()
    lo, hi = clamp
    if lo is not None or hi is not None:
        y = torch.clamp(y, lo, hi)
    return y if requant is None else q_per_tensor(y, requant)


def _clamp_props(clamp: tuple[float | None, float | None]) -> dict[str, Attribute]:
    props: dict[str, Attribute] = {}
    if clamp[0] is not None:
        props["clamp_min"] = FloatAttr(clamp[0], 64)
    if clamp[1] is not None:
        props["clamp_max"] = FloatAttr(clamp[1], 64)
    return props


@pytest.mark.parametrize(
    ("requant", "clamp", "kernel"),
    [
        (None, (None, None), "linear_q8ta_q8csw"),
        (static(0.25, 3), (None, None), "linear_q8ta_q8csw_q8to"),
        (static(0.2, -128), (0.0, None), "linear_q8ta_q8csw_q8to"),  # fused ReLU
        (static(0.1, -10), (-6.0, 9.5), "linear_q8ta_q8csw_q8to"),  # hardtanh-like clamp
    ],
)
@pytest.mark.parametrize("int_input", [False, True])
def test_linear_static(requant, clamp, kernel, int_input):
    data, scale, _, w, scheme = affine_weight((32, 64), 8, None, True, seed=6)
    act = static(0.021, 5)
    x = randn((4, 64), seed=7)
    bias = randn((32,), seed=8, scale=0.1)
    xin = q_per_tensor(x, act) if int_input else x
    out_dtype = np.float32 if requant is None else np.int8
    props: dict[str, Attribute] = {"weight_scheme": scheme, "act": act, **_clamp_props(clamp)}
    if requant is not None:
        props["requant"] = requant
    got, name = run_fused(
        qfused.LinearOp,
        [xin.numpy(), data, scale, None, bias.numpy()],
        ((4, 32), out_dtype),
        props,
    )
    want = _static_reference(xin, w, bias, act, requant, clamp)
    assert name == kernel
    if requant is None:
        assert rel_err(got, want) < 1e-6
    else:
        assert got.dtype == np.int8
        np.testing.assert_array_equal(got, want.numpy())
        assert len(np.unique(got)) > 30  # a real range of values, not all clamped


def _dynamic_act(
    granularity: str, mapping: str, eps: float, scale_type: Attribute
) -> qfused.DynamicQParamsAttr:
    return qfused.DynamicQParamsAttr.get(granularity, mapping, -128, 127, eps, scale_type)


@pytest.mark.parametrize("mapping", ["asymmetric", "symmetric"])
def test_linear_dynamic_per_token(mapping):
    """8da4w: torchao's choose_qparams_affine / quantize_affine / dequantize_affine per token."""
    from torchao.quantization.quant_primitives import (
        MappingType,
        choose_qparams_affine,
        dequantize_affine,
        quantize_affine,
    )
    from xdsl.dialects.builtin import f32

    data, scale, _, w, scheme = affine_weight((48, 64), 4, 32, True, seed=9)
    x = randn((2, 3, 64), seed=10) + 0.3  # asymmetric ranges: nonzero zero points
    eps = float(torch.finfo(torch.float32).tiny)
    block = (1, 1, 64)
    mapping_type = MappingType.ASYMMETRIC if mapping == "asymmetric" else MappingType.SYMMETRIC
    s, z = choose_qparams_affine(
        x, mapping_type, block, torch.int8, -128, 127, eps, torch.float32, torch.int8
    )
    q = quantize_affine(x, block, s, z, torch.int8, -128, 127)
    xd = dequantize_affine(q, block, s, z, torch.int8, -128, 127).double()
    act = _dynamic_act("per_token", mapping, eps, f32)
    got, name = run_fused(
        qfused.LinearOp,
        [x.numpy(), data, scale, None, None],
        ((2, 3, 48), np.float32),
        {"weight_scheme": scheme, "act": act},
    )
    assert name == "linear_dq8ca_q4gsw"
    # One quantization step of one activation moves the result by ~1e-3: this
    # tolerance only admits float rounding.
    assert rel_err(got, F.linear(xd, w)) < 1e-6


def test_linear_dynamic_per_tensor():
    """PT2E dynamic: quantized_decomposed.choose_qparams.tensor (scale in f64)."""
    from xdsl.dialects.builtin import f64

    data, scale, _, w, scheme = affine_weight((16, 32), 8, None, True, seed=11)
    x = randn((6, 32), seed=12) - 0.7
    eps = F32_EPS
    s, z = QD.choose_qparams.tensor(x, -128, 127, eps, torch.int8)
    q = QD.quantize_per_tensor.tensor(x, s, z, -128, 127, torch.int8)
    xd = QD.dequantize_per_tensor.tensor(q, s, z, -128, 127, torch.int8).double()
    act = _dynamic_act("per_tensor", "asymmetric", eps, f64)
    bias = randn((16,), seed=13)
    got, name = run_fused(
        qfused.LinearOp,
        [x.numpy(), data, scale, None, bias.numpy()],
        ((6, 16), np.float32),
        {"weight_scheme": scheme, "act": act},
    )
    assert name == "linear_dq8ta_q8csw"
    assert rel_err(got, F.linear(xd, w, bias.double())) < 1e-6


# ----- conv2d -------------------------------------------------------------------------------


CONV_CASES = [
    # (in_ch, out_ch, kernel, stride, padding, dilation, groups)
    (4, 8, 3, 1, 1, 1, 1),
    (4, 8, 3, 2, 1, 1, 2),
    (6, 6, 3, 1, 2, 2, 6),  # depthwise, dilated
    (8, 4, 1, 1, 0, 1, 1),  # pointwise
    (3, 5, (3, 2), (2, 1), (0, 1), 1, 1),
]


def _pair(v) -> tuple[int, int]:
    return (v, v) if isinstance(v, int) else tuple(v)


def _conv_props(stride, padding, dilation, groups) -> dict[str, Attribute]:
    return {
        "stride": DenseArrayBase.from_list(i64, _pair(stride)),
        "padding": DenseArrayBase.from_list(i64, _pair(padding)),
        "dilation": DenseArrayBase.from_list(i64, _pair(dilation)),
        "groups": IntegerAttr(groups, i64),
    }


def _conv_out(size: int, k: int, s: int, p: int, d: int) -> int:
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


@pytest.mark.parametrize("case", CONV_CASES)
@pytest.mark.parametrize("mode", ["weight_only", "static", "static_requant_relu"])
def test_conv2d(case, mode):
    ic, oc, k, stride, padding, dilation, groups = case
    kh, kw = _pair(k)
    symmetric = mode != "weight_only"  # weight-only also covers asymmetric weights
    data, scale, zp, w, scheme = affine_weight((oc, ic // groups, kh, kw), 8, None, symmetric, 14)
    x = randn((2, ic, 9, 8), seed=15)
    bias = randn((oc,), seed=16, scale=0.1)
    conv = {
        "stride": _pair(stride),
        "padding": _pair(padding),
        "dilation": _pair(dilation),
        "groups": groups,
    }
    (sh, sw), (ph, pw), (dh, dw) = conv["stride"], conv["padding"], conv["dilation"]
    out_shape = (2, oc, _conv_out(9, kh, sh, ph, dh), _conv_out(8, kw, sw, pw, dw))
    props: dict[str, Attribute] = {
        "weight_scheme": scheme,
        **_conv_props(stride, padding, dilation, groups),
    }
    act = static(0.02, -3)
    requant = static(0.04, -128) if mode == "static_requant_relu" else None
    clamp = (0.0, None) if requant is not None else (None, None)
    if mode != "weight_only":
        props["act"] = act
    if requant is not None:
        props["requant"] = requant
        props.update(_clamp_props(clamp))
    got, name = run_fused(
        qfused.Conv2dOp,
        [
            x.numpy(),
            data,
            scale.reshape(oc, 1, 1, 1),
            zp if zp is None else zp.reshape(oc, 1, 1, 1),
            bias.numpy(),
        ],
        (out_shape, np.int8 if requant is not None else np.float32),
        props,
    )
    if mode == "weight_only":
        want = F.conv2d(x.double(), w, bias.double(), **conv)
        assert name == "conv2d_q8caw"
        assert rel_err(got, want) < 1e-6
        return
    want = _static_reference(x, w, bias, act, requant, clamp, conv)
    if requant is None:
        assert name == "conv2d_q8ta_q8csw"
        assert rel_err(got, want) < 1e-6
    else:
        assert name == "conv2d_q8ta_q8csw_q8to"
        np.testing.assert_array_equal(got, want.numpy())
        assert len(np.unique(got)) > 30


# ----- embedding ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("bits", "group", "symmetric", "kernel"),
    [
        (4, 32, True, "embedding_q4gsw"),
        (4, 32, False, "embedding_q4gaw"),
        (8, None, True, "embedding_q8csw"),
        (8, 16, False, "embedding_q8gaw"),
    ],
)
def test_embedding_affine(bits, group, symmetric, kernel):
    data, scale, zp, w, scheme = affine_weight((50, 64), bits, group, symmetric, seed=17)
    idx = torch.randint(0, 50, (3, 7), generator=torch.Generator().manual_seed(18))
    got, name = run_fused(
        qfused.EmbeddingOp,
        [idx.numpy(), data, scale, zp],
        ((3, 7, 64), np.float32),
        {"weight_scheme": scheme},
    )
    assert name == kernel
    # The dequantized table in float32, as torchao's dequantize_affine computes it.
    assert rel_err(got, F.embedding(idx, w.float())) < 1e-7


@pytest.mark.parametrize("nbits", [3, 4])
def test_embedding_lut(nbits):
    codes, codebook, w, scheme = lut_weight((40, 32), nbits, seed=19)
    idx = torch.randint(0, 40, (9,), generator=torch.Generator().manual_seed(20))
    got, name = run_fused(
        qfused.EmbeddingOp,
        [idx.numpy(), codes, codebook, None],
        ((9, 32), np.float32),
        {"weight_scheme": scheme},
    )
    assert name == f"embedding_lut{nbits}w"
    np.testing.assert_array_equal(got, F.embedding(idx, w.float()).numpy())


# ----- add ----------------------------------------------------------------------------------


@pytest.mark.parametrize("alpha", [None, 0.5, -2.0])
@pytest.mark.parametrize("relu", [False, True])
@pytest.mark.parametrize("int_inputs", [False, True])
@pytest.mark.parametrize("requant", [True, False])
def test_add(alpha, relu, int_inputs, requant):
    lhs_act, rhs_act, out = static(0.03, 4), static(0.05, -7), static(0.06, -2)
    a = randn((2, 4, 5, 5), seed=21)
    b = randn((4, 1, 5), seed=22)  # broadcasts
    if int_inputs:
        a, b = q_per_tensor(a, lhs_act), q_per_tensor(b, rhs_act)
    props: dict[str, Attribute] = {"lhs_act": lhs_act, "rhs_act": rhs_act}
    if alpha is not None:
        props["alpha"] = FloatAttr(alpha, 64)
    if relu:
        props["clamp_min"] = FloatAttr(0.0, 64)
    if requant:
        props["requant"] = out
    got, name = run_fused(
        qfused.AddOp,
        [a.numpy(), b.numpy()],
        ((2, 4, 5, 5), np.int8 if requant else np.float32),
        props,
    )
    qa = a if int_inputs else q_per_tensor(a, lhs_act)
    qb = b if int_inputs else q_per_tensor(b, rhs_act)
    y = torch.add(
        dq_per_tensor(qa, lhs_act),
        dq_per_tensor(qb, rhs_act),
        alpha=1.0 if alpha is None else alpha,
    )
    if relu:
        y = torch.relu(y)
    assert name == ("add_q8ta_q8ta_q8to" if requant else "add_q8ta_q8ta")
    if requant:
        np.testing.assert_array_equal(got, q_per_tensor(y, out).numpy())
        assert len(np.unique(got)) > 30
    else:
        assert rel_err(got, y) < 1e-6
