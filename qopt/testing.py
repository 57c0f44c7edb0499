"""Checking an imported program against torch, op by op.

End-to-end comparisons of quantized programs are chaotic: a last-bit difference
in a float reduction (torch and numpy sum in different orders) can move a value
across a rounding boundary of a dynamic activation quantizer and change the
output by one quantization step. `check_ops_against_torch` removes that
amplification: it runs the imported module op by op with *torch's* value of
every graph node substituted for qopt's ("teacher forcing"), so each op is
checked on exactly the inputs torch saw. Integer results must then be equal and
float results within `rtol`.

`fuse_and_validate` does the same for the fuse-quant pass: it runs the fused
module op by op with the *unfused* module's values substituted, and compares each
fused op with the value it replaces (see its docstring); `dequantized_anchor_operands`
lists the dequantized weights still feeding a linear / conv2d / embedding / matmul.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch.export import ExportedProgram
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import ReturnOp
from xdsl.interpreter import Interpreter, PythonValues
from xdsl.ir import Operation, SSAValue

from qopt.dialects import qfused, quant
from qopt.dialects.queries import entry_function
from qopt.errors import where
from qopt.frontend.converters import get_converters
from qopt.frontend.importer import Importer
from qopt.interpreters import check_inputs, interpret, make_interpreter
from qopt.lowering.fuse_quant import FuseQuantPass
from qopt.numerics.quant import expand_params, scaled


@dataclass
class OpMismatch:
    op_name: str
    node: str
    detail: str


def import_with_origins(ep: ExportedProgram) -> tuple[ModuleOp, dict[SSAValue, str]]:
    """Import `ep` and return, for every SSA value that stands for a graph
    node's result, that node's name."""
    importer = Importer(ep, get_converters())
    module = importer.run()
    origins: dict[SSAValue, str] = {}
    for node, value in importer.values.items():
        if isinstance(value, SSAValue):
            origins[value] = node.name
        elif isinstance(value, tuple):
            for i, v in enumerate(value):
                if isinstance(v, SSAValue):
                    origins[v] = f"{node.name}[{i}]"
    return module, origins


def torch_node_values(ep: ExportedProgram, inputs: tuple[Any, ...]) -> dict[str, np.ndarray]:
    """Every call_function node's value when torch runs the program."""
    values: dict[str, np.ndarray] = {}
    gm = ep.module()

    class Recorder(torch.fx.Interpreter):
        def run_node(self, n: torch.fx.Node) -> Any:
            result = super().run_node(n)
            if type(result) is torch.Tensor:  # not a torchao tensor subclass
                values[n.name] = result.detach().numpy()
            elif isinstance(result, tuple | list):
                for i, r in enumerate(result):
                    if type(r) is torch.Tensor:
                        values[f"{n.name}[{i}]"] = r.detach().numpy()
            return result

    with torch.no_grad():
        Recorder(gm).run(*inputs)
    return values


def _mismatch(got: np.ndarray, want: np.ndarray, rtol: float) -> str | None:
    if got.shape != want.shape:
        return f"shape {got.shape} != torch {want.shape}"
    if got.dtype != want.dtype:
        return f"dtype {got.dtype} != torch {want.dtype}"
    if got.dtype.kind != "f":
        bad = int(np.count_nonzero(got != want))
        return None if bad == 0 else f"{bad} of {got.size} elements differ"
    g, w = got.astype(np.float64), want.astype(np.float64)
    finite = np.isfinite(w)
    infinite = ~finite & ~np.isnan(w)
    if not np.array_equal(np.isnan(g), np.isnan(w)) or not np.array_equal(g[infinite], w[infinite]):
        return "non-finite values differ"
    norm = np.linalg.norm(w[finite])
    err = np.linalg.norm(g[finite] - w[finite]) / max(norm, 1e-30)
    if norm == 0:
        err = float(np.max(np.abs(g[finite]), initial=0.0))
    return None if err <= rtol else f"relative error {err:.3g}"


def check_ops_against_torch(
    ep: ExportedProgram, inputs: tuple[Any, ...], rtol: float = 1e-5
) -> list[OpMismatch]:
    """Run the imported program op by op with torch's node values substituted;
    return the ops whose own result differs from torch's."""
    module, origins = import_with_origins(ep)
    want = torch_node_values(ep, inputs)
    func = entry_function(module)
    interpreter = make_interpreter(module)
    env: dict[SSAValue, Any] = dict(
        zip(func.body.block.args, check_inputs(func, inputs), strict=True)
    )
    mismatches: list[OpMismatch] = []
    for op in func.body.block.ops:
        if isinstance(op, ReturnOp):
            break
        results = interpreter.run_op(op, tuple(env[o] for o in op.operands))
        for value, result in zip(op.results, results, strict=True):
            env[value] = result
            name = origins.get(value)
            if name is None or name not in want:
                continue
            if (problem := _mismatch(np.asarray(result), want[name], rtol)) is not None:
                mismatches.append(OpMismatch(op.name, name, problem))
            env[value] = want[name]
    return mismatches


# ----- translation validation of fuse-quant ------------------------------------------

_BOUNDARY_RTOL = 1e-6
"""How close (relative) to a rounding boundary an output quantizer's input must
lie for a one-step difference of a fused op's requantized result to be allowed."""

DEQUANTIZE_OPS = ("quant.dequantize", "quant.dequantize_codebook")
ANCHOR_OPS = ("aten.linear", "aten.conv2d", "aten.embedding", "aten.matmul")
_LAYOUT_OPS = ("aten.view", "aten.permute", "aten.transpose", "aten.clone", "aten.to")


@dataclass
class Mismatch:
    """One op of the fused module whose result disagrees with the unfused value
    it stands for (or an output of the program, `op_name == "return"`)."""

    op_name: str
    location: str
    detail: str

    def __str__(self) -> str:
        return f"{self.op_name} at {self.location}: {self.detail}"


@dataclass
class FusionValidation:
    """What `fuse_and_validate` found."""

    log: Any  # the pass's FusionLog
    mismatches: list[Mismatch]
    """Op-by-op differences (teacher forced): must be empty."""
    end_to_end: list[Mismatch]
    """Program outputs of the fused module (run on its own) against the unfused ones."""
    outputs_before: tuple[np.ndarray, ...]
    outputs_after: tuple[np.ndarray, ...]
    boundary_steps: int = 0
    """Requantized elements allowed to differ by one step (their float value lay
    within 1e-6 relative of a rounding boundary)."""
    checked: int = 0
    """Fused ops compared with the value they replace."""

    @property
    def ok(self) -> bool:
        return not self.mismatches and not self.end_to_end


class _Recorder(Interpreter.Listener):
    def __init__(self, values: dict[SSAValue, Any]):
        self.values = values

    def did_interpret_op(self, op: Operation, results: PythonValues) -> None:
        for value, result in zip(op.results, results, strict=True):
            self.values[value] = result


def record_values(
    module: ModuleOp, inputs: tuple[Any, ...], function: str = "forward"
) -> tuple[dict[SSAValue, Any], tuple[np.ndarray, ...]]:
    """Interpret `module`, returning the value of every SSA value it computed and
    the program's outputs."""
    func = entry_function(module, function)
    arrays = check_inputs(func, inputs)
    values: dict[SSAValue, Any] = dict(zip(func.body.block.args, arrays, strict=True))
    interpreter = make_interpreter(module)
    interpreter.listeners = (_Recorder(values),)
    outputs = interpreter.call_op(func, tuple(arrays))
    return values, tuple(np.asarray(o) for o in outputs)


def _boundary_steps(
    got: np.ndarray, want: np.ndarray, quantize: Operation, values: dict[SSAValue, Any]
) -> tuple[int, str | None]:
    """Elements of a requantized result that differ from the unfused quantizer's
    output: allowed (counted) exactly where they differ by one step and the
    quantizer's float input lay within 1e-6 relative of a rounding boundary."""
    if not isinstance(quantize, quant.QuantizeOp) or quantize.input not in values:
        return 0, "the replaced value is not a quantize result"
    x = np.asarray(values[quantize.input])
    block = quantize.block_size.get_values()
    # x in units of the scale, before rounding, exactly as the quantizer computes it
    v = scaled(x, values[quantize.scale], block, quantize.compute_dtype())
    diff = got.astype(np.int64) - want.astype(np.int64)
    bad = diff != 0
    if np.any(np.abs(diff) > 1):
        return 0, f"{int(np.count_nonzero(np.abs(diff) > 1))} elements differ by more than one step"
    v64 = v.astype(np.float64)
    boundary = np.floor(v64) + 0.5
    near = np.abs(v64 - boundary) <= _BOUNDARY_RTOL * np.maximum(np.abs(v64), 1.0)
    # the fused value must be the other neighbour of v: v rounded across the boundary
    zp = 0
    if quantize.zero_point is not None and quantize.zero_point in values:
        zp = expand_params(values[quantize.zero_point], block, x.shape).astype(np.int64)
    n = got.astype(np.int64) - zp
    toward = (n == np.floor(v64)) | (n == np.floor(v64) + 1)
    allowed = bad & near & toward
    if np.any(bad & ~allowed):
        far = int(np.count_nonzero(bad & ~allowed))
        return 0, f"{far} of {got.size} elements differ away from a rounding boundary"
    return int(np.count_nonzero(allowed)), None


def _compare_fused(
    op: Operation,
    got: np.ndarray,
    want: np.ndarray,
    old: SSAValue,
    values: dict[SSAValue, Any],
    rtol: float,
) -> tuple[int, str | None]:
    if got.shape != want.shape or got.dtype != want.dtype:
        return 0, _mismatch(got, want, rtol)
    if got.dtype.kind == "f" or np.array_equal(got, want):
        return 0, _mismatch(got, want, rtol)
    if getattr(op, "requant", None) is None or not isinstance(old.owner, Operation):
        return 0, _mismatch(got, want, rtol)
    return _boundary_steps(got, want, old.owner, values)


def fuse_and_validate(
    module: ModuleOp,
    inputs: tuple[Any, ...],
    rtol: float = 1e-5,
    function: str = "forward",
) -> FusionValidation:
    """Run fuse-quant on `module` (in place) and check it op by op.

    The unfused module is interpreted first, recording every SSA value. The pass
    keeps the ops it does not touch (same Python objects, same SSA values) and
    logs, for each fused result, the unfused value it stands for. The fused
    module is then run op by op with the unfused value substituted for every
    value that existed before or that `log.replaced` maps, so each op sees
    exactly the inputs the unfused graph saw. Each fused op's result is compared
    with the value it replaces: floats within `rtol` (relative L2), integers
    exactly, except a one-step difference of a requantized result where the
    unfused float value lies within 1e-6 relative of a rounding boundary (the
    fused op accumulates in float64, the unfused graph in float32): those are
    counted in `boundary_steps`. Every surviving op is compared too (its inputs
    are the unfused ones, so a rewiring mistake shows). Finally the fused module
    runs on its own and its outputs are compared with the unfused outputs
    (`end_to_end`).
    """
    before, outputs_before = record_values(module, inputs, function)
    log = FuseQuantPass.run(module)
    module.verify()

    func = entry_function(module, function)
    interpreter = make_interpreter(module)
    env: dict[SSAValue, Any] = dict(
        zip(func.body.block.args, check_inputs(func, inputs), strict=True)
    )
    mismatches: list[Mismatch] = []
    steps = checked = 0
    for op in func.body.block.ops:
        if isinstance(op, ReturnOp):
            break
        results = interpreter.run_op(op, tuple(env[o] for o in op.operands))
        for value, result in zip(op.results, results, strict=True):
            env[value] = result
            old = log.replaced.get(value, value if value in before else None)
            if old is None:
                if isinstance(op, qfused.QFusedOp):
                    mismatches.append(
                        Mismatch(op.name, where(op), "fused result missing from log.replaced")
                    )
                continue
            if old not in before:
                mismatches.append(Mismatch(op.name, where(op), "replaced value never computed"))
                continue
            got, want = np.asarray(result), np.asarray(before[old])
            if isinstance(op, qfused.QFusedOp):
                checked += 1
                n, problem = _compare_fused(op, got, want, old, before, rtol)
                steps += n
            else:
                problem = _mismatch(got, want, rtol)
            if problem is not None:
                mismatches.append(Mismatch(op.name, where(op), problem))
            env[value] = before[old]

    # End to end: the fused module on its own, no substitution.

    alone = interpret(module, *inputs, function=function)
    end_to_end: list[Mismatch] = []
    if len(alone) != len(outputs_before):
        end_to_end.append(Mismatch("return", "outputs", "number of outputs changed"))
    for i, (got, want) in enumerate(zip(alone, outputs_before, strict=False)):
        if (problem := _mismatch(got, want, rtol)) is not None:
            end_to_end.append(Mismatch("return", f"output {i}", problem))
    return FusionValidation(log, mismatches, end_to_end, outputs_before, alone, steps, checked)


def dequantized_anchor_operands(module: ModuleOp) -> list[str]:
    """Every `quant.dequantize` / `quant.dequantize_codebook` result still used by
    an aten.linear / conv2d / embedding / matmul (directly or through layout ops
    such as view/permute/transpose): one line per use."""
    found: list[str] = []
    for op in module.walk():
        if op.name not in ANCHOR_OPS:
            continue
        for i, operand in enumerate(op.operands):
            producer = operand.owner
            while isinstance(producer, Operation) and producer.name in _LAYOUT_OPS:
                producer = producer.operands[0].owner
            if isinstance(producer, Operation) and producer.name in DEQUANTIZE_OPS:
                found.append(f"{producer.name} feeds operand {i} of {op.name} at {where(op)}")
    return found
