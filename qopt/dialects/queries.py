"""Questions about a module's IR that passes, targets and the interpreter all ask.

These read IR and nothing else: which functions a module has, a constant's value, a
global's initial value. They live in the IR core so that a pass or a target can ask
them without importing the interpreter (a dialect's own such questions stay with it:
`qopt.dialects.coreml.queries` for `coreml.const`).
"""

from __future__ import annotations

import hashlib

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    DenseResourceAttr,
    ModuleOp,
    StringAttr,
)
from xdsl.dialects.func import FuncOp

from qopt.dialects import ml_program as mlp
from qopt.dialects.tensors import dtype_of, shape_of
from qopt.errors import QoptError
from qopt.resources import elements_array, weights_of


def methods_of(module: ModuleOp) -> list[str]:
    """The module's public functions (its methods), in order."""
    return [
        op.sym_name.data
        for op in module.ops
        if isinstance(op, FuncOp)
        and (op.sym_visibility is None or op.sym_visibility.data == "public")
        and not op.is_declaration
    ]


def entry_function(module: ModuleOp, name: str = "forward") -> FuncOp:
    """The function `name`, or the module's only function; a QoptError naming the
    functions there are otherwise."""
    for op in module.ops:
        if isinstance(op, FuncOp) and op.sym_name.data == name:
            return op
    funcs = [op.sym_name.data for op in module.ops if isinstance(op, FuncOp)]
    if len(funcs) == 1:
        return next(op for op in module.ops if isinstance(op, FuncOp))
    raise QoptError(f"the module has no function @{name} (functions: {funcs or 'none'})")


def constant_array(op: arith.ConstantOp) -> np.ndarray | int | float:
    """The value of an `arith.constant`: a numpy array for a tensor literal
    (`qopt.resources.elements_array`), the Python number of a scalar one."""
    value = op.value
    if isinstance(value, DenseResourceAttr | DenseIntOrFPElementsAttr):
        return elements_array(value, op)
    return value.value.data


def initial_value(op: mlp.GlobalOp) -> np.ndarray:
    """A global's initial value (zeros of its type where it declares none)."""
    if op.value is None:
        return np.zeros(shape_of(op.type), dtype_of(op.type))
    return elements_array(op.value, op).reshape(shape_of(op.type))


__all__ = ["constant_array", "entry_function", "initial_value", "methods_of"]


def program_hash(module: ModuleOp) -> str:
    """SHA-256 of a module: its text (no locations) and the bytes of every weight
    blob it refers to, in program order (the source program of a compile)."""
    digest = hashlib.sha256(str(module).encode())
    store = weights_of(module)
    for op in module.walk():
        for attr in (*op.properties.values(), *op.attributes.values()):
            if isinstance(attr, DenseResourceAttr):
                blob = store.get(attr.resource_handle.data)
                digest.update(attr.resource_handle.data.encode() + b"\0")
                if isinstance(blob, np.ndarray):  # its bytes, read in place (no copy)
                    digest.update(np.ascontiguousarray(blob).reshape(-1).view(np.uint8).data)
                elif blob is not None:
                    digest.update(blob)
    return digest.hexdigest()


SOURCE_HASH_ATTR = "qopt.source_sha256"
"""Module attribute: the SHA-256 of the program convert-to-coreml lowered (the source
program after fuse-quant and fold-constants; the package's `qopt.source_sha256`
metadata)."""


def record_source_hash(module: ModuleOp) -> None:
    """Record the hash of `module` as convert-to-coreml receives it, once."""
    if SOURCE_HASH_ATTR not in module.attributes:
        module.attributes[SOURCE_HASH_ATTR] = StringAttr(program_hash(module))
