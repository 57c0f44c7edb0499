"""The CoreML target: a module lowered to the coreml dialect -> its MIL Program
(`build_artifact`) and the `.mlpackage` it saves. A target runs no pass: the driver
(`qopt.driver.compile_coreml`, what `qopt.compile(ep, target="coreml")` calls) runs
`qopt-coreml` (qopt/lowering/pipelines.py), as `qopt-opt -p qopt-coreml -t mlpackage`
does before `target.py`; `qopt.read_mlpackage` is in `reader.py`.

A `CoremlArtifact` runs as the device would run it, on Linux: `session()` reads
the package back (`reader.py`: what a device loads, states and functions
included) and runs it in qopt's interpreter, keeping its states between calls
(`run(*inputs, method=)`, `reset()`, `read_state(name)`); `artifact(*inputs)` is
one call on a fresh state; `methods` lists its functions.
`load_mlpackage_artifact(path)` makes the same artifact from a package on disk
(`qopt.load` of an `.mlpackage`).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from xdsl.dialects.builtin import FixedBitwidthType, Float16Type, ModuleOp, StringAttr
from xdsl.dialects.func import FuncOp
from xdsl.ir import Attribute

from qopt.backends import format_bytes, format_method, format_tensor
from qopt.backends.coreml.deps import ensure_coremltools
from qopt.backends.coreml.emitter import (
    build_programs,
    function_of,
    input_names_of,
    output_names_of,
    package_metadata,
    save_program,
)
from qopt.backends.coreml.reader import read_mlpackage
from qopt.dialects import coreml
from qopt.dialects.coreml import OPSET_ATTR
from qopt.dialects.queries import methods_of
from qopt.dialects.signature import logical_methods
from qopt.dialects.tensors import elem_of, numel, shape_of
from qopt.dtypes import numpy_dtype
from qopt.errors import QoptError
from qopt.interpreters.session import Session
from qopt.report import phase

if TYPE_CHECKING:
    from qopt.report import CompileReport


@dataclass
class CoremlArtifact:
    """The compiled program: `.module` (coreml dialect), `.mil_program` (the
    default method's coremltools Program; `.mil_programs` has each method's),
    `.mlmodel` (the package as a coremltools `MLModel`), `.save(path)`,
    `.methods`, `.session()`, and a call runs one call on a fresh state. One
    loaded from a package (`load_mlpackage_artifact`) has the package read back
    as `.module` and no Program (`.save` copies the package)."""

    module: ModuleOp
    mil_program: Any
    target: str
    compute_precision: str
    output_names: list[str] = field(default_factory=list[str])
    mil_programs: dict[str, Any] = field(default_factory=dict[str, Any])
    metadata: dict[str, str] = field(default_factory=dict[str, str])
    """User-defined metadata written into the package (the states' names)."""
    source: str | None = None
    """The package this artifact was loaded from (None for a compiled one)."""
    report: CompileReport | None = field(default=None, repr=False)
    """What the compile did (`qopt.compile`; None for a loaded package)."""
    _package_module: ModuleOp | None = field(default=None, repr=False)
    _mlmodel: Any = field(default=None, repr=False)

    @property
    def mlmodel(self) -> Any:
        """The package as coremltools' `ct.models.MLModel` (loaded with
        `skip_model_load=True`: Linux has no Core ML runtime), so coremltools code
        runs on it unchanged: `user_defined_metadata`, `short_description`,
        `input_description`, `get_spec()`, `ct.utils.rename_feature(spec, ...)`,
        `ct.optimize.coreml.*`, `mlmodel.save(path)`. A compiled artifact is saved
        once to a temporary directory, removed with the artifact; the same object
        is returned each time, so edits to it stay until it is saved."""
        if self._mlmodel is None:
            ct = ensure_coremltools()

            path = self.source
            if path is None:
                tmp = tempfile.mkdtemp(prefix="qopt-mlmodel-")
                weakref.finalize(self, shutil.rmtree, tmp, True)
                path = self.save(os.path.join(tmp, "model.mlpackage"))
            self._mlmodel = ct.models.MLModel(path, skip_model_load=True)
        return self._mlmodel

    @property
    def methods(self) -> list[str]:
        """The program's methods (`forward`, or `prefill` and `decode` ...), in order
        (a method compiled at several sizes listed once)."""
        return logical_methods(methods_of(self.module))

    @property
    def state_names(self) -> list[str]:
        """The program's states (the mutated buffers' qualified names), in order."""
        return [g.sym_name.data for g in coreml.mutable_globals(self.module)]

    def save(self, path: str | os.PathLike[str]) -> str:
        """Write the `.mlpackage` directory atomically (temp dir + rename) and return
        its path. As coremltools' `MLModel.save`: a path without an extension gets
        `.mlpackage`, another extension is an error."""
        path = mlpackage_path(path)
        if self.source is not None:
            return copy_mlpackage(self.source, path)
        programs = self.mil_programs or {"main": self.mil_program}
        return save_mlpackage(programs, path, self.target, self.metadata)

    def weight_bytes(self) -> int:
        """Bytes of the program's constants at their element widths (int4 data at 4
        bits): about the size of the package's weight.bin."""
        total = 0
        for op in self.module.walk():
            if isinstance(op, coreml.ConstOp):
                elem = elem_of(op.result)
                bits = elem.bitwidth if isinstance(elem, FixedBitwidthType) else 32
                total += -(-numel(op.result) * bits // 8)
        return total

    def __repr__(self) -> str:
        lines = [
            f"CoremlArtifact({self.target}, {self.compute_precision}, weights "
            f"{format_bytes(self.weight_bytes())}"
            + (f", loaded from '{self.source}')" if self.source is not None else ")")
        ]
        for method in self.methods:
            func = function_of(self.module, method)
            inputs = [
                format_tensor(name, _dtype_name(a.type), shape_of(a))
                for name, a in zip(input_names_of(func), func.body.block.args, strict=True)
            ]
            outputs = [
                format_tensor(name, _dtype_name(t), shape_of(t))
                for name, t in zip(
                    output_names_of(self.module, None if len(self.methods) > 1 else
                                    self.output_names or None, method),
                    func.function_type.outputs.data,
                    strict=True,
                )
            ]  # fmt: skip
            lines.append("  " + format_method(method, inputs, outputs))
        if self.state_names:
            lines.append(f"  states: {', '.join(self.state_names)}")
        return "\n".join(lines)

    def package_module(self) -> ModuleOp:
        """The package as a device loads it, read back into the coreml dialect
        (saved to a temporary directory once and read back, for a compiled artifact)."""
        if self._package_module is None:
            if self.source is not None:
                self._package_module = self.module
            else:
                tmp = tempfile.mkdtemp(prefix="qopt-session-")
                try:
                    path = self.save(os.path.join(tmp, "model.mlpackage"))
                    self._package_module = read_mlpackage(path)
                finally:
                    shutil.rmtree(tmp, ignore_errors=True)
        return self._package_module

    def session(self) -> Session:
        """A session of the package read back (`package_module`) in qopt's
        interpreter: `run(*inputs, method=None)` keeps the states between calls,
        `reset()`, `read_state(name)` (the buffer's qualified name), `methods`.
        Two sessions never share state."""
        return Session(self.package_module())

    def __call__(self, *inputs: Any, method: str | None = None) -> tuple[np.ndarray, ...]:
        """One call of `method` on a fresh state (a new session)."""
        return self.session().run(*inputs, method=method)


def _dtype_name(type: Attribute) -> str:
    return numpy_dtype(elem_of(type)).name


def mlpackage_path(path: str | os.PathLike[str]) -> str:
    """`path` with `.mlpackage` added if it has no extension (coremltools'
    convention); a QoptError for another extension."""
    text = os.fspath(path)
    stem, extension = os.path.splitext(text.rstrip("/"))
    if not extension:
        return stem + ".mlpackage"
    if extension != ".mlpackage":
        raise QoptError(
            f"an ML Program is saved as a .mlpackage directory, not '{text}' "
            f"(use '{stem}.mlpackage', or no extension to have it added)"
        )
    return text


def load_mlpackage_artifact(path: str | os.PathLike[str]) -> CoremlArtifact:
    """A `CoremlArtifact` of the `.mlpackage` at `path` (untrusted: read by
    `reader.read_mlpackage`), run by interpreting the package read back: the way
    to run one without Core ML (`qopt.load`)."""
    source = os.path.abspath(os.fspath(path))
    module = read_mlpackage(source)
    opsets = [
        op.attributes[OPSET_ATTR]
        for op in module.ops
        if isinstance(op, FuncOp) and OPSET_ATTR in op.attributes
    ]
    target = max((a.data for a in opsets if isinstance(a, StringAttr)), default="iOS18")
    precision = "fp16" if _computes_in_fp16(module) else "fp32"
    names = output_names_of(module) if len(methods_of(module)) == 1 else []
    return CoremlArtifact(module, None, target, precision, names, source=source)


def _computes_in_fp16(module: ModuleOp) -> bool:
    return any(
        isinstance(op, coreml.CoremlOp)
        and not isinstance(op, coreml.StateOp | coreml.CastOp)
        and any(isinstance(elem_of(r), Float16Type) for r in op.results)
        for op in module.walk()
    )


def copy_mlpackage(source: str, path: str | os.PathLike[str]) -> str:
    """Copy the package directory `source` to `path` atomically."""
    final = os.path.abspath(os.fspath(path))
    if final == os.path.abspath(source):
        return final
    parent = os.path.dirname(final)
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(dir=parent, prefix=f".{os.path.basename(final)}.")
    try:
        staged = os.path.join(tmp, "model.mlpackage")
        shutil.copytree(source, staged, symlinks=True)
        _replace(staged, final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final


def _replace(staged: str, final: str) -> None:
    if os.path.isdir(final):
        shutil.rmtree(final)
    elif os.path.exists(final):
        os.unlink(final)
    os.replace(staged, final)


def save_mlpackage(
    program: Any,
    path: str | os.PathLike[str],
    target: str,
    metadata: dict[str, str] | None = None,
) -> str:
    """Write `program` (a Program, or Programs by method name: several make a
    multifunction package) as an `.mlpackage` at `path`, atomically."""
    ct = ensure_coremltools()

    final = os.path.abspath(os.fspath(path))
    parent = os.path.dirname(final)
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(dir=parent, prefix=f".{os.path.basename(final)}.")
    try:
        staged = os.path.join(tmp, "model.mlpackage")
        save_program(program, staged, getattr(ct.target, target), metadata)
        _replace(staged, final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final


def build_artifact(
    module: ModuleOp, minimum_deployment_target: str = "iOS18", compute_precision: str = "fp16"
) -> CoremlArtifact:
    """A `CoremlArtifact` of `module`, already lowered to the coreml dialect (by
    `qopt-coreml`: `qopt.driver.compile_coreml` runs it first): its MIL Program, one
    per method, its outputs named as the module records (name-outputs), its package
    metadata. Runs no pass."""
    with phase("MIL build"):  # output names: recorded by the pipeline's name-outputs
        programs = build_programs(module)
    methods = list(programs)
    names = output_names_of(module, None, methods[0])
    return CoremlArtifact(
        module,
        programs[methods[0]],
        minimum_deployment_target,
        compute_precision,
        names,
        mil_programs=programs,
        metadata=package_metadata(module),
    )


__all__ = [
    "CoremlArtifact",
    "build_artifact",
    "copy_mlpackage",
    "load_mlpackage_artifact",
    "mlpackage_path",
    "save_mlpackage",
]
