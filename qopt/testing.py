"""Checking an imported program against torch, op by op.

End-to-end comparisons of quantized programs are chaotic: a last-bit difference
in a float reduction (torch and numpy sum in different orders) can move a value
across a rounding boundary of a dynamic activation quantizer and change the
output by one quantization step. `check_ops_against_torch` removes that
amplification: it runs the imported module op by op with *torch's* value of
every graph node substituted for qopt's ("teacher forcing"), so each op is
checked on exactly the inputs torch saw. Integer results must then be equal and
float results within `rtol`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch.export import ExportedProgram
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import ReturnOp
from xdsl.ir import SSAValue

from qopt.frontend.converters import get_converters
from qopt.frontend.importer import Importer
from qopt.interpreters import check_inputs, entry_function, make_interpreter


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
