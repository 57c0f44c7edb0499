"""Fused quantized conv2d and add kernels (static per-tensor int8 activations)."""

from __future__ import annotations

from qopt.kernels.extents import (
    FLAG,
    WG_RANGE,
    always,
    conv_extents,
    grid_workgroups,
    guarded,
    per_element,
)
from qopt.kernels.linalg import CONV_TILE_BOUNDS, conv_workgroups
from qopt.kernels.opcodes import CONV_ACT
from qopt.kernels.push import STATIC_IO
from qopt.kernels.spec import Extents, KernelSpec, PushValues, SpecValues, binding, push_of


def _conv2d_q8_extents(push: PushValues, spec: SpecValues) -> Extents:
    """conv2d_q8.glsl (int8 weight rows of row_words words): `conv_extents`."""
    return conv_extents(push, spec, True)


CONV2D_Q8TA_Q8CSW_Q8TO = KernelSpec(
    name="conv2d_q8ta_q8csw_q8to",
    glsl="conv2d_q8.glsl",
    bindings=(
        binding("x", "f32"),
        binding("w", "u32", packed="q"),
        binding("scales", "f32"),
        binding("zeros", "i32"),
        binding("bias", "f32"),
        binding("y", "f32", True),
    ),
    push=(
        *push_of("N", "C", "H", "W", "OC", "OH", "OW", "KH", "KW"),
        *push_of("sh", "sw", "ph", "pw", "dh", "dw", kind="i32"),
        *push_of("groups", "row_words"),
        *STATIC_IO,
    ),
    spec=(
        ("ACT", CONV_ACT["static"]),
        ("HAS_ZERO_POINT", 0),
        ("HAS_BIAS", 0),
        ("REQUANT", 1),
        ("WG", 64),
        ("OCT", 1),
        ("OWT", 1),
    ),
    workgroups=conv_workgroups,
    exact=always,
    extents=guarded("conv2d_q8ta_q8csw_q8to", _conv2d_q8_extents),
    spec_bounds={
        "ACT": (min(CONV_ACT.values()), max(CONV_ACT.values())),
        "HAS_ZERO_POINT": FLAG,
        "HAS_BIAS": FLAG,
        "REQUANT": FLAG,
        "WG": WG_RANGE,
        **CONV_TILE_BOUNDS,
    },
    doc="""Quantized conv2d, per-OC int8 weights (pack_affine of
[OC, ICg*KH*KW] in OIHW order): ACT 1 static (x f32 quantized in-kernel), 2 x already
i32, 0 weight-only (conv2d_q8csw, float accumulate); exact int32 accumulation over
in-bounds taps, y = f32(acc) * (in_scale * s[oc]) (+ bias), clamp, REQUANT (default 1;
0 = conv2d_q8ta_q8csw, f32 out). ET alias q8ta_conv2d. Integer outputs bit-exact.
OCT output channels x OWT output columns per invocation as conv2d (`conv_tile`).""",
)


ADD_Q8TA_Q8TA_Q8TO = KernelSpec(
    name="add_q8ta_q8ta_q8to",
    glsl="add_q8ta.glsl",
    bindings=(binding("a", "f32"), binding("b", "f32"), binding("out", "f32", True)),
    push=(
        ("n", "u32"),
        ("a_inv_scale", "f32"),
        ("a_zp", "i32"),
        ("a_qmin", "i32"),
        ("a_qmax", "i32"),
        ("a_scale", "f32"),
        ("b_inv_scale", "f32"),
        ("b_zp", "i32"),
        ("b_qmin", "i32"),
        ("b_qmax", "i32"),
        ("b_scale", "f32"),
        ("alpha", "f32"),
        ("out_inv_scale", "f32"),
        ("out_zp", "i32"),
        ("out_qmin", "i32"),
        ("out_qmax", "i32"),
        ("clamp_min", "f32"),
        ("clamp_max", "f32"),
    ),
    spec=(("A_QUANTIZED", 0), ("B_QUANTIZED", 0), ("REQUANT", 1), ("WG", 64), ("MUL", 0)),
    workgroups=grid_workgroups(lambda p: int(p["n"])),
    exact=always,
    extents=guarded("add_q8ta_q8ta_q8to", per_element("a", "b", "out")),
    spec_bounds={
        "A_QUANTIZED": FLAG,
        "B_QUANTIZED": FLAG,
        "REQUANT": FLAG,
        "WG": WG_RANGE,
        "MUL": FLAG,
    },
    doc="""Quantized add (ET q8ta_add): out = requant(clamp(dq(a) + alpha *
dq(b))), or with MUL = 1 the quantized mul (qfused.mul) requant(clamp(dq(a) * dq(b)));
operands f32 (quantized in-kernel) or i32 (A_/B_QUANTIZED); same shapes (expand
broadcasts with copy_strided). relu = clamp_min 0. Bit-exact.""",
)


SPECS = (CONV2D_Q8TA_Q8CSW_Q8TO, ADD_Q8TA_Q8TA_Q8TO)
