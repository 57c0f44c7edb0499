"""The `.qvk` writer hashes large constant sets on threads (`bundle._digests`): the
digests come back in the blobs' order, equal to one-by-one hashing, whatever the
threshold."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from qopt.backends.vulkan import bundle


@pytest.mark.parametrize("threshold", [0, 1 << 40])
def test_digests_in_order(threshold: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bundle, "PARALLEL_HASH_BYTES", threshold)
    rng = np.random.default_rng(0)
    arrays = [rng.integers(0, 2**32, size, dtype=np.uint32) for size in (5, 70000, 1, 3000, 0)]
    views = [a.data.cast("B") for a in arrays]
    expected = [hashlib.sha256(a.tobytes()).hexdigest() for a in arrays]
    assert bundle._digests(views) == expected
