"""The options of `qopt.compile`, checked and normalised before anything runs.

Each option has one spelling (the keyword of `qopt.compile`); values are the
strings the pipelines take (`qopt-coreml{target=iOS18 compute-precision=fp16}`)
or the coremltools enums a coremltools user already has (`ct.target.iOS18`,
`ct.precision.FLOAT16`), matched by name so that coremltools is never imported
for it. A mistake is a QoptError that lists the valid choices and, for a typo,
the closest one.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Sequence
from typing import Any

from qopt.errors import QoptError, did_you_mean

TARGETS = ("coreml", "vulkan")

#: Options of `compile` per target (besides `trust_pickle` and `limits`, which
#: every target takes).
TARGET_OPTIONS = {
    "coreml": (
        "minimum_deployment_target",
        "compute_precision",
        "output_names",
        "states",
        "dynamic_activations",
    ),
    "vulkan": ("device", "validation", "fallback"),
}
COMMON_OPTIONS = ("trust_pickle", "limits", "dynamic_sizes", "verbose")

#: Minimum deployment targets qopt compiles for (the MIL opsets it emits).
COREML_TARGETS = ("iOS16", "iOS17", "iOS18")

#: Compute precisions by every accepted spelling (qopt's, and the value of
#: coremltools' `ct.precision` members).
COMPUTE_PRECISIONS = {"fp32": "fp32", "fp16": "fp16", "float32": "fp32", "float16": "fp16"}


def check_target(target: object) -> str:
    """`target` as "coreml" or "vulkan" (QoptError naming the choices otherwise)."""
    if isinstance(target, enum.Enum):  # ct.target.iOS18 passed where the target goes
        raise QoptError(
            f"qopt.compile's target is 'coreml' or 'vulkan', got {type(target).__name__}."
            f"{target.name}: pass a deployment target as minimum_deployment_target="
        )
    if not isinstance(target, str) or target not in TARGETS:
        hint = did_you_mean(target, TARGETS) if isinstance(target, str) else ""
        raise QoptError(f"unknown target {target!r}{hint}: use 'coreml' or 'vulkan'")
    return target


def check_unknown(target: str, unknown: dict[str, Any]) -> None:
    """A QoptError for options `compile` does not have (a typo: the closest one)."""
    if not unknown:
        return
    valid = (*COMMON_OPTIONS, *TARGET_OPTIONS["coreml"], *TARGET_OPTIONS["vulkan"])
    names = ", ".join(f"{name}{did_you_mean(name, valid)}" for name in sorted(unknown))
    mine = ", ".join((*COMMON_OPTIONS, *TARGET_OPTIONS[target]))
    raise QoptError(
        f"qopt.compile(target={target!r}) has no option {names}; its options are {mine}"
    )


def check_target_options(target: str, given: dict[str, object]) -> None:
    """A QoptError for an option of the other target (`device=` for CoreML)."""
    for other, names in TARGET_OPTIONS.items():
        if other == target:
            continue
        for name in names:
            if given.get(name) is not None:
                raise QoptError(
                    f"qopt.compile: {name} is an option of target={other!r}, not of "
                    f"target={target!r} (its options: "
                    f"{', '.join((*COMMON_OPTIONS, *TARGET_OPTIONS[target]))})"
                )


def deployment_target(value: object) -> str:
    """ "iOS16" | "iOS17" | "iOS18" from that string (any case) or a `ct.target` member
    (macOS15 is the same member as iOS18 in coremltools)."""
    name = value.name if isinstance(value, enum.Enum) else value
    if not isinstance(name, str):
        raise QoptError(
            f"minimum_deployment_target is a string ({', '.join(COREML_TARGETS)}) or a "
            f"ct.target member, got {type(value).__name__}"
        )
    for known in COREML_TARGETS:
        if name.lower() == known.lower():
            return known
    real = re.fullmatch(r"(ios|macos|watchos|tvos)\d+(_\d+)?", name.lower()) is not None
    hint = "" if real else did_you_mean(name, COREML_TARGETS)  # iOS15 is no typo
    raise QoptError(
        f"minimum_deployment_target {name!r}{hint} is not one qopt compiles for: use "
        f"{', '.join(COREML_TARGETS)} (or ct.target.iOS16 ...; macOS13-15 are the same)"
    )


def compute_precision(value: object) -> str:
    """ "fp32" | "fp16" from "fp32"/"fp16"/"float32"/"float16" or a `ct.precision`
    member."""
    name = value.value if isinstance(value, enum.Enum) else value
    if isinstance(name, str) and (found := COMPUTE_PRECISIONS.get(name.lower())) is not None:
        return found
    shown = repr(name) if isinstance(name, str) else type(value).__name__
    hint = did_you_mean(name, COMPUTE_PRECISIONS) if isinstance(name, str) else ""
    raise QoptError(
        f"compute_precision {shown}{hint} is not one of 'fp32', 'fp16' "
        "(or ct.precision.FLOAT32, ct.precision.FLOAT16)"
    )


def _choice(option: str, value: object, choices: tuple[str, ...]) -> str:
    """`value` if it is one of `choices`, the first when None; else a QoptError."""
    if value is None:
        return choices[0]
    if value in choices:
        return str(value)
    hint = did_you_mean(value, choices) if isinstance(value, str) else ""
    shown = ", ".join(repr(c) for c in choices)
    raise QoptError(f"{option} {value!r}{hint} is not one of {shown}")


def states(value: object) -> str:
    """ "state" (Core ML states, the default) or "io" (inputs and outputs)."""
    return _choice("states", value, ("state", "io"))


def dynamic_activations(value: object) -> str:
    """ "quantized" (torch's values, the default) or "float" (activations left float)."""
    return _choice("dynamic_activations", value, ("quantized", "float"))


def output_names(value: object) -> list[str] | None:
    """A list of output names (None: the exported program's)."""
    if value is None:
        return None
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise QoptError(
            f"output_names is a list of strings, one per output, got {type(value).__name__}"
        )
    names: list[object] = list(value)
    if not all(isinstance(n, str) and n for n in names):
        raise QoptError("output_names must be non-empty strings, one per output")
    return [str(n) for n in names]


def device(value: object) -> str | int | None:
    """A Vulkan device: index, name substring, or None (`$QOPT_VULKAN_DEVICE`, else
    the first compute-capable one)."""
    if value is None:
        return None
    if isinstance(value, int | str) and not isinstance(value, bool):
        return value
    raise QoptError(
        f"device is a Vulkan device's index or a substring of its name, got {type(value).__name__}"
    )


def fallback(value: object) -> bool:
    """The host fallback of the Vulkan target: True or False (None: False)."""
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    raise QoptError(f"fallback is True or False, got {type(value).__name__}")


__all__ = [
    "COMMON_OPTIONS",
    "COMPUTE_PRECISIONS",
    "COREML_TARGETS",
    "TARGETS",
    "TARGET_OPTIONS",
    "check_target",
    "check_target_options",
    "check_unknown",
    "compute_precision",
    "deployment_target",
    "device",
    "fallback",
    "output_names",
]
