"""vkc-fuse-elementwise, vkc-plan-buffers and vkc-insert-barriers: translation
validation and idempotence.

The vkc interpreter gives a planned buffer a view into its slot's shared memory, as
the runtime does, so a plan that let two live buffers overlap changes the outputs:
each example program is interpreted right after `convert-to-vkc{schedule=false}`
(every buffer its own memory, no barriers), after vkc-plan-buffers and after
vkc-insert-barriers, and the outputs must be identical. The passes are idempotent,
and `convert-to-vkc` (which still runs both at its end) gives the same program as
the three passes in sequence.

vkc-fuse-elementwise is checked the same way (bit-identical interpreted outputs after
it, fewer dispatches, idempotent; a state buffer written between a producer and its
consumer stops the fusion), and on the Vulkan device the llama example compiled with
and without it gives bit-identical outputs, close to torch.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from shared_exports import exported
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i64

import qopt
from qopt.backends.vulkan.artifact import compile_artifact
from qopt.backends.vulkan.runtime import vulkan_available
from qopt.context import make_context
from qopt.dialects import vkc
from qopt.examples import random_inputs
from qopt.lowering.convert_to_vkc import ConvertToVkcPass
from qopt.lowering.pipelines import QoptVulkanPipeline
from qopt.lowering.vkc_fuse_elementwise import VkcFuseElementwisePass
from qopt.lowering.vkc_insert_barriers import VkcInsertBarriersPass
from qopt.lowering.vkc_plan_buffers import VkcPlanBuffersPass

PAIRS = [("llama", "float"), ("llama", "8da4w"), ("convnet", "pt2e_static"), ("mlp", "w4g32")]


def lowered(model: str, scheme: str, schedule: bool) -> ModuleOp:
    module = qopt.fuse(qopt.import_program(exported(model, scheme)))
    ConvertToVkcPass(schedule=schedule).apply(make_context(), module)
    module.verify()
    return module


def interpret(module: ModuleOp, model: str) -> tuple[np.ndarray, ...]:
    return qopt.interpret(module, *random_inputs(model, 7))


def count(module: ModuleOp, kind: type) -> int:
    return sum(isinstance(op, kind) for op in module.walk())


def plans(module: ModuleOp) -> list[tuple[int, int]]:
    """(planned, unplanned) bytes of every function."""
    found = []
    for f in module.ops:
        if isinstance(f, func.FuncOp):
            planned, unplanned = (
                f.attributes["vkc.planned_bytes"],
                f.attributes["vkc.unplanned_bytes"],
            )
            assert isinstance(planned, IntegerAttr)
            assert isinstance(unplanned, IntegerAttr)
            found.append((planned.value.data, unplanned.value.data))
    return found


def slots(module: ModuleOp) -> list[int]:
    return [op.slot.value.data for op in module.walk() if isinstance(op, vkc.AllocOp) and op.slot]


@pytest.mark.parametrize(("model", "scheme"), PAIRS)
def test_plan_and_barriers_keep_the_outputs(model: str, scheme: str) -> None:
    module = lowered(model, scheme, schedule=False)
    assert not slots(module)
    assert count(module, vkc.BarrierOp) == 0
    want = interpret(module, model)

    VkcPlanBuffersPass().apply(make_context(), module)
    module.verify()
    assert slots(module)
    ((planned, unplanned),) = plans(module)
    assert planned <= unplanned
    for got, ref in zip(interpret(module, model), want, strict=True):
        np.testing.assert_array_equal(got, ref)

    VkcInsertBarriersPass().apply(make_context(), module)
    module.verify()
    assert count(module, vkc.BarrierOp) > 0
    for got, ref in zip(interpret(module, model), want, strict=True):
        np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize(("model", "scheme"), PAIRS[:2])
def test_passes_are_idempotent_and_match_convert_to_vkc(model: str, scheme: str) -> None:
    module = lowered(model, scheme, schedule=False)
    VkcPlanBuffersPass().apply(make_context(), module)
    VkcInsertBarriersPass().apply(make_context(), module)
    once = str(module)
    VkcPlanBuffersPass().apply(make_context(), module)
    VkcInsertBarriersPass().apply(make_context(), module)
    assert str(module) == once
    default = lowered(model, scheme, schedule=True)
    assert slots(default) == slots(module)
    assert count(default, vkc.BarrierOp) == count(module, vkc.BarrierOp)
    assert plans(default) == plans(module)


def test_an_overlapping_plan_changes_the_outputs() -> None:
    """The check has teeth: every transient buffer forced into one slot (live buffers
    overlapping) gives different outputs in the interpreter."""
    module = lowered("llama", "float", schedule=False)
    want = interpret(module, "llama")
    for op in module.walk():
        if isinstance(op, vkc.AllocOp) and not op.is_status:
            op.properties["slot"] = IntegerAttr(0, i64)
    got = interpret(module, "llama")
    assert any(not np.array_equal(g, w) for g, w in zip(got, want, strict=True))


STATEFUL = """ml_program.global private mutable @k(dense<0.25> : tensor<2x8x4xf32>) : tensor<2x8x4xf32>
func.func @forward(%v: tensor<2x1x4xf32>, %pos: tensor<1xi64>) -> tensor<2x4xf32> {
  %c = ml_program.global_load @k : tensor<2x8x4xf32>
  %u = aten.index_copy %c, %pos, %v {dim = 1 : i64} : (tensor<2x8x4xf32>, tensor<1xi64>, tensor<2x1x4xf32>) -> tensor<2x8x4xf32>
  %e = aten.exp %u : (tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  %m = aten.mul %e, %u : (tensor<2x8x4xf32>, tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  %s = aten.sum %m {dims = array<i64: 1>} : (tensor<2x8x4xf32>) -> tensor<2x4xf32>
  ml_program.global_store @k = %u : tensor<2x8x4xf32>
  func.return %s : tensor<2x4xf32>
}"""


def test_state_buffers_are_never_planned_into_slots() -> None:
    """A state buffer (`vkc.state`) keeps its own memory: vkc-plan-buffers slots only
    transient buffers, so no transient ever aliases the cache, and calls of a session
    give the same outputs and states before and after planning and barriers."""
    from qopt.context import parse_module
    from qopt.lowering.vkc_insert_barriers import memory_of

    unplanned = parse_module(STATEFUL)
    ConvertToVkcPass(schedule=False).apply(make_context(), unplanned)
    planned = parse_module(STATEFUL)
    ConvertToVkcPass(schedule=False).apply(make_context(), planned)
    VkcPlanBuffersPass().apply(make_context(), planned)
    VkcInsertBarriersPass().apply(make_context(), planned)
    planned.verify()
    (state,) = [op for op in planned.walk() if isinstance(op, vkc.StateOp)]
    assert slots(planned)
    assert memory_of(state.result) is state.result  # its own memory, never a slot
    a, b = qopt.session(unplanned), qopt.session(planned)
    for step in range(3):
        inputs = (np.full((2, 1, 4), step + 1.0, np.float32), np.array([2 * step]))
        np.testing.assert_array_equal(a.run(*inputs)[0], b.run(*inputs)[0])
        np.testing.assert_array_equal(a.read_state("k"), b.read_state("k"))
    assert b.read_state("k")[:, 4, 0].tolist() == [3.0, 3.0]


# ----- vkc-fuse-elementwise ---------------------------------------------------------------


def same(a: tuple[np.ndarray, ...], b: tuple[np.ndarray, ...]) -> bool:
    """Bit-identical outputs (dtype, shape and bytes)."""
    return len(a) == len(b) and all(
        x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()
        for x, y in zip(a, b, strict=True)
    )


def kernel_names(module: ModuleOp) -> set[str]:
    return {op.kernel.data for op in module.ops if isinstance(op, vkc.KernelOp)}


@pytest.mark.parametrize(("model", "scheme"), PAIRS[:2])
def test_fuse_elementwise_keeps_the_outputs(model: str, scheme: str) -> None:
    module = lowered(model, scheme, schedule=False)
    before, dispatches = interpret(module, model), count(module, vkc.DispatchOp)
    VkcFuseElementwisePass().apply(make_context(), module)
    module.verify()
    assert same(interpret(module, model), before)
    assert count(module, vkc.DispatchOp) < 0.7 * dispatches
    assert "fused_elementwise" in kernel_names(module)
    once = str(module)
    VkcFuseElementwisePass().apply(make_context(), module)
    assert str(module) == once


HAZARD = """ml_program.global private mutable @k(dense<0.5> : tensor<2x4xf32>) : tensor<2x4xf32>
func.func @forward(%v: tensor<1x4xf32>, %pos: tensor<1xi64>) -> tensor<2x4xf32> {
  %c = ml_program.global_load @k : tensor<2x4xf32>
  %e = aten.neg %c : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %u = aten.index_copy %c, %pos, %v {dim = 0 : i64} : (tensor<2x4xf32>, tensor<1xi64>, tensor<1x4xf32>) -> tensor<2x4xf32>
  %m = aten.mul %e, %u : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %r = aten.relu %m : (tensor<2x4xf32>) -> tensor<2x4xf32>
  ml_program.global_store @k = %u : tensor<2x4xf32>
  func.return %r : tensor<2x4xf32>
}"""


def hazard_program() -> ModuleOp:
    """HAZARD in vkc with the store into the cache (a copy convert-to-vkc places last)
    moved before the multiply: `neg` reads the cache before that write, the multiply
    after it."""
    from qopt.context import parse_module

    module = parse_module(HAZARD)
    ConvertToVkcPass(schedule=False).apply(make_context(), module)
    ops = [op for op in module.walk() if isinstance(op, vkc.DispatchOp)]
    store = ops[-1]
    assert isinstance(vkc.root_buffer(store.buffers[1]).owner, vkc.StateOp)
    (multiply,) = [op for op in ops if op.kernel_op().kernel.data == "binary"]
    store.detach()
    block = multiply.parent
    assert block is not None
    block.insert_op_before(store, multiply)
    module.verify()
    return module


def test_fuse_elementwise_respects_state_writes() -> None:
    """A read moved past a write of what it reads would see the new value: `neg`
    stays a dispatch of its own (before the write), the multiply and relu still fuse,
    and calls of a session give the same outputs and state."""
    unfused, fused = hazard_program(), hazard_program()
    VkcFuseElementwisePass().apply(make_context(), fused)
    fused.verify()
    assert "unary" in kernel_names(fused)
    assert "fused_elementwise" in kernel_names(fused)
    a, b = qopt.session(unfused), qopt.session(fused)
    for step in range(2):
        inputs = (np.full((1, 4), step + 2.0, np.float32), np.array([step]))
        assert same(a.run(*inputs), b.run(*inputs))
        np.testing.assert_array_equal(a.read_state("k"), b.read_state("k"))


def test_fused_llama_on_the_device() -> None:
    """The llama example through qopt-vulkan with and without vkc-fuse-elementwise: the
    device outputs are bit-identical, and close to torch."""
    if reason := vulkan_available():
        pytest.skip(f"no Vulkan device: {reason}")
    ep = exported("llama", "float")
    inputs = random_inputs("llama", 5)
    outputs, dispatches = [], []
    for fuse in (False, True):
        module = qopt.import_program(ep)
        QoptVulkanPipeline(fuse_elementwise=fuse).apply(make_context(), module)
        dispatches.append(count(module, vkc.DispatchOp))
        artifact = compile_artifact(module)
        try:
            outputs.append(artifact(*inputs))
        finally:
            artifact.close()
    assert dispatches[1] < dispatches[0]
    assert same(outputs[0], outputs[1])
    with torch.no_grad():
        expect = ep.module()(*inputs)
    expect = expect if isinstance(expect, tuple) else (expect,)
    for got, want in zip(outputs[1], expect, strict=True):
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-4, atol=1e-4)


def test_kernel_lookup_follows_the_module() -> None:
    """`DispatchOp.kernel_op` remembers each kernel symbol it finds, but gives the
    module's current op of that name: after the kernel is erased and a clone put in
    its place, the clone; after it is renamed, an error."""
    from xdsl.dialects.builtin import StringAttr
    from xdsl.utils.exceptions import VerifyException

    module = lowered("mlp", "float", False)
    dispatch = next(op for op in module.walk() if isinstance(op, vkc.DispatchOp))
    kernel = dispatch.kernel_op()
    assert dispatch.kernel_op() is kernel
    clone = kernel.clone()
    block = module.body.block
    block.insert_op_before(clone, kernel)
    block.erase_op(kernel)
    assert dispatch.kernel_op() is clone
    clone.sym_name = StringAttr("renamed")
    with pytest.raises(VerifyException, match=r"is not a vkc\.kernel"):
        dispatch.kernel_op()
