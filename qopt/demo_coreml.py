"""The CoreML part of the README's run command (`python -m qopt.demo`).

Compiles every built-in (model, scheme) pair to an `.mlpackage`, reads it back,
interprets it on fresh random inputs and prints, per pair, the package size
against the float model's, the compression ops used, and the numerics check
against torch eager (see tests/unit/backends/coreml/test_coreml.py for the
tolerances; dynamic activation schemes are computed in float on Core ML).
"""

from __future__ import annotations

import os
import tempfile
import time

import numpy as np

import qopt
from qopt.backends.coreml.reader import read_mlpackage
from qopt.driver import compile_coreml
from qopt.examples import export_model, random_inputs

DYNAMIC = frozenset({"pt2e_dynamic", "8da4w"})


def tolerance(scheme: str) -> float:
    if scheme in DYNAMIC:
        return 3e-2  # activation quantization dropped: float activations on Core ML
    if scheme == "pt2e_static":
        return 1e-2  # one-step requantization flips from last-bit float differences
    return 1e-4


def _package_bytes(path: str) -> int:
    return sum(
        os.path.getsize(os.path.join(root, f)) for root, _, files in os.walk(path) for f in files
    )


def run_coreml(models: list[str], schemes: list[str]) -> int:
    header = (
        f"{'model':<8} {'scheme':<13} {'package':>9} {'vs float':>8} {'compile s':>9} "
        f"{'rel err':>9}  {'status':<8} compression ops"
    )
    print("\nCoreML (.mlpackage, iOS18, fp32 compute)")
    print(header)
    print("-" * len(header))
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name in models:
            float_size: int | None = None
            for scheme in ["float", *[s for s in schemes if s != "float"]]:
                ep = export_model(name, scheme)
                module = qopt.fuse(qopt.import_program(ep))
                t0 = time.perf_counter()
                try:
                    # Outputs keep the graph signature's names (recorded at import).
                    artifact = compile_coreml(module, compute_precision="fp32")
                    path = artifact.save(os.path.join(tmp, f"{name}-{scheme}.mlpackage"))
                except qopt.QoptError as e:
                    failures += 1
                    print(f"{name:<8} {scheme:<13} FAILED: {e}")
                    continue
                seconds = time.perf_counter() - t0
                back = read_mlpackage(path)
                inputs = random_inputs(name, 4321)
                got = qopt.interpret(back, *inputs)[0].astype(np.float64)
                want = ep.module()(*inputs).detach().numpy().astype(np.float64)
                err = float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30))
                size = _package_bytes(path)
                float_size = size if scheme == "float" else float_size
                ops = sorted({op.name.split(".")[1] for op in back.walk()
                              if "constexpr" in op.name or "quantize" in op.name})  # fmt: skip
                ok = err < tolerance(scheme)
                failures += not ok
                status = ("ok" if ok else "MISMATCH") + ("*" if scheme in DYNAMIC else "")
                ratio = size / float_size if float_size else float("nan")
                if scheme in schemes:
                    print(
                        f"{name:<8} {scheme:<13} {size:>9} {ratio:>8.3f} {seconds:>9.2f} "
                        f"{err:>9.2e}  {status:<8} {', '.join(ops) or '-'}",
                        flush=True,
                    )
    print(
        "* dynamic activation quantization has no Core ML equivalent: weights stay "
        "compressed, activations are computed in float (tolerance 3e-2 against torch)."
    )
    print(
        "all CoreML packages match torch" if not failures else f"{failures} CoreML pair(s) FAILED"
    )
    return 1 if failures else 0


__all__ = ["run_coreml"]
