"""The functional updates LLM decode graphs use for their KV caches (`index_put`,
`index_copy`, `slice_scatter`, `select_scatter`), `repeat_interleave` (grouped-query
attention) and `index` with a run-time index tensor (`mask[input_pos]`): each case
is a tiny torch module exported with torch.export, imported by qopt and
interpreted; the results equal torch eager bit for bit (shape, dtype and bytes).
Negative dims and, where torch allows them, negative indices are included; an
index out of range at run time is a QoptError, never a silent wrap or clamp.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

import qopt
from qopt.dialects.aten import indexing as ix
from qopt.dialects.queries import entry_function

aten = torch.ops.aten


class Fn(torch.nn.Module):
    def __init__(self, fn: Callable[..., Any]):
        super().__init__()
        self.fn = fn

    def forward(self, *args: torch.Tensor) -> Any:
        return self.fn(*args)


def _flat(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    return [t for v in value for t in _flat(v)]


def export(fn: Callable[..., Any], *inputs: torch.Tensor, decompose: str = ""):
    """`decompose`: "functional" runs no decomposition but functionalizes (in-place
    ops become index_put / slice_scatter ...), "core" decomposes to core ATen."""
    ep = torch.export.export(Fn(fn), tuple(inputs))
    if decompose == "functional":
        ep = ep.run_decompositions({})
    elif decompose == "core":
        ep = ep.run_decompositions()
    module = qopt.import_program(ep)
    module.verify()
    return module


def check(
    fn: Callable[..., Any], *inputs: torch.Tensor, ops: tuple[str, ...] = (), **kw: Any
) -> None:
    """Export `fn`, import, interpret; compare with `fn` run eagerly, bit for bit."""
    module = export(fn, *inputs, **kw)
    text = str(module)
    for op in ops:
        assert f"aten.{op} " in text, f"aten.{op} missing from\n{text}"
    got = qopt.interpret(module, *inputs)
    want = _flat(fn(*[t.clone() for t in inputs]))
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        w = w.detach().numpy()
        assert g.shape == w.shape, (g.shape, w.shape)
        assert g.dtype == w.dtype, (g.dtype, w.dtype)
        assert g.tobytes() == w.tobytes(), (g, w)


g = torch.Generator().manual_seed(0)
CACHE = torch.randn(1, 2, 8, 4, generator=g)  # [batch, heads, positions, head_dim]
K = torch.randn(1, 2, 1, 4, generator=g)
K3 = torch.randn(1, 2, 3, 4, generator=g)
POS = torch.tensor([3])
POS3 = torch.tensor([5, -1, 0])


# ----- index_put ------------------------------------------------------------------------


def kv_index_put(cache: torch.Tensor, k: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
    return aten.index_put.default(cache, [None, None, pos], k)


def kv_setitem(cache: torch.Tensor, k: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
    cache = cache.clone()
    cache[:, :, pos] = k
    return cache


INDEX_PUT = {
    "kv_cache": (kv_index_put, [CACHE, K, POS]),
    "kv_cache_three_positions_negative": (kv_index_put, [CACHE, K3, POS3]),
    "int32_index": (kv_index_put, [CACHE, K3, POS3.to(torch.int32)]),
    "values_broadcast": (
        lambda c, v, p: aten.index_put.default(c, [None, None, p], v),
        [CACHE, torch.randn(4, generator=g), POS3],
    ),
    "scalar_values": (
        lambda c, v, p: aten.index_put.default(c, [None, None, p], v),
        [CACHE, torch.tensor(2.5), POS3],
    ),
    "two_adjacent_indices": (
        lambda c, v, i, j: aten.index_put.default(c, [None, i, j], v),
        [
            CACHE,
            torch.randn(1, 3, 4, generator=g),
            torch.tensor([0, 1, -2]),
            torch.tensor([7, 0, 2]),
        ],
    ),
    "separated_indices_broadcast": (
        lambda c, v, i, j: aten.index_put.default(c, [None, i, None, j], v),
        [
            CACHE,
            torch.randn(2, 3, 1, 8, generator=g),
            torch.tensor([[1], [0]]),
            torch.tensor([3, 0, -1]),
        ],
    ),
    "leading_index_trailing_none": (
        lambda x, v, i: aten.index_put.default(x, [i, None], v),
        [torch.randn(5, 3, generator=g), torch.randn(2, 3, generator=g), torch.tensor([4, -5])],
    ),
    "accumulate_repeated": (
        lambda x, v, i: aten.index_put.default(x, [i], v, True),
        [torch.zeros(5), torch.tensor([1e8, 1.0, -1e8, 1.0, 3.0]), torch.tensor([0, 0, 0, 0, -1])],
    ),
    "accumulate_rows": (
        lambda x, v, i: aten.index_put.default(x, [None, i], v, True),
        [torch.randn(3, 4, generator=g), torch.randn(3, 3, generator=g), torch.tensor([2, 2, -2])],
    ),
    "accumulate_int64": (
        lambda x, v, i: aten.index_put.default(x, [i], v, True),
        [torch.tensor([2**62, 5, -3]), torch.tensor([2**62, 2**62, 7]), torch.tensor([0, 0, 2])],
    ),
    "int_data": (
        lambda x, v, i: aten.index_put.default(x, [None, i], v),
        [torch.arange(12).view(3, 4), torch.tensor([-7]), torch.tensor([1, 3])],
    ),
    "bool_data": (
        lambda x, v, i: aten.index_put.default(x, [i], v),
        [torch.zeros(4, dtype=torch.bool), torch.tensor(True), torch.tensor([1, 2])],
    ),
    "float16": (kv_index_put, [CACHE.half(), K3.half(), POS3]),
    "empty_index": (
        lambda x, v, i: aten.index_put.default(x, [None, i], v),
        [torch.randn(2, 3, generator=g), torch.tensor(1.0), torch.zeros(0, dtype=torch.int64)],
    ),
    "bool_mask": (
        lambda x, m: aten.index_put.default(x, [m], torch.tensor(-1.5)),
        [torch.randn(3, 4, generator=g), torch.rand(3, 4, generator=g) > 0.5],
    ),
    "bool_mask_middle_accumulate": (
        lambda x, m, v: aten.index_put.default(x, [None, m], v, True),
        [
            torch.randn(3, 4, 2, generator=g),
            torch.tensor([True, False, True, True]),
            torch.randn(3, 1, 1, generator=g),
        ],
    ),
}


@pytest.mark.parametrize("name", list(INDEX_PUT))
def test_index_put(name: str) -> None:
    fn, inputs = INDEX_PUT[name]
    check(fn, *inputs)


def test_index_put_keeps_the_none_positions() -> None:
    """`[None, None, pos]`: operands self, pos, values; `indexed_dims` = [2]."""
    module = export(kv_index_put, CACHE, K, POS)
    (op,) = [op for op in module.walk() if isinstance(op, ix.IndexPutOp)]
    cache, k, pos = entry_function(module).body.block.args
    assert list(op.operands) == [cache, pos, k]
    assert list(op.indexed_dims.get_values()) == [2]
    assert op.accumulate is None


def test_index_put_from_a_functionalized_setitem() -> None:
    """`cache[:, :, pos] = k` on a copy: clone + index_put after run_decompositions."""
    check(kv_setitem, CACHE, K3, POS3, ops=("index_put",), decompose="functional")


def test_index_put_repeated_indices_last_write_wins() -> None:
    """torch leaves repeated indices without accumulate undefined; qopt writes the last
    (documented on aten.index_put)."""
    module = export(
        lambda x, v, i: aten.index_put.default(x, [i], v),
        torch.zeros(4),
        torch.zeros(5),
        torch.zeros(5, dtype=torch.int64),
    )
    values = np.array([1, 2, 3, 4, 5], np.float32)
    (got,) = qopt.interpret(module, np.zeros(4, np.float32), values, np.array([1, 3, 1, -3, 0]))
    np.testing.assert_array_equal(got, [5, 4, 0, 2])


@pytest.mark.parametrize("bad", [8, -9])
def test_index_put_index_out_of_range(bad: int) -> None:
    module = export(kv_index_put, CACHE, K, POS)
    with pytest.raises(IndexError):
        kv_index_put(CACHE, K, torch.tensor([bad]))
    with pytest.raises(qopt.QoptError, match=rf"'aten.index_put'.*index {bad} is out of range"):
        qopt.interpret(module, CACHE, K, torch.tensor([bad]))


# ----- index_copy -----------------------------------------------------------------------


INDEX_COPY = {
    "kv_cache": (lambda c, k, p: c.index_copy(2, p, k), [CACHE, K, POS]),
    "negative_dim": (lambda c, k, p: c.index_copy(-2, p, k), [CACHE, K3, torch.tensor([7, 0, 4])]),
    "dim0": (
        lambda x, s, i: x.index_copy(0, i, s),
        [torch.randn(5, 3, generator=g), torch.randn(2, 3, generator=g), torch.tensor([4, 1])],
    ),
    "scalar_index": (lambda c, k, p: c.index_copy(2, p, k), [CACHE, K, torch.tensor(6)]),
    "scalar_source": (
        lambda x, s, i: x.index_copy(0, i, s),
        [torch.randn(5, generator=g), torch.tensor(9.0), torch.tensor([2])],
    ),
    "zero_dim_self": (
        lambda x, s, i: x.index_copy(0, i, s),
        [torch.tensor(1.0), torch.tensor([7.0]), torch.tensor([0])],
    ),
    "int_data": (
        lambda x, s, i: x.index_copy(1, i, s),
        [torch.arange(12).view(3, 4), torch.tensor([[-1], [-2], [-3]]), torch.tensor([2])],
    ),
}


@pytest.mark.parametrize("name", list(INDEX_COPY))
def test_index_copy(name: str) -> None:
    fn, inputs = INDEX_COPY[name]
    check(fn, *inputs, ops=("index_copy",))


@pytest.mark.parametrize("bad", [8, -1])
def test_index_copy_index_out_of_range(bad: int) -> None:
    """index_copy takes no negative indices (torch raises IndexError for -1)."""
    module = export(lambda c, k, p: c.index_copy(2, p, k), CACHE, K, POS)
    with pytest.raises(IndexError):
        CACHE.index_copy(2, torch.tensor([bad]), K)
    with pytest.raises(qopt.QoptError, match=rf"'aten.index_copy'.*index {bad} is out of range"):
        qopt.interpret(module, CACHE, K, torch.tensor([bad]))


# ----- slice_scatter / select_scatter ---------------------------------------------------


def kv_slice_setitem(cache: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    cache = cache.clone()
    cache[:, :, 3:6] = k
    return cache


SCATTERS = {
    "slice_scatter": (lambda c, k: torch.slice_scatter(c, k, 2, 3, 4), [CACHE, K]),
    "slice_scatter_negative": (lambda c, k: torch.slice_scatter(c, k, -2, -5, -2), [CACHE, K3]),
    "slice_scatter_clamped": (lambda c, k: torch.slice_scatter(c, k, 2, 5, 100), [CACHE, K3]),
    "slice_scatter_step": (
        lambda x, s: torch.slice_scatter(x, s, -1, 1, None, 2),
        [torch.randn(2, 5, generator=g), torch.randn(2, 2, generator=g)],
    ),
    "slice_scatter_defaults": (
        lambda x, s: torch.slice_scatter(x, s),
        [CACHE, torch.randn(1, 2, 8, 4, generator=g)],
    ),
    "slice_scatter_cast": (
        lambda x, s: torch.slice_scatter(x, s, 1, 0, 2),
        [torch.randn(2, 5, generator=g), torch.tensor([[3, -4], [5, 6]])],
    ),
    "slice_scatter_empty": (
        lambda x, s: torch.slice_scatter(x, s, 1, 4, 2),
        [torch.randn(2, 5, generator=g), torch.randn(2, 0, generator=g)],
    ),
    "select_scatter": (lambda c, s: torch.select_scatter(c, s, 2, 3), [CACHE, K[:, :, 0]]),
    "select_scatter_negative": (
        lambda c, s: torch.select_scatter(c, s, -2, -1),
        [CACHE, K[:, :, 0]],
    ),
    "select_scatter_cast_bool": (
        lambda x, s: torch.select_scatter(x, s, 0, 1),
        [torch.zeros(3, 2, dtype=torch.bool), torch.tensor([0.0, -2.0])],
    ),
}


@pytest.mark.parametrize("name", list(SCATTERS))
def test_slice_and_select_scatter(name: str) -> None:
    fn, inputs = SCATTERS[name]
    check(fn, *inputs, ops=(name.split("_scatter")[0] + "_scatter",))


def test_slice_scatter_from_a_functionalized_slice_setitem() -> None:
    """`cache[:, :, 3:6] = k` on a copy: slice + copy + slice_scatter after
    run_decompositions (`aten.copy` imports as a cast/broadcast of its source)."""
    check(kv_slice_setitem, CACHE, K3, ops=("slice_scatter",), decompose="functional")
    check(
        kv_slice_setitem,
        CACHE,
        K3[:, :, :1],
        ops=("slice_scatter", "expand"),
        decompose="functional",
    )


# ----- repeat_interleave ----------------------------------------------------------------


REPEAT_INTERLEAVE = {
    "heads": (lambda x: x.repeat_interleave(2, dim=1), [CACHE]),
    "negative_dim": (lambda x: x.repeat_interleave(3, dim=-1), [CACHE]),
    "flattened": (lambda x: x.repeat_interleave(2), [torch.randn(2, 3, generator=g)]),
    "output_size": (
        lambda x: x.repeat_interleave(2, 0, output_size=4),
        [torch.randn(2, 3, generator=g)],
    ),
    "zero": (lambda x: x.repeat_interleave(0, dim=0), [torch.randn(2, 3, generator=g)]),
    "int": (
        lambda x: x.repeat_interleave(2, dim=0),
        [torch.tensor([[1, -2], [3, 4]], dtype=torch.int32)],
    ),
    "bool": (lambda x: x.repeat_interleave(3), [torch.tensor([True, False])]),
}


@pytest.mark.parametrize("name", list(REPEAT_INTERLEAVE))
def test_repeat_interleave(name: str) -> None:
    fn, inputs = REPEAT_INTERLEAVE[name]
    check(fn, *inputs, ops=("repeat_interleave",))


def test_repeat_interleave_decomposed() -> None:
    """The core ATen decomposition: unsqueeze + expand + clone + view."""
    check(lambda x: x.repeat_interleave(2, dim=1), CACHE, ops=("expand", "view"), decompose="core")


# ----- index with a run-time index tensor -----------------------------------------------


def rope_and_mask(
    freqs_cos: torch.Tensor, mask: torch.Tensor, input_pos: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    return freqs_cos[input_pos], mask[input_pos]


FREQS = torch.randn(8, 4, generator=g)
MASK = torch.tril(torch.ones(8, 8, dtype=torch.bool))


@pytest.mark.parametrize("pos", [[3], [0, 7, -1], [-8]])
def test_index_with_a_runtime_position(pos: list[int]) -> None:
    module = export(rope_and_mask, FREQS, MASK, torch.tensor([3]))
    assert "aten.index " in str(module)
    position = torch.tensor(pos)
    if len(pos) != 1:  # the shape is fixed by export: export again for this length
        module = export(rope_and_mask, FREQS, MASK, position)
    got = qopt.interpret(module, FREQS, MASK, position)
    for g_, w in zip(got, rope_and_mask(FREQS, MASK, position), strict=True):
        assert g_.dtype == w.numpy().dtype
        assert g_.tobytes() == w.numpy().tobytes()


def test_index_with_a_runtime_position_out_of_range() -> None:
    module = export(rope_and_mask, FREQS, MASK, torch.tensor([3]))
    with pytest.raises(qopt.QoptError, match=r"'aten.index'.*index 8 is out of range"):
        qopt.interpret(module, FREQS, MASK, torch.tensor([8]))
