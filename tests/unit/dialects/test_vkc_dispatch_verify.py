"""`vkc.dispatch`'s verifier skips a dispatch whose inputs (properties, kernel op,
buffers and their types and defining ops) are the very objects it last passed with: a
change to any of them is verified again and caught."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from xdsl.dialects.builtin import DictionaryAttr, FloatAttr, IntegerAttr, ModuleOp, f32, i32
from xdsl.utils.exceptions import VerifyException

from qopt.context import parse_module
from qopt.dialects import vkc

TEXT = """
vkc.kernel @scale {kernel = "test_scale", glsl = "test_scale.glsl", entry = "main", hash = "0123abcd", local_size = array<i64: 64, 1, 1>, spec = {op = 1 : i64}, bindings = [#vkc.binding<"x", f32>, #vkc.binding<"w", ui32>, #vkc.binding<"y", f32, write>], push = [#vkc.push<"n", i32>, #vkc.push<"alpha", f32>]}
func.func @forward(%x: tensor<4x8xf32>) -> tensor<32xf32> {
  %xb = vkc.input %x : tensor<4x8xf32> -> !vkc.buffer<4x8xf32>
  %w = vkc.constant dense<[1, 2]> : tensor<2xui32> : !vkc.buffer<2xui32, "q4gsw">
  %y = vkc.alloc : !vkc.buffer<4x8xf32>
  vkc.dispatch @scale(%xb, %w, %y) {push = {n = 32 : i32, alpha = 0.5 : f32}, workgroups = array<i64: 1, 1, 1>} : !vkc.buffer<4x8xf32>, !vkc.buffer<2xui32, "q4gsw">, !vkc.buffer<4x8xf32>
  %v = vkc.view %y : !vkc.buffer<4x8xf32> -> !vkc.buffer<32xf32>
  %out = vkc.output %v : !vkc.buffer<32xf32> -> tensor<32xf32>
  func.return %out : tensor<32xf32>
}
"""


def _dispatch(module: ModuleOp) -> vkc.DispatchOp:
    return next(op for op in module.walk() if isinstance(op, vkc.DispatchOp))


def _wrong_push(module: ModuleOp) -> None:
    _dispatch(module).properties["push"] = DictionaryAttr(
        {"n": IntegerAttr(32, i32), "beta": FloatAttr(0.5, f32)}
    )


def _output_bound_to_input(module: ModuleOp) -> None:
    dispatch = _dispatch(module)
    dispatch.operands = [dispatch.operands[0], dispatch.operands[1], dispatch.operands[0]]


def _kernel_replaced(module: ModuleOp) -> None:
    kernel = next(op for op in module.ops if isinstance(op, vkc.KernelOp))
    text = TEXT.replace('#vkc.binding<"w", ui32>', '#vkc.binding<"w", f32>')
    other = next(op for op in parse_module(text).ops if isinstance(op, vkc.KernelOp))
    other.detach()
    module.body.block.insert_op_before(other, kernel)
    kernel.detach()
    kernel.erase()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (_wrong_push, "takes push constants"),
        (_output_bound_to_input, "writes a buffer of vkc.input"),
        (_kernel_replaced, "takes f32 elements"),
    ],
)
def test_change_after_a_pass_is_verified(change: Callable[[ModuleOp], None], message: str) -> None:
    module = parse_module(TEXT)
    module.verify()
    module.verify()  # passes again, from what it remembers
    change(module)
    with pytest.raises(VerifyException, match=message):
        module.verify()
