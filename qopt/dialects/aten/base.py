"""Shared definitions of the `aten` dialect: op base classes and shape rules.

Every `aten` op corresponds to one ATen operator of an exported graph. Tensor
arguments are operands (a Python scalar argument of a binary op becomes a 0-d
constant tensor); structural arguments (dims, flags, sizes) are properties,
printed in the attribute dictionary. Result types carry the exact shapes and
dtypes torch computed, and each op's verifier re-derives the shape from its
operands and properties and rejects a mismatch.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    BoolAttr,
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
)
from xdsl.ir import SSAValue
from xdsl.irdl import IRDLOperation, ParsePropInAttrDict, traits_def
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.hints import isa

from qopt.dialects.tensors import Shape, elem_of, shape_of
from qopt.dtypes import is_bool, is_float
from qopt.errors import where


def broadcast_shapes(*shapes: Sequence[int]) -> Shape | None:
    """numpy/torch broadcasting; None if the shapes do not broadcast."""
    rank = max((len(s) for s in shapes), default=0)
    out: list[int] = []
    for i in range(rank):
        dim = 1
        for s in shapes:
            j = i - (rank - len(s))
            if j < 0:
                continue
            d = s[j]
            if d == 1:
                continue
            if dim not in (1, d):
                return None
            dim = d
        out.append(dim)
    return tuple(out)


def norm_dim(dim: int, rank: int) -> int:
    """Wrap a negative dim; raise if out of range (rank 0 accepts -1 and 0)."""
    bound = max(rank, 1)
    if not -bound <= dim < bound:
        raise VerifyException(f"dim {dim} is out of range for rank {rank}")
    return dim % bound


def ints(attr: DenseArrayBase[IntegerType] | None) -> tuple[int, ...]:
    return () if attr is None else tuple(int(v) for v in attr.get_values())


def flag(attr: BoolAttr | IntegerAttr | None, default: bool = False) -> bool:
    return default if attr is None else bool(attr.value.data)


def integer(attr: IntegerAttr | None, default: int = 0) -> int:
    return default if attr is None else attr.value.data


def real(attr: FloatAttr | None, default: float = 0.0) -> float:
    return default if attr is None else attr.value.data


def text(attr: StringAttr | None, default: str = "") -> str:
    return default if attr is None else attr.data


class AtenOp(IRDLOperation):
    """Base of every aten op: generic-looking custom format, shape verification.

    Subclasses implement `expected_shapes()` (the result shapes the op's
    operands and properties imply, or None to skip) and may extend `check()`.
    """

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "operands attr-dict `:` functional-type(operands, results)"
    traits = traits_def(Pure())

    def fail(self, message: str) -> VerifyException:
        return VerifyException(f"{where(self)}: {message}")

    def expected_shapes(self) -> Sequence[Shape] | None:
        return None

    def check(self) -> None:
        """Extra checks of dtypes and properties."""

    def verify_(self) -> None:
        for value in (*self.operands, *self.results):
            if not isinstance(value.type, TensorType):
                raise self.fail(f"operands and results must be ranked tensors, got {value.type}")
        try:
            self.check()
            expected = self.expected_shapes()
        except VerifyException as e:
            message = str(e)
            if message.startswith(where(self)):
                raise
            raise self.fail(message) from None
        if expected is None:
            return
        actual = [shape_of(r) for r in self.results]
        if len(expected) != len(actual):
            raise self.fail(f"expected {len(expected)} results, got {len(actual)}")
        for i, (want, got) in enumerate(zip(expected, actual, strict=True)):
            if tuple(want) != got:
                raise self.fail(
                    f"result {i} has shape {list(got)} but the operands imply {list(want)}"
                )

    # dtype helpers for check()
    def require_float(self, value: SSAValue, what: str) -> None:
        if not is_float(elem_of(value)):
            raise self.fail(f"{what} must be a float tensor, got {value.type}")

    def require_bool(self, value: SSAValue, what: str) -> None:
        if not is_bool(elem_of(value)):
            raise self.fail(f"{what} must be a boolean (i1) tensor, got {value.type}")

    def require_integer(self, value: SSAValue, what: str) -> None:
        elem = elem_of(value)
        if not isa(elem, IntegerType) or is_bool(elem):
            raise self.fail(f"{what} must be an integer tensor, got {value.type}")
