"""Push-constant values the kernels take, computed the way the lowering and the tests
build them (6-D broadcast strides, static quantization parameters, raw words)."""

from __future__ import annotations

import numpy as np

from qopt.kernels.extents import RANK


def elementwise_push(shape: tuple[int, ...], **strides: tuple[int, ...]) -> dict[str, int]:
    """Push values `d0..d5` and `<prefix>0..5` strides for a <= 6-D broadcast, e.g.
    `elementwise_push(out.shape, sa=a_strides, sb=b_strides)` (strides in elements,
    0 for broadcast dims); also sets `n`."""
    pad = RANK - len(shape)
    if pad < 0:
        raise ValueError(f"rank {len(shape)} > {RANK}")
    values: dict[str, int] = {"n": int(np.prod(shape, dtype=np.int64))}
    for i, d in enumerate((1,) * pad + tuple(shape)):
        values[f"d{i}"] = int(d)
    for prefix, st in strides.items():
        for i, s in enumerate((0,) * pad + tuple(st)):
            values[f"{prefix}{i}"] = int(s)
    return values


def broadcast_strides(shape: tuple[int, ...], out_shape: tuple[int, ...]) -> tuple[int, ...]:
    """Element strides of a contiguous `shape` broadcast to `out_shape` (0 = broadcast)."""
    shape = (1,) * (len(out_shape) - len(shape)) + tuple(shape)
    strides: list[int] = []
    acc = 1
    for d in reversed(shape):
        strides.append(0 if d == 1 else acc)
        acc *= d
    return tuple(
        0 if d == 1 and o != 1 else s
        for d, o, s in zip(shape, out_shape, reversed(strides), strict=True)
    )


def word_of(value: float, dtype: str = "f32") -> int:
    """The 32-bit word of a scalar (for push constants declared as raw words)."""
    np_type = {"f32": np.float32, "i32": np.int32, "u32": np.uint32}[dtype]
    return int(np.asarray(value, dtype=np_type).view(np.uint32))


def conv_out(size: int, kernel: int, stride: int, pad: int, dilation: int) -> int:
    return (size + 2 * pad - dilation * (kernel - 1) - 1) // stride + 1


STATIC_IO = (
    ("in_inv_scale", "f32"),
    ("in_zp", "i32"),
    ("in_qmin", "i32"),
    ("in_qmax", "i32"),
    ("in_scale", "f32"),
    ("out_inv_scale", "f32"),
    ("out_zp", "i32"),
    ("out_qmin", "i32"),
    ("out_qmax", "i32"),
    ("clamp_min", "f32"),
    ("clamp_max", "f32"),
)


def static_io_push(
    act: tuple[float, int, int, int] | None,
    requant: tuple[float, int, int, int] | None = None,
    clamp_min: float | None = None,
    clamp_max: float | None = None,
) -> dict[str, float | int]:
    """Push values of the static-activation kernels from (scale, zp, qmin, qmax) tuples:
    inverse scales as PT2E computes them (1 / scale in double, then f32)."""
    values: dict[str, float | int] = {
        "clamp_min": -np.inf if clamp_min is None else clamp_min,
        "clamp_max": np.inf if clamp_max is None else clamp_max,
    }
    for prefix, q in (("in", act), ("out", requant)):
        scale, zp, qmin, qmax = q if q is not None else (1.0, 0, -128, 127)
        values[f"{prefix}_inv_scale"] = float(np.float32(1.0 / scale))
        values[f"{prefix}_zp"], values[f"{prefix}_qmin"], values[f"{prefix}_qmax"] = zp, qmin, qmax
        if prefix == "in":
            values["in_scale"] = float(np.float32(scale))
    return values
