"""qopt's dialects, registered lazily as xDSL does (`get_all_dialects`)."""

from __future__ import annotations

from collections.abc import Callable

from xdsl.ir import Dialect


def get_all_dialects() -> dict[str, Callable[[], Dialect]]:
    def get_aten() -> Dialect:
        from qopt.dialects.aten import Aten

        return Aten

    def get_quant() -> Dialect:
        from qopt.dialects.quant import Quant

        return Quant

    def get_qfused() -> Dialect:
        from qopt.dialects.qfused import QFused

        return QFused

    def get_coreml() -> Dialect:
        from qopt.dialects.coreml import CoreML

        return CoreML

    def get_vkc() -> Dialect:
        from qopt.dialects.vkc import Vkc

        return Vkc

    def get_ml_program() -> Dialect:
        from qopt.dialects.ml_program import MLProgram

        return MLProgram

    return {
        "ml_program": get_ml_program,
        "aten": get_aten,
        "quant": get_quant,
        "qfused": get_qfused,
        "coreml": get_coreml,
        "vkc": get_vkc,
    }
