"""Buffer extents of the Vulkan kernels: what `KernelSpec.check_dispatch` checks before a
dispatch of an untrusted `.qvk` bundle or vkc program runs.

- every kernel declares `extents` and a range for every specialization constant;
- `check_dispatch` refuses a buffer one word too small, spec values out of range or
  unknown, wrong push constants, workgroup counts and buffer counts;
- every dispatch of every built-in example compiles to extents its buffers hold, and the
  extent of each written binding is the buffer's size (a slice of it for copy_strided);
- on the Vulkan device (robustBufferAccess: out-of-bounds reads give 0, writes are
  dropped) the extents are tight: each dispatch computes the same words when every
  binding is cut down to its extent, and never writes past the extent of a written
  binding (canary words). The dispatches are those of example programs (from their real
  intermediate states, stepped with the kernels' references) and hand-made ones with
  random data for the kernels and variants no example uses.
Device tests skip with the reason when there is no Vulkan device.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pytest

from qopt.backends.vulkan.registry import MAX_WORKGROUPS, KernelSpec, kernel, kernels
from qopt.backends.vulkan.runtime import Dispatch, VulkanDevice, vulkan_available
from qopt.kernels import packing
from qopt.kernels.extents import strided_extent
from qopt.kernels.opcodes import UNARY_OPS
from qopt.kernels.push import conv_out, elementwise_push, static_io_push, word_of

U32 = 1 << 32
CANARY = np.uint32(0x7FC0FFEE)  # a NaN payload no kernel computes


# ----- example programs -------------------------------------------------------------------


def _pairs() -> list[tuple[str, str]]:
    from qopt.examples import MODELS, SCHEMES, supported

    return [(m, s) for m in MODELS for s in SCHEMES if supported(m, s) is None]


def program(model: str, scheme: str) -> Any:
    from shared_exports import vulkan_program

    return vulkan_program(model, scheme)


def buffer_words(prog: Any, buffer_id: int) -> int:
    return int(prog.buffers[buffer_id]["nbytes"]) // 4


def steps(prog: Any) -> Iterator[tuple[int, KernelSpec, dict[str, int], Any]]:
    for index, step in enumerate(prog.steps):
        entry = prog.kernels[step.kernel]
        yield index, kernel(entry.kernel), entry.spec, step


# ----- the declarations ---------------------------------------------------------------------


def test_every_kernel_declares_extents_and_spec_bounds() -> None:
    table = kernels()
    assert len(table) == 36
    for name, spec in table.items():
        assert spec.extents is not None, name
        assert sorted(spec.spec_bounds) == sorted(n for n, _ in spec.spec), name
        for constant, default in spec.spec:
            low, high = spec.spec_bounds[constant]
            assert low <= default <= high, (name, constant)
        spec.check_spec(dict(spec.spec))
        assert spec.extents.__doc__, name


def test_max_digits_matches_enumeration() -> None:
    rng = np.random.default_rng(7)
    for _ in range(300):
        rank = int(rng.integers(1, 4))
        dims = tuple(int(d) for d in rng.integers(1, 5, rank))
        strides = [int(s) for s in rng.integers(0, 9, rank)]
        n = int(rng.integers(1, 2 * int(np.prod(dims)) + 2))
        best = 0
        for i in range(n):
            rem, total = i, 0
            for d, s in zip(reversed(dims), reversed(strides), strict=True):
                total += (rem % d) * s
                rem //= d
            best = max(best, total)
        assert strided_extent(n, dims, tuple(strides), 3) == best + 4, (n, dims, strides)


_FUZZ_INTS = (0, 1, 2, 3, 4, 5, 7, 8, 31, 33, 64, 100, 4096, 65535, 2**31 - 1, 2**31, 2**32 - 1)


def test_extents_only_raise_value_errors() -> None:
    """Any representable push values and in-range spec values: a dict of every binding to
    a word count in [0, 2^32], or ValueError (what check_dispatch reports)."""
    rng = np.random.default_rng(11)
    for name, spec in kernels().items():
        names = {b.name for b in spec.bindings}
        for trial in range(300):
            push: dict[str, int | float] = {}
            for pname, kind in spec.push:
                if kind == "f32":
                    push[pname] = float(rng.standard_normal())
                elif kind == "i32" and rng.random() < 0.3:
                    push[pname] = -int(rng.choice(_FUZZ_INTS[1:-2]))
                else:
                    small = trial % 2 == 0  # half the trials keep every value small
                    choices = _FUZZ_INTS[:10] if small else _FUZZ_INTS
                    value = int(rng.choice(choices))
                    push[pname] = min(value, 2**31 - 1) if kind == "i32" else value
            values = {}
            if trial % 3:  # else the defaults
                values = {
                    c: int(rng.integers(lo, min(hi, 64) + 1))
                    for c, (lo, hi) in spec.spec_bounds.items()
                }
            error = None
            try:
                found = spec.extents(push, spec.spec_values(values))
            except ValueError as e:
                error = str(e)
            if error is not None:
                assert error.startswith(f"kernel {name}: "), error
                continue
            assert set(found) == names, name
            assert all(isinstance(w, int) and 0 <= w <= U32 for w in found.values()), found


# ----- check_dispatch refusals ----------------------------------------------------------------


def _first_steps() -> dict[str, tuple[KernelSpec, dict[str, int], Any, list[int]]]:
    """One real dispatch per kernel the examples use: (spec, spec values, step, words)."""
    found: dict[str, tuple[KernelSpec, dict[str, int], Any, list[int]]] = {}
    for pair in _pairs():
        prog = program(*pair)
        for _, spec, values, step in steps(prog):
            if spec.name not in found:
                words = [buffer_words(prog, b) for b in step.buffers]
                found[spec.name] = (spec, values, step, words)
    return found


def test_check_dispatch_refuses_bad_dispatches() -> None:
    for name, (spec, values, step, words) in _first_steps().items():
        push, groups = dict(step.push), list(step.groups)
        spec.check_dispatch(push, values, groups, words)
        extents = spec.extents(push, spec.spec_values(values))

        def refused(match: str, **change: Any) -> None:
            with pytest.raises(ValueError, match=match):
                spec.check_dispatch(
                    change.get("push", push),
                    change.get("spec", values),
                    change.get("groups", groups),
                    change.get("words", words),
                )

        touched = [i for i, b in enumerate(spec.bindings) if extents[b.name] > 0]
        assert touched, name
        for i in touched:  # one word too small, binding by binding
            small = list(words)
            small[i] = extents[spec.bindings[i].name] - 1
            refused("can touch", words=small)
        for constant, (low, high) in spec.spec_bounds.items():
            refused("outside", spec={**values, constant: high + 1})
            refused("outside", spec={**values, constant: low - 1})
        refused("no specialization constant", spec={**values, "NO_SUCH": 1})
        first = spec.push[0][0]
        refused("takes push constants", push={k: v for k, v in push.items() if k != first})
        refused("takes push constants", push={**push, "extra": 1})
        for pname, kind in spec.push:
            if kind == "u32":
                refused("must be an integer", push={**push, pname: -1})
                refused("must be an integer", push={**push, pname: U32})
        refused("workgroup counts", groups=[0, 1, 1])
        refused("workgroup counts", groups=[1, MAX_WORKGROUPS + 1, 1])
        refused("workgroup counts", groups=[1, 1])
        refused("bindings", words=words[:-1])
        refused("bindings", words=[*words, 4])


def test_check_dispatch_refuses_unsupported_variants_and_wrapping_indices() -> None:
    qw = kernel("linear_q4gsw")
    push = {"M": 1, "N": 8, "K": 64, "row_words": 8, "ngroups": 2}
    words = [64, 64, 16, 16, 8, 8]
    qw.check_dispatch(push, {}, [1, 1, 1], words)
    with pytest.raises(ValueError, match="WBITS = 5 is not one of"):  # in range, no kernel
        qw.check_dispatch(push, {"WBITS": 5}, [1, 1, 1], words)
    with pytest.raises(ValueError, match="ngroups is 0"):
        qw.check_dispatch({**push, "ngroups": 0}, {}, [1, 1, 1], words)
    gather = kernel("gather_rows")
    with pytest.raises(ValueError, match=r"n \* D = \d+ does not fit 32 bits"):
        gather.check_dispatch({"n": 2**16, "D": 2**16, "V": 4}, {}, [1, 1, 1], [U32] * 3 + [1])
    binary = kernel("binary")
    wide = elementwise_push((3, 3), sa=(2**31, 1), sb=(3, 1))  # 2 * 2^31 + 2
    with pytest.raises(ValueError, match=r"binding a .* wraps"):
        binary.check_dispatch(
            {**wide, "a_off": 0, "b_off": 0, "alpha": 1.0}, {}, [1, 1, 1], [U32] * 3
        )
    zero = elementwise_push((2, 0), sa=(1, 1), sb=(1, 1))
    with pytest.raises(ValueError, match="dimension of size 0"):
        binary.check_dispatch(
            {**zero, "n": 4, "a_off": 0, "b_off": 0, "alpha": 1.0}, {}, [1, 1, 1], [64] * 3
        )


# ----- the example programs ------------------------------------------------------------------


def test_example_programs_fit_their_extents() -> None:
    """Every step of every example passes check_dispatch; a written binding's extent is
    its buffer's size (copy_strided and fused_elementwise write slices: then the steps
    writing one buffer together reach its end; rms_norm_rows without HAS_H writes no h,
    without QUANT no scale, zp, q)."""
    for pair in _pairs():
        prog = program(*pair)
        reached: dict[int, int] = {}
        for index, spec, values, step in steps(prog):
            words = [buffer_words(prog, b) for b in step.buffers]
            spec.check_dispatch(step.push, values, step.groups, words)
            extents = spec.extents(step.push, spec.spec_values(values))
            assert set(extents) == {b.name for b in spec.bindings}
            for binding, buffer_id, size in zip(spec.bindings, step.buffers, words, strict=True):
                if not binding.writes:
                    continue
                where = (pair, index, spec.name, binding.name)
                if spec.name in ("copy_strided", "fused_elementwise"):
                    assert 0 < extents[binding.name] <= size, where
                elif (spec.name == "rms_norm_rows") and (
                    (binding.name == "h" and not values.get("HAS_H"))
                    or (binding.name in ("scale", "zp", "q") and not values.get("QUANT"))
                ):  # no residual stream / quantized rows to write: a 1-word placeholder
                    assert extents[binding.name] == 0, where
                    assert size == 1, where
                    continue
                else:
                    assert extents[binding.name] == size, where
                reached[buffer_id] = max(reached.get(buffer_id, 0), extents[binding.name])
        for buffer_id, words in reached.items():
            assert words == buffer_words(prog, buffer_id), (pair, buffer_id)


# ----- on the device: the extents are tight ------------------------------------------------------


@pytest.fixture(scope="module")
def dev() -> Iterator[VulkanDevice]:
    reason = vulkan_available()
    if reason:
        pytest.skip(reason)
    device = VulkanDevice()
    if not device.robust_buffer_access:
        device.close()
        pytest.skip(f"{device.name} does not offer robustBufferAccess")
    with device:
        yield device
        assert device.validation_errors == []


def run_tight(
    dev: VulkanDevice,
    spec: KernelSpec,
    values: dict[str, int],
    push: dict[str, Any],
    groups: Sequence[int],
    arrays: Sequence[np.ndarray],
    where: object,
) -> None:
    """Run the dispatch on `arrays` (uint32 words, at least the extents) and again with
    every binding cut down to its extent (at least 4 words, zero padded to 16 bytes):
    robustBufferAccess reads 0 past a buffer and drops writes there, so an extent too
    small shows as a different result; words past a written binding's extent hold a
    canary in the first run and must keep it."""
    extents = spec.extents(push, spec.spec_values(values))
    full, tight = [], []
    for binding, array in zip(spec.bindings, arrays, strict=True):
        words = extents[binding.name]
        assert array.size >= words, (where, binding.name)
        data = np.array(array, dtype=np.uint32)
        if binding.writes:
            data[words:] = CANARY
        full.append(dev.upload(data))
        small = dev.buffer(4 * max(words, 4))
        small.write(array[:words])
        tight.append(small)
    group3 = (int(groups[0]), int(groups[1]), int(groups[2]))
    try:
        dev.run(
            [
                Dispatch(spec, full, push=push, spec=values, groups=group3),
                Dispatch(spec, tight, push=push, spec=values, groups=group3),
            ]
        )
        for i, binding in enumerate(spec.bindings):
            if not binding.writes:
                continue
            words = extents[binding.name]
            got = full[i].read(np.uint32, arrays[i].size)
            past = np.flatnonzero(got[words:] != CANARY)
            assert past.size == 0, (
                f"{where}: {binding.name} written at {words + past[0]} >= {words}"
            )
            cut = tight[i].read(np.uint32, words)
            differ = np.flatnonzero(got[:words] != cut)
            assert differ.size == 0, (
                f"{where}: {binding.name}[{differ[0]}] differs when the buffers are cut to "
                f"their extents {extents}: some read extent is too small"
            )
    finally:
        for buf in full + tight:
            buf.free()


# Example programs whose dispatches cover every kernel (and spec variant) the examples use.
DEVICE_PAIRS = [
    ("llama", "pt2e_static"),
    ("llama", "8da4w"),
    ("llama", "codebook3"),
    ("llama", "w8c"),
    ("convnet", "pt2e_static"),
    ("convnet", "w4g32"),
    ("convnet", "pt2e_dynamic"),
    ("mlp", "float"),
]
PER_VARIANT = 2
"""Dispatches run per (kernel, spec values, push) of a program (all steps still run on
the host to give the later ones their real inputs)."""


@pytest.mark.parametrize(("model", "scheme"), DEVICE_PAIRS)
def test_example_extents_are_tight_on_device(dev: VulkanDevice, model: str, scheme: str) -> None:
    from qopt.backends.vulkan.bisect import _host_buffers, _words
    from qopt.examples import random_inputs

    prog = program(model, scheme)
    inputs = [x.numpy() for x in random_inputs(model, 3)]
    memory = _host_buffers(prog, inputs)
    seen: dict[tuple[Any, ...], int] = {}
    for index, spec, values, step in steps(prog):
        key = (spec.name, tuple(sorted(values.items())))
        seen[key] = seen.get(key, 0) + 1
        if seen[key] <= PER_VARIANT:
            arrays = [
                memory[b].view(np.uint8)[: 4 * buffer_words(prog, b)].view(np.uint32)
                for b in step.buffers
            ]
            run_tight(dev, spec, values, step.push, step.groups, arrays, (model, scheme, index))
        spec.run_reference(
            [_words(memory[b], binding.dtype) for binding, b in zip(spec.bindings, step.buffers)],
            step.push,
            values,
        )


def _qw_push(m: int, n: int, k: int, bits: int, group: int) -> dict[str, int]:
    return {
        "M": m,
        "N": n,
        "K": k,
        "row_words": packing.row_words(k, bits),
        "ngroups": -(-k // group),
    }


def _lut_push(rows: int, cols: int, bits: int, block: tuple[int, int], lut: int, names: str):
    br, bc, gc = names.split()
    return {
        "row_words": packing.row_words(cols, packing.lut_field_bits(bits)),
        br: block[0],
        bc: block[1],
        gc: cols // block[1],
        "L": lut,
    }


def _conv_push(n, c, h, w, oc, kh, kw, stride, pad, dil, groups) -> dict[str, int]:
    oh = conv_out(h, kh, stride, pad, dil)
    ow = conv_out(w, kw, stride, pad, dil)
    return {
        **dict(
            zip(
                ("N", "C", "H", "W", "OC", "OH", "OW", "KH", "KW"), (n, c, h, w, oc, oh, ow, kh, kw)
            )
        ),
        **dict(zip(("sh", "sw", "ph", "pw", "dh", "dw"), (stride, stride, pad, pad, dil, dil))),
        "groups": groups,
    }


def _pool_push(planes, h, w, k, stride, pad, dil, ceil, divisor=0) -> dict[str, int]:
    def out(size: int) -> int:
        span = size + 2 * pad - dil * (k - 1) - 1
        o = (-(-span // stride) if ceil else span // stride) + 1
        return o - 1 if ceil and (o - 1) * stride >= size + pad else o

    names = ("planes", "H", "W", "OH", "OW", "KH", "KW", "sh", "sw", "ph", "pw", "dh", "dw")
    values = (planes, h, w, out(h), out(w), k, k, stride, stride, pad, pad, dil, dil)
    return {**dict(zip(names, values)), "divisor_override": divisor}


def _static() -> dict[str, Any]:
    return static_io_push((0.05, 3, -128, 127), (0.1, -2, -128, 127))


def _six(shape, **strides) -> dict[str, int]:
    return elementwise_push(shape, **strides)


# (kernel, push, spec): kernels and variants the examples do not dispatch (tiles, paths,
# masks, groups, broadcasts, tails), run with random data in buffers of their extents
# plus slack.
_NO_QUANT = {"qmin": 0, "qmax": 0, "q_eps": 0.0, "q_qmin": 0, "q_qmax": 0}
_ROW_QUANT = {"qmin": -128, "qmax": 127, "q_eps": 1e-7, "q_qmin": -128, "q_qmax": 127}


DIRECT: list[tuple[str, dict[str, Any], dict[str, int]]] = [
    ("unary", {"n": 37, "a": -0.5, "b": 0.5}, {"OP": UNARY_OPS["clamp"], "WG": 8}),
    (
        "binary",
        {**_six((2, 3, 5), sa=(0, 5, 1), sb=(15, 0, 3)), "a_off": 4, "b_off": 1, "alpha": 2.0},
        {"OP": 1},
    ),
    (
        "binary",
        {**_six((4, 6), sa=(6, 1), sb=(1, 0)), "n": 17, "a_off": 0, "b_off": 2, "alpha": 1.0},
        {"OP": 2, "DTYPE": 1},
    ),
    ("where", _six((3, 4, 5), sc=(0, 5, 1), sa=(20, 5, 1), sb=(0, 0, 0)), {}),
    (
        "copy_strided",
        {**_six((3, 2, 4), si=(1, 12, 3), so=(8, 4, 1)), "in_off": 5, "out_off": 7},
        {},
    ),
    ("fill", {"n": 29, "start": word_of(1.5), "step": word_of(0.25)}, {"WG": 16}),
    ("fill", {"n": 13, "start": word_of(-3, "i32"), "step": word_of(2, "i32")}, {"MODE": 1}),
    ("reduce_rows", {"rows": 3, "cols": 301}, {"OP": 0}),
    ("reduce_rows", {"rows": 5, "cols": 45}, {"OP": 4}),
    ("reduce_rows", {"rows": 2, "cols": 7}, {"OP": 1}),
    ("softmax_rows", {"rows": 4, "cols": 70}, {"LOG": 1}),
    ("layer_norm_rows", {"rows": 3, "cols": 33, "eps": 1e-5}, {}),
    ("layer_norm_rows", {"rows": 2, "cols": 20, "eps": 1e-6}, {"RMS": 1, "HAS_BIAS": 0}),
    (
        "rms_norm_rows",
        {"rows": 3, "cols": 45, "alpha": 1.0, "eps": 1e-5, "w_off": 2, **_NO_QUANT},
        {"HAS_ADD": 1, "HAS_H": 1},
    ),
    (
        "rms_norm_rows",
        {"rows": 2, "cols": 7, "alpha": 1.0, "eps": 1e-6, "w_off": 0, **_NO_QUANT},
        {},
    ),
    (
        "rms_norm_rows",
        {"rows": 3, "cols": 45, "alpha": 1.0, "eps": 1e-5, "w_off": 1, **_ROW_QUANT},
        {"HAS_ADD": 1, "QUANT": 1},
    ),
    (
        "quantize_rows_dynamic",
        {
            "rows": 3,
            "cols": 70,
            "qmin": -128,
            "qmax": 127,
            "eps": 1e-6,
            "q_qmin": -128,
            "q_qmax": 127,
        },
        {"ZP_BEFORE_ROUND": 1},
    ),
    (
        "matmul",
        {"M": 3, "N": 5, "K": 7, "batch": 2, "a_bs": 21, "b_bs": 0},
        {"TRANS_B": 0, "HAS_BIAS": 1},
    ),
    (
        "matmul",
        {"M": 5, "N": 9, "K": 12, "batch": 2, "a_bs": 60, "b_bs": 108},
        {"MT": 3, "HAS_BIAS": 1},
    ),
    ("matmul", {"M": 4, "N": 6, "K": 9, "batch": 1, "a_bs": 36, "b_bs": 0}, {"MT": 4, "WG": 4}),
    ("conv2d", _conv_push(2, 4, 7, 6, 6, 3, 2, 2, 1, 2, 2), {"HAS_BIAS": 1, "WG": 32}),
    # stride / dilation 1 along the width (the shifted x window), OW 9 in tiles of 8
    ("conv2d", _conv_push(2, 4, 6, 9, 6, 3, 3, 1, 1, 1, 2), {"OCT": 3, "OWT": 8}),
    ("pool2d", _pool_push(3, 7, 6, 3, 2, 1, 1, True), {"OP": 1, "COUNT_INCLUDE_PAD": 0}),
    ("pool2d", _pool_push(2, 9, 8, 2, 2, 1, 2, False), {"OP": 0}),
    ("adaptive_avg_pool2d", {"planes": 3, "H": 7, "W": 5, "OH": 3, "OW": 2}, {}),
    ("gather_rows", {"n": 6, "D": 5, "V": 4}, {"WG": 4}),
    ("assert_true", {}, {}),
    ("gather_dim", {"P": 3, "N": 5, "Q": 4, "S": 6}, {"NEG": 1, "WG": 8}),
    ("gather_dim", {"P": 1, "N": 7, "Q": 3, "S": 2}, {}),
    ("scatter_dim", {"P": 2, "N": 6, "Q": 3, "S": 5}, {"NEG": 1, "WG": 4}),
    ("scatter_dim", {"P": 3, "N": 4, "Q": 5, "S": 3}, {}),
    (
        "scatter_dim",
        {"P": 2, "N": 4, "Q": 5, "S": 3},
        {"VMAP": 1, "VOFF": 7, "VSP": 5, "VSS": 12, "VSQ": 1},
    ),
    (
        "sdpa",
        {
            "BH": 6,
            "H": 3,
            "L": 4,
            "S": 5,
            "E": 8,
            "EV": 6,
            "G": 1,
            "scale": 0.3,
            "mb": 20,
            "mh": 0,
            "ml": 5,
            "ms": 1,
        },
        {"HAS_MASK": 1},
    ),
    (
        "sdpa",
        {
            "BH": 2,
            "H": 2,
            "L": 3,
            "S": 6,
            "E": 4,
            "EV": 5,
            "G": 2,
            "scale": 0.5,
            "mb": 0,
            "mh": 18,
            "ml": 6,
            "ms": 1,
        },
        {"HAS_MASK": 1, "CAUSAL": 1},
    ),
    (
        "sdpa",
        {
            "BH": 3,
            "H": 3,
            "L": 4,
            "S": 5,
            "E": 6,
            "EV": 6,
            "G": 1,
            "scale": 0.5,
            "mb": 0,
            "mh": 0,
            "ml": 0,
            "ms": 0,
        },
        {
            "CAUSAL": 1,
            "REG": 6,
            **{"VMAP": 1, "VOFF": 7, "VSH": 6, "VSS": 18, "VSE": 1},
            **{"OMAP": 1, "OOFF": 2, "OSH": 6, "OSL": 18, "OSE": 1},
        },
    ),
    (  # decode over a cache bounded on the device (the bound word random: >= S mostly)
        "sdpa",
        {
            "BH": 4,
            "H": 4,
            "L": 1,
            "S": 9,
            "E": 6,
            "EV": 6,
            "G": 2,
            "scale": 0.5,
            "mb": 0,
            "mh": 0,
            "ml": 9,
            "ms": 1,
        },
        {"HAS_MASK": 1, "REG": 6, "BOUNDED": 1},
    ),
    ("mask_bound", {"rows": 3, "S": 70}, {}),
    ("quantize_per_tensor", {"n": 21, "inv_scale": 20.0, "zp": 3, "qmin": -128, "qmax": 127}, {}),
    (
        "dequantize",
        {
            "n": 6 * 37,
            **{f"d{i}": d for i, d in enumerate((1, 2, 3, 37))},
            **{f"b{i}": b for i, b in enumerate((1, 1, 1, 8))},
            **{f"ps{i}": p for i, p in enumerate((0, 15, 5, 1))},
            "row_words": packing.row_words(37, 4),
            "lo": -8,
        },
        {"BITS": 4, "HAS_ZERO_POINT": 1},
    ),
    (
        "dequantize",
        {
            "n": 4 * 9,
            **{f"d{i}": d for i, d in enumerate((1, 1, 4, 9))},
            **{f"b{i}": b for i, b in enumerate((1, 1, 1, 9))},
            **{f"ps{i}": p for i, p in enumerate((0, 0, 1, 0))},
            "row_words": packing.row_words(9, 8),
            "lo": -128,
        },
        {"BITS": 8},
    ),
    (
        "choose_qparams_rows",
        {"rows": 3, "cols": 70, "qmin": -128, "qmax": 127, "eps": 1e-7},
        {"MAPPING": 1},
    ),
    ("quantize_rows", {"rows": 3, "cols": 11, "qmin": -128, "qmax": 127}, {"ZP_BEFORE_ROUND": 1}),
    # linear_qw paths: gemv_sym, gemm_tile, the scalar GEMV with a K tail, the tiled loop
    ("linear_q4gsw", _qw_push(1, 11, 128, 4, 32), {"HAS_BIAS": 1}),
    ("linear_q4gsw", _qw_push(5, 11, 128, 4, 32), {"NPW": 2, "MT": 4, "HAS_ZERO_POINT": 1}),
    ("linear_q4gsw", _qw_push(3, 7, 100, 4, 4), {"GROUP_SIZE": 4, "NPW": 1, "HAS_ZERO_POINT": 1}),
    ("linear_q4gsw", _qw_push(3, 11, 100, 4, 4), {"GROUP_SIZE": 4, "NPW": 3, "MT": 2, "WG": 32}),
    ("linear_q4gsw", _qw_push(3, 9, 64, 4, 64), {"GROUP_SIZE": 64, "NPW": 1, "MT": 8, "WG": 8}),
    (
        "linear_q8csw",
        _qw_push(4, 11, 48, 8, 48),
        {"GROUP_SIZE": 48, "NPW": 8, "MT": 2, "HAS_BIAS": 1},
    ),
    ("linear_q8csw", _qw_push(6, 11, 64, 8, 16), {"GROUP_SIZE": 16, "NPW": 2, "MT": 2, "WG": 4}),
    ("linear_q8csw", _qw_push(1, 5, 40, 8, 40), {"GROUP_SIZE": 40, "NPW": 1, "HAS_ZERO_POINT": 1}),
    # weights through the texel view (W_TEXEL): gemv_sym, gemm_tile (16 rows at M = 1)
    ("linear_q4gsw", _qw_push(1, 11, 128, 4, 32), {"NPW": 4, "WG": 2, "W_TEXEL": 1}),
    ("linear_q4gsw", _qw_push(1, 37, 128, 4, 32), {"NPW": 16, "WG": 2, "W_TEXEL": 1}),
    (
        "linear_q8csw",
        _qw_push(3, 11, 64, 8, 64),
        {"GROUP_SIZE": 64, "NPW": 5, "MT": 2, "WG": 2, "W_TEXEL": 1, "HAS_ZERO_POINT": 1},
    ),
    (
        "linear_q8ta_q8csw",
        {"M": 3, "N": 9, "K": 40, "row_words": packing.row_words(40, 8), **_static()},
        {"INPUT_QUANTIZED": 1, "HAS_ZERO_POINT": 1, "HAS_BIAS": 1},  # f32 out: no saturation
    ),
    (
        "linear_dq8ca_q4gsw",
        _qw_push(3, 7, 64, 4, 16),
        {"GROUP_SIZE": 16, "HAS_ZERO_POINT": 1, "HAS_BIAS": 1},
    ),
    ("linear_dq8ca_q8csw", _qw_push(2, 5, 36, 8, 36), {"GROUP_SIZE": 36, "HAS_ZERO_POINT": 1}),
    (  # the chunked GEMV and GEMM paths (128-bit chunks inside 32-wide groups)
        "linear_dq8ca_q4gsw",
        _qw_push(1, 9, 64, 4, 32),
        {"GROUP_SIZE": 32, "HAS_ZERO_POINT": 1, "NPW": 4, "WG": 2},
    ),
    ("linear_dq8ca_q4gsw", _qw_push(5, 7, 96, 4, 32), {"GROUP_SIZE": 32, "NPW": 2, "MT": 4}),
    ("linear_dq8ca_q8csw", _qw_push(3, 5, 48, 8, 48), {"GROUP_SIZE": 48, "NPW": 2, "MT": 2}),
    (
        "linear_dq8ca_q4gsw",
        _qw_push(2, 9, 64, 4, 32),
        {"GROUP_SIZE": 32, "NPW": 5, "WG": 2, "W_TEXEL": 1, "HAS_ZERO_POINT": 1},
    ),
    (
        "linear_lut",
        {"M": 2, "N": 6, "K": 32, **_lut_push(6, 32, 3, (3, 16), 8, "BN BK GK")},
        {"FBITS": 4, "HAS_BIAS": 1},
    ),
    (
        "linear_lut",
        {"M": 3, "N": 4, "K": 24, **_lut_push(4, 24, 2, (1, 8), 4, "BN BK GK")},
        {"FBITS": 2},
    ),
    (  # the palette path: 2-bit codes, two palette blocks of two words, NPW 8 x MT 2
        "linear_lut",
        {"M": 3, "N": 9, "K": 64, **_lut_push(9, 64, 2, (3, 32), 3, "BN BK GK")},
        {"FBITS": 2, "NPW": 8, "MT": 2},
    ),
    (  # the vec4 path: codebook and x through uniform blocks, 3-bit codes in 4-bit fields
        "linear_lut",
        {"M": 3, "N": 9, "K": 48, **_lut_push(9, 48, 3, (3, 16), 8, "BN BK GK")},
        {"FBITS": 4, "NPW": 4, "MT": 2, "CB_UBO": 1, "CBU_VEC4": 18, "X_UBO": 1, "XU_VEC4": 36},
    ),
    (  # 8-bit codes: the vec4 path reading the storage buffers
        "linear_lut",
        {"M": 2, "N": 5, "K": 24, **_lut_push(5, 24, 8, (5, 8), 256, "BN BK GK")},
        {"FBITS": 8, "NPW": 3, "MT": 2},
    ),
    (
        "embedding_q4gsw",
        {"n": 5, "D": 64, "V": 9, "row_words": 8, "ngroups": 4},
        {"GROUP_SIZE": 16, "HAS_ZERO_POINT": 1},
    ),
    (
        "embedding_q8csw",
        {"n": 4, "D": 40, "V": 6, "row_words": 12, "ngroups": 1},
        {"GROUP_SIZE": 40},
    ),
    (
        "embedding_lut",
        {"n": 5, "D": 32, "V": 6, **_lut_push(6, 32, 3, (2, 8), 8, "BV BD GD")},
        {"FBITS": 4},
    ),
    (
        "conv2d_q8ta_q8csw_q8to",
        {
            **_conv_push(2, 4, 6, 5, 6, 3, 3, 1, 1, 1, 2),
            "row_words": packing.row_words(18, 8),
            **_static(),
        },
        {"ACT": 0, "HAS_ZERO_POINT": 1, "HAS_BIAS": 1, "REQUANT": 0},
    ),
    (
        "conv2d_q8ta_q8csw_q8to",
        {
            **_conv_push(1, 3, 5, 5, 4, 2, 2, 2, 0, 1, 1),
            "row_words": packing.row_words(12, 8),
            **_static(),
        },
        {"ACT": 2},
    ),
    (  # the word walk with a 4 x 8 tile (24 taps, OW 7)
        "conv2d_q8ta_q8csw_q8to",
        {
            **_conv_push(1, 4, 5, 7, 6, 3, 2, 1, 1, 1, 1),
            "row_words": packing.row_words(24, 8),
            **_static(),
        },
        {"ACT": 1, "OCT": 4, "OWT": 8},
    ),
    (
        "add_q8ta_q8ta_q8to",
        {
            "n": 23,
            **{
                f"{x}_{k}": v
                for x in "ab"
                for k, v in (
                    ("inv_scale", 20.0),
                    ("zp", 1),
                    ("qmin", -128),
                    ("qmax", 127),
                    ("scale", 0.05),
                )
            },
            "alpha": 1.0,
            **{k: v for k, v in _static().items() if k.startswith(("out_", "clamp_"))},
        },
        {"A_QUANTIZED": 1},
    ),
]


def _random_words(rng: np.random.Generator, dtype: str, count: int, name: str, push) -> np.ndarray:
    if name == "idx":  # row indices: in range, negative (from the end) and out of range
        v = int(push["V"] if "V" in push else push["N"])
        return rng.integers(-v - 2, v + 2, count).astype(np.int32).view(np.uint32)
    if dtype == "f32":
        sign = rng.choice(np.array([-1.0, 1.0], np.float32), count)
        return (sign * rng.uniform(0.25, 2.0, count).astype(np.float32)).view(np.uint32)
    if name == "cond":  # mostly true, so the last words of a are selected
        return (np.arange(count) % 3 != 0).astype(np.uint32)
    if dtype == "i32":  # nonzero: a word read as 0 past a cut buffer must change something
        magnitude = rng.integers(1, 10, count) * rng.choice(np.array([-1, 1]), count)
        return magnitude.astype(np.int32).view(np.uint32)
    return rng.integers(0, U32, count, dtype=np.uint64).astype(np.uint32)


@pytest.mark.parametrize(
    "case", range(len(DIRECT)), ids=[f"{i}-{c[0]}" for i, c in enumerate(DIRECT)]
)
def test_direct_extents_are_tight_on_device(dev: VulkanDevice, case: int) -> None:
    name, push, values = DIRECT[case]
    spec = kernel(name)
    rng = np.random.default_rng(case)
    extents = spec.extents(push, spec.spec_values(values))
    arrays = [_random_words(rng, b.dtype, extents[b.name] + 7, b.name, push) for b in spec.bindings]
    groups = spec.workgroups(push, spec.spec_values(values))
    run_tight(dev, spec, values, push, groups, arrays, name)
    # the grid-stride loops: one workgroup covers the same words
    run_tight(dev, spec, values, push, (1, 1, 1), arrays, (name, "one workgroup"))


def test_lut_codes_past_the_palette_read_its_last_entry(dev: VulkanDevice) -> None:
    """A code >= L (a 3-bit palette in 4-bit fields holds up to 15) is data the shader
    indexes with: it reads the palette's last entry, on the device and in the reference."""
    rows, cols, lut = 4, 16, 8
    codes = np.full((rows, packing.row_words(cols, 4)), 0xFEDCBA98, np.uint32)  # fields 8..15
    book = np.arange(2 * 2 * lut, dtype=np.float32) + 1  # palettes [2, 2, 8]
    push = {"n": 3, "D": cols, "V": rows, "row_words": codes.shape[1], "BV": 2, "BD": 8}
    push |= {"GD": 2, "L": lut}
    idx = np.array([3, 0, -1], np.int32)
    spec = kernel("embedding_lut")
    arrays = {
        "idx": idx,
        "codes": codes.reshape(-1),
        "codebook": book,
        "out": np.zeros(3 * cols, np.float32),
        "status": np.zeros(1, np.uint32),
    }
    out = [b.name for b in spec.bindings].index("out")
    bufs = [dev.upload(arrays[b.name]) for b in spec.bindings]
    dev.run([Dispatch(spec, bufs, push=push)])
    got = bufs[out].read(np.float32, 3 * cols)
    status = bufs[-1].read(np.uint32, 1)
    for b in bufs:
        b.free()
    host = [arrays[b.name].copy() for b in spec.bindings]
    spec.run_reference(host, push, {})
    palette = (idx[:, None] % rows // 2) * 2 + np.arange(cols) // 8
    assert np.array_equal(got, host[out])
    assert status[0] == host[-1][0] == 1  # -1 reads the last row, and is flagged
    assert np.array_equal(got.reshape(3, cols), book[palette * lut + lut - 1])


def test_device_cases_cover_every_kernel() -> None:
    device_kernels = {spec.name for pair in DEVICE_PAIRS for _, spec, _, _ in steps(program(*pair))}
    example_kernels = {spec.name for pair in _pairs() for _, spec, _, _ in steps(program(*pair))}
    assert example_kernels <= device_kernels
    assert set(kernels()) == device_kernels | {name for name, _, _ in DIRECT}
    for name, push, values in DIRECT:  # the hand-made dispatches are valid
        spec = kernel(name)
        extents = spec.extents(push, spec.spec_values(values))
        groups = spec.workgroups(push, spec.spec_values(values))
        spec.check_dispatch(push, values, groups, [extents[b.name] for b in spec.bindings])
