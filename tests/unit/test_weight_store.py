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
