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

    return {"aten": get_aten, "quant": get_quant, "qfused": get_qfused}
