"""convert-to-vkc rules of program state: `ml_program.global_load` / `global_store`.

Every global a function reads or writes is one device buffer, `vkc.state @name`
(`Lowering.state_buffer`), which lives on the device for a whole session; a call
never uploads or downloads it. How each global's load and store lower:

- A load is the state buffer itself (no copy): dispatches read it where they read the
  loaded value.
- The in-place update (`plan_in_place`): when the function loads the global once and
  the stored value comes from that load through a chain of index_put / index_copy
  ops (a KV-cache write: `%c = global_load @k; %u = index_put(%c, pos, v); ...;
  global_store @k = %u`) in which every value but the last has no other use, each of
  those ops is a `scatter_dim` straight into the state buffer, every use of the
  stored value reads the state buffer, and the store is nothing: a call writes S rows
  of the cache, never copies it.
- Any other store is a copy of the stored value into the state buffer, placed after
  every other dispatch of the function (`finish`), so every read of the state's old
  value (through the load, or views of it) comes first. A result returned from a
  state buffer that such a copy overwrites, or a stored value that is another
  overwritten state, is copied aside before the copies.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import Block, Operation, SSAValue

from qopt.dialects import ml_program as mlp
from qopt.dialects import vkc
from qopt.dialects.aten import indexing as ix
from qopt.lowering.convert_to_vkc.lowering import Buf, Lowering, RuleTable, copy_strided, row_major
from qopt.lowering.convert_to_vkc.views import scatter_form

RULES = RuleTable()


@RULES(mlp.GlobalLoadOp)
def lower_global_load(lw: Lowering, op: mlp.GlobalLoadOp) -> Sequence[Buf]:
    return [lw.state_buffer(op.global_name.string_value())]


@RULES(mlp.GlobalStoreOp)
def lower_global_store(lw: Lowering, op: mlp.GlobalStoreOp) -> Sequence[Buf]:
    name = op.global_name.string_value()
    state = lw.state_buffer(name)
    if vkc.root_buffer(lw.buffer(op.value).value) is not state.value:
        lw.stores.append((name, op.value, op))
    return []


def plan_in_place(block: Block) -> set[Operation]:
    """The index_put / index_copy ops of `block` (a function body) that update their
    global's state buffer in place (see the module docstring)."""
    loads: dict[str, list[mlp.GlobalLoadOp]] = {}
    stores: list[mlp.GlobalStoreOp] = []
    for op in block.ops:
        if isinstance(op, mlp.GlobalLoadOp):
            loads.setdefault(op.global_name.string_value(), []).append(op)
        elif isinstance(op, mlp.GlobalStoreOp):
            stores.append(op)
    chosen: set[Operation] = set()
    for store in stores:
        found = loads.get(store.global_name.string_value(), [])
        if len(found) != 1:
            continue
        chain = _chain(store.value, found[0])
        if chain is not None:
            chosen.update(chain)
    return chosen


def _chain(value: SSAValue, load: mlp.GlobalLoadOp) -> list[Operation] | None:
    """The scatters from `load` to `value` (each one's self the previous one's result,
    used by nothing else), or None when `value` is not reached that way."""
    chain: list[Operation] = []
    while value is not load.result:
        owner = value.owner
        if not isinstance(owner, ix.IndexPutOp | ix.IndexCopyOp) or scatter_form(owner):
            return None
        chain.append(owner)
        value = owner.input
        if not value.has_one_use():
            return None
    return chain


def finish(lw: Lowering, outputs: list[Buf]) -> list[Buf]:
    """Emit the function's deferred state writes (`Lowering.stores`) after its other
    dispatches; returns `outputs` with every result a write would overwrite copied
    aside first."""
    written = {lw.state_buffers[name].value for name, _, _ in lw.stores}

    def aside(buf: Buf) -> Buf:
        if vkc.root_buffer(buf.value) not in written:
            return buf
        return copy_strided(lw, buf, buf.shape, row_major(buf.shape))

    outputs = [aside(buf) for buf in outputs]
    sources: list[Buf] = []
    for _, value, store in lw.stores:
        lw.current = store
        sources.append(aside(lw.buffer(value)))
    for (name, _, store), source in zip(lw.stores, sources, strict=True):
        lw.current = store
        state = lw.state_buffers[name]
        copy_strided(lw, source, state.shape, row_major(state.shape), 0, state)
    return outputs


__all__ = ["RULES", "finish", "plan_in_place"]
