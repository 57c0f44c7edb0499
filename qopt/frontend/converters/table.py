"""A name-keyed table of converters, filled by a decorator."""

from __future__ import annotations

from collections.abc import Callable

from qopt.frontend.importer import Converter


class ConverterTable(dict[str, Converter]):
    """`@table("aten.relu.default", ...)` registers a converter for those targets."""

    def __call__(self, *targets: str) -> Callable[[Converter], Converter]:
        def register(fn: Converter) -> Converter:
            for target in targets:
                if target in self:
                    raise ValueError(f"converter for {target} registered twice")
                self[target] = fn
            return fn

        return register
