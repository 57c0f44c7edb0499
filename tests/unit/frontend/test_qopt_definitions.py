"""qopt's definitions of ops torch has no decomposition for (qopt/frontend/decompose.py,
EXTRA_DECOMPOSITIONS; issue 22): kthvalue, median along a dim, cummax, scatter (src and
add), bilinear, avg_pool3d; and of im2col (`F.unfold`), whose torch decomposition
needs a rank-6 tensor. Each exported as a user does, imported through its
definition and checked against torch eager on the interpreter, CoreML (read back and
interpreted) and Vulkan (when a device is present), on the cases that test the
definition's edges: ties, NaN, colliding writes, an index smaller than the input,
padding and ceil_mode.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
import torch.utils._pytree as pytree
from xdsl.dialects.builtin import TensorType
from xdsl.utils.hints import isa

import qopt
from qopt.frontend.decompose import EXTRA_DECOMPOSITIONS


class Fn(torch.nn.Module):
    def __init__(self, fn: Callable[..., object]):
        super().__init__()
        self.fn = fn

    def forward(self, *xs: torch.Tensor) -> object:
        return self.fn(*xs)


def _r(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed + sum(shape)))


def _ties(*shape: int) -> torch.Tensor:
    return (_r(*shape) * 1.5).round()


def _nan(x: torch.Tensor) -> torch.Tensor:
    x = x.clone()
    x.view(-1)[3 :: max(1, x.numel() // 2)] = float("nan")
    return x


def _index(high: int, *shape: int) -> torch.Tensor:
    return torch.randint(0, high, shape, generator=torch.Generator().manual_seed(3))


# (id, function, inputs, whether the indices are exact where values tie)
CASES: list[tuple[str, Callable[..., object], tuple[torch.Tensor, ...], bool]] = [
    ("kthvalue", lambda x: torch.kthvalue(x, 3, 1), (_r(2, 6, 3),), True),
    ("kthvalue_keepdim", lambda x: torch.kthvalue(x, 1, -1, keepdim=True), (_r(4, 5),), True),
    ("kthvalue_ties", lambda x: torch.kthvalue(x, 4, -1), (_ties(3, 9),), False),
    ("median", lambda x: torch.median(x, -1), (_r(3, 8),), True),
    ("median_odd_keepdim", lambda x: torch.median(x, 0, keepdim=True), (_r(7, 4),), True),
    ("median_nan", lambda x: torch.median(x, -1), (_nan(_r(4, 7)),), True),
    ("median_int", lambda x: torch.median(x, -1), (_index(50, 3, 6) * 7 % 31,), True),
    ("cummax", lambda x: torch.cummax(x, 1), (_r(2, 7, 3),), True),
    ("cummax_ties", lambda x: torch.cummax(x, -1), (_ties(3, 8),), True),
    ("cummax_nan", lambda x: torch.cummax(x, -1), (_nan(_r(3, 8)),), True),
    ("cummin_ties", lambda x: torch.cummin(x, 0), (_ties(6, 3),), True),
    ("cummin_nan", lambda x: torch.cummin(x, -1), (_nan(_r(3, 8)),), True),
    ("cummin_int", lambda x: torch.cummin(x, -1), (_index(5, 3, 8),), True),
    (
        "scatter",
        lambda x, i, s: x.scatter(1, i, s),
        (_r(3, 5), torch.tensor([[4, 0], [1, 3], [2, 2]]), _r(3, 4)),
        True,
    ),
    (
        "scatter_smaller_index",
        lambda x, i, s: x.scatter(0, i, s),
        (_r(5, 4), _index(5, 2, 3), _r(3, 4)),
        True,
    ),
    (
        "scatter_add_collisions",
        lambda x, i, s: x.scatter_add(-1, i, s),
        (_r(3, 4), _index(4, 3, 7), _r(3, 7)),
        True,
    ),
    (
        "scatter_add_smaller_index",
        lambda x, i, s: x.scatter_add(0, i, s),
        (_r(4, 5), _index(4, 6, 3), _r(6, 5)),
        True,
    ),
    (
        "bilinear_batched",
        F.bilinear,
        (_r(2, 3, 4), _r(2, 3, 5), _r(6, 4, 5), _r(6)),
        True,
    ),
    (
        "bilinear_no_bias",
        lambda a, b, w: F.bilinear(a, b, w),
        (_r(3, 4), _r(3, 2), _r(5, 4, 2)),
        True,
    ),
    ("avg_pool3d", lambda x: F.avg_pool3d(x, 2), (_r(1, 2, 4, 6, 6),), True),
    (
        "avg_pool3d_pad_ceil",
        lambda x: F.avg_pool3d(
            x, (3, 2, 3), (2, 2, 1), (1, 1, 0), ceil_mode=True, count_include_pad=False
        ),
        (_r(2, 3, 5, 6, 7),),
        True,
    ),
    (
        "avg_pool3d_unbatched",
        lambda x: F.avg_pool3d(x, (1, 3, 3), 1, (0, 1, 1)),
        (_r(2, 3, 5, 5),),
        True,
    ),
    ("unfold", lambda x: F.unfold(x, 2, stride=2), (_r(1, 3, 8, 8),), True),
    (
        "unfold_window",
        lambda x: F.unfold(x, (3, 2), dilation=(2, 1), padding=(1, 2), stride=(2, 3)),
        (_r(2, 3, 9, 11),),
        True,
    ),
    ("unfold_unbatched", lambda x: F.unfold(x, 3, padding=1), (_r(2, 5, 6),), True),
]

VULKAN_REFUSES = {"cummin_int"}
"""Cases Vulkan refuses: the running extreme of integers is an integer amin there."""


def _eager(fn: Callable[..., object], inputs: tuple[torch.Tensor, ...]) -> list[np.ndarray]:
    return [t.detach().numpy() for t in pytree.tree_leaves(fn(*inputs))]


def _compare(
    got: Sequence[np.ndarray], want: list[np.ndarray], inputs: tuple[torch.Tensor, ...], exact: bool
) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape
        if g.dtype.kind in "iu" and not exact:  # indices of equal values: any of them
            source = inputs[0].numpy()  # (a reduction along the last dim)
            picked = np.take_along_axis(source, g.astype(np.int64)[..., None], -1)
            np.testing.assert_array_equal(picked, np.take_along_axis(source, w[..., None], -1))
            continue
        np.testing.assert_allclose(g, w.astype(g.dtype), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(("name", "fn", "inputs", "exact"), CASES, ids=[c[0] for c in CASES])
def test_definition_matches_torch_on_every_target(
    name: str, fn: Callable[..., object], inputs: tuple[torch.Tensor, ...], exact: bool
) -> None:
    ep = torch.export.export(Fn(fn), inputs)
    module = qopt.import_program(ep)
    assert not {o.name for o in module.walk()} & {
        "aten.kthvalue",
        "aten.median",
        "aten.cummax",
        "aten.cummin",
    }
    want = _eager(fn, inputs)
    got = qopt.interpret(module, *inputs)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype
    _compare(got, want, inputs, exact)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "m.mlpackage"
        qopt.compile(ep, "coreml", compute_precision="fp32").save(path)
        _compare(qopt.interpret(qopt.read_mlpackage(path), *inputs), want, inputs, exact)
    from qopt.backends.vulkan.runtime import vulkan_available

    if (reason := vulkan_available()) is not None:
        print(f"Vulkan left out: {reason}")
        return
    if name in VULKAN_REFUSES:  # a clean refusal, never a wrong answer
        with pytest.raises(qopt.QoptError, match="integer reductions"):
            qopt.compile(ep, "vulkan")
        return
    with qopt.compile(ep, "vulkan") as artifact:
        _compare(artifact(*inputs), want, inputs, exact)


def test_every_definition_is_tested() -> None:
    names = {str(op) for op in EXTRA_DECOMPOSITIONS}
    tested = {"aten.kthvalue.default", "aten.median.dim", "aten.cummax.default"}
    tested |= {"aten.cummin.default"}
    tested |= {"aten.scatter.src", "aten.scatter_add.default", "aten.bilinear.default"}
    tested |= {"aten.avg_pool3d.default", "aten.addbmm.default", "aten._cdist_forward.default"}
    tested |= {"aten.im2col.default"}
    assert names <= tested


def test_unfold_stays_within_rank_5() -> None:
    """im2col's definition holds no tensor of rank > 5 (Core ML's limit; torch's
    decomposition indexes a rank-6 [N, C, kh, oh, kw, ow])."""
    inputs = (_r(2, 4, 12, 10),)
    ep = torch.export.export(Fn(lambda x: F.unfold(x, 3, dilation=2, stride=2)), inputs)
    module = qopt.import_program(ep)
    ranks = {
        len(r.type.get_shape()) for o in module.walk() for r in o.results if isa(r.type, TensorType)
    }
    assert max(ranks) == 5
    assert "aten.index_select" in {o.name for o in module.walk()}


def test_avg_pool3d_divisor_override_is_refused_cleanly() -> None:
    ep = torch.export.export(
        Fn(lambda x: F.avg_pool3d(x, 2, divisor_override=3)), (_r(1, 1, 4, 4, 4),)
    )
    with pytest.raises(qopt.QoptError, match="avg_pool3d"):
        qopt.import_program(ep)


def test_quadratic_definitions_refuse_long_dims_cleanly() -> None:
    """cummax's [n, n] pairs beyond 2048 positions (float16 counts them exactly up to
    there): a clean QoptError at import, never a wrong index."""
    ep = torch.export.export(Fn(lambda x: torch.cummax(x, -1)), (_r(1, 3000),))
    with pytest.raises(qopt.QoptError, match="cummax"):
        qopt.import_program(ep)


def test_long_sorts_are_left_to_the_rule() -> None:
    """A sort along more than 2048 entries is not composed: the target's rule refuses it
    (cleanly) and the interpreter still sorts it."""
    from qopt.lowering.compose import compose

    x = _r(1, 3000)
    ep = torch.export.export(Fn(lambda t: torch.sort(t, -1)), (x,))
    module = qopt.import_program(ep)
    assert compose(module, "coreml") == []
    values, _ = qopt.interpret(module, x)
    np.testing.assert_array_equal(values, torch.sort(x, -1).values.numpy())
    with pytest.raises(qopt.QoptError, match=r"aten\.sort"):
        qopt.compile(ep, "coreml")
