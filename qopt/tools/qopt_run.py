"""`qopt-run`: run a module on npz inputs through the reference interpreter or on
the Vulkan device.

    qopt-run INPUT --inputs in.npz [--outputs out.npz] [--device interp|vulkan]
    qopt-run INPUT --generate N --prompt-ids 1,2,3 [--device interp|vulkan]

INPUT is `.mlir` text (any qopt level), a `.pt2` file (imported first), an
`.mlpackage` (read back and interpreted: `qopt.load`) or, with `--device vulkan`, a
`.qvk` Vulkan bundle (an `.mlir`/`.pt2` input is lowered with
the qopt-vulkan pipeline first). The
npz arrays are the program's inputs in order (`arr_0`, `arr_1`, ... as
`numpy.savez` writes them). Outputs go to `--outputs` as `arr_0`, ... (written
atomically), or are summarised on stdout. `--generate N` runs an LLM instead
(methods taking token ids and positions, keeping a KV cache between calls; see
qopt/generation.py): N greedy tokens after `--prompt-ids`, printed. User mistakes print one
`qopt-run: error: ...` line, exit 1 and leave no output file behind.
"""

from __future__ import annotations

import argparse
import io
import os
import re
import sys
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from qopt import import_program, load, session
from qopt.errors import QoptError, QoptWarning
from qopt.files import temp_file_beside
from qopt.generation import generate
from qopt.inputs import load_npz
from qopt.limits import DEFAULT_LIMITS, Limits, check_mlir_text
from qopt.logs import quiet_third_party_logs
from qopt.registry import LazyModule
from qopt.tools.contract import (
    add_common_arguments,
    one_line_usage_errors,
    run_tool,
    writes_in_place,
)
from qopt.version import qopt_version

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp

    from qopt import context as _context
    from qopt.backends.vulkan import artifact as _vulkan_artifact
    from qopt.backends.vulkan import bisect as _bisect
    from qopt.backends.vulkan import runtime as _vulkan_runtime
    from qopt.frontend import pt2_frontend as _pt2_frontend
    from qopt.interpreters import session as _session
    from qopt.lowering import pipelines as _pipelines
else:
    # Imported when used: running a `.qvk` imports no compiler (xDSL, dialects, passes:
    # tests/unit/test_layering.py), `--device interp` no Vulkan runtime, and
    # `--check-dispatches` alone the kernels' references.
    _context = LazyModule("qopt.context")
    _vulkan_artifact = LazyModule("qopt.backends.vulkan.artifact")
    _bisect = LazyModule("qopt.backends.vulkan.bisect")
    _vulkan_runtime = LazyModule("qopt.backends.vulkan.runtime")
    _pt2_frontend = LazyModule("qopt.frontend.pt2_frontend")
    _session = LazyModule("qopt.interpreters.session")
    _pipelines = LazyModule("qopt.lowering.pipelines")

DEVICES = ("interp", "vulkan")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="qopt-run", description="Run a qopt module on npz inputs."
    )
    one_line_usage_errors(parser, "qopt-run")
    parser.add_argument(
        "input_file",
        help="an .mlir module, a .pt2 file, a .qvk bundle or an .mlpackage (interpreted)",
    )
    parser.add_argument("--inputs", help="npz file with the inputs arr_0, arr_1, ...")
    parser.add_argument(
        "--generate",
        type=int,
        metavar="N",
        help="generate N tokens greedily (an LLM with a KV cache) after --prompt-ids",
    )
    parser.add_argument(
        "--prompt-ids", help="the prompt's token ids, comma-separated (with --generate)"
    )
    parser.add_argument("--outputs", help="npz file to write the outputs to (default: summary)")
    parser.add_argument("--device", choices=DEVICES, default="interp")
    parser.add_argument(
        "--method",
        "--function",
        dest="function",
        default=None,
        help="the method to run (prefill, decode ...; default: the only one, or forward); "
        "a method compiled at several sizes runs the variant of the inputs' shapes",
    )
    parser.add_argument(
        "--check-dispatches",
        default=False,
        action="store_true",
        help="with --device vulkan: run each dispatch alone on the device from its "
        "reference's inputs and report every kernel whose result differs from its numpy "
        "reference (exit 1 if a kernel declared bit-exact differs)",
    )
    parser.add_argument(
        "--host-fallback",
        default=False,
        action="store_true",
        help="with --device vulkan on an .mlir/.pt2 input: run ops without a Vulkan kernel "
        "on the host (qopt-vulkan{fallback=true})",
    )
    parser.add_argument(
        "--trust-pickle",
        default=False,
        action="store_true",
        help="allow unrestricted unpickling of .pt2 weights (only for trusted files)",
    )
    add_common_arguments(parser)
    parser.add_argument("--version", action="version", version=f"qopt-run {qopt_version()}")
    return parser


def load_module(path: str, trust_pickle: bool = False, limits: Limits = DEFAULT_LIMITS) -> ModuleOp:
    """An `.mlir` or `.pt2` input (untrusted: bounded by `limits`), verified."""
    extension = os.path.splitext(path)[1]
    if extension == ".pt2":
        _pt2_frontend.precheck_pt2(path)
        return import_program(path, trust_pickle=trust_pickle, limits=limits)
    if extension != ".mlir":
        raise QoptError(f"'{path}': expected an .mlir or .pt2 file")
    with open(path, "rb") as f:
        data = f.read()
    check_mlir_text(data, limits, path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise QoptError(f"{path}: not UTF-8 text (byte {e.start})") from None
    module = _context.parse_module(text, path)
    module.verify()
    return module


_ARR = re.compile(r"arr_(\d+)")


def load_inputs(path: str, limits: Limits = DEFAULT_LIMITS) -> list[np.ndarray]:
    """The arrays of an `.npz` (no pickle, sizes checked), as the program's inputs in
    order: `arr_0`, `arr_1`, ... as `numpy.savez` writes them, else in file order."""
    if not os.path.isfile(path):
        raise QoptError(f"cannot read inputs '{path}': no such file")
    arrays = load_npz(path, limits)
    names = list(arrays)
    if names and all(_ARR.fullmatch(name) for name in names):
        names.sort(key=lambda name: int(name[4:]))
        expected = [f"arr_{i}" for i in range(len(names))]
        if names != expected:
            raise QoptError(f"inputs '{path}' must be arr_0 ... arr_N, got {names}")
    return [arrays[name] for name in names]


def save_outputs(path: str, outputs: Sequence[np.ndarray]) -> None:
    """`numpy.savez` to `path`, through a temporary file renamed into place."""
    buffer = io.BytesIO()
    np.savez(buffer, *outputs)
    if writes_in_place(path):
        with open(path, "wb") as f:
            f.write(buffer.getvalue())
        return
    fd, tmp_path = temp_file_beside(path)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(buffer.getvalue())
        os.replace(tmp_path, path)
    except BaseException:
        if os.path.exists(tmp_path):
            os.unlink(tmp_path)
        raise


def summary(name: str, array: np.ndarray) -> str:
    text = f"{name}: shape {list(array.shape)} {array.dtype}"
    if array.size == 0:
        return text
    if array.dtype == np.bool_:
        return f"{text} true={int(array.sum())}"
    values = array.astype(np.float64)
    return (
        f"{text} min={values.min():.6g} max={values.max():.6g} "
        f"mean={values.mean():.6g} std={values.std():.6g}"
    )


def run_vulkan(
    path: str,
    inputs: Sequence[np.ndarray],
    trust_pickle: bool,
    check: bool = False,
    limits: Limits = DEFAULT_LIMITS,
    method: str | None = None,
    fallback: bool = False,
) -> tuple[np.ndarray, ...]:
    """A `.qvk` bundle, or an `.mlir`/`.pt2` module lowered with qopt-vulkan (with
    `fallback`: ops without a kernel on the host), on the Vulkan device (with `check`,
    first compared dispatch by dispatch with the kernels' references)."""
    if (reason := _vulkan_runtime.vulkan_available()) is not None:
        raise QoptError(f"--device vulkan: {reason}; run with --device interp instead")
    if os.path.splitext(path)[1] == ".qvk":
        artifact = _vulkan_artifact.VulkanArtifact.load(path, limits=limits)
    else:
        module = load_module(path, trust_pickle=trust_pickle, limits=limits)
        artifact = _vulkan_artifact.compile_artifact(lowered_for_vulkan(module, fallback))
    with artifact:
        if check:
            check_dispatches_report(artifact, inputs)
        return artifact(*inputs, method=method)


def lowered_for_vulkan(module: ModuleOp, fallback: bool) -> ModuleOp:
    """`module` lowered with qopt-vulkan, unless it is at the vkc level already."""
    if any(op.name == "vkc.dispatch" for op in module.walk()):
        return module
    _pipelines.QoptVulkanPipeline(fallback=fallback).apply(_context.make_context(), module)
    return module


def check_dispatches_report(artifact: Any, inputs: Sequence[np.ndarray]) -> None:
    reports = _bisect.check_dispatches(artifact.program, inputs, device=artifact.device)
    steps = len(artifact.program.steps)
    for report in reports:
        print(report)
    broken = [r for r in reports if r.exact]
    print(
        f"checked {steps} dispatch(es): {steps - len({r.step for r in reports})} equal their "
        f"reference bit for bit; {len(reports)} report(s), {len(broken)} from kernels "
        "declared exact"
    )
    if broken:
        raise QoptError(
            f"{len(broken)} dispatch(es) of kernels declared bit-exact differ from their "
            "reference on this device (listed above): a kernel or driver bug"
        )


def prompt_ids(text: str | None) -> list[int]:
    if not text:
        raise QoptError("--generate needs --prompt-ids, e.g. --prompt-ids 1,2,3")
    try:
        ids = [int(t) for t in text.replace(" ", "").split(",") if t]
    except ValueError:
        raise QoptError(f"--prompt-ids must be comma-separated integers, got {text!r}") from None
    if not ids or any(i < 0 for i in ids):
        raise QoptError(f"--prompt-ids must be non-negative token ids, got {text!r}")
    return ids


def run_generate(args: argparse.Namespace) -> None:
    """`--generate N`: greedy tokens on a session of the input: a `.qvk` on the Vulkan
    device, an `.mlpackage` read back and interpreted, an `.mlir`/`.pt2` module in the
    interpreter (or, with --device vulkan, compiled with qopt-vulkan first)."""
    prompt = prompt_ids(args.prompt_ids)
    if args.inputs is not None or args.outputs is not None:
        raise QoptError("--generate takes --prompt-ids, not --inputs/--outputs")
    path = args.input_file
    if path.rstrip("/").endswith(".mlpackage") or path.endswith(".qvk"):
        runner = load(path).session()
    else:
        module = load_module(path, trust_pickle=args.trust_pickle, limits=args.limits)
        if args.device == "vulkan":
            runner = _vulkan_artifact.compile_artifact(
                lowered_for_vulkan(module, args.host_fallback)
            ).session()
        else:
            runner = session(module)
    tokens = generate(runner, prompt, args.generate)
    print(" ".join(str(t) for t in tokens))


def run(args: argparse.Namespace) -> None:
    if args.generate is not None:
        run_generate(args)
        return
    if args.inputs is None:
        raise QoptError("qopt-run needs --inputs in.npz (or --generate N --prompt-ids ...)")
    if args.check_dispatches and args.device != "vulkan":
        raise QoptError("--check-dispatches needs --device vulkan")
    if args.device == "vulkan" and args.input_file.rstrip("/").endswith(".mlpackage"):
        raise QoptError(
            f"'{args.input_file}' is a Core ML package: qopt runs it by interpreting it "
            "(--device interp); compile the .pt2 for Vulkan instead"
        )
    if args.device == "vulkan":
        outputs = run_vulkan(
            args.input_file,
            load_inputs(args.inputs, args.limits),
            args.trust_pickle,
            args.check_dispatches,
            args.limits,
            args.function,
            args.host_fallback,
        )
    elif os.path.splitext(args.input_file)[1] == ".qvk":
        raise QoptError(
            f"'{args.input_file}' is a Vulkan bundle: run it with --device vulkan "
            "(or interpret its .mlir at the vkc level)"
        )
    elif args.input_file.rstrip("/").endswith(".mlpackage"):
        outputs = load(args.input_file)(
            *load_inputs(args.inputs, args.limits), method=args.function
        )
    else:
        module = load_module(args.input_file, trust_pickle=args.trust_pickle, limits=args.limits)
        inputs = load_inputs(args.inputs, args.limits)
        outputs = _session.Session(module).run(*inputs, method=args.function)
    if args.outputs is not None:
        save_outputs(args.outputs, outputs)
        return
    for i, output in enumerate(outputs):
        print(summary(f"arr_{i}", output))


def _show_warning(message: Any, category: Any, *args: Any, **kwargs: Any) -> None:
    """qopt's warnings as `qopt-run: warning: ...` (an input's dtype converted)."""
    if issubclass(category, QoptWarning):
        print(f"qopt-run: warning: {message}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> None:
    quiet_third_party_logs()
    args = build_parser().parse_args(argv)

    def body() -> None:
        with args.limits.applied(), warnings.catch_warnings():  # run-time sizes too
            warnings.showwarning = _show_warning
            run(args)

    run_tool("qopt-run", body, argv)


if __name__ == "__main__":
    main()
