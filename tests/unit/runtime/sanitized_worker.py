"""Runs `.qvk` bundles through the native runtime's sanitizer build (ASan + UBSan
libqvk.so, loaded through qopt.backends.vulkan.native with `$QOPT_QVK_LIBRARY`), in a
process started with the ASan runtime preloaded (test_native_sanitized.py starts it).
Not a test module; it imports no torch (only numpy and the ctypes binding).

    python sanitized_worker.py JOBS.json

JOBS.json: a list of {"bundle": PATH, "calls": [[METHOD or null, [INPUT.npy ...]], ...],
"repeat": N, "out": OUT.npz}. For each job: open the bundle, one session, the calls in
order (the whole list N times, the session reset before each repetition); OUT.npz gets
`c{i}_{j}` (output j of call i, the last repetition; each repetition must give the same
bits) and `state_{name}` (every state after the calls)."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import numpy as np

from qopt.backends.vulkan.native import NativeBundle, _load, native_library


def run_job(job: dict[str, Any]) -> None:
    calls = [(m, [np.load(f) for f in files]) for m, files in job["calls"]]
    results: dict[str, np.ndarray] = {}
    with NativeBundle.open(str(job["bundle"])) as bundle, bundle.session() as session:
        for r in range(int(job.get("repeat", 1))):
            session.reset()
            for i, (method, inputs) in enumerate(calls):
                for j, out in enumerate(session.run(*inputs, method=method)):
                    key = f"c{i}_{j}"
                    if r and results[key].tobytes() != out.tobytes():
                        raise SystemExit(
                            f"{job['bundle']}: call {i} output {j} differs on repeat {r}"
                        )
                    results[key] = out
        for name in session.state_names:
            results[f"state_{name}"] = session.read_state(name)
    np.savez(str(job["out"]), allow_pickle=False, **results)


def main() -> int:
    if (reason := native_library()) is not None:
        print(reason, file=sys.stderr)
        return 1
    if _load()._name != os.environ.get("QOPT_QVK_LIBRARY"):
        print(f"loaded {_load()._name}, not $QOPT_QVK_LIBRARY", file=sys.stderr)
        return 1
    with open(sys.argv[1]) as f:
        jobs = json.load(f)
    for job in jobs:
        run_job(job)
        print(f"ok {job['bundle']}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
