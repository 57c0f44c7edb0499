"""Out-of-range indices on the Vulkan target: an error naming the op, never silent zeros.

Every dispatch of a kernel that indexes a table with values read from a buffer
(gather_rows, embedding_q4gsw / embedding_q8csw, embedding_lut) has its own one-word
status buffer (`vkc.alloc {status, what = ...}`), which the kernel sets when an index
lies outside [0, V) (torch's range for embedding and index_select). The artifact zeroes
the status words before each run and raises QoptError naming the op after it; the vkc
interpreter (the kernels' numpy references) raises the same; a `.qvk` bundle keeps the
check. Device tests skip with the reason when there is no Vulkan device.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import torch
from shared_exports import exported as shared_exported

import qopt
from qopt.dialects import vkc
from qopt.errors import QoptError
from qopt.examples import random_inputs

SCHEMES = {  # scheme -> the kernel its token embedding lowers to
    "float": "gather_rows",
    "w4g32": "embedding_q4gsw",
    "w8c": "embedding_q8csw",
    "codebook4": "embedding_lut",
}
HUGE = 2**31 - 1
"""The largest token id an int32 buffer carries (larger ones are refused on upload)."""


def index_error(op: str, kernel: str) -> str:
    """The one-line message (`str(error)`; the interpreter adds the IR as a note)."""
    return (
        rf"'{re.escape(op)}' at [^:\n]+:\d+(?: in [\w.]+)?: an index was out of range \(Vulkan step "
        r"\d+, "
        rf"kernel {kernel}\); check the inputs \(token ids must be below the vocabulary "
        r"size\)"
    )


def assert_index_error(error: pytest.ExceptionInfo[QoptError], op: str, kernel: str) -> None:
    assert re.fullmatch(index_error(op, kernel), str(error.value)), str(error.value)


@pytest.fixture(scope="module")
def vulkan_device() -> None:
    from qopt.backends.vulkan.runtime import vulkan_available

    reason = vulkan_available()
    if reason is not None:
        print(f"Vulkan tests skipped: {reason}")
        pytest.skip(reason)


def exported(scheme: str) -> Any:
    return shared_exported("llama", scheme)


@functools.cache
def vkc_module(scheme: str) -> Any:
    """The llama's vkc module (no device needed)."""
    from qopt.context import make_context
    from qopt.lowering.convert_to_vkc import ConvertToVkcPass

    module = qopt.fuse(qopt.import_program(exported(scheme)))
    ConvertToVkcPass().apply(make_context(), module)
    module.verify()
    return module


@functools.cache
def vocab_size() -> int:
    return int(exported("float").module().tok_embeddings.weight.shape[0])


def bad_tokens(scheme: str) -> Iterator[tuple[str, torch.Tensor]]:
    """Token ids the embedding must refuse: the vocabulary size, -1 and a huge one."""
    (tokens,) = random_inputs("llama", 1)
    for name, value in (("vocab", vocab_size()), ("minus_one", -1), ("huge", HUGE)):
        bad = tokens.clone()
        bad[0, 5] = value
        yield name, bad


def status_allocs(module: Any) -> list[vkc.AllocOp]:
    return [op for op in module.walk() if isinstance(op, vkc.AllocOp) and op.is_status]


def rel_err(got: np.ndarray, want: np.ndarray) -> float:
    g, w = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return float(np.linalg.norm(g - w) / max(np.linalg.norm(w), 1e-30))


def embedding_op(scheme: str) -> str:
    return "aten.embedding" if scheme == "float" else "qfused.embedding"


# ----- the IR: one status buffer per index-checking dispatch, never in a slot -------------------


@pytest.mark.parametrize("scheme", SCHEMES)
def test_every_index_dispatch_has_its_own_status_buffer(scheme: str) -> None:
    from qopt.backends.vulkan.registry import kernels

    module = vkc_module(scheme)
    names = {k.sym_name.data: k.kernel.data for k in module.walk() if isinstance(k, vkc.KernelOp)}
    table = kernels()
    guarded = []
    for op in module.walk():
        if not isinstance(op, vkc.DispatchOp):
            continue
        spec = table[names[op.kernel.root_reference.data]]
        if spec.status_index is None:
            continue
        owner = op.buffers[spec.status_index].owner
        assert isinstance(owner, vkc.AllocOp)
        assert owner.is_status
        assert owner.slot is None
        assert owner.what is not None
        guarded.append((spec.name, owner.what.data))
    assert len(status_allocs(module)) == len(guarded)
    assert (SCHEMES[scheme], guarded[0][1]) == guarded[0]
    assert re.match(
        rf"'{embedding_op(scheme)}' at .*examples\.py:\d+ in tok_embeddings$", guarded[0][1]
    )


# ----- the vkc interpreter (kernel references) -------------------------------------------------


@pytest.mark.parametrize("scheme", SCHEMES)
def test_interpreter_raises_for_out_of_range_tokens(scheme: str) -> None:
    module = vkc_module(scheme)
    mid = qopt.fuse(qopt.import_program(exported(scheme)))
    for _, bad in bad_tokens(scheme):
        with pytest.raises(QoptError) as error:
            qopt.interpret(module, bad)
        assert_index_error(error, embedding_op(scheme), SCHEMES[scheme])
        # the mid level raises too (checked_indices): no level gives silent zeros
        with pytest.raises(QoptError, match="out of range"):
            qopt.interpret(mid, bad)


# ----- the bundle: status buffers checked on load ------------------------------------------------


def _tampered(change: Any) -> Any:
    import copy

    from qopt.backends.vulkan.bundle import program_from_module

    program = copy.deepcopy(program_from_module(vkc_module("float")))
    change(program)
    return program


def _status_id(program: Any) -> int:
    return next(i for i, b in enumerate(program.buffers) if b["kind"] == "status")


def _other_alloc(program: Any) -> int:
    return next(i for i, b in enumerate(program.buffers) if b["kind"] in ("alloc", "slot"))


def _gather_step(program: Any) -> Any:
    return next(s for s in program.steps if program.kernels[s.kernel].kernel == "gather_rows")


def _set_status_binding(program: Any, buffer_id: int) -> None:
    _gather_step(program).buffers[-1] = buffer_id


def _bind_status_as_output(program: Any) -> None:
    step = _gather_step(program)
    step.buffers[2] = _status_id(program)
    step.push.update(n=1, D=1)  # y's extent: 1 word (as the status buffer holds)
    step.groups = [1, 1, 1]  # what those push constants need


def _share_status(program: Any) -> None:
    first = _gather_step(program)
    program.steps.append(type(first)(first.kernel, list(first.buffers), first.push, first.groups))
    program.methods[-1].steps[1] += 1  # the method's steps still cover the list


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda p: p.buffers[_status_id(p)].update(nbytes=8), "holds 4 bytes, not 8"),
        (lambda p: p.buffers[_status_id(p)].update(what="a\nb"), "one printable line"),
        (lambda p: p.buffers[_status_id(p)].update(what="x" * 401), "one printable line"),
        (lambda p: p.buffers[_status_id(p)].pop("what"), "one printable line"),
        (lambda p: _set_status_binding(p, _other_alloc(p)), "at its status binding"),
        (_bind_status_as_output, "bound only at a status binding"),
        (_share_status, "is also bound by dispatch"),
    ],
)
def test_bundle_check_refuses_bad_status_buffers(change: Any, message: str) -> None:
    from qopt.backends.vulkan.bundle import check_program

    check_program(_tampered(lambda p: None), "x.qvk")
    with pytest.raises(QoptError, match=message):
        check_program(_tampered(change), "x.qvk")


@pytest.mark.parametrize("old", [1, 2])
def test_older_bundles_are_refused(tmp_path, old: int) -> None:
    from qopt.backends.vulkan.bundle import VERSION, bundle_bytes, program_from_module, read_bundle

    pytest.importorskip("shutil").which("glslangValidator") or pytest.skip(
        "glslangValidator is not installed"
    )
    assert VERSION == 4  # version 3 stays readable: bundles without host segments
    data = bundle_bytes(program_from_module(vkc_module("float")))
    path = tmp_path / "old.qvk"
    path.write_bytes(data[:4] + old.to_bytes(4, "little") + data[8:])
    with pytest.raises(
        QoptError, match=f"version {old} Vulkan bundle; this qopt reads versions 3 to 4"
    ):
        read_bundle(path)
    path.write_bytes(data)
    loaded = read_bundle(path)
    statuses = [b for b in loaded.buffers if b["kind"] == "status"]
    assert len(statuses) == 1
    assert statuses[0]["nbytes"] == 4
    what = statuses[0]["what"]
    assert re.fullmatch(r"'aten\.embedding' at .*examples\.py:\d+ in tok_embeddings", what)


# ----- on the device ----------------------------------------------------------------------------


@functools.cache
def artifact(scheme: str) -> Any:
    return qopt.compile(exported(scheme), target="vulkan")


@pytest.mark.parametrize("scheme", SCHEMES)
def test_device_raises_for_out_of_range_tokens(vulkan_device: None, scheme: str) -> None:
    art = artifact(scheme)
    assert SCHEMES[scheme] in art.kernel_names
    for name, bad in bad_tokens(scheme):
        with pytest.raises(QoptError) as device_error:
            art(bad)
        assert_index_error(device_error, embedding_op(scheme), SCHEMES[scheme])
        with pytest.raises(QoptError) as interpreted_error:
            qopt.interpret(art.module, bad)
        assert str(device_error.value) == str(interpreted_error.value), name
    # valid tokens still match torch and the interpreter (the status words start at 0
    # on every call)
    for seed in (3, 4):
        inputs = random_inputs("llama", seed)
        (got,) = art(*inputs)
        want = exported(scheme).module()(*inputs).detach().numpy()
        (interpreted,) = qopt.interpret(art.module, *inputs)
        assert rel_err(got, want) <= 1e-4, scheme
        assert rel_err(got, interpreted) <= 1e-5, scheme


@pytest.mark.parametrize("scheme", ["float", "w4g32"])
def test_bundle_keeps_the_index_check(vulkan_device: None, scheme: str, tmp_path) -> None:
    from qopt.backends.vulkan.artifact import VulkanArtifact

    path = tmp_path / f"llama-{scheme}.qvk"
    artifact(scheme).save(path)
    with VulkanArtifact.load(path) as loaded:
        assert [b["kind"] for b in loaded.program.buffers].count("status") == len(
            status_allocs(vkc_module(scheme))
        )
        for _, bad in bad_tokens(scheme):
            with pytest.raises(QoptError) as error:
                loaded(bad)
            assert_index_error(error, embedding_op(scheme), SCHEMES[scheme])
        inputs = random_inputs("llama", 3)
        np.testing.assert_array_equal(loaded(*inputs)[0], artifact(scheme)(*inputs)[0])


def test_dispatch_check_raises_for_out_of_range_tokens(vulkan_device: None) -> None:
    """check_dispatches (qopt-run --check-dispatches) compares the status words like any
    written binding and stops with the artifact's error when both set it."""
    from qopt.backends.vulkan.bisect import check_dispatches

    art = artifact("w4g32")
    _, bad = next(bad_tokens("w4g32"))
    with pytest.raises(QoptError) as error:
        check_dispatches(art.program, [bad], device=art.device)
    assert_index_error(error, "qfused.embedding", "embedding_q4gsw")
    reports = check_dispatches(art.program, random_inputs("llama", 5), device=art.device)
    assert not [str(r) for r in reports if r.exact]


# ----- index_select with a run-time index tensor --------------------------------------------------


class Select(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(7, 5, generator=torch.Generator().manual_seed(0)))

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        return torch.index_select(self.w, 0, idx) * 2.0


BAD_ROWS = ([0, 7, 1, 2], [0, -1, 1, 2], [HUGE, 0, 0, 0])
"""Row indices index_select refuses for a table of 7 rows (torch raises IndexError)."""


@functools.cache
def select_program() -> Any:
    return torch.export.export(Select(), (torch.tensor([0, 3, 6, 2]),))


def select_torch(idx: np.ndarray) -> np.ndarray:
    return Select()(torch.from_numpy(idx)).detach().numpy()


def test_index_select_lowers_to_gather_rows_with_a_status_buffer() -> None:
    from qopt.context import make_context
    from qopt.lowering.convert_to_vkc import ConvertToVkcPass

    module = qopt.import_program(select_program())
    ConvertToVkcPass().apply(make_context(), module)
    module.verify()
    kernels = {k.kernel.data for k in module.walk() if isinstance(k, vkc.KernelOp)}
    assert "gather_rows" in kernels
    (status,) = status_allocs(module)
    assert status.what is not None
    assert status.what.data.startswith("'aten.index_select' at ")
    idx = np.array([1, 6, 0, 2])
    np.testing.assert_array_equal(qopt.interpret(module, idx)[0], select_torch(idx))
    for bad in BAD_ROWS:
        with pytest.raises(QoptError) as error:
            qopt.interpret(module, np.array(bad))
        assert_index_error(error, "aten.index_select", "gather_rows")


def test_index_select_on_device(vulkan_device: None) -> None:
    art = qopt.compile(select_program(), target="vulkan")
    with art:
        idx = np.array([1, 6, 0, 2])
        np.testing.assert_array_equal(art(idx)[0], select_torch(idx))
        for bad in BAD_ROWS:
            with pytest.raises(QoptError) as error:
                art(np.array(bad))
            assert_index_error(error, "aten.index_select", "gather_rows")
        np.testing.assert_array_equal(art(idx)[0], select_torch(idx))  # runs as before


# ----- the kernels: status word on the device and in the reference --------------------------------


def test_kernel_status_word_matches_reference(vulkan_device: None) -> None:
    """gather_rows on the device and in its reference: the same output rows (zeros past
    [-V, V), from the end in [-V, 0)) and the same status word, set only for an index
    outside [0, V)."""
    from qopt.backends.vulkan.registry import kernel
    from qopt.backends.vulkan.runtime import Dispatch, VulkanDevice

    spec = kernel("gather_rows")
    table = np.arange(4 * 3, dtype=np.float32).reshape(4, 3)
    with VulkanDevice() as dev:
        for idx, flagged in (([0, 3, 1], 0), ([0, 4, 1], 1), ([-1, 2, 0], 1), ([-9, 0, 0], 1)):
            arrays = {
                "table": table.reshape(-1),
                "idx": np.array(idx, np.int32),
                "y": np.zeros(9, np.float32),
                "status": np.zeros(1, np.uint32),
            }
            bufs = [dev.upload(arrays[b.name]) for b in spec.bindings]
            push = {"n": 3, "D": 3, "V": 4}
            dev.run([Dispatch(spec, bufs, push=push)])
            got_y, got_status = bufs[2].read(np.float32, 9), bufs[3].read(np.uint32, 1)
            for b in bufs:
                b.free()
            host = [arrays[b.name].copy() for b in spec.bindings]
            spec.run_reference(host, push, {})
            np.testing.assert_array_equal(got_y, host[2])
            assert int(got_status[0]) == int(host[3][0]) == flagged, idx


# ----- torch.gather with a run-time index tensor --------------------------------------------------


class Gather(torch.nn.Module):
    def forward(self, x: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        return torch.gather(x, 1, idx)


def test_gather_on_device_checks_each_index_against_its_row(vulkan_device: None) -> None:
    """torch.gather is one flat gather over x, its index first checked against the
    row length: 5 in a row of 5 would read the next row's first element, torch raises
    IndexError, Vulkan an error naming aten.gather."""
    x = torch.randn(3, 5, generator=torch.Generator().manual_seed(3))
    good = torch.tensor([[4, 0, 2, 2], [1, 3, 0, 4]])
    ep = torch.export.export(Gather(), (x, good))
    with qopt.compile(ep, target="vulkan") as art:
        (got,) = art(x, good)
        np.testing.assert_array_equal(got, torch.gather(x, 1, good).numpy())
        with pytest.raises(QoptError) as error:
            art(x, torch.tensor([[4, 0, 2, 2], [1, 5, 0, 4]]))
    assert_index_error(error, "aten.gather", "gather_dim")
