"""What the importer reads from an exported graph's nodes: torch dtypes and tensors as
numpy dtypes and tensor types, SymInts torch (or a size variant, `specialized`) knows
as ints, and each node's place in the user's source (`node_location`, `describe`).
"""

from __future__ import annotations

import functools
import math
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import numpy as np
import torch
from torch.fx import Node
from xdsl.dialects.builtin import (
    AnyFloat,
    FileLineColLoc,
    IntAttr,
    IntegerType,
    NameLoc,
    NoneAttr,
    StringAttr,
    TensorType,
)

from qopt.dialects.aten.base import DYNAMIC
from qopt.dialects.aten.scalar import INT64_MAX, INT64_MIN
from qopt.dtypes import element_type
from qopt.errors import QoptError, describe_location
from qopt.limits import active_limits

TORCH_TO_NUMPY: dict[torch.dtype, np.dtype] = {
    torch.float32: np.dtype(np.float32),
    torch.float16: np.dtype(np.float16),
    torch.float64: np.dtype(np.float64),
    torch.bool: np.dtype(np.bool_),
    torch.int8: np.dtype(np.int8),
    torch.int16: np.dtype(np.int16),
    torch.int32: np.dtype(np.int32),
    torch.int64: np.dtype(np.int64),
    torch.uint8: np.dtype(np.uint8),
    torch.uint16: np.dtype(np.uint16),
    torch.uint32: np.dtype(np.uint32),
}


def numpy_dtype_of(dtype: torch.dtype, where: str = "") -> np.dtype:
    if dtype not in TORCH_TO_NUMPY:
        raise QoptError(
            f"unsupported dtype {dtype}{where}: qopt imports float16/32/64, bool and "
            "integer tensors; convert the model (e.g. model.float()) before exporting"
        )
    return TORCH_TO_NUMPY[dtype]


_SIZES: ContextVar[Mapping[str, int]] = ContextVar("qopt_import_sizes", default={})
"""The sizes the Dims' symbols take while one size variant imports (`specialized`)."""


@contextmanager
def specialized(sizes: Mapping[str, int]) -> Iterator[None]:
    """While the block runs, `static_int` reads each symbol of `sizes` as its size."""
    token = _SIZES.set(dict(sizes))
    try:
        yield
    finally:
        _SIZES.reset(token)


def static_int(value: Any) -> int | None:
    """A Python int or a SymInt torch knows the value of, as an int (or that a size
    variant's symbols make an int, `specialized`); else None."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, torch.SymInt):
        known = value.node.maybe_as_int()
        if known is not None:
            return int(known)
        sizes = _SIZES.get()
        if sizes:
            return _specialized_int(value.node.expr, sizes)
    return None


def _specialized_int(expr: Any, sizes: Mapping[str, int]) -> int | None:
    import sympy

    symbols = expr.free_symbols
    if not symbols or not all(str(s) in sizes for s in symbols):
        return None
    value = expr.xreplace({s: sympy.Integer(sizes[str(s)]) for s in symbols})
    return int(value) if value.is_Integer else None


def tensor_type_of(
    t: torch.Tensor, where: str | Callable[[], str] = ""
) -> TensorType[AnyFloat | IntegerType]:
    """The tensor type of `t`; `where` (or a function computing it only when an
    error is raised) places the tensor in error messages. A symbolic dim (a
    `torch.export.Dim`, or an expression of one) is `?`."""
    shape: list[int] = []
    for d in t.shape:
        size = static_int(d)
        if size is None and not isinstance(d, torch.SymInt):
            where = where() if callable(where) else where
            raise QoptError(f"dimension {d!r}{where} is neither an int nor a SymInt")
        shape.append(DYNAMIC if size is None else size)
    _check_elements(shape, where)
    if t.dtype not in TORCH_TO_NUMPY:
        numpy_dtype_of(t.dtype, where() if callable(where) else where)
    return tensor_type(TORCH_TO_NUMPY[t.dtype], tuple(shape))


def _check_elements(shape: Sequence[int], where: str | Callable[[], str] = "") -> None:
    """A tensor the program makes (its static dims; a size variant's at its size)
    within the active limits' `max_tensor_elements`, as a shape a file declares."""
    count = math.prod(d for d in shape if d != DYNAMIC)
    limits = active_limits()
    if count > limits.max_tensor_elements:
        where = where() if callable(where) else where
        raise limits.exceeded(f"the element count of a tensor{where}", count, "max_tensor_elements")


@functools.lru_cache(maxsize=4096)
def tensor_type(dtype: np.dtype, shape: tuple[int, ...]) -> TensorType[AnyFloat | IntegerType]:
    """`tensor<shape x dtype>`, shared: attributes are immutable, and building and
    verifying one per op and constant was a large part of import time."""
    return TensorType(element_type(dtype), list(shape))


def range_ints(lower: Any, upper: Any) -> tuple[int, int] | None:
    """A sympy range as int64 bounds (infinite ends clamp to int64's); None if both
    ends are infinite."""

    def bound(value: Any) -> int | None:
        try:
            number = int(value)
        except (TypeError, ValueError, AttributeError, OverflowError):  # int_oo, -int_oo
            return None
        return min(max(number, INT64_MIN), INT64_MAX)

    low, high = bound(lower), bound(upper)
    if low is None and high is None:
        return None
    return (INT64_MIN if low is None else low, INT64_MAX if high is None else high)


def to_numpy(t: torch.Tensor) -> np.ndarray:
    return t.detach().cpu().contiguous().numpy()


#: Frames inside these packages are torch's or torchao's own code, not the model's.
_LIBRARY_DIRS = (f"{os.sep}torch{os.sep}", f"{os.sep}torchao{os.sep}")


def node_location(node: Node) -> FileLineColLoc | NameLoc | None:
    """The model's file and line from the node's stack trace (its innermost frame
    outside torch and torchao: `nn.Linear.forward` is not the user's line), named by
    the path of the module that ran it (torch's `nn_module_stack`), as MLIR's named
    locations: `loc("layers.0.mlp.down_proj"("model.py":12:0))`."""
    trace = node.meta.get("stack_trace")
    path = _module_path(node)
    # PT2E inserts quantize/dequantize nodes without a trace or a module stack: they
    # belong to the line and module of the value they (de)quantize (through a
    # quantize -> dequantize chain).
    source = node
    for _ in range(4):
        if (trace and path) or not str(source.target).startswith("quantized_decomposed."):
            break
        if not source.args or not isinstance(source.args[0], Node):
            break
        source = source.args[0]
        trace = trace or source.meta.get("stack_trace")
        path = path or _module_path(source)
    file_line = _location_of_trace(trace) if trace else None
    if path is None:
        return file_line
    return _named_location(path, file_line)


def _module_path(node: Node) -> str | None:
    """The qualified name of the innermost module on the node's `nn_module_stack`
    (None at the top level or without one)."""
    stack = node.meta.get("nn_module_stack")
    if not stack:
        return None
    last = next(reversed(stack.values()))
    path = last[0] if isinstance(last, tuple) and last and isinstance(last[0], str) else None
    return path or None


@functools.lru_cache(maxsize=4096)
def _named_location(path: str, file_line: FileLineColLoc | None) -> NameLoc:
    return NameLoc(StringAttr(path), NoneAttr() if file_line is None else file_line)


@functools.lru_cache(maxsize=4096)
def _location_of_trace(trace: str) -> FileLineColLoc | None:
    # Cached: every node of one source line shares its trace, and building the
    # (immutable) location attribute verifies it, which dominated import time.
    frames = re.findall(r'File "([^"]+)", line (\d+)', trace)
    if not frames:
        return None
    user = [f for f in frames if not any(d in f[0] for d in _LIBRARY_DIRS)]
    file, line = (user or frames)[-1]
    return FileLineColLoc(StringAttr(file), IntAttr(int(line)), IntAttr(0))


def describe(node: Node) -> str:
    return f"'{node.target}' (node {node.name}){describe_location(node_location(node))}"
