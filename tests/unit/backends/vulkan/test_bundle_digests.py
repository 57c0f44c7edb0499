"""The `.qvk` writer hashes large constant sets on threads (`qvk._digests`): the
digests come back in the blobs' order, equal to one-by-one hashing, whatever the
threshold."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from qopt.backends.vulkan import qvk


@pytest.mark.parametrize("threshold", [0, 1 << 40])
def test_digests_in_order(threshold: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(qvk, "PARALLEL_HASH_BYTES", threshold)
    rng = np.random.default_rng(0)
    arrays = [rng.integers(0, 2**32, size, dtype=np.uint32) for size in (5, 70000, 1, 3000, 0)]
    views = [a.data.cast("B") for a in arrays]
    expected = [hashlib.sha256(a.tobytes()).hexdigest() for a in arrays]
    assert qvk._digests(views) == expected


def test_overlapped_write_is_bundle_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`write_bundle` with its blobs written while threads hash them (the threshold
    lowered to 0) writes `bundle_bytes` exactly."""
    import torch

    import qopt

    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a = torch.nn.Linear(16, 24)
            self.b = torch.nn.Linear(24, 8)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.b(torch.relu(self.a(x)))

    torch.manual_seed(0)
    with torch.no_grad():
        ep = torch.export.export(Net().eval(), (torch.randn(2, 16),), strict=False)
    program = qopt.compile(ep, "vulkan").program
    assert len(program.constants) >= 2
    monkeypatch.setattr(qvk, "PARALLEL_HASH_BYTES", 0)
    path = tmp_path / "m.qvk"
    size = qvk.write_bundle(program, path)
    expected = qvk.bundle_bytes(program)
    assert path.read_bytes() == expected
    assert size == len(expected)
