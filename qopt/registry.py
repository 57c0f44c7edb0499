"""Lazy registries: a table names each registered object by a reference,
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
