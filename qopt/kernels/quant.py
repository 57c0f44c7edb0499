"""Standalone quantization kernels: quantize / dequantize and run-time qparams."""

from __future__ import annotations

from qopt.kernels.extents import (
    FLAG,
    WG_RANGE,
    always,
    count,
    grid_workgroups,
    guarded,
    max_digits,
    nonzero,
    one_of,
    per_element,
    rows_cols,
    rows_workgroups,
)
from qopt.kernels.opcodes import MAPPINGS
from qopt.kernels.spec import Extents, KernelSpec, PushValues, SpecValues, binding, push_of

QUANTIZE_PER_TENSOR = KernelSpec(
    name="quantize_per_tensor",
    glsl="quantize_per_tensor.glsl",
    bindings=(binding("x", "f32"), binding("q", "i32", True)),
    push=(("n", "u32"), ("inv_scale", "f32"), ("zp", "i32"), ("qmin", "i32"), ("qmax", "i32")),
    spec=(("ZP_BEFORE_ROUND", 0), ("WG", 64)),
    workgroups=grid_workgroups(lambda p: int(p["n"])),
    exact=always,
    extents=guarded("quantize_per_tensor", per_element("x", "q")),
    spec_bounds={"ZP_BEFORE_ROUND": FLAG, "WG": WG_RANGE},
    doc="""q = clamp(roundEven(x * inv_scale) + zp, qmin, qmax) in f32
(inv_scale = f32(1 / scale) computed in double by the host, as PT2E does); bit-exact.""",
)


def _dequantize_extents(push: PushValues, spec: SpecValues) -> Extents:
    """dequantize.glsl: element i < n (4-D index idx of d0..d3) writes y[i] and reads
    scales / zeros (HAS_ZERO_POINT) at blk = sum_j (idx_j / b_j) * ps_j, and data[i]
    (BITS 32) or the packed word data[(i / d3) * row_words + (i % d3) / (32 / BITS)]."""
    n = int(push["n"])
    bits = one_of(spec, "BITS", (4, 8, 32))
    ext: Extents = dict.fromkeys(("data", "scales", "zeros", "y"), 0)
    if n == 0:
        return ext
    dims = tuple(int(push[f"d{j}"]) for j in range(4))
    nonzero(push, *(f"d{j}" for j in range(4)), *(f"b{j}" for j in range(4)))
    blocks = [(int(push[f"b{j}"]), int(push[f"ps{j}"])) for j in range(4)]
    blk = max_digits(n, dims, [lambda i, b=b, s=s: (i // b) * s for b, s in blocks])
    ext["y"] = n
    ext["scales"] = blk + 1
    if int(spec["HAS_ZERO_POINT"]) == 1:
        ext["zeros"] = blk + 1
    if bits == 32:
        ext["data"] = n
    else:
        cols, row_words, vpw = dims[3], int(push["row_words"]), 32 // bits
        row, col = divmod(n - 1, cols)  # the last element; the row before may end further
        last = row * row_words + col // vpw
        if row:
            last = max(last, (row - 1) * row_words + (cols - 1) // vpw)
        ext["data"] = last + 1
    return ext


DEQUANTIZE = KernelSpec(
    name="dequantize",
    glsl="dequantize.glsl",
    bindings=(
        binding("data", "i32"),
        binding("scales", "f32"),
        binding("zeros", "i32"),
        binding("y", "f32", True),
    ),
    push=(
        ("n", "u32"),
        *push_of(*(f"d{i}" for i in range(4))),
        *push_of(*(f"b{i}" for i in range(4))),
        *push_of(*(f"ps{i}" for i in range(4))),
        ("row_words", "u32"),
        ("lo", "i32"),
    ),
    spec=(("BITS", 32), ("HAS_ZERO_POINT", 0), ("WG", 64)),
    workgroups=grid_workgroups(lambda p: int(p["n"])),
    exact=always,
    extents=guarded("dequantize", _dequantize_extents),
    spec_bounds={"BITS": (4, 32), "HAS_ZERO_POINT": FLAG, "WG": WG_RANGE},
    doc="""y = (v - zp[blk]) * scale[blk] in f32 over a rank <= 4 shape d0..d3
(leading 1s) with block sizes b0..b3 and parameter strides ps0..ps3 (row-major over the
block grid); BITS 32: v = data (i32 per element); BITS 4/8: data packed with
packing.pack_bits along the last dim (row_words, lo). Bit-exact.""",
)


def _choose_extents(push: PushValues, spec: SpecValues) -> Extents:
    """choose_qparams_rows.glsl: row r < rows reads x[r * cols + c] (c < cols) and writes
    scale_out[r], zp_out[r]."""
    rows, cols = rows_cols(push)
    return {"x": rows * cols, "scale": rows, "zp": rows}


CHOOSE_QPARAMS_ROWS = KernelSpec(
    name="choose_qparams_rows",
    glsl="choose_qparams_rows.glsl",
    bindings=(binding("x", "f32"), binding("scale", "f32", True), binding("zp", "i32", True)),
    push=(("rows", "u32"), ("cols", "u32"), ("qmin", "i32"), ("qmax", "i32"), ("eps", "f32")),
    spec=(("MAPPING", MAPPINGS["asymmetric"]),),
    workgroups=rows_workgroups,
    exact=always,
    extents=guarded("choose_qparams_rows", _choose_extents),
    spec_bounds={"MAPPING": (min(MAPPINGS.values()), max(MAPPINGS.values()))},
    doc="""Per-row (per-token; per-tensor: rows = 1) scale f32 / zp i32
as quant.choose_qparams computes them in f32; MAPPING (MAPPINGS). Bit-exact (with an
IEEE-exact float divide, as lavapipe has).""",
)


def _quantize_rows_extents(push: PushValues, spec: SpecValues) -> Extents:
    """quantize_rows.glsl: element i < rows*cols reads x[i], scales[i / cols], zps[i / cols]
    and writes q[i]."""
    rows, cols = rows_cols(push)
    total = count(rows * cols, "rows * cols")
    per_row = rows if total else 0
    return {"x": total, "scale": per_row, "zp": per_row, "q": total}


QUANTIZE_ROWS = KernelSpec(
    name="quantize_rows",
    glsl="quantize_rows.glsl",
    bindings=(
        binding("x", "f32"),
        binding("scale", "f32"),
        binding("zp", "i32"),
        binding("q", "i32", True),
    ),
    push=(("rows", "u32"), ("cols", "u32"), ("qmin", "i32"), ("qmax", "i32")),
    spec=(("ZP_BEFORE_ROUND", 0), ("WG", 64)),
    workgroups=grid_workgroups(lambda p: int(p["rows"]) * int(p["cols"])),
    exact=always,
    extents=guarded("quantize_rows", _quantize_rows_extents),
    spec_bounds={"ZP_BEFORE_ROUND": FLAG, "WG": WG_RANGE},
    doc="""Dynamic per-row quantization: q = clamp(roundEven(x * f32(1 /
scale[r])) + zp[r], qmin, qmax) in f32 (qopt.numerics.quant.quantize). Bit-exact.""",
)


def _quantize_dynamic_extents(push: PushValues, spec: SpecValues) -> Extents:
    """quantize_rows_dynamic.glsl: row r < rows reads x[r * cols + c] (c < cols), writes
    scale_out[r], zp_out[r] and q[r * cols + c]."""
    rows, cols = rows_cols(push)
    total = count(rows * cols, "rows * cols")
    return {"x": total, "scale": rows, "zp": rows, "q": total}


QUANTIZE_ROWS_DYNAMIC = KernelSpec(
    name="quantize_rows_dynamic",
    glsl="quantize_rows_dynamic.glsl",
    bindings=(
        binding("x", "f32"),
        binding("scale", "f32", True),
        binding("zp", "i32", True),
        binding("q", "i32", True),
    ),
    push=(
        ("rows", "u32"),
        ("cols", "u32"),
        ("qmin", "i32"),
        ("qmax", "i32"),
        ("eps", "f32"),
        ("q_qmin", "i32"),
        ("q_qmax", "i32"),
    ),
    spec=(("MAPPING", MAPPINGS["asymmetric"]), ("ZP_BEFORE_ROUND", 0)),
    workgroups=rows_workgroups,
    exact=always,
    extents=guarded("quantize_rows_dynamic", _quantize_dynamic_extents),
    spec_bounds={
        "MAPPING": (min(MAPPINGS.values()), max(MAPPINGS.values())),
        "ZP_BEFORE_ROUND": FLAG,
    },
    doc="""choose_qparams_rows (push rows, cols, qmin, qmax, eps; MAPPING) and
quantize_rows (q_qmin, q_qmax; ZP_BEFORE_ROUND) of one x in one dispatch
(vkc-fuse-norms): the row's scale / zp written out and used for its elements. Bit-exact
to the two kernels.""",
)


SPECS = (QUANTIZE_PER_TENSOR, DEQUANTIZE, CHOOSE_QPARAMS_ROWS, QUANTIZE_ROWS, QUANTIZE_ROWS_DYNAMIC)
