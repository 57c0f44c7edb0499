"""The importer's converters of the KV-cache updates (qopt/frontend/converters/indexing.py):
the IR each exported form gives (the `None`s of `index_put` kept as `indexed_dims`, a
boolean mask as `aten.where`, `copy` as a cast/broadcast) and the QoptErrors for forms
qopt cannot represent. Their numerics against torch: tests/unit/interpreters/
test_aten_scatter_interp.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
from xdsl.dialects.builtin import ModuleOp

import qopt
from qopt.dialects.aten import elementwise as ew
from qopt.dialects.aten import indexing as ix
from qopt.dialects.aten import shape as sh

aten = torch.ops.aten


class Fn(torch.nn.Module):
    def __init__(self, fn: Callable[..., Any]):
        super().__init__()
        self.fn = fn

    def forward(self, *args: torch.Tensor) -> Any:
        return self.fn(*args)


def imported(fn: Callable[..., Any], *inputs: torch.Tensor, decompose: bool = False) -> ModuleOp:
    ep = torch.export.export(Fn(fn), tuple(inputs))
    if decompose:
        ep = ep.run_decompositions({})
    return qopt.import_program(ep)


def ops_of(module: ModuleOp) -> list[str]:
    return [op.name for op in module.walk() if op.name.startswith("aten.")]


X = torch.randn(2, 3, 5, 4)


def test_index_put_indexed_dims_skip_the_nones() -> None:
    module = imported(
        lambda x, v, i, j: aten.index_put.default(x, [None, i, None, j], v, True),
        X,
        torch.randn(2, 2, 5),
        torch.tensor([0, 2]),
        torch.tensor([1, -1], dtype=torch.int32),
    )
    (op,) = [op for op in module.walk() if isinstance(op, ix.IndexPutOp)]
    assert list(op.indexed_dims.get_values()) == [1, 3]
    assert op.is_accumulate()
    assert len(op.indices) == 2


def test_index_put_boolean_mask_is_a_where() -> None:
    module = imported(
        lambda x, m: aten.index_put.default(x, [None, m], torch.tensor(0.5)),
        X,
        torch.rand(3, 5) > 0.5,
    )
    assert "aten.index_put" not in ops_of(module)
    (where,) = [op for op in module.walk() if isinstance(op, ew.WhereOp)]
    assert where.condition.type == sh.TensorType(sh.IntegerType(1), [1, 3, 5, 1])


def test_index_put_mask_with_per_entry_values_is_an_error() -> None:
    with pytest.raises(qopt.QoptError, match="depend on the mask's data"):
        imported(
            lambda x, m, v: aten.index_put.default(x, [m], v),
            torch.randn(4, 3),
            torch.tensor([True, False, True, False]),
            torch.randn(2, 3),
        )


def test_index_put_mask_next_to_an_index_is_an_error() -> None:
    with pytest.raises(qopt.QoptError, match="boolean mask next to other index tensors"):
        imported(
            lambda x, m, i: aten.index_put.default(x, [m, i], torch.tensor(1.0)),
            torch.randn(4, 3),
            torch.tensor([True, False, True, False]),
            torch.tensor([0]),
        )


def test_functional_slice_assignment_imports_copy() -> None:
    """`x[:, 1:3] = v` with v of another dtype and shape: slice -> copy -> slice_scatter,
    `copy` importing as a cast and a broadcast."""

    def assign(x: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        x = x.clone()
        x[:, 1:3] = v
        return x

    module = imported(assign, torch.randn(2, 5), torch.tensor([7, -1]), decompose=True)
    names = ops_of(module)
    assert "aten.to" in names
    assert "aten.expand" in names
    assert names[-1] == "aten.slice_scatter"
    got = qopt.interpret(module, torch.zeros(2, 5), torch.tensor([7, -1]))[0]
    assert got.tolist() == [[0, 7, -1, 0, 0], [0, 7, -1, 0, 0]]


def test_select_scatter_index_is_normalised() -> None:
    module = imported(lambda x, s: torch.select_scatter(x, s, -1, -1), X, torch.randn(2, 3, 5))
    (op,) = [op for op in module.walk() if isinstance(op, ix.SelectScatterOp)]
    assert (op.dim.value.data, op.index.value.data) == (3, 3)


def test_slice_scatter_bounds_are_clamped() -> None:
    module = imported(
        lambda x, s: torch.slice_scatter(x, s, 2, -3, 100), X, torch.randn(2, 3, 3, 4)
    )
    (op,) = [op for op in module.walk() if isinstance(op, ix.SliceScatterOp)]
    assert op.bounds() == (2, 2, 5, 1)


def test_repeat_interleave_export_keeps_the_op() -> None:
    """torch 2.13's export keeps `repeat_interleave.self_int` (no decomposition)."""
    ep = torch.export.export(Fn(lambda x: x.repeat_interleave(2, dim=1)), (X,))
    targets = [str(n.target) for n in ep.graph.nodes if n.op == "call_function"]
    assert targets == ["aten.repeat_interleave.self_int"]
    module = qopt.import_program(ep)
    (op,) = [op for op in module.walk() if isinstance(op, sh.RepeatInterleaveOp)]
    assert op.dim is not None
    assert op.dim.value.data == 1


def test_repeat_interleave_with_a_tensor_of_repeats_is_unsupported() -> None:
    with pytest.raises(qopt.QoptError, match="repeat_interleave"):
        imported(lambda x: x.repeat_interleave(torch.tensor([1, 2, 1]), dim=1), X)
