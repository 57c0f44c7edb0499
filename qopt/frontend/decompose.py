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

from qopt.frontend.mutation import functional_target, mutated_argument

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


def _addbmm(
    self: torch.Tensor,
    batch1: torch.Tensor,
    batch2: torch.Tensor,
    *,
    beta: float = 1,
    alpha: float = 1,
) -> torch.Tensor:
    product = torch.bmm(batch1, batch2).sum(0)
    if alpha != 1:
        product = product * alpha
    if beta == 0:
        return product
    return (self * beta if beta != 1 else self) + product


def _cdist_forward(
    x1: torch.Tensor, x2: torch.Tensor, p: float, compute_mode: int | None = None
) -> torch.Tensor:
    difference = (x1.unsqueeze(-2) - x2.unsqueeze(-3)).abs()
    if p == 0:
        return (difference != 0).to(x1.dtype).sum(-1)
    if p == float("inf"):
        return difference.amax(-1)
    if p == 1:
        return difference.sum(-1)
    if p == 2:
        return difference.square().sum(-1).sqrt()
    return difference.pow(p).sum(-1).pow(1.0 / p)


PAIRS_LIMIT = 1 << 22
"""The most entries of the pairwise tensors qopt's O(n^2) definitions (cummax, scatter)
build; beyond it the definition refuses (a clean QoptError at import)."""

EXACT_POSITIONS = 2048
"""The longest dim whose positions these definitions count in float: float16 (CoreML's
default precision) holds every integer up to 2048."""


def _check_pairs(what: str, pairs: int, positions: int) -> None:
    if pairs > PAIRS_LIMIT or positions > EXACT_POSITIONS:
        raise ValueError(
            f"{what}: qopt's definition compares {pairs} pairs over {positions} positions, "
            f"more than {PAIRS_LIMIT} pairs or {EXACT_POSITIONS} positions"
        )


def _kth_position(
    self: torch.Tensor, position: torch.Tensor | int, dim: int, keepdim: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    """The entry at `position` of `self` sorted (stable, NaN last) along `dim`, and its
    index: `position` an int or a tensor of `self`'s shape with 1 along `dim`."""
    if self.dim() == 0:
        return self.clone(), torch.zeros((), dtype=torch.int64)
    values, indices = torch.sort(self, dim=dim, stable=True)
    if isinstance(position, int):
        value, index = values.narrow(dim, position, 1), indices.narrow(dim, position, 1)
    else:
        value, index = values.gather(dim, position), indices.gather(dim, position)
    if not keepdim:
        value, index = value.squeeze(dim), index.squeeze(dim)
    return value, index


def _kthvalue(
    self: torch.Tensor, k: int, dim: int = -1, keepdim: bool = False
) -> tuple[torch.Tensor, torch.Tensor]:
    """The k-th smallest entry along `dim` (NaN the largest) and its index: a stable
    sort's entry k - 1 (torch leaves the index among equal values unspecified)."""
    size = self.shape[dim] if self.dim() else 1
    if not 1 <= k <= size:
        raise ValueError(f"kthvalue: k = {k} is outside [1, {size}]")
    return _kth_position(self, k - 1, dim, keepdim)


def _median_dim(
    self: torch.Tensor, dim: int = -1, keepdim: bool = False
) -> tuple[torch.Tensor, torch.Tensor]:
    """torch's median along `dim`: the lower of the two middle entries ((n - 1) // 2
    of a stable sort), NaN (the first NaN, sorted last) where the slice has one."""
    if self.dim() == 0:
        return _kth_position(self, 0, dim, keepdim)
    n = self.shape[dim]
    if not self.is_floating_point():
        return _kth_position(self, (n - 1) // 2, dim, keepdim)
    nans = torch.isnan(self).sum(dim, keepdim=True)
    middle = torch.full_like(nans, (n - 1) // 2)
    position = torch.where(nans > 0, n - nans, middle)
    return _kth_position(self, position, dim, keepdim)


def _running_extreme(
    self: torch.Tensor, dim: int, largest: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    """Running maximum (minimum) along `dim` and the index of its latest occurrence
    (torch updates on `>=` (`<=`); a NaN becomes the extreme from there on, each later
    NaN its index): over the [n, n] pairs j <= i, O(n^2) in the dim."""
    if self.dim() == 0:
        return self.clone(), torch.zeros((), dtype=torch.int64)
    d = dim % self.dim()
    n = self.shape[d]
    _check_pairs("cummax/cummin", self.numel() * n, n)
    tail = [1] * (self.dim() - d - 1)
    i = torch.arange(n).view(n, 1, *tail)
    j = torch.arange(n).view(1, n, *tail)
    upto = j <= i
    xi, xj = self.unsqueeze(d + 1), self.unsqueeze(d)
    window = torch.where(upto, xj, xi)
    values = window.amax(d + 1) if largest else window.amin(d + 1)
    v = values.unsqueeze(d + 1)
    match = xj == v
    if self.is_floating_point():
        match = match | (torch.isnan(xj) & torch.isnan(v))
    where = torch.where(match & upto, j.to(torch.float32), -1.0)
    return values, where.amax(d + 1).to(torch.int64)


def _cummax(self: torch.Tensor, dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    return _running_extreme(self, dim, largest=True)


def _cummin(self: torch.Tensor, dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    return _running_extreme(self, dim, largest=False)


def _scatter_pairs(
    self: torch.Tensor, dim: int, index: torch.Tensor, src: torch.Tensor
) -> tuple[int, torch.Tensor, torch.Tensor, list[int]]:
    """scatter's one-hot form: `dim` made non-negative; `hits[.., p, q, ..]` (p the
    position along `dim` in `self`, q the index's) where `index[.., q, ..] == p`;
    `src` cut to the index's shape, with a dim of 1 at `dim`; the `F.pad` amounts that
    bring a result of the index's sizes in the other dims to `self`'s."""
    d = dim % self.dim()
    size = self.shape[d]
    _check_pairs("scatter", index.numel() * size, index.shape[d])
    tail = [1] * (self.dim() - d - 1)
    values = src
    for e in range(index.dim()):
        values = values.narrow(e, 0, index.shape[e])
    hits = index.unsqueeze(d) == torch.arange(size).view(size, 1, *tail)
    pad: list[int] = []
    for e in reversed(range(self.dim())):
        pad += [0, 0 if e == d else self.shape[e] - index.shape[e]]
    return d, hits, values.unsqueeze(d), pad


def _scatter_src(
    self: torch.Tensor, dim: int, index: torch.Tensor, src: torch.Tensor
) -> torch.Tensor:
    """`self` with `src[q]` written at `q` with `index[q]` in place of `q[dim]`, in
    one-hot form (O(size * index size) along `dim`): at each position the last write
    along `dim` wins (torch leaves the order of colliding writes unspecified; its CPU
    loop's is this one), where no write lands `self`."""
    if self.dim() == 0 or index.dim() == 0:
        return src.reshape(()).clone() if index.numel() else self.clone()
    d, hits, values, pad = _scatter_pairs(self, dim, index, src)
    q = index.shape[d]
    tail = [1] * (self.dim() - d - 1)
    order = torch.arange(q).view(1, q, *tail).to(torch.float32)
    last = torch.where(hits, order, -1.0).amax(d + 1, keepdim=True)
    chosen = hits & (order == last)
    zero = torch.zeros((), dtype=self.dtype)
    picked = torch.where(chosen, values, zero).sum(d + 1).to(self.dtype)
    written = (last.squeeze(d + 1) >= 0).to(torch.float32)
    if any(pad):
        picked = torch.nn.functional.pad(picked, pad)
        written = torch.nn.functional.pad(written, pad)
    return torch.where(written > 0, picked, self)


def _scatter_add(
    self: torch.Tensor, dim: int, index: torch.Tensor, src: torch.Tensor
) -> torch.Tensor:
    """`self` plus, at each position along `dim`, the sum of the `src` entries whose
    index names it, in one-hot form (O(size * index size) along `dim`), the sums
    padded to `self`'s shape where the index is smaller in the other dims."""
    if self.dim() == 0 or index.dim() == 0:
        return self + src.reshape(()) if index.numel() else self.clone()
    d, hits, values, pad = _scatter_pairs(self, dim, index, src)
    zero = torch.zeros((), dtype=self.dtype)
    sums = torch.where(hits, values, zero).sum(d + 1)
    if any(pad):
        sums = torch.nn.functional.pad(sums, pad)
    return self + sums.to(self.dtype)


def _bilinear(
    input1: torch.Tensor,
    input2: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None = None,
) -> torch.Tensor:
    """`y[.., o] = sum_ij x1[.., i] weight[o, i, j] x2[.., j] + bias[o]`: a matmul of
    x1 with each output's matrix, times x2, summed."""
    left = torch.matmul(input1.unsqueeze(-2).unsqueeze(-2), weight)  # [.., o, 1, j]
    y = (left.squeeze(-2) * input2.unsqueeze(-2)).sum(-1)
    return y + bias if bias is not None else y


def _avg_pool3d(
    self: torch.Tensor,
    kernel_size: list[int],
    stride: list[int] | None = None,
    padding: list[int] | int = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> torch.Tensor:
    """A 3-D box average as two 2-D ones: over (H, W), then over D (kernel (kD, 1)):
    the window, its padding, ceil_mode's last window and the divisor (the product of
    each dim's count) are each dim's own, so the average separates."""
    if divisor_override is not None:
        raise ValueError("avg_pool3d with divisor_override does not separate by dims")

    def three(v: list[int] | int | None, default: list[int]) -> list[int]:
        if v is None or (not isinstance(v, int) and len(v) == 0):
            return default
        return [v] * 3 if isinstance(v, int) else list(v) * (3 if len(v) == 1 else 1)

    kernel = three(kernel_size, [1, 1, 1])
    strides, pads = three(stride, kernel), three(padding, [0, 0, 0])
    lead = self.shape[:-4] if self.dim() == 5 else ()
    c, depth, h, w = self.shape[-4:]
    planes = self.reshape(-1, depth, h, w)
    flat = torch.nn.functional.avg_pool2d(
        planes, kernel[1:], strides[1:], pads[1:], ceil_mode, count_include_pad
    )
    h2, w2 = flat.shape[-2:]
    column = flat.reshape(-1, 1, depth, h2 * w2)
    pooled = torch.nn.functional.avg_pool2d(
        column, [kernel[0], 1], [strides[0], 1], [pads[0], 0], ceil_mode, count_include_pad
    )
    return pooled.reshape(*lead, c, pooled.shape[-2], h2, w2)


def _im2col(
    self: torch.Tensor,
    kernel_size: list[int],
    dilation: list[int],
    padding: list[int],
    stride: list[int],
) -> torch.Tensor:
    """`F.unfold`: the [N, C * kh * kw, L] sliding blocks, in tensors of rank 5 at most
    (torch's decomposition indexes a rank-6 [N, C, kh, oh, kw, ow] at once; Core ML
    tensors have rank 5 or less): the padded rows at `a * stride + i * dilation`
    (an index_select of [kh * oh] rows), then its columns the same way, each index
    flattened, and one transpose of (oh, kw) on [N, C * kh, oh, kw, ow]."""
    batched = self.dim() == 4
    x = self if batched else self.unsqueeze(0)
    (kh, kw), (dh, dw), (ph, pw), (sh, sw) = kernel_size, dilation, padding, stride
    if ph or pw:
        x = torch.nn.functional.pad(x, [pw, pw, ph, ph])
    n, c, h, w = x.shape
    oh = (h - dh * (kh - 1) - 1) // sh + 1
    ow = (w - dw * (kw - 1) - 1) // sw + 1
    rows = (torch.arange(kh) * dh).unsqueeze(1) + (torch.arange(oh) * sh).unsqueeze(0)
    cols = (torch.arange(kw) * dw).unsqueeze(1) + (torch.arange(ow) * sw).unsqueeze(0)
    x = torch.index_select(x, 2, rows.reshape(-1))  # [n, c, kh * oh, w]
    x = torch.index_select(x, 3, cols.reshape(-1))  # [n, c, kh * oh, kw * ow]
    x = x.reshape(n, c * kh, oh, kw, ow).permute(0, 1, 3, 2, 4)
    y = x.reshape(n, c * kh * kw, oh * ow)
    return y if batched else y.squeeze(0)


EXTRA_DECOMPOSITIONS: dict[Any, Callable[..., Any]] = {
    torch.ops.aten.addbmm.default: _addbmm,
    torch.ops.aten._cdist_forward.default: _cdist_forward,
    torch.ops.aten.kthvalue.default: _kthvalue,
    torch.ops.aten.median.dim: _median_dim,
    torch.ops.aten.cummax.default: _cummax,
    torch.ops.aten.cummin.default: _cummin,
    torch.ops.aten.scatter.src: _scatter_src,
    torch.ops.aten.scatter_add.default: _scatter_add,
    torch.ops.aten.bilinear.default: _bilinear,
    torch.ops.aten.avg_pool3d.default: _avg_pool3d,
    torch.ops.aten.im2col.default: _im2col,
}
"""Definitions of ops torch has no decomposition for, in torch ops (torch's own
formulas from its documentation): traced like torch's; and of ops whose torch
decomposition needs tensors of rank > 5 (`im2col`), which replace it."""


@functools.lru_cache(maxsize=8)
def _table_for(known: frozenset[str]) -> dict[Any, Callable[..., Any]]:
    """torch's decomposition table (and EXTRA_DECOMPOSITIONS) less the ops qopt
    converts itself (those stay)."""
    from torch._decomp import decomposition_table

    table = {**decomposition_table, **EXTRA_DECOMPOSITIONS}
    return {op: fn for op, fn in table.items() if str(op) not in known}


def decomposition_source(op: Any, known: frozenset[str]) -> str:
    """Where torch decomposes `op` from ("" when it does not)."""
    if not isinstance(op, torch._ops.OpOverload) or str(op) in known:
        return ""
    if op in EXTRA_DECOMPOSITIONS:
        return "qopt's definition"
    if op in _table_for(known):
        return "torch._decomp table"
    if has_cia_kernel(op):
        return "CompositeImplicitAutograd kernel"
    return ""


def _importable(node: Node, known: frozenset[str]) -> bool:
    """Whether the importer converts `node`: a converter for its op, or an in-place op
    whose functional op has one (the importer functionalizes it), or `copy_`."""
    target = str(node.target)
    if target in known:
        return True
    if mutated_argument(node) not in (None, "*"):
        return target == "aten.copy_.default" or functional_target(target) in known
    return False


def _needs_decomposition(
    node: Node,
    converters: Mapping[str, Any],
    dropped: Collection[str],
) -> bool:
    if node.op != "call_function":
        return False
    target = str(node.target)
    if target in dropped:
        return False
    converter = converters.get(target)
    if converter is not None:
        # a converter that takes only some forms of its op (`handles`): the others
        # are decomposed
        handles = getattr(converter, "handles", None)
        return (
            handles is not None
            and not handles(node)
            and bool(decomposition_source(node.target, frozenset()))
        )
    if mutated_argument(node) is not None:
        return False  # an in-place op: the importer functionalizes it, or refuses it
    return isinstance(node.target, torch._ops.OpOverload)


def trace_node(node: Node, known: frozenset[str]) -> tuple[GraphModule | None, Decomposition]:
    """`node`'s op traced through torch's decompositions, on its inputs' metadata."""
    op: Any = node.target
    record = Decomposition(str(op), decomposition_source(op, known))
    if not record.source:
        return None, record
    leaves, spec = pytree.tree_flatten((node.args, node.kwargs))
    slots = [i for i, leaf in enumerate(leaves) if isinstance(leaf, Node)]
    values = [leaves[i].meta.get("val") for i in slots]
    if any(
        not isinstance(
            v, torch.Tensor | torch.SymInt | torch.SymFloat | torch.SymBool | int | float | bool
        )
        for v in values
    ):
        record.error = "an input has no tensor metadata"
        return None, record

    def call(*inputs: Any) -> Any:
        filled = list(leaves)
        for slot, value in zip(slots, inputs, strict=True):
            filled[slot] = value
        args, kwargs = pytree.tree_unflatten(filled, spec)
        # qopt's definition called itself: a CompositeImplicitAutograd op would be
        # decomposed by its kernel before the table is consulted
        definition = EXTRA_DECOMPOSITIONS.get(op)
        return (definition or op)(*args, **kwargs)  # type: ignore[operator]

    from torch.fx.experimental.proxy_tensor import make_fx

    try:
        traced = make_fx(call, decomposition_table=_table_for(known), tracing_mode="fake")(*values)
    except Exception as e:  # torch's decomposition refusing these inputs
        record.error = f"{type(e).__name__}: {(str(e).strip().splitlines() or [''])[0][:160]}"
        return None, record
    prims_to_aten(traced.graph, known)
    ops: set[str] = set()
    missing: set[str] = set()
    for sub in traced.graph.nodes:
        if sub.op != "call_function":
            continue
        name = str(sub.target)
        if name == "<built-in function getitem>":
            continue
        ops.add(name)
        if not _importable(sub, known):
            missing.add(name)
    record.ops, record.missing = sorted(ops), sorted(missing)
    return traced, record


def decompose_graph(
    graph: Graph, known: Mapping[str, Any] | Collection[str], dropped: Collection[str] = ()
) -> tuple[Graph, dict[str, Decomposition]]:
    """`graph` with each node that has no converter (`known`: the converters by
    target, or their targets) replaced by its decomposition where that imports (and
    each node whose converter's `handles(node)` is false, where torch decomposes its
    op); the original graph when no node needs one. The records: one per op tried, by
    target."""
    converters = known if isinstance(known, Mapping) else dict.fromkeys(known)
    records: dict[str, Decomposition] = {}
    traces: dict[Node, GraphModule] = {}
    for node in graph.nodes:
        if not _needs_decomposition(node, converters, dropped):
            continue
        # a form its converter refuses: decomposed with that op's converter set aside
        own = frozenset(converters) - {str(node.target)}
        traced, record = trace_node(node, own)
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


# ----- torch's primitives as aten ops ----------------------------------------------------------
#
# torch._refs (registered in torch._decomp's table) decompose into `prims.*` ops. Each
# prim used here has an aten op of the same definition, which qopt converts.

_BINARY_PRIMS = (
    "add", "sub", "mul", "maximum", "minimum", "bitwise_and", "bitwise_or", "bitwise_xor",
    "eq", "ne", "lt", "le", "gt", "ge", "atan2", "pow", "fmod", "remainder",
)  # fmt: skip
_UNARY_PRIMS = (
    "neg", "abs", "exp", "log", "sqrt", "rsqrt", "sin", "cos", "tan", "tanh", "floor",
    "ceil", "trunc", "sign", "reciprocal", "erf", "log1p", "expm1", "log2", "asin", "acos",
    "atan", "sinh", "cosh", "bitwise_not", "round",
)  # fmt: skip


def _aten(name: str, overload: str) -> Any:
    return getattr(getattr(torch.ops.aten, name), overload)


def _val(arg: Any) -> Any:
    return arg.meta.get("val") if isinstance(arg, Node) else arg


def _emit(
    graph: Graph, like: Node, target: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Node:
    """A node of `target` before `like`, with its result's metadata (computed on the
    inputs' fake tensors) and `like`'s location."""
    with graph.inserting_before(like):
        node = graph.call_function(target, args, kwargs)
    vals = pytree.tree_map(_val, (args, kwargs))
    node.meta["val"] = target(*vals[0], **vals[1])
    for key in INHERITED_META:
        if key in like.meta:
            node.meta[key] = like.meta[key]
    return node


def _prim_replacement(graph: Graph, node: Node) -> Node | None:
    namespace, name, _ = str(node.target).split(".", 2)
    args: tuple[Any, ...] = tuple(node.args)
    kwargs: dict[str, Any] = dict(node.kwargs)
    if namespace != "prims":
        return None
    if name in _BINARY_PRIMS and len(args) == 2:
        return _emit(graph, node, _aten(name, "Tensor"), args, {})
    if name in _UNARY_PRIMS and len(args) == 1:
        return _emit(graph, node, _aten(name, "default"), args, {})
    if name == "exp2":
        return _emit(graph, node, torch.ops.aten.pow.Scalar, (2.0, args[0]), {})
    if name == "div":
        value = _val(node)
        if isinstance(value, torch.Tensor) and not value.dtype.is_floating_point:
            return _emit(
                graph, node, torch.ops.aten.div.Tensor_mode, args, {"rounding_mode": "trunc"}
            )
        return _emit(graph, node, torch.ops.aten.div.Tensor, args, {})
    if name == "where":
        return _emit(graph, node, torch.ops.aten.where.self, args, {})
    if name == "convert_element_type":
        return _emit(graph, node, torch.ops.aten._to_copy.default, args[:1], {"dtype": args[1]})
    if name in ("sum", "amax", "amin", "var", "prod"):
        x, dims = args[0], list(args[1]) if args[1] is not None else None
        dtype = kwargs.get("output_dtype")
        if name == "sum":
            return _emit(
                graph,
                node,
                torch.ops.aten.sum.dim_IntList,
                (x, dims),
                {"dtype": dtype} if dtype else {},
            )
        if name in ("amax", "amin"):
            return _emit(graph, node, _aten(name, "default"), (x, dims or []), {})
        if name == "var":
            correction = kwargs.get("correction", args[2] if len(args) > 2 else 1)
            return _emit(
                graph, node, torch.ops.aten.var.correction, (x, dims), {"correction": correction}
            )
        result = x  # prod: one dim at a time, the highest first
        rank = _val(x).dim()
        for dim in sorted(
            (d % rank for d in (dims if dims is not None else range(rank))), reverse=True
        ):
            result = _emit(graph, node, torch.ops.aten.prod.dim_int, (result, dim), {})
        return result
    if name == "broadcast_in_dim":
        x, shape, kept = args[0], list(args[1]), list(args[2])
        source = list(_val(x).shape)
        view = [source[kept.index(i)] if i in kept else 1 for i in range(len(shape))]
        viewed = _emit(graph, node, torch.ops.aten.view.default, (x, view), {})
        return _emit(graph, node, torch.ops.aten.expand.default, (viewed, shape), {})
    if name == "squeeze":
        return _emit(graph, node, torch.ops.aten.squeeze.dims, (args[0], list(args[1])), {})
    return None


def prims_to_aten(graph: Graph, known: frozenset[str]) -> None:
    """Replace in `graph` each `prims.*` node with its aten equivalent, and each
    `aten.<op>.Scalar` without a converter with `aten.<op>.Tensor` (the same op with
    the scalar as a 0-d operand) where that has one."""
    for node in list(graph.nodes):
        if node.op != "call_function" or str(node.target) in known:
            continue
        target = str(node.target)
        new: Node | None = None
        if target.startswith("prims."):
            try:
                new = _prim_replacement(graph, node)
            except Exception:  # a form of the prim this table does not know: stays
                new = None
        elif target.startswith("aten.") and target.endswith(".Scalar"):
            packet = getattr(torch.ops.aten, target.split(".")[1], None)
            tensor = getattr(packet, "Tensor", None) if packet is not None else None
            if tensor is not None and str(tensor) in known:
                try:
                    new = _emit(graph, node, tensor, tuple(node.args), dict(node.kwargs))
                except Exception:  # the Tensor overload does not take these arguments
                    new = None
        if new is not None:
            node.replace_all_uses_with(new)
            graph.erase_node(node)
