"""qopt's passes and pipelines, registered lazily as xDSL does (`get_all_passes`)."""

from __future__ import annotations

from collections.abc import Callable

from xdsl.passes import ModulePass


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """`{pass name: factory}`; each factory imports its pass module when called."""

    def get_fuse_quant() -> type[ModulePass]:
        from qopt.lowering.fuse_quant import FuseQuantPass

        return FuseQuantPass

    return {"fuse-quant": get_fuse_quant}
