"""`vkc-fuse-row-quant`: a dynamic per-row quantization in the kernel that wrote its input.

Runs on vkc IR before buffers are planned, after `vkc-merge-siblings` (which leaves one
`quantize_rows_dynamic` per x where linears reading the same x had one each). An 8da4w
linear's input is quantized per token by a `quantize_rows_dynamic` dispatch Q reading
a y that an RMSNorm (`rms_norm_rows`, from `vkc-fuse-norms`) N wrote just before; this
pass puts Q into N: one `rms_norm_rows` with `QUANT = 1` at N's place that also writes
Q's scale, zero point and int8 rows (y itself still written, for any other reader).

Safe means: y is a transient buffer written by N alone, which Q reads whole (the same
rows and cols, no view); Q's outputs are transient buffers, distinct, written by Q
alone and used by no op before Q (so writing them at N's place instead changes nothing
anyone reads). The kernel quantizes the y words it wrote with the same f32 operations
as quantize_rows_dynamic (see rms_norm_rows.glsl), so the program computes bit for bit
what it did.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block
from xdsl.passes import ModulePass

from qopt.dialects import vkc
from qopt.lowering.vkc_rewrite import (
    KernelSymbols,
    buffer_uses,
    dispatch_writes,
    erase_dispatch,
    make_dispatch,
    rewrite_functions,
)


class _Fuser:
    def __init__(self, module: ModuleOp, block: Block):
        self.block = block
        self.symbols = KernelSymbols(module)
        self.fused = 0

    def run(self) -> int:
        for op in list(self.block.ops):
            if (
                op.parent is self.block
                and isinstance(op, vkc.DispatchOp)
                and op.kernel_op().kernel.data == "quantize_rows_dynamic"
            ):
                self._norm_quantize(op)
        return self.fused

    def _norm_quantize(self, quantize: vkc.DispatchOp) -> bool:
        """A quantize_rows_dynamic Q of the y an rms_norm_rows N (QUANT = 0) wrote: one
        rms_norm_rows with QUANT = 1 at N's place (y still written), when y is a
        transient buffer written by N alone, Q reads it whole (the same rows and cols),
        and Q's outputs are transient buffers written by Q alone and used by nothing
        before Q (so writing them earlier, at N, changes nothing)."""
        x = quantize.buffers[0]
        owner = x.owner
        if not isinstance(owner, vkc.AllocOp) or owner.is_status:
            return False
        writers = [
            user
            for user, index in buffer_uses(x)
            if isinstance(user, vkc.DispatchOp) and user.kernel_op().bindings.data[index].writes
        ]
        if len(set(writers)) != 1:
            return False
        norm = writers[0]
        if norm.parent is not self.block or norm.kernel_op().kernel.data != "rms_norm_rows":
            return False
        spec = norm.kernel_op().spec_values()
        if (
            spec.get("QUANT", 0) != 0
            or norm.buffers[4] is not x
            or dispatch_writes(norm) & {vkc.root_buffer(v) for v in quantize.buffers[1:]}
        ):
            return False
        push, q_push = norm.push_values(), quantize.push_values()
        if (push["rows"], push["cols"]) != (q_push["rows"], q_push["cols"]):
            return False
        order = {op: k for k, op in enumerate(self.block.ops)}
        outputs = [vkc.root_buffer(v) for v in quantize.buffers[1:]]
        if len(set(outputs)) != len(outputs) or x in outputs:
            return False
        for root in outputs:
            root_owner = root.owner
            if not isinstance(root_owner, vkc.AllocOp) or root_owner.is_status:
                return False
            for user, index in buffer_uses(root):
                if user is quantize:
                    continue
                if user.parent is not self.block or order[user] < order[quantize]:
                    return False
                if (
                    isinstance(user, vkc.DispatchOp)
                    and user.kernel_op().bindings.data[index].writes
                ):
                    return False
        if order[norm] > order[quantize]:
            return False
        q_spec = quantize.kernel_op().spec_values()
        new = make_dispatch(
            self.symbols,
            "rms_norm_rows",
            {
                "HAS_ADD": spec.get("HAS_ADD", 0),
                "HAS_H": spec.get("HAS_H", 0),
                "QUANT": 1,
                "MAPPING": q_spec.get("MAPPING", 0),
                "ZP_BEFORE_ROUND": q_spec.get("ZP_BEFORE_ROUND", 0),
            },
            [*norm.buffers[:5], *quantize.buffers[1:]],
            {
                **push,
                "qmin": q_push["qmin"],
                "qmax": q_push["qmax"],
                "q_eps": q_push["eps"],
                "q_qmin": q_push["q_qmin"],
                "q_qmax": q_push["q_qmax"],
            },
            norm,
        )
        for root in outputs:  # Q's allocs, defined before their new writer
            alloc = root.owner
            assert isinstance(alloc, vkc.AllocOp)
            if order[alloc] > order[norm]:
                alloc.detach()
                self.block.insert_op_before(alloc, norm)
        self.block.insert_op_before(new, norm)
        erase_dispatch(quantize)
        erase_dispatch(norm)
        self.fused += 1
        return True


def fuse_function(module: ModuleOp, function: func.FuncOp) -> int:
    """Fuse `function`'s row quantizations (module docstring); returns how many."""
    return _Fuser(module, function.body.block).run()


@dataclass(frozen=True)
class VkcFuseRowQuantPass(ModulePass):
    """A dynamic per-row quantization in the RMSNorm that wrote its input (module
    docstring)."""

    name = "vkc-fuse-row-quant"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        rewrite_functions(op, fuse_function)


__all__ = ["VkcFuseRowQuantPass", "fuse_function"]
