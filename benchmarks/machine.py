"""What every benchmark prints about the machine it ran on: the CPU (lavapipe's speed
follows it) and the load average (the machines are shared)."""

from __future__ import annotations

import os
import platform
from pathlib import Path


def cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The CPU's model name (/proc/cpuinfo), with its family / model / stepping numbers
    and vector ISA (AVX-512 or AVX2: lavapipe's SIMD width and gathers follow them; a
    virtual machine may name its CPU only "AMD EPYC", and two such hosts ran lavapipe's
    kernels 1.8x apart), or what `platform` knows."""
    try:
        fields: dict[str, str] = {}
        for line in cpuinfo.read_text().splitlines():
            key, sep, value = line.partition(":")
            if not sep:
                break  # the first processor's block ends
            fields.setdefault(key.strip(), value.strip())
    except OSError:
        fields = {}
    if "model name" not in fields:
        return platform.processor() or platform.machine()
    flags = fields.get("flags", "").split()
    isa = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "no AVX2"
    ids = "/".join(fields.get(k, "?") for k in ("cpu family", "model", "stepping"))
    return f"{fields['model name']} (family/model/stepping {ids}, {isa})"


def load_average() -> str:
    """The 1, 5 and 15 minute load averages."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def machine_line() -> str:
    """`CPU: <model> (<n> cores), load average <1 5 15>`."""
    return f"CPU: {cpu_model()} ({os.cpu_count()} cores), load average {load_average()}"
