"""The weight store: owned by its module, freed with it, keys from the program."""

from __future__ import annotations

import gc
import subprocess
import sys
import weakref

import numpy as np
import pytest
from xdsl.dialect_interfaces.op_asm import OpAsmDialectInterface
from xdsl.dialects.arith import ConstantOp
from xdsl.dialects.builtin import Builtin, DenseResourceAttr

import qopt
from qopt.context import make_context, parse_module, print_module
from qopt.errors import QoptError
from qopt.examples import export_model, random_inputs
from qopt.resources import ResourceSlot, WeightStore, clone_module, weights_of


def _resource_keys(module) -> list[str]:
    return [
        op.value.resource_handle.data
        for op in module.walk()
        if isinstance(op, ConstantOp) and isinstance(op.value, DenseResourceAttr)
    ]


def test_same_input_same_ir_in_one_process() -> None:
    ep = export_model("mlp", "w4g32")
    first = qopt.fuse(qopt.import_program(ep))
    second = qopt.fuse(qopt.import_program(ep))
    assert print_module(first, elide_larger_than=None) == print_module(
        second, elide_larger_than=None
    )
    # Keys are the program's parameter names, numbered only within the module.
    keys = _resource_keys(first)
    assert {"p_fc1_weight_qdata", "p_fc1_bias", "fused_scale", "fused_scale_0"} <= set(keys)


def test_same_input_same_ir_across_processes() -> None:
    script = (
        "import qopt\n"
        "from qopt.context import print_module\n"
        "from qopt.examples import export_model\n"
        "print(print_module(qopt.fuse(qopt.import_program(export_model('mlp', 'w8c'))),"
        " elide_larger_than=None))\n"
    )
    here = print_module(
        qopt.fuse(qopt.import_program(export_model("mlp", "w8c"))), elide_larger_than=None
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == here.strip()


def test_blobs_are_freed_with_the_module() -> None:
    module = qopt.import_program(export_model("mlp", "float"))
    store = weights_of(module)
    assert len(store) > 0
    assert store.nbytes() > 64 * 1024
    alive = weakref.ref(store)
    del module, store
    gc.collect()
    assert alive() is None


def test_modules_never_share_blobs() -> None:
    """Two modules with the same keys keep their own data (a parsed text cannot
    change an imported module's weights)."""
    x = random_inputs("mlp", 0)
    module = qopt.import_program(export_model("mlp", "float"))
    (before,) = qopt.interpret(module, *x)
    text = print_module(module, elide_larger_than=None)
    key = _resource_keys(module)[0]
    start = text.index(f'{key}: "0x') + len(f'{key}: "0x') + 8
    end = text.index('"', start)
    other = parse_module(text[:start] + "4" * (end - start) + text[end:])
    assert _resource_keys(other)[0] == key
    (after,) = qopt.interpret(module, *x)
    np.testing.assert_array_equal(before, after)
    assert not np.array_equal(qopt.interpret(other, *x)[0], before)


def test_print_parse_round_trip_and_clone() -> None:
    x = random_inputs("mlp", 1)
    module = qopt.fuse(qopt.import_program(export_model("mlp", "w4g32")))
    (want,) = qopt.interpret(module, *x)
    again = parse_module(print_module(module, elide_larger_than=None))
    np.testing.assert_array_equal(qopt.interpret(again, *x)[0], want)
    np.testing.assert_array_equal(qopt.interpret(clone_module(module), *x)[0], want)
    text = print_module(module)  # default: blobs over 1 KiB left out
    assert "dense_resource<__elided__> : tensor<128x64xi8>" in text
    elided = parse_module(text)
    with pytest.raises(QoptError, match="missing: weights were elided when this IR was printed"):
        qopt.interpret(elided, *x)
    with pytest.raises(QoptError, match=r"^fuse-quant: 4 weight\(s\) have no data"):
        qopt.fuse(elided)


def test_no_process_wide_state() -> None:
    """xDSL's own builtin dialect keeps its interfaces: each qopt context has a builtin
    dialect object of its own, with a resource slot that serves one store at a time."""
    assert not any(isinstance(i, ResourceSlot) for i in Builtin._interfaces)  # pyright: ignore[reportPrivateUsage]
    a, b = make_context(), make_context()
    slot_a = a.get_dialect("builtin").get_interface(OpAsmDialectInterface)
    slot_b = b.get_dialect("builtin").get_interface(OpAsmDialectInterface)
    assert isinstance(slot_a, ResourceSlot)
    assert isinstance(slot_b, ResourceSlot)
    assert slot_a is not slot_b
    with pytest.raises(QoptError, match="parse_module"):
        slot_a.declare_resource("w")  # parsing blobs outside parse_module: refused
    store = WeightStore()
    assert store.add("w", np.zeros(2)) == "w"
    assert store.add("w", np.zeros(2)) == "w_0"
    assert store.add("w", np.zeros(2)) == "w_1"


def _lower_for_vulkan(module) -> None:
    from qopt.lowering.pipelines import QoptVulkanPipeline

    QoptVulkanPipeline().apply(make_context(), module)


def test_vulkan_lowering_releases_the_repacked_weights() -> None:
    """convert-to-vkc drops a quantized weight's int8 blob once its op is packed (the
    int4 words replace it), so a compile never holds every weight twice; after each
    pass the pipeline drops the blobs no op names; what the lowered module names is
    all there."""
    from qopt.resources import missing_weights, resource_references

    module = qopt.fuse(qopt.import_program(export_model("mlp", "w4g32")))
    store = weights_of(module)
    qdata = [key for key in _resource_keys(module) if key.endswith("_qdata")]
    assert qdata
    assert all(key in store for key in qdata)
    _lower_for_vulkan(module)
    assert not [key for key in qdata if key in store]
    assert missing_weights(module) == []
    # every pass's leftovers (scales folded, packed weights concatenated) are gone too
    assert set(store.keys()) == set(resource_references(module))


def test_a_shared_store_keeps_every_blob() -> None:
    """A module sharing its store (`clone_module`) keeps the original's weights: the
    lowering of the clone releases nothing."""
    original = qopt.fuse(qopt.import_program(export_model("mlp", "w4g32")))
    clone = clone_module(original)
    _lower_for_vulkan(clone)
    store = weights_of(original)
    assert all(key in store for key in _resource_keys(original))
    assert not weights_of(clone).release(_resource_keys(original)[0])


def test_a_refused_rule_takes_its_releases_back() -> None:
    """A rule that packed a weight and then refused its op (the host fallback runs the op
    instead, on the original weight) releases nothing; a rule that lowered its op
    releases the weight once the next op's lowering starts."""
    from qopt.dialects import qfused
    from qopt.lowering.convert_to_vkc.lowering import Lowering

    module = qopt.fuse(qopt.import_program(export_model("mlp", "w4g32")))
    first, second = [op for op in module.walk() if isinstance(op, qfused.LinearOp)][:2]
    weight = first.weight
    assert isinstance(weight.owner, ConstantOp)
    assert isinstance(weight.owner.value, DenseResourceAttr)
    key = weight.owner.value.resource_handle.data
    store = weights_of(module)
    lowering = Lowering(module)
    lowering.current = first
    mark = lowering.checkpoint(first)
    lowering.release(weight)
    lowering.rollback(mark)
    lowering.current = second
    lowering.checkpoint(second)
    assert key in store
    lowering.current = first
    lowering.checkpoint(first)
    lowering.release(weight)
    assert key in store  # its op is still being lowered
    lowering.current = second
    lowering.checkpoint(second)
    assert key not in store
