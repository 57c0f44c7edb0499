"""Gather kernels: the kernels that index a table with values read from a buffer
(gather_rows, the quantized and LUT embeddings); each sets its status word for an
index out of range."""

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


def _embedding_q_extents(push: PushValues, spec: SpecValues) -> Extents:
    """embedding_q.glsl: output i < n*D reads idx[i / D] and, for a row r in [0, V)
    (checked in the shader), column d = i % D: the field w[r*row_words + d / (32 /
    WBITS)], scales / zeros (HAS_ZERO_POINT) [r*ngroups + d / GROUP_SIZE] (not clamped
    to ngroups - 1); writes o[i], and status[0] for an index outside [0, V)."""
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
        workgroups=grid_workgroups(lambda p: int(p["n"]) * int(p["D"])),
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
    workgroups=grid_workgroups(lambda p: int(p["n"]) * int(p["D"])),
    exact=always,
    extents=guarded("embedding_lut", _embedding_lut_extents),
    spec_bounds={"FBITS": (1, 8), "WG": WG_RANGE},
    doc="""LUT embedding (pack_lut of the [V, D] table; BV/BD block, GD col
groups, L entries). Bit-exact. Indices as gather_rows (status[0] = 1 outside [0, V)).""",
)


SPECS = (GATHER_ROWS, EMBEDDING_Q4GSW, EMBEDDING_Q8CSW, EMBEDDING_LUT)
