"""What qopt keeps on a `func.func` about the program it came from.

`qopt.output_names`: the exported program's user output names, in order (an
array of strings the `.pt2` frontend sets from the graph signature). The CoreML
emitter names the package's outputs after them, on every path (`qopt.compile`,
`qopt-opt model.pt2 -t mlpackage`); a function without it (an `.mlir` written
by hand) has outputs `output_0`, `output_1`, ...

Dynamic dims (a `torch.export.Dim`, e.g. the sequence length of an LLM's prefill):
the function's `qopt.symbols` maps each symbol to its range, and each argument with
a `?` dim has `qopt.dims`, its dims' symbols ("" for a static dim):

    func.func @prefill(%tokens: tensor<1x?xi64> {qopt.dims = ["", "s27"]},
                       %input_pos: tensor<?xi64> {qopt.dims = ["s27"]})
        -> tensor<1x?x64xf32> attributes {qopt.symbols = {s27 = array<i64: 1, 31>}}

The actual size is the argument's at run time (`aten.sym_size` reads it as a 0-d
int64 tensor inside the function); every argument dim of one symbol has the same
size, within the range. A target allocates each buffer for the symbols' `max`
(`upper_bounds` in qopt/dialects/aten/bounds.py derives every value's bound
shape) and passes the actual sizes in (e.g. as push constants).

Size variants: the static targets (CoreML, Vulkan) compile a function with dynamic
dims once per enumerated size, as functions `<method>__<size>` (one size per
symbol, in symbol-name order, joined by `_`: `prefill__5`); CoreML's
EnumeratedShapes in effect, weights and states shared. A call of `<method>` runs
the variant whose argument shapes are the inputs' (`pick_function`); `methods`
lists `<method>` once (`logical_methods`). Those name rules are plain strings and
shapes: they live in qopt/variants.py (imported here), which the runtime reads
without the IR.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
    IntegerType,
    StringAttr,
    TensorType,
    i64,
)
from xdsl.dialects.func import FuncOp
from xdsl.ir import Attribute, Operation
from xdsl.utils.hints import isa

from qopt.errors import QoptError
from qopt.variants import (
    logical_methods,
    pick_function,
    variant_name,
    variant_of,
    variant_sizes,
)

OUTPUT_NAMES_ATTR = "qopt.output_names"
SYMBOLS_ATTR = "qopt.symbols"
DIMS_ATTR = "qopt.dims"


def set_output_names(func: FuncOp, names: Sequence[str]) -> None:
    func.attributes[OUTPUT_NAMES_ATTR] = ArrayAttr([StringAttr(str(n)) for n in names])


def output_names(func: FuncOp) -> list[str] | None:
    """The recorded output names, or None (absent, malformed or of the wrong count)."""
    attr = func.attributes.get(OUTPUT_NAMES_ATTR)
    if not isa(attr, ArrayAttr[StringAttr]):
        return None
    names = [a.data for a in attr.data]
    if len(names) != len(func.function_type.outputs):
        return None
    return names


def set_dynamic_dims(
    func: FuncOp, symbols: Mapping[str, tuple[int, int]], arg_dims: Sequence[Sequence[str]]
) -> None:
    """Record the symbols' ranges on `func` and each argument's dims' symbols."""
    func.attributes[SYMBOLS_ATTR] = DictionaryAttr(
        {name: DenseArrayBase.from_list(i64, [low, high]) for name, (low, high) in symbols.items()}
    )
    attrs: list[DictionaryAttr] = []
    for dims in arg_dims:
        entries: dict[str, Attribute] = {}
        if any(dims):
            entries[DIMS_ATTR] = ArrayAttr([StringAttr(d) for d in dims])
        attrs.append(DictionaryAttr(entries))
    func.arg_attrs = ArrayAttr(attrs)


def symbol_ranges(func: FuncOp) -> dict[str, tuple[int, int]]:
    """`qopt.symbols` of `func`: each symbol's `(min, max)` (empty if absent)."""
    attr = func.attributes.get(SYMBOLS_ATTR)
    if not isinstance(attr, DictionaryAttr):
        return {}
    ranges: dict[str, tuple[int, int]] = {}
    for name, value in attr.data.items():
        if isa(value, DenseArrayBase[IntegerType]):
            bounds = [int(v) for v in value.get_values()]
            if len(bounds) == 2:
                ranges[name] = (bounds[0], bounds[1])
    return ranges


def argument_dims(func: FuncOp) -> list[list[str] | None]:
    """Each argument's `qopt.dims` (its dims' symbols, "" if static), or None."""
    count = len(func.function_type.inputs)
    if func.arg_attrs is None:
        return [None] * count
    out: list[list[str] | None] = []
    for entry in func.arg_attrs.data:
        dims = entry.data.get(DIMS_ATTR)
        out.append([d.data for d in dims.data] if isa(dims, ArrayAttr[StringAttr]) else None)
    return (out + [None] * count)[:count]


def check_dynamic_sizes(func: FuncOp, shapes: Sequence[Sequence[int]]) -> None:
    """The run-time shapes of `func`'s arguments against its symbols: every dim of a
    symbol has one size, within the symbol's range. A QoptError otherwise."""
    ranges = symbol_ranges(func)
    seen: dict[str, tuple[int, int, int]] = {}  # symbol -> size, argument, dim
    for i, (dims, shape) in enumerate(zip(argument_dims(func), shapes, strict=False)):
        if dims is None:
            continue
        for d, (symbol, size) in enumerate(zip(dims, shape, strict=False)):
            if not symbol:
                continue
            low, high = ranges.get(symbol, (0, 2**63 - 1))
            if not low <= size <= high:
                raise QoptError(
                    f"input {i} of @{func.sym_name.data} has size {size} in dim {d}, outside "
                    f"the range [{low}, {high}] of its dynamic dim {symbol}"
                )
            first = seen.setdefault(symbol, (size, i, d))
            if first[0] != size:
                raise QoptError(
                    f"input {i} of @{func.sym_name.data} has size {size} in dim {d}, but input "
                    f"{first[1]} has {first[0]} in dim {first[2]}: both are the dynamic dim "
                    f"{symbol}, which has one size per call"
                )


def refuse_dynamic(module: Operation, pass_name: str) -> None:
    """A QoptError for a pass that compiles static shapes only, if any function of
    `module` has a dynamic (`?`) argument or result dim."""
    for op in module.walk():
        if not isinstance(op, FuncOp):
            continue
        types = [*op.function_type.inputs.data, *op.function_type.outputs.data]
        if any(isa(t, TensorType) and DYNAMIC_INDEX in t.get_shape() for t in types):
            symbols = ", ".join(
                f"{name} in [{low}, {high}]" for name, (low, high) in symbol_ranges(op).items()
            )
            raise QoptError(
                f"{pass_name}: @{op.sym_name.data} has dynamic dims ({symbols or '?'}: a "
                "torch.export.Dim); this target compiles static shapes: import it as one "
                "static variant per size (qopt.compile(ep, target, dynamic_sizes=[1, 8, "
                "64]), or qopt-opt -f 'pt2{dynamic_sizes=1,8,64}'), or run it with "
                "qopt.session(module), the reference interpreter"
            )


__all__ = [
    "DIMS_ATTR",
    "OUTPUT_NAMES_ATTR",
    "SYMBOLS_ATTR",
    "argument_dims",
    "check_dynamic_sizes",
    "logical_methods",
    "output_names",
    "pick_function",
    "refuse_dynamic",
    "set_dynamic_dims",
    "set_output_names",
    "symbol_ranges",
    "variant_name",
    "variant_of",
    "variant_sizes",
]
