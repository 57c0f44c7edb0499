"""Shared pieces of the kernel interfaces: workgroup counts, specialization ranges and
the exact-integer helpers each kernel's `extents` is written with.

Each kernel's `extents(push, spec)` mirrors the index expressions of its shader in
exact integers: one more than the highest 4-byte word of each binding a dispatch can
read or write (0 for a binding it does not touch). Every shader loop is bounded by
push constants (grid-stride loops, clamped tiles), so the workgroup count never widens
an extent. Push values the shaders cannot index with safely (a divisor of 0, a 32-bit
index or loop bound that would wrap) raise ValueError; `guarded` adds the kernel name
and the wrap check.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from qopt.kernels.spec import MAX_WORKGROUPS, Extents, ExtentsFn, PushValues, SpecValues

RANK = 6


def ceil_div(a: int, b: int) -> int:
    return -(-int(a) // int(b))


def group_count(n: int, per: int) -> int:
    return max(1, min(ceil_div(n, per), MAX_WORKGROUPS))


def spec_int(spec: SpecValues, name: str, default: int) -> int:
    return int(spec.get(name, default))


def shape6(push: PushValues, prefix: str) -> tuple[int, ...]:
    return tuple(int(push[f"{prefix}{i}"]) for i in range(RANK))


def grid_workgroups(count: Callable[[PushValues], int], wg: str = "WG") -> Any:
    def workgroups(push: PushValues, spec: SpecValues) -> tuple[int, int, int]:
        return (group_count(count(push), spec_int(spec, wg, 64)), 1, 1)

    return workgroups


def rows_workgroups(push: PushValues, spec: SpecValues) -> tuple[int, int, int]:
    return (max(1, min(int(push["rows"]), MAX_WORKGROUPS)), 1, 1)


U32_LIMIT = 1 << 32
"""The shaders index with uint32: an extent above 2^32 words means an index wrapped."""
FLAG = (0, 1)
WG_RANGE = (1, 1024)
"""Local size x (WG): lavapipe and desktop GPUs accept 1024 (Vulkan guarantees 128)."""
TILE_RANGE = (1, 8)
"""NPW / MT (linear_qw, matmul): they size private arrays (NPW * MT floats)."""
GROUP_RANGE = (1, 2**31 - 1)
"""GROUP_SIZE: any positive int (the per-channel kernels default to 2^30)."""
AFFINE_BITS = (4, 8)
LUT_BITS = (1, 2, 4, 8)


def guarded(name: str, fn: ExtentsFn) -> ExtentsFn:
    """`fn` with its ValueErrors naming kernel `name`, refusing extents past 2^32 words."""

    def extents(push: PushValues, spec: SpecValues) -> Extents:
        try:
            found = fn(push, spec)
            for binding, words in found.items():
                if words < 0:
                    raise ValueError(f"binding {binding} gets a negative extent {words}")
                if words > U32_LIMIT:
                    raise ValueError(
                        f"binding {binding} would be indexed up to word {words - 1}: "
                        "past 2^32 the shader's uint32 index wraps"
                    )
        except ValueError as e:
            raise ValueError(f"kernel {name}: {e}") from None
        return found

    extents.__doc__ = fn.__doc__
    extents.__name__ = fn.__name__
    return extents


def ints(push: PushValues, *names: str) -> tuple[int, ...]:
    return tuple(int(push[n]) for n in names)


def count(value: int, what: str) -> int:
    """A loop bound the shader computes in uint32 (`p.n * p.D`, ...): it must not wrap."""
    if value >= U32_LIMIT:
        raise ValueError(f"{what} = {value} does not fit 32 bits")
    return value


def nonzero(push: PushValues, *names: str) -> None:
    """Push constants the shader divides by (reached: the caller knows there is work)."""
    for n in names:
        if int(push[n]) == 0:
            raise ValueError(f"push constant {n} is 0 and the shader divides by it")


def one_of(spec: SpecValues, name: str, allowed: tuple[int, ...]) -> int:
    value = int(spec[name])
    if value not in allowed:
        raise ValueError(f"specialization constant {name} = {value} is not one of {allowed}")
    return value


def max_digits(n: int, dims: tuple[int, ...], weights: list[Callable[[int], int]]) -> int:
    """max over i < n (n >= 1, dims >= 1) of sum_k weights[k](digit k of i), the digits of i
    in the mixed radix `dims` (last fastest; the first one modulo dims[0], as the shaders'
    `rem % d[k]; rem /= d[k]` leaves it), for nondecreasing weights. Beyond n - 1 itself,
    the best index below it lowers one nonzero digit of n - 1 and maxes every later one."""
    if n >= int(np.prod(dims, dtype=object)):
        return sum(w(d - 1) for w, d in zip(weights, dims, strict=True))
    digits: list[int] = []
    rem = n - 1
    for d in reversed(dims):
        digits.append(rem % d)
        rem //= d
    digits.reverse()
    best = sum(w(t) for w, t in zip(weights, digits, strict=True))
    prefix = 0
    for k, (w, t) in enumerate(zip(weights, digits, strict=True)):
        if t > 0:
            rest = sum(wj(dj - 1) for wj, dj in zip(weights[k + 1 :], dims[k + 1 :], strict=True))
            best = max(best, prefix + w(t - 1) + rest)
        prefix += w(t)
    return best


def strided_extent(n: int, dims: tuple[int, ...], strides: tuple[int, ...], offset: int) -> int:
    """Words read or written at `offset + idx . strides` for the first n indices idx of the
    6-D space `dims` (binary / where / copy_strided: `idx = rem % d[k]`, uint32 sums)."""
    if n == 0:
        return 0
    if 0 in dims:
        raise ValueError(f"a dimension of size 0 in {list(dims)} with n = {n}")
    return offset + max_digits(n, dims, [lambda i, s=s: i * s for s in strides]) + 1


def per_element(*names: str) -> ExtentsFn:
    def extents(push: PushValues, spec: SpecValues) -> Extents:
        return dict.fromkeys(names, int(push["n"]))

    extents.__doc__ = f"Element i < n of each of {', '.join(names)} (`for (i < p.n)`, `[i]`)."
    return extents


def rows_cols(push: PushValues) -> tuple[int, int]:
    return int(push["rows"]), int(push["cols"])


def always(spec: SpecValues) -> bool:
    return True


def index_rows(v: int) -> None:
    """Row indices read from a buffer are checked in the shader as `r < int(p.V)` (after
    `r += int(p.V)` for negative r): V must be a valid int32."""
    if v >= 1 << 31:
        raise ValueError(f"V = {v} does not fit the shader's int32 row check")


def lut_rows_extents(
    push: PushValues,
    spec: SpecValues,
    rows: int,
    cols: int,
    block_rows: str,
    block_cols: str,
    col_groups: str,
) -> tuple[int, int]:
    """(codes, codebook) words of the LUT kernels reading rows r < rows, columns j < cols:
    the field codes[r*row_words + j / (32 / FBITS)], and the palette entry cb[((r / BR)*GC
    + j / BC)*L + min(code, L - 1)] (the shaders clamp the code read from the buffer)."""
    fbits = one_of(spec, "FBITS", LUT_BITS)
    if rows == 0 or cols == 0:
        return 0, 0
    nonzero(push, block_rows, block_cols, "L")
    br, bc, gc, lut = ints(push, block_rows, block_cols, col_groups, "L")
    codes = (rows - 1) * int(push["row_words"]) + (cols - 1) // (32 // fbits) + 1
    palette = (rows - 1) // br * gc + (cols - 1) // bc
    return codes, (palette + 1) * lut


def uniform_block(ext: Extents, spec: SpecValues, name: str, flag: str, vec4s: str) -> None:
    """With `flag` 1 binding `name` is also read through a uniform block of `vec4s` vec4s
    (`UniformView`, bound whole): it must cover the ext[name] words the kernel reads and
    lie inside the buffer, so ext[name] becomes its 4 * vec4s words (ValueError if fewer
    than the words read)."""
    if int(spec[flag]) != 1:
        return
    words = 4 * int(spec[vec4s])
    if words < ext[name]:
        raise ValueError(
            f"{flag} reads {name} ({ext[name]} words) through a uniform block of {words} "
            f"words ({vec4s} too small)"
        )
    ext[name] = words


def conv_extents(push: PushValues, spec: SpecValues, quantized: bool) -> Extents:
    """conv2d.glsl / conv2d_q8.glsl: output i < N*OC*OH*OW (n, oc, oh, ow), g = oc / (OC /
    groups), channels g*cg + c (c < cg = C / groups; OC need not divide evenly, so g can
    reach (OC - 1) / ocg); x[((n*C + g*cg + c)*H + ih)*W + iw] only for 0 <= ih < H,
    0 <= iw < W (int checks); tap k = (c*KH + kh)*KW + kw of w[((oc*cg + c)*KH + kh)*KW
    + kw] (float) or of the int8 row w[oc*row_words + k/4] (q8); scales[oc], zeros[oc]
    (HAS_ZERO_POINT), bias[oc] (HAS_BIAS), y[i]."""
    n, c, h, w, oc, oh, ow, kh, kw = ints(push, "N", "C", "H", "W", "OC", "OH", "OW", "KH", "KW")
    groups = int(push["groups"])
    total = count(n * oc * oh * ow, "N * OC * OH * OW")
    names = ("x", "w", "scales", "zeros", "bias", "y") if quantized else ("x", "w", "bias", "y")
    ext: Extents = dict.fromkeys(names, 0)
    nonzero(push, "groups")  # cg = C / groups runs before the loop
    if total == 0:
        return ext
    cg, ocg = c // groups, oc // groups
    if ocg == 0:
        raise ValueError(f"OC = {oc} < groups = {groups}: the shader divides by OC / groups")
    ext["y"] = total
    taps = cg * kh * kw
    if taps and h and w:
        channels = ((oc - 1) // ocg + 1) * cg  # of the last image, read by the last group
        ext["x"] = ((n - 1) * c + channels) * h * w
        if quantized:
            ext["w"] = (oc - 1) * int(push["row_words"]) + (taps - 1) // 4 + 1
        else:
            ext["w"] = oc * taps
    if quantized:
        ext["scales"] = oc
        if int(spec["HAS_ZERO_POINT"]) == 1:
            ext["zeros"] = oc
    if int(spec["HAS_BIAS"]) == 1:
        ext["bias"] = oc
    return ext
