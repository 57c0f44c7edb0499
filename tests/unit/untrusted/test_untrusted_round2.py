"""Untrusted inputs, second round (issue 27): one regression test per class of the
surfaces added since the first round (run-time `?` sizes, `Dim` ranges, `.qvk` v4 host
segments, size variants and generation, `--limits`, `--report-json`, the Python API).
The fuzz suite's "round2" mutants (fuzz_worker.mutate_round2) cover the same classes
at random; these pin each class's mechanism on its reported example."""

from __future__ import annotations

import copy
import json
import threading
import tracemalloc
import warnings
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from xdsl.utils.exceptions import VerifyException

import qopt
from qopt.errors import QoptError, one_line, quoted
from qopt.limits import Limits

ARANGE = """func.func @forward() -> tensor<?xi64> {{
  %a = aten.arange {{start = 0 : i64, end = {end} : i64, step = 1 : i64}} : tensor<?xi64>
  func.return %a : tensor<?xi64>
}}
"""

REPEAT = """func.func @forward(%x: tensor<2x3xf32>) -> tensor<?x?xf32> {{
  %r = aten.repeat %x {{repeats = array<i64: {a}, {b}>}} : (tensor<2x3xf32>) -> tensor<?x?xf32>
  func.return %r : tensor<?x?xf32>
}}
"""


def _module(text: str) -> Any:
    from qopt.context import parse_module

    return parse_module(text)


def _tool(main: Any, argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """(exit status, stderr) of a tool's main(argv)."""
    code: Any = 0
    try:
        main(argv)
    except SystemExit as e:
        code = e.code or 0
    return int(code), capsys.readouterr().err


# ----- 1. run-time (?) sizes: a bound before the allocation -------------------------------------


def test_runtime_size_is_bounded_before_it_is_allocated() -> None:
    """A 192-byte `.mlir` whose arange has a `?` result grew to 23 GB: the interpreter
    now derives the size from the op's rule before it runs and checks the limits."""
    tracemalloc.start()
    try:
        with pytest.raises(QoptError, match=r"^'aten.arange': the element count of its result 0 "
                           r"\(a size decided at run time\) is 4000000000, over qopt's limit "
                           r"max_tensor_elements="):  # fmt: skip
            qopt.interpret(_module(ARANGE.format(end=4_000_000_000)))
        assert tracemalloc.get_traced_memory()[1] < 64 << 20  # refused before allocating
    finally:
        tracemalloc.stop()
    x = np.ones((2, 3), np.float32)
    with Limits(max_tensor_elements=100).applied():
        with pytest.raises(QoptError, match=r"'aten.repeat': .* is 120, over .*=100"):
            qopt.interpret(_module(REPEAT.format(a=5, b=4)), x)
        (out,) = qopt.interpret(_module(REPEAT.format(a=2, b=2)), x)
    assert out.shape == (4, 6)
    # a dim past the limit counts even in an empty result
    with pytest.raises(QoptError, match="is 2199023255552, over"):
        qopt.interpret(_module(REPEAT.format(a=1 << 40, b=0)), x)
    # np.tile would build the other dims' copies before a zero one empties the result
    tracemalloc.start()
    try:
        with Limits(max_tensor_elements=1 << 45).applied():
            (empty,) = qopt.interpret(_module(REPEAT.format(a=1 << 40, b=0)), x)
        assert tracemalloc.get_traced_memory()[1] < 64 << 20
    finally:
        tracemalloc.stop()
    assert empty.shape == (2 << 40, 0)
    with pytest.raises(VerifyException, match="nothing decides"):  # a full of a `?` dim
        _module("""func.func @f() -> tensor<?xf32> {
          %r = aten.full {value = 1.0 : f64} : tensor<?xf32>
          func.return %r : tensor<?xf32>
        }""").verify()


def test_runtime_size_in_the_tools_and_constant_folding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from qopt.tools import qopt_opt, qopt_run

    path = tmp_path / "a.mlir"
    path.write_text(ARANGE.format(end=4_000_000_000))
    empty = tmp_path / "none.npz"
    np.savez(empty)
    code, err = _tool(qopt_run.main, [str(path), "--inputs", str(empty)], capsys)
    assert code == 1
    assert err.startswith("qopt-run: error: 'aten.arange': the element count of its result 0")
    # fold-constants leaves a result past its size alone (never evaluates it)
    out = tmp_path / "o.mlir"
    code, err = _tool(qopt_opt.main, [str(path), "-p", "fold-constants", "-o", str(out)], capsys)
    assert code == 0, err
    assert "aten.arange" in out.read_text()
    small = tmp_path / "s.mlir"
    small.write_text(ARANGE.format(end=400))
    code, err = _tool(qopt_run.main, [str(small), "--inputs", str(empty), "--limits",
                                      "max_tensor_elements=100"], capsys)  # fmt: skip
    assert code == 1
    assert "is 400, over qopt's limit max_tensor_elements=100" in err


def test_host_segment_runtime_size_is_bounded() -> None:
    """A host segment's `?` value is bounded by its op's rule over the (static)
    arguments before the bundle is accepted; no rule: refused."""
    from qopt.backends.vulkan.host import parse_segment

    ir = """func.func @host_segment(%a: tensor<2x4xf32>) -> tensor<2x4xf32> {{
      %r = aten.repeat %a {{repeats = array<i64: {a}, 4>}} : (tensor<2x4xf32>) -> tensor<?x?xf32>
      func.return %a : tensor<2x4xf32>
    }}"""
    parse_segment(ir.format(a=3), "segment", Limits())
    with pytest.raises(QoptError, match=r"^segment: its values need up to \d+ bytes on the host"):
        parse_segment(ir.format(a=1 << 20), "segment", Limits(), max_bytes=1 << 20)
    with pytest.raises(QoptError, match="segment: a tensor's elements is 274877906944, over"):
        parse_segment(ir.format(a=1 << 33), "segment", Limits())


# ----- 2. Dim ranges: bounded like shapes, never materialised at the bound -----------------------


class _CreatesAtRunTime(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[0]
        return x + torch.arange(n).float()[:, None] + torch.zeros(n, 8)


@pytest.fixture(scope="module")
def dynz(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ep = torch.export.export(_CreatesAtRunTime(), (torch.randn(4, 8),),
                             dynamic_shapes=({0: torch.export.Dim("b", min=1, max=64)},))  # fmt: skip
    path = tmp_path_factory.mktemp("dynz") / "dynz.pt2"
    torch.export.save(ep, str(path))
    return path


def _with_range(source: Path, target: Path, low: int | None, high: int | None) -> Path:
    with zipfile.ZipFile(source) as z:
        members = [(info, z.read(info)) for info in z.infolist()]
    with zipfile.ZipFile(target, "w") as out:
        for info, data in members:
            if info.filename.endswith("models/model.json"):
                program = json.loads(data)
                for bounds in program["range_constraints"].values():
                    bounds.update(min_val=low, max_val=high)
                data = json.dumps(program).encode()
            out.writestr(info, data)
    return target


def test_dim_range_is_bounded_like_a_shape(dynz: Path, tmp_path: Path) -> None:
    x = np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32)
    huge = _with_range(dynz, tmp_path / "huge.pt2", 1, 1 << 40)
    with pytest.raises(QoptError, match=r"the largest size of s\d+ \(a Dim's max_val\) is "
                       "1099511627776, over qopt's limit max_tensor_elements"):  # fmt: skip
        qopt.import_program(huge)
    empty = _with_range(dynz, tmp_path / "empty.pt2", 9, 3)
    with pytest.raises(QoptError, match="is empty"):
        qopt.import_program(empty)
    # 2**29: zeros(n, 8) at the bound is 2**32 elements, over the default limit (it was
    # 4.3 GiB on a 4-row input); the error says what to do, in one line
    wide = _with_range(dynz, tmp_path / "wide.pt2", 1, 1 << 29)
    with pytest.raises(QoptError, match=r"at the bound of its dynamic dims \[536870912, 8\] would "
                       r"have 4294967296 elements.*dynamic_sizes"):  # fmt: skip
        qopt.import_program(wide)
    # with the limit raised it imports, and the interpreter runs it at the input's size:
    # the arange and zeros at the bound are never built (4 GiB and 16 GiB)
    module = qopt.import_program(wide, limits="max_tensor_elements=10000000000")
    tracemalloc.start()
    try:
        (out,) = qopt.interpret(module, x)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20, peak
    np.testing.assert_allclose(out, x + np.arange(4, dtype=np.float32)[:, None], rtol=1e-6)
    # a size variant asks for its size only
    variants = qopt.import_program(wide, dynamic_sizes=[4])
    assert [f.sym_name.data for f in variants.ops] == ["forward__4"]  # pyright: ignore[reportAttributeAccessIssue]


# ----- 3. generation over file-supplied sizes: progress or an error -----------------------------


class _Session:
    def __init__(self, names: list[str]):
        self.function_names = names


def test_prefill_pieces_always_make_progress() -> None:
    from qopt.generation import _prefill_chunks  # pyright: ignore[reportPrivateUsage]

    for names in (["decode", "prefill__0"], ["decode", "prefill__0", "prefill__2"],
                  ["decode", "prefill__0", "prefill__0", "prefill__3"]):  # fmt: skip
        for length in (1, 2, 5, 7):
            chunks = _prefill_chunks(_Session(names), length, "decode")
            assert chunks[0][0] == 0
            assert chunks[-1][1] == length
            assert all(stop > start for start, stop, _ in chunks)


def test_generation_with_a_size_zero_prefill_stops(tmp_path: Path) -> None:
    """`prefill__0` (from a `.qvk`, `.mlir` or `.mlpackage`) made generation grow
    memory without end; now the prompt goes to a prefill whose sizes fit, or fails."""
    text = """func.func @decode(%t: tensor<1x1xi64>, %p: tensor<1xi64>) -> tensor<1x1x8xf32> {
      %l = aten.full {value = 1.0 : f64} : tensor<1x1x8xf32>
      func.return %l : tensor<1x1x8xf32>
    }
    func.func @prefill__0(%t: tensor<1x0xi64>, %p: tensor<0xi64>) -> tensor<1x0x8xf32> {
      %l = aten.full {value = 1.0 : f64} : tensor<1x0x8xf32>
      func.return %l : tensor<1x0x8xf32>
    }"""
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(qopt.generate(qopt.session(_module(text)), [1, 2, 3], 2))
        except QoptError as e:
            outcome.append(e)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(60)
    assert not thread.is_alive(), "generation did not stop"
    assert isinstance(outcome[0], QoptError)
    assert "compiled for the sizes 0" in str(outcome[0])


# ----- 4. a per-item limit bounds the sum (Limits.tally): see test_error_contract.py and
# tests/unit/backends/vulkan/test_vulkan_fallback.py::test_host_ops_are_bounded_in_total


# ----- 5. file strings in messages: quoted, one line, truncated ---------------------------------


def test_file_strings_are_quoted_and_truncated() -> None:
    assert quoted("a\x1b[2Jb\nc") == "'a\\x1b[2Jb\\nc'"
    long = quoted("x" * 5000)
    assert len(long) == 82
    assert long.endswith("...'")
    assert one_line("\u202eabc", 10) == "\\u202eabc"
    message = "\\1B[31m" + "A" * 3000 + "\\nfake: error: line"  # MLIR escapes: ESC, newline
    text = f"""func.func @forward(%c: tensor<i1>) {{
      aten.assert_scalar %c {{message = "{message}"}} : tensor<i1>
      func.return
    }}"""
    with pytest.raises(QoptError) as error:
        qopt.interpret(_module(text), np.array(False))
    shown = str(error.value)
    assert "\x1b" not in shown
    assert "\n" not in shown
    assert len(shown) < 300
    assert "assertion failed: '\\x1b[31mAAAA" in shown


# ----- 6. all outputs of a run or none ----------------------------------------------------------


def test_unwritable_report_leaves_no_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from qopt.tools import qopt_opt

    src = tmp_path / "a.mlir"
    src.write_text(ARANGE.format(end=4))
    out = tmp_path / "out.mlir"
    for report in (tmp_path / "missing" / "r.json", tmp_path):  # no directory; a directory
        argv = [str(src), "-o", str(out), "--report-json", str(report)]
        code, err = _tool(qopt_opt.main, argv, capsys)
        assert code == 1
        assert err.count("\n") == 1
        assert f"cannot write '{report}'" in err
        assert ".tmp" not in err
        assert not out.exists()
        assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]
    code, err = _tool(qopt_opt.main, [str(src), "-o", str(out), "--report-json",
                                      str(tmp_path / "r.json")], capsys)  # fmt: skip
    assert code == 0, err
    assert out.exists()
    assert json.loads((tmp_path / "r.json").read_text())


# ----- 8. a buffer written twice ----------------------------------------------------------------


class _Buffered(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("b", torch.zeros(3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.b.add_(x)  # pyright: ignore[reportCallIssue]
        return x * 2


def test_buffer_written_twice_is_an_error() -> None:
    ep = torch.export.export(_Buffered(), (torch.ones(3),)).run_decompositions()
    session = qopt.session(qopt.import_program(ep))
    session.run(np.ones(3, np.float32))
    np.testing.assert_array_equal(session.read_state("b"), np.ones(3))
    output = next(n for n in ep.graph.nodes if n.op == "output")
    items = list(output.args[0])
    output.args = ((items[0], *items),)
    specs = ep.graph_signature.output_specs
    specs.insert(0, copy.copy(specs[0]))
    with pytest.raises(QoptError, match="writes buffer 'b' twice"):
        qopt.import_program(ep)


# ----- 9. API arguments at the door -------------------------------------------------------------

MLP = """func.func @forward(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = aten.relu %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}"""


@pytest.mark.parametrize("bad", [{}, None, 3, "", ["b"], float("nan")])
def test_api_names_are_checked_at_the_door(bad: Any) -> None:
    session = qopt.session(_module(MLP))
    x = np.ones((2, 3), np.float32)
    with pytest.raises(QoptError, match="read_state's name must be a non-empty string"):
        session.read_state(bad)
    if bad is not None:
        with pytest.raises(QoptError, match="method must be a non-empty string"):
            session.run(x, method=bad)
    with pytest.raises(QoptError, match="interpret's function must be a non-empty string"):
        qopt.interpret(_module(MLP), x, function=bad)


@pytest.mark.parametrize(
    ("sizes", "message"),
    [([float("nan")], r"dynamic_sizes\[0\] must be an integer, got float"),
     ([None], r"dynamic_sizes\[0\] must be an integer, got NoneType"),
     ([2.7], r"dynamic_sizes\[0\] must be an integer, got float '2.7'"),
     ([True], r"dynamic_sizes\[0\] must be an integer, got bool"),
     ([-1], r"dynamic_sizes\[0\] must be at least 0"),
     (4, "must be a non-empty list of sizes"), ([], "must be a non-empty list"),
     ({"s0": [1.5]}, r"dynamic_sizes\['s0'\]\[0\] must be an integer"),
     ({1: [2]}, "a key of dynamic_sizes must be a non-empty string")],
)  # fmt: skip
def test_dynamic_sizes_are_checked_at_the_door(dynz: Path, sizes: Any, message: str) -> None:
    with pytest.raises(QoptError, match=message):
        qopt.import_program(dynz, dynamic_sizes=sizes)
    with pytest.raises(QoptError, match=message):
        qopt.compile(dynz, target="vulkan", dynamic_sizes=sizes)


def test_generate_arguments_are_checked() -> None:
    session = qopt.session(_module(MLP))
    with pytest.raises(QoptError, match=r"generate's prompt\[1\] must be an integer, got float"):
        qopt.generate(session, [1, 2.7], 2)
    with pytest.raises(QoptError, match="generate's max_new_tokens must be an integer"):
        qopt.generate(session, [1, 2], 2.5)
    with pytest.raises(QoptError, match="generate's prompt must be a sequence of token ids"):
        qopt.generate(session, "12", 2)


# ----- 10. input dtype: converted only when exact, and said -------------------------------------


def test_input_dtype_conversion_is_said(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from qopt.report import QoptWarning
    from qopt.tools import qopt_run

    module = _module(MLP)
    ints = np.arange(6).reshape(2, 3)
    with pytest.warns(QoptWarning, match="has dtype int64, the program takes float32: converted"):
        (out,) = qopt.interpret(module, ints)
    np.testing.assert_array_equal(out, ints.astype(np.float32))
    with pytest.raises(QoptError, match="integer values beyond 16777216"):
        qopt.interpret(module, ints << 40)
    src, npz = tmp_path / "m.mlir", tmp_path / "in.npz"
    src.write_text(MLP)
    np.savez(npz, ints)
    code, err = _tool(qopt_run.main, [str(src), "--inputs", str(npz)], capsys)
    assert code == 0
    assert err.startswith("qopt-run: warning: input 0 of @forward has dtype int64, the program "
                          "takes float32: converted")  # fmt: skip
    np.savez(npz, ints << 40)
    code, err = _tool(qopt_run.main, [str(src), "--inputs", str(npz)], capsys)
    assert code == 1
    assert "integer values beyond 16777216" in err
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        qopt.interpret(module, ints.astype(np.float32))  # no conversion, nothing said


# ----- 11. syntax errors of pipelines, specs and options: one line ------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [(["-p", "fold-constants{"], "bad pass pipeline or -f/-t spec 'fold-constants{' at column 16"),
     (["-f", "pt2{dynamic_sizes="], "bad pass pipeline or -f/-t spec 'pt2{dynamic_sizes=' at "
      "column 19"),
     (["-t", "mlir{"], "bad pass pipeline or -f/-t spec 'mlir{' at column 6: Expected argument"),
     (["--limits", "max_expansion=nan"], "argument --limits: bad limit 'max_expansion=nan'"),
     (["--bogus"], "unrecognized arguments: --bogus")],
)  # fmt: skip
def test_syntax_errors_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    from qopt.tools import qopt_opt, qopt_run

    src = tmp_path / "a.mlir"
    src.write_text(MLP)
    code, err = _tool(qopt_opt.main, [str(src), *argv], capsys)
    assert code == 1
    assert err.startswith(f"qopt-opt: error: {message}"), err
    assert err.count("\n") == 1
    if argv[0] in ("--limits", "--bogus"):
        code, err = _tool(qopt_run.main, [str(src), *argv], capsys)
        assert code == 1
        assert err.startswith(f"qopt-run: error: {message}"), err
        assert err.count("\n") == 1
