"""qopt: a multi-level compiler for quantized PyTorch models, built on xDSL.

A program captured by `torch.export` (PT2E static/dynamic, torchao int4/int8
weight-only, 8da4w, codebook) imports into the `aten` + `quant` level, `fuse-quant`
rewrites its Q/DQ and codebook patterns into `qfused` kernels, and a target pipeline
lowers it to Core ML (`qopt-coreml`: a `.mlpackage`) or Vulkan (`qopt-vulkan`: SPIR-V
kernels in a `.qvk`, run by qopt's runtime). Every level is textual IR with numpy
semantics in the reference interpreter.

Public API (docs/interfaces.md): `import_program` (one program, or a dict of methods),
`fuse`, `fold_constants`, `compile` (typed options; a `CoremlArtifact` or
`VulkanArtifact` with `.save`, `.report`, `.session()`), `load` (a saved `.qvk` /
`.mlpackage`), `interpret` (one call), `session` (calls keeping state), `generate`
(greedy LLM decoding), `read_mlpackage`, `Limits`, `QoptError`, `__version__` (also
printed by `qopt-opt --version` / `qopt-run --version`, and recorded in every
`.mlpackage`'s metadata, `qopt.version`, and `.qvk` manifest). Compile reports and
warnings: `qopt.report` (`CompileReport`, `QoptWarning`). The README's user guide has
the options, the command line and troubleshooting.
"""

from __future__ import annotations

import enum
import os
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, overload

from qopt import arguments, options
from qopt.errors import QoptError
from qopt.limits import Limits
from qopt.registry import LazyModule
from qopt.version import qopt_version

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp

    from qopt import context as _context
    from qopt import driver as _driver
    from qopt import frontend as _frontend
    from qopt import generation as _generation
    from qopt import interpreters as _interpreters
    from qopt import report as _report
    from qopt.backends import coreml as _coreml
    from qopt.backends import vulkan as _vulkan
    from qopt.backends.coreml import CoremlArtifact
    from qopt.backends.coreml import reader as _coreml_reader
    from qopt.backends.vulkan.artifact import VulkanArtifact
    from qopt.interpreters import session as _session
    from qopt.lowering import fold_constants as _fold_constants
    from qopt.lowering import fuse_quant as _fuse_quant
else:
    # `import qopt` stays cheap (no xDSL, numpy, torch): each function's machinery is
    # imported when it is first called; a loaded `.qvk` never imports the compiler.
    _context = LazyModule("qopt.context")
    _driver = LazyModule("qopt.driver")
    _frontend = LazyModule("qopt.frontend")
    _generation = LazyModule("qopt.generation")
    _interpreters = LazyModule("qopt.interpreters")
    _report = LazyModule("qopt.report")
    _coreml = LazyModule("qopt.backends.coreml")
    _vulkan = LazyModule("qopt.backends.vulkan")
    _coreml_reader = LazyModule("qopt.backends.coreml.reader")
    _session = LazyModule("qopt.interpreters.session")
    _fold_constants = LazyModule("qopt.lowering.fold_constants")
    _fuse_quant = LazyModule("qopt.lowering.fuse_quant")

__version__ = qopt_version()
"""qopt's version (package metadata; a checkout's pyproject.toml when not installed)."""

__all__ = [
    "Limits",
    "QoptError",
    "__version__",
    "compile",
    "fold_constants",
    "fuse",
    "generate",
    "import_program",
    "interpret",
    "load",
    "read_mlpackage",
    "session",
]


def _is_module(value: Any) -> bool:
    """Whether `value` is an IR module (`builtin.module`). xDSL is not imported for
    it: a module can exist only once xDSL's builtin dialect is, so loading and
    running a `.qvk` stays free of the IR."""
    builtin = sys.modules.get("xdsl.dialects.builtin")
    return builtin is not None and isinstance(value, builtin.ModuleOp)


def _module_argument(module: Any, function: str) -> ModuleOp:
    if not _is_module(module):
        raise QoptError(
            f"qopt.{function} takes a module (builtin.module) from qopt.import_program or "
            f"the parser, got {type(module).__name__}"
        )
    return module


def import_program(
    ep_or_path: Any,
    *,
    trust_pickle: bool = False,
    limits: Limits | str | None = None,
    dynamic_sizes: Any = None,
) -> ModuleOp:
    """Import an ExportedProgram or a `.pt2` file into the aten + quant level.

    A `.pt2` is untrusted input: nothing in it runs unless `trust_pickle`, and what
    it declares is bounded by `limits` (`qopt.Limits`, or "name=value,..." text).
    A `torch.export.Dim` stays a `?` dim, or with `dynamic_sizes` (a list of sizes,
    or a dict by symbol or method) becomes static size variants `<method>__<size>`."""
    return _frontend.import_program(
        ep_or_path, trust_pickle=trust_pickle, limits=limits, dynamic_sizes=dynamic_sizes
    )


def interpret(module: ModuleOp, *inputs: Any, function: str = "forward") -> tuple[Any, ...]:
    """Run a module through the reference interpreter; numpy outputs in program order."""
    function = arguments.name(function, "interpret's function")
    return _interpreters.interpret(
        _module_argument(module, "interpret"), *inputs, function=function
    )


def session(module: ModuleOp) -> Any:
    """A `Session` of `module` in the reference interpreter: `run(*inputs, method=)`
    keeps the program's state (its `ml_program` globals: mutated buffers such as a
    KV cache) between calls; `reset()`, `read_state(name)`, `state_names`,
    `methods`. Two sessions never share state."""
    return _session.Session(_module_argument(module, "session"))


def generate(runner: Any, prompt: Any, max_new_tokens: int) -> list[int]:
    """Greedy generation: `max_new_tokens` tokens after `prompt` (token ids) on a
    session (`qopt.session(module)`, an artifact's `.session()`), a module or an
    artifact (a fresh session of it); `prefill` then `decode` where the program has
    them (qopt/generation.py)."""
    if _is_module(runner):
        runner = session(runner)
    elif not hasattr(runner, "run") and hasattr(runner, "session"):
        runner = runner.session()
    if not hasattr(runner, "run") or not hasattr(runner, "methods"):
        raise QoptError(
            f"qopt.generate takes a session, a module or an artifact, got {type(runner).__name__}"
        )
    prompt_ids = arguments.token_ids(prompt, "generate's prompt")
    count = arguments.integer(max_new_tokens, "generate's max_new_tokens")
    return _generation.generate(runner, prompt_ids, count)


def fuse(module: ModuleOp, *, report: bool = False) -> ModuleOp:
    """Run `fuse-quant` on `module` in place and return it."""
    _fuse_quant.FuseQuantPass(report=report).apply(
        _context.make_context(), _module_argument(module, "fuse")
    )
    return module


def fold_constants(module: ModuleOp) -> ModuleOp:
    """Run `fold-constants` on `module` in place and return it."""
    _fold_constants.FoldConstantsPass().apply(
        _context.make_context(), _module_argument(module, "fold_constants")
    )
    return module


@overload
def compile(
    ep_or_path: Any,
    target: Literal["coreml"] = "coreml",
    *,
    minimum_deployment_target: str | enum.Enum | None = None,
    compute_precision: str | enum.Enum | None = None,
    output_names: Sequence[str] | None = None,
    device: str | int | None = None,
    validation: bool | None = None,
    trust_pickle: bool = False,
    limits: Limits | str | None = None,
    dynamic_sizes: Sequence[int] | Mapping[str, Any] | None = None,
    states: str | None = None,
    dynamic_activations: str | None = None,
    fallback: bool | None = None,
    verbose: bool = False,
    **unknown: Any,
) -> CoremlArtifact: ...


@overload
def compile(
    ep_or_path: Any,
    target: Literal["vulkan"],
    *,
    minimum_deployment_target: str | enum.Enum | None = None,
    compute_precision: str | enum.Enum | None = None,
    output_names: Sequence[str] | None = None,
    device: str | int | None = None,
    validation: bool | None = None,
    trust_pickle: bool = False,
    limits: Limits | str | None = None,
    dynamic_sizes: Sequence[int] | Mapping[str, Any] | None = None,
    states: str | None = None,
    dynamic_activations: str | None = None,
    fallback: bool | None = None,
    verbose: bool = False,
    **unknown: Any,
) -> VulkanArtifact: ...


@overload
def compile(
    ep_or_path: Any,
    target: str,
    *,
    minimum_deployment_target: str | enum.Enum | None = None,
    compute_precision: str | enum.Enum | None = None,
    output_names: Sequence[str] | None = None,
    device: str | int | None = None,
    validation: bool | None = None,
    trust_pickle: bool = False,
    limits: Limits | str | None = None,
    dynamic_sizes: Sequence[int] | Mapping[str, Any] | None = None,
    states: str | None = None,
    dynamic_activations: str | None = None,
    fallback: bool | None = None,
    verbose: bool = False,
    **unknown: Any,
) -> CoremlArtifact | VulkanArtifact: ...


def compile(
    ep_or_path: Any,
    target: str = "coreml",
    *,
    minimum_deployment_target: str | enum.Enum | None = None,
    compute_precision: str | enum.Enum | None = None,
    output_names: Sequence[str] | None = None,
    device: str | int | None = None,
    validation: bool | None = None,
    trust_pickle: bool = False,
    limits: Limits | str | None = None,
    dynamic_sizes: Sequence[int] | Mapping[str, Any] | None = None,
    states: str | None = None,
    dynamic_activations: str | None = None,
    fallback: bool | None = None,
    verbose: bool = False,
    **unknown: Any,
) -> CoremlArtifact | VulkanArtifact:
    """Import a program and compile it for `target`: the target's pipeline
    (`qopt-coreml` / `qopt-vulkan`, qopt/lowering/pipelines.py, the passes `qopt-opt -p`
    runs), then its artifact.

    Args:
        ep_or_path: a `torch.export.ExportedProgram`, a `.pt2` path, or a dict of
            them by method name (`{"prefill": ep1, "decode": ep2}`: one artifact,
            each weight stored once).
        target: "coreml" (a `CoremlArtifact`: `.mil_program`, `.save("m.mlpackage")`)
            or "vulkan" (a `VulkanArtifact`: runs on the Vulkan device,
            `.save("m.qvk")`).
        minimum_deployment_target: CoreML only. "iOS16", "iOS17" or "iOS18" (the
            default), or `ct.target.iOS18` ...: the MIL opset emitted; a weight
            scheme the target lacks is a QoptError naming the target that has it.
        compute_precision: CoreML only. "fp16" (the default, as `ct.convert`'s for
            ML programs: activations and compute in fp16, what the Neural Engine
            runs; quantization and int8 regions stay exact) or "fp32" (exact checks
            against torch); `ct.precision.FLOAT16` / `FLOAT32` too.
        output_names: CoreML only. Names of the outputs of a single-method program
            (default: the exported program's, from its graph signature).
        device: Vulkan only. The device's index or a substring of its name (default:
            `$QOPT_VULKAN_DEVICE`, else the first compute-capable one); opened on the
            first call.
        validation: Vulkan only. Enable the Vulkan validation layers (default:
            `$QOPT_VULKAN_VALIDATION`).
        fallback: Vulkan only. Run ops without a Vulkan kernel on the host, by the
            reference interpreter, between the device's work (their inputs downloaded
            and results uploaded once per call; `artifact.fallback_ops` lists them with
            those bytes); default False: such ops are an error listing them all.
        trust_pickle: let a `.pt2` unpickle anything (only for files you trust;
            default: torch's restricted unpickler and torchao's tensor subclasses).
        limits: bounds on what a `.pt2` may declare (`qopt.Limits`, or
            "name=value,..." text).
        dynamic_sizes: the sizes a method exported with a `torch.export.Dim` compiles
            at (both targets compile static shapes: one function `<method>__<size>`
            per size, weights and states shared; a call runs the variant of its
            inputs' shapes): a list for one Dim, a dict by symbol for several, or a
            dict by method name of those; default every size of a Dim of at most 16
            sizes, else its min, max and the powers of two between.
        dynamic_activations: CoreML only. "quantized" (the default: a dynamic-
            activation scheme's run-time choose-qparams / quantize / dequantize in MIL
            float ops, as torch computes them) or "float" (activations left float:
            faster, not torch's values).
        states: CoreML only. "state" (the default: program state such as a KV cache
            is Core ML states, iOS18) or "io" (extra last inputs and outputs of
            every call, named after the buffers; any target; the caller keeps them).
        verbose: print a progress line per phase on stderr as it ends (load, import,
            each pass, kernel compile ...: its time, the time since the start and
            the peak RSS), then the compile report (`artifact.report`).

    Every artifact has `.module` (the final IR), `.save(path)`, `.methods`,
    `.session()`, `.report` (a `qopt.report.CompileReport`: fused patterns by kernel,
    what stayed unfused and why, compressed against float weight bytes, ops per
    target op, warnings, phase times; `str()` is text, `.to_json()` JSON), and is
    callable (one call on a fresh state). A compile that works but probably not as
    meant (quant patterns left unfused, weights left in float next to quantized
    ones) warns with a `qopt.report.QoptWarning` too. An unknown target
    or option, or an option of the other target, is a QoptError listing the valid
    ones (the closest for a typo).
    """
    target = options.check_target(target)
    options.check_unknown(target, unknown)
    given: dict[str, object] = {
        "minimum_deployment_target": minimum_deployment_target,
        "compute_precision": compute_precision,
        "output_names": output_names,
        "states": states,
        "dynamic_activations": dynamic_activations,
        "device": device,
        "validation": validation,
        "fallback": fallback,
    }
    options.check_target_options(target, given)
    report = _report.CompileReport(
        target=target, verbose=bool(verbose), on_warning=_compile_warning
    )
    with report.active():
        artifact = _compile(
            ep_or_path, target, minimum_deployment_target, compute_precision, output_names,
            states, dynamic_activations, device, validation, fallback, trust_pickle, limits,
            dynamic_sizes,
        )  # fmt: skip
    artifact.report = report
    if verbose:
        print(report, file=sys.stderr)
    return artifact


def _compile_warning(text: str) -> None:
    """A QoptWarning attributed to the caller's line (the first frame outside qopt)."""
    import warnings

    package = os.path.dirname(os.path.abspath(__file__)) + os.sep
    level, frame = 2, sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package):
        level, frame = level + 1, frame.f_back
    warnings.warn(text, _report.QoptWarning, stacklevel=level)


def _compile(
    ep_or_path: Any,
    target: str,
    minimum_deployment_target: str | enum.Enum | None,
    compute_precision: str | enum.Enum | None,
    output_names: Sequence[str] | None,
    states: str | None,
    dynamic_activations: str | None,
    device: str | int | None,
    validation: bool | None,
    fallback: bool | None,
    trust_pickle: bool,
    limits: Limits | str | None,
    dynamic_sizes: Sequence[int] | Mapping[str, Any] | None,
) -> CoremlArtifact | VulkanArtifact:
    if target == "coreml":
        opset = options.deployment_target(
            "iOS18" if minimum_deployment_target is None else minimum_deployment_target
        )
        precision = options.compute_precision(
            "fp16" if compute_precision is None else compute_precision
        )
        names = options.output_names(output_names)
        state_form = options.states(states)
        module = _frontend.import_program(
            ep_or_path, trust_pickle=trust_pickle, limits=limits, static=True,
            dynamic_sizes=dynamic_sizes,
        )  # fmt: skip
        activations = options.dynamic_activations(dynamic_activations)
        # qopt-coreml, then the target's Program
        return _driver.compile_coreml(module, opset, precision, names, state_form, activations)
    vulkan_device = options.device(device)
    host_fallback = options.fallback(fallback)
    module = _frontend.import_program(
        ep_or_path, trust_pickle=trust_pickle, limits=limits, static=True,
        dynamic_sizes=dynamic_sizes,
    )  # fmt: skip
    # qopt-vulkan, then the target's artifact
    return _driver.compile_vulkan(
        module,
        vulkan_device,
        None if validation is None else bool(validation),
        host_fallback,
    )


def read_mlpackage(path: Any) -> ModuleOp:
    """Read any ML Program `.mlpackage` back into the coreml dialect (untrusted input:
    every path stays inside the package, every size is checked before use)."""
    if not isinstance(path, str | os.PathLike):
        raise QoptError(f"qopt.read_mlpackage takes a path, got {type(path).__name__}")
    return _coreml_reader.read_mlpackage(path)


def load(path: Any) -> Any:
    """A saved artifact: a `.qvk` bundle (runs on the Vulkan device) or an
    `.mlpackage` (runs by interpreting the package read back: how to run one without
    Core ML). Both are untrusted input, checked whole before anything runs. The
    artifact is callable (one call on a fresh state), has `.methods` and
    `.session()` (calls that keep the program's state)."""
    if not isinstance(path, str | os.PathLike):
        raise QoptError(f"qopt.load takes a path, got {type(path).__name__}")
    text = os.fspath(path)
    if text.rstrip("/").endswith(".mlpackage"):
        return _coreml.load_mlpackage_artifact(text)
    if text.endswith(".qvk"):
        return _vulkan.load_vulkan_artifact(text)
    raise QoptError(
        f"qopt.load reads a .qvk bundle or an .mlpackage, got '{text}' (import a .pt2 "
        "with qopt.import_program or qopt.compile)"
    )
