"""Decomposition before refusal: an aten op with no converter is replaced, for that
node only, by torch's own decomposition of it (issue 22).

`decompose_graph` walks an exported graph; a `call_function` node whose target has no
converter (and is no in-place op the importer functionalizes) is re-traced with
`make_fx` on the node's own input metadata (its fake tensors: shapes, dtypes, symbolic
sizes), calling the op with torch's decomposition of it: the op's
CompositeImplicitAutograd kernel (what `torch.export` preserves: `reshape_as`,
`einsum`, `broadcast_to`, ...), or its entry in `torch._decomp`'s decomposition table
(`logsumexp`, `linalg_vector_norm`, `addcmul`, ...; torch._refs register there). Every
op the trace calls that has no converter either is decomposed the same way, inside the
same trace (recursively), or is a piece that stops it. A node whose trace has only ops
with converters is replaced by the trace's nodes (at the node's source line and module);
a node whose decomposition stops on a piece stays, and the importer's refusal names the
op, its decomposition and the pieces (`Decomposition.refusal`).

The original program is not modified: the importer walks the rewritten copy.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.utils._pytree as pytree
from torch.fx import Graph, GraphModule, Node

from qopt.frontend.mutation import mutated_argument

#: Node metadata the decomposed nodes inherit from the node they replace (locations).
INHERITED_META = ("stack_trace", "nn_module_stack", "source_fn_stack", "from_node")


@dataclass
class Decomposition:
    """What decomposing one op (target) did, for reports and refusals."""

    target: str
    source: str
    """Where the decomposition came from ("CompositeImplicitAutograd kernel",
    "torch._decomp table"), or "" when torch has none."""
    ops: list[str] = field(default_factory=list)
    """The ops of the trace (sorted, without `getitem`)."""
    missing: list[str] = field(default_factory=list)
    """The pieces of the trace that have no converter (empty: it imported)."""
    error: str = ""
    """Why the trace failed, if it did."""

    @property
    def imported(self) -> bool:
        return bool(self.source) and not self.missing and not self.error

    def refusal(self) -> str:
        """Why the op is still refused."""
        if not self.source:
            return "torch has no decomposition of it"
        if self.error:
            return f"its decomposition ({self.source}) does not trace: {self.error}"
        return (
            f"its decomposition ({self.source}) into {', '.join(self.ops)} stops at "
            f"{', '.join(repr(m) for m in self.missing)}, which has no rule"
        )


def has_cia_kernel(op: Any) -> bool:
    if not isinstance(op, torch._ops.OpOverload):
        return False
    return torch._C._dispatch_has_kernel_for_dispatch_key(
        op.name(), torch._C.DispatchKey.CompositeImplicitAutograd
    )


@functools.lru_cache(maxsize=8)
def _table_for(known: frozenset[str]) -> dict[Any, Callable[..., Any]]:
    """torch's decomposition table less the ops qopt converts itself (those stay)."""
    from torch._decomp import decomposition_table

    return {op: fn for op, fn in decomposition_table.items() if str(op) not in known}


def decomposition_source(op: Any, known: frozenset[str]) -> str:
    """Where torch decomposes `op` from ("" when it does not)."""
    if not isinstance(op, torch._ops.OpOverload) or str(op) in known:
        return ""
    if op in _table_for(known):
        return "torch._decomp table"
    if has_cia_kernel(op):
        return "CompositeImplicitAutograd kernel"
    return ""


def _needs_decomposition(node: Node, known: frozenset[str], dropped: Collection[str]) -> bool:
    if node.op != "call_function":
        return False
    target = str(node.target)
    if target in known or target in dropped:
        return False
    if mutated_argument(node) is not None:
        return False  # an in-place op: the importer functionalizes it, or refuses it
    return isinstance(node.target, torch._ops.OpOverload)


def trace_node(node: Node, known: frozenset[str]) -> tuple[GraphModule | None, Decomposition]:
    """`node`'s op traced through torch's decompositions, on its inputs' metadata."""
    op = node.target
    record = Decomposition(str(op), decomposition_source(op, known))
    if not record.source:
        return None, record
    leaves, spec = pytree.tree_flatten((node.args, node.kwargs))
    slots = [i for i, leaf in enumerate(leaves) if isinstance(leaf, Node)]
    values = [leaves[i].meta.get("val") for i in slots]
    if any(not isinstance(v, torch.Tensor | torch.SymInt | torch.SymFloat | torch.SymBool | int | float | bool) for v in values):
        record.error = "an input has no tensor metadata"
        return None, record

    def call(*inputs: Any) -> Any:
        filled = list(leaves)
        for slot, value in zip(slots, inputs, strict=True):
            filled[slot] = value
        args, kwargs = pytree.tree_unflatten(filled, spec)
        return op(*args, **kwargs)  # type: ignore[operator]

    from torch.fx.experimental.proxy_tensor import make_fx

    try:
        traced = make_fx(call, decomposition_table=_table_for(known), tracing_mode="fake")(*values)
    except Exception as e:  # torch's decomposition refusing these inputs
        record.error = f"{type(e).__name__}: {(str(e).strip().splitlines() or [''])[0][:160]}"
        return None, record
    ops: set[str] = set()
    missing: set[str] = set()
    for sub in traced.graph.nodes:
        if sub.op != "call_function":
            continue
        name = str(sub.target)
        if name == "<built-in function getitem>":
            continue
        ops.add(name)
        if name not in known:
            missing.add(name)
    record.ops, record.missing = sorted(ops), sorted(missing)
    return traced, record


def decompose_graph(
    graph: Graph, known: Collection[str], dropped: Collection[str] = ()
) -> tuple[Graph, dict[str, Decomposition]]:
    """`graph` with each node that has no converter (`known`) replaced by its
    decomposition where that imports; the original graph when no node needs one. The
    records: one per op tried, by target."""
    known = frozenset(known)
    records: dict[str, Decomposition] = {}
    traces: dict[Node, GraphModule] = {}
    for node in graph.nodes:
        if not _needs_decomposition(node, known, dropped):
            continue
        traced, record = trace_node(node, known)
        previous = records.get(record.target)
        if previous is None or previous.imported:
            records[record.target] = record  # a refusal of one node is what is reported
        if traced is not None and record.imported:
            traces[node] = traced
    if not traces:
        return graph, records
    return _rewritten(graph, traces), records


def _rewritten(graph: Graph, traces: Mapping[Node, GraphModule]) -> Graph:
    new = Graph()
    env: dict[Node, Any] = {}
    for node in graph.nodes:
        traced = traces.get(node)
        if traced is not None:
            env[node] = _splice(new, node, traced, env)
            continue
        if (
            node.op == "call_function"
            and str(node.target) == "<built-in function getitem>"
            and isinstance(node.args[0], Node)
            and node.args[0] in traces
        ):
            env[node] = env[node.args[0]][node.args[1]]
            continue
        env[node] = new.node_copy(node, lambda n: env[n])
    return new


def _splice(new: Graph, node: Node, traced: GraphModule, env: dict[Node, Any]) -> Any:
    """The trace's nodes appended to `new`, its placeholders bound to `node`'s inputs;
    what stands for `node`'s result (a node, or a tuple / list of them)."""
    leaves = pytree.tree_leaves((node.args, node.kwargs))
    inputs = [env[leaf] for leaf in leaves if isinstance(leaf, Node)]
    placeholders = [n for n in traced.graph.nodes if n.op == "placeholder"]
    val_map: dict[Node, Any] = dict(zip(placeholders, inputs, strict=True))
    for sub in traced.graph.nodes:
        if sub.op == "call_function":
            sub.name = f"{node.name}__{sub.name}"
            for key in INHERITED_META:
                if key in node.meta:
                    sub.meta[key] = node.meta[key]
    return new.graph_copy(traced.graph, val_map)
