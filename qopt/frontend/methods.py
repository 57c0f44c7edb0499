"""Size variants and several methods in one module: the sizes a static target compiles
a Dim-exported method at (`enumerate_sizes`), and the import of several exported
programs (an LLM's `prefill` and `decode`, or one program at each size) as the
functions of one module sharing their weights and states (`import_methods`).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from torch.export import ExportedProgram
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    DenseResourceAttr,
    ModuleOp,
)
from xdsl.ir import Operation
from xdsl.utils.exceptions import VerifyException

from qopt.dialects.ml_program import GlobalOp
from qopt.errors import QoptError
from qopt.frontend.importer import Converter, Importer
from qopt.resources import WeightStore, attach, dense_array, resource_array

ALL_SIZES_UP_TO = 16
"""A Dim of at most this many sizes is compiled at each; a wider one at its min,
its max and the powers of two between (`enumerate_sizes`)."""
MAX_VARIANTS = 64
"""The most size variants one method compiles to."""


def enumerate_sizes(
    method: str, dims: Mapping[str, tuple[int, int]], requested: Any = None
) -> list[dict[str, int]]:
    """The size variants a static target compiles `method` at: for each Dim symbol
    (`dims`: symbol -> range), the sizes `requested` gives (a list for a method with
    one Dim, or a dict by symbol name), else every size of a Dim of at most
    ALL_SIZES_UP_TO sizes, else its min, max and the powers of two between; their
    combinations, in symbol-name order."""
    symbols = sorted(dims)
    chosen: list[list[int]] = []
    for symbol in symbols:
        low, high = dims[symbol]
        if requested is None:
            sizes = (
                list(range(low, high + 1))
                if high - low < ALL_SIZES_UP_TO
                else sorted(
                    {
                        low,
                        high,
                        *(1 << i for i in range(high.bit_length()) if low <= 1 << i <= high),
                    }
                )
            )
        else:
            given = requested.get(symbol) if isinstance(requested, Mapping) else requested
            if isinstance(requested, Mapping) and given is None:
                raise QoptError(
                    f"dynamic_sizes has no sizes for {symbol} (range [{low}, {high}]) of "
                    f"method {method!r}: give {{{', '.join(repr(x) for x in symbols)}: [...]}}"
                )
            if isinstance(requested, Mapping) and len(requested) and len(symbols) > 0:
                extra = sorted(set(requested) - set(symbols))
                if extra:
                    raise QoptError(
                        f"dynamic_sizes names {', '.join(extra)}, not a dynamic dim of method "
                        f"{method!r} (its Dims: {', '.join(symbols)})"
                    )
            elif len(symbols) > 1:
                raise QoptError(
                    f"method {method!r} has {len(symbols)} dynamic dims ({', '.join(symbols)}): "
                    "give dynamic_sizes as a dict {symbol: [sizes]}"
                )
            if isinstance(given, int) or not isinstance(given, Sequence) or not given:
                raise QoptError(
                    f"dynamic_sizes for {symbol} must be a non-empty list of ints, got {given!r}"
                )
            sizes = sorted({int(x) for x in given})
            outside = [x for x in sizes if not low <= x <= high]
            if outside:
                raise QoptError(
                    f"dynamic_sizes {outside} of method {method!r} are outside the range "
                    f"[{low}, {high}] of its Dim {symbol}"
                )
        chosen.append(sizes)
    combos = [dict(zip(symbols, c, strict=True)) for c in itertools.product(*chosen)]
    if len(combos) > MAX_VARIANTS:
        raise QoptError(
            f"method {method!r} would compile to {len(combos)} size variants (more than "
            f"{MAX_VARIANTS}): choose its sizes with dynamic_sizes"
        )
    return combos


def import_methods(
    programs: dict[str, ExportedProgram],
    converters: dict[str, Converter],
    sizes: Mapping[str, Mapping[str, int]] | None = None,
) -> ModuleOp:
    """Several exported programs (an LLM's `prefill` and `decode`) as one module: a
    function per method, named after its key; the weights they share stored once
    (same key and equal data); the states they share declared once (the same buffer
    names must have the same type and initial value in every program). `sizes`:
    the Dim sizes a function is imported at (a size variant, see `Importer`)."""
    store = WeightStore()
    declared: dict[str, GlobalOp] = {}
    functions: list[Operation] = []
    for name, ep in programs.items():
        fixed = (sizes or {}).get(name)
        importer = Importer(ep, converters, store=store, function=name, sizes=fixed)
        module = importer.run()
        for op in list(module.ops):
            op.detach()
            if isinstance(op, GlobalOp):
                first = declared.get(op.sym_name.data)
                if first is None:
                    declared[op.sym_name.data] = op
                elif first.type != op.type or not _same_initial(first, op, store):
                    raise QoptError(
                        f"method {name!r} declares the state {op.sym_name.data} with another "
                        "type or initial value than an earlier method: the methods must be "
                        "exported from one model"
                    )
            else:
                functions.append(op)
    merged = attach(ModuleOp([*declared.values(), *functions]), store)
    try:
        merged.verify()
    except VerifyException as e:
        first = (str(e).strip().splitlines() or [""])[0]
        raise QoptError(f"the imported methods do not verify together: {first}") from e
    return merged


def _same_initial(a: GlobalOp, b: GlobalOp, store: WeightStore) -> bool:
    def value(g: GlobalOp) -> np.ndarray | None:
        if isinstance(g.value, DenseResourceAttr):
            return resource_array(g.value, store)
        if isinstance(g.value, DenseIntOrFPElementsAttr):
            return dense_array(g.value)
        return None

    x, y = value(a), value(b)
    return x is not None and y is not None and np.array_equal(x, y)
