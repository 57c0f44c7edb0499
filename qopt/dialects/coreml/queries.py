"""Questions about coreml IR: the value of a `coreml.const` (see qopt.dialects.queries
for those every level asks)."""

from __future__ import annotations

import numpy as np

from qopt.dialects.coreml.base import storage_dtype
from qopt.dialects.coreml.constexpr import ConstOp
from qopt.dialects.tensors import elem_of
from qopt.resources import elements_array


def const_array(op: ConstOp) -> np.ndarray:
    """The value of a `coreml.const` (sub-byte types in 8-bit containers)."""
    return elements_array(op.value, op, storage_dtype(elem_of(op.result)))


__all__ = ["const_array"]
