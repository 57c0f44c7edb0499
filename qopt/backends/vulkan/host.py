"""Host segments of a Vulkan program (the host fallback for ops without a kernel).

A `vkc.host_call` travels in a `.qvk` bundle as the MLIR text of one `func.func`
(`segment_text`): its arguments are the tensors the segment reads, its results
those it writes. A bundle is untrusted, so that text is data: `parse_segment`
bounds it (`qopt.limits.check_mlir_text`, `max_graph_nodes`), parses it with qopt's
own dialects, verifies it and accepts only ops of `vkc.host_op_allowed` (aten and
quant ops, which the reference interpreter runs); nothing in it is ever evaluated
as Python. `HostSegmentIR.run` runs it on the words read from the device buffers
(`qopt.interpreters.vkc.tensor_from_words`) and gives the words to write back
(`words_from_tensor`), the conversions the vkc interpreter makes for the same op.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, ModuleOp, TensorType
from xdsl.interpreter import Interpreter

from qopt.context import parse_module, print_module
from qopt.dialects import vkc
from qopt.dialects.aten.bounds import upper_bounds
from qopt.dtypes import numpy_dtype
from qopt.errors import QoptError
from qopt.interpreters import call_function, make_interpreter
from qopt.interpreters.vkc import tensor_from_words, words_from_tensor
from qopt.limits import DEFAULT_LIMITS, Limits, check_mlir_text

SEGMENT_NAME = "host_segment"
"""The name of the function a bundle's host segment IR holds."""


def segment_text(op: vkc.HostCallOp) -> str:
    """The MLIR text of `op`'s body as `func.func @host_segment`, for a bundle."""
    body = op.body.clone()
    block = body.block
    yields = block.last_op
    assert isinstance(yields, vkc.HostYieldOp)
    results = [v.type for v in yields.values]
    ret = func.ReturnOp(*yields.values)
    ret.location = yields.location
    block.insert_op_before(ret, yields)
    yields.detach()
    yields.erase()
    function = func.FuncOp(SEGMENT_NAME, ([a.type for a in block.args], results), body)
    function.location = op.location
    return print_module(ModuleOp([function]), elide_larger_than=None)


def element_dtype_name(type: TensorType) -> str:
    """The numpy dtype name of `type`'s elements (their MLIR spelling where numpy has
    none), for the bundle checks (checks.py)."""
    try:
        return numpy_dtype(type.get_element_type()).name
    except (ValueError, KeyError, TypeError):
        return str(type.get_element_type())


@dataclass
class HostSegmentIR:
    """A parsed, checked host segment: `function` of `module`, ready to run."""

    module: ModuleOp
    function: func.FuncOp
    _interpreter: Interpreter | None = field(default=None, repr=False)

    @property
    def input_types(self) -> list[TensorType[Any]]:
        return _tensors(self.function.function_type.inputs.data)

    @property
    def result_types(self) -> list[TensorType[Any]]:
        return _tensors(self.function.function_type.outputs.data)

    def run(self, arrays: Sequence[np.ndarray], what: str) -> list[np.ndarray]:
        """The segment's results on `arrays` (its argument tensors); an error in it is
        a QoptError naming `what`."""
        if self._interpreter is None:
            self._interpreter = make_interpreter(self.module)
        try:
            results = call_function(self._interpreter, self.function, list(arrays))
        except QoptError:
            raise
        except Exception as e:  # a failure of an op on these values, never a traceback
            first = (str(e).strip().splitlines() or [""])[0][:200]
            raise QoptError(f"{what} failed: {type(e).__name__}: {first}") from None
        return [np.asarray(r) for r in results]


def _tensors(types: Sequence[Any]) -> list[TensorType[Any]]:
    found: list[TensorType[Any]] = []
    for t in types:
        assert isinstance(t, TensorType)
        found.append(t)
    return found


def parse_segment(
    text: Any, what: str, limits: Limits, max_bytes: int | None = None
) -> HostSegmentIR:
    """A bundle's host segment IR, parsed and checked (see the module docstring);
    QoptError (one line, naming `what`) if it is not one verified `func.func` of
    allowed ops over static tensors, or if its values (8 bytes an element, at most)
    need more than `max_bytes` (the program's device memory; default: the
    `max_device_bytes` limit)."""
    if max_bytes is None:
        max_bytes = limits.max_device_bytes
    from xdsl.utils.exceptions import DiagnosticException, ParseError, VerifyException

    if not isinstance(text, str):
        raise QoptError(f"{what}: its IR must be MLIR text")
    data = text.encode()
    check_mlir_text(data, limits, what)
    try:
        module = parse_module(text, what)
    except RecursionError:
        raise QoptError(f"{what}: its IR is nested too deeply") from None
    except (ParseError, DiagnosticException, VerifyException, ValueError) as e:
        first = (str(e).strip().splitlines() or [""])[0][:200]
        raise QoptError(f"{what}: its IR does not parse: {first}") from None
    except Exception as e:  # untrusted text: whatever the parser trips on is refused
        raise QoptError(f"{what}: its IR does not parse ({type(e).__name__})") from None
    ops = list(module.walk())
    limits.check(f"{what}: its ops", len(ops), "max_graph_nodes")
    functions = [op for op in module.ops if isinstance(op, func.FuncOp)]
    if len(functions) != 1 or len(list(module.ops)) != 1 or functions[0].is_declaration:
        raise QoptError(f"{what}: its IR must be one func.func with a body")
    function = functions[0]
    for op in ops[1:]:
        if op is function or (isinstance(op, func.ReturnOp) and op.parent_op() is function):
            continue
        if not vkc.host_op_allowed(op.name) or op.name == vkc.HostYieldOp.name:
            raise QoptError(
                f"{what}: '{op.name[:60]}' may not run on the host (a host segment holds "
                f"only ops of the {', '.join(vkc.HOST_DIALECTS)} dialects)"
            )
    if len(function.body.blocks) != 1:
        raise QoptError(f"{what}: its function must have one block")
    signature: FunctionType = function.function_type
    for t in (*signature.inputs.data, *signature.outputs.data):
        if not isinstance(t, TensorType) or any(int(d) < 0 for d in t.get_shape()):
            raise QoptError(f"{what}: its arguments and results must be static tensors")
    # Every value's largest size, a `?` one's derived from the static arguments by its
    # op's shape rule (qopt.dialects.aten.bounds; no rule: refused), before any runs.

    try:
        bounds = upper_bounds(function)
    except QoptError as e:
        raise QoptError(f"{what}: {e}") from None
    except VerifyException as e:
        first = (str(e).strip().splitlines() or [""])[0][:200]
        raise QoptError(f"{what}: its IR does not verify: {first}") from None
    except Exception as e:  # untrusted IR: whatever the bound rules trip on is refused
        raise QoptError(f"{what}: no bound on its values' sizes ({type(e).__name__})") from None
    value_bytes = 0
    for op in ops:
        for value in op.results:
            if isinstance(value.type, TensorType):
                count = math.prod(max(int(d), 0) for d in bounds.get(value, ()))
                limits.check(f"{what}: a tensor's elements", count, "max_tensor_elements")
                value_bytes += 8 * count
    if value_bytes > max_bytes:
        raise QoptError(
            f"{what}: its values need up to {value_bytes} bytes on the host, more than the "
            f"program asks of the device ({max_bytes} bytes)"
        )
    try:
        module.verify()
    except (VerifyException, DiagnosticException) as e:
        first = (str(e).strip().splitlines() or [""])[0][:200]
        raise QoptError(f"{what}: its IR does not verify: {first}") from None
    except Exception as e:  # a verifier tripping on crafted attributes
        raise QoptError(f"{what}: its IR does not verify ({type(e).__name__})") from None
    return HostSegmentIR(module, function)


def run_host_call(
    program: Any,
    call: Any,
    read: Callable[[int, np.dtype, int], np.ndarray],
    write: Callable[[int, np.ndarray], None],
) -> None:
    """Run host segment `call` of `program` (a `program.BundleProgram` and one of its
    `HostCall`s): `read(buffer, dtype, count)` gives the first `count` 32-bit words
    of a buffer it reads (a constant is read from `program.constants`, never through
    `read`); `write(buffer, words)` stores the words of a result. Every read happens
    before the segment runs, every write after it."""
    index = program.host_calls.index(call)
    what = f"host segment {index} ({', '.join(call.ops[:3])})"
    if call.segment is None:  # compiled in this process (a loaded bundle's is parsed)
        call.segment = parse_segment(call.ir, what, DEFAULT_LIMITS)
    segment: HostSegmentIR = call.segment
    arrays = []
    for b, type in zip(call.reads, segment.input_types, strict=True):
        record = program.buffers[b]
        if record["kind"] == "constant":
            words = program.constants[record["constant"]]
        else:
            count = max(_numel(type), 1)
            words = read(b, _abi(numpy_dtype(type.get_element_type())), count)
        arrays.append(tensor_from_words(words, type))
    results = segment.run(arrays, what)
    staged = []
    for i, (type, value) in enumerate(zip(segment.result_types, results, strict=True)):
        if tuple(np.shape(value)) != tuple(int(d) for d in type.get_shape()):
            raise QoptError(f"{what}: result {i} has shape {list(np.shape(value))}, not {type}")
        dtype = _abi(numpy_dtype(type.get_element_type()))
        staged.append(words_from_tensor(value, dtype, f"result {i} of {what}"))
    for b, words in zip(call.writes, staged, strict=True):
        write(b, words)


def _abi(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.float32 if dtype.kind == "f" else np.int32)


def _numel(type: TensorType[Any]) -> int:
    return int(np.prod([int(d) for d in type.get_shape()], dtype=np.int64))


__all__ = [
    "SEGMENT_NAME",
    "HostSegmentIR",
    "element_dtype_name",
    "parse_segment",
    "run_host_call",
    "segment_text",
]
