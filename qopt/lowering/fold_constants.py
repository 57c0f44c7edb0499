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
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeGuard

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
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

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


def _constant(op: Operation) -> TypeGuard[ConstantOp]:
    return isinstance(op, ConstantOp) and isinstance(
        op.value, DenseIntOrFPElementsAttr | DenseResourceAttr
    )


@dataclass(frozen=True)
class FoldConstantsPass(ModulePass):
    """Replace input-independent aten ops by constants (see the module docstring)."""

    name = "fold-constants"

    max_elements: int = 1 << 16
    """Largest result (in elements) that is folded into the IR."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        require_weights(op, self.name)
        # single ops of the module's dialects only: no func table, no other target's
        interpreter = make_interpreter(op, calls=False, dialects=dialects_of(op))
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
            try:
                with np.errstate(all="ignore"):  # the interpreter's semantics define inf/NaN
                    values = interpreter.run_op(
                        candidate, tuple(known[v] for v in candidate.operands)
                    )
            except QoptError:
                raise
            except (ValueError, TypeError, IndexError, ArithmeticError) as error:
                raise QoptError(
                    f"fold-constants: {where(candidate)}: evaluating '{candidate.name}' failed "
                    f"({type(error).__name__}: {error}); run the verifier on the input"
                ) from error
            for result, value in zip(candidate.results, values, strict=True):
                array = np.asarray(value)
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
