"""Shared definitions of the `aten` dialect: op base classes and shape rules.

Every `aten` op corresponds to one ATen operator of an exported graph. Tensor
arguments are operands (a Python scalar argument of a binary op becomes a 0-d
constant tensor); structural arguments (dims, flags, sizes) are properties,
printed in the attribute dictionary. Result types carry the exact shapes and
dtypes torch computed, and each op's verifier re-derives the shape from its
operands and properties and rejects a mismatch.

Dynamic dims (`?`, a `torch.export.Dim`): a result dim may be `?` where torch's is
symbolic. The verifier then derives the shapes with every `?` of the operands
standing for one large symbolic size (`SYMBOLIC_SIZE`): a static result dim must
equal what the operands imply (a static dim never depends on a dynamic one), a
`?` result dim is the run-time size the op computes. The function's
`qopt.symbols` and arguments' `qopt.dims` (qopt/dialects/signature.py) name each
dynamic input dim's symbol and its range `[min, max]`.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Generator, Mapping, Sequence
from contextvars import ContextVar

from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    BoolAttr,
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
)
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import IRDLOperation, ParsePropInAttrDict, traits_def
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.hints import isa

from qopt.dialects.tensors import Shape, elem_of
from qopt.dialects.tensors import shape_of as declared_shape
from qopt.dtypes import is_bool, is_float
from qopt.errors import where

DYNAMIC = DYNAMIC_INDEX
"""A `?` dim of a tensor type, as `TensorType.get_shape()` gives it."""

SYMBOLIC_SIZE = 1_000_000_007
"""What a `?` dim stands for while a verifier derives shapes: larger than any static
size, so an expression of it is never taken for a static size."""

_symbolic: ContextVar[bool] = ContextVar("aten_symbolic_shapes", default=False)
_assumed: ContextVar[Mapping[SSAValue, Shape] | None] = ContextVar("aten_assumed", default=None)


def shape_of(value: SSAValue | Attribute) -> Shape:
    """The shape of a tensor value or type; inside a verifier of an op with dynamic
    dims, each `?` is `SYMBOLIC_SIZE` (see the module docstring); inside
    `assumed_shapes(m)`, a value of `m` has the shape `m` gives it."""
    assumed = _assumed.get()
    if assumed is not None and isinstance(value, SSAValue) and value in assumed:
        return assumed[value]
    shape = declared_shape(value)
    if _symbolic.get() and DYNAMIC in shape:
        return tuple(SYMBOLIC_SIZE if d == DYNAMIC else d for d in shape)
    return shape


def is_symbolic(dim: int) -> bool:
    """Whether a dim from `shape_of` stands for a run-time size (`?`, or an expression
    of `SYMBOLIC_SIZE`)."""
    return dim < 0 or dim > SYMBOLIC_SIZE // 2


def numel(shape: SSAValue | Attribute | Sequence[int]) -> int:
    """Elements of a shape, or of a tensor value / type (`shape_of`'s dims)."""
    if isinstance(shape, SSAValue | Attribute):
        shape = shape_of(shape)
    return math.prod(int(d) for d in shape)


def is_dynamic(value: SSAValue | Attribute) -> bool:
    """Whether the tensor value or type has a `?` dim."""
    return DYNAMIC in declared_shape(value)


@contextlib.contextmanager
def symbolic_shapes() -> Generator[None]:
    """`shape_of` gives `SYMBOLIC_SIZE` for `?` dims within the block."""
    token = _symbolic.set(True)
    try:
        yield
    finally:
        _symbolic.reset(token)


@contextlib.contextmanager
def assumed_shapes(shapes: Mapping[SSAValue, Shape]) -> Generator[None]:
    """`shape_of(v)` is `shapes[v]` for the values of `shapes` within the block (how
    `qopt.dialects.aten.bounds` derives shapes from bounds)."""
    token = _assumed.set(shapes)
    try:
        yield
    finally:
        _assumed.reset(token)


def show(shape: Sequence[int]) -> str:
    """A shape as `[1, ?, 8]` in messages."""
    return "[" + ", ".join("?" if is_symbolic(d) else str(d) for d in shape) + "]"


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


def _conforms(declared: Shape, derived: Shape) -> bool:
    """A declared result shape against the derived one: equal ranks, each static dim
    equal (a `?` declared dim takes whatever the op computes at run time)."""
    if len(declared) != len(derived):
        return False
    return all(d == DYNAMIC or d == e for d, e in zip(declared, derived, strict=True))


class AtenOpBase(IRDLOperation):
    """Base of every aten op: generic-looking custom format, shape verification.

    Subclasses implement `expected_shapes()` (the result shapes the op's
    operands and properties imply, or None to skip) and may extend `check()`.
    Ops derive from `AtenOp` (pure); one with an effect derives from this base
    directly (xDSL adds a base class's traits to its subclasses').
    """

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "operands attr-dict `:` functional-type(operands, results)"

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
        dynamic = any(is_dynamic(v) for v in (*self.operands, *self.results))
        try:
            with symbolic_shapes() if dynamic else contextlib.nullcontext():
                self.check()
                expected = self.expected_shapes()
        except VerifyException as e:
            message = str(e)
            if message.startswith(where(self)):
                raise
            raise self.fail(message) from None
        if expected is None:
            return
        actual = [declared_shape(r) for r in self.results]
        if len(expected) != len(actual):
            raise self.fail(f"expected {len(expected)} results, got {len(actual)}")
        for i, (want, got) in enumerate(zip(expected, actual, strict=True)):
            if not _conforms(got, tuple(want)):
                raise self.fail(
                    f"result {i} has shape {show(got)} but the operands imply {show(want)}"
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


class AtenOp(AtenOpBase):
    """An aten op without side effects (Pure: unused results may be dropped)."""

    traits = traits_def(Pure())
