"""qopt's dialects, registered lazily as xDSL does (`get_all_dialects`)."""

from __future__ import annotations

from collections.abc import Callable

from xdsl.ir import Dialect

from qopt.registry import factories

#: Each dialect by name: the module that defines it (imported when it is asked for).
DIALECTS: dict[str, str] = {
    "ml_program": "qopt.dialects.ml_program:MLProgram",
    "aten": "qopt.dialects.aten:Aten",
    "quant": "qopt.dialects.quant:Quant",
    "qfused": "qopt.dialects.qfused:QFused",
    "coreml": "qopt.dialects.coreml:CoreML",
    "vkc": "qopt.dialects.vkc:Vkc",
}


def get_all_dialects() -> dict[str, Callable[[], Dialect]]:
    """`{dialect name: factory}`; each factory imports its dialect's module when called
    (qopt/registry.py)."""
    return factories(DIALECTS)
