"""Every `coreml` op has a custom assembly format, and tests/lit/coreml/ops.mlir
round-trips each one (coreml used to print only the generic form).

The lit file runs the round trips through qopt-opt; here the dialect is walked
so that a new op without a format, or missing from the lit file, fails at once.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from xdsl.ir import Operation
from xdsl.irdl import IRDLOperation
from xdsl.printer import Printer

from qopt.context import make_context, parse_module
from qopt.dialects.coreml import CoreML

OPS_MLIR = Path(__file__).resolve().parents[2] / "lit" / "coreml" / "ops.mlir"
OPS = sorted(CoreML.operations, key=lambda op: op.name)


def test_dialect_has_every_op() -> None:
    assert len(OPS) == 78


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.name)
def test_op_has_custom_syntax(op: type[Operation]) -> None:
    assert issubclass(op, IRDLOperation)
    declarative = op.get_irdl_definition().assembly_format is not None
    handwritten = "print" in vars(op) and "parse" in vars(op)  # coreml.const
    assert declarative or handwritten, f"{op.name} prints only in the generic form"


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.name)
def test_op_round_trips_in_lit(op: type[Operation]) -> None:
    text = OPS_MLIR.read_text()
    custom = re.compile(rf"^  %\w+ = {re.escape(op.name)} ", re.MULTILINE)
    checked = re.compile(rf"^// CHECK(-NEXT)?: +%\w+ = {re.escape(op.name)} ", re.MULTILINE)
    generic = re.compile(rf'^// GENERIC: +%\w+ = "{re.escape(op.name)}"', re.MULTILINE)
    assert custom.search(text), f"{op.name} is not written in its custom form in {OPS_MLIR.name}"
    assert checked.search(text), f"{op.name} has no CHECK line of its custom form"
    assert generic.search(text), f"{op.name} has no GENERIC line"


def _print(module: Operation, generic: bool) -> str:
    out = io.StringIO()
    Printer(stream=out, print_generic_format=generic).print_op(module)
    # Re-parsing declares each blob again, under a fresh key (`w_fp32` -> `w_fp32_0`).
    return re.sub(r"dense_resource<(\w+?)(_\d+)*>", r"dense_resource<\1>", out.getvalue())


def test_custom_and_generic_forms_agree() -> None:
    """Custom text -> module -> custom and generic text -> the same custom printout."""
    ctx = make_context()
    module = parse_module(OPS_MLIR.read_text(), OPS_MLIR.name, ctx=ctx)
    module.verify()
    expected = _print(module, False)
    assert "coreml.const dense_resource<w_fp32> : tensor<2x2xf32>" in expected
    for generic in (False, True):
        again = parse_module(_print(module, generic), ctx=ctx)
        again.verify()
        assert _print(again, False) == expected
