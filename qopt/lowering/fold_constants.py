"""`fold-constants`: evaluate input-independent aten subgraphs at compile time.

Exported models build tensors that do not depend on the inputs: transformers'
causal masks (`arange`, `index`, `le`, `bitwise_and`, ...), position ids,
`full`/`zeros` fills. A target would need a kernel or a MIL op for each of them
although the result is a constant. This pass runs such ops through the
reference interpreter once and replaces their uses with an `arith.constant`,
in program order (so chains fold), then erases what became dead.

What folds: an `aten` op all of whose operands are constants (`arith.constant`,
inline or `dense_resource`, or results folded before) and whose results hold
at most `max_elements` elements each. An op that reads a `dense_resource`
(a weight, or a value computed from one) folds only if its results hold no
more elements than its operands together, so a fold never grows the stored
weights (an `expand` of a weight stays an op); values computed only from
inline constants and generators (`arange`, `full`, masks) fold freely.
`quant`/`qfused` ops never fold: a dequantized weight would lose its
compression, and fuse-quant owns them. Results of more than 16 elements become
`dense_resource` blobs, smaller ones inline `dense` attributes. The numerics
are the interpreter's, which the equivalence tests check against torch.

`fold-constants{target=vulkan}` is the policy convert-to-vkc needs, run just before
it (qopt-vulkan lists it, and `convert-to-vkc`'s `preparation()`): the Vulkan
lowering has kernels for the ops that read the program's inputs, not for the masks,
position tables, iotas and weight dequantizations that do not, so every op of a
function (aten, quant or qfused) whose operands are all constants is evaluated,
whatever its size, an unfused `quant.dequantize` of a weight included; only the
program's state (`ml_program.global_load` / `global_store`) and ops with regions never
fold. An op whose results all have zero elements folds too, whatever its operands (a
zero-size tensor holds no data; Vulkan buffers are never empty, so its readers fold
or take it as a constant, and `cat` drops it). Intermediate values stay numpy arrays:
only a folded value that an op left in the program reads (or the function returns)
is written, as one constant (a `dense_resource` blob holding the array itself when it
is contiguous, as a reshape of a weight is: no copy), so a chain of folds stores its
last value only. convert-to-vkc then maps each `arith.constant` to its value and lowers
the other ops.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeGuard

import numpy as np
from xdsl.context import Context
from xdsl.dialects.arith import ConstantOp
from xdsl.dialects.builtin import (
    BytesAttr,
    DenseIntOrFPElementsAttr,
    DenseResourceAttr,
    ModuleOp,
    TensorType,
)
from xdsl.dialects.func import FuncOp
from xdsl.interpreter import Interpreter
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from qopt.dialects.queries import constant_array
from qopt.dialects.tensors import dtype_of, numel, shape_of
from qopt.dtypes import tensor_type
from qopt.errors import QoptError, where
from qopt.interpreters import dialects_of, make_interpreter
from qopt.interpreters.common import has_runtime_size, runtime_result_sizes
from qopt.resources import (
    WeightStore,
    make_resource,
    printable_inline,
    require_weights,
    weights_of,
)

INLINE_LIMIT = 16

TARGETS = ("any", "vulkan")
"""The folding policies (option `target`): `any`, the size policy above, which any
target can take; `vulkan`, convert-to-vkc's (everything input-independent)."""

NEVER_FOLDED = ("func.return", "ml_program.global_load", "ml_program.global_store")
"""Ops `target=vulkan` never folds: the return, and the program's state (read and
written at run time)."""


def _constant(op: Operation) -> TypeGuard[ConstantOp]:
    return isinstance(op, ConstantOp) and isinstance(
        op.value, DenseIntOrFPElementsAttr | DenseResourceAttr
    )


@dataclass(frozen=True)
class FoldConstantsPass(ModulePass):
    """Replace input-independent ops by constants: aten ops within a size policy, or
    (`target=vulkan`) every one, as convert-to-vkc needs (see the module docstring)."""

    name = "fold-constants"

    max_elements: int = 1 << 16
    """Largest result (in elements) that is folded into the IR (`target=any`)."""

    target: str = "any"
    """The policy: `any` (the size policy, default) or `vulkan` (every input-independent
    op of a function, as convert-to-vkc needs; see the module docstring)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.target not in TARGETS:
            raise QoptError(
                f"fold-constants: target must be one of {', '.join(TARGETS)}, got '{self.target}'"
            )
        require_weights(op, self.name)
        # single ops of the module's dialects only: no func table, no other target's
        interpreter = make_interpreter(op, calls=False, dialects=dialects_of(op))
        if self.target == "vulkan":
            for function in op.ops:
                if isinstance(function, FuncOp) and not _lowered(function):
                    _fold_all(function, interpreter, weights_of(op))
            return
        known: dict[SSAValue, np.ndarray] = {}
        light: set[SSAValue] = set()  # computed without any dense_resource
        folded: list[Operation] = []
        for candidate in list(op.walk()):
            if _constant(candidate):
                known[candidate.results[0]] = np.asarray(interpreter.run_op(candidate, ())[0])
                if not isinstance(candidate.value, DenseResourceAttr):
                    light.add(candidate.results[0])
                continue
            if not candidate.name.startswith("aten.") or candidate.regions:
                continue
            if not all(v in known for v in candidate.operands):
                continue
            sizes = [numel(r.type) for r in candidate.results]
            if has_runtime_size(candidate):  # `?` results: their size from the operands
                args = tuple(known[v] for v in candidate.operands)
                sizes = runtime_result_sizes(candidate, args) or [self.max_elements + 1]
            budget = sum(numel(v.type) for v in candidate.operands)
            is_light = all(v in light for v in candidate.operands)
            if max(sizes, default=0) > self.max_elements:
                continue
            if not is_light and sum(sizes) > budget:
                continue
            values = _evaluate(interpreter, candidate, [known[v] for v in candidate.operands])
            for result, value in zip(candidate.results, values, strict=True):
                array = value
                known[result] = array
                if result.uses:
                    new = self._replace(result, array, weights_of(op))
                    known[new] = array
                    if is_light:
                        light.add(new)
            folded.append(candidate)
        for dead in reversed(folded):
            if all(not r.uses for r in dead.results):
                Rewriter.erase_op(dead)
        for constant in list(op.walk()):
            if isinstance(constant, ConstantOp) and not constant.result.uses:
                Rewriter.erase_op(constant)

    @staticmethod
    def _replace(result: SSAValue, array: np.ndarray, store: WeightStore) -> SSAValue:
        return _replace(result, array, store)


def _evaluate(interpreter: Interpreter, op: Operation, args: list[Any]) -> list[np.ndarray]:
    """`op`'s results on the constant `args`, by the reference interpreter (a failure
    is a QoptError naming the op)."""
    try:
        with np.errstate(all="ignore"):  # the interpreter's semantics define inf/NaN
            values = interpreter.run_op(op, tuple(args))
    except QoptError:
        raise
    except (ValueError, TypeError, IndexError, ArithmeticError) as error:
        raise QoptError(
            f"fold-constants: {where(op)}: evaluating '{op.name}' failed "
            f"({type(error).__name__}: {error}); run the verifier on the input"
        ) from error
    return [np.asarray(value) for value in values]


def _lowered(function: FuncOp) -> bool:
    """Whether `function` is at the vkc level already (lowered by convert-to-vkc)."""
    return any(op.name.startswith("vkc.") for op in function.body.block.ops)


def _empty(value: SSAValue) -> bool:
    return isinstance(value.type, TensorType) and 0 in value.type.get_shape()


def _fold_all(function: FuncOp, interpreter: Interpreter, store: WeightStore) -> None:
    """`target=vulkan` on one function: evaluate every op whose operands are all
    constants (or whose results are all empty), in program order, keeping the values as
    numpy arrays; write a constant for each folded value an op left in the program
    reads, then erase the folded ops and the constants nothing reads."""
    block = function.body.block
    known: dict[SSAValue, Any] = {}
    folded: list[Operation] = []
    for candidate in list(block.ops):
        if isinstance(candidate, ConstantOp):
            known[candidate.result] = constant_array(candidate)
            continue
        if (
            candidate.name in NEVER_FOLDED
            or candidate.regions
            or not all(isinstance(r.type, TensorType) for r in candidate.results)
        ):
            continue
        if candidate.results and all(_empty(r) for r in candidate.results):
            values = [np.zeros(shape_of(r), dtype_of(r)) for r in candidate.results]
        elif all(v in known for v in candidate.operands):
            values = _evaluate(interpreter, candidate, [known[v] for v in candidate.operands])
        else:
            continue
        known.update(zip(candidate.results, values, strict=True))
        folded.append(candidate)
    taken = set(folded)
    for candidate in folded:
        for result in candidate.results:
            if any(use.operation not in taken for use in result.uses):
                _replace(result, np.asarray(known[result]), store)
    del known  # the arrays the program no longer reads
    for dead in reversed(folded):
        Rewriter.erase_op(dead)
    for constant in list(block.ops):
        if isinstance(constant, ConstantOp) and not constant.result.uses:
            Rewriter.erase_op(constant)


def _replace(result: SSAValue, array: np.ndarray, store: WeightStore) -> SSAValue:
    type = result.type
    assert isinstance(type, TensorType)
    want = tensor_type(array.dtype, array.shape)
    if want != type:  # the interpreter returns numpy's dtype: store the IR's
        array = array.astype(dtype_of(type))
    array = np.ascontiguousarray(array).reshape(shape_of(type))
    value: DenseIntOrFPElementsAttr | DenseResourceAttr
    if array.size <= INLINE_LIMIT and printable_inline(array):
        value = DenseIntOrFPElementsAttr(type, BytesAttr(array.tobytes()))
    else:
        value = make_resource("folded", array, type, store)
    constant = ConstantOp(value, type)
    owner = result.owner
    assert isinstance(owner, Operation)
    Rewriter.insert_op(constant, InsertPoint.before(owner))
    result.replace_all_uses_with(constant.result)
    return constant.result
