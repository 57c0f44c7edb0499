"""aten shape family: import from torch.export, verify, interpret == torch eager;
verifier rejections of inconsistent IR; round-trip of the custom syntax."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from xdsl.utils.exceptions import VerifyException

import qopt
from qopt.context import parse_module

torch.manual_seed(0)


class Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def check(fn, *inputs, ops=()):
    """Export `fn`, import, verify, interpret; compare with the exported program."""
    ep = torch.export.export(Fn(fn), tuple(inputs))
    module = qopt.import_program(ep)
    module.verify()
    text = str(module)
    for op in ops:
        assert f"aten.{op} " in text, f"aten.{op} missing from\n{text}"
    got = qopt.interpret(module, *inputs)
    want = ep.module()(*inputs)
    want = want if isinstance(want, tuple | list) else (want,)
    flat: list[torch.Tensor] = []
    for w in want:
        flat.extend(w if isinstance(w, tuple | list) else [w])
    assert len(got) == len(flat)
    for g, w in zip(got, flat, strict=True):
        w = w.detach().numpy()
        assert g.shape == w.shape, (g.shape, w.shape)
        assert g.dtype == w.dtype, (g.dtype, w.dtype)
        if w.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-7)
        else:
            np.testing.assert_array_equal(g, w)
    return module


X = torch.randn(2, 3, 4)
I = torch.tensor([[0, 1], [1, -1]])
B = torch.rand(2, 3, 4) > 0.5

CASES = {
    # views and layout
    "view": (lambda x: x.view(6, 4) * 1, [X], ["view"]),
    "reshape_neg": (lambda x: x.reshape(-1, 2), [X], ["view"]),
    "flatten_unflatten": (lambda x: x.flatten(1).unflatten(1, (4, 3)), [X], ["view"]),
    "view_bool": (lambda b: b.view(-1), [B], ["view"]),
    "unsqueeze": (
        lambda x: (x.unsqueeze(0), x.unsqueeze(-1), x.unsqueeze(2)),
        [X],
        ["unsqueeze"],
    ),
    "squeeze": (
        lambda x: (x.squeeze(), x.squeeze(0), x.squeeze(1), x.squeeze((0, -1))),
        [torch.randn(1, 3, 1)],
        ["squeeze"],
    ),
    "permute": (lambda x: x.permute(2, -3, 1), [X], ["permute"]),
    "movedim": (lambda x: x.movedim(0, -1), [X], ["permute"]),
    "transpose": (lambda x: (x.transpose(0, -1), x.swapaxes(1, 2)), [X], ["transpose"]),
    "t": (lambda x: (x.t(), x[0, 0].t()), [torch.randn(3, 5)], ["transpose"]),
    "numpy_T": (lambda x: (x.T, x[:, :1].T), [torch.randn(3, 5)], ["permute"]),
    "expand": (lambda x: x[:, :1].expand(5, -1, 3, 4), [X], ["expand"]),
    "expand_as": (
        lambda x, y: x.expand_as(y),
        [torch.randn(3, 1), torch.randn(2, 3, 4)],
        ["expand"],
    ),
    "repeat": (lambda x: x.repeat(2, 1, 1, 2), [X], ["repeat"]),
    "flip": (lambda x: x.flip(0, -1), [X], ["flip"]),
    "roll": (
        lambda x: (torch.roll(x, (1, -2), (0, 2)), torch.roll(x, 5)),
        [X],
        ["roll"],
    ),
    # slicing and indexing
    "slice": (
        lambda x: (x[:, 1:], x[..., ::2], x[:, -2:], x[:, :-1], x[..., 1:-1:2]),
        [X],
        ["slice"],
    ),
    "slice_huge": (lambda x: (x[:, 1:100], x[:, -100:2], x[:, 5:]), [X], ["slice"]),
    "narrow": (lambda x: x.narrow(2, -3, 2), [X], ["slice"]),
    "select": (lambda x: (x[1], x[:, -1], x[..., 2]), [X], ["select"]),
    "unbind": (lambda x: torch.unbind(x, 1), [X], ["select"]),
    "index_one": (lambda x, i: x[i], [X, I], ["index"]),
    "index_gap": (lambda x, i: x[i, :, i], [torch.randn(4, 3, 4), I], ["index"]),
    "index_adjacent": (
        lambda x, i, j: x[:, i, j],
        [X, I, torch.tensor([1, 0])],
        ["index"],
    ),
    "index_none_first": (lambda x, i: x[:, :, i], [X, I], ["index"]),
    "index_bool_data": (lambda b, i: b[i], [B, I], ["index"]),
    "index_broadcast": (
        lambda x, i, j: x[i, j],
        [X, torch.tensor([[1], [0]]), torch.tensor([2, 0, -3])],
        ["index"],
    ),
    "index_scalar": (
        lambda x, i: torch.ops.aten.index.Tensor(x, [None, i]),
        [X, torch.tensor(2)],
        ["index"],
    ),
    "slice_empty": (lambda x: (x[:, 2:1], x[:, 3:]), [X], ["slice"]),
    "index_select": (
        lambda x, i: x.index_select(-1, i),
        [X, torch.tensor([3, 0, 0])],
        ["index_select"],
    ),
    "gather": (
        lambda x, i: torch.gather(x, 1, i),
        [X, torch.randint(0, 3, (2, 2, 3))],
        ["gather"],
    ),
    # joins and splits
    "cat": (lambda x, y: torch.cat([x, y, x], -1), [X, torch.randn(2, 3, 1)], ["cat"]),
    "cat_promote": (
        lambda x, y: torch.cat([x, y]),
        [X, torch.ones(1, 3, 4, dtype=torch.int64)],
        ["cat"],
    ),
    "stack": (lambda x: (torch.stack([x, x], -1), torch.stack([x, x])), [X], ["stack"]),
    "split": (lambda x: torch.split(x, 3, -1), [X], ["split"]),
    "split_sizes": (lambda x: torch.split(x, [1, 3], 2), [X], ["split"]),
    "chunk": (lambda x: torch.chunk(x, 3, 2), [X], ["split"]),
    # triangular, padding, diff, cumsum
    "tril_triu": (lambda x: (x.tril(), x.triu(1), x.tril(-1)), [X], ["tril", "triu"]),
    "tril_bool": (lambda b: b.tril(), [B], ["tril"]),
    "pad": (
        lambda x: torch.nn.functional.pad(x, (1, 2, 0, -1), value=-1.5),
        [X],
        ["constant_pad_nd"],
    ),
    "pad_int": (
        lambda x: torch.constant_pad_nd(x, (2, 1), 7),
        [I],
        ["constant_pad_nd"],
    ),
    "diff": (
        lambda x: (torch.diff(x), torch.diff(x, n=2, dim=0)),
        [torch.randn(3, 4)],
        ["diff"],
    ),
    "diff_prepend": (
        lambda x: torch.diff(x, dim=1, prepend=x[:, :1], append=x[:, -2:]),
        [torch.randn(3, 4)],
        ["diff", "cat"],
    ),
    "diff_bool_int": (
        lambda b, i: (torch.diff(b), torch.diff(i, n=3)),
        [B, I],
        ["diff"],
    ),
    "cumsum": (lambda x: torch.cumsum(x, -1), [X], ["cumsum"]),
    "cumsum_int": (lambda b, i: (b.cumsum(0), i.cumsum(1)), [B, I], ["cumsum"]),
    # creation
    "arange": (
        lambda x: (
            torch.arange(5),
            torch.arange(2, 9, 3),
            torch.arange(1.0, 2.0, 0.3),
            torch.arange(0, 1, 0.1, dtype=torch.float32),
            torch.arange(10, 0, -3),
            torch.arange(-1.5, 3.25, 0.25, dtype=torch.float64),
            torch.arange(0, 7, 2.5, dtype=torch.int32),
        ),
        [X],
        ["arange"],
    ),
    "arange_use": (lambda x: x + torch.arange(4), [X], ["arange"]),
    "full": (
        lambda x: (
            torch.zeros(2, 3),
            torch.ones(4, dtype=torch.int64),
            torch.full((2,), float("-inf")),
            torch.full((3,), True),
            torch.full((2, 2), -(2**63), dtype=torch.int64),
            torch.empty(2, 2) * 0,
            torch.scalar_tensor(3.5),
        ),
        [X],
        ["full"],
    ),
    "full_like": (
        lambda x: (
            torch.zeros_like(x),
            torch.ones_like(x, dtype=torch.int32),
            torch.full_like(x, 2.5),
            x.new_ones(3),
            x.new_zeros((2, 1)),
            x.new_full((2,), 7),
        ),
        [X],
        ["full"],
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_matches_torch(name: str):
    fn, inputs, ops = CASES[name]
    check(fn, *inputs, ops=ops)


def test_slice_attrs_are_clamped():
    module = check(lambda x: x[:, -100:9223372036854775807], X, ops=["slice"])
    assert "start = 0 : i64, end = 3 : i64" in str(module)


def test_boolean_mask_index_rejected():
    with pytest.raises(Exception, match=r"(unsupported|dynamic|boolean mask|data-dependent)"):
        ep = torch.export.export(Fn(lambda x, m: x[m]), (X, B))
        qopt.import_program(ep)


# ----- verifier rejections ------------------------------------------------------


def parse(body: str, args: str = "%x: tensor<2x3x4xf32>"):
    text = f"func.func @f({args}) {{\n{body}\n  func.return\n}}"
    return parse_module(text)


BAD = {
    "view": (
        "%0 = aten.view %x : (tensor<2x3x4xf32>) -> tensor<5x5xf32>",
        "cannot view",
    ),
    "unsqueeze_dim": (
        "%0 = aten.unsqueeze %x {dim = 4 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4x1xf32>",
        "dim 4 is out of range",
    ),
    "squeeze_not_one": (
        "%0 = aten.squeeze %x {dims = array<i64: 1>} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>",
        "squeezed dim 1 has size 3",
    ),
    "permute_repeat": (
        "%0 = aten.permute %x {dims = array<i64: 0, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<2x2x3xf32>",
        "repeat a dim",
    ),
    "transpose_shape": (
        "%0 = aten.transpose %x {dim0 = 0 : i64, dim1 = 2 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>",
        r"result 0 has shape \[2, 3, 4\] but the operands imply \[4, 3, 2\]",
    ),
    "expand": (
        "%0 = aten.expand %x : (tensor<2x3x4xf32>) -> tensor<2x5x4xf32>",
        "does not broadcast",
    ),
    "slice_step": (
        "%0 = aten.slice %x {dim = 1 : i64, start = 0 : i64, end = 3 : i64, step = 0 : i64}"
        " : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>",
        "step must be positive",
    ),
    "slice_shape": (
        "%0 = aten.slice %x {dim = 2 : i64, start = -3 : i64, end = 9223372036854775807 : i64,"
        " step = 2 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x3xf32>",
        r"operands imply \[2, 3, 2\]",
    ),
    "select_index": (
        "%0 = aten.select %x {dim = 1 : i64, index = 3 : i64} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>",
        "index 3 is out of range",
    ),
    "index_dims": (
        "%0 = aten.index %x, %i {indexed_dims = array<i64: 0, 1>}"
        " : (tensor<2x3x4xf32>, tensor<5xi64>) -> tensor<5x3x4xf32>",
        "must name one dim per index tensor",
    ),
    "index_shape": (
        "%0 = aten.index %x, %i, %i {indexed_dims = array<i64: 0, 2>}"
        " : (tensor<2x3x4xf32>, tensor<5xi64>, tensor<5xi64>) -> tensor<3x5xf32>",
        r"operands imply \[5, 3\]",
    ),
    "index_float": (
        "%0 = aten.index %x, %x {indexed_dims = array<i64: 0>}"
        " : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4x3x4xf32>",
        "must be an integer tensor",
    ),
    "gather_rank": (
        "%0 = aten.gather %x, %i {dim = 0 : i64} : (tensor<2x3x4xf32>, tensor<5xi64>) -> tensor<5xi64>",
        "index rank 1 must equal input rank 3",
    ),
    "repeat_interleave_negative": (
        "%0 = aten.repeat_interleave %x {repeats = -1 : i64, dim = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>",
        "repeats must be non-negative",
    ),
    "repeat_interleave_shape": (
        "%0 = aten.repeat_interleave %x {repeats = 2 : i64} : (tensor<2x3x4xf32>) -> tensor<2x6x4xf32>",
        r"operands imply \[48\]",
    ),
    "index_put_values_shape": (
        "%0 = aten.index_put %x, %i, %x {indexed_dims = array<i64: 1>}"
        " : (tensor<2x3x4xf32>, tensor<5xi64>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>",
        r"values of shape \[2, 3, 4\] do not broadcast to the indexing result shape \[2, 5, 4\]",
    ),
    "index_put_values_dtype": (
        "%0 = aten.index_put %x, %i, %i {indexed_dims = array<i64: 1>}"
        " : (tensor<2x3x4xf32>, tensor<5xi64>, tensor<5xi64>) -> tensor<2x3x4xf32>",
        "must have the element type of self",
    ),
    "index_put_float_index": (
        "%0 = aten.index_put %x, %x, %x {indexed_dims = array<i64: 0>}"
        " : (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>",
        "must be an int64 or int32 tensor",
    ),
    "index_put_dims": (
        "%0 = aten.index_put %x, %i, %i, %x {indexed_dims = array<i64: 2, 1>}"
        " : (tensor<2x3x4xf32>, tensor<5xi64>, tensor<5xi64>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>",
        "must be increasing dims",
    ),
    "index_put_result": (
        "%0 = aten.index_put %x, %i, %x {indexed_dims = array<i64: 0>}"
        " : (tensor<2x3x4xf32>, tensor<5xi64>, tensor<2x3x4xf32>) -> tensor<2x3x4xf16>",
        "must equal the type of self",
    ),
    "index_copy_index_dtype": (
        "%0 = aten.index_copy %x, %x, %x {dim = 0 : i64}"
        " : (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>",
        "index must be an int64 tensor",
    ),
    "index_copy_count": (
        "%0 = aten.index_copy %x, %i, %x {dim = 0 : i64}"
        " : (tensor<2x3x4xf32>, tensor<5xi64>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>",
        "source has 2 entries along dim 0, but 5 indices",
    ),
    "index_copy_slice_shape": (
        "%0 = aten.index_copy %x, %i, %x {dim = 1 : i64}"
        " : (tensor<2x3x4xf32>, tensor<5xi64>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>",
        "source has 3 entries along dim 1, but 5 indices",
    ),
    "slice_scatter_src_shape": (
        "%0 = aten.slice_scatter %x, %x {dim = 1 : i64, start = 0 : i64, end = 2 : i64, step = 1 : i64}"
        " : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>",
        r"must have the slice's shape \[2, 2, 4\]",
    ),
    "select_scatter_index": (
        "%0 = aten.select_scatter %x, %x {dim = 1 : i64, index = 3 : i64}"
        " : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>",
        "index 3 is out of range",
    ),
    "select_scatter_src_shape": (
        "%0 = aten.select_scatter %x, %x {dim = 1 : i64, index = -3 : i64}"
        " : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>",
        r"must have the selected shape \[2, 4\]",
    ),
    "cat": (
        "%0 = aten.cat %x, %x {dim = 0 : i64} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x6x4xf32>",
        r"operands imply \[4, 3, 4\]",
    ),
    "stack": (
        "%0 = aten.stack %x, %i {dim = 0 : i64} : (tensor<2x3x4xf32>, tensor<5xi64>) -> tensor<2x2x3x4xf32>",
        "must all be equal",
    ),
    "split": (
        "%0, %1 = aten.split %x {sizes = array<i64: 1, 2>, dim = 2 : i64}"
        " : (tensor<2x3x4xf32>) -> (tensor<2x3x1xf32>, tensor<2x3x2xf32>)",
        "do not add up to dim 2's size 4",
    ),
    "tril_rank": (
        "%0 = aten.tril %i {diagonal = 0 : i64} : (tensor<5xi64>) -> tensor<5xi64>",
        "at least 2 dims",
    ),
    "pad": (
        "%0 = aten.constant_pad_nd %x {pad = array<i64: 1, 1, 1>, value = 0.0 : f64}"
        " : (tensor<2x3x4xf32>) -> tensor<2x3x6xf32>",
        r"\(before, after\) pairs",
    ),
    "diff": (
        "%0 = aten.diff %x {n = 1 : i64, dim = -1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>",
        r"operands imply \[2, 3, 3\]",
    ),
    "arange_len": (
        "%0 = aten.arange {start = 0.0 : f64, end = 1.0 : f64, step = 0.1 : f64} : tensor<11xf32>",
        r"operands imply \[10\]",
    ),
    "arange_sign": (
        "%0 = aten.arange {start = 0 : i64, end = 5 : i64, step = -1 : i64} : tensor<0xi64>",
        "inconsistent with the step sign",
    ),
    "cumsum_dim": (
        "%0 = aten.cumsum %x {dim = 3 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>",
        "dim 3 is out of range",
    ),
}


@pytest.mark.parametrize("name", list(BAD))
def test_verifier_rejects(name: str):
    body, message = BAD[name]
    module = parse(body, "%x: tensor<2x3x4xf32>, %i: tensor<5xi64>")
    with pytest.raises(VerifyException, match=message):
        module.verify()


# ----- round trip -----------------------------------------------------------------


@pytest.mark.parametrize("family", ["shape", "indexing"])
def test_lit_file_round_trips(family: str):
    """tests/lit/aten/<family>.mlir holds every op of qopt/dialects/aten/<family>.py."""
    from pathlib import Path

    from qopt.dialects.aten import indexing, shape

    path = Path(__file__).resolve().parents[2] / "lit" / "aten" / f"{family}.mlir"
    text = path.read_text()
    module = parse_module(text)
    module.verify()
    printed = str(module)
    again = parse_module(printed)
    assert str(again) == printed
    names = {op.name for op in module.walk() if op.name.startswith("aten.")}
    ops = {"shape": shape.OPS, "indexing": indexing.OPS}[family]
    assert names == {op.name for op in ops}
