"""Quieter third-party start-up logs for qopt's command-line tools.

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
