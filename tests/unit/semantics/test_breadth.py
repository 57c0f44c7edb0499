"""Breadth over ordinary torch functions (qopt/breadth.py, issue 22).

Every function of the list, exported with plain `torch.export.export`, runs on the
interpreter, CoreML (the package read back and interpreted) and Vulkan (when a device
is present) against torch eager. Each must pass, except where `REFUSED` lists the
target: there it must be a clean QoptError (the coverage gap docs/breadth.md shows).
Never a wrong result, never a crash. `benchmarks/breadth.py` writes the table.
"""

from __future__ import annotations

import pytest

from qopt.breadth import FUNCTIONS, case
from qopt.conformance import run_case

ALL = ("interp", "coreml", "vulkan")

REFUSED: dict[str, tuple[str, ...]] = {}
"""None left: CoreML's last six (integer bitwise ops, `unfold`'s rank-6 intermediate, a
dilated convolution with a run-time weight) are compositions now."""

SKIPPED = {"gaussian_nll_loss"}  # torch.export fails on it (a data-dependent guard)


@pytest.fixture(scope="module")
def targets() -> tuple[str, ...]:
    from qopt.backends.vulkan.runtime import vulkan_available

    if (reason := vulkan_available()) is not None:
        print(f"Vulkan left out of the breadth test: {reason}")
        return ("interp", "coreml")
    return ALL


@pytest.mark.parametrize("function", FUNCTIONS, ids=[f.name for f in FUNCTIONS])
def test_function(function: object, targets: tuple[str, ...]) -> None:
    from qopt.breadth import Function

    assert isinstance(function, Function)
    outcomes = run_case(case(function), targets, seconds=120)
    if function.name in SKIPPED:
        assert [o.status for o in outcomes] == ["skip"]
        return
    refused = REFUSED.get(function.name, ())
    problems = []
    for o in outcomes:
        expected = "unsupported" if o.target in refused else "pass"
        if o.status != expected:
            problems.append(f"{o.target}: {o.status} (expected {expected}): {o.detail}")
    assert not problems, "\n".join(problems)


def test_the_list_is_broad() -> None:
    names = [f.name for f in FUNCTIONS]
    assert len(names) == len(set(names))
    assert len(names) >= 150
    assert set(REFUSED) <= set(names)
    assert SKIPPED <= set(names)
