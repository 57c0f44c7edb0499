"""coremltools imported without probing scikit-learn and transformers (deps.py)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

from qopt.backends.coreml.deps import NOT_PROBED

SCRIPT = """
import importlib.util, sys
from qopt.backends.coreml.deps import NOT_PROBED, ensure_coremltools
from qopt.logs import claim_process
claim_process()
ct = ensure_coremltools()
assert ct is sys.modules["coremltools"] and ensure_coremltools() is ct
assert not [name for name in NOT_PROBED if name in sys.modules], "probed"
from coremltools import _deps
# the packages stay importable afterwards (their sys.modules entries are gone again)
print(_deps._HAS_SKLEARN, _deps._HAS_HF, [
    importlib.util.find_spec(name) is not None for name in NOT_PROBED
])
"""


def test_coremltools_is_imported_without_probing_sklearn_and_transformers() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-2000:]
    has_sklearn, has_hf, findable = done.stdout.strip().splitlines()[-1].split(" ", 2)
    assert (has_sklearn, has_hf) == ("False", "False")
    installed = [importlib.util.find_spec(name) is not None for name in NOT_PROBED]
    assert findable == str(installed)


LIBRARY = """
import importlib.util
from qopt.backends.coreml.deps import NOT_PROBED, ensure_coremltools
ensure_coremltools()
from coremltools import _deps
print(_deps._HAS_SKLEARN, _deps._HAS_HF)
"""


def test_a_library_caller_gets_coremltools_as_it_comes() -> None:
    """Without claim_process (qopt embedded in someone's program) coremltools probes
    its optional packages as usual: its converters for them work if they are installed."""
    done = subprocess.run(
        [sys.executable, "-c", LIBRARY], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-2000:]
    plain = subprocess.run(
        [sys.executable, "-c", "from coremltools import _deps; print(_deps._HAS_SKLEARN, _deps._HAS_HF)"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert plain.returncode == 0, plain.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == plain.stdout.strip().splitlines()[-1]
