"""Size variants by name: a method compiled at several sizes of its dynamic dims is
the functions `<method>__<size>` (one size per symbol, in symbol-name order, joined
by `_`: `prefill__5`). A call of `<method>` runs the variant whose argument shapes
are the inputs' (`pick_function`); `logical_methods` lists `<method>` once.

Plain string and shape logic (no IR): the reference session, the Vulkan runtime and
a loaded `.qvk` use it without the IR (qopt/dialects/signature.py re-exports it for
the IR side).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from qopt.errors import QoptError

_VARIANT = re.compile(r"(?P<method>[A-Za-z_]\w*?)__(?P<sizes>\d+(?:_\d+)*)")


def variant_name(method: str, sizes: Sequence[int]) -> str:
    """The function of `method` at `sizes` (one per symbol, in symbol-name order)."""
    return f"{method}__{'_'.join(str(int(s)) for s in sizes)}"


def variant_of(name: str, names: Sequence[str]) -> str | None:
    """The method a function named `name` is a size variant of (None if `name` is
    no variant, or a function of that method's own name exists)."""
    match = _VARIANT.fullmatch(name)
    if match is None or match["method"] in names:
        return None
    return match["method"]


def variant_sizes(method: str, names: Sequence[str]) -> list[tuple[int, ...]]:
    """The sizes `method` was compiled at (one tuple per variant, sorted); [] when it
    has no size variants."""
    return sorted(
        tuple(int(x) for x in n.rsplit("__", 1)[1].split("_"))
        for n in names
        if variant_of(n, names) == method
    )


def logical_methods(names: Sequence[str]) -> list[str]:
    """The methods of a program with functions `names`: the size variants of one
    method listed once under its name, in order of first appearance."""
    out: list[str] = []
    for name in names:
        method = variant_of(name, names) or name
        if method not in out:
            out.append(method)
    return out


def pick_function(
    method: str,
    names: Sequence[str],
    arg_shapes: Callable[[str], Sequence[Sequence[int]]],
    shapes: Sequence[Sequence[int]],
) -> str:
    """The function a call of `method` with inputs of `shapes` runs: `method` itself,
    or its size variant whose argument shapes (`arg_shapes(name)`, -1 a dynamic dim)
    are the inputs'. A QoptError lists the sizes compiled when none is."""
    if method in names:
        return method
    variants = [n for n in names if variant_of(n, names) == method]
    if not variants:
        raise QoptError(
            f"the program has no method {method!r} (its methods: "
            f"{', '.join(logical_methods(names))})"
        )

    def fits(name: str) -> bool:
        expected = arg_shapes(name)
        return len(expected) == len(shapes) and all(
            len(e) == len(g) and all(a < 0 or a == b for a, b in zip(e, g, strict=True))
            for e, g in zip(expected, shapes, strict=True)
        )

    for name in variants:
        if fits(name):
            return name
    sizes = ", ".join("x".join(str(d) for d in s) for s in variant_sizes(method, names))
    got = ", ".join("x".join(str(d) for d in shape) or "scalar" for shape in shapes)
    raise QoptError(
        f"method {method!r} was compiled for the sizes {sizes} of its dynamic dims, not "
        f"for inputs of shapes {got}: compile it with those sizes (qopt.compile(..., "
        "dynamic_sizes=[...]))"
    )


__all__ = [
    "logical_methods",
    "pick_function",
    "variant_name",
    "variant_of",
    "variant_sizes",
]
