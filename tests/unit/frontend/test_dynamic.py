"""Run-time scalars and bounded dynamic lengths: `.item()` and the SymInt arithmetic,
comparisons and assertions torch records around it, `narrow` at a run-time start
(read, and written in place through), and programs exported with a bounded
`torch.export.Dim` on the sequence (ExecuTorch's dynamic-shape prefill).

Every check runs torch eager on its own copy of the model and compares tokens
exactly (logits within float tolerance, other results bit for bit).
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from torch import nn
from xdsl.dialects.func import FuncOp

import qopt
from qopt.context import parse_module, print_module
from qopt.dialects.aten.base import DYNAMIC
from qopt.dialects.aten.bounds import upper_bounds
from qopt.dialects.signature import argument_dims, symbol_ranges
from qopt.dialects.tensors import shape_of
from qopt.examples import apply_scheme, build_kv_llama

CONFIG = {"vocab_size": 64, "dim": 32, "n_layers": 2, "n_heads": 4, "hidden_dim": 64,
          "max_seq_len": 40}  # fmt: skip


def _export(
    model: nn.Module, *inputs: torch.Tensor, dynamic_shapes: object = None
) -> torch.export.ExportedProgram:
    with torch.no_grad():
        return torch.export.export(
            copy.deepcopy(model), inputs, dynamic_shapes=dynamic_shapes, strict=False
        )


def _seq_dim() -> tuple[dict[int, object], dict[int, object]]:
    """Dim("seq", 1..31) on the tokens' dim 1 and the positions' dim 0."""
    seq = torch.export.Dim("seq", min=1, max=31)
    return {1: seq}, {0: seq}


def _function(module, name: str = "forward") -> FuncOp:
    return next(op for op in module.ops if isinstance(op, FuncOp) and op.sym_name.data == name)


# ----- .item() and SymInt arithmetic ---------------------------------------------


class _Scalars(nn.Module):
    """`.item()` values checked with `torch._check`, used as narrow starts (read and
    written through), as a select index written in place, in `//`, `%`, `*`, `-`,
    `sym_max` / `sym_min`, and as a scalar operand of tensor ops."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("buf", torch.zeros(6, 3))

    def forward(self, x: torch.Tensor, pos: torch.Tensor):
        n = pos[0].item()
        torch._check(n >= 0)
        torch._check(n < 4)
        m = pos[1].item()
        torch._check(m >= 0)
        torch._check(m < 6)
        self.buf.narrow(0, n, 2).copy_(x[:2])
        self.buf.select(0, m).add_(1.0)
        q = torch.sym_max(n // 2, m % 3)
        row = self.buf.narrow(0, q, 2)
        return row * (n * 3 - m) + self.buf.sum(), torch.sym_min(n, m) + x[0]


def test_item_arithmetic_and_writes_match_torch() -> None:
    model = _Scalars()
    x = torch.arange(9.0).view(3, 3)
    module = qopt.import_program(_export(model, x, torch.tensor([2, 5])))
    text = print_module(module)
    for op in ("aten.item", "aten.assert_scalar", "aten.dynamic_slice",
               "aten.dynamic_update_slice", "aten.maximum", "aten.minimum", "aten.remainder",
               'rounding_mode = "floor"', "range = array<i64: 0, 3>"):  # fmt: skip
        assert op in text, op
    session, eager = qopt.session(module), copy.deepcopy(model)
    for pos in ([2, 5], [0, 0], [3, 1], [1, 4], [3, 5]):
        want = eager(x, torch.tensor(pos))
        got = session.run(x.numpy(), np.array(pos))
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(g, w.numpy())
        np.testing.assert_array_equal(session.read_state("buf"), eager.buf.numpy())


def test_functional_form_of_run_time_writes_matches_torch() -> None:
    """After `run_decompositions`, torch writes through the narrow and select at a
    SymInt with `slice_scatter` / `select_scatter`: the same dynamic updates."""
    model = _Scalars()
    x = torch.arange(9.0).view(3, 3)
    ep = _export(model, x, torch.tensor([2, 5])).run_decompositions({})
    module = qopt.import_program(ep)
    assert print_module(module).count("aten.dynamic_update_slice") == 2
    session, eager = qopt.session(module), copy.deepcopy(model)
    for pos in ([2, 5], [0, 0], [3, 1]):
        want = eager(x, torch.tensor(pos))
        got = session.run(x.numpy(), np.array(pos))
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(g, w.numpy())


def test_item_outside_its_asserted_range_is_an_error() -> None:
    """torch raises for `n = 4` (`torch._check(n < 4)`); so does qopt, at run time."""
    model = _Scalars()
    x = torch.arange(9.0).view(3, 3)
    module = qopt.import_program(_export(model, x, torch.tensor([2, 5])))
    with pytest.raises(RuntimeError):
        copy.deepcopy(model)(x, torch.tensor([4, 0]))
    with pytest.raises(qopt.QoptError, match=r"'aten.item' at .*: the value is 4, outside the "
                       r"range \[0, 3\]"):  # fmt: skip
        qopt.interpret(module, x.numpy(), np.array([4, 0]))


_WINDOWS = """
func.func @forward(%x: tensor<8x3xf32>, %s: tensor<i64>, %n: tensor<i64>, %u: tensor<2x3xf32>)
    -> (tensor<2x3xf32>, tensor<?x3xf32>, tensor<8x3xf32>) {
  %a = aten.dynamic_slice %x, %s {dim = 0 : i64} : (tensor<8x3xf32>, tensor<i64>) -> tensor<2x3xf32>
  %b = aten.dynamic_slice %x, %s, %n {dim = 0 : i64} : (tensor<8x3xf32>, tensor<i64>, tensor<i64>) -> tensor<?x3xf32>
  %c = aten.dynamic_update_slice %x, %u, %s {dim = 0 : i64} : (tensor<8x3xf32>, tensor<2x3xf32>, tensor<i64>) -> tensor<8x3xf32>
  func.return %a, %b, %c : tensor<2x3xf32>, tensor<?x3xf32>, tensor<8x3xf32>
}
"""


@pytest.mark.parametrize(
    ("start", "length"), [(0, 0), (0, 3), (3, 5), (6, 2), (7, 1), (-3, 1), (-8, 8)]
)
def test_dynamic_slices_equal_torch_narrow(start: int, length: int) -> None:
    """`dynamic_slice` is `narrow(0, start, length)`; `dynamic_update_slice` is
    `narrow(0, start, 2).copy_(u)` on a clone, bit for bit (a negative start counts
    from the end, as narrow's does)."""
    module = parse_module(_WINDOWS)
    x = torch.randn(8, 3, generator=torch.Generator().manual_seed(start))
    u = torch.randn(2, 3)
    inputs = (x.numpy(), np.array(start), np.array(length), u.numpy())
    if start % 8 + 2 > 8:
        with pytest.raises(RuntimeError):
            x.narrow(0, start, 2)
        with pytest.raises(qopt.QoptError, match=r"window \[7, 9\) is out of range for dim 0"):
            qopt.interpret(module, *inputs)
        return
    a, b, c = qopt.interpret(module, *inputs)
    np.testing.assert_array_equal(a, x.narrow(0, start, 2).numpy())
    np.testing.assert_array_equal(b, x.narrow(0, start, length).numpy())
    want = x.clone()
    want.narrow(0, start, 2).copy_(u)
    np.testing.assert_array_equal(c, want.numpy())


@pytest.mark.parametrize(("start", "length"), [(-1, 2), (5, 4), (0, 9), (2, -1), (-9, 1)])
def test_dynamic_slice_out_of_range_is_an_error_as_in_torch(start: int, length: int) -> None:
    """No clamping (StableHLO clamps; torch's narrow raises): a window outside the dim
    is a QoptError naming the op."""
    module = parse_module(_WINDOWS)
    x = torch.zeros(8, 3)
    with pytest.raises((RuntimeError, IndexError)):
        x.narrow(0, start, length)
    inputs = (x.numpy(), np.array(start), np.array(length), np.zeros((2, 3), np.float32))
    with pytest.raises(qopt.QoptError, match=r"'aten.dynamic_slice'.* is out of range for dim 0"):
        qopt.interpret(module, *inputs)


# ----- the ExecuTorch-style decoder at a run-time start -------------------------


def _greedy(step, prompt: list[int], n_new: int) -> list[int]:
    """Greedy tokens: `step(tokens, positions) -> logits` called with the whole prompt,
    then one token per call, until `n_new` tokens."""
    logits = step(np.array([prompt]), np.arange(len(prompt)))
    out = [int(logits[0, -1].argmax())]
    while len(out) < n_new:
        pos = len(prompt) + len(out) - 1
        out.append(int(step(np.array([[out[-1]]]), np.array([pos]))[0, -1].argmax()))
    return out


def _torch_step(model: nn.Module):
    eager = copy.deepcopy(model)

    def step(tokens: np.ndarray, positions: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return eager(torch.from_numpy(tokens), torch.from_numpy(positions)).numpy()

    return step


@pytest.mark.parametrize("scheme", ["float", "w4g32"])
def test_narrow_decode_matches_torch(scheme: str) -> None:
    """32 greedy tokens of the decoder that reads its start with `.item()` and writes
    the caches with `cache.narrow(2, start, 1).copy_(k)` (ExecuTorch's dynamic-shape
    KV cache), imported as exported and after fuse-quant, equal torch eager's."""
    example = (torch.tensor([[1]]), torch.tensor([0]))
    model = apply_scheme(build_kv_llama(update="narrow", **CONFIG), scheme, example)
    module = qopt.import_program(_export(model, *example))
    text = print_module(module)
    assert text.count("aten.dynamic_update_slice") == 4
    assert "aten.item" in text
    assert "range = array<i64: 0, 39>" in text
    want = _greedy(_torch_step(model), [3], 32)
    for fused in (False, True):
        if fused:
            qopt.fuse(module)
        session = qopt.session(module)
        assert _greedy(lambda t, p: session.run(t, p)[0], [3], 32) == want, fused
    # A start beyond the cache is torch's error and qopt's.
    with pytest.raises(qopt.QoptError, match="outside the range"):
        qopt.session(module).run(np.array([[3]]), np.array([40]))


# ----- bounded dynamic length (T4) ---------------------------------------------------


@pytest.mark.parametrize(
    ("update", "scheme"),
    [("index_copy", "float"), ("index_put", "float"), ("narrow", "float"), ("narrow", "w4g32")],
)
def test_dynamic_prefill_then_decode_matches_torch(update: str, scheme: str) -> None:
    """A prefill exported with `Dim("seq", 1..31)` on the token and position dims and
    a decode (S = 1), imported as one module: prompts of 1, 5, 17 and 31 (the Dim's
    max) tokens each go through one prefill call, then decode to 32 tokens; torch
    eager's tokens. `index_put`: ExecuTorch's `k_cache[:, :, input_pos] = k`, whose
    run-time index length the interpreter once took from the `?` type (a numpy
    ValueError at every length)."""
    example = (torch.tensor([[5, 9, 2, 33, 7]]), torch.arange(5))
    model = apply_scheme(build_kv_llama(update=update, **CONFIG), scheme, example)
    prefill = _export(model, *example, dynamic_shapes=_seq_dim())
    decode = _export(model, torch.tensor([[1]]), torch.tensor([0]))
    module = qopt.fuse(qopt.import_program({"prefill": prefill, "decode": decode}))
    func = _function(module, "prefill")
    assert [shape_of(t) for t in func.function_type.inputs.data] == [(1, DYNAMIC), (DYNAMIC,)]
    (symbol,) = symbol_ranges(func)
    assert symbol_ranges(func) == {symbol: (1, 31)}
    assert argument_dims(func) == [["", symbol], [symbol]]
    assert shape_of(func.function_type.outputs.data[0]) == (1, DYNAMIC, 64)
    assert not symbol_ranges(_function(module, "decode"))

    session = qopt.session(module)
    for length in (1, 5, 17, 31):
        prompt = [int(t) for t in torch.randint(0, 64, (length,), generator=torch.Generator().manual_seed(length))]  # fmt: skip
        want = _greedy(_torch_step(model), prompt, 32 - length)
        session.reset()

        def step(tokens: np.ndarray, positions: np.ndarray) -> np.ndarray:
            method = "prefill" if tokens.shape[1] > 1 or positions[0] == 0 else "decode"
            return session.run(tokens, positions, method=method)[0]

        assert _greedy(step, prompt, 32 - length) == want, length
        session.reset()
        assert qopt.generate(session, prompt, 32 - length) == want


def test_dynamic_inputs_are_checked_against_their_dim() -> None:
    """A prompt longer than the Dim's max, or tokens and positions of different
    lengths (one symbol), are QoptErrors naming the dim and its range."""
    example = (torch.tensor([[5, 9, 2]]), torch.arange(3))
    model = build_kv_llama(update="index_copy", **CONFIG)
    module = qopt.import_program(_export(model, *example, dynamic_shapes=_seq_dim()))
    session = qopt.session(module)
    with pytest.raises(qopt.QoptError, match=r"input 0 of @forward has size 32 in dim 1, "
                       r"outside the range \[1, 31\] of its dynamic dim s\d+"):  # fmt: skip
        session.run(np.zeros((1, 32), np.int64), np.arange(32))
    with pytest.raises(qopt.QoptError, match=r"input 1 of @forward has size 4 in dim 0, but "
                       r"input 0 has 5 in dim 1: both are the dynamic dim"):  # fmt: skip
        session.run(np.zeros((1, 5), np.int64), np.arange(4))
    with pytest.raises(qopt.QoptError, match=r"input 0 of @forward has shape \[5\], "
                       r"expected \[1, \?\]"):  # fmt: skip
        session.run(np.zeros(5, np.int64), np.arange(5))


def test_upper_bounds_allocate_for_the_dims_max() -> None:
    """`upper_bounds` gives every value of a dynamic function its largest shape: what
    a target allocates (the symbols at their max, windows at most their input)."""
    example = (torch.tensor([[5, 9, 2]]), torch.arange(3))
    model = build_kv_llama(update="narrow", **CONFIG)
    module = qopt.import_program(_export(model, *example, dynamic_shapes=_seq_dim()))
    func = _function(module)
    bounds = upper_bounds(func)
    assert all(DYNAMIC not in shape for shape in bounds.values())
    assert bounds[func.args[0]] == (1, 31)
    (result,) = func.get_return_op().operands  # pyright: ignore[reportOptionalMemberAccess]
    assert bounds[result] == (1, 31, 64)
    windows = [op for op in func.body.walk() if op.name == "aten.dynamic_slice"]
    assert {bounds[op.results[0]] for op in windows} >= {(31, 40), (1, 2, 31, 8)}


class _Linear(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.fc(x))[:, -1]


def test_dynamic_forms_qopt_does_not_import_say_what_to_export() -> None:
    """An unbounded Dim, and an input dim that is an expression of a Dim, are refused
    before any op is listed, naming the export to use instead."""
    x = torch.randn(1, 6, 8)
    unbounded = _export(_Linear(), x, dynamic_shapes=({1: torch.export.Dim("n", min=1)},))
    with pytest.raises(qopt.QoptError, match=r"dim 1 of input x \(s\d+\) has no upper bound"):
        qopt.import_program(unbounded)
    half = torch.export.Dim("half", min=1, max=8)
    derived = _export(_Linear(), x, dynamic_shapes=({1: 2 * half},))
    with pytest.raises(
        qopt.QoptError, match=r"dim 1 of input x is 2\*s\d+: .* one method per size"
    ):
        qopt.import_program(derived)
    # A bounded Dim on a stateless model imports; its last-position select works.
    ep = _export(_Linear(), x, dynamic_shapes=({1: torch.export.Dim("n", min=1, max=16)},))
    module = qopt.import_program(ep)
    for n in (1, 6, 16):
        xs = torch.randn(1, n, 8)
        (got,) = qopt.interpret(module, xs.numpy())
        np.testing.assert_allclose(got, ep.module()(xs).detach().numpy(), atol=1e-6)


class _Creates(nn.Module):
    """Tensors created at a dynamic size (ExecuTorch's `arange(seq_len) + start`
    positions, a causal mask, `zeros_like`), and the SymInt arithmetic on the size."""

    def forward(self, x: torch.Tensor, pos: torch.Tensor):
        n = x.shape[1]
        start = pos[0].item()
        torch._check(start >= 0)
        torch._check(start < 32)
        mask = torch.full((n, n), float("-inf")).triu(1)
        return torch.arange(n) + start, mask, torch.zeros_like(x) + x, torch.arange(2, n + 2)


def test_tensors_created_at_a_dynamic_size_match_torch() -> None:
    """Created at the Dim's max (`aten.full`, `aten.arange` of 31 entries) and cut to
    the run-time size with `aten.dynamic_slice`: equal to torch for every size."""
    seq = torch.export.Dim("seq", min=1, max=31)
    ep = _export(_Creates(), torch.randn(1, 5, 4), torch.tensor([3]),
                 dynamic_shapes=({1: seq}, None))  # fmt: skip
    module = qopt.import_program(ep)
    text = print_module(module)
    assert "aten.full {value = 0xfff0000000000000 : f64} : tensor<31x31xf32>" in text
    assert "aten.arange {start = 0 : i64, end = 31 : i64, step = 1 : i64} : tensor<31xi64>" in text
    for n in (1, 5, 31):
        x, pos = torch.randn(1, n, 4), torch.tensor([n % 7])
        got = qopt.interpret(module, x.numpy(), pos.numpy())
        for g, w in zip(got, _Creates()(x, pos), strict=True):
            np.testing.assert_array_equal(g, w.numpy())


class _Slices(nn.Module):
    def forward(self, x: torch.Tensor):
        return x[:, 1:] * 2, x[:, :-1], x[:, -3:], x[:, 0:2], x[:, 2:] + 1


def test_slices_of_a_dynamic_dim_match_torch() -> None:
    """Slices of a `?` dim, bounds from the end included, are windows of the run-time
    size (`aten.sym_size` and `aten.dynamic_slice`): equal to torch for every size."""
    seq = torch.export.Dim("seq", min=4, max=31)
    module = qopt.import_program(
        _export(_Slices(), torch.randn(1, 5, 4), dynamic_shapes=({1: seq},))
    )
    assert print_module(module).count("aten.dynamic_slice") == 5
    for n in (4, 9, 31):
        x = torch.randn(1, n, 4)
        for got, want in zip(qopt.interpret(module, x.numpy()), _Slices()(x), strict=True):
            np.testing.assert_array_equal(got, want.numpy())


class _TwoDynamicDims(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.reshape(x.shape[0], x.shape[1] * 2, 2)


def test_views_to_several_dynamic_dims_are_refused() -> None:
    a, b = torch.export.Dim("a", min=2, max=8), torch.export.Dim("b", min=2, max=8)
    ep = _export(_TwoDynamicDims(), torch.randn(3, 5, 4), dynamic_shapes=({0: a, 1: b},))
    with pytest.raises(qopt.QoptError, match=r"'aten.reshape.default' .* several dynamic dims"):
        qopt.import_program(ep)


def test_targets_run_item_and_narrow() -> None:
    """`.item()` + `narrow` at the run-time start on both targets (expand_dynamic_windows):
    torch's result at every valid start; on Vulkan a start torch's checks refuse is
    an error naming the check (Core ML has no run-time error to raise)."""

    class ItemNarrow(nn.Module):
        def forward(self, x: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
            n = pos[0].item()
            torch._check(n >= 0)
            torch._check(n <= 6)
            return x.narrow(0, n, 2) * 2

    model = ItemNarrow()
    x = torch.randn(8, 4)
    ep = _export(model, x, torch.tensor([3]))
    for target in ("coreml", "vulkan"):
        if target == "vulkan":
            from qopt.backends.vulkan.runtime import vulkan_available

            if (reason := vulkan_available()) is not None:
                print(f"Vulkan part skipped: {reason}")
                continue
        exact = {"compute_precision": "fp32"} if target == "coreml" else {}
        artifact = qopt.compile(ep, target=target, **exact)
        for start in (0, 3, 6):
            (got,) = artifact(x.numpy(), np.array([start]))
            np.testing.assert_array_equal(got, model(x, torch.tensor([start])).numpy())
        if target == "vulkan":
            with pytest.raises(qopt.QoptError, match=r"\('u\d+ <= 6'\): a run-time check"):
                artifact(x.numpy(), np.array([7]))


def test_index_put_takes_its_shapes_at_run_time() -> None:
    """`aten.index_put` with `?` index and values dims (ExecuTorch's
    `k_cache[:, :, input_pos] = k` under a Dim): the interpreter takes the indexing
    result's shape from the run-time index, as torch does (it took the `?` from the
    type: numpy's ValueError at every length); values that do not broadcast to it are
    a QoptError, as torch raises."""
    module = parse_module(
        """
func.func @forward(%x: tensor<6x4xf32>, %i: tensor<?xi64> {qopt.dims = ["s0"]},
                   %v: tensor<?x4xf32> {qopt.dims = ["s1"]}) -> tensor<6x4xf32>
    attributes {qopt.symbols = {s0 = array<i64: 1, 6>, s1 = array<i64: 1, 6>}} {
  %r = aten.index_put %x, %i, %v {indexed_dims = array<i64: 0>} : (tensor<6x4xf32>, tensor<?xi64>, tensor<?x4xf32>) -> tensor<6x4xf32>
  func.return %r : tensor<6x4xf32>
}
"""
    )
    x = np.zeros((6, 4), np.float32)
    for n, k in ((3, 3), (1, 1), (3, 1), (6, 6)):
        index = np.array([5, 0, 2, 1, 3, 4][:n])
        values = np.arange(k * 4, dtype=np.float32).reshape(k, 4)
        want = torch.zeros(6, 4)
        want[torch.from_numpy(index)] = torch.from_numpy(values)
        (got,) = qopt.interpret(module, x, index, values)
        np.testing.assert_array_equal(got, want.numpy())
    with pytest.raises(qopt.QoptError, match=r"values of shape \[3, 4\] do not broadcast"):
        qopt.interpret(module, x, np.array([5, 0]), np.zeros((3, 4), np.float32))
