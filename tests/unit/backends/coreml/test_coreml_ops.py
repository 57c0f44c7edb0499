"""CoreML lowerings for convnet and transformer ops, end to end, and the reader's
`slice_by_index` masks.

Each model is exported with torch.export, compiled with `qopt.compile(ep,
target="coreml", compute_precision="fp32")` (fp32: the exact check; fp16 is the
default), saved as an `.mlpackage`, read back with `qopt.read_mlpackage` and interpreted on random inputs; the result must match
torch eager within a relative L2 error of 1e-4 (fp32 compute; measured 0 for the
data-movement ops, split, constant-index gathers and bool masks, below 1e-7 for
batch norm, 4.9e-8 for expand (tile), 1.2e-7 for addmm), or 1e-2 with fp16
compute (measured 5.1e-4 to 5.4e-4).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from xdsl.dialects.builtin import ModuleOp

import qopt
from qopt.dialects import coreml

TARGETS = ("iOS16", "iOS17", "iOS18")


def rel_err(got: np.ndarray, want: np.ndarray) -> float:
    g, w = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return float(np.linalg.norm(g - w) / max(np.linalg.norm(w), 1e-30))


# ----- models ---------------------------------------------------------------------------


class ConvBatchNorm(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.bn(self.conv(x)))


class LinearBatchNorm1d(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(6, 8)
        self.bn = torch.nn.BatchNorm1d(8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.bn(self.linear(x))


class WhereCompare(torch.nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        a = torch.where(x > 0.1, x, y * 2)
        b = torch.where(x <= y, a, torch.zeros_like(a))
        return torch.where(x == y, b, b + 1.0)


class SelectIndex(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x[:, 2] + x.select(2, -1).sum(-1, keepdim=True)


class IndexSelect(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("idx", torch.tensor([3, 0, 2, 3]))

    def forward(self, x: torch.Tensor, i: torch.Tensor) -> torch.Tensor:
        cols = torch.index_select(x, 1, self.idx)
        rows = torch.index_select(x, 0, i)
        return cols * 2 + rows.sum()


class LayerNormBlock(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(16, 16)
        self.norm = torch.nn.LayerNorm(16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(self.linear(x))


class ExpandKV(torch.nn.Module):
    """Llama's repeat_kv (a new size-1 dim expanded) and an expand adding a leading dim."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        heads = x[:, :, None, :, :].expand(1, 2, 3, 8, 4).reshape(1, 6, 8, 4)
        batch = x[0].expand(2, 2, 8, 4)
        return heads.sum(1) + batch.sum(0) * 0.5


class Addmm(torch.nn.Module):
    """GPT-2's Conv1D (bias + x @ W, constant W [K, N]) and a scaled run-time addmm."""

    def __init__(self) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(4)
        self.weight = torch.nn.Parameter(torch.randn(6, 5, generator=g))
        self.bias = torch.nn.Parameter(torch.randn(5, generator=g))

    def forward(self, x: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        y = torch.addmm(self.bias, x, self.weight)
        return torch.addmm(c, y, y.transpose(0, 1) @ y / 4, beta=0.5, alpha=2.0)


class SplitPieces(torch.nn.Module):
    """GPT-2's fused QKV split (equal pieces) and split_with_sizes."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = x.split(4, dim=-1)
        a, b, c = x.split([4, 5, 3], dim=-1)
        return q * k + v - a + b[..., 1:] * c.sum(-1, keepdim=True)


class ConstantIndex(torch.nn.Module):
    """Advanced indexing with constant index tensors, on floats and on a bool mask."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("rows", torch.tensor([3, 0, -1]))
        self.register_buffer("cols", torch.tensor([[4], [1]]))
        self.register_buffer("mid", torch.tensor([[2], [0]]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        picked = x[self.rows, :, self.cols]  # non-adjacent dims: [2, 3, 3]
        mask = (x > 0)[self.rows, :, self.cols]  # a bool gather
        adjacent = x[self.rows, self.mid]  # [2, 3, 5]
        return torch.where(mask, picked, -picked) + adjacent[..., :3]


class BoolMasks(torch.nn.Module):
    """BERT's padding mask: & of two bool masks; | and ^ and logical_and too."""

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        both = (x[:, :, None] > 0) & (y[:, None, :] < 0.5)
        either = (x[:, :, None] > 0) | (y[:, None, :] < 0.5)
        one = torch.bitwise_xor(x[:, :, None] > 0, y[:, None, :] < 0.5)
        scores = x[:, :, None] * y[:, None, :]
        masked = torch.where(both, scores, torch.full_like(scores, -1e4))
        return masked + either.float() * 2 + torch.logical_and(one, scores).float()


class IntBitwise(torch.nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a & b


def _randomize_stats(bn: torch.nn.Module, seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    assert isinstance(bn, torch.nn.modules.batchnorm._BatchNorm)
    with torch.no_grad():
        bn.running_mean.copy_(torch.randn(bn.num_features, generator=g))  # type: ignore[union-attr]
        bn.running_var.copy_(torch.rand(bn.num_features, generator=g) + 0.5)  # type: ignore[union-attr]
        bn.weight.copy_(torch.randn(bn.num_features, generator=g))
        bn.bias.copy_(torch.randn(bn.num_features, generator=g))


def _model(name: str) -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    if name == "conv_bn":
        m: torch.nn.Module = ConvBatchNorm()
        _randomize_stats(m.bn, 2)
        return m.eval(), (torch.randn(2, 3, 8, 8, generator=g),)
    if name == "linear_bn1d":
        m = LinearBatchNorm1d()
        _randomize_stats(m.bn, 3)
        return m.eval(), (torch.randn(4, 6, generator=g),)
    if name == "where":
        x = torch.randn(4, 5, generator=g)
        y = torch.randn(4, 5, generator=g)
        y[0, :2] = x[0, :2]  # some equal entries for `==`
        return WhereCompare().eval(), (x, y)
    if name == "select":
        return SelectIndex().eval(), (torch.randn(2, 4, 5, generator=g),)
    if name == "index_select":
        return IndexSelect().eval(), (torch.randn(4, 5, generator=g), torch.tensor([1, 3, 1]))
    if name == "expand":
        return ExpandKV().eval(), (torch.randn(1, 2, 8, 4, generator=g),)
    if name == "addmm":
        return Addmm().eval(), (torch.randn(4, 6, generator=g), torch.randn(4, 5, generator=g))
    if name == "split":
        return SplitPieces().eval(), (torch.randn(2, 3, 12, generator=g),)
    if name == "index":
        return ConstantIndex().eval(), (torch.randn(4, 3, 5, generator=g),)
    if name == "bool_masks":
        return BoolMasks().eval(), (torch.randn(2, 5, generator=g), torch.rand(2, 4, generator=g))
    if name == "int_bitwise":
        return IntBitwise().eval(), (torch.tensor([5, 3, 12]), torch.tensor([6, 1, 10]))
    if name == "layer_norm":
        return LayerNormBlock().eval(), (torch.randn(2, 3, 16, generator=g),)
    raise KeyError(name)


@functools.cache
def exported(name: str) -> Any:
    model, inputs = _model(name)
    return torch.export.export(model, inputs), inputs


def round_trip(
    name: str, target: str, tmp_path: Path, precision: str = "fp32"
) -> tuple[ModuleOp, np.ndarray, np.ndarray]:
    """(read-back module, its output, torch eager output)."""
    ep, inputs = exported(name)
    artifact = qopt.compile(
        ep, target="coreml", minimum_deployment_target=target, compute_precision=precision
    )
    path = tmp_path / f"{name}-{target}-{precision}.mlpackage"
    artifact.save(path)
    back = qopt.read_mlpackage(path)
    got = qopt.interpret(back, *inputs)[0]
    # The package holds what qopt emitted: the lowered IR computes the same.
    assert np.array_equal(got, qopt.interpret(artifact.module, *inputs)[0])
    want = ep.module()(*inputs).detach().numpy()
    return back, got, want


def op_names(module: ModuleOp) -> set[str]:
    return {op.name for op in module.walk()}


# ----- end to end -----------------------------------------------------------------------

EXPECTED_OPS = {
    "conv_bn": {"coreml.conv", "coreml.batch_norm"},
    "linear_bn1d": {"coreml.linear", "coreml.mul", "coreml.add"},
    "where": {"coreml.greater", "coreml.less_equal", "coreml.equal", "coreml.select"},
    "select": {"coreml.slice_by_index"},
    "index_select": {"coreml.gather"},
    "expand": {"coreml.tile"},
    "addmm": {"coreml.linear", "coreml.matmul", "coreml.mul", "coreml.add"},
    "split": {"coreml.slice_by_index"},
    "index": {"coreml.gather", "coreml.cast"},
    "bool_masks": {"coreml.logical_and", "coreml.logical_or", "coreml.logical_xor"},
}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", list(EXPECTED_OPS))
def test_op_round_trip(name: str, target: str, tmp_path: Path) -> None:
    back, got, want = round_trip(name, target, tmp_path)
    assert EXPECTED_OPS[name] <= op_names(back)
    assert got.shape == want.shape
    assert rel_err(got, want) < 1e-4


def test_batch_norm_rank2_folds_to_constants(tmp_path: Path) -> None:
    """MIL batch_norm takes rank 3 to 5: a [N, C] input is `x * a + b`."""
    back, _, _ = round_trip("linear_bn1d", "iOS18", tmp_path)
    assert "coreml.batch_norm" not in op_names(back)


def test_select_keeps_its_squeeze_mask(tmp_path: Path) -> None:
    back, _, _ = round_trip("select", "iOS18", tmp_path)
    masks = [
        [bool(v) for v in op.squeeze_mask.get_values()]
        for op in back.walk()
        if isinstance(op, coreml.SliceByIndexOp) and op.squeeze_mask is not None
    ]
    assert sorted(masks) == [[False, False, True], [False, True, False]]


def test_index_select_indices_are_int32(tmp_path: Path) -> None:
    back, _, _ = round_trip("index_select", "iOS17", tmp_path)
    gathers = [op for op in back.walk() if isinstance(op, coreml.GatherOp)]
    assert len(gathers) == 2
    assert all(str(coreml.elem_of(op.indices)) == "i32" for op in gathers)


def test_addmm_with_constant_weight_is_linear(tmp_path: Path) -> None:
    """GPT-2's Conv1D: the constant [K, N] weight is stored transposed ([N, K]) for
    MIL linear; the run-time, scaled addmm is matmul, mul and add."""
    back, _, _ = round_trip("addmm", "iOS18", tmp_path)
    (linear,) = [op for op in back.walk() if isinstance(op, coreml.LinearOp)]
    assert coreml.shape_of(linear.weight) == (5, 6)
    assert linear.bias is not None


def test_constant_index_is_one_gather_of_flat_offsets(tmp_path: Path) -> None:
    back, _, _ = round_trip("index", "iOS17", tmp_path)
    gathers = [op for op in back.walk() if isinstance(op, coreml.GatherOp)]
    assert len(gathers) == 3
    assert all(len(coreml.shape_of(op.x)) == 1 for op in gathers)


@pytest.mark.parametrize("target", ["iOS16", "iOS18"])
def test_integer_bitwise_is_integer_arithmetic(target: str, tmp_path: Path) -> None:
    """MIL has no integer bitwise op: `&` of int64 tensors is composed of int32
    floor_div / reduce_sum arithmetic (qopt/lowering/compose.py), exact."""
    back, got, want = round_trip("int_bitwise", target, tmp_path)
    assert {"coreml.floor_div", "coreml.reduce_sum"} <= op_names(back)
    np.testing.assert_array_equal(got, want.astype(np.int32))


@pytest.mark.parametrize("name", ["expand", "addmm", "index", "bool_masks"])
def test_transformer_ops_fp16(name: str, tmp_path: Path) -> None:
    _, got, want = round_trip(name, "iOS18", tmp_path, "fp16")
    assert rel_err(got, want) < 1e-2


@pytest.mark.parametrize("target", ["iOS16", "iOS18"])
@pytest.mark.parametrize("name", ["conv_bn", "layer_norm"])
def test_normalization_fp16(name: str, target: str, tmp_path: Path) -> None:
    """fp16 programs: epsilon takes the parameters' type (MIL's `U`; before iOS17
    also x's type `T`)."""
    _, got, want = round_trip(name, target, tmp_path, "fp16")
    assert rel_err(got, want) < 1e-2


# ----- reader: slice_by_index masks -------------------------------------------------------

# (begin, end, stride, begin_mask, end_mask, squeeze_mask) on a [4, 5, 6] input, and
# the numpy index MIL defines for it.
SLICES: list[tuple[tuple[Any, ...], Any]] = [
    # begin ignored on axis 0 (garbage value 3), end ignored on axis 1.
    (([3, 1, 0], [2, 0, 6], [1, 1, 2], [True, False, False], [False, True, False], None),
     np.s_[:2, 1:, 0:6:2]),
    # squeeze axis 1 at a negative index; end_mask on axis 2.
    (([0, -2, 1], [4, 0, 0], [1, 1, 1], None, [False, False, True], [False, True, False]),
     np.s_[0:4, -2, 1:]),
    # negative strides with both masks: full reversal of axes 0 and 2.
    (([0, 0, 0], [0, 3, 0], [-1, 1, -2], [True, False, True], [True, False, True], None),
     np.s_[::-1, 0:3, ::-2]),
    # every axis squeezed: a scalar.
    (([1, 2, -1], [0, 0, 0], [1, 1, 1], None, None, [True, True, True]),
     np.s_[1, 2, -1]),
    # begin_mask with squeeze: the element at 0; negative begin and end.
    (([3, -4, -5], [0, -1, -1], [1, 1, 1], [True, False, False], None, [True, False, False]),
     np.s_[0, -4:-1, -5:-1]),
]  # fmt: skip


@pytest.mark.parametrize("target", TARGETS)
def test_reader_honours_slice_masks(target: str, tmp_path: Path) -> None:
    """A package coremltools' Builder wrote with masked slice_by_index reads back
    with the masks, and interprets to numpy's slicing."""
    import coremltools as ct
    from coremltools.converters.mil import Builder as mb
    from coremltools.converters.mil.mil import types

    def masks(values: Any) -> dict[str, Any]:
        names = ("begin_mask", "end_mask", "squeeze_mask")
        return {n: np.asarray(v, np.bool_) for n, v in zip(names, values, strict=True)
                if v is not None}  # fmt: skip

    @mb.program(input_specs=[mb.TensorSpec(shape=(4, 5, 6), dtype=types.fp32)],
                opset_version=getattr(ct.target, target))  # fmt: skip
    def prog(x: Any) -> Any:
        outputs = []
        for (begin, end, stride, *mask_values), _ in SLICES:
            y = mb.slice_by_index(
                x=x,
                begin=np.asarray(begin, np.int32),
                end=np.asarray(end, np.int32),
                stride=np.asarray(stride, np.int32),
                **masks(mask_values),
            )
            # A scalar output is not a valid model output: add a [1] tensor to it.
            if not y.shape:
                y = mb.add(x=y, y=np.zeros((1,), np.float32))
            outputs.append(y)
        return tuple(outputs)

    model = ct.convert(prog, convert_to="mlprogram", skip_model_load=True,
                       minimum_deployment_target=getattr(ct.target, target),
                       compute_precision=ct.precision.FLOAT32)  # fmt: skip
    path = tmp_path / f"slices-{target}.mlpackage"
    model.save(str(path))
    module = qopt.read_mlpackage(path)
    read = [op for op in module.walk() if isinstance(op, coreml.SliceByIndexOp)]
    assert len(read) == len(SLICES)
    for op, ((_, _, _, begin_mask, end_mask, squeeze_mask), _) in zip(read, SLICES, strict=True):
        for attr, want in (
            (op.begin_mask, begin_mask),
            (op.end_mask, end_mask),
            (op.squeeze_mask, squeeze_mask),
        ):
            got = None if attr is None else [bool(v) for v in attr.get_values()]
            assert got == want or (want is None and got == [False] * 3)
    x = np.random.default_rng(0).standard_normal((4, 5, 6)).astype(np.float32)
    results = qopt.interpret(module, x)
    for got, (_, index) in zip(results, SLICES, strict=True):
        want = np.asarray(x[index])
        if not want.shape:
            want = want.reshape(1)
        assert got.shape == want.shape
        assert np.array_equal(got, want)


def test_reader_rejects_run_time_slice_bounds(tmp_path: Path) -> None:
    import coremltools as ct
    from coremltools.converters.mil import Builder as mb
    from coremltools.converters.mil.mil import types

    @mb.program(input_specs=[mb.TensorSpec(shape=(4, 5), dtype=types.fp32),
                             mb.TensorSpec(shape=(2,), dtype=types.int32)],
                opset_version=ct.target.iOS18)  # fmt: skip
    def prog(x: Any, b: Any) -> Any:
        return mb.slice_by_index(x=x, begin=b, end=np.asarray([4, 5], np.int32))

    path = tmp_path / "dynamic.mlpackage"
    ct.convert(prog, convert_to="mlprogram", skip_model_load=True,
               minimum_deployment_target=ct.target.iOS18).save(str(path))  # fmt: skip
    with pytest.raises(qopt.QoptError, match="computes its 'begin' at run time"):
        qopt.read_mlpackage(path)


# ----- activations, rounding, logs, remainder, masked_fill, index reductions -------------
#
# These must match torch eager within a relative L2 error of 1e-5 (fp32) and integer
# results exactly. Measured (fp32, every target): 0 for abs / floor / ceil / round /
# leaky_relu / remainder / masked_fill / amin / argmax / argmin (bit for bit),
# below 1e-7 for hardswish and hardsigmoid (MIL's sigmoid_hard computes x / 6 + 0.5
# where torch computes (x + 3) / 6) and for log / reciprocal / log_softmax.


def _specials() -> torch.Tensor:
    """Halves (round's ties), hardswish's kinks, zeros of both signs, big values."""
    halves = torch.arange(-5, 6, dtype=torch.float32) + 0.5
    kinks = torch.tensor([-3.0, 3.0, -0.0, 0.0, 2.4999998, -2.5000002, 1e7 + 1, -8388609.0])
    return torch.cat([halves, kinks])


class HardActivations(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return (
            torch.nn.functional.hardswish(x),
            torch.nn.functional.hardsigmoid(x),
            torch.nn.functional.leaky_relu(x),
            torch.nn.functional.leaky_relu(x, 0.2),
        )


class Rounding(torch.nn.Module):
    def forward(self, x: torch.Tensor, n: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return torch.round(x), torch.floor(x), torch.ceil(x), torch.abs(x), torch.abs(n)


class Logs(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return (
            torch.log(x.abs() + 0.01),
            torch.reciprocal(x),
            torch.log_softmax(x, dim=-1),
            torch.log_softmax(x * 60.0, dim=0),  # log(softmax) would give -inf here
        )


class Remainder(torch.nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor, a: torch.Tensor, b: torch.Tensor):
        return (
            torch.remainder(x, y),
            x % 1.5,
            torch.remainder(x, -0.75),
            torch.remainder(a, b),
        )


class MaskedFill(torch.nn.Module):
    def forward(self, x: torch.Tensor, m: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return (
            x.masked_fill(x > 0.5, -1e4),
            x.masked_fill(m, 0.25),  # a [1, 6] mask broadcast over [4, 6]
            (x > 0).masked_fill(m, True),
        )


class Extremes(torch.nn.Module):
    def forward(self, x: torch.Tensor, n: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return (
            torch.amin(x, dim=(0, 2)),
            torch.amin(x, dim=-1, keepdim=True),
            torch.argmax(x, dim=1),
            torch.argmin(x, dim=-1, keepdim=True),
            torch.argmax(x, keepdim=True),
            torch.argmin(n, dim=0),
            torch.argmax(n, dim=1),
        )


def _ties() -> torch.Tensor:
    """[3, 4, 5] with repeated extremes (the first must win) and NaN slices."""
    g = torch.Generator().manual_seed(5)
    x = torch.randint(-2, 3, (3, 4, 5), generator=g).float()
    x[0, 1, 3] = float("nan")
    x[2, :, 0] = float("nan")
    x[1, 2, 2] = float("nan")
    x[1, 2, 4] = float("nan")
    return x


def _ops_model(name: str) -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    g = torch.Generator().manual_seed(11)
    if name == "hard_activations":
        x = torch.cat([_specials(), torch.randn(45, generator=g) * 4]).reshape(4, 16)
        return HardActivations(), (x,)
    if name == "rounding":
        x = torch.cat([_specials(), torch.randn(45, generator=g) * 6]).reshape(4, 16)
        return Rounding(), (x, torch.randint(-9, 9, (2, 5), generator=g))
    if name == "logs":
        return Logs(), (torch.randn(3, 7, generator=g) * 3,)
    if name == "remainder":
        x = torch.randn(4, 6, generator=g) * 5
        y = torch.randn(4, 6, generator=g) * 2
        a = torch.randint(-20, 20, (3, 4), generator=g)
        b = torch.randint(1, 6, (3, 4), generator=g) * torch.where(torch.rand(3, 4) > 0.5, 1, -1)
        x[0, :3] = torch.tensor([3.0, -3.0, 0.0])  # exact multiples: +0 remainders
        return Remainder(), (x, y, a, b)
    if name == "masked_fill":
        m = torch.tensor([[True, False, False, True, False, True]])
        return MaskedFill(), (torch.rand(4, 6, generator=g), m)
    if name == "extremes":
        n = torch.randint(-3, 3, (4, 6), generator=g)
        return Extremes(), (_ties(), n)
    raise KeyError(name)


OPS_EXPECTED = {
    "hard_activations": {"coreml.sigmoid_hard", "coreml.mul", "coreml.leaky_relu"},
    "rounding": {"coreml.floor", "coreml.ceil", "coreml.abs", "coreml.select"},
    "logs": {"coreml.log", "coreml.real_div", "coreml.reduce_max", "coreml.reduce_sum"},
    "remainder": {"coreml.mod", "coreml.select", "coreml.logical_xor"},
    "masked_fill": {"coreml.select"},
    "extremes": {"coreml.reduce_min", "coreml.reduce_max", "coreml.tile", "coreml.select"},
}


@functools.cache
def _ops_exported(name: str) -> Any:
    model, inputs = _ops_model(name)
    return torch.export.export(model.eval(), inputs), inputs


def _ops_round_trip(
    name: str, target: str, tmp_path: Path, precision: str = "fp32"
) -> tuple[ModuleOp, list[np.ndarray], list[np.ndarray]]:
    ep, inputs = _ops_exported(name)
    artifact = qopt.compile(
        ep, target="coreml", minimum_deployment_target=target, compute_precision=precision
    )
    path = tmp_path / f"{name}-{target}-{precision}.mlpackage"
    artifact.save(path)
    back = qopt.read_mlpackage(path)
    got = list(qopt.interpret(back, *inputs))
    lowered = qopt.interpret(artifact.module, *inputs)
    assert all(np.array_equal(a, b, equal_nan=True) for a, b in zip(got, lowered, strict=True))
    want = [t.detach().numpy() for t in ep.module()(*inputs)]
    return back, got, want


def _assert_matches(got: list[np.ndarray], want: list[np.ndarray], tol: float) -> list[float]:
    errors = []
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape
        if w.dtype.kind in "biu":
            assert np.array_equal(g, w), (g, w)
            errors.append(0.0)
            continue
        assert np.array_equal(np.isnan(g), np.isnan(w))
        finite = ~np.isnan(w)
        errors.append(rel_err(g[finite], w[finite]))
    assert max(errors) < tol, errors
    return errors


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", list(OPS_EXPECTED))
def test_unary_and_index_ops(name: str, target: str, tmp_path: Path) -> None:
    back, got, want = _ops_round_trip(name, target, tmp_path)
    assert OPS_EXPECTED[name] <= op_names(back)
    _assert_matches(got, want, 1e-5)


def test_exact_ops_are_bit_exact(tmp_path: Path) -> None:
    """round (halves to even), floor, ceil, abs, leaky_relu, remainder (sign of the
    divisor, with a run-time or constant divisor), masked_fill, amin and the first
    extreme / first NaN of argmax / argmin equal torch's results exactly."""
    for name in ("rounding", "remainder", "masked_fill", "extremes"):
        _, got, want = _ops_round_trip(name, "iOS18", tmp_path)
        for g, w in zip(got, want, strict=True):
            assert np.array_equal(g, w, equal_nan=True), (name, g, w)
    _, got, want = _ops_round_trip("hard_activations", "iOS18", tmp_path)
    assert np.array_equal(got[2], want[2])
    assert np.array_equal(got[3], want[3])


def test_round_half_to_even(tmp_path: Path) -> None:
    _, (rounded, *_), _ = _ops_round_trip("rounding", "iOS17", tmp_path)
    assert rounded.reshape(-1)[:11].tolist() == [-4, -4, -2, -2, 0, 0, 2, 2, 4, 4, 6]


def test_log_softmax_stays_finite(tmp_path: Path) -> None:
    """x * 60 along dim 0 makes softmax underflow to 0; the lowered form is finite."""
    _, got, want = _ops_round_trip("logs", "iOS18", tmp_path)
    assert np.isfinite(got[3]).all()
    assert np.isfinite(want[3]).all()
    assert rel_err(got[3], want[3]) < 1e-6


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
@pytest.mark.parametrize("name", list(OPS_EXPECTED))
def test_unary_and_index_ops_fp16(name: str, tmp_path: Path) -> None:
    """fp16 programs against torch on the inputs rounded to fp16 (rounding is not
    continuous: -2.5000002 is -2.5 in fp16): integer results stay exact (argmax's
    NaN and tie rules survive the cast), float results within 1e-2 (measured up to
    2.4e-3, remainder) where both sides are finite (1e7 overflows fp16)."""
    _, got, _ = _ops_round_trip(name, "iOS18", tmp_path, "fp16")
    ep, inputs = _ops_exported(name)
    halved = [t.half().float() if t.is_floating_point() else t for t in inputs]
    want = [t.detach().numpy() for t in ep.module()(*halved)]
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape
        if w.dtype.kind in "biu":
            assert np.array_equal(g, w)
            continue
        finite = np.isfinite(w) & np.isfinite(g)
        assert rel_err(g[finite], w[finite]) < 1e-2


# ----- operand types torch promotes (found by benchmarks/conformance.py) --------------


class PromotedOperands(torch.nn.Module):
    def forward(self, i: torch.Tensor, j: torch.Tensor, b: torch.Tensor, c: torch.Tensor):
        corner = i[0, 0]  # a rank-0 value: torch reduces its dim 0 / -1 to itself
        v, m = j[0].float(), j.float()
        return (
            torch.exp(i), torch.cos(j), i / j,  # float results of int operands
            b + c, b * c, torch.maximum(b, c), b / c,  # bool: or, and, or; float division
            corner.sum(0), corner.sum(-1, keepdim=True), (corner > 0).sum(0),
            v @ v, m @ v, v @ m.t(), i @ i[0],  # 1-D matmul operands
            b.amax(1), b.sum(1), corner.t(), v.t(),  # bool reductions; t() below rank 2
            torch.ops.aten._safe_softmax(m.masked_fill(c[:, :1], -torch.inf), 1),  # row 0
            torch.logical_not(i), ~b, torch.isnan(torch.log(m - 3)),  # equal / not_equal
        )  # fmt: skip


def test_operands_take_the_result_type(tmp_path: Path) -> None:
    """Core ML's arithmetic takes fp16 / fp32 / int32 of one type: int operands of a
    float result are cast (as torch promotes), bool add / mul / maximum are logical
    or / and / or, a reduction of a rank-0 value over its dim 0 is the value, a 1-D
    matmul operand is a matrix with the dim dropped after, amax of bools reduces int32,
    and _safe_softmax gives 0 (not NaN) for an all -inf row."""
    g = torch.Generator().manual_seed(3)
    i = torch.randint(-5, 6, (2, 3), generator=g)
    j = torch.randint(1, 6, (2, 3), generator=g, dtype=torch.int32)
    b, c = torch.rand(2, 3, generator=g) > 0.5, torch.rand(2, 3, generator=g) > 0.5
    ep = torch.export.export(PromotedOperands(), (i, j, b, c))
    path = tmp_path / "promoted.mlpackage"
    qopt.compile(ep, target="coreml", compute_precision="fp32").save(path)
    got = qopt.interpret(qopt.read_mlpackage(path), i, j, b, c)
    for g_, w in zip(got, PromotedOperands()(i, j, b, c), strict=True):
        w = w.numpy()  # Core ML returns int64 as int32 and bool as fp32
        want = w.astype({"b": np.float32, "i": np.int32}.get(w.dtype.kind, w.dtype))
        assert g_.dtype == want.dtype
        assert g_.shape == want.shape
        np.testing.assert_allclose(g_, want, rtol=1e-6)


class ScaleBy(torch.nn.Module):
    def forward(self, x: torch.Tensor, s: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return x * s, s + 1, s


def test_rank0_inputs_are_one_element_program_inputs(tmp_path: Path) -> None:
    """Core ML program inputs have rank 1 to 5: a rank-0 input is a `[1]` input of the
    package, reshaped inside; the package read back takes (and returns) rank-0 arrays
    again, so `qopt.load` runs it on the exported program's inputs; a rank-0 output,
    and a rank-0 input returned as it is, stay rank 0."""
    x, s = torch.randn(3, generator=torch.Generator().manual_seed(0)), torch.tensor(2.5)
    ep = torch.export.export(ScaleBy(), (x, s))
    path = tmp_path / "scalar.mlpackage"
    qopt.compile(ep, target="coreml", compute_precision="fp32").save(path)
    import coremltools as ct

    spec = ct.utils.load_spec(str(path))
    assert [list(i.type.multiArrayType.shape) for i in spec.description.input] == [[3], [1]]
    module = qopt.read_mlpackage(path)
    assert "(%x: tensor<3xf32>, %s: tensor<f32>)" in str(module)
    got = qopt.load(path)(x, s)
    want = ScaleBy()(x, s)
    assert [g.shape for g in got] == [(3,), (), ()]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w.numpy())


def test_reader_refuses_bad_scalar_input_metadata(tmp_path: Path) -> None:
    """`qopt.scalar_inputs` is checked like any package content: JSON, lists of names,
    inputs the function has, of shape [1]."""
    import shutil

    from coremltools.proto import Model_pb2

    from qopt.backends.coreml.reader import SCALAR_INPUTS_METADATA

    x, s = torch.randn(3), torch.tensor(2.5)
    path = tmp_path / "scalar.mlpackage"
    qopt.compile(
        torch.export.export(ScaleBy(), (x, s)), target="coreml", compute_precision="fp32"
    ).save(path)
    spec_rel = Path("Data", "com.apple.CoreML", "model.mlmodel")
    for i, (bad, message) in enumerate(
        (
            ("[1]", "is not a JSON object"),
            ('{"forward": "s"}', "does not map to a list of names"),
            ('{"forward": ["nope"]}', "names inputs main does not have"),
            ('{"forward": ["x"]}', "but has shape"),
        )
    ):
        copy = tmp_path / f"bad{i}.mlpackage"
        shutil.copytree(path, copy)
        spec = Model_pb2.Model()
        spec.ParseFromString((copy / spec_rel).read_bytes())
        spec.description.metadata.userDefined[SCALAR_INPUTS_METADATA] = bad
        (copy / spec_rel).write_bytes(spec.SerializeToString())
        with pytest.raises(qopt.QoptError, match=message):
            qopt.read_mlpackage(copy)


def test_empty_inputs_are_clear_errors() -> None:
    ep = torch.export.export(torch.nn.ReLU(), (torch.ones(2, 0),))
    with pytest.raises(qopt.QoptError, match=r"input 0 of @forward has the zero-size shape"):
        qopt.compile(ep, target="coreml")


def test_integer_pow_with_a_run_time_exponent_is_a_clear_error() -> None:
    x = torch.arange(1, 7, dtype=torch.int32).reshape(2, 3)
    ep = torch.export.export(PowModule(), (x, x - 3))
    with pytest.raises(qopt.QoptError, match=r"integer pow with a run-time or negative exponent"):
        qopt.compile(ep, target="coreml")


class PowModule(torch.nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.pow(x, y)


class IntMaxPool(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.max_pool2d(x, 2)


@pytest.mark.parametrize(
    ("model", "inputs", "message"),
    [
        (IntMaxPool(), (torch.arange(32, dtype=torch.int32).reshape(1, 2, 4, 4),),
         r"pooling of int32 tensors has no CoreML lowering"),
    ],
    ids=["int_max_pool"],
)  # fmt: skip
def test_forms_coremltools_refuses_are_clear_errors(model, inputs, message) -> None:
    """coremltools raised ValueError / MIL verification failed (benchmarks/conformance.py)."""
    with pytest.raises(qopt.QoptError, match=message):
        qopt.compile(torch.export.export(model, inputs), target="coreml")
