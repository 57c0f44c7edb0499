"""Fixtures shared by the native runtime's tests: each built-in model x scheme compiled to
a `.qvk` once per test session, with its inputs and the Python runtime's outputs (the
reference), so that the plain and the sanitized equivalence tests compile and run the
reference once."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest

PAIRS_SEED = 3
"""The seed of the built-in models' random inputs in the equivalence tests."""


@dataclass(frozen=True)
class Reference:
    """A compiled built-in pair: the bundle's bytes, inputs and the Python runtime's
    outputs for them."""

    data: bytes
    inputs: tuple[np.ndarray, ...]
    outputs: tuple[np.ndarray, ...]


@pytest.fixture(scope="session")
def builtin_reference(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str, str], Reference]:
    """`builtin_reference(model, scheme)`: the pair compiled for Vulkan and run once by
    the Python runtime (cached for the session)."""
    from shared_exports import exported

    import qopt
    from qopt.examples import random_inputs

    folder = tmp_path_factory.mktemp("builtin-qvk")

    cache: dict[tuple[str, str], Reference] = {}

    def get(model: str, scheme: str) -> Reference:
        if (model, scheme) not in cache:
            data = qopt.compile(exported(model, scheme), target="vulkan").to_bytes()
            inputs = tuple(t.numpy() for t in random_inputs(model, PAIRS_SEED))
            path = folder / f"{model}-{scheme}.qvk"
            path.write_bytes(data)
            artifact = qopt.load(str(path))
            try:
                outputs = tuple(np.array(o) for o in artifact(*inputs))
            finally:
                artifact.close()
            cache[model, scheme] = Reference(data, inputs, outputs)
        return cache[model, scheme]

    return get
