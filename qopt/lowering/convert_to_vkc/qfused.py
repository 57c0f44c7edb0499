"""convert-to-vkc rules of the fused quantized ops (qfused), onto the fused kernels.

Weights are repacked at compile time with qopt/kernels/packing.py into
the layout each kernel reads (int4 eight per word, int8 four per word, LUT codes
at their field width; zero points as `zp - lo`). The kernel is chosen from the
op's schemes (`qfused` kernel name -> catalogue kernel + specialization
constants); a scheme no kernel implements is a QoptError naming the op.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import f32, f64
from xdsl.ir import SSAValue

from qopt.dialects import qfused
from qopt.dialects.tensors import numel, shape_of
from qopt.kernels import catalogue, packing
from qopt.kernels.linalg import conv_tile
from qopt.kernels.opcodes import CONV_ACT, MAPPINGS
from qopt.kernels.qlinear import (
    dq8ca_tile,
    linear_tile,
    lut_palette,
    lut_tile,
    lut_uniform,
    lut_vec4,
    q8ta_tile,
    w_texel,
    x_texel,
    x_uniform,
)
from qopt.lowering.convert_to_vkc.lowering import (
    Buf,
    Lowering,
    RuleTable,
    abi_dtype,
    broadcast_strides,
    copy_strided,
    unsupported,
)
from qopt.numerics.quant import reciprocal

F32 = np.float32
RULES = RuleTable()
QFusedOp = qfused.LinearOp | qfused.Conv2dOp | qfused.EmbeddingOp | qfused.AddOp | qfused.MulOp


def _const(lw: Lowering, op: QFusedOp, value: SSAValue | None, what: str) -> np.ndarray | None:
    if value is None:
        return None
    found = lw.values[value]
    if isinstance(found, Buf):
        raise unsupported(
            op, f"its {what} is computed at run time", "make the weights compile-time constants"
        )
    return np.asarray(found)


def _inv(scale: float) -> float:
    """The kernels' `inv_scale`: torch's f32(1 / scale), the reciprocal in double."""
    return float(reciprocal(np.float64(scale), F32))


def _static_push(act: qfused.StaticQParamsAttr | None) -> list[float | int]:
    """(inv_scale, zp, qmin, qmax, scale) of a static quantizer (zeros if absent)."""
    if act is None:
        return [1.0, 0, -(2**31), 2**31 - 1, 1.0]
    scale = act.scale.value.data
    return [_inv(scale), act.zero_point.data, act.qmin.data, act.qmax.data, float(F32(scale))]


def _clamps(op: qfused.LinearOp | qfused.Conv2dOp | qfused.AddOp | qfused.MulOp) -> list[float]:
    lo, hi = op.clamp_min, op.clamp_max
    return [
        float(lo.value.data) if lo is not None else float("-inf"),
        float(hi.value.data) if hi is not None else float("inf"),
    ]


def _affine(
    lw: Lowering,
    op: QFusedOp,
    weight: SSAValue,
    scale: SSAValue,
    zp: SSAValue | None,
    scheme: qfused.AffineWeightAttr,
) -> packing.PackedAffine:
    data = _const(lw, op, weight, "weight")
    s = _const(lw, op, scale, "weight scale")
    z = _const(lw, op, zp, "weight zero point")
    assert data is not None
    assert s is not None
    block = scheme.block_size
    rows = data.shape[0]
    if any(b != 1 for b in block[:1]):
        raise unsupported(op, f"weight block {list(block)}", "use per-channel or per-group [1, G]")
    flat = data.reshape(rows, -1)
    group = block[-1] if len(block) == 2 else flat.shape[1]
    try:
        packed = packing.pack_affine(
            flat,
            s.reshape(rows, -1),
            None if z is None else z.reshape(rows, -1),
            scheme.qmin.data,
            scheme.qmax.data,
            group,
        )
    except ValueError as e:
        raise unsupported(
            op, f"its weights cannot be packed for Vulkan ({e})", "requantize them"
        ) from None
    # the integer data and zero points live on as packed copies: their blobs go
    # once this op is lowered (the scales are uploaded as they are)
    lw.release(weight)
    if zp is not None:
        lw.release(zp)
    return packed


def _bias(lw: Lowering, bias: SSAValue | None, fallback: Buf) -> tuple[Buf, int]:
    if bias is None:
        return fallback, 0
    return lw.buffer(bias), 1


def _zeros(lw: Lowering, packed: packing.PackedAffine, fallback: Buf) -> tuple[Buf, int]:
    if packed.zeros is None:
        return fallback, 0
    return lw.constant(packed.zeros, "i32"), 1


def _affine_kernel(prefix: str, bits: int, grouped: bool) -> str:
    return f"{prefix}_q{bits}{'g' if grouped else 'c'}sw"


def _pick(op: QFusedOp, *names: str) -> str:
    """The first of `names` the kernel catalogue has."""
    table = catalogue()
    for name in names:
        if name in table:
            return name
    raise unsupported(
        op,
        f"needs one of the Vulkan kernels {list(names)}, none of which is in the catalogue",
        "add the kernel to qopt/kernels/",
    )


@RULES(qfused.LinearOp)
def lower_linear(lw: Lowering, op: qfused.LinearOp) -> Sequence[Buf]:
    x_dims = shape_of(op.input)
    n, k = shape_of(op.weight)
    m = numel(x_dims[:-1])
    scheme = op.weight_scheme
    act = op.act
    out_dtype = abi_dtype(op.result)
    x = lw.buffer(op.input)
    if isinstance(scheme, qfused.LutWeightAttr):
        if act is not None or op.requant is not None or op.clamp_min is not None:
            raise unsupported(op, "LUT weights with quantized activations", "use weight-only LUT")
        return [_linear_lut(lw, op, x, scheme, m, n, k)]
    assert isinstance(scheme, qfused.AffineWeightAttr)
    packed = _affine(lw, op, op.weight, op.scale, op.zero_point, scheme)
    w = lw.constant(packed.weight, "u32", f"q{packed.bits}")
    s = lw.constant(packed.scales, "f32")
    z, has_zp = _zeros(lw, packed, s)
    out = lw.alloc((*x_dims[:-1], n), out_dtype)
    b, has_bias = _bias(lw, op.bias, s)
    if act is None:
        if op.requant is not None or op.clamp_min is not None or op.clamp_max is not None:
            raise unsupported(op, "weight-only linear with clamp/requant", "unfuse the output")
        name = _pick(
            op,
            _affine_kernel("linear", packed.bits, True),
            _affine_kernel("linear", packed.bits, False),
        )
        lw.dispatch(
            name,
            [x, w, s, z, b, out],
            [m, n, k, packed.row_words, packed.ngroups],
            {
                "WBITS": packed.bits,
                "GROUP_SIZE": packed.group_size,
                "HAS_ZERO_POINT": has_zp,
                "HAS_BIAS": has_bias,
                **linear_tile(m),
                **x_uniform(m, k),
                **x_texel(m, k),
                **w_texel(),
            },
        )
        return [out]
    if isinstance(act, qfused.StaticQParamsAttr):
        if packed.bits != 8 or packed.group_size != k:
            raise unsupported(
                op, "static-activation linear needs int8 per-channel weights", "requantize"
            )
        name = _pick(op, "linear_q8ta_q8csw", "linear_q8ta_q8csw_q8to")
        x_push = _static_push(act)
        out_push = _static_push(op.requant)
        lw.dispatch(
            name,
            [x, w, s, z, b, out],
            [m, n, k, packed.row_words, *x_push, *out_push[:4], *_clamps(op)],
            {
                "INPUT_QUANTIZED": int(x.dtype == "i32"),
                "HAS_ZERO_POINT": has_zp,
                "HAS_BIAS": has_bias,
                "REQUANT": int(op.requant is not None),
                **q8ta_tile(m),
            },
        )
        return [out]
    assert isinstance(act, qfused.DynamicQParamsAttr)
    if op.requant is not None or op.clamp_min is not None or op.clamp_max is not None:
        raise unsupported(op, "dynamic-activation linear with clamp/requant", "unfuse the output")
    xq, x_scale, x_zp = dynamic_quantize(lw, op, x, act, m, k)
    name = _pick(
        op,
        _affine_kernel("linear_dq8ca", packed.bits, True),
        _affine_kernel("linear_dq8ca", packed.bits, False),
        "linear_dq8ca_q4gsw",
    )
    lw.dispatch(
        name,
        [xq, x_scale, x_zp, w, s, z, b, out],
        [m, n, k, packed.row_words, packed.ngroups],
        {
            "WBITS": packed.bits,
            "GROUP_SIZE": packed.group_size,
            "HAS_ZERO_POINT": has_zp,
            "HAS_BIAS": has_bias,
            **dq8ca_tile(m),
            **x_uniform(m, k),
            **x_texel(m, k),
            **w_texel(),
        },
    )
    return [out]


def dynamic_quantize(
    lw: Lowering, op: qfused.LinearOp, x: Buf, act: qfused.DynamicQParamsAttr, m: int, k: int
) -> tuple[Buf, Buf, Buf]:
    """choose_qparams_rows + quantize_rows: (xq i32 [m, k], scale f32 [m], zp i32 [m])."""
    if numel(x.shape) != m * k:
        raise unsupported(op, "unexpected input shape", "report a bug")
    # The scale is computed in f32 (choose_qparams); an f64 scale_type only widens
    # that f32 value, so the f32 kernels compute the same scale.
    if act.scale_type not in (f32, f64):
        raise unsupported(op, f"dynamic scales of type {act.scale_type}", "use f32 scales")
    per_token = act.granularity.data == "per_token"
    rows, cols = (m, k) if per_token else (1, m * k)
    scale = lw.alloc((rows,), "f32")
    zp = lw.alloc((rows,), "i32")
    lw.dispatch(
        "choose_qparams_rows",
        [x, scale, zp],
        [rows, cols, act.qmin.data, act.qmax.data, float(F32(act.eps.value.data))],
        {"MAPPING": MAPPINGS[act.mapping.data]},
    )
    xq = lw.alloc(x.shape, "i32")
    lw.dispatch("quantize_rows", [x, scale, zp, xq], [rows, cols, act.qmin.data, act.qmax.data])
    if not per_token and m > 1:
        scale = copy_strided(lw, scale, (m,), (0,))
        zp = copy_strided(lw, zp, (m,), (0,))
    return xq, scale, zp


def _lut(
    lw: Lowering, op: QFusedOp, weight: SSAValue, codebook: SSAValue, scheme: qfused.LutWeightAttr
) -> packing.PackedLut:
    codes = _const(lw, op, weight, "LUT codes")
    book = _const(lw, op, codebook, "codebook")
    assert codes is not None
    assert book is not None
    if codes.ndim != 2:
        raise unsupported(op, "LUT weights of rank != 2", "reshape the weight")
    packed = packing.pack_lut(codes, book, scheme.nbits.data)
    lw.release(weight)  # the codes live on packed (their blob goes once op is lowered)
    return packed


def _linear_lut(
    lw: Lowering, op: qfused.LinearOp, x: Buf, scheme: qfused.LutWeightAttr, m: int, n: int, k: int
) -> Buf:
    packed = _lut(lw, op, op.weight, op.scale, scheme)
    codes = lw.constant(packed.codes, "u32", f"lut{packed.field_bits}")
    # the vec4 path reads the codebook and x through uniform blocks where they fit (the
    # codebook padded to whole vec4s: a block is bound whole)
    vec4 = lut_vec4(packed.field_bits, packed.block_cols, k)
    uniforms = {**lut_uniform(packed.codebook.size), **x_uniform(m, k)} if vec4 else {}
    texels = x_texel(m, k) if vec4 else {}
    entries = packing.pad_to(packed.codebook, 4) if "CB_UBO" in uniforms else packed.codebook
    book = lw.constant(entries, "f32")
    b, has_bias = _bias(lw, op.bias, book)
    out = lw.alloc((*shape_of(op.input)[:-1], n), "f32")
    palette = "CB_UBO" not in uniforms and lut_palette(packed.field_bits, packed.block_cols, k)
    lw.dispatch(
        _pick(op, "linear_lut"),
        [x, codes, book, b, out],
        [
            m,
            n,
            k,
            packed.row_words,
            packed.block_rows,
            packed.block_cols,
            packed.col_groups,
            packed.lut_size,
        ],
        {
            "FBITS": packed.field_bits,
            "HAS_BIAS": has_bias,
            **lut_tile(m, palette),
            **uniforms,
            **texels,
        },
    )
    return out


@RULES(qfused.EmbeddingOp)
def lower_embedding(lw: Lowering, op: qfused.EmbeddingOp) -> Sequence[Buf]:
    v, d = shape_of(op.weight)
    idx = lw.buffer(op.indices)
    count = numel(shape_of(op.indices))
    out = lw.alloc(shape_of(op.result), "f32")
    scheme = op.weight_scheme
    if isinstance(scheme, qfused.LutWeightAttr):
        packed = _lut(lw, op, op.weight, op.scale, scheme)
        codes = lw.constant(packed.codes, "u32", f"lut{packed.field_bits}")
        book = lw.constant(packed.codebook, "f32")
        lw.dispatch(
            _pick(op, "embedding_lut"),
            [idx, codes, book, out],
            [
                count,
                d,
                v,
                packed.row_words,
                packed.block_rows,
                packed.block_cols,
                packed.col_groups,
                packed.lut_size,
            ],
            {"FBITS": packed.field_bits},
        )
        return [out]
    assert isinstance(scheme, qfused.AffineWeightAttr)
    packed = _affine(lw, op, op.weight, op.scale, op.zero_point, scheme)
    w = lw.constant(packed.weight, "u32", f"q{packed.bits}")
    s = lw.constant(packed.scales, "f32")
    z, has_zp = _zeros(lw, packed, s)
    name = _pick(
        op,
        _affine_kernel("embedding", packed.bits, True),
        _affine_kernel("embedding", packed.bits, False),
    )
    lw.dispatch(
        name,
        [idx, w, s, z, out],
        [count, d, v, packed.row_words, packed.ngroups],
        {"WBITS": packed.bits, "GROUP_SIZE": packed.group_size, "HAS_ZERO_POINT": has_zp},
    )
    return [out]


@RULES(qfused.Conv2dOp)
def lower_conv2d(lw: Lowering, op: qfused.Conv2dOp) -> Sequence[Buf]:
    scheme = op.weight_scheme
    if not isinstance(scheme, qfused.AffineWeightAttr) or not isinstance(
        op.act, qfused.StaticQParamsAttr | None
    ):
        raise unsupported(op, "conv2d with LUT weights or dynamic activations", "unfuse it")
    n, c, h, w_ = shape_of(op.input)
    oc, icg, kh, kw = shape_of(op.weight)
    _, _, oh, ow = shape_of(op.result)
    data = _const(lw, op, op.weight, "weight")
    s = _const(lw, op, op.scale, "weight scale")
    z = _const(lw, op, op.zero_point, "weight zero point")
    assert data is not None
    assert s is not None
    if any(b != d for b, d in zip(scheme.block_size[1:], (icg, kh, kw), strict=True)):
        raise unsupported(op, "conv2d weights that are not per output channel", "requantize")
    try:
        packed = packing.pack_affine(
            data.reshape(oc, -1),
            s.reshape(oc, 1),
            None if z is None else z.reshape(oc, 1),
            scheme.qmin.data,
            scheme.qmax.data,
        )
    except ValueError as e:
        raise unsupported(op, f"its weights cannot be packed ({e})", "requantize them") from None
    if packed.bits != 8:
        raise unsupported(op, "conv2d weights narrower than int8", "use int8 weights")
    x = lw.buffer(op.input)
    wbuf = lw.constant(packed.weight, "u32", "q8")
    sbuf = lw.constant(packed.scales, "f32")
    zbuf, has_zp = _zeros(lw, packed, sbuf)
    b, has_bias = _bias(lw, op.bias, sbuf)
    out = lw.alloc(shape_of(op.result), abi_dtype(op.result))
    (sh, sw), (ph, pw), (dh, dw) = (
        tuple(op.stride.get_values()),
        tuple(op.padding.get_values()),
        tuple(op.dilation.get_values()),
    )
    act = op.act
    act_mode = CONV_ACT["none" if act is None else ("quantized" if x.dtype == "i32" else "static")]
    in_push = _static_push(act)
    out_push = _static_push(op.requant)
    lw.dispatch(
        _pick(op, "conv2d_q8ta_q8csw_q8to", "conv2d_q8ta_q8csw"),
        [x, wbuf, sbuf, zbuf, b, out],
        [
            n,
            c,
            h,
            w_,
            oc,
            oh,
            ow,
            kh,
            kw,
            sh,
            sw,
            ph,
            pw,
            dh,
            dw,
            op.groups.value.data,
            packed.row_words,
            *in_push,
            *out_push[:4],
            *_clamps(op),
        ],
        {
            "ACT": act_mode,
            "HAS_ZERO_POINT": has_zp,
            "HAS_BIAS": has_bias,
            "REQUANT": int(op.requant is not None),
            **conv_tile(oc, op.groups.value.data, ow),
        },
    )
    return [out]


def _expanded(lw: Lowering, buf: Buf, dims: tuple[int, ...], out_dims: tuple[int, ...]) -> Buf:
    """`buf` broadcast to `out_dims` (a strided copy when the shapes differ)."""
    if numel(dims) == numel(out_dims):
        return lw.view(buf, out_dims)
    return copy_strided(lw, buf, out_dims, broadcast_strides(dims, out_dims))


@RULES(qfused.AddOp, qfused.MulOp)
def lower_add(lw: Lowering, op: qfused.AddOp | qfused.MulOp) -> Sequence[Buf]:
    """qfused.add and qfused.mul: the add_q8ta kernel (MUL = 1 for the mul)."""
    out_dims = shape_of(op.result) or (1,)
    a, b = (_expanded(lw, lw.buffer(v), shape_of(v) or (1,), out_dims) for v in (op.lhs, op.rhs))
    out = lw.alloc(out_dims, abi_dtype(op.result))
    mul = isinstance(op, qfused.MulOp)
    alpha = op.alpha.value.data if not mul and op.alpha is not None else 1.0
    lw.dispatch(
        _pick(op, "add_q8ta_q8ta_q8to"),
        [a, b, out],
        [
            numel(out_dims),
            *_static_push(op.lhs_act),
            *_static_push(op.rhs_act),
            alpha,
            *_static_push(op.requant)[:4],
            *_clamps(op),
        ],
        {
            "A_QUANTIZED": int(a.dtype == "i32"),
            "B_QUANTIZED": int(b.dtype == "i32"),
            "REQUANT": int(op.requant is not None),
            "MUL": int(mul),
        },
    )
    return [out]
