"""coremltools, imported the way the CoreML target needs it.

`import coremltools` probes its optional dependencies by importing them
(`coremltools._deps`): scikit-learn and transformers among them, which on a
2-core machine take seconds (most of a cold `.pt2 -> .mlpackage` compile's "MIL
build" phase) and serve only coremltools' own sklearn and Hugging Face
converters, which qopt never calls. In a process qopt owns (its commands:
`qopt.logs.claim_process`, called by qopt-opt's entry point), `ensure_coremltools` imports
coremltools with those two reported absent to it, unless the process has imported
them already; nothing else changes (the MIL builder, the protobuf schema and the
package writer are the same code). Where qopt is a library in someone else's
process, coremltools is imported as it comes: its flags for scikit-learn and
transformers stay what that process's packages say, so the caller's own use of
coremltools' converters is never changed by qopt.
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import cast

from qopt.logs import command_process

#: Packages coremltools imports only to see whether its converters for them work.
NOT_PROBED = ("sklearn", "transformers")


def ensure_coremltools() -> ModuleType:
    """The coremltools package: imported without probing `NOT_PROBED` in a process
    qopt owns (`qopt.logs.claim_process`), as it comes elsewhere (a no-op once coremltools is
    imported, by qopt or by the caller)."""
    found = sys.modules.get("coremltools")
    if found is not None:
        return found
    if not command_process():
        import coremltools

        return coremltools
    modules = cast("dict[str, ModuleType | None]", sys.modules)
    hidden = [name for name in NOT_PROBED if name not in modules]
    for name in hidden:
        modules[name] = None  # `import name` fails: coremltools reports it absent
    try:
        import coremltools
    finally:
        for name in hidden:
            if name in modules and modules[name] is None:
                del modules[name]
    return coremltools
