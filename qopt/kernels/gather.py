"""Gather and scatter kernels: the kernels that index a buffer with values read from
another (gather_rows, the quantized and LUT embeddings, gather_dim for aten.index /
index_select along any dim, scatter_dim for index_put / index_copy: a KV-cache
update); each sets its status word for an index out of range."""

from __future__ import annotations

from qopt.kernels.extents import (
    AFFINE_BITS,
    FLAG,
    GROUP_RANGE,
    WG_RANGE,
    always,
    count,
    grid_workgroups,
    guarded,
    index_rows,
    ints,
    lut_rows_extents,
    one_of,
)
from qopt.kernels.spec import (
    STATUS,
    Extents,
    KernelSpec,
    PushValues,
    SpecValues,
    binding,
    push_of,
    status,
)


def _gather_extents(push: PushValues, spec: SpecValues) -> Extents:
    """gather_rows.glsl: output i < n*D reads idx[i / D] and, for a row r in [0, V)
    (checked in the shader), table[r*D + i % D]; writes y[i], and status[0] for an
    index outside [0, V)."""
    n, d, v = ints(push, "n", "D", "V")
    total = count(n * d, "n * D")
    index_rows(v)
    return {"table": v * d if total else 0, "idx": n if total else 0, "y": total, STATUS: 1}


GATHER_ROWS = KernelSpec(
    name="gather_rows",
    glsl="gather_rows.glsl",
    bindings=(binding("table", "f32"), binding("idx", "i32"), binding("y", "f32", True), status()),
    push=push_of("n", "D", "V"),
    spec=(("WG", 64),),
    workgroups=grid_workgroups(lambda p: int(p["n"]) * int(p["D"])),
    exact=always,
    extents=guarded("gather_rows", _gather_extents),
    spec_bounds={"WG": WG_RANGE},
    doc="""y[i, :] = table[idx[i], :] ([V, D] 32-bit words; an index in [-V, 0)
reads row idx + V, one outside [-V, V) reads 0; any index outside [0, V) sets
status[0] = 1, an error for the program): embedding, index_select on dim 0,
gathers of precomputed offsets.""",
)


def _embedding_workgroups(push: PushValues, spec: SpecValues) -> tuple[int, int, int]:
    """embedding_q / embedding_lut: one invocation per weight word of each output row,
    n * ceil(D / (32 / bits)) (grid-stride, at most MAX_WORKGROUPS workgroups)."""
    bits = int(spec["WBITS"]) if "WBITS" in spec else int(spec["FBITS"])
    words = -(-int(push["D"]) // (32 // bits))
    return grid_workgroups(lambda p: int(p["n"]) * words)(push, spec)


def _embedding_q_extents(push: PushValues, spec: SpecValues) -> Extents:
    """embedding_q.glsl: token t < n reads idx[t] and, for a row r in [0, V) (checked
    in the shader), the words w[r*row_words + d / (32 / WBITS)] and scales / zeros
    (HAS_ZERO_POINT) [r*ngroups + d / GROUP_SIZE] (not clamped to ngroups - 1) of the
    columns d < D (a word's first column for its scale); writes o[t*D + d], and
    status[0] for an index outside [0, V)."""
    wbits = one_of(spec, "WBITS", AFFINE_BITS)
    n, d, v, row_words, ngroups = ints(push, "n", "D", "V", "row_words", "ngroups")
    total = count(n * d, "n * D")
    index_rows(v)
    ext: Extents = dict.fromkeys(("idx", "w", "scales", "zeros", "out"), 0)
    ext[STATUS] = 1
    if total == 0:
        return ext
    ext["idx"], ext["out"] = n, total
    if v:
        ext["w"] = (v - 1) * row_words + (d - 1) // (32 // wbits) + 1
        ext["scales"] = (v - 1) * ngroups + (d - 1) // int(spec["GROUP_SIZE"]) + 1
        if int(spec["HAS_ZERO_POINT"]) == 1:
            ext["zeros"] = ext["scales"]
    return ext


def _embedding_q_spec(name: str, wbits: int, group: int, doc: str) -> KernelSpec:
    return KernelSpec(
        name=name,
        glsl="embedding_q.glsl",
        bindings=(
            binding("idx", "i32"),
            binding("w", "u32", packed="q"),
            binding("scales", "f32"),
            binding("zeros", "i32"),
            binding("out", "f32", True),
            status(),
        ),
        push=push_of("n", "D", "V", "row_words", "ngroups"),
        spec=(("WBITS", wbits), ("GROUP_SIZE", group), ("HAS_ZERO_POINT", 0), ("WG", 64)),
        workgroups=_embedding_workgroups,
        exact=always,
        extents=guarded(name, _embedding_q_extents),
        spec_bounds={
            "WBITS": AFFINE_BITS,
            "GROUP_SIZE": GROUP_RANGE,
            "HAS_ZERO_POINT": FLAG,
            "WG": WG_RANGE,
        },
        doc=doc,
    )


_EMB_DOC = """Quantized embedding: out[i, d] = (f32(field) - f32(z)) * s for row idx[i] of a
pack_affine [V, D] table (scales [V, ngroups], zeros zp - lo with HAS_ZERO_POINT).
Bit-exact with qfused's embedding (data - zp in f32, times scale). Indices as
gather_rows: [-V, 0) from the end, outside [-V, V) reads 0; outside [0, V) sets
status[0] = 1."""


EMBEDDING_Q4GSW = _embedding_q_spec("embedding_q4gsw", 4, 32, _EMB_DOC)


EMBEDDING_Q8CSW = _embedding_q_spec("embedding_q8csw", 8, 1 << 30, _EMB_DOC)


def _embedding_lut_extents(push: PushValues, spec: SpecValues) -> Extents:
    """embedding_lut.glsl: output i < n*D reads idx[i / D] and, for a row r in [0, V)
    (checked in the shader), the codes and palettes of row r (`lut_rows_extents`,
    columns d < D); writes o[i], and status[0] for an index outside [0, V)."""
    n, d, v = ints(push, "n", "D", "V")
    total = count(n * d, "n * D")
    index_rows(v)
    ext: Extents = dict.fromkeys(("idx", "codes", "codebook", "out"), 0)
    ext[STATUS] = 1
    if total == 0:
        return ext
    ext["idx"], ext["out"] = n, total
    ext["codes"], ext["codebook"] = lut_rows_extents(push, spec, v, d, "BV", "BD", "GD")
    return ext


EMBEDDING_LUT = KernelSpec(
    name="embedding_lut",
    glsl="embedding_lut.glsl",
    bindings=(
        binding("idx", "i32"),
        binding("codes", "u32", packed="lut"),
        binding("codebook", "f32"),
        binding("out", "f32", True),
        status(),
    ),
    push=push_of("n", "D", "V", "row_words", "BV", "BD", "GD", "L"),
    spec=(("FBITS", 4), ("WG", 64)),
    workgroups=_embedding_workgroups,
    exact=always,
    extents=guarded("embedding_lut", _embedding_lut_extents),
    spec_bounds={"FBITS": (1, 8), "WG": WG_RANGE},
    doc="""LUT embedding (pack_lut of the [V, D] table; BV/BD block, GD col
groups, L entries). Bit-exact. Indices as gather_rows (status[0] = 1 outside [0, V)).""",
)


def _dim_sizes(push: PushValues) -> tuple[int, int, int, int, int]:
    """(P, N, Q, S, total) of gather_dim / scatter_dim: a [P, N, Q] buffer indexed along
    N by S indices; `total = P*S*Q` invocations (a uint32 loop bound), and the words
    `P*N*Q` of the indexed buffer (a uint32 index) must not wrap either."""
    p, n, q, s = ints(push, "P", "N", "Q", "S")
    total = count(p * s * q, "P * S * Q")
    count(p * n * q, "P * N * Q")
    if n >= 1 << 31:
        raise ValueError(f"N = {n} does not fit the shader's int32 row check")
    return p, n, q, s, total


def _gather_dim_extents(push: PushValues, spec: SpecValues) -> Extents:
    """gather_dim.glsl: invocation i < P*S*Q = (p, s, q) reads idx[s] and, for a row r
    in [0, N) (checked in the shader, after r += N for a negative r when NEG), the word
    x[(p*N + r)*Q + q]; writes y[i], and status[0] for an invalid index."""
    p, n, q, s, total = _dim_sizes(push)
    if total == 0:
        return {"x": 0, "idx": 0, "y": 0, STATUS: 1}
    return {"x": p * n * q, "idx": s, "y": total, STATUS: 1}


GATHER_DIM = KernelSpec(
    name="gather_dim",
    glsl="gather_dim.glsl",
    bindings=(binding("x", "u32"), binding("idx", "i32"), binding("y", "u32", True), status()),
    push=push_of("P", "N", "Q", "S"),
    spec=(("NEG", 0), ("WG", 64)),
    workgroups=grid_workgroups(lambda p: int(p["P"]) * int(p["S"]) * int(p["Q"])),
    exact=always,
    extents=guarded("gather_dim", _gather_dim_extents),
    spec_bounds={"NEG": FLAG, "WG": WG_RANGE},
    doc="""y[p, s, q] = x[p, idx[s], q] (x [P, N, Q], y [P, S, Q], 32-bit words): a gather
along one dim with run-time indices (aten.index with one indexed dim, index_select).
NEG = 1: an index in [-N, 0) counts from the end (advanced indexing); NEG = 0: only
[0, N) is valid (index_select). An invalid index reads 0 and sets status[0] = 1, an
error for the program.""",
)


def _scatter_dim_extents(push: PushValues, spec: SpecValues) -> Extents:
    """scatter_dim.glsl: invocation i < P*S*Q = (p, s, q) reads idx[s] and idx[s'] for
    every later s' < S (last write wins), vals[i] (VMAP = 1: vals[VOFF + p*VSP + s*VSS
    + q*VSQ], strides >= 0), and for a row r in [0, N) (checked in the shader, after r
    += N for a negative r when NEG) writes out[(p*N + r)*Q + q]; status[0] for an
    invalid index."""
    p, n, q, s, total = _dim_sizes(push)
    if total == 0:
        return {"vals": 0, "idx": 0, "out": 0, STATUS: 1}
    vals = total
    if int(spec["VMAP"]) == 1:
        off, sp, ss, sq = (int(spec[k]) for k in ("VOFF", "VSP", "VSS", "VSQ"))
        vals = count(off + (p - 1) * sp + (s - 1) * ss + (q - 1) * sq + 1, "the vals map")
    return {"vals": vals, "idx": s, "out": p * n * q, STATUS: 1}


SCATTER_DIM = KernelSpec(
    name="scatter_dim",
    glsl="scatter_dim.glsl",
    bindings=(
        binding("vals", "u32"),
        binding("idx", "i32"),
        binding("out", "u32", True),
        status(),
    ),
    push=push_of("P", "N", "Q", "S"),
    spec=(("NEG", 0), ("WG", 64), ("VMAP", 0), ("VOFF", 0), ("VSP", 0), ("VSS", 0), ("VSQ", 0)),
    workgroups=grid_workgroups(lambda p: int(p["P"]) * int(p["S"]) * int(p["Q"])),
    exact=always,
    extents=guarded("scatter_dim", _scatter_dim_extents),
    spec_bounds={
        "NEG": FLAG,
        "WG": WG_RANGE,
        "VMAP": FLAG,
        **{k: (0, (1 << 31) - 1) for k in ("VOFF", "VSP", "VSS", "VSQ")},
    },
    doc="""out[p, idx[s], q] = vals[p, s, q] (out [P, N, Q], vals [P, S, Q], 32-bit
words): S rows written at run-time positions along one dim, the rest of out kept
(aten.index_put with one indexed dim, index_copy; a KV-cache update, in place in a
state buffer). Repeated indices: the last wins. NEG = 1: [-N, 0) counts from the end
(index_put); NEG = 0: only [0, N) (index_copy). An invalid index writes nothing and
sets status[0] = 1, an error for the program. VMAP = 1: vals[p, s, q] is the word
VOFF + p*VSP + s*VSS + q*VSQ (a strided source: vkc-fold-copies).""",
)


def _assert_true_extents(push: PushValues, spec: SpecValues) -> Extents:
    """assert_true.glsl: one invocation reads cond[0] and may set status[0]."""
    return {"cond": 1, STATUS: 1}


ASSERT_TRUE = KernelSpec(
    name="assert_true",
    glsl="assert_true.glsl",
    bindings=(binding("cond", "i32"), status()),
    push=(),
    local_size=(1, 1, 1),
    exact=always,
    extents=guarded("assert_true", _assert_true_extents),
    doc="""status[0] = 1 when cond[0] == 0: aten.assert_scalar, a run-time check torch
recorded at export (an error for the program naming the check).""",
)


SPECS = (
    ASSERT_TRUE,
    GATHER_ROWS,
    EMBEDDING_Q4GSW,
    EMBEDDING_Q8CSW,
    EMBEDDING_LUT,
    GATHER_DIM,
    SCATTER_DIM,
)
