"""The order of the unit tests, for `make test`'s two xdist workers (`-n 2`).

Almost every test takes seconds; three modules hold one that takes a minute or more
on a quiet 2-core machine (the sanitized equivalence suite, the fuzz campaign, the
conformance sample's outcomes). Collected where their folders sort, the fuzz campaign
came 180 tests before the end: a worker that starts it that late runs it alone while
the other has run out of work. These modules run first instead (whole, their own
tests in their own order: only their place in the session moves), so that the short
tests fill in around them and the run ends on short tests on both workers."""

from __future__ import annotations

import pytest

FIRST = (
    "runtime/test_native_sanitized.py",
    "untrusted/test_fuzz_untrusted.py",
    "semantics/test_conformance.py",
)
"""Modules that run before the others, in this order (paths under tests/unit)."""


def _rank(item: pytest.Item) -> int:
    path = item.path.as_posix()
    for rank, module in enumerate(FIRST):
        if path.endswith(f"tests/unit/{module}"):
            return rank
    return len(FIRST)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=_rank)  # stable: every other test keeps its place
