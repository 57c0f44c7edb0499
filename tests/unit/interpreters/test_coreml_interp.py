"""The numpy semantics of coreml ops (qopt/interpreters/coreml.py) where MIL allows
more than the common case, against torch or independent numpy references:

- `conv` and the pools over 1, 2 and 3 spatial dims (MIL: rank 3 to 5);
- `same` / `same_lower` padding: the total of coremltools' `aggregated_pad`, split
  with the odd element at the end (`same`) or the beginning (`same_lower`), and
  the output sizes of coremltools' `spatial_dimensions_out_shape`;
- `layer_norm` over axes that are not the trailing dims (gamma / beta hold x's
  dims at `axes`);
- `concat` with `interleave` and negative axes;
- `matmul` with one constant operand of another type (iOS17+: the result has the
  non-constant operand's type);
- `constexpr_lut_to_dense` with a negative `vector_axis`;
- the safety net: a result whose shape or dtype is not the op's declared type is
  a QoptError naming the op.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from coremltools.converters.mil.mil.ops.defs._utils import (
    aggregated_pad,
    spatial_dimensions_out_shape,
)
from coremltools.optimize._utils import lut_to_dense as coremltools_lut_to_dense

import qopt
from qopt.context import parse_module
from qopt.dialects.queries import entry_function
from qopt.errors import QoptError
from qopt.interpreters import coreml as coreml_interp
from qopt.interpreters import make_interpreter

RNG = np.random.default_rng(0)


def tensor(shape: Sequence[int], elem: str = "f32") -> str:
    return f"tensor<{'x'.join(map(str, [*shape, elem]))}>" if shape else f"tensor<{elem}>"


def ints(values: Sequence[int]) -> str:
    return f"array<i64: {', '.join(map(str, values))}>"


def dense(array: np.ndarray, elem: str) -> str:
    values = array.tolist()
    return f"dense<{json.dumps(values)}> : {tensor(array.shape, elem)}"


def function(args: Sequence[str], results: Sequence[str], lines: str, opset: str) -> str:
    """`@forward(%a0: T0, ...)` returning the last line's value (`%r`)."""
    params = ", ".join(f"%a{i}: {t}" for i, t in enumerate(args))
    return (
        f"func.func @forward({params}) -> ({', '.join(results)}) "
        f'attributes {{coreml.opset = "{opset}"}} {{\n{lines}\n'
        f"  func.return %r : {', '.join(results)}\n}}"
    )


def run(lines: str, inputs: Sequence[np.ndarray], result: str, opset: str = "iOS18") -> np.ndarray:
    args = [tensor(x.shape, {"float32": "f32", "float16": "f16"}[str(x.dtype)]) for x in inputs]
    module = parse_module(function(args, [result], lines, opset))
    return qopt.interpret(module, *inputs)[0]


def randn(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def torch_pad(pairs: Sequence[tuple[int, int]]) -> list[int]:
    """F.pad's argument (last dim first) from (before, after) per spatial dim."""
    return [p for before, after in reversed(pairs) for p in (before, after)]


# ----- conv -----------------------------------------------------------------------------

TORCH_CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}


def conv_ref(
    x: np.ndarray,
    w: np.ndarray,
    b: np.ndarray | None,
    pairs: Sequence[tuple[int, int]],
    strides: Sequence[int],
    dilations: Sequence[int],
    groups: int,
) -> np.ndarray:
    xt = F.pad(torch.from_numpy(x), torch_pad(pairs))
    bias = None if b is None else torch.from_numpy(b)
    conv = TORCH_CONV[len(strides)]
    return conv(xt, torch.from_numpy(w), bias, list(strides), 0, list(dilations), groups).numpy()


def conv_lines(
    x_shape: Sequence[int],
    w: np.ndarray,
    b: np.ndarray | None,
    out: Sequence[int],
    strides: Sequence[int],
    pad_type: str,
    pad: Sequence[int],
    dilations: Sequence[int],
    groups: int,
) -> str:
    operands = "%a0, %w" + (", %b" if b is not None else "")
    types = f"{tensor(x_shape)}, {tensor(w.shape)}" + (
        f", {tensor(b.shape)}" if b is not None else ""
    )
    lines = f"  %w = coreml.const {dense(w, 'f32')}\n"
    if b is not None:
        lines += f"  %b = coreml.const {dense(b, 'f32')}\n"
    lines += (
        f'  %r = coreml.conv {operands} {{strides = {ints(strides)}, pad_type = "{pad_type}", '
        f"pad = {ints(pad)}, dilations = {ints(dilations)}, groups = {groups} : i64}} "
        f": ({types}) -> {tensor(out)}"
    )
    return lines


SPATIAL = (1, 2, 3)


@pytest.mark.parametrize("spatial", SPATIAL)
def test_conv_custom_padding_matches_torch(spatial: int) -> None:
    """Asymmetric custom padding, strides, dilations, groups and bias, in 1-D to 3-D."""
    size, kernel = (9, 7, 6)[:spatial], (3, 2, 3)[:spatial]
    strides, dilations = (2, 1, 2)[:spatial], (1, 2, 1)[:spatial]
    pairs = [(1, 2), (0, 1), (2, 0)][:spatial]
    x, w, b = randn(2, 4, *size), randn(6, 2, *kernel), randn(6)
    want = conv_ref(x, w, b, pairs, strides, dilations, 2)
    pad = [p for pair in pairs for p in pair]
    lines = conv_lines(x.shape, w, b, want.shape, strides, "custom", pad, dilations, 2)
    got = run(lines, [x], tensor(want.shape))
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("pad_type", ["same", "same_lower"])
@pytest.mark.parametrize("spatial", SPATIAL)
def test_conv_same_padding_split(spatial: int, pad_type: str) -> None:
    """`same` pads coremltools' total with the odd element at the end, `same_lower`
    at the beginning; the output is `ceil(d / s)` (coremltools' shape rule)."""
    size, kernel = (5, 6, 7)[:spatial], (4, 3, 2)[:spatial]
    strides, dilations = (2, 2, 3)[:spatial], (1, 2, 1)[:spatial]
    totals = aggregated_pad(pad_type, kernel, size, strides, dilations)
    assert any(t % 2 for t in totals)  # an odd total: the split matters
    pairs = [(t // 2, t - t // 2) if pad_type == "same" else (t - t // 2, t // 2) for t in totals]
    x, w = randn(1, 3, *size), randn(2, 3, *kernel)
    want = conv_ref(x, w, None, pairs, strides, dilations, 1)
    out = spatial_dimensions_out_shape(pad_type, size, kernel, strides, dilations)
    assert want.shape[2:] == tuple(out) == tuple(-(-d // s) for d, s in zip(size, strides))
    lines = conv_lines(x.shape, w, None, want.shape, strides, pad_type, [0] * 2 * spatial,
                       dilations, 1)  # fmt: skip
    got = run(lines, [x], tensor(want.shape))
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_conv_fp16() -> None:
    x, w = randn(1, 2, 6).astype(np.float16), randn(3, 2, 3).astype(np.float16)
    lines = (
        f"  %w = coreml.const {dense(w, 'f16')}\n"
        f'  %r = coreml.conv %a0, %w {{strides = {ints([1])}, pad_type = "valid", '
        f"pad = {ints([0, 0])}, dilations = {ints([1])}, groups = 1 : i64}} "
        f": ({tensor(x.shape, 'f16')}, {tensor(w.shape, 'f16')}) -> {tensor([1, 3, 4], 'f16')}"
    )
    got = run(lines, [x], tensor([1, 3, 4], "f16"))
    assert got.dtype == np.float16
    want = F.conv1d(torch.from_numpy(x).float(), torch.from_numpy(w).float()).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-2)


# ----- pooling --------------------------------------------------------------------------

TORCH_MAX = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}
TORCH_AVG = {1: F.avg_pool1d, 2: F.avg_pool2d, 3: F.avg_pool3d}


def pool_lines(
    kind: str,
    x_shape: Sequence[int],
    out: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int],
    pad_type: str,
    pad: Sequence[int],
    ceil_mode: bool = False,
    exclude: bool | None = None,
) -> str:
    extra = "" if exclude is None else f", exclude_padding_from_average = {str(exclude).lower()}"
    return (
        f"  %r = coreml.{kind} %a0 {{kernel_sizes = {ints(kernel)}, strides = {ints(strides)}, "
        f'pad_type = "{pad_type}", pad = {ints(pad)}, ceil_mode = {str(ceil_mode).lower()}'
        f"{extra}}} : ({tensor(x_shape)}) -> {tensor(out)}"
    )


POOL_CASES = [
    # spatial, input size, kernel, strides, symmetric padding, ceil_mode
    (1, (9,), (3,), (2,), (1,), False),
    (1, (6,), (3,), (2,), (1,), True),  # the last window runs past the end padding
    (2, (6, 5), (3, 2), (2, 1), (1, 0), True),
    (2, (7, 6), (3, 3), (2, 2), (1, 1), False),
    (3, (5, 6, 4), (3, 2, 2), (2, 2, 1), (1, 1, 0), False),
    (3, (4, 4, 4), (2, 2, 2), (2, 2, 2), (0, 0, 0), False),
]


@pytest.mark.parametrize(
    ("spatial", "size", "kernel", "strides", "padding", "ceil_mode"),
    POOL_CASES,
    ids=[f"{c[0]}d-{i}" for i, c in enumerate(POOL_CASES)],
)
@pytest.mark.parametrize("kind", ["max_pool", "avg_pool_include", "avg_pool_exclude"])
def test_pool_matches_torch(
    kind: str,
    spatial: int,
    size: tuple[int, ...],
    kernel: tuple[int, ...],
    strides: tuple[int, ...],
    padding: tuple[int, ...],
    ceil_mode: bool,
) -> None:
    x = randn(2, 3, *size)
    xt = torch.from_numpy(x)
    args = (list(kernel), list(strides), list(padding))
    if kind == "max_pool":
        want = TORCH_MAX[spatial](xt, *args, ceil_mode=ceil_mode).numpy()
        exclude = None
    else:
        exclude = kind == "avg_pool_exclude"
        want = TORCH_AVG[spatial](xt, *args, ceil_mode=ceil_mode,
                                  count_include_pad=not exclude).numpy()  # fmt: skip
    pad = [p for q in padding for p in (q, q)]
    op = "max_pool" if kind == "max_pool" else "avg_pool"
    lines = pool_lines(op, x.shape, want.shape, kernel, strides, "custom", pad, ceil_mode, exclude)
    got = run(lines, [x], tensor(want.shape))
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def pool_reference(
    x: np.ndarray,
    kernel: Sequence[int],
    strides: Sequence[int],
    pairs: Sequence[tuple[int, int]],
    kind: str,
    exclude: bool,
) -> np.ndarray:
    """Window by window: the max, or the sum over the inputs it covers divided by
    that count (`exclude`) or by the kernel size."""
    size = x.shape[2:]
    outs = [(d + b + a - k) // s + 1 for d, (b, a), k, s in zip(size, pairs, kernel, strides)]
    out = np.empty((*x.shape[:2], *outs), np.float64)
    for idx in np.ndindex(*outs):
        index, count = [], 1
        for i, o in enumerate(idx):
            start = o * strides[i] - pairs[i][0]
            lo, hi = max(start, 0), min(start + kernel[i], size[i])
            index.append(slice(lo, hi))
            count *= (hi - lo) if exclude else kernel[i]
        window = x[(slice(None), slice(None), *index)].astype(np.float64)
        axes = tuple(range(2, x.ndim))
        if kind == "max_pool":
            # a window of padding only holds -inf; `same` windows always hold input
            out[(slice(None), slice(None), *idx)] = window.max(axis=axes)
        else:
            out[(slice(None), slice(None), *idx)] = window.sum(axis=axes) / count
    return out


@pytest.mark.parametrize("pad_type", ["same", "same_lower"])
@pytest.mark.parametrize("kind", ["max_pool", "avg_pool_include", "avg_pool_exclude"])
@pytest.mark.parametrize("spatial", SPATIAL)
def test_pool_same_padding_split(spatial: int, kind: str, pad_type: str) -> None:
    """`same` / `same_lower` pools: coremltools' total padding split as for conv
    (the odd element at the end / the beginning), not all at the end."""
    size, kernel, strides = (7, 6, 5)[:spatial], (4, 2, 3)[:spatial], (2, 3, 1)[:spatial]
    totals = aggregated_pad(pad_type, kernel, size, strides)
    assert any(t % 2 for t in totals)
    pairs = [(t // 2, t - t // 2) if pad_type == "same" else (t - t // 2, t // 2) for t in totals]
    out = spatial_dimensions_out_shape(pad_type, size, kernel, strides)
    x = randn(1, 2, *size)
    exclude = kind == "avg_pool_exclude"
    want = pool_reference(x, kernel, strides, pairs, kind, exclude)
    assert want.shape[2:] == tuple(out)
    op = "max_pool" if kind == "max_pool" else "avg_pool"
    lines = pool_lines(op, x.shape, want.shape, kernel, strides, pad_type, [0] * 2 * spatial,
                       exclude=None if op == "max_pool" else exclude)  # fmt: skip
    got = run(lines, [x], tensor(want.shape))
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


# ----- layer_norm -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "axes", [(1,), (0, 2), (-3, -1), (2, 0), (0,), (-2, -1)], ids=lambda a: str(list(a))
)
@pytest.mark.parametrize("params", ["gamma_beta", "gamma", "beta", "none"])
def test_layer_norm_any_axes(axes: tuple[int, ...], params: str) -> None:
    """Normalize over `axes` (any dims, negative or unordered); gamma and beta hold
    x's dims at the axes in dim order: torch's layer_norm over those dims moved last."""
    x = randn(2, 3, 4) * 3 + 1
    norm = sorted(a % x.ndim for a in axes)
    shape = [x.shape[a] for a in norm]
    gamma, beta = randn(*shape), randn(*shape)
    rest = [a for a in range(x.ndim) if a not in norm]
    moved = torch.from_numpy(x).permute(*rest, *norm)
    want = F.layer_norm(
        moved,
        shape,
        torch.from_numpy(gamma) if "gamma" in params else None,
        torch.from_numpy(beta) if "beta" in params else None,
        1e-5,
    )
    want = want.permute(*np.argsort([*rest, *norm]).tolist()).numpy()
    operands, types, lines = "", "", ""
    for name, value in (("gamma", gamma), ("beta", beta)):
        if name in params:
            lines += f"  %{name} = coreml.const {dense(value, 'f32')}\n"
            operands += f" {name} %{name}"
            types += f" {name} {tensor(shape)}"
    lines += (
        f"  %r = coreml.layer_norm %a0{operands} {{axes = {ints(axes)}, epsilon = 1.0e-05 : f64}} "
        f": {tensor(x.shape)}{types} -> {tensor(x.shape)}"
    )
    got = run(lines, [x], tensor(x.shape))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


# ----- concat ---------------------------------------------------------------------------


def test_concat_interleave_mil_example() -> None:
    """The example of MIL's concat documentation (axis 0, and -2 for the same dim)."""
    a = np.asarray([[1, 2], [3, 4], [5, 6]], np.float32)
    b = np.asarray([[7, 8], [9, 10], [11, 12]], np.float32)
    want = np.asarray([[1, 2], [7, 8], [3, 4], [9, 10], [5, 6], [11, 12]], np.float32)
    for axis in (0, -2):
        lines = (
            f"  %r = coreml.concat %a0, %a1 {{axis = {axis} : i64, interleave = true}} "
            f": (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<6x2xf32>"
        )
        np.testing.assert_array_equal(run(lines, [a, b], "tensor<6x2xf32>"), want)


def test_cumsum_exclusive_reverse() -> None:
    """MIL cumsum (TensorFlow's): `exclusive` shifts by one with 0 first, `reverse`
    sums from the end."""
    x = np.asarray([[1, 2, 3], [4, 5, 6]], np.float32)
    want = {
        (0, 0): [[1, 3, 6], [4, 9, 15]],
        (1, 0): [[0, 1, 3], [0, 4, 9]],
        (0, 1): [[6, 5, 3], [15, 11, 6]],
        (1, 1): [[5, 3, 0], [11, 6, 0]],
    }
    for (exclusive, reverse), expected in want.items():
        flags = f"exclusive = {bool(exclusive)}, reverse = {bool(reverse)}".lower()
        lines = (
            f"  %r = coreml.cumsum %a0 {{axis = -1 : i64, {flags}}} "
            ": (tensor<2x3xf32>) -> tensor<2x3xf32>"
        )
        np.testing.assert_array_equal(run(lines, [x], "tensor<2x3xf32>"), expected)


@pytest.mark.parametrize("axis", [-3, -2, -1, 0, 1, 2])
@pytest.mark.parametrize("interleave", [True, False])
def test_concat_axes(axis: int, interleave: bool) -> None:
    values = [randn(2, 3, 4) for _ in range(3)]
    n, a = len(values), axis % 3
    shape = list(values[0].shape)
    shape[a] *= n
    want = np.empty(shape, np.float32)
    for i, v in enumerate(values):
        step = slice(i, None, n) if interleave else slice(i * v.shape[a], (i + 1) * v.shape[a])
        want[(slice(None),) * a + (step,)] = v
    types = ", ".join([tensor(v.shape) for v in values])
    lines = (
        f"  %r = coreml.concat %a0, %a1, %a2 {{axis = {axis} : i64, "
        f"interleave = {str(interleave).lower()}}} : ({types}) -> {tensor(shape)}"
    )
    np.testing.assert_array_equal(run(lines, values, tensor(shape)), want)


# ----- matmul ---------------------------------------------------------------------------


@pytest.mark.parametrize("opset", ["iOS17", "iOS18"])
@pytest.mark.parametrize("constant", ["x", "y"])
def test_matmul_constant_of_another_type(constant: str, opset: str) -> None:
    """From iOS17 one operand may be a constant of another type: the product has
    the non-constant operand's type (coremltools' iOS17 matmul)."""
    c = np.asarray([[0.5, -1.25, 2.0], [1.5, 0.25, -0.75]], np.float16)
    v = randn(3, 2) if constant == "x" else randn(4, 2)
    if constant == "x":
        operands, types, out = "%c, %a0", "tensor<2x3xf16>, tensor<3x2xf32>", [2, 2]
        want = c.astype(np.float32) @ v
    else:
        c = c.T.copy()  # [3, 2]
        v = randn(4, 3)
        operands, types, out = "%a0, %c", "tensor<4x3xf32>, tensor<3x2xf16>", [4, 2]
        want = v @ c.astype(np.float32)
    lines = (
        f"  %c = coreml.const {dense(c.astype(np.float32), 'f16')}\n"
        f"  %r = coreml.matmul {operands} {{transpose_x = false, transpose_y = false}} "
        f": ({types}) -> {tensor(out)}"
    )
    got = run(lines, [v], tensor(out), opset)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


# ----- constexpr_lut_to_dense -----------------------------------------------------------


@pytest.mark.parametrize("axis", [-3, -2, -1, 0, 1, 2])
def test_lut_vector_axis(axis: int) -> None:
    """Vector LUTs fill `vector_axis` (negative from the end of the indices' rank),
    as coremltools' own `lut_to_dense` decompresses them."""
    indices = RNG.integers(0, 4, (2, 3, 4)).astype(np.uint8)
    lut = RNG.standard_normal((1, 3, 1, 4, 2)).astype(np.float32)  # 3 groups on dim 1
    want = coremltools_lut_to_dense(indices, lut, axis)
    shape = list(indices.shape)
    shape[axis] *= 2
    assert list(want.shape) == shape
    lines = (
        f"  %i = coreml.const {dense(indices, 'ui2')}\n"
        f"  %l = coreml.const {dense(lut, 'f32')}\n"
        f"  %w = coreml.constexpr_lut_to_dense %i, %l {{vector_axis = {axis} : i64}} "
        f": ({tensor(indices.shape, 'ui2')}, {tensor(lut.shape)}) -> {tensor(shape)}\n"
        f"  %r = coreml.add %w, %a0 : ({tensor(shape)}, {tensor(shape)}) -> {tensor(shape)}"
    )
    zeros = np.zeros(shape, np.float32)
    np.testing.assert_array_equal(run(lines, [zeros], tensor(shape)), want)


# ----- the safety net -------------------------------------------------------------------


def interpret_unverified(text: str, *inputs: np.ndarray) -> tuple[np.ndarray, ...]:
    """Run a module without verifying it (as a reader bug or verifier gap would)."""
    module = parse_module(text)
    return make_interpreter(module).call_op(entry_function(module), inputs)


@pytest.mark.parametrize(
    ("line", "result"),
    [
        ("coreml.relu %a0 : (tensor<2x3xf32>) -> tensor<3x2xf32>", "tensor<3x2xf32>"),
        ("coreml.relu %a0 : (tensor<2x3xf32>) -> tensor<2x3xf16>", "tensor<2x3xf16>"),
        (
            "coreml.transpose %a0 {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<2x3xf32>",
            "tensor<2x3xf32>",
        ),
    ],
)
def test_result_must_have_the_declared_type(line: str, result: str) -> None:
    text = function(["tensor<2x3xf32>"], [result], f"  %r = {line}", "iOS18")
    with pytest.raises(QoptError, match=r"coreml interpreter: '(coreml\.relu|coreml\.transpose)'"):
        interpret_unverified(text, randn(2, 3))


def test_semantics_disagreeing_with_the_verifier_is_an_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A verified module whose op body computes another shape is refused, naming the op."""
    monkeypatch.setattr(coreml_interp, "conv", lambda op, x, w, b: np.zeros((1, 1), x.dtype))
    w = randn(3, 2, 3)
    lines = conv_lines((1, 2, 5), w, None, (1, 3, 3), [1], "valid", [0, 0], [1], 1)
    with pytest.raises(QoptError, match=r"'coreml\.conv' computed result 0 as float32 \[1, 1\]"):
        run(lines, [randn(1, 2, 5)], tensor([1, 3, 3]))


# ----- scatter and states -------------------------------------------------------------


def scatter_module(mode: str, opset: str, indices: Sequence[int]) -> str:
    lines = (
        f"  %i = coreml.const dense<{list(indices)}> : tensor<{len(indices)}xi32>\n"
        f'  %r = coreml.scatter %a0, %i, %a1 {{axis = -1 : i64, mode = "{mode}"}} : '
        f"(tensor<2x5xf32>, tensor<{len(indices)}xi32>, tensor<2x{len(indices)}xf32>) -> tensor<2x5xf32>"
    )
    return function(
        ["tensor<2x5xf32>", f"tensor<2x{len(indices)}xf32>"], ["tensor<2x5xf32>"], lines, opset
    )


@pytest.mark.parametrize("mode", ["update", "add", "sub", "mul", "div", "max", "min"])
def test_scatter_modes_apply_in_index_order(mode: str) -> None:
    """A repeated index: `update` keeps the last write, the others apply each one
    (torch's `index_put` / `index_copy` rule for repeated indices, and the
    scatter-reduce of numpy's `ufunc.at`)."""
    x, u = randn(2, 5), randn(2, 3)
    indices = [3, 0, 3]
    got = qopt.interpret(parse_module(scatter_module(mode, "iOS18", indices)), x, u)[0]
    want = x.copy()
    for j, i in enumerate(indices):
        col = u[:, j]
        want[:, i] = {
            "update": col, "add": want[:, i] + col, "sub": want[:, i] - col,
            "mul": want[:, i] * col, "div": want[:, i] / col,
            "max": np.maximum(want[:, i], col), "min": np.minimum(want[:, i], col),
        }[mode]  # fmt: skip
    np.testing.assert_array_equal(got, want)


def test_scatter_negative_indices_by_opset() -> None:
    """Before iOS17 a negative index counts from the end; from iOS17 it is out of bounds."""
    x, u = randn(2, 5), randn(2, 1)
    got = qopt.interpret(parse_module(scatter_module("update", "iOS16", [-1])), x, u)[0]
    want = x.copy()
    want[:, 4] = u[:, 0]
    np.testing.assert_array_equal(got, want)
    with pytest.raises(QoptError, match=r"'coreml\.scatter'.*index -1 is out of range"):
        qopt.interpret(parse_module(scatter_module("update", "iOS17", [-1])), x, u)


STATE_MODULE = """
ml_program.global private mutable @a.b : tensor<3xf16>
func.func @forward(%x: tensor<3xf16>) -> tensor<3xf16> attributes {coreml.opset = "iOS18"} {
  %s = coreml.read_state @a.b : tensor<3xf16>
  %t = coreml.add %s, %x : (tensor<3xf16>, tensor<3xf16>) -> tensor<3xf16>
  %u = coreml.coreml_update_state @a.b, %t : tensor<3xf16>
  func.return %s : tensor<3xf16>
}
"""


def test_state_ops_use_the_session_state() -> None:
    """`read_state` returns the session's value from before the call's update,
    `coreml_update_state` leaves it for the next call; interpret() starts fresh."""
    module = parse_module(STATE_MODULE)
    session = qopt.session(module)
    x = np.array([1, 2, 3], np.float16)
    for step in range(3):
        np.testing.assert_array_equal(session.run(x)[0], step * x)
    np.testing.assert_array_equal(session.read_state("a.b"), 3 * x)
    np.testing.assert_array_equal(qopt.interpret(module, x)[0], np.zeros(3, np.float16))
