"""The native runtime's device reuse (runtime/src/device.c): one process opening several
bundles and recreating sessions, with reuse on (the default) and off
(`QOPT_VULKAN_REUSE=0`), printed side by side in one run.

The built-in models (`qopt.examples.MODELS`) under `--schemes` are compiled to `.qvk`
once; then, in a fresh process per measurement (this script again, `--child`), every
bundle in turn is opened and given a session that runs it once and is destroyed, twice
(an app that recreates its session). Each process prints its wall and CPU time (all
threads: lavapipe compiles on the caller's thread and runs on its own) and the pipelines
its sessions compiled; the modes alternate over `--rounds` rounds and the medians are
compared (ratio: off / on). The outputs of the two modes are compared bit for bit. The
CPU model and the load average are printed first (the machines are shared).

    python benchmarks/native_reuse.py [--quick] [--schemes float,w8c] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.machine import machine_line
from qopt.backends.vulkan.native import NativeBundle, native_library


def child(folder: Path) -> int:
    """Every bundle of `folder` twice (session, one run, destroy); prints one JSON line."""
    wall, cpu = time.perf_counter(), time.process_time()
    created, digests = 0, []
    for path in sorted(folder.glob("*.qvk")):
        inputs = [np.load(f) for f in sorted(folder.glob(f"{path.stem}.in*.npy"))]
        with NativeBundle.open(path) as bundle:
            for _ in range(2):
                with bundle.session() as session:
                    outputs = session.run(*inputs)
                    created += session.pipelines_created
                digests.append(b"".join(o.tobytes() for o in outputs).hex()[:64])
    print(json.dumps({"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu,
                      "created": created, "digests": digests}))  # fmt: skip
    return 0


def measure(folder: Path, reuse: bool) -> dict[str, Any]:
    env = {**os.environ, "QOPT_VULKAN_REUSE": "1" if reuse else "0"}
    r = subprocess.run(
        [sys.executable, __file__, "--child", str(folder)],
        capture_output=True, text=True, check=True, env=env,
    )  # fmt: skip
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--schemes", default="float,w8c")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="float only, one round")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(Path(args.child))
    if args.quick:
        args.schemes, args.rounds = "float", 1
    if (reason := native_library()) is not None:
        print(f"skipped: {reason}")
        return 0
    import qopt
    from qopt.examples import MODELS, export_model, random_inputs
    from qopt.logs import quiet_third_party_logs

    quiet_third_party_logs()
    print(machine_line())
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        schemes = args.schemes.split(",")
        for model in MODELS:
            for scheme in schemes:
                stem = f"{model}-{scheme}"
                artifact = qopt.compile(export_model(model, scheme), target="vulkan")
                (folder / f"{stem}.qvk").write_bytes(artifact.to_bytes())
                for i, x in enumerate(random_inputs(model, 0)):
                    np.save(folder / f"{stem}.in{i}.npy", x.numpy())
        n = len(list(folder.glob("*.qvk")))
        print(f"{n} bundles ({', '.join(MODELS)} x {', '.join(schemes)}), each given two "
              f"sessions in turn; one process per measurement, {args.rounds} rounds")  # fmt: skip
        runs: dict[bool, list[dict[str, Any]]] = {True: [], False: []}
        for _ in range(args.rounds):
            for reuse in (False, True):
                runs[reuse].append(measure(folder, reuse))
        if runs[True][0]["digests"] != runs[False][0]["digests"]:
            print("outputs differ between reuse on and off")
            return 1
        med = {
            reuse: {k: statistics.median(float(r[k]) for r in rs) for k in ("wall", "cpu")}
            for reuse, rs in runs.items()
        }
        for reuse in (False, True):
            print(f"reuse {'on ' if reuse else 'off'}: wall {med[reuse]['wall']:6.2f} s, "
                  f"CPU {med[reuse]['cpu']:6.2f} s, pipelines compiled "
                  f"{runs[reuse][0]['created']}")  # fmt: skip
        print(f"off / on: wall {med[False]['wall'] / med[True]['wall']:.2f}x, "
              f"CPU {med[False]['cpu'] / med[True]['cpu']:.2f}x; outputs identical")  # fmt: skip
        print(machine_line())
    return 0


if __name__ == "__main__":
    sys.exit(main())
