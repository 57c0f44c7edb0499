"""Functionalization of exported graphs: in-place ops, views they write through,
and the buffers they mutate (state).

torch 2.13's `torch.export` keeps in-place ops (`index_put_`, `index_copy_`,
`copy_`, `add_` ...) in the graph, and `run_decompositions` (which would
functionalize them) fails on some real graphs; qopt functionalizes them itself,
while importing, the way torch's functionalization does:

- an in-place op computes its functional op (`add_` -> `add`) and the result
  becomes the new value of the tensor it writes (`self`);
- `self` may be a view (`slice`, `select`, `narrow`, `view`, `transpose` ...) of a
  base tensor: the new value is written back into the base through the inverse of
  each view (`slice_scatter`, `select_scatter`, a reshape or permutation back);
- every view of a base that was written since the view was taken is recomputed
  from the base's new value when it is read (aliasing, as in eager);
- a base that is a buffer (or a lifted constant: torch lifts some buffers, e.g.
  transformers' static KV cache, as constants) is program state: an
  `ml_program.global` read at the start of the call and stored at its end (see
  `qopt.dialects.ml_program`); a mutated user input is an error (no target can
  express it, and CoreML's converter refuses it too).

The functional form torch gives after `run_decompositions` (BUFFER_MUTATION
outputs) imports into the same state ops.
"""

from __future__ import annotations

from typing import Any

from torch.fx import Node

#: Ops whose result is a view of (aliases) their first argument: a write through
#: the result writes the base. `to` / `type_as` alias only when they change nothing
#: (`aliases`).
VIEW_TARGETS = frozenset(
    {
        "aten.view.default",
        "aten.reshape.default",
        "aten._unsafe_view.default",
        "aten.view_as.default",
        "aten.flatten.using_ints",
        "aten.unflatten.int",
        "aten.unsqueeze.default",
        "aten.squeeze.default",
        "aten.squeeze.dim",
        "aten.squeeze.dims",
        "aten.permute.default",
        "aten.transpose.int",
        "aten.t.default",
        "aten.numpy_T.default",
        "aten.mT.default",
        "aten.mH.default",
        "aten.adjoint.default",
        "aten.matrix_H.default",
        "aten.slice.Tensor",
        "aten.select.int",
        "aten.narrow.default",
        "aten.expand.default",
        "aten.alias.default",
        "aten.detach.default",
        "aten.to.dtype",
        "aten.to.dtype_layout",
        "aten.to.device",
    }
)

#: Views that change no element's place: writing through them writes the base
#: element for element.
IDENTITY_VIEWS = frozenset(
    {"aten.alias.default", "aten.detach.default", "aten.to.dtype", "aten.to.dtype_layout",
     "aten.to.device"}
)  # fmt: skip

#: Views that permute dims: the base's new value is the written value permuted back.
TRANSPOSE_VIEWS = frozenset(
    {
        "aten.transpose.int",
        "aten.t.default",
        "aten.permute.default",
        "aten.numpy_T.default",
        "aten.mT.default",
        "aten.mH.default",
        "aten.adjoint.default",
        "aten.matrix_H.default",
    }
)

#: Views that only reshape: the base's new value is the written value reshaped back.
RESHAPE_VIEWS = frozenset(
    {
        "aten.view.default",
        "aten.reshape.default",
        "aten._unsafe_view.default",
        "aten.view_as.default",
        "aten.flatten.using_ints",
        "aten.unflatten.int",
        "aten.unsqueeze.default",
        "aten.squeeze.default",
        "aten.squeeze.dim",
        "aten.squeeze.dims",
    }
)


def _meta(node: Any) -> Any:
    return node.meta.get("val") if isinstance(node, Node) else None


def is_view(node: Node) -> bool:
    """Whether `node`'s result aliases its first argument."""
    target = str(node.target)
    if target not in VIEW_TARGETS or not node.args or not isinstance(node.args[0], Node):
        return False
    if target.startswith("aten.to."):
        source, result = _meta(node.args[0]), _meta(node)
        if node.kwargs.get("copy") or source is None or result is None:
            return False
        return getattr(source, "dtype", None) == getattr(result, "dtype", None)
    return True


def mutated_argument(node: Node) -> str | None:
    """The name of the argument an in-place op writes (`self`), None for a
    functional op. An op writing several arguments (`out=` variants) gives '*'."""
    schema = getattr(node.target, "_schema", None)
    if schema is None or not schema.is_mutable:
        return None
    written = [
        a.name for a in schema.arguments if a.alias_info is not None and a.alias_info.is_write
    ]
    if len(written) != 1:
        return "*"
    return written[0]


def functional_target(target: str) -> str:
    """`aten.add_.Tensor` -> `aten.add.Tensor` (torch's naming of in-place ops)."""
    namespace, name, overload = target.split(".", 2)
    return f"{namespace}.{name.removesuffix('_')}.{overload}"
