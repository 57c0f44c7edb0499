"""`qopt-opt`: xdsl-opt with qopt's dialects, passes, frontends and targets.

INPUT is `.mlir` text, a `.pt2` file or an `.mlpackage` (chosen by extension, or by
`-f`); every input is untrusted and bounded by `--limits` (qopt.limits). Weights
print in full into a file or a pipe; on a terminal (or with `--elide-weights-if-larger
N`) blobs above 1 KiB print as `dense_resource<__elided__>`, which no pass compiles
(qopt.resources.require_weights). Binary targets (`-t vkbundle`) need `-o`. Any failure
prints one `qopt-opt: error: ...` message on stderr, no traceback (unless `--debug`),
exits 1 and leaves no `-o` output behind (qopt/tools/contract.py). Under
`--verify-diagnostics` / `--parsing-diagnostics` diagnostics are printed and the run
goes on, as in xdsl-opt.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import gc
import io
import os
import shutil
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any, NoReturn

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline
from xdsl.printer import Printer
from xdsl.utils.arg_spec import parse_spec
from xdsl.utils.frontend import Frontend
from xdsl.xdsl_opt_main import xDSLOptMain

from qopt.context import (
    QoptMLIRFrontend,
    WeightMLIRTarget,
    load_qopt_dialects,
    resource_slot,
)
from qopt.errors import QoptError, did_you_mean
from qopt.files import temp_file_beside
from qopt.frontend import get_all_frontends
from qopt.limits import Limits, check_mlir_text
from qopt.logs import claim_process, quiet_third_party_logs
from qopt.lowering import get_all_passes
from qopt.registry import LazyModule
from qopt.report import CompileReport
from qopt.resources import (
    DEFAULT_ELIDE_BYTES,
    WeightStore,
    attach,
    release_unreferenced,
    weights_of,
)
from qopt.tools.contract import (
    add_common_arguments,
    one_line_usage_errors,
    run_tool,
    writes_in_place,
)
from qopt.version import qopt_version

if TYPE_CHECKING:
    from qopt.backends.coreml import reader as _coreml_reader
    from qopt.backends.coreml import target as _coreml_target
    from qopt.backends.vulkan import bundle as _vulkan_bundle
    from qopt.frontend import pt2_frontend as _pt2_frontend
    from qopt.lowering import pipelines as _pipelines
else:
    # Imported when used: `qopt-opt --help` loads no pass, a run loads the frontend of
    # its input and the passes it runs, one target's run never the other's packages.
    _coreml_reader = LazyModule("qopt.backends.coreml.reader")
    _coreml_target = LazyModule("qopt.backends.coreml.target")
    _vulkan_bundle = LazyModule("qopt.backends.vulkan.bundle")
    _pt2_frontend = LazyModule("qopt.frontend.pt2_frontend")
    _pipelines = LazyModule("qopt.lowering.pipelines")


@dataclass(frozen=True)
class MlpackageFrontend(Frontend):
    """`.mlpackage` directories, read back into the coreml dialect
    (`qopt.backends.coreml.reader`): a package is a directory, so it is read by its
    path (`input_name`), not from the stream."""

    name = "mlpackage"

    def parse(self, ctx: Context, input: IO[bytes], input_name: str) -> ModuleOp:
        return _coreml_reader.read_mlpackage(input_name)


class AtomicOutput:
    """A text file written under a temporary name and renamed into place on commit,
    so that a failed run leaves no partial file behind."""

    def __init__(self, path: str):
        self.path = path
        self.tmp_path: str | None = None
        try:
            if writes_in_place(path):
                self.stream: IO[str] = open(path, "w")
                return
            fd, self.tmp_path = temp_file_beside(path)
        except OSError as e:  # name the file asked for, never the temporary one
            raise QoptError(f"cannot write '{path}': {e.strerror or e}") from None
        self.stream = os.fdopen(fd, "w")

    def commit(self) -> None:
        try:
            self.stream.close()
            if self.tmp_path is not None:
                os.replace(self.tmp_path, self.path)
        except OSError as e:
            self.discard()
            raise QoptError(f"cannot write '{self.path}': {e.strerror or e}") from None

    def discard(self) -> None:
        with contextlib.suppress(OSError):
            self.stream.close()
        if self.tmp_path is not None and os.path.exists(self.tmp_path):
            os.unlink(self.tmp_path)


QOPT_TARGETS = ("mlir", "mlpackage", "vkbundle")
"""qopt's output targets (`-t`), listed before xDSL's own."""
INPUT_EXTENSIONS = {
    "mlir": "MLIR text at any qopt level",
    "pt2": "a program saved by torch.export.save",
    "mlpackage": "a Core ML ML Program package, read back",
}
"""The input files qopt reads, by extension (listed before xDSL's other frontends)."""
BINARY_TARGETS = {"vkbundle": "model.qvk"}
"""Targets that write bytes (with an example -o name): never to stdout by default."""


class QoptOptMain(xDSLOptMain):
    version_format = f"qopt-opt {qopt_version()} (xdsl {{xdsl_version}})"

    _output: AtomicOutput | None = None
    _report: CompileReport | None = None
    _package_written: bool = False

    def __init__(
        self,
        description: str = "qopt modular optimizer driver",
        args: Sequence[str] | None = None,
    ):
        super().__init__(description, args)

    def register_all_dialects(self) -> None:
        load_qopt_dialects(self.ctx)

    def register_all_passes(self) -> None:
        super().register_all_passes()

        for name, factory in get_all_passes().items():
            self.register_pass(name, factory)

    def register_all_frontends(self) -> None:
        super().register_all_frontends()

        for extension, factory in get_all_frontends().items():
            self.available_frontends[extension] = factory
        self.available_frontends["mlpackage"] = lambda: MlpackageFrontend
        self.available_frontends["mlir"] = lambda: QoptMLIRFrontend

    def register_all_targets(self) -> None:
        super().register_all_targets()

        self.available_targets["mlir"] = lambda: WeightMLIRTarget

        def write_vkbundle(module: ModuleOp, output: IO[str]) -> None:
            """`-t vkbundle`: binary bytes to the -o file's buffer (renamed into place);
            never to stdout by default (a terminal, or a pipe expecting text)."""
            assert self._output is not None  # prepare_output refused stdout
            _vulkan_bundle.VkBundleTarget().emit(self.ctx, module, self._output.stream)

        self.available_targets["vkbundle"] = write_vkbundle

        def write_mlpackage(module: ModuleOp, output: IO[str]) -> None:
            """`-t mlpackage`: a directory at -o, written atomically (temp dir + rename)."""
            _coreml_target.write_mlpackage(module, self.args.output_file)
            self._package_written = True

        self.available_targets["mlpackage"] = write_mlpackage

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        super().register_all_arguments(arg_parser)
        one_line_usage_errors(arg_parser, "qopt-opt")
        for action in arg_parser._actions:  # argparse keeps no public handle on them
            if action.dest == "target":
                action.type = self._target_argument
                action.help = (
                    f"output target: qopt's {', '.join(QOPT_TARGETS)}; xDSL's "
                    f"{', '.join(self._xdsl_names(self.available_targets, QOPT_TARGETS))}"
                )
            elif action.dest == "passes":
                xdsl = self._xdsl_names(self.available_passes, self._qopt_passes())
                action.help = (
                    "comma-separated pass pipeline, e.g. 'fuse-quant,convert-to-vkc' or "
                    f"'qopt-coreml{{compute-precision=fp16}}'. qopt's passes: "
                    f"{', '.join(self._qopt_passes())}; and xDSL's {len(xdsl)} passes "
                    "(--list-passes shows them all, qopt's with their options)"
                )
            elif action.dest == "print_between_passes":
                action.help = "print the IR on stdout between passes (a pipeline's sub-passes too)"
            elif action.dest == "time_passes":
                action.help = (
                    "print a table of the time of each phase on stderr (load, import, each "
                    "pass nested under its pipeline, kernel compile, serialization), as "
                    "MLIR's --mlir-timing"
                )
        # -v is qopt's --verbose (as in most compilers); --version keeps its long form.
        version = arg_parser._option_string_actions.pop("-v", None)
        if version is not None:
            version.option_strings = [s for s in version.option_strings if s != "-v"]
            version.help = "print qopt's version (and xDSL's) and exit"
        arg_parser.add_argument(
            "-v",
            "--verbose",
            default=False,
            action="store_true",
            help="print a progress line per phase on stderr as it ends (its time, the time "
            "since the start, the peak RSS), then the compile report (qopt.report): "
            "patterns fused by kernel name, what stayed unfused and why, compressed "
            "against float weight bytes, ops per target op, warnings",
        )
        arg_parser.add_argument(
            "--report-json",
            default=None,
            metavar="FILE",
            help="write the compile report as JSON to FILE",
        )
        arg_parser.add_argument(
            "--print-ir-after",
            default=None,
            metavar="PASS[,PASS...]",
            help="print the IR on stderr after each named pass (a pipeline's sub-pass, or "
            "a pipeline: after its last sub-pass), as MLIR's --print-ir-after",
        )
        arg_parser.add_argument(
            "--list-passes",
            action=ListPassesAction,
            nargs=0,
            passes=self.available_passes,
            help="list qopt's passes and pipelines with their options, then xDSL's passes, "
            "and exit",
        )
        add_common_arguments(arg_parser)
        arg_parser.add_argument(
            "--trust-pickle",
            default=False,
            action="store_true",
            help="allow unrestricted unpickling of .pt2 weights (only for trusted files)",
        )
        arg_parser.add_argument(
            "--host-fallback",
            default=False,
            action="store_true",
            help="run ops without a Vulkan kernel on the host, by the reference "
            "interpreter, between the device's work: sets fallback=true on the "
            "qopt-vulkan and convert-to-vkc passes of -p",
        )
        weights = arg_parser.add_mutually_exclusive_group()
        weights.add_argument(
            "--print-weights",
            default=False,
            action="store_true",
            help="print every dense_resource blob (the default, except on a terminal, "
            f"where blobs larger than {DEFAULT_ELIDE_BYTES} bytes are elided)",
        )
        weights.add_argument(
            "--elide-weights-if-larger",
            type=int,
            default=None,
            metavar="N",
            help="print dense_resource blobs larger than N bytes as "
            "dense_resource<__elided__> (text that no pass can compile)",
        )

    @staticmethod
    def _xdsl_names(available: Iterable[str], mine: Iterable[str]) -> list[str]:
        return [name for name in available if name not in set(mine)]

    @staticmethod
    def _qopt_passes() -> list[str]:

        return list(get_all_passes())

    def _target_argument(self, text: str) -> str:
        """`-t`'s value, checked: a QoptError-style message naming qopt's targets
        first, with the closest name for a typo (argparse prints it, exit 2)."""

        name = parse_spec(text).name
        if name in self.available_targets:
            return text
        xdsl = self._xdsl_names(self.available_targets, QOPT_TARGETS)
        hint = did_you_mean(name, QOPT_TARGETS) or did_you_mean(name, xdsl)
        raise argparse.ArgumentTypeError(
            f"unknown target '{name}'{hint}: qopt's targets are {', '.join(QOPT_TARGETS)} "
            f"(xDSL's: {', '.join(xdsl)})"
        )

    def setup_pipeline(self) -> None:
        """xDSL's pipeline, after naming an unknown pass with qopt's passes first and
        the closest name (xDSL says only "Unrecognized passes")."""
        from xdsl.utils.arg_spec import parse_pipeline

        mine = self._qopt_passes()
        xdsl = self._xdsl_names(self.available_passes, mine)
        for spec in parse_pipeline(self.args.passes):
            if spec.name in self.available_passes:
                continue
            hint = did_you_mean(spec.name, mine) or did_you_mean(spec.name, xdsl)
            raise QoptError(
                f"-p: unknown pass '{spec.name}'{hint}: qopt's passes are {', '.join(mine)} "
                f"(and xDSL's {len(xdsl)} passes, listed by --list-passes)"
            )
        super().setup_pipeline()
        if self.args.host_fallback:
            self.pipeline = with_host_fallback(self.pipeline)
        self._expand_pipelines()

    def _expand_pipelines(self) -> None:
        """Run each pipeline as its registered sub-passes (pipelines.sub_passes), with
        qopt's callback between them: xDSL's verification and --print-between-passes,
        --print-ir-after, and a phase of the compile report per pass (nested under its
        pipeline), which -v and --time-passes print."""
        passes: list[ModulePass] = []
        self._group: dict[int, ModulePass] = {}
        for given in self.pipeline.passes:
            subs = _pipelines.sub_passes(given)
            if subs is None:
                passes.append(given)
                continue
            for sub in subs:
                self._group[id(sub)] = given
                passes.append(sub)
        self.pipeline = PassPipeline(tuple(passes), self._between_passes)
        names = [p.name for p in passes] + [g.name for g in self._group.values()]
        self._print_after: set[str] = set()
        if self.args.print_ir_after:
            for name in self.args.print_ir_after.split(","):
                name = name.strip()
                if name not in names:
                    hint = did_you_mean(name, names)
                    raise QoptError(
                        f"--print-ir-after: '{name}'{hint} is not a pass of the pipeline "
                        f"-p '{self.args.passes}' (its passes: {', '.join(dict.fromkeys(names))})"
                    )
                self._print_after.add(name)

    def _between_passes(
        self, previous: ModulePass | None, module: ModuleOp, next: ModulePass | None
    ) -> None:
        report = self.report
        if not self.args.disable_verify:
            module.verify()
        if previous is not None:
            release_unreferenced(module)  # blobs the pass replaced (run_passes does too)
        before, after = (None if p is None else self._group.get(id(p)) for p in (previous, next))
        if previous is not None:
            report.end()
            self._dump_after(previous.name, module)
            if before is not None and before is not after:
                report.end()
                self._dump_after(before.name, module)
        if previous is not None and next is not None and self.args.print_between_passes:
            print(f"IR after {previous.name}:")  # xDSL's format
            Printer(stream=sys.stdout).print_op(module)
            print("\n\n\n")
        if next is not None:
            if after is not None and after is not before:
                report.begin(after.name)
            report.begin(next.name)

    def _dump_after(self, name: str, module: ModuleOp) -> None:
        if name in self._print_after:
            print(f"// -----// IR Dump After {name} //----- //", file=sys.stderr)
            Printer(stream=sys.stderr).print_op(module)
            print(file=sys.stderr, flush=True)

    @property
    def report(self) -> CompileReport:
        if self._report is None:
            self._report = CompileReport(
                target=self.args.passes,
                verbose=self.args.verbose,
                on_warning=lambda text: print(f"qopt-opt: warning: {text}", file=sys.stderr),
            )
        return self._report

    def apply_passes(self, prog: ModuleOp) -> None:
        depth = self.report.depth
        try:
            super().apply_passes(prog)
        finally:  # a failed pass under --verify-diagnostics: the next chunk starts clean
            self.report.unwind(depth)
        if self.pipeline.passes:
            self.report.record_target_ops(prog)

    @property
    def limits(self) -> Limits:
        return self.args.limits

    def elide_threshold(self) -> int | None:
        """Blobs above this many bytes print as `dense_resource<__elided__>`: only
        when asked (`--elide-weights-if-larger`) or on a terminal, never into a file
        or a pipe, whose text must compile (None: every blob)."""
        if self.args.print_weights:
            return None
        if self.args.elide_weights_if_larger is not None:
            return self.args.elide_weights_if_larger
        if self.args.output_file is None and sys.stdout.isatty():
            return DEFAULT_ELIDE_BYTES
        return None

    def parse_chunk(
        self, chunk: IO[bytes], file_extension: str, start_offset: int = 0
    ) -> ModuleOp | None:
        # Each chunk is a module of its own, with a weight store of its own.
        spec = parse_spec(self.args.frontend or file_extension)
        if spec.name == "mlpackage":  # a directory: read by path, not from the stream
            return MlpackageFrontend().parse(self.ctx, chunk, self.args.input_file)
        if spec.name != "pt2":
            if spec.name == "mlir":
                data = chunk.read()
                check_mlir_text(data, self.limits, self.get_input_name())
                chunk = io.BytesIO(data)
            store = WeightStore()
            with resource_slot(self.ctx).bound(store), self.report.phase("parse"):
                module = super().parse_chunk(chunk, file_extension, start_offset)
            return None if module is None else attach(module, store)
        frontend = _pt2_frontend.PT2Frontend.from_spec(spec)
        if self.args.trust_pickle:
            frontend = dataclasses.replace(frontend, trust_pickle=True)
        frontend = dataclasses.replace(frontend, limits=self.limits)
        return frontend.parse(self.ctx, chunk, self.get_input_name())

    def get_input_stream(self) -> tuple[IO[bytes], str]:
        # Directories need overrides (docs/style.md, the driver): an .mlpackage is read by path.
        path = self.args.input_file
        if path is not None and os.path.isdir(path) and path.rstrip("/").endswith(".mlpackage"):
            return io.BytesIO(b""), "mlpackage"
        if path is not None and self.args.frontend is None:
            extension = os.path.splitext(path)[1].lstrip(".")
            if extension not in self.available_frontends:
                self._unknown_extension(path, extension)
        return super().get_input_stream()

    def _unknown_extension(self, path: str, extension: str) -> NoReturn:

        xdsl = self._xdsl_names(self.available_frontends, INPUT_EXTENSIONS)
        shown = f"extension '.{extension}'" if extension else "no extension"
        hint = did_you_mean(extension, INPUT_EXTENSIONS) if extension else ""
        others = f"; xDSL's: {', '.join('.' + e for e in xdsl)}" if xdsl else ""
        raise QoptError(
            f"'{path}' has {shown}{hint}: qopt reads "
            + ", ".join(f".{e} ({what})" for e, what in INPUT_EXTENSIONS.items())
            + f"{others}; or name the format with -f (e.g. -f mlir)"
        )

    def prepare_output(self) -> IO[str]:
        target = parse_spec(self.args.target).name
        if target == "mlpackage":
            return io.StringIO()  # the target writes the -o directory itself
        if self.args.output_file is None:
            if target in BINARY_TARGETS:  # before any work: never binary to stdout
                raise QoptError(
                    f"-t {target} writes a binary file, not text to stdout: give it with "
                    f"-o {BINARY_TARGETS[target]} (-o /dev/stdout to pipe the bytes on purpose)"
                )
            return sys.stdout
        self._output = AtomicOutput(self.args.output_file)
        return self._output.stream

    def output_resulting_program(self, prog: ModuleOp) -> str:
        printed = parse_spec(self.args.target).name == "mlir"
        with (
            resource_slot(self.ctx).bound(weights_of(prog), self.elide_threshold()),
            self.report.phase("print") if printed else contextlib.nullcontext(),
        ):
            return super().output_resulting_program(prog)

    def run(self) -> None:
        """xDSL's run under a compile report and the --limits; then -v's report,
        --time-passes' table, --report-json's file. The outputs (-o, --report-json) appear
        together or not at all: both are opened (as temporary files) before any work, so
        an unwritable one fails the run first, and renamed into place only when every
        one of them is written."""
        report = self.report
        extra = None if self.args.report_json is None else AtomicOutput(self.args.report_json)
        try:
            with report.active(), self.limits.applied():
                super().run()
            if extra is not None:
                extra.stream.write(report.to_json() + "\n")
                extra.stream.flush()
        except BaseException:
            if self._output is not None:
                self._output.discard()
            if extra is not None:
                extra.discard()
            self._remove_package()
            raise
        try:
            if extra is not None:
                extra.commit()
            if self._output is not None:
                self._output.commit()
        except BaseException:
            if extra is not None and os.path.exists(extra.path):
                os.unlink(extra.path)
            raise
        if self.args.verbose:
            print(report, file=sys.stderr)
        if self.args.time_passes:
            print(report.timing_tree(), file=sys.stderr)

    def _remove_package(self) -> None:
        """A `-t mlpackage` directory this run wrote (at -o), after a later failure."""
        path = self.args.output_file
        if self._package_written and path and os.path.isdir(path):
            shutil.rmtree(path, ignore_errors=True)


class ListPassesAction(argparse.Action):
    """`--list-passes`: qopt's passes and pipelines with their options (name, type,
    default, what it does), then xDSL's pass names; exits 0."""

    def __init__(self, *args: Any, passes: dict[str, Any], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.passes = passes

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        print(list_passes(self.passes), end="")
        parser.exit()


def list_passes(available: dict[str, Any]) -> str:
    """The text of `--list-passes`."""
    mine = get_all_passes()
    lines = ["qopt's passes (a pipeline runs as the passes it lists):"]
    for name, factory in mine.items():
        cls = factory()
        doc = cls.__doc__ or ""
        if doc.startswith(f"{cls.__name__}("):  # dataclass's generated doc: the module's
            doc = sys.modules[cls.__module__].__doc__ or ""
        summary = " ".join(doc.strip().split("\n\n")[0].split())
        lines.append(f"  {name}")
        if summary:
            lines.append(f"      {summary}")
        subs = _pipelines.sub_passes(cls())
        if subs is not None:
            lines.append(f"      runs: {', '.join(str(p) for p in subs)}")
        docs = option_docs(cls)
        for field in dataclasses.fields(cls):
            default = getattr(cls, field.name, None)
            text = str(default).lower() if isinstance(default, bool) else str(default)
            shown = "" if default is None else f" = {text}"
            option = field.name.replace("_", "-")
            lines.append(f"    {option}: {_type_name(field.type)}{shown}")
            if docs.get(field.name):
                lines.append(f"        {docs[field.name]}")
    xdsl = [name for name in available if name not in mine]
    lines.append(f"xDSL's passes ({len(xdsl)}):")
    lines.extend(f"  {name}" for name in xdsl)
    return "\n".join(lines) + "\n"


def _type_name(annotation: Any) -> str:
    return annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "?")


def option_docs(cls: type) -> dict[str, str]:
    """The docstring under each dataclass field of `cls` (and its bases), first
    sentence, one line (Python keeps no attribute docstrings: read from the source)."""
    import ast
    import inspect
    import itertools
    import textwrap

    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        try:
            source = textwrap.dedent(inspect.getsource(klass))
        except (OSError, TypeError):
            continue
        body = ast.parse(source).body
        if not body or not isinstance(body[0], ast.ClassDef):
            continue
        statements = body[0].body
        for here, after in itertools.pairwise(statements):
            if (
                isinstance(here, ast.AnnAssign)
                and isinstance(here.target, ast.Name)
                and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            ):
                text = " ".join(after.value.value.split())
                docs[here.target.id] = text
    return docs


def with_host_fallback(pipeline: PassPipeline) -> PassPipeline:
    """`pipeline` with `fallback=true` on its qopt-vulkan and convert-to-vkc passes
    (`--host-fallback`); QoptError if it has neither."""
    vulkan = ("qopt-vulkan", "convert-to-vkc")  # by name: neither is imported for it
    passes = tuple(
        dataclasses.replace(p, fallback=True) if p.name in vulkan else p for p in pipeline.passes
    )
    if not any(p.name in vulkan for p in passes):
        raise QoptError(
            "--host-fallback applies to the Vulkan lowering: -p names neither qopt-vulkan "
            "nor convert-to-vkc"
        )
    return dataclasses.replace(pipeline, passes=passes)


def main(args: Sequence[str] | None = None) -> None:
    quiet_third_party_logs()
    if args is None:  # the command: no one else's code runs in this process
        claim_process()
    try:
        run_tool("qopt-opt", lambda: QoptOptMain(args=args).run(), args)
    finally:
        if args is None:
            # The command's process ends here: its objects (torch's, the IR's: millions
            # after a .pt2 compile) need no cyclic collection, which the interpreter's
            # exit would otherwise run over all of them (~1 s of a cold .pt2 compile).
            # Not for a call with arguments (a test or script in its own process).
            gc.freeze()


if __name__ == "__main__":
    main()
