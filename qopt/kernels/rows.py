"""Row kernels: reductions and normalisation over the last dim of [rows, cols]."""

from __future__ import annotations

from qopt.kernels.extents import FLAG, always, guarded, rows_cols, rows_workgroups
from qopt.kernels.opcodes import MAPPINGS, REDUCE_OPS
from qopt.kernels.spec import Extents, KernelSpec, PushValues, SpecValues, binding, push_of


def _reduce_extents(push: PushValues, spec: SpecValues) -> Extents:
    """reduce_rows.glsl: row r < rows reads x[r * cols + c] for c < cols (the chains
    `base + i * 32 + t` with i < cols / 32, the leftover vectors `base + v * 8 + t` with
    v < cols / 8 and the scalar tail all stay below cols) and writes y[r] (also when
    cols = 0)."""
    rows, cols = rows_cols(push)
    return {"x": rows * cols, "y": rows}


REDUCE_ROWS = KernelSpec(
    name="reduce_rows",
    glsl="reduce_rows.glsl",
    bindings=(binding("x", "f32"), binding("y", "f32", True)),
    push=push_of("rows", "cols"),
    spec=(("OP", REDUCE_OPS["sum"]), ("PRE", 0)),
    local_size=(32, 1, 1),
    workgroups=rows_workgroups,
    exact=always,
    extents=guarded("reduce_rows", _reduce_extents),
    spec_bounds={"OP": (min(REDUCE_OPS.values()), max(REDUCE_OPS.values())), "PRE": FLAG},
    doc="""y[r] = reduce(x[r, :]) over the last dim of [rows, cols]; OP
(REDUCE_OPS: sum, mean, max, min); PRE = 1 reduces x * x (f32) instead (a squaring
producer folded in by vkc-fuse-elementwise). Other reduction dims: permute with
copy_strided first.""",
)


def _softmax_extents(push: PushValues, spec: SpecValues) -> Extents:
    """softmax_rows.glsl: x[r * cols + c] and y[r * cols + c] for r < rows, c < cols."""
    rows, cols = rows_cols(push)
    return {"x": rows * cols, "y": rows * cols}


SOFTMAX_ROWS = KernelSpec(
    name="softmax_rows",
    glsl="softmax_rows.glsl",
    bindings=(binding("x", "f32"), binding("y", "f32", True)),
    push=push_of("rows", "cols"),
    spec=(("LOG", 0),),
    workgroups=rows_workgroups,
    extents=guarded("softmax_rows", _softmax_extents),
    spec_bounds={"LOG": FLAG},
    doc="softmax (LOG = 1: log_softmax) over the last dim of [rows, cols].",
)


def _layer_norm_extents(push: PushValues, spec: SpecValues) -> Extents:
    """layer_norm_rows.glsl: x[r * cols + c], y[r * cols + c] (r < rows, c < cols),
    w[c] (HAS_WEIGHT), bias[c] (HAS_BIAS)."""
    rows, cols = rows_cols(push)
    per_col = cols if rows else 0
    return {
        "x": rows * cols,
        "weight": per_col if int(spec["HAS_WEIGHT"]) == 1 else 0,
        "bias": per_col if int(spec["HAS_BIAS"]) == 1 else 0,
        "y": rows * cols,
    }


LAYER_NORM_ROWS = KernelSpec(
    name="layer_norm_rows",
    glsl="layer_norm_rows.glsl",
    bindings=(
        binding("x", "f32"),
        binding("weight", "f32"),
        binding("bias", "f32"),
        binding("y", "f32", True),
    ),
    push=(("rows", "u32"), ("cols", "u32"), ("eps", "f32")),
    spec=(("HAS_WEIGHT", 1), ("HAS_BIAS", 1), ("RMS", 0)),
    workgroups=rows_workgroups,
    extents=guarded("layer_norm_rows", _layer_norm_extents),
    spec_bounds={"HAS_WEIGHT": FLAG, "HAS_BIAS": FLAG, "RMS": FLAG},
    doc="""layer_norm (RMS = 0; biased variance) or rms_norm (RMS = 1) over
the last dim of [rows, cols], optional weight/bias [cols]; push rows, cols, eps.""",
)


def _rms_norm_extents(push: PushValues, spec: SpecValues) -> Extents:
    """rms_norm_rows.glsl: a[r * cols + c], y[r * cols + c] (r < rows, c < cols), the same
    words of b (HAS_ADD), h (HAS_H) and q (QUANT), w[w_off + c], scale[r] and zp[r]
    (QUANT)."""
    rows, cols = rows_cols(push)
    total = rows * cols
    quant = int(spec["QUANT"]) == 1
    return {
        "a": total,
        "b": total if int(spec["HAS_ADD"]) == 1 else 0,
        "w": int(push["w_off"]) + cols if total else 0,
        "h": total if int(spec["HAS_H"]) == 1 else 0,
        "y": total,
        "scale": rows if quant and total else 0,
        "zp": rows if quant and total else 0,
        "q": total if quant else 0,
    }


RMS_NORM_ROWS = KernelSpec(
    name="rms_norm_rows",
    glsl="rms_norm_rows.glsl",
    bindings=(
        binding("a", "f32"),
        binding("b", "f32"),
        binding("w", "f32"),
        binding("h", "f32", True),
        binding("y", "f32", True),
        binding("scale", "f32", True),
        binding("zp", "i32", True),
        binding("q", "i32", True),
    ),
    push=(
        ("rows", "u32"),
        ("cols", "u32"),
        ("alpha", "f32"),
        ("eps", "f32"),
        ("w_off", "u32"),
        ("qmin", "i32"),
        ("qmax", "i32"),
        ("q_eps", "f32"),
        ("q_qmin", "i32"),
        ("q_qmax", "i32"),
    ),
    spec=(
        ("HAS_ADD", 0),
        ("HAS_H", 0),
        ("QUANT", 0),
        ("MAPPING", MAPPINGS["asymmetric"]),
        ("ZP_BEFORE_ROUND", 0),
    ),
    local_size=(32, 1, 1),
    workgroups=rows_workgroups,
    exact=always,
    extents=guarded("rms_norm_rows", _rms_norm_extents),
    spec_bounds={
        "HAS_ADD": FLAG,
        "HAS_H": FLAG,
        "QUANT": FLAG,
        "MAPPING": (min(MAPPINGS.values()), max(MAPPINGS.values())),
        "ZP_BEFORE_ROUND": FLAG,
    },
    doc="""RMSNorm of [rows, cols] exactly as its decomposition computes it in f32
(vkc-fuse-norms): h = a (+ alpha * b if HAS_ADD), y = (h * (1 / sqrt(mean(h * h) + eps)))
* w[w_off + c], the mean as reduce_rows adds it (torch's CPU order); h also written to
`h` if HAS_H. QUANT = 1 also quantizes y per row exactly as quantize_rows_dynamic does
(MAPPING, ZP_BEFORE_ROUND; push qmin, qmax, q_eps for its scale / zp, q_qmin, q_qmax
for q): scale[r], zp[r] and q[r, c] written. Bit-exact to reduce_rows + binary/unary
(+ quantize_rows_dynamic).""",
)


SPECS = (REDUCE_ROWS, SOFTMAX_ROWS, LAYER_NORM_ROWS, RMS_NORM_ROWS)
