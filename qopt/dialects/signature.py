"""What qopt keeps on a `func.func` about the program it came from.

`qopt.output_names`: the exported program's user output names, in order (an
array of strings the `.pt2` frontend sets from the graph signature). The CoreML
emitter names the package's outputs after them, on every path (`qopt.compile`,
`qopt-opt model.pt2 -t mlpackage`); a function without it (an `.mlir` written
by hand) has outputs `output_0`, `output_1`, ...
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import ArrayAttr, StringAttr
from xdsl.dialects.func import FuncOp
from xdsl.utils.hints import isa

OUTPUT_NAMES_ATTR = "qopt.output_names"


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


__all__ = ["OUTPUT_NAMES_ATTR", "output_names", "set_output_names"]
