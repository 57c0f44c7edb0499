"""Quieter third-party start-up logs for qopt's command-line tools, and whether this
process is one of those tools' (`claim_process`).

torchao and coremltools log warnings at import time on machines without their
optional native libraries (CUDA kernels, the CoreML runtime on Linux) and
torchao's PT2E testing quantizer warns that it is deprecated; none of it is
actionable for a qopt user.
"""

from __future__ import annotations

import logging
import warnings


def quiet_third_party_logs() -> None:
    for name in (
        "torchao",
        "coremltools",
        "torch._export",
        "torch.export",
        "torch.utils._pytree",
    ):
        logging.getLogger(name).setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", message=".*XNNPACKQuantizer is deprecated.*")
    warnings.filterwarnings("ignore", category=UserWarning, module="torchao")
    warnings.filterwarnings("ignore", category=FutureWarning)


_COMMAND_PROCESS = [False]


def claim_process() -> None:
    """Say that this process is a qopt command's (qopt-opt's entry point calls it):
    no code but qopt's runs in it, so qopt may tune third-party packages for itself
    (qopt.backends.coreml.deps). Never called where qopt is a library."""
    _COMMAND_PROCESS[0] = True


def command_process() -> bool:
    """Whether `claim_process` was called in this process."""
    return _COMMAND_PROCESS[0]
