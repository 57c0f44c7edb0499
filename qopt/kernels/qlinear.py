"""Fused quantized linear kernels: weight-only affine (linear_qw), static int8
activations (linear_q8ta), dynamic int8 activations (linear_dq8ca) and LUT weights."""

from __future__ import annotations

from qopt.kernels.extents import (
    AFFINE_BITS,
    FLAG,
    GROUP_RANGE,
    TILE_RANGE,
    U32_LIMIT,
    WG_RANGE,
    always,
    count,
    group_count,
    guarded,
    ints,
    lut_rows_extents,
    nonzero,
    one_of,
    spec_int,
    uniform_block,
)
from qopt.kernels.push import STATIC_IO
from qopt.kernels.spec import (
    MAX_UNIFORM_BYTES,
    Extents,
    KernelSpec,
    PushValues,
    SpecValues,
    TexelView,
    UniformView,
    binding,
    push_of,
)


def _linear_qw_workgroups(push: PushValues, spec: SpecValues) -> tuple[int, int, int]:
    per = spec_int(spec, "NPW", 4) * spec_int(spec, "WG", 64)
    return (
        group_count(int(push["N"]), per),
        group_count(int(push["M"]), spec_int(spec, "MT", 1)),
        1,
    )


def balanced_mt(m: int) -> int:
    """Rows of x per invocation for M > 1: up to 8 (the tiles' named accumulators),
    balanced over ceil(M / 8) row blocks (M = 9 takes two blocks of 5, not 8 + 1)."""
    blocks = -(-m // 8)
    return -(-m // blocks)


QW_NPW_RANGE = (1, 16)
"""NPW of linear_qw and linear_dq8ca: their gemm_tile has named accumulators for 16
weight rows (the other paths: NPW * MT private floats)."""


def linear_tile(m: int) -> dict[str, int]:
    """The NPW / MT / WG tile of linear_qw for M rows of x, measured on lavapipe: gemm_tile
    with 16 weight rows per invocation (each x load feeds 16 rows: x loads dominate there;
    1.2-1.8x faster than 8 rows at M = 16..64 on the 2048 / 5632 / 32000-row Llama shapes,
    32 rows no faster), `balanced_mt` rows of x sharing each decoded weight (MT 1 at M = 1)
    and WG 32 (more workgroups for N = 2048; as fast or faster than 64 at every measured
    shape). At M = 1 this tile with the weights read through the texel view (`w_texel`)
    takes 0.72-0.80x (int4) / 0.91-0.94x (int8) the CPU time of the register-tiled GEMV
    (gemv_sym, NPW 4, WG 64) on the Llama shapes; without the texel view (a device that
    lacks it) 0.89-0.95x (int4) / 1.18-1.27x (int8) (benchmarks/linear_texel.py)."""
    return {"NPW": 16, "MT": balanced_mt(m) if m > 1 else 1, "WG": 32}


def w_texel() -> dict[str, int]:
    """The W_TEXEL specialization of linear_qw and linear_dq8ca: their gemm_tile / GEMV
    fast paths fetch the weight chunks from a uniform texel buffer over the weight buffer
    (`TexelView`) instead of uvec4 storage loads, the same words in the same arithmetic
    (bit-identical). lavapipe compiles a texel fetch through its sampler code, a gather
    per channel, where a storage load is a per-lane loop with a bounds check per
    component; GPUs read texel buffers through the texture cache. Measured at the Llama
    shapes (benchmarks/linear_texel.py, CPU time, against storage loads with the same
    tile): linear_q4gsw 0.77-0.82x at M = 16 and 64, linear_q8csw 0.74-0.83x,
    linear_dq8ca_q4gsw 0.72-0.91x; at M = 1 see `linear_tile` and `dq8ca_tile` (against
    the GEMV they replace). The register-tiled GEMV with NPW 4 is ~1.1x
    slower with it (its four rows per lane are no gather win), so `linear_tile` no longer
    picks that path. A device without such texel buffers, or with fewer
    maxTexelBufferElements than the weight's 16-byte texels, gets the storage reads
    (`views.fit_texels`, when the dispatch is recorded)."""
    return {"W_TEXEL": 1}


X_UNIFORM_BYTES = MAX_UNIFORM_BYTES
"""The largest x (M * K * 4 bytes) convert-to-vkc reads through linear_qw's uniform block
(`x_uniform`): 65536, lavapipe's (and most desktop GPUs') maxUniformBufferRange. Vulkan
guarantees only 16384, which would leave out the K = 5632 down projection of a
Llama-shaped decoder; on a device with a smaller limit the runtime turns the uniform read
off when it records the dispatch (`views.fit_uniforms`: the storage path, bit-identical),
so it never reads past the range."""


def x_uniform(m: int, k: int) -> dict[str, int]:
    """The X_UBO / XU_VEC4 specialization of linear_qw for x of M x K: when K % 4 == 0 (the
    fast paths' condition) and x fits `X_UNIFORM_BYTES`, x is read through the uniform
    block: lavapipe gathers it (a uniform load at a loop-variant offset is one vector
    gather with a range mask) instead of a per-lane loop per component; the M = 1 GEMV
    0.87-0.98x, the M = 8 gemm_tile 0.70-0.79x the time on the Llama shapes
    (benchmarks/linear_x_uniform.py). Else nothing (the spec defaults: storage reads)."""
    if k % 4 or not 0 < 4 * m * k <= X_UNIFORM_BYTES:
        return {}
    return {"X_UBO": 1, "XU_VEC4": m * k // 4}


def x_texel(m: int, k: int) -> dict[str, int]:
    """The X_TEXEL specialization of linear_qw, linear_dq8ca and linear_lut for x of M x K
    too large for `x_uniform` (a prefill: 64 x 1024 f32 is 256 KiB): their fast paths read
    x's vec4s through a uniform texel buffer over x (`TexelView`, the same words: the same
    bits). Every invocation of a workgroup reads the same x vec4; lavapipe compiles a
    storage load of it to a per-lane loop per component and a texel fetch to one gather
    per channel: at M = 64 on the dim 1024-2048 Llama shapes linear_q4gsw's gemm_tile
    takes 0.55-0.75x the CPU time of storage reads (2816 x 1024, 1024 x 2816, 2048 x 2048)
    and linear_lut's tile_v4 (codebook4) 0.48-0.52x (2816 x 1024, 1024 x 2816; the
    kernels with the most GPU time: benchmarks/shapes.py); GPUs read it through the
    texture cache. When x fits the uniform block (`x_uniform`, which the kernels prefer) or K % 4
    != 0 (no fast path), nothing. A device without such texel buffers, or with fewer
    maxTexelBufferElements than x's 16-byte texels, reads storage (`views.fit_texels`)."""
    if k % 4 or x_uniform(m, k) or m * k == 0:
        return {}
    return {"X_TEXEL": 1}


def q8ta_tile(m: int) -> dict[str, int]:
    """NPW / MT of linear_q8ta_q8csw: 8 weight rows (each quantized x value feeds 8
    rows), `balanced_mt` rows of x for M > 1 (lavapipe)."""
    return {"NPW": 8, "MT": 1 if m <= 1 else balanced_mt(m)}


def lut_tile(m: int, palette: bool = True) -> dict[str, int]:
    """NPW / MT of linear_lut for M rows (lavapipe): M = 1 8 weight rows; M > 1
    `balanced_mt` rows of x (each code looked up once for them) and 4 weight rows on the
    vec4 path (`lut_uniform` or codes wider than 4 bits: NPW 4 x MT 8 1.03-1.1x faster
    than 8 x 8 at the Llama shapes), 8 on the select-tree palette path (`palette`: palettes in
    registers, each x load feeds 8 rows)."""
    if m <= 1:
        return {"NPW": 8, "MT": 1}
    return {"NPW": 8 if palette else 4, "MT": balanced_mt(m)}


def lut_palette(field_bits: int, block_cols: int, cols: int) -> bool:
    """Whether linear_lut takes its select-tree palette path without a uniform codebook
    (`lut_uniform` empty): fields of at most 4 bits, palette blocks of whole code words
    (`block_cols` a multiple of 32 / field_bits) tiling the `cols` columns."""
    return (
        field_bits <= 4
        and block_cols > 0
        and block_cols % (32 // field_bits) == 0
        and cols % block_cols == 0
    )


def lut_vec4(field_bits: int, block_cols: int, cols: int) -> bool:
    """Whether linear_lut can take its vec4 path (`tile_v4`, the one that reads the uniform
    blocks): palette blocks of whole code words and `cols` a multiple of 4."""
    return block_cols > 0 and block_cols % (32 // field_bits) == 0 and cols % 4 == 0


LUT_UNIFORM_BYTES = MAX_UNIFORM_BYTES
"""The largest codebook (padded to whole vec4s) convert-to-vkc reads through linear_lut's
uniform block (`lut_uniform`); a device with a smaller maxUniformBufferRange reads it
through the storage buffer (`views.fit_uniforms`, bit-identical)."""


def lut_uniform(entries: int) -> dict[str, int]:
    """The CB_UBO / CBU_VEC4 specialization of linear_lut for a codebook of `entries` f32
    values: read through the uniform block when its ceil(entries / 4) vec4s fit
    `LUT_UNIFORM_BYTES` (the codebook constant is then padded to whole vec4s, so the block
    lies inside it). Each code's entry is then one lookup in a table shared by the
    invocations (on lavapipe one vector gather, where a storage load is a per-lane loop
    and the select tree 15 blends; cached on a GPU): at M = 1 on the Llama shapes with
    torchao's [-1, 16] blocks 3.7-4.6x faster than the select tree, at M = 16 / 64 2.1-2.3x
    (benchmarks/vulkan_kernels.py --llama). Else nothing (the spec defaults)."""
    vec4s = -(-entries // 4)
    if not 0 < 16 * vec4s <= LUT_UNIFORM_BYTES:
        return {}
    return {"CB_UBO": 1, "CBU_VEC4": vec4s}


def dq8ca_tile(m: int) -> dict[str, int]:
    """NPW / MT / WG of linear_dq8ca for M rows: gemm_tile with the tile of `linear_tile`
    (16 weight rows, `balanced_mt` rows of x, WG 32: 1.1-1.15x faster than 8 rows at M =
    16..64 on lavapipe, the same bits). At M = 1 (MT 1) it takes 0.50-0.59x the CPU time
    of gemv_fast (NPW 4, WG 64) with the texel view (`w_texel`) and 0.72-0.77x with
    storage reads (benchmarks/linear_texel.py); bit-identical to it (exact integer sums,
    f32 in group order)."""
    return linear_tile(m)


def _linear_qw_extents(push: PushValues, spec: SpecValues) -> Extents:
    """linear_qw.glsl. cpr = row_words / 4 chunks (uvec4 w4[n*cpr + c]) per weight row,
    VPC = 128 / WBITS values per chunk; rows n0 + r clamped to N - 1, x rows m0 + mm to
    M - 1; nfast = K / VPC when groups align with chunks and K % 4 == 0, else 0.
    - gemm_tile / gemv_sym (every chunk fast: nfast == cpr, any NPW and MT):
      x as vec4 xv[m*K/4 + c*VPC/4 + j] (words below (M - 1)*K + cpr*VPC), group
      g = c*VPC / GROUP_SIZE of scales / zeros[n*ngroups + g], or scales[n] when
      ngroups == 1 (also read when cpr == 0);
    - the scalar GEMV (NPW = MT = 1) and the tiled loop: fast chunks c < nfast read
      x4(m*K + c*VPC + ...) (below (M - 1)*K + nfast*VPC) and group c*VPC / GROUP_SIZE
      (the tiled loop clamps it to ngroups - 1: bounded by the unclamped value); the
      other chunks read x[m*K + k] for k < K only and groups min(k / GROUP_SIZE,
      ngroups - 1) for k < cpr*VPC;
    bias[n] (HAS_BIAS) and out[m*N + n] for n < N, m < M in every path. The weight chunks
    w4[n*cpr + c] (words below 4*N*cpr) are the same with W_TEXEL 1: texel n*cpr + c of
    the texel view over w is those four words."""
    wbits = one_of(spec, "WBITS", AFFINE_BITS)
    group = int(spec["GROUP_SIZE"])
    m, n, k, row_words, ngroups = ints(push, "M", "N", "K", "row_words", "ngroups")
    ext: Extents = dict.fromkeys(("x", "w", "scales", "zeros", "bias", "out"), 0)
    if m == 0 or n == 0:
        return ext
    nonzero(push, "ngroups")
    ext["out"] = m * n
    if int(spec["HAS_BIAS"]) == 1:
        ext["bias"] = n
    vpc, cpr = 128 // wbits, row_words // 4
    whole_row = ngroups == 1
    nfast = k // vpc if (group % vpc == 0 or whole_row) and k % 4 == 0 else 0
    if cpr:
        ext["w"] = 4 * n * cpr
    x = params = 0  # words of x, of scales / zeros (indexed alike)
    if nfast == cpr:
        if cpr:
            x = (m - 1) * k + cpr * vpc
            params = (n - 1) * ngroups + (0 if whole_row else (cpr - 1) * vpc // group) + 1
        ext["scales"] = n if whole_row else params
    else:
        if nfast:
            x = (m - 1) * k + nfast * vpc
            params = (n - 1) * ngroups + (0 if whole_row else (nfast - 1) * vpc // group) + 1
        if cpr > nfast:
            if k > nfast * vpc:
                x = max(x, (m - 1) * k + min(k, cpr * vpc))
            last_group = min((cpr * vpc - 1) // group, ngroups - 1)
            params = max(params, (n - 1) * ngroups + last_group + 1)
        ext["scales"] = params
    ext["x"] = x
    if int(spec["HAS_ZERO_POINT"]) == 1:
        ext["zeros"] = params
    if int(spec["X_UBO"]) == 1:
        # the uniform block is bound whole: it must lie inside x and cover every x read
        vec4s = int(spec["XU_VEC4"])
        if 4 * vec4s < m * k:
            raise ValueError(
                f"X_UBO reads x ({m * k} words) through a uniform block of {4 * vec4s} words"
                " (XU_VEC4 too small)"
            )
        ext["x"] = max(x, 4 * vec4s)
    return ext


def _linear_qw_spec(name: str, wbits: int, group: int, doc: str) -> KernelSpec:
    return KernelSpec(
        name=name,
        glsl="linear_qw.glsl",
        bindings=(
            binding("x", "f32"),
            binding("w", "u32", packed="q"),
            binding("scales", "f32"),
            binding("zeros", "i32"),
            binding("bias", "f32"),
            binding("out", "f32", True),
        ),
        push=push_of("M", "N", "K", "row_words", "ngroups"),
        spec=(
            ("WBITS", wbits),
            ("GROUP_SIZE", group),
            ("HAS_ZERO_POINT", 0),
            ("HAS_BIAS", 0),
            ("NPW", 4),
            ("MT", 1),
            ("WG", 64),
            ("X_UBO", 0),
            ("XU_VEC4", 1),
            ("W_TEXEL", 0),
            ("X_TEXEL", 0),
        ),
        workgroups=_linear_qw_workgroups,
        extents=guarded(name, _linear_qw_extents),
        uniforms=(UniformView("x", "X_UBO", "XU_VEC4"),),
        texels=(TexelView("w", "W_TEXEL"), TexelView("x", "X_TEXEL")),
        spec_bounds={
            "WBITS": AFFINE_BITS,
            "GROUP_SIZE": GROUP_RANGE,
            "HAS_ZERO_POINT": FLAG,
            "HAS_BIAS": FLAG,
            "NPW": QW_NPW_RANGE,
            "MT": TILE_RANGE,
            "WG": WG_RANGE,
            "X_UBO": FLAG,
            "XU_VEC4": (1, MAX_UNIFORM_BYTES // 16),
            "W_TEXEL": FLAG,
            "X_TEXEL": FLAG,
        },
        doc=doc,
    )


_LINEAR_QW_DOC = """Weight-only quantized linear: out[m, n] = sum_k x[m, k] * (field - z) * s
(+ bias). Bindings x f32 [M, K], w u32 [N, row_words] (packing.pack_affine: fields
value - lo, 128-bit padded rows), scales f32 [N, ngroups], zeros i32 [N, ngroups]
(zp - lo; HAS_ZERO_POINT), bias f32 [N] (HAS_BIAS), out f32 [M, N]. Push M, N, K,
row_words, ngroups. Spec WBITS (4 or 8), GROUP_SIZE (any; 128-bit chunks inside one
group take the fast path), HAS_ZERO_POINT, HAS_BIAS, NPW (output columns per
invocation, up to 16), MT (rows of x per invocation), WG (invocations per workgroup; see
linear_qw.glsl; `linear_tile` gives the tile for M), X_UBO / XU_VEC4 (x read through a
uniform block of XU_VEC4 vec4s, at least M*K/4, bound as descriptor 6 (`UniformView`);
`x_uniform`), W_TEXEL (w's chunks fetched from a uniform texel buffer over w, descriptor 7
(`TexelView`); `w_texel`); workgroups (ceil(N / (WG*NPW)), ceil(M/MT), 1)."""


LINEAR_Q4GSW = _linear_qw_spec(
    "linear_q4gsw", 4, 32, _LINEAR_QW_DOC + "\nint4 per-group; q4gaw = HAS_ZERO_POINT 1."
)


LINEAR_Q8CSW = _linear_qw_spec(
    "linear_q8csw", 8, 1 << 30, _LINEAR_QW_DOC + "\nint8 per-channel (ngroups 1, GROUP_SIZE >= K)."
)


def _linear_q8ta_extents(push: PushValues, spec: SpecValues) -> Extents:
    """linear_q8ta.glsl: rows of x m < M and weight rows n < N (the tile's rows clamped to
    M - 1 and N - 1) read x[m*K + k] for k < K (the last word's k >= K read x at K - 1),
    the word w[n*row_words + k/4] for k < K, zeros[n] (HAS_ZERO_POINT), scales[n],
    bias[n] (HAS_BIAS); writes o[m*N + n]."""
    m, n, k, row_words = ints(push, "M", "N", "K", "row_words")
    total = count(m * n, "M * N")
    ext: Extents = dict.fromkeys(("x", "w", "scales", "zeros", "bias", "out"), 0)
    if total == 0:
        return ext
    ext["out"] = total
    ext["scales"] = n
    if int(spec["HAS_ZERO_POINT"]) == 1:
        ext["zeros"] = n
    if int(spec["HAS_BIAS"]) == 1:
        ext["bias"] = n
    if k:
        ext["x"] = m * k
        ext["w"] = (n - 1) * row_words + (k - 1) // 4 + 1
    return ext


LINEAR_Q8TA_Q8CSW = KernelSpec(
    name="linear_q8ta_q8csw",
    glsl="linear_q8ta.glsl",
    bindings=(
        binding("x", "f32"),
        binding("w", "u32", packed="q"),
        binding("scales", "f32"),
        binding("zeros", "i32"),
        binding("bias", "f32"),
        binding("out", "f32", True),
    ),
    push=(*push_of("M", "N", "K", "row_words"), *STATIC_IO),
    spec=(
        ("INPUT_QUANTIZED", 0),
        ("HAS_ZERO_POINT", 0),
        ("HAS_BIAS", 0),
        ("REQUANT", 0),
        ("WG", 64),
        ("NPW", 4),
        ("MT", 1),
    ),
    workgroups=_linear_qw_workgroups,
    exact=always,
    extents=guarded("linear_q8ta_q8csw", _linear_q8ta_extents),
    spec_bounds={
        "INPUT_QUANTIZED": FLAG,
        "HAS_ZERO_POINT": FLAG,
        "HAS_BIAS": FLAG,
        "REQUANT": FLAG,
        "WG": WG_RANGE,
        "NPW": TILE_RANGE,
        "MT": TILE_RANGE,
    },
    doc="""Static per-tensor activation x int8 per-channel weight linear
(REQUANT = 1 is linear_q8ta_q8csw_q8to / ET q8ta_linear): x f32 quantized in-kernel (or
i32 when INPUT_QUANTIZED), exact int32 dot products, y = f32(acc) * (in_scale * s[n])
(+ bias), clamp, optional requant to i32. w: pack_affine int8 (lo -128). Push from
`static_io_push`. NPW x MT tile per invocation as linear_qw (`q8ta_tile`); workgroups
(ceil(N / (WG*NPW)), ceil(M/MT), 1). Bit-exact.""",
)


def _dq8ca_fast(push: PushValues, spec: SpecValues) -> bool:
    """Whether linear_dq8ca.glsl takes a chunked path (gemv_fast or gemm_tile, any tile):
    every 128-bit chunk inside one group and rows of exactly K fields."""
    wbits = one_of(spec, "WBITS", AFFINE_BITS)
    group = int(spec["GROUP_SIZE"])
    k, row_words = ints(push, "K", "row_words")
    vpc = 128 // wbits
    return group % vpc == 0 and row_words % 4 == 0 and (row_words // 4) * vpc == k


def _linear_dq8ca_extents(push: PushValues, spec: SpecValues) -> Extents:
    """linear_dq8ca.glsl: output (m, n) for m < M, n < N reads x_zp[m], x_scale[m] and
    bias[n] (HAS_BIAS) and writes o[m*N + n]; weight rows n and x rows m are clamped
    to N - 1 and M - 1 in the chunked paths (`_dq8ca_fast`), which read chunk c < cpr =
    row_words / 4 of every row (K = cpr * 128 / WBITS: xq[m*K + k] for k < K and the
    whole padded row of w) and the group g = c*128/WBITS / GROUP_SIZE of scales / zeros
    [n*ngroups + g] (HAS_ZERO_POINT), whatever ngroups says; the per-element loop reads,
    for each g < ngroups, zeros[n*ngroups + g] (HAS_ZERO_POINT) and scales[n*ngroups + g],
    and for k in [g*GROUP_SIZE, min(K, (g + 1)*GROUP_SIZE)) (always below K, also if the
    uint32 group bounds wrap) xq[m*K + k] and the field w[n*row_words + k / (32 / WBITS)].
    W_TEXEL 1 fetches the same chunks as texels of the texel view over w."""
    wbits = one_of(spec, "WBITS", AFFINE_BITS)
    group = int(spec["GROUP_SIZE"])
    m, n, k, row_words, ngroups = ints(push, "M", "N", "K", "row_words", "ngroups")
    total = count(m * n, "M * N")
    names = ("xq", "x_scale", "x_zp", "w", "scales", "zeros", "bias", "out")
    ext: Extents = dict.fromkeys(names, 0)
    if total == 0:
        return ext
    ext["out"] = total
    ext["x_scale"] = ext["x_zp"] = m
    if int(spec["HAS_BIAS"]) == 1:
        ext["bias"] = n
    has_zp = int(spec["HAS_ZERO_POINT"]) == 1
    if _dq8ca_fast(push, spec):
        cpr = row_words // 4
        if cpr:
            params = (n - 1) * ngroups + ((cpr - 1) * (128 // wbits)) // group + 1
            ext["scales"] = params
            ext["zeros"] = params if has_zp else 0
            ext["xq"] = m * k
            ext["w"] = n * row_words
        return ext
    if ngroups:
        ext["scales"] = n * ngroups
        if has_zp:
            ext["zeros"] = n * ngroups
        covered = ngroups * group
        last_k = min(k, covered) - 1 if covered < U32_LIMIT else k - 1
        if last_k >= 0:
            ext["xq"] = (m - 1) * k + last_k + 1
            ext["w"] = (n - 1) * row_words + last_k // (32 // wbits) + 1
    return ext


def _linear_dq8ca_extents_x_uniform(push: PushValues, spec: SpecValues) -> Extents:
    """`_linear_dq8ca_extents`, and with X_UBO the uniform block's 4 * XU_VEC4 words of xq
    (bound whole), which must cover the M*K words the chunked paths read through it."""
    ext = _linear_dq8ca_extents(push, spec)
    if int(spec["X_UBO"]) == 1:
        m, k = ints(push, "M", "K")
        vec4s = int(spec["XU_VEC4"])
        if 4 * vec4s < m * k:
            raise ValueError(
                f"X_UBO reads xq ({m * k} words) through a uniform block of {4 * vec4s} words"
                " (XU_VEC4 too small)"
            )
        ext["xq"] = max(ext["xq"], 4 * vec4s)
    return ext


def _linear_dq8ca_spec(name: str, wbits: int, group: int, doc: str) -> KernelSpec:
    return KernelSpec(
        name=name,
        glsl="linear_dq8ca.glsl",
        bindings=(
            binding("xq", "i32"),
            binding("x_scale", "f32"),
            binding("x_zp", "i32"),
            binding("w", "u32", packed="q"),
            binding("scales", "f32"),
            binding("zeros", "i32"),
            binding("bias", "f32"),
            binding("out", "f32", True),
        ),
        push=push_of("M", "N", "K", "row_words", "ngroups"),
        spec=(
            ("WBITS", wbits),
            ("GROUP_SIZE", group),
            ("HAS_ZERO_POINT", 0),
            ("HAS_BIAS", 0),
            ("NPW", 4),
            ("MT", 1),
            ("WG", 64),
            ("X_UBO", 0),
            ("XU_VEC4", 1),
            ("W_TEXEL", 0),
            ("X_TEXEL", 0),
        ),
        workgroups=_linear_qw_workgroups,
        exact=always,
        extents=guarded(name, _linear_dq8ca_extents_x_uniform),
        uniforms=(UniformView("xq", "X_UBO", "XU_VEC4"),),
        texels=(TexelView("w", "W_TEXEL"), TexelView("xq", "X_TEXEL")),
        spec_bounds={
            "WBITS": AFFINE_BITS,
            "GROUP_SIZE": GROUP_RANGE,
            "HAS_ZERO_POINT": FLAG,
            "HAS_BIAS": FLAG,
            "NPW": QW_NPW_RANGE,
            "MT": TILE_RANGE,
            "WG": WG_RANGE,
            "X_UBO": FLAG,
            "XU_VEC4": (1, MAX_UNIFORM_BYTES // 16),
            "W_TEXEL": FLAG,
            "X_TEXEL": FLAG,
        },
        doc=doc,
    )


_DQ8CA_DOC = """Dynamic per-row int8 activation linear: xq i32 [M, K], x_scale f32 [M],
x_zp i32 [M] (choose_qparams_rows + quantize_rows), weight as linear_q4gsw/q8csw;
per-group exact int32 accumulation, y = (sum_g f32(acc_g) * s[n, g]) * x_scale[m] (+ bias)
in f32 in group order (the reference reproduces that order). Spec NPW / MT: output
columns x rows of x per invocation (`dq8ca_tile`: NPW 4, MT 1 for M = 1; NPW 16 and up
to 8 rows for M > 1, each weight chunk decoded once for the MT rows). X_UBO / XU_VEC4:
xq read through a uniform block at descriptor 8 as linear_qw's x (`x_uniform`). W_TEXEL:
w's chunks fetched from a uniform texel buffer at descriptor 9 as linear_qw's (`w_texel`)."""


LINEAR_DQ8CA_Q4GSW = _linear_dq8ca_spec("linear_dq8ca_q4gsw", 4, 32, _DQ8CA_DOC)


LINEAR_DQ8CA_Q8CSW = _linear_dq8ca_spec("linear_dq8ca_q8csw", 8, 1 << 30, _DQ8CA_DOC)


def _linear_lut_extents(push: PushValues, spec: SpecValues) -> Extents:
    """linear_lut.glsl: rows of x m < M and weight rows n < N (the tile's rows clamped to
    M - 1 and N - 1) read x[m*K + k] for k < K, the codes of weight row n and its palettes
    (`lut_rows_extents`, k < K: the last word's codes at k >= K are skipped), bias[n]
    (HAS_BIAS); writes out[m*N + n]. With CB_UBO / X_UBO the uniform blocks (bound whole)
    must cover every codebook entry / x value read and lie inside their buffers: 4 *
    CBU_VEC4 / 4 * XU_VEC4 words."""
    m, n, k = ints(push, "M", "N", "K")
    total = count(m * n, "M * N")
    ext: Extents = dict.fromkeys(("x", "codes", "codebook", "bias", "out"), 0)
    if total == 0:
        return ext
    nonzero(push, "BN")  # cbrow = (n / BN) * GK, also when K = 0
    if k:
        nonzero(push, "BK")  # k / BK
    ext["out"] = total
    if int(spec["HAS_BIAS"]) == 1:
        ext["bias"] = n
    ext["codes"], ext["codebook"] = lut_rows_extents(push, spec, n, k, "BN", "BK", "GK")
    ext["x"] = m * k
    uniform_block(ext, spec, "codebook", "CB_UBO", "CBU_VEC4")
    uniform_block(ext, spec, "x", "X_UBO", "XU_VEC4")
    return ext


LINEAR_LUT = KernelSpec(
    name="linear_lut",
    glsl="linear_lut.glsl",
    bindings=(
        binding("x", "f32"),
        binding("codes", "u32", packed="lut"),
        binding("codebook", "f32"),
        binding("bias", "f32"),
        binding("out", "f32", True),
    ),
    push=push_of("M", "N", "K", "row_words", "BN", "BK", "GK", "L"),
    spec=(
        ("FBITS", 4),
        ("HAS_BIAS", 0),
        ("WG", 64),
        ("NPW", 4),
        ("MT", 1),
        ("CB_UBO", 0),
        ("CBU_VEC4", 1),
        ("X_UBO", 0),
        ("XU_VEC4", 1),
        ("X_TEXEL", 0),
    ),
    workgroups=_linear_qw_workgroups,
    extents=guarded("linear_lut", _linear_lut_extents),
    uniforms=(
        UniformView("codebook", "CB_UBO", "CBU_VEC4"),
        UniformView("x", "X_UBO", "XU_VEC4"),
    ),
    texels=(TexelView("x", "X_TEXEL"),),
    spec_bounds={
        "FBITS": (1, 8),
        "HAS_BIAS": FLAG,
        "WG": WG_RANGE,
        "NPW": TILE_RANGE,
        "MT": TILE_RANGE,
        "CB_UBO": FLAG,
        "CBU_VEC4": (1, MAX_UNIFORM_BYTES // 16),
        "X_UBO": FLAG,
        "XU_VEC4": (1, MAX_UNIFORM_BYTES // 16),
        "X_TEXEL": FLAG,
    },
    doc="""LUT weight linear (qfused #lut, any block [BN, BK]: per-row palettes
BK = K, LUT per K-block BN = N): packing.pack_lut gives codes (FBITS fields), codebook
f32 [N/BN, K/BK, L], BN/BK (block_rows/cols), GK (col_groups), L (lut_size). NPW x MT
tile per invocation as linear_qw (`lut_tile`); workgroups (ceil(N / (WG*NPW)),
ceil(M/MT), 1). CB_UBO / CBU_VEC4: the codebook read through a uniform block of CBU_VEC4
vec4s at descriptor 5 (`lut_uniform`); X_UBO / XU_VEC4: x through one at descriptor 6
(`x_uniform`); every path gives the same bits.""",
)


SPECS = (
    LINEAR_Q4GSW,
    LINEAR_Q8CSW,
    LINEAR_Q8TA_Q8CSW,
    LINEAR_DQ8CA_Q4GSW,
    LINEAR_DQ8CA_Q8CSW,
    LINEAR_LUT,
)
