"""What every benchmark prints about the machine it ran on: the CPU (lavapipe's speed
follows it) and the load average (the machines are shared)."""

from __future__ import annotations

import os
import platform
from pathlib import Path


def cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo), or what `platform` knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def load_average() -> str:
    """The 1, 5 and 15 minute load averages."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def machine_line() -> str:
    """`CPU: <model> (<n> cores), load average <1 5 15>`."""
    return f"CPU: {cpu_model()} ({os.cpu_count()} cores), load average {load_average()}"
