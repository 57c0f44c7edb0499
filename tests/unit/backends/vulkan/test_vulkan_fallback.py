"""The host fallback of the Vulkan target: ops without a kernel run on the host.

convert-to-vkc{fallback=true} (qopt.compile(..., fallback=True), qopt-opt
--host-fallback) puts the ops it has no rule for into `vkc.host_call` segments that
the vkc interpreter and the Vulkan runtime run with the reference semantics between
the device's work; without the option the error lists every such op and names the
option. A `.qvk` carries a segment as IR text that is parsed and checked, never
evaluated: a crafted segment is a QoptError. Device tests skip with the reason when
there is no Vulkan device.
"""

from __future__ import annotations

import functools
import json
import struct
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

import qopt
from qopt.context import make_context, parse_module
from qopt.dialects import vkc
from qopt.dialects.aten.indexing import GatherOp
from qopt.dialects.aten.reduction import ProdOp
from qopt.dialects.aten.shape import CumsumOp
from qopt.errors import QoptError
from qopt.lowering.convert_to_vkc import ConvertToVkcPass, get_rules

PROGRAM = """
func.func @forward(%x: tensor<2x4xf32>, %w: tensor<2x4xf32>, %n: tensor<4xi64>)
    -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x2xf32>, tensor<4xi64>) {
  %idx = arith.constant dense<[[3, 0], [1, 1]]> : tensor<2x2xi64>
  %a = aten.relu %x : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %c = aten.cumsum %a {dim = 1 : i64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %g = aten.gather %a, %idx {dim = 1 : i64} : (tensor<2x4xf32>, tensor<2x2xi64>) -> tensor<2x2xf32>
  %d = aten.mul %w, %w : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %p = aten.prod %c {dims = array<i64: 1>, keepdim = true} : (tensor<2x4xf32>) -> tensor<2x1xf32>
  %e = aten.add %d, %p : (tensor<2x4xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
  %s = aten.cumsum %n {dim = 0 : i64} : (tensor<4xi64>) -> tensor<4xi64>
  %t = aten.add %s, %n : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  func.return %e, %c, %g, %t : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x2xf32>, tensor<4xi64>
}
"""
"""Ops without a rule (cumsum on floats and on integers, gather with a constant
index, prod), mixed with lowered ops before, beside and after them. cumsum and gather
have Vulkan rules now: `without_their_rules` takes them out of the rule table for these
tests, so that they stand for ops without a kernel (prod has none)."""

STAND_INS = (CumsumOp, GatherOp)


@pytest.fixture(autouse=True)
def without_their_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    rules = get_rules()
    for op in STAND_INS:
        monkeypatch.delitem(rules, op, raising=False)
    # prod and diff have no kernel, but the lowerings compose them in ops that have
    # one (qopt/lowering/compose.py): without their compositions they stand for ops
    # without a kernel here
    from qopt.dialects.aten.shape import DiffOp
    from qopt.lowering.compose import COMPOSITIONS

    for table in COMPOSITIONS.values():
        for op in (ProdOp, DiffOp):
            monkeypatch.delitem(table, op, raising=False)


def inputs() -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 4)).astype(np.float32)
    w = rng.standard_normal((2, 4)).astype(np.float32)
    return [x, w, np.array([3, -7, 100000, 2], np.int64)]


@functools.cache
def lowered_text() -> str:
    from qopt.context import print_module

    module = parse_module(PROGRAM)
    ConvertToVkcPass(fallback=True).apply(make_context(), module)
    return print_module(module, elide_larger_than=None)


def lowered() -> Any:
    return parse_module(lowered_text())


def test_rules_still_missing() -> None:
    """prod and diff (tests/lit/convert-to-vkc/host-fallback.mlir, the end-to-end test
    below) have no Vulkan rule: if one gains a rule, pick another op without one."""
    from qopt.dialects.aten.shape import DiffOp

    rules = get_rules()
    missing = [op for op in (ProdOp, DiffOp) if op not in rules]
    assert missing == [ProdOp, DiffOp], "use ops without a Vulkan rule in these tests"


def test_equivalence_and_segments() -> None:
    """Interpret before and after convert-to-vkc{fallback=true}: the same values (the
    lowered ops are bit-identical references, the segment the same semantics)."""
    module = lowered()
    calls = [op for op in module.walk() if isinstance(op, vkc.HostCallOp)]
    assert len(calls) == 1  # cumsum, gather, prod and the integer cumsum: one segment
    assert [op.name for op in calls[0].segment_ops()] == [
        "aten.cumsum", "aten.gather", "aten.prod", "aten.cumsum",
    ]  # fmt: skip
    # 8 floats of relu and 4 int words of %n down (the constant index is no transfer);
    # cumsum, gather, prod and the integer cumsum up
    assert calls[0].transfer_bytes() == (32 + 16, 32 + 16 + 8 + 16)

    def slot(value: Any) -> int | None:
        owner = vkc.root_buffer(value).owner
        has_slot = isinstance(owner, vkc.AllocOp) and owner.slot is not None
        return owner.slot.value.data if has_slot else None

    # vkc-plan-buffers: what the segment writes never shares memory with what it reads
    read = {slot(v) for v in calls[0].ins} - {None}
    assert read
    assert not read & {slot(v) for v in calls[0].outs}
    want = qopt.interpret(parse_module(PROGRAM), *inputs())
    got = qopt.interpret(module, *inputs())
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


def test_refused_form_runs_on_the_host() -> None:
    """An op whose rule refuses its form (index_put with accumulate=True) runs on the
    host too, the rule's partial work undone (values broadcast to the indexed shape:
    a form compose leaves to the rule)."""
    text = """func.func @forward(%cache: tensor<1x2x8x4xf32>, %k: tensor<2x1x4xf32>,
        %pos: tensor<1xi64>) -> tensor<1x2x8x4xf32> {
      %e = aten.exp %k : (tensor<2x1x4xf32>) -> tensor<2x1x4xf32>
      %r = aten.index_put %cache, %pos, %e {indexed_dims = array<i64: 2>, accumulate = true} : (tensor<1x2x8x4xf32>, tensor<1xi64>, tensor<2x1x4xf32>) -> tensor<1x2x8x4xf32>
      %s = aten.relu %r : (tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32>
      func.return %s : tensor<1x2x8x4xf32>
    }"""
    module = parse_module(text)
    ConvertToVkcPass(fallback=True).apply(make_context(), module)
    calls = [op for op in module.walk() if isinstance(op, vkc.HostCallOp)]
    assert [[o.name for o in c.segment_ops()] for c in calls] == [["aten.index_put"]]
    assert len([op for op in module.walk() if isinstance(op, vkc.DispatchOp)]) == 2
    rng = np.random.default_rng(1)
    args = [
        rng.standard_normal((1, 2, 8, 4)).astype(np.float32),
        rng.standard_normal((2, 1, 4)).astype(np.float32),
        np.array([5], np.int64),
    ]
    (want,) = qopt.interpret(parse_module(text), *args)
    (got,) = qopt.interpret(module, *args)
    np.testing.assert_array_equal(got, want)


def test_error_lists_every_op_and_names_the_option() -> None:
    two = PROGRAM + PROGRAM.replace("@forward", "@other")
    with pytest.raises(QoptError) as error:
        ConvertToVkcPass().apply(make_context(), parse_module(two))
    message = str(error.value)
    assert message.startswith(
        "convert-to-vkc: 8 ops have no Vulkan lowering: 'aten.cumsum', 'aten.gather', "
    )
    assert message.count("'aten.cumsum'") == 4
    assert "fallback=True" in message
    assert "--host-fallback" in message


def test_coreml_error_names_the_vulkan_fallback() -> None:
    from qopt.lowering.convert_to_coreml import ConvertToCoremlPass

    with pytest.raises(QoptError, match=r"no CoreML lowering for 'aten.prod'.*no host fallback"):
        ConvertToCoremlPass().apply(make_context(), parse_module(PROGRAM))
    with pytest.raises(QoptError, match=r"fallback=True is an option|fallback is an option"):
        qopt.compile(object(), target="coreml", fallback=True)
    with pytest.raises(QoptError, match="fallback is True or False"):
        qopt.compile(object(), target="vulkan", fallback="yes")


def test_qopt_opt_host_fallback_flag(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    from qopt.tools.qopt_opt import main

    path = tmp_path / "p.mlir"
    path.write_text(PROGRAM)
    main([str(path), "-p", "convert-to-vkc", "--host-fallback"])
    assert capsys.readouterr().out.count("vkc.host_call") == 1
    with pytest.raises(SystemExit):
        main([str(path), "-p", "fuse-quant", "--host-fallback"])
    assert "--host-fallback applies to the Vulkan lowering" in capsys.readouterr().err


# ----- the bundle: untrusted input --------------------------------------------------------


@functools.cache
def bundle() -> bytes:
    from qopt.backends.vulkan.bundle import bundle_bytes, program_from_module

    pytest.importorskip("shutil").which("glslangValidator") or pytest.skip(
        "glslangValidator is not installed"
    )
    return bundle_bytes(program_from_module(lowered()))


def _edit(data: bytes, edit: Callable[[dict[str, Any]], None], version: int | None = None) -> bytes:
    header = struct.Struct("<4sII")
    magic, old, size = header.unpack_from(data)
    manifest = json.loads(data[header.size : header.size + size])
    edit(manifest)
    text = json.dumps(manifest).encode()
    return (
        header.pack(magic, old if version is None else version, len(text))
        + text
        + data[header.size + size :]
    )


def _segment(manifest: dict[str, Any]) -> dict[str, Any]:
    return manifest["host_calls"][0]


def _ir(text: str) -> Callable[[dict[str, Any]], None]:
    return lambda m: _segment(m).update(ir=text)


ARITH = """func.func @host_segment(%a: tensor<2x4xf32>, %i: tensor<2x2xi64>, %n: tensor<4xi32>)
    -> (tensor<2x4xf32>, tensor<2x2xf32>, tensor<2x1xf32>, tensor<4xi32>) {
  %z = arith.constant dense<0.0> : tensor<2x4xf32>
  func.return %z, %z, %z, %n : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<4xi32>
}"""


HUGE = """func.func @host_segment(%a: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %big = aten.full {value = 0.0 : f64} : tensor<40000x40000xf32>
  func.return %a : tensor<2x4xf32>
}"""


@pytest.mark.parametrize(
    ("edit", "version", "message"),
    [
        (_ir("__import__('os').system('true')"), None, "host segment 0: its IR does not parse"),
        (_ir(ARITH), None, "'arith.constant' may not run on the host"),
        (_ir("func.func private @host_segment()"), None, "one func.func with a body"),
        (_ir(HUGE), None, "its values need up to 12800000000 bytes on the host"),
        (lambda m: _segment(m)["writes"].__setitem__(0, 0), None, "writes input buffer 0"),
        (lambda m: _segment(m).update(reads=[0]), None, "takes 3 tensors and gives 4"),
        (lambda m: _segment(m).update(at=99), None, "position must be at most"),
        (lambda m: _segment(m).update(ops=["\x1b[2J"]), None, "one printable line"),
        (lambda m: None, 3, "host segments need a version 4 bundle"),
    ],
    ids=[
        "text",
        "op",
        "declaration",
        "huge",
        "writes-input",
        "arity",
        "position",
        "ops",
        "version",
    ],
)
def test_crafted_host_segment_is_refused(
    tmp_path: Any, edit: Callable[[dict[str, Any]], None], version: int | None, message: str
) -> None:
    from qopt.backends.vulkan.bundle import load_bundle

    data = bundle()
    assert struct.unpack_from("<I", data, 4)[0] == 4
    load_bundle(data)  # the genuine one loads
    with pytest.raises(QoptError, match=message):
        load_bundle(_edit(data, edit, version))


def test_host_ops_are_bounded_in_total() -> None:
    """Issue 27 class 4: the host-op limit bounds each segment and all of them together
    (36,000 host ops passed `--limits max_graph_nodes=1000` as many small segments)."""
    from qopt.backends.vulkan.bundle import load_bundle
    from qopt.limits import Limits

    data = bundle()
    per_segment = len(list(parse_module(_segment(json.loads(data[12:12 + struct.unpack_from(
        "<I", data, 8)[0]]))["ir"]).walk()))  # fmt: skip
    limits = Limits(max_graph_nodes=3 * per_segment)
    load_bundle(data, limits=limits)

    def copies(m: dict[str, Any]) -> None:
        m["host_calls"] = [dict(_segment(m)) for _ in range(4)]

    with pytest.raises(QoptError, match="the ops of its host segments together is"):
        load_bundle(_edit(data, copies), limits=limits)


def test_what_qopt_opt_writes_qopt_run_reads() -> None:
    """A status buffer's text (an assert's message, from the file: a newline, escapes,
    thousands of characters) is written as one printable line a reader takes."""
    from qopt.backends.vulkan.bundle import bundle_bytes, load_bundle, program_from_module

    bundle()  # skips without glslang
    message = "\\1B[2J" + "x" * 3000 + "\\nnext line"
    module = parse_module(f"""func.func @forward(%x: tensor<4xi64>) -> tensor<4xi64> {{
      %c = aten.select %x {{dim = 0 : i64, index = 0 : i64}} : (tensor<4xi64>) -> tensor<i64>
      %z = arith.constant dense<0> : tensor<i64>
      %b = aten.ge %c, %z : (tensor<i64>, tensor<i64>) -> tensor<i1>
      aten.assert_scalar %b {{message = "{message}"}} : tensor<i1>
      func.return %x : tensor<4xi64>
    }}""")
    ConvertToVkcPass().apply(make_context(), module)
    program = load_bundle(bundle_bytes(program_from_module(module)))
    (status,) = [b for b in program.buffers if b["kind"] == "status"]
    assert status["what"].isprintable()
    assert "\\x1b[2J" in status["what"]


def test_bundle_without_segments_stays_version_3() -> None:
    from qopt.backends.vulkan.bundle import bundle_bytes, load_bundle, program_from_module

    bundle()  # skips without glslang
    plain = parse_module(
        """func.func @forward(%x: tensor<4xf32>) -> tensor<4xf32> {
      %y = aten.relu %x : (tensor<4xf32>) -> tensor<4xf32>
      func.return %y : tensor<4xf32>
    }"""
    )
    ConvertToVkcPass(fallback=True).apply(make_context(), plain)
    data = bundle_bytes(program_from_module(plain))
    assert struct.unpack_from("<I", data, 4)[0] == 3
    assert load_bundle(data).host_calls == []


# ----- on the device ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def vulkan_device() -> None:
    from qopt.backends.vulkan.runtime import vulkan_available

    reason = vulkan_available()
    if reason is not None:
        print(f"Vulkan tests skipped: {reason}")
        pytest.skip(reason)


class _Model(torch.nn.Module):
    """A linear layer, an op without a Vulkan kernel, another linear layer."""

    def __init__(self, op: Callable[[torch.Tensor], torch.Tensor]):
        super().__init__()
        self.op = op
        self.first = torch.nn.Linear(8, 8)
        self.second = torch.nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.second(self.op(torch.relu(self.first(x))))


CANDIDATES: dict[type, tuple[Callable[[torch.Tensor], torch.Tensor], int]] = {
    ProdOp: (lambda h: h * torch.prod(h + 1, dim=-1, keepdim=True), 2 * 1 * 4),
    CumsumOp: (lambda h: torch.cumsum(h, dim=-1), 2 * 8 * 4),
}
"""A model around an op without a kernel, and the bytes its segment uploads (2 x 8
floats go down)."""


def test_model_with_an_op_without_kernel(vulkan_device: None, tmp_path: Any) -> None:
    """End to end on the device: torch's values, the fallback op listed with its
    transfer bytes, the same results after a .qvk save and load, and in a session."""
    from qopt.backends.vulkan.bisect import check_dispatches

    found = [(op, fn) for op, fn in CANDIDATES.items() if op not in get_rules()]
    if not found:
        pytest.skip("every candidate op has a Vulkan kernel now: add a candidate without one")
    op, (fn, up) = found[0]
    torch.manual_seed(0)
    model = _Model(fn).eval()
    x = torch.randn(2, 8)
    ep = torch.export.export(model, (x,))
    with pytest.raises(QoptError, match=rf"'{op.name}'.*fallback=True"):
        qopt.compile(ep, target="vulkan")
    artifact = qopt.compile(ep, target="vulkan", fallback=True)
    with torch.no_grad():
        want = model(x).numpy()
    (got,) = artifact(x)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    names = [f.op.split("'")[1] for f in artifact.fallback_ops]
    assert names == [op.name]
    fallback = artifact.fallback_ops[0]
    assert (fallback.download_bytes, fallback.upload_bytes) == (2 * 8 * 4, up)
    assert "host fallback" in repr(artifact)
    assert artifact.report is not None
    assert artifact.report.fallback_ops == [str(fallback)]
    assert "fallback ops (on the host): 1" in str(artifact.report)
    reports = check_dispatches(artifact.program, [x.numpy()], device=artifact.device)
    assert not [r for r in reports if r.exact]
    path = tmp_path / "m.qvk"
    artifact.save(path)
    with qopt.load(path) as loaded:
        (again,) = loaded(x)
        np.testing.assert_array_equal(again, got)
        assert loaded.fallback_ops == artifact.fallback_ops
        with loaded.session() as session:
            np.testing.assert_array_equal(session.run(x)[0], got)
    artifact.close()
