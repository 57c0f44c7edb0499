"""Compositions of the targets' lowerings (qopt/lowering/compose.py, issue 22).

Each composition replaces a form of an op a target lacks by aten ops it has: proven by
interpreting the imported program before and after `compose` (the aten semantics of
both must agree), then by compiling for the target and comparing with torch eager
(CoreML read back and interpreted; Vulkan on the device).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import qopt
from qopt.context import make_context
from qopt.dialects import vkc
from qopt.lowering.compose import COMPOSITIONS, compose
from qopt.lowering.pipelines import QoptVulkanPipeline
from qopt.resources import clone_module


class Fn(torch.nn.Module):
    def __init__(self, fn: Callable[..., object]):
        super().__init__()
        self.fn = fn

    def forward(self, *xs: torch.Tensor) -> object:
        return self.fn(*xs)


def _r(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed + sum(shape)))


def _ties(*shape: int) -> torch.Tensor:
    """Rounded values (ties) with NaN in a few places: a stable sort's hard cases."""
    x = (_r(*shape) * 2).round()
    x.view(-1)[:: max(1, x.numel() // 3)] = float("nan")
    return x


def _repeat_kv(x: torch.Tensor, n: int) -> torch.Tensor:
    """transformers' repeat_kv: each key/value head n times, as expand + reshape."""
    b, h, s, d = x.shape
    return x[:, :, None, :, :].expand(b, h, n, s, d).reshape(b, h * n, s, d)


def _ints(dtype: torch.dtype, *shape: int, seed: int = 0) -> torch.Tensor:
    """Integers over the whole range of `dtype` (int32's for int64: Core ML holds int64
    values in int32), the extremes, 0, 1 and -1 among them."""
    info = torch.iinfo(dtype if dtype != torch.int64 else torch.int32)
    generator = torch.Generator().manual_seed(seed + sum(shape))
    x = torch.randint(info.min, info.max + 1, shape, generator=generator, dtype=torch.int64)
    edges = torch.tensor([info.min, info.max, 0, 1, -1 if info.min < 0 else info.max - 1])
    count = min(len(edges), x.numel())
    x.view(-1)[:count] = edges.roll(seed)[:count]
    return x.to(dtype)


# (id, target, function, inputs, the op composed)
CASES: list[tuple[str, str, Callable[..., object], tuple[torch.Tensor, ...], str]] = [
    (
        "repeat_kv_vulkan",
        "vulkan",
        lambda q, k, v, m: F.scaled_dot_product_attention(q, _repeat_kv(k, 3), v, attn_mask=m),
        (_r(1, 6, 2, 8), _r(1, 2, 5, 8), _r(1, 6, 5, 8), _r(1, 1, 2, 5)),
        "aten.view",
    ),
    ("baddbmm", "vulkan", torch.baddbmm, (_r(2, 3, 5), _r(2, 3, 4), _r(2, 4, 5)), "aten.addmm"),
    (
        "baddbmm_scaled",
        "vulkan",
        lambda c, a, b: torch.baddbmm(c, a, b, beta=0.5, alpha=-2.0),
        (_r(1, 3, 5), _r(2, 3, 4), _r(2, 4, 5)),
        "aten.addmm",
    ),
    (
        "addmm_beta0",
        "vulkan",
        lambda c, a, b: torch.addmm(c, a, b, beta=0.0),
        (_r(3, 5), _r(3, 4), _r(4, 5)),
        "aten.addmm",
    ),
    (
        "addmm_matrix_bias",
        "vulkan",
        torch.addmm,
        (_r(3, 5), _r(3, 4), _r(4, 5)),
        "aten.addmm",
    ),
    ("diff_vulkan", "vulkan", lambda x: torch.diff(x, n=2, dim=1), (_r(2, 6, 3),), "aten.diff"),
    ("diff_coreml", "coreml", lambda x: torch.diff(x, dim=-1), (_r(3, 7),), "aten.diff"),
    (
        "count_vulkan",
        "vulkan",
        lambda x: torch.count_nonzero(x > 0, -1),
        (_r(3, 9),),
        "aten.sum",
    ),
    (
        "batch_norm_vulkan",
        "vulkan",
        lambda x, m, v, w, b: F.batch_norm(x, m, v, w, b, training=False, eps=1e-3),
        (_r(2, 3, 4, 4), _r(3), _r(3).abs(), _r(3), _r(3)),
        "aten.batch_norm",
    ),
    (
        "batch_norm_coreml",
        "coreml",
        lambda x, m, v: F.batch_norm(x, m, v, training=False),
        (_r(2, 3, 5), _r(3), _r(3).abs()),
        "aten.batch_norm",
    ),
    ("tril_coreml", "coreml", lambda x: torch.tril(x, -1), (_r(2, 4, 5),), "aten.tril"),
    ("triu_coreml", "coreml", lambda x: torch.triu(x, 2), (_r(5, 4),), "aten.triu"),
    ("any_coreml", "coreml", lambda x: (x > 1).any(-1), (_r(3, 6),), "aten.any"),
    ("all_coreml", "coreml", lambda x: torch.all(x > -1, 0), (_r(3, 6),), "aten.all"),
    ("max_dim_coreml", "coreml", lambda x: torch.max(x, 1), (_r(3, 6),), "aten.max_dim"),
    (
        "min_dim_coreml",
        "coreml",
        lambda x: torch.min(x, 0, keepdim=True),
        (_r(3, 6),),
        "aten.min_dim",
    ),
    ("max_all_coreml", "coreml", torch.max, (_r(3, 6),), "aten.max"),
    ("prod_vulkan", "vulkan", lambda x: x.prod(2), (_r(3, 2, 7) * 0.5 + 1,), "aten.prod"),
    ("prod_all_vulkan", "vulkan", torch.prod, (_r(5, 3) * 0.2 + 1,), "aten.prod"),
    (
        "prod_int_coreml",
        "coreml",
        lambda x: torch.prod(x, 1, keepdim=True),
        (torch.randint(-3, 4, (2, 5, 3), dtype=torch.int32),),
        "aten.prod",
    ),
    ("min_all_coreml", "coreml", torch.min, (_r(2, 3, 6),), "aten.min"),
    (
        "max_dim_ties",
        "coreml",
        lambda x: torch.max(x.round(), -1),
        (_r(4, 8),),
        "aten.max_dim",
    ),
    (
        "sort_coreml",
        "coreml",
        lambda x: torch.sort(x, dim=-1, stable=True),
        (_ties(3, 7),),
        "aten.sort",
    ),
    (
        "sort_descending_vulkan",
        "vulkan",
        lambda x: torch.sort(x, dim=0, descending=True, stable=True),
        (_ties(5, 4),),
        "aten.sort",
    ),
    (
        "sort_vulkan",
        "vulkan",
        lambda x: torch.sort(x, dim=1, stable=True),
        (_ties(2, 6, 3),),
        "aten.sort",
    ),
    (
        "sort_int_coreml",
        "coreml",
        lambda x: torch.sort(x, dim=-1, descending=True, stable=True),
        (
            torch.randint(
                -3, 4, (3, 8), dtype=torch.int32, generator=torch.Generator().manual_seed(1)
            ),
        ),
        "aten.sort",
    ),
    ("topk_coreml", "coreml", lambda x: torch.topk(x, 3, dim=1), (_r(2, 7, 3),), "aten.sort"),
    (
        "topk_smallest_vulkan",
        "vulkan",
        lambda x: torch.topk(x, 2, dim=-1, largest=False),
        (_r(4, 6),),
        "aten.sort",
    ),
    (
        "index_add_repeats_coreml",
        "coreml",
        lambda x, s: x.index_add(1, torch.tensor([2, 0, 2, 4]), s),
        (_r(3, 5, 2), _r(3, 4, 2)),
        "aten.index_put",
    ),
    (
        "bitwise_and_coreml",
        "coreml",
        torch.bitwise_and,
        (_ints(torch.int32, 3, 4), _ints(torch.int32, 4, seed=1)),
        "aten.bitwise_and",
    ),
    (
        "bitwise_or_coreml",
        "coreml",
        torch.bitwise_or,
        (_ints(torch.int32, 2, 3, 4), _ints(torch.int32, 3, 1, seed=1)),
        "aten.bitwise_or",
    ),
    (
        "bitwise_xor_long_coreml",
        "coreml",
        torch.bitwise_xor,
        (_ints(torch.int32, 5).long(), _ints(torch.int32, 5, seed=1).long()),
        "aten.bitwise_xor",
    ),
    (
        "bitwise_not_coreml",
        "coreml",
        torch.bitwise_not,
        (_ints(torch.int32, 2, 5),),
        "aten.bitwise_not",
    ),
    (
        "conv_dilation_runtime_weight_coreml",
        "coreml",
        lambda x, w, b: F.conv2d(x, w, b, stride=(1, 2), padding=(2, 1), dilation=(2, 3), groups=2),
        (_r(2, 4, 9, 10), _r(6, 2, 3, 2), _r(6)),
        "aten.conv2d",
    ),
    (
        "conv1d_dilation_runtime_weight_coreml",
        "coreml",
        lambda x, w: F.conv1d(x, w, dilation=3),
        (_r(2, 3, 20), _r(4, 3, 4)),
        "aten.conv2d",
    ),
    (
        "index_put_accumulate_negative_vulkan",
        "vulkan",
        lambda x, v: x.index_put((torch.tensor([-1, 0, -1, 2]),), v, accumulate=True),
        (_r(4, 3), _r(4, 3)),
        "aten.index_put",
    ),
]


def _on_coreml(
    ep: torch.export.ExportedProgram, inputs: tuple[torch.Tensor, ...], **options: str
) -> tuple[Any, ...]:
    """The CoreML package of `ep` saved, read back and interpreted on `inputs`."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "m.mlpackage"
        qopt.compile(ep, "coreml", **options).save(path)
        return qopt.interpret(qopt.read_mlpackage(path), *inputs)


def _eager(fn: Callable[..., object], inputs: tuple[torch.Tensor, ...]) -> list[np.ndarray]:
    out = fn(*inputs)
    items = out if isinstance(out, tuple) else (out,)
    return [t.numpy() for t in items if isinstance(t, torch.Tensor)]


@pytest.mark.parametrize(("name", "target", "fn", "inputs", "op"), CASES, ids=[c[0] for c in CASES])
def test_composition_interprets_alike(
    name: str, target: str, fn: Callable[..., object], inputs: tuple[torch.Tensor, ...], op: str
) -> None:
    module = qopt.import_program(torch.export.export(Fn(fn), inputs))
    composed = clone_module(module)
    assert compose(composed, target) == [op]
    if op not in ("aten.sum", "aten.conv2d"):  # a float sum; an undilated convolution
        assert op not in {o.name for o in composed.walk()}
    composed.verify()
    before = qopt.interpret(module, *inputs)
    after = qopt.interpret(composed, *inputs)
    for a, b in zip(before, after, strict=True):
        assert a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize(("name", "target", "fn", "inputs", "op"), CASES, ids=[c[0] for c in CASES])
def test_composition_matches_torch_on_its_target(
    name: str, target: str, fn: Callable[..., object], inputs: tuple[torch.Tensor, ...], op: str
) -> None:
    ep = torch.export.export(Fn(fn), inputs)
    want = _eager(fn, inputs)
    if target == "coreml":
        got = _on_coreml(ep, inputs, compute_precision="fp32")  # exact
        want = [w.astype(np.int32) if w.dtype == np.int64 else w for w in want]
        want = [w.astype(np.float32) if w.dtype == np.bool_ else w for w in want]
    else:
        from qopt.backends.vulkan.runtime import vulkan_available

        if (reason := vulkan_available()) is not None:
            pytest.skip(f"no Vulkan device: {reason}")
        with qopt.compile(ep, "vulkan") as artifact:
            got = artifact(*inputs)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def test_kernel_forms_are_left_alone() -> None:
    """A form the target has stays as it is (nn.Linear as addmm on Vulkan, tril on
    Vulkan, a constant-statistics batch norm)."""
    for fn, inputs in [
        (lambda c, a, b: torch.addmm(c, a, b), (_r(5), _r(3, 4), _r(4, 5))),
        (lambda x: torch.tril(x), (_r(4, 4),)),
    ]:
        module = qopt.import_program(torch.export.export(Fn(fn), inputs))
        assert compose(module, "vulkan") == []
    bn = torch.nn.BatchNorm2d(3).eval()
    module = qopt.import_program(torch.export.export(bn, (_r(1, 3, 4, 4),)))
    assert compose(clone_module(module), "vulkan") == []
    assert compose(module, "coreml") == []


def test_repeat_kv_is_read_in_place_on_vulkan() -> None:
    """Grouped-query attention written as transformers writes it (repeat_kv: unsqueeze,
    expand, reshape) compiles with no copy of the keys or values: sdpa reads the
    source heads in groups. A repeat read by anything else than sdpa stays a copy."""

    def copies(fn: Callable[..., object], inputs: tuple[torch.Tensor, ...]) -> int:
        module = qopt.import_program(torch.export.export(Fn(fn), inputs))
        QoptVulkanPipeline().apply(make_context(), module)
        kernels = {
            k.sym_name.data: k.kernel.data for k in module.walk() if isinstance(k, vkc.KernelOp)
        }
        dispatches = [op for op in module.walk() if isinstance(op, vkc.DispatchOp)]
        assert dispatches
        return sum(kernels[d.kernel.root_reference.data] == "copy_strided" for d in dispatches)

    q, k, v = _r(1, 4, 1, 8), _r(1, 2, 16, 8), _r(1, 2, 16, 8)
    gqa = lambda q, k, v: F.scaled_dot_product_attention(q, _repeat_kv(k, 2), _repeat_kv(v, 2))  # noqa: E731
    assert copies(gqa, (q, k, v)) == 0
    also_added = lambda q, k, v: (  # noqa: E731
        F.scaled_dot_product_attention(q, _repeat_kv(k, 2), _repeat_kv(v, 2))
        + _repeat_kv(v, 2).sum()
    )
    assert copies(also_added, (q, k, v)) >= 1


def test_every_target_has_a_table() -> None:
    assert set(COMPOSITIONS) == {"coreml", "vulkan"}
    covered = {op for _, _, _, _, op in CASES}
    for table in COMPOSITIONS.values():
        for kind in table:
            assert kind.name in covered, f"{kind.name} has a composition without a case"


def test_a_decomposition_beyond_the_kernels_rank_is_a_clean_refusal() -> None:
    """adaptive_max_pool3d imports through torch's decomposition, whose rank-8
    intermediates the Vulkan kernels cannot address: a QoptError naming the op (it
    was a ValueError from the lowering's stride helper)."""
    from qopt.backends.vulkan.runtime import vulkan_available

    fn = lambda x: F.adaptive_max_pool3d(x, 2)  # noqa: E731
    inputs = (_r(1, 2, 4, 4, 4),)
    ep = torch.export.export(Fn(fn), inputs)
    (got,) = qopt.interpret(qopt.import_program(ep), *inputs)
    np.testing.assert_allclose(got, fn(*inputs).numpy(), rtol=1e-6)
    if (reason := vulkan_available()) is not None:
        pytest.skip(f"no Vulkan device: {reason}")
    with pytest.raises(qopt.QoptError, match=r"convert-to-vkc: .*rank-8 tensor"):
        qopt.compile(ep, "vulkan")


@pytest.mark.parametrize(
    "dtype", [torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64], ids=str
)
def test_integer_bitwise_ops_match_torch_on_coreml(dtype: torch.dtype) -> None:
    """`&`, `|`, `^`, `~` of every integer dtype torch has them for (broadcast operands,
    the dtype's extremes, negative values): the composed program interprets as torch
    computes, and so does the Core ML program read back (integers come back as int32,
    Core ML's integer type)."""

    def fn(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return a & b, a | b, a ^ b, ~a, ~b

    inputs = (_ints(dtype, 3, 8), _ints(dtype, 8, seed=2))
    want = [t.numpy() for t in fn(*inputs)]
    ep = torch.export.export(Fn(fn), inputs)
    module = qopt.import_program(ep)
    composed = clone_module(module)
    assert sorted(compose(composed, "coreml")) == sorted(
        ["aten.bitwise_and", "aten.bitwise_or", "aten.bitwise_xor"] + ["aten.bitwise_not"] * 2
    )
    composed.verify()
    for got in (qopt.interpret(module, *inputs), qopt.interpret(composed, *inputs)):
        for g, w in zip(got, want, strict=True):
            assert g.dtype == w.dtype
            np.testing.assert_array_equal(g, w)
    got = _on_coreml(ep, inputs)
    for g, w in zip(got, want, strict=True):
        assert g.dtype.kind in "iu"
        np.testing.assert_array_equal(g.astype(np.int64), w.astype(np.int64))


def test_bool_bitwise_ops_and_constant_dilated_weights_stay() -> None:
    """Bools keep the logical rule's form; a constant weight keeps its dilation (the
    target dilates it itself)."""
    masks = (_r(4) > 0, _r(4, seed=1) > 0)
    module = qopt.import_program(torch.export.export(Fn(lambda a, b: (a & b, a ^ b, ~a)), masks))
    assert compose(module, "coreml") == []
    conv = torch.nn.Conv2d(2, 3, 3, dilation=2).eval()
    module = qopt.import_program(torch.export.export(conv, (_r(1, 2, 8, 8),)))
    assert compose(module, "coreml") == []


def test_bitwise_ops_of_0d_tensors_and_python_scalars_on_coreml() -> None:
    """0-d operands and results (`a & 5` of a 0-d tensor, torch's `__rxor__`): composed
    on [1] and viewed back (a crash of the verifier before)."""

    def fn(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return a & 5, 3 ^ b, a | b, ~a, b & a

    inputs = (torch.tensor(-7, dtype=torch.int32), torch.tensor([6, -1, 0], dtype=torch.int32))
    want = [t.numpy() for t in fn(*inputs)]
    ep = torch.export.export(Fn(fn), inputs)
    composed = qopt.import_program(ep)
    assert len(compose(composed, "coreml")) == 5
    composed.verify()
    for g, w in zip(qopt.interpret(composed, *inputs), want, strict=True):
        assert g.shape == w.shape
        np.testing.assert_array_equal(g, w)
    got = _on_coreml(ep, inputs)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g.reshape(w.shape), w)
