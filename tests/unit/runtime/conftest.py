"""Fixtures shared by the native runtime's tests: each built-in model x scheme compiled to
a `.qvk` once per test session, with its inputs and the Python runtime's outputs (the
reference), so that the plain and the sanitized equivalence tests compile and run the
reference once per test run (both xdist workers included)."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

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


def shared_folder(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    """A folder of this test run that every xdist worker sees (the run's base temporary
    folder, the workers' parent; a run without xdist: its own), so that a reference one
    worker computed is read, not computed again, by the other."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent
    folder = base / name
    folder.mkdir(exist_ok=True)
    return folder


@pytest.fixture(scope="session")
def builtin_reference(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str, str], Reference]:
    """`builtin_reference(model, scheme)`: the pair compiled for Vulkan and run once by
    the Python runtime, once per test run: cached in this process and, for the other
    xdist worker, on disk in the run's shared folder (the `.qvk` and an `.npz` of the
    inputs and outputs, written under a lock by the first worker that needs it)."""
    from shared_exports import vulkan_bytes

    import qopt
    from qopt.examples import random_inputs

    folder = shared_folder(tmp_path_factory, "builtin-qvk")

    cache: dict[tuple[str, str], Reference] = {}

    def compute(model: str, scheme: str, path: Path, arrays: Path) -> None:
        data = vulkan_bytes(model, scheme)
        inputs = tuple(t.numpy() for t in random_inputs(model, PAIRS_SEED))
        path.write_bytes(data)
        artifact = qopt.load(str(path))
        try:
            outputs = tuple(np.array(o) for o in artifact(*inputs))
        finally:
            artifact.close()
        named = {f"in{i}": x for i, x in enumerate(inputs)}
        named.update({f"out{i}": y for i, y in enumerate(outputs)})
        partial = arrays.with_suffix(".partial.npz")
        np.savez(partial, allow_pickle=False, **named)
        os.replace(partial, arrays)  # complete or absent

    def get(model: str, scheme: str) -> Reference:
        if (model, scheme) not in cache:
            path, arrays = folder / f"{model}-{scheme}.qvk", folder / f"{model}-{scheme}.npz"
            with open(folder / f"{model}-{scheme}.lock", "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)  # one worker computes, the other waits
                if not arrays.is_file():
                    compute(model, scheme, path, arrays)
                data = path.read_bytes()
                with np.load(arrays, allow_pickle=False) as z:
                    inputs = tuple(z[f"in{i}"] for i in range(sum(k[:2] == "in" for k in z)))
                    outputs = tuple(z[f"out{i}"] for i in range(sum(k[:3] == "out" for k in z)))
            cache[model, scheme] = Reference(data, inputs, outputs)
        return cache[model, scheme]

    return get
