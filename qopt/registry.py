"""Lazy registries and lazy modules: a table names each registered object by a reference,
`"package.module:Name"`, and `resolve` imports the module only when the object is asked
for. qopt's registries (dialects, passes, frontends, interpreter tables) are such tables,
each resolved in one function. Lazy loading is the point of xDSL's registries
(`get_all_dialects`, `get_all_passes`: `{name: factory}`): a command imports only the
dialects and passes it runs, so `qopt-opt --help` and a compile for one target stay fast.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Mapping
from typing import Any


def resolve(reference: str) -> Any:
    """The object `reference` (`"package.module:Name"`) names, its module imported."""
    module, _, name = reference.partition(":")
    return getattr(importlib.import_module(module), name)


def factories(table: Mapping[str, str]) -> dict[str, Callable[[], Any]]:
    """`{name: factory}` (xDSL's registry shape) of a `{name: reference}` table: each
    factory resolves its reference when called."""
    return {name: functools.partial(resolve, reference) for name, reference in table.items()}


class LazyModule:
    """A module imported on its first attribute access: what a function-level import
    does, declared once at the top of the importing module. For the imports whose
    laziness is the point (`import qopt` stays free of xDSL, a loaded `.qvk` of the
    compiler, one target of the other's packages): the importer declares it as

        if TYPE_CHECKING:
            from qopt import driver as _driver
        else:
            _driver = LazyModule("qopt.driver")

    so the type checker and tests/unit/test_layering.py see the real import, and
    nothing is imported before `_driver.compile_vulkan` is first used."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attribute: str) -> Any:
        return getattr(importlib.import_module(self._name), attribute)

    def __repr__(self) -> str:
        return f"<lazy module {self._name!r}>"
