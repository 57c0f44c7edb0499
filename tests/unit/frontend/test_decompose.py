"""Decomposition before refusal (qopt/frontend/decompose.py, issue 22).

An aten op without a converter imports through torch's decomposition of it (its
CompositeImplicitAutograd kernel, torch._decomp's table, torch._refs' prims as aten
ops), re-traced on the node's own metadata; what still has no rule is refused naming
the op, its decomposition and the piece that stops it. Proven like any rule: the
interpreter matches torch eager on the exported graph, and where qopt also has a
converter for the op, importing through the converter and through the decomposition
interpret alike.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import torch
import torch.nn.functional as F
import torch.utils._pytree as pytree
from torch.export import Dim

import qopt
from qopt.frontend.converters import get_converters
from qopt.frontend.decompose import decompose_graph
from qopt.frontend.importer import Importer


class Fn(torch.nn.Module):
    def __init__(self, fn: Callable[..., object]):
        super().__init__()
        self.fn = fn

    def forward(self, *xs: torch.Tensor) -> object:
        return self.fn(*xs)


def _r(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(sum(shape)))


def _ints(*shape: int) -> torch.Tensor:
    return torch.randint(-20, 20, shape, generator=torch.Generator().manual_seed(7))


# The ops torch.export preserves (its export-preserved set) that the issue lists, as a
# user writes them: each imports through a converter or through its decomposition.
PRESERVED: dict[str, tuple[Callable[..., object], tuple[torch.Tensor, ...]]] = {
    "reshape_as": (lambda x, y: x.reshape_as(y), (_r(12), _r(3, 4))),
    "broadcast_to": (lambda x: torch.broadcast_to(x, (2, 3, 4)), (_r(3, 1),)),
    "expand_as": (lambda x, y: x.expand_as(y), (_r(3, 1), _r(2, 3, 4))),
    "view_as": (lambda x, y: x.view_as(y), (_r(12), _r(4, 3))),
    "type_as": (lambda x, y: x.type_as(y), (_ints(3, 4), _r(3, 4))),
    "new_zeros": (lambda x: x.new_zeros(2, 3) + x[0, :3], (_r(3, 4),)),
    "new_ones": (lambda x: x.new_ones(3, 4) * x, (_r(3, 4),)),
    "new_full": (lambda x: x.new_full((3, 4), 2.5) - x, (_r(3, 4),)),
    "einsum": (
        lambda a, b: torch.einsum("bhqd,bhkd->bhqk", a, b),
        (_r(1, 2, 3, 4), _r(1, 2, 5, 4)),
    ),
    "unflatten": (lambda x: x.unflatten(-1, (2, 4)), (_r(2, 8),)),
    "movedim": (lambda x: torch.movedim(x, 0, -1), (_r(2, 3, 4),)),
    "swapaxes": (lambda x: torch.swapaxes(x, 0, 2), (_r(2, 3, 4),)),
    "chunk": (lambda x: torch.chunk(x, 3, -1), (_r(2, 8),)),
    "unbind": (lambda x: torch.unbind(x, 1), (_r(2, 3, 4),)),
    "baddbmm": (
        lambda c, a, b: torch.baddbmm(c, a, b, beta=0.5, alpha=2.0),
        (_r(2, 3, 5), _r(2, 3, 4), _r(2, 4, 5)),
    ),
    "addbmm": (
        lambda c, a, b: torch.addbmm(c, a, b, beta=0.5),
        (_r(3, 5), _r(2, 3, 4), _r(2, 4, 5)),
    ),
    "addcmul": (lambda a, b, c: torch.addcmul(a, b, c, value=0.5), (_r(4, 5), _r(4, 5), _r(4, 5))),
    "addcdiv": (
        lambda a, b, c: torch.addcdiv(a, b, c.abs() + 1, value=0.5),
        (_r(4, 5), _r(4, 5), _r(4, 5)),
    ),
    "logsumexp": (lambda x: torch.logsumexp(x, -1), (_r(2, 3, 8),)),
    "isfinite": (lambda x: torch.isfinite(x / (x > 0)), (_r(2, 8),)),
    "bitwise_and": (torch.bitwise_and, (_ints(4, 5), _ints(4, 5).flip(0))),
    "bitwise_not": (torch.bitwise_not, (_ints(4, 5),)),
    "acos": (torch.acos, (_r(2, 8).clamp(-0.9, 0.9),)),
    "asin": (torch.asin, (_r(2, 8).clamp(-0.9, 0.9),)),
    "normalize": (lambda x: F.normalize(x, dim=-1), (_r(2, 8),)),
    "instance_norm": (F.instance_norm, (_r(1, 3, 4, 4),)),
    "rms_norm": (lambda x, w: F.rms_norm(x, (8,), w), (_r(2, 8), _r(8))),
    "var_mean": (lambda x: torch.var_mean(x, -1), (_r(2, 8),)),
    "diagonal": (lambda x: torch.diagonal(x, 1, -2, -1), (_r(2, 4, 5),)),
    "pad_reflect": (lambda x: F.pad(x, (1, 2, 2, 0), mode="reflect"), (_r(1, 2, 4, 4),)),
    "cross_entropy": (F.cross_entropy, (_r(4, 5), torch.tensor([0, 4, 2, 1]))),
    "cdist": (torch.cdist, (_r(1, 3, 4), _r(1, 5, 4))),
}


def _check(fn: Callable[..., object], inputs: tuple[torch.Tensor, ...]) -> None:
    ep = torch.export.export(Fn(fn), inputs)
    got = qopt.interpret(qopt.import_program(ep), *inputs)
    want = [t.detach().numpy() for t in pytree.tree_leaves(Fn(fn)(*inputs))]
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape
        assert g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", sorted(PRESERVED))
def test_preserved_ops_import_and_match_torch(name: str) -> None:
    fn, inputs = PRESERVED[name]
    _check(fn, inputs)


def test_records_name_the_decompositions() -> None:
    fn, inputs = PRESERVED["logsumexp"]
    ep = torch.export.export(Fn(fn), inputs)
    importer = Importer(ep, get_converters())
    importer.run()
    record = importer.decompositions["aten.logsumexp.default"]
    assert record.imported
    assert record.source == "torch._decomp table"
    assert "aten.exp.default" in record.ops
    # the user's program is left as it was
    assert "aten.logsumexp.default" in {str(n.target) for n in ep.graph.nodes}


def test_decomposed_nodes_keep_the_source_line() -> None:
    fn, inputs = PRESERVED["reshape_as"]
    ep = torch.export.export(Fn(fn), inputs)
    module = qopt.import_program(ep)
    (view,) = [op for op in module.walk() if op.name == "aten.view"]
    assert "test_decompose.py" in str(view.location)


def test_converter_and_decomposition_interpret_alike() -> None:
    """Ops qopt converts and torch decomposes: the converter set aside, the
    decomposition imports and interprets like the converter's op."""
    cases = [
        (lambda x: torch.diff(x, dim=-1), (_r(3, 6),), "aten.diff.default"),
        (lambda x: torch.addcmul(x, x, x, value=0.5), (_r(3, 6),), "aten.addcmul.default"),
        (lambda x: torch.tril(x, -1), (_r(4, 4),), "aten.tril.default"),
        (lambda x: F.hardswish(x), (_r(3, 6),), "aten.hardswish.default"),
        (lambda x: F.gelu(x), (_r(3, 6),), "aten.gelu.default"),
        (lambda x: torch.lerp(x, x.flip(0), 0.3), (_r(3, 6),), "aten.lerp.Scalar"),
    ]
    for fn, inputs, target in cases:
        ep = torch.export.export(Fn(fn), inputs)
        converters = get_converters()
        assert target in converters
        direct = qopt.interpret(Importer(ep, converters).run(), *inputs)
        del converters[target]
        importer = Importer(ep, converters)
        decomposed = importer.run()
        assert importer.decompositions[target].imported
        op_name = "aten." + target.split(".")[1]
        assert op_name not in {op.name for op in decomposed.walk()}
        for a, b in zip(direct, qopt.interpret(decomposed, *inputs), strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


def test_refusal_names_op_decomposition_and_piece() -> None:
    fn, inputs = PRESERVED["logsumexp"]
    ep = torch.export.export(Fn(fn), inputs)
    converters = get_converters()
    del converters["aten.exp.default"]
    with pytest.raises(qopt.QoptError) as info:
        Importer(ep, converters).run()
    message = str(info.value)
    assert "'aten.logsumexp.default'" in message
    assert "torch._decomp table" in message
    assert "stops at 'aten.exp.default'" in message


def test_every_unknown_op_is_reported_at_once() -> None:
    def fn(x: torch.Tensor) -> torch.Tensor:
        return (
            torch.nanmedian(x, 0)[0].sum() + torch.mode(x, 0)[0].sum() + torch.logsumexp(x, 0).sum()
        )

    ep = torch.export.export(Fn(fn), (_r(3, 4),))
    with pytest.raises(qopt.QoptError) as info:
        qopt.import_program(ep)
    message = str(info.value)
    assert message.startswith("2 unsupported op(s)")
    assert "'aten.nanmedian.dim'" in message
    assert "'aten.mode.default'" in message
    assert "torch has no decomposition of it" in message
    assert "logsumexp" not in message


def test_dynamic_dims_flow_through_decompositions() -> None:
    def fn(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return (
            torch.logsumexp(x, -1) + torch.broadcast_to(x[:, :1], x.shape).sum(-1),
            x.new_zeros(x.shape) + x,
        )

    class One(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            return fn(x)

    ep = torch.export.export(One(), (_r(5, 4),), dynamic_shapes=({0: Dim("s", min=2, max=8)},))
    module = qopt.import_program(ep)
    for n in (2, 3, 8):
        x = _r(n, 4)
        want = [t.numpy() for t in fn(x)]
        for g, w in zip(qopt.interpret(module, x), want, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_graph_without_unknown_ops_is_not_copied() -> None:
    ep = torch.export.export(Fn(lambda x: x + 1), (_r(3),))
    graph, records = decompose_graph(ep.graph, get_converters())
    assert graph is ep.graph
    assert records == {}


def test_sort_and_topk_match_torch() -> None:
    """aten.sort (the op sort, topk, argsort, msort and kthvalue import to) against
    torch: NaN above every number, ties in input order (torch's stable sort), ints."""
    x = _r(3, 7)
    x[0, 2] = float("nan")
    x[1, 1] = x[1, 5] = 0.25
    ints = _ints(3, 7)
    cases: list[tuple[Callable[..., object], torch.Tensor]] = [
        (lambda t: torch.sort(t, dim=-1, stable=True), x),
        (lambda t: torch.sort(t, dim=0, descending=True, stable=True), x),
        (lambda t: torch.sort(t, dim=1, descending=True, stable=True), ints),
        (lambda t: torch.topk(t, 3, dim=-1).values, _r(3, 7)),
        (lambda t: torch.topk(t, 2, dim=0, largest=False)[0], ints),
        (lambda t: torch.argsort(t, dim=-1, stable=True), ints),
        (lambda t: torch.msort(t), x),
    ]
    for fn, t in cases:
        _check(fn, (t,))


def test_topk_forms_torch_leaves_unspecified() -> None:
    """The order of topk(sorted=False) is torch's CPU algorithm's: refused, never a
    different answer. topk's indices of equal values are unspecified in torch: qopt's
    are a stable sort's, so the values match torch exactly and each index points at
    an entry holding its value (the same index as torch's where values are distinct)."""
    ep = torch.export.export(Fn(lambda t: torch.topk(t, 2, sorted=False)[0]), (_r(4, 5),))
    with pytest.raises(qopt.QoptError, match=r"sorted=False"):
        qopt.import_program(ep)
    x = (_r(4, 9) * 2).round()  # ties
    fn = Fn(lambda t: torch.topk(t, 4, dim=-1))
    values, indices = qopt.interpret(qopt.import_program(torch.export.export(fn, (x,))), x)
    want_values = torch.topk(x, 4, dim=-1).values
    np.testing.assert_array_equal(values, want_values.numpy())
    np.testing.assert_array_equal(np.take_along_axis(x.numpy(), indices, -1), values)
    assert all(len(set(row)) == len(row) for row in indices.tolist())
    distinct = _r(4, 9)
    _, indices = qopt.interpret(qopt.import_program(torch.export.export(fn, (distinct,))), distinct)
    np.testing.assert_array_equal(indices, torch.topk(distinct, 4, dim=-1).indices.numpy())
