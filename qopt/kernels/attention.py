"""Attention kernels: scaled_dot_product_attention on rows."""

from __future__ import annotations

from qopt.kernels.extents import (
    FLAG,
    WG_RANGE,
    always,
    count,
    grid_workgroups,
    guarded,
    ints,
    max_digits,
    nonzero,
)
from qopt.kernels.spec import Extents, KernelSpec, PushValues, SpecValues, binding, push_of

_MAP_SPEC = ("VMAP", "VOFF", "VSH", "VSS", "VSE", "OMAP", "OOFF", "OSH", "OSL", "OSE")
"""sdpa's stride-map specialization constants (0: the row-major layouts)."""


def _sdpa_extents(push: PushValues, spec: SpecValues) -> Extents:
    """sdpa.glsl: query row = bh*L + l < BH*L reads q[row*E + e], keys s < S (CAUSAL:
    s <= l, so s < min(S, L)) of key/value head kvh = bh / G: k[(kvh*S + s)*E + e] and
    v[(kvh*S + s)*EV + e], the mask at (bh / H)*mb + (bh % H)*mh + l*ml + s*ms
    (HAS_MASK), and reads/writes out[row*EV + e]; VMAP / OMAP: v at VOFF + kvh*VSH +
    s*VSS + e*VSE, out at OOFF + bh*OSH + l*OSL + e*OSE instead. REG > 0 needs E = EV =
    REG. BOUNDED: bound[0] read once per row; the keys end at min(keys, bound[0]), so a
    bound read on the device only lowers them (the extents stay those of all S keys)."""
    bh, heads, lq, s, e, ev = ints(push, "BH", "H", "L", "S", "E", "EV")
    rows = count(bh * lq, "BH * L")
    ext: Extents = dict.fromkeys(("q", "k", "v", "mask", "out", "bound"), 0)
    if rows == 0:
        return ext
    if int(spec["BOUNDED"]) == 1:
        ext["bound"] = 1
    nonzero(push, "G")  # bh / G runs for every row
    reg = int(spec["REG"])
    if reg and not e == ev == reg:
        raise ValueError(f"specialization constant REG = {reg} needs E = EV = {reg}")
    omap = int(spec["OMAP"]) == 1
    if not omap:
        ext["out"] = rows * ev
    elif ev:
        osh, osl, ose = (int(spec[k]) for k in ("OSH", "OSL", "OSE"))
        ext["out"] = int(spec["OOFF"]) + (bh - 1) * osh + (lq - 1) * osl + (ev - 1) * ose + 1
    causal = int(spec["CAUSAL"]) == 1
    keys = min(s, lq) if causal else s  # keys a row can reach: s < keys
    if keys == 0:
        return ext
    last = (bh - 1) // int(push["G"])  # the last key/value head read
    ext["q"] = rows * e
    ext["k"] = (last * s + keys) * e
    if int(spec["VMAP"]) != 1:
        ext["v"] = (last * s + keys) * ev
    elif ev:
        vsh, vss, vse = (int(spec[k]) for k in ("VSH", "VSS", "VSE"))
        ext["v"] = int(spec["VOFF"]) + last * vsh + (keys - 1) * vss + (ev - 1) * vse + 1
    if int(spec["HAS_MASK"]) == 1:
        nonzero(push, "H")
        mb, mh, ml, ms = ints(push, "mb", "mh", "ml", "ms")
        head_max = max_digits(bh, (-(-bh // heads), heads), [lambda b: b * mb, lambda h: h * mh])
        ext["mask"] = head_max + (lq - 1) * ml + (keys - 1) * ms + 1
    return ext


SDPA = KernelSpec(
    name="sdpa",
    glsl="sdpa.glsl",
    bindings=(
        binding("q", "f32"),
        binding("k", "f32"),
        binding("v", "f32"),
        binding("mask", "f32"),
        binding("out", "f32", True),
        binding("bound", "u32"),
    ),
    push=(
        *push_of("BH", "H", "L", "S", "E", "EV", "G"),
        ("scale", "f32"),
        *push_of("mb", "mh", "ml", "ms"),
    ),
    spec=(
        ("HAS_MASK", 0),
        ("CAUSAL", 0),
        ("WG", 64),
        *((name, 0) for name in _MAP_SPEC),
        ("REG", 0),
        ("BOUNDED", 0),
    ),
    workgroups=grid_workgroups(lambda p: int(p["BH"]) * int(p["L"])),
    extents=guarded("sdpa", _sdpa_extents),
    spec_bounds={
        "HAS_MASK": FLAG,
        "CAUSAL": FLAG,
        "WG": WG_RANGE,
        "VMAP": FLAG,
        "OMAP": FLAG,
        "REG": (0, 256),
        "BOUNDED": FLAG,
        **{name: (0, (1 << 31) - 1) for name in _MAP_SPEC if name not in ("VMAP", "OMAP")},
    },
    doc="""scaled_dot_product_attention on rows: q [BH, L, E], k [BH / G, S, E], v [BH / G,
S, EV] -> out [BH, L, EV]: query head bh reads key/value head bh / G (G = 1: as many
k/v heads as q heads; grouped-query attention and key/value heads broadcast over the
query heads read their cache in place, no copy per query head); scale pushed;
optional additive float mask read at b*mb + h*mh + l*ml + s*ms (b = bh / H,
h = bh % H; 0 strides broadcast; boolean masks become 0/-inf at compile time);
CAUSAL = torch's is_causal (top-left aligned); VMAP = 1: v read at VOFF + kvh*VSH +
s*VSS + e*VSE, OMAP = 1: out written at OOFF + bh*OSH + l*OSL + e*OSE (a transpose
folded in by vkc-fold-copies); REG > 0 (E = EV = REG): the query row and the output
row accumulated in registers, the output written once (the same f32 operations);
BOUNDED = 1: the keys end at min(S, bound[0]) (u32, computed on the device by
mask_bound: the keys every mask row leaves open), so attention over a KV cache reads
the rows in use. One invocation per query row.""",
)


def _mask_bound_extents(push: PushValues, spec: SpecValues) -> Extents:
    """mask_bound.glsl: keys key < S of rows r < rows: mask[r*S + key] (S an int32: the
    shader counts keys down as int), and writes bound[0]."""
    rows, s = ints(push, "rows", "S")
    if s >= 1 << 31:
        raise ValueError(f"S = {s} does not fit the shader's int32 key count")
    return {"mask": count(rows * s, "rows * S"), "bound": 1}


MASK_BOUND = KernelSpec(
    name="mask_bound",
    glsl="mask_bound.glsl",
    bindings=(binding("mask", "f32"), binding("bound", "u32", True)),
    push=push_of("rows", "S"),
    exact=always,
    extents=guarded("mask_bound", _mask_bound_extents),
    doc="""The keys an additive attention mask [rows, S] (row-major) leaves open:
bound[0] = 1 + the largest key s with mask[r*S + s] != -inf in some row r (NaN counts
as open), 0 when every entry is -inf. One workgroup of 64; each thread scans its keys
downwards from the end and stops at its first open one. sdpa (BOUNDED = 1) reads it.""",
)


SPECS = (SDPA, MASK_BOUND)
