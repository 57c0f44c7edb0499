"""The `coreml` verifiers' result-type rules against coremltools' MIL type inference.

For seeded random parameters, each MIL op is built with coremltools' Builder
(`mb`, the reference for MIL semantics: coremltools 9.0's type inference), and
the same op is built in the `coreml` dialect twice: with coremltools' result
type it must verify, with that shape (or element type) changed it must not, and
the message names the expected shape. Where coremltools refuses the parameters,
the dialect op must not verify either. The shape helpers (`matmul_shape`,
`spatial_out_shape`) are checked against numpy and coremltools directly.
Ops without a sibling here are covered by tests/lit/coreml/invalid.mlir.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest
from xdsl.dialects.builtin import (
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    TensorType,
    f16,
    f32,
    i1,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, SSAValue
from xdsl.utils.exceptions import VerifyException

from qopt.dialects import coreml

CASES = 60
AGREED: dict[str, int] = {}
"""op name -> cases where coremltools built the op (so the test is not vacuous)."""


def _ints(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, [int(v) for v in values])


def _bool(value: bool) -> IntegerAttr:
    return IntegerAttr(int(value), i1)


def _args(*shapes: Sequence[int]) -> list[SSAValue]:
    return list(Block(arg_types=[TensorType(f32, list(s)) for s in shapes]).args)


def _const(shape: Sequence[int]) -> SSAValue:
    type = TensorType(f32, list(shape))
    value = DenseIntOrFPElementsAttr.from_list(type, [1.0])
    return coreml.ConstOp.build(properties={"value": value}, result_types=[type]).result


def _mil(build: Callable[..., Any], *shapes: Sequence[int]) -> tuple[int, ...] | None:
    """The output shape coremltools infers for `build(*inputs)` (fp32 inputs of
    `shapes`), or None where it refuses the op."""
    import coremltools as ct
    from coremltools.converters.mil import Builder as mb

    specs = [mb.TensorSpec(shape=tuple(s)) for s in shapes]

    def one(a: Any) -> Any:
        return build(a)

    def two(a: Any, b: Any) -> Any:
        return build(a, b)

    try:
        prog = mb.program(input_specs=specs, opset_version=ct.target.iOS18)(
            one if len(shapes) == 1 else two
        )
    except (ValueError, IndexError, AssertionError):
        return None
    return tuple(int(d) for d in prog.functions["main"].outputs[0].shape)


def _verifies(
    cls: type[coreml.CoremlOp],
    operands: Sequence[SSAValue | Sequence[SSAValue] | None],
    shape: Sequence[int],
    props: dict[str, Attribute],
    elem: Attribute = f32,
) -> str | None:
    """None where the op verifies, else the verifier's message."""
    op = cls.build(
        operands=list(operands), properties=props, result_types=[TensorType(elem, list(shape))]
    )
    try:
        op.verify()
    except VerifyException as e:
        return str(e)
    return None


def _agree(
    want: tuple[int, ...] | None,
    cls: type[coreml.CoremlOp],
    operands: Sequence[Any],
    props: dict[str, Attribute],
    label: str,
) -> None:
    """coremltools' shape verifies (and only it); a refused op refuses any shape."""
    AGREED[cls.name] = AGREED.get(cls.name, 0) + (want is not None)
    if want is None:
        assert _verifies(cls, operands, [1], props) is not None, label
        return
    assert _verifies(cls, operands, want, props) is None, (label, want)
    wrong = (*want, 1) if want else (2,)
    message = _verifies(cls, operands, wrong, props)
    assert message is not None, (label, want)
    assert f"result must have shape {list(want)}, got {list(wrong)}" in message, message
    assert _verifies(cls, operands, want, props, f16) is not None, label


@pytest.fixture(scope="module")
def rng() -> random.Random:
    return random.Random(20250101)


def test_every_op_checks_its_result() -> None:
    """Every op of the dialect has an op-specific `check` (the result-type rules)."""
    missing = [op.name for op in coreml.CoreML.operations if op.check is coreml.CoremlOp.check]
    assert not missing


def test_matmul_shape_is_numpys(rng: random.Random) -> None:
    for _ in range(2000):
        rank_x, rank_y, k = rng.randint(1, 4), rng.randint(1, 4), rng.randint(1, 3)

        def dims(rank: int, last: tuple[int, ...]) -> tuple[int, ...]:
            return (*(rng.choice((1, 2, 3)) for _ in range(rank - len(last))), *last)

        x = dims(rank_x, (rng.randint(1, 3), k) if rank_x > 1 else (k,))
        y = dims(rank_y, (k + (rng.random() < 0.1), rng.randint(1, 3)) if rank_y > 1 else (k,))
        tx, ty = rank_x > 1 and rng.random() < 0.3, rank_y > 1 and rng.random() < 0.3
        a = np.zeros((*x[:-2], x[-1], x[-2]) if tx else x)
        b = np.zeros((*y[:-2], y[-1], y[-2]) if ty else y)
        try:
            want: tuple[int, ...] | None = np.matmul(
                np.swapaxes(a, -1, -2) if tx else a, np.swapaxes(b, -1, -2) if ty else b
            ).shape
        except ValueError:
            want = None
        got = coreml.matmul_shape(a.shape, b.shape, tx, ty)
        assert (None if isinstance(got, str) else got) == want, (a.shape, b.shape, tx, ty)


def test_spatial_out_shape_is_coremltools(rng: random.Random) -> None:
    from coremltools.converters.mil.mil.ops.defs._utils import spatial_dimensions_out_shape

    for _ in range(3000):
        n = rng.randint(1, 3)
        size = tuple(rng.randint(1, 12) for _ in range(n))
        kernel = tuple(rng.randint(1, 5) for _ in range(n))
        strides = tuple(rng.randint(1, 4) for _ in range(n))
        dilations = tuple(rng.randint(1, 3) for _ in range(n))
        pad_type = rng.choice(("valid", "same", "same_lower", "custom"))
        ceil = pad_type in ("valid", "custom") and n <= 2 and rng.random() < 0.4
        if ceil:
            dilations = (1,) * n
            pad = tuple(p for _ in range(n) for p in [rng.randint(0, 2)] * 2)
        else:
            pad = tuple(rng.randint(0, 3) for _ in range(2 * n))
        got = coreml.spatial_out_shape(size, kernel, strides, dilations, pad_type, pad, ceil)
        try:
            want = tuple(
                spatial_dimensions_out_shape(
                    pad_type=pad_type,
                    input_shape=size,
                    kernel_shape=kernel,
                    strides=strides,
                    dilations=dilations,
                    custom_pad=pad if pad_type == "custom" else None,
                    ceil_mode=ceil,
                )
            )
        except ValueError:  # an output size below 1
            assert min(got) < 1, (size, kernel, strides, pad_type, pad, ceil)
            continue
        assert got == want, (size, kernel, strides, dilations, pad_type, pad, ceil)


def test_pool_and_conv(rng: random.Random) -> None:
    from coremltools.converters.mil import Builder as mb

    for case in range(CASES):
        n = rng.randint(1, 2)
        x = (1, 2, *(rng.randint(2, 9) for _ in range(n)))
        kernel = [rng.randint(1, 3) for _ in range(n)]
        strides = [rng.randint(1, 3) for _ in range(n)]
        pad_type = rng.choice(("valid", "same", "custom"))
        ceil = pad_type != "same" and rng.random() < 0.5
        pad = [p for _ in range(n) for p in [rng.randint(0, 1)] * 2]
        if pad_type != "custom":
            pad = [0] * (2 * n)
        pool = {
            "kernel_sizes": _ints(kernel),
            "strides": _ints(strides),
            "pad_type": StringAttr(pad_type),
            "pad": _ints(pad),
            "ceil_mode": _bool(ceil),
        }
        want = _mil(
            lambda v: mb.max_pool(
                x=v, kernel_sizes=kernel, strides=strides, pad_type=pad_type, pad=pad,
                ceil_mode=ceil,
            ),
            x,
        )  # fmt: skip
        _agree(want, coreml.MaxPoolOp, _args(x), pool, f"max_pool {case}")
        avg = pool | {"exclude_padding_from_average": _bool(False)}
        _agree(want, coreml.AvgPoolOp, _args(x), avg, f"avg_pool {case}")

        dilations = [rng.randint(1, 2) for _ in range(n)]
        groups = rng.choice((1, 2))
        weight = (2 * rng.randint(1, 2), 2 // groups, *kernel)
        w = np.ones(weight, np.float32)
        conv = {
            "strides": _ints(strides),
            "pad_type": StringAttr(pad_type),
            "pad": _ints(pad),
            "dilations": _ints(dilations),
            "groups": IntegerAttr(groups, i64),
        }
        want = _mil(
            lambda v: mb.conv(
                x=v, weight=w, strides=strides, pad_type=pad_type, pad=pad,
                dilations=dilations, groups=groups,
            ),
            x,
        )  # fmt: skip
        _agree(want, coreml.ConvOp, [*_args(x), _const(weight), None], conv, f"conv {case}")


def test_matmul_and_broadcasting(rng: random.Random) -> None:
    from coremltools.converters.mil import Builder as mb

    for case in range(CASES):
        k = rng.randint(1, 3)
        x = (*(rng.choice((1, 2)) for _ in range(rng.randint(0, 2))), rng.randint(1, 3), k)
        y = (*(rng.choice((1, 2)) for _ in range(rng.randint(0, 2))), k, rng.randint(1, 3))
        if rng.random() < 0.3:
            x = x[-1:]
        tx, ty = len(x) > 1 and rng.random() < 0.3, rng.random() < 0.3
        if tx:
            x = (*x[:-2], x[-1], x[-2])
        if ty:
            y = (*y[:-2], y[-1], y[-2])
        if len(x) == 1 and len(y) > 2:
            # coremltools drops the batch dim, not the one it added to x: [4] @
            # [10, 4, 3] is [1, 3] there, [10, 3] in MIL's docs and numpy (the test above)
            continue
        want = _mil(lambda a, b: mb.matmul(x=a, y=b, transpose_x=tx, transpose_y=ty), x, y)
        props = {"transpose_x": _bool(tx), "transpose_y": _bool(ty)}
        _agree(want, coreml.MatmulOp, _args(x, y), props, f"matmul {case}")

        a = tuple(rng.choice((1, 2, 3)) for _ in range(rng.randint(0, 3)))
        b = tuple(rng.choice((1, 2, 3)) for _ in range(rng.randint(0, 3)))
        if a and b:  # coremltools' builder returns a rank-0 result as a scalar
            want = _mil(lambda u, v: mb.add(x=u, y=v), a, b)
            _agree(want, coreml.AddOp, _args(a, b), {}, f"add {case}")


def test_shape_ops(rng: random.Random) -> None:
    from coremltools.converters.mil import Builder as mb

    for case in range(CASES):
        x = tuple(rng.choice((1, 2, 3)) for _ in range(rng.randint(1, 4)))
        rank = len(x)
        axes = rng.sample(range(-rank, rank), rng.randint(1, rank))
        if len({a % rank for a in axes}) != len(axes):
            axes = axes[:1]
        keep = rng.random() < 0.5
        if keep or len(axes) < rank:  # coremltools' builder returns a scalar otherwise
            want = _mil(lambda v: mb.reduce_sum(x=v, axes=axes, keep_dims=keep), x)
            props = {"axes": _ints(axes), "keep_dims": _bool(keep)}
            _agree(want, coreml.ReduceSumOp, _args(x), props, f"reduce_sum {case}")

        want = _mil(lambda v: mb.layer_norm(x=v, axes=axes), x)
        props = {"axes": _ints(axes), "epsilon": FloatAttr(1e-5, 64)}
        _agree(want, coreml.LayerNormOp, [*_args(x), None, None], props, f"layer_norm {case}")

        squeezed = [a for a in axes if x[a] == 1]
        if len(squeezed) < rank:
            want = _mil(lambda v: mb.squeeze(x=v, axes=axes), x)
            _agree(want, coreml.SqueezeOp, _args(x), {"axes": _ints(axes)}, f"squeeze {case}")

        out_rank = rank + len(axes)
        new = rng.sample(range(-out_rank, out_rank), len(axes))
        if len({a % out_rank for a in new}) == len(new):
            want = _mil(lambda v: mb.expand_dims(x=v, axes=new), x)
            props = {"axes": _ints(new)}
            _agree(want, coreml.ExpandDimsOp, _args(x), props, f"expand_dims {case}")

        perm = rng.sample(range(rank), rank)
        want = _mil(lambda v: mb.transpose(x=v, perm=perm), x)
        _agree(want, coreml.TransposeOp, _args(x), {"perm": _ints(perm)}, f"transpose {case}")

        axis = rng.randrange(-rank, rank)
        other = list(x)
        other[axis] = rng.randint(1, 3)
        interleave = rng.random() < 0.3
        if interleave:
            other = list(x)
        want = _mil(
            lambda u, v: mb.concat(values=[u, v], axis=axis, interleave=interleave), x, other
        )
        props = {"axis": IntegerAttr(axis, i64), "interleave": _bool(interleave)}
        _agree(want, coreml.ConcatOp, [_args(x, other)], props, f"concat {case}")

        shape = list(rng.sample(x, rank)) if rng.random() < 0.5 else [int(np.prod(x))]
        if rng.random() < 0.5:
            shape[rng.randrange(len(shape))] = -1
        want = _mil(lambda v: mb.reshape(x=v, shape=shape), x)
        _agree(want, coreml.ReshapeOp, _args(x), {"shape": _ints(shape)}, f"reshape {case}")


def test_scatter(rng: random.Random) -> None:
    """`scatter` keeps data's shape; updates must be data's with len(indices) on axis."""
    from coremltools.converters.mil import Builder as mb

    for case in range(CASES):
        x = tuple(rng.choice((1, 2, 3)) for _ in range(rng.randint(1, 4)))
        axis = rng.randrange(-len(x), len(x))
        count = rng.randint(1, 3)
        updates = list(x)
        updates[axis] = count if rng.random() < 0.8 else count + 1
        indices = np.zeros(count, np.int32)
        want = _mil(
            lambda u, v: mb.scatter(data=u, indices=indices, updates=v, axis=axis, mode="update"),
            x,
            updates,
        )
        type = TensorType(i32, [count])
        index = coreml.ConstOp.build(
            properties={"value": DenseIntOrFPElementsAttr.from_list(type, [0])}, result_types=[type]
        ).result
        data, update = _args(x, updates)
        props = {"axis": IntegerAttr(axis, i64), "mode": StringAttr("update")}
        _agree(want, coreml.ScatterOp, [data, index, update], props, f"scatter {case}")


def test_cases_were_built() -> None:
    """Most cases above are ops coremltools accepts (run after them, in file order)."""
    names = (
        "max_pool", "avg_pool", "conv", "matmul", "add", "reduce_sum", "layer_norm",
        "squeeze", "expand_dims", "transpose", "concat", "reshape", "scatter",
    )  # fmt: skip
    for name in names:
        assert AGREED.get(f"coreml.{name}", 0) >= CASES // 4, (name, AGREED)
