"""torch.export ExportedProgram -> `builtin.module` of aten + quant ops.

One op per node of the exported graph. User inputs become the arguments of
`func.func @forward`, user outputs its results (their names in the function's
`qopt.output_names`, qopt/dialects/signature.py). Parameters, buffers, constants
and the inner tensors of torchao tensor subclasses become `arith.constant`s
holding numpy-backed `dense_resource` blobs, created on first use (PT2E keeps
unused float weights as parameters: they are not imported).
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind, OutputKind
from torch.fx import Node
from xdsl.builder import Builder
from xdsl.dialects.arith import ConstantOp
from xdsl.dialects.builtin import (
    AnyFloat,
    BytesAttr,
    DenseIntOrFPElementsAttr,
    FileLineColLoc,
    IntAttr,
    IntegerType,
    ModuleOp,
    StringAttr,
    TensorType,
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint
from xdsl.utils.exceptions import VerifyException

from qopt.dialects.signature import set_output_names
from qopt.dtypes import element_type
from qopt.errors import QoptError
from qopt.resources import WeightStore, attach, make_resource, printable_inline

#: Constants with at most this many elements are printed inline (`dense<...>`).
INLINE_CONSTANT_LIMIT = 16


#: Graph nodes that carry no computation and are dropped.
DROPPED_TARGETS = frozenset(
    {
        "aten._assert_tensor_metadata.default",
        "aten._assert_scalar.default",
        "aten.sym_constrain_range_for_size.default",
        "aten._assert_async.msg",
    }
)

TORCH_TO_NUMPY: dict[torch.dtype, np.dtype] = {
    torch.float32: np.dtype(np.float32),
    torch.float16: np.dtype(np.float16),
    torch.float64: np.dtype(np.float64),
    torch.bool: np.dtype(np.bool_),
    torch.int8: np.dtype(np.int8),
    torch.int16: np.dtype(np.int16),
    torch.int32: np.dtype(np.int32),
    torch.int64: np.dtype(np.int64),
    torch.uint8: np.dtype(np.uint8),
    torch.uint16: np.dtype(np.uint16),
    torch.uint32: np.dtype(np.uint32),
}

ConverterResult = Operation | SSAValue | Sequence[SSAValue] | None
Converter = Callable[["Importer", Node, dict[str, Any]], ConverterResult]


def numpy_dtype_of(dtype: torch.dtype, where: str = "") -> np.dtype:
    if dtype not in TORCH_TO_NUMPY:
        raise QoptError(
            f"unsupported dtype {dtype}{where}: qopt imports float16/32/64, bool and "
            "integer tensors; convert the model (e.g. model.float()) before exporting"
        )
    return TORCH_TO_NUMPY[dtype]


def tensor_type_of(
    t: torch.Tensor, where: str | Callable[[], str] = ""
) -> TensorType[AnyFloat | IntegerType]:
    """The tensor type of `t`; `where` (or a function computing it only when an
    error is raised) places the tensor in error messages."""
    shape: list[int] = []
    for d in t.shape:
        if not isinstance(d, int):
            where = where() if callable(where) else where
            raise QoptError(
                f"dynamic dimension {d}{where}: qopt compiles static shapes; "
                "export without dynamic_shapes"
            )
        shape.append(d)
    if t.dtype not in TORCH_TO_NUMPY:
        numpy_dtype_of(t.dtype, where() if callable(where) else where)
    return tensor_type(TORCH_TO_NUMPY[t.dtype], tuple(shape))


@functools.lru_cache(maxsize=4096)
def tensor_type(dtype: np.dtype, shape: tuple[int, ...]) -> TensorType[AnyFloat | IntegerType]:
    """`tensor<shape x dtype>`, shared: attributes are immutable, and building and
    verifying one per op and constant was a large part of import time."""
    return TensorType(element_type(dtype), list(shape))


def to_numpy(t: torch.Tensor) -> np.ndarray:
    return t.detach().cpu().contiguous().numpy()


#: Frames inside these packages are torch's or torchao's own code, not the model's.
_LIBRARY_DIRS = (f"{os.sep}torch{os.sep}", f"{os.sep}torchao{os.sep}")


def node_location(node: Node) -> FileLineColLoc | None:
    """The model's file and line from the node's stack trace: its innermost
    frame outside torch and torchao (`nn.Linear.forward` is not the user's line)."""
    trace = node.meta.get("stack_trace")
    if not trace:
        # PT2E inserts quantize/dequantize nodes without a trace: they belong to
        # the line of the value they (de)quantize.
        if str(node.target).startswith("quantized_decomposed.") and node.args:
            source = node.args[0]
            if isinstance(source, Node) and source.meta.get("stack_trace"):
                return _location_of_trace(source.meta["stack_trace"])
        return None
    return _location_of_trace(trace)


@functools.lru_cache(maxsize=4096)
def _location_of_trace(trace: str) -> FileLineColLoc | None:
    # Cached: every node of one source line shares its trace, and building the
    # (immutable) location attribute verifies it, which dominated import time.
    frames = re.findall(r'File "([^"]+)", line (\d+)', trace)
    if not frames:
        return None
    user = [f for f in frames if not any(d in f[0] for d in _LIBRARY_DIRS)]
    file, line = (user or frames)[-1]
    return FileLineColLoc(StringAttr(file), IntAttr(int(line)), IntAttr(0))


def describe(node: Node) -> str:
    loc = node_location(node)
    at = f" at {loc.filename.data}:{loc.line.data}" if loc is not None else ""
    return f"'{node.target}' (node {node.name}){at}"


def _key(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", name)


class Importer:
    """Walks one ExportedProgram and builds the module."""

    def __init__(self, ep: ExportedProgram, converters: dict[str, Converter]):
        self.ep = ep
        self.converters = converters
        self.values: dict[Node, Any] = {}
        self.lazy_constants: dict[Node, torch.Tensor] = {}
        self.subclass_params: dict[Node, Any] = {}
        self.node: Node | None = None
        self.builder: Builder
        self.store = WeightStore()
        """The module's weights (attached to it when the walk ends)."""
        self.output_names: list[str] = []
        """The graph signature's user output names (recorded on the function)."""

    # ----- public helpers for converters ---------------------------------------

    def error(self, message: str) -> QoptError:
        where = describe(self.node) if self.node is not None else "the program"
        return QoptError(f"{where}: {message}")

    def value(self, arg: Any) -> SSAValue:
        """The SSA value of an FX node argument (tensor)."""
        if not isinstance(arg, Node):
            raise self.error(f"expected a tensor argument, got {arg!r}")
        if arg in self.lazy_constants:
            tensor = self.lazy_constants.pop(arg)
            self.values[arg] = self.constant(to_numpy(tensor), arg.name, arg)
        if arg in self.subclass_params:
            raise self.error(
                f"the tensor-subclass parameter {arg.name} is used directly; qopt reads "
                "torchao subclasses through export.access_subclass_inner_tensor"
            )
        value = self.values.get(arg)
        if not isinstance(value, SSAValue):
            raise self.error(f"argument {arg.name} is not a tensor value")
        return value

    def optional_value(self, arg: Any) -> SSAValue | None:
        return None if arg is None else self.value(arg)

    def values_of(self, args: Sequence[Any]) -> list[SSAValue]:
        return [self.value(a) for a in args]

    def constant(self, array: np.ndarray, name: str = "cst", node: Node | None = None) -> SSAValue:
        """An `arith.constant` for a numpy array (inline if tiny, else dense_resource)."""
        array = np.asarray(array, order="C")
        type = tensor_type(array.dtype, array.shape)
        value: Attribute
        if array.size <= INLINE_CONSTANT_LIMIT and printable_inline(array):
            value = DenseIntOrFPElementsAttr(type, BytesAttr(array.tobytes()))
        else:
            value = make_resource(_key(name), array, type, self.store)
        op = ConstantOp(value, type)
        if node is not None and (loc := node_location(node)) is not None:
            op.location = loc
        self.builder.insert(op)
        return op.result

    def scalar(self, value: bool | float, like: SSAValue | None = None) -> SSAValue:
        """A 0-d constant for a Python scalar operand, typed by torch's weak-scalar
        promotion against the tensor operand `like`."""
        dtype = self.scalar_dtype(value, like)
        return self.constant(np.array(value, dtype=dtype), "scalar")

    @staticmethod
    def scalar_dtype(value: bool | float, like: SSAValue | None) -> np.dtype:
        from qopt.dtypes import numpy_dtype

        other = None
        if like is not None and isinstance(like.type, TensorType):
            other = numpy_dtype(like.type.get_element_type())
        if isinstance(value, bool):
            return other if other is not None else np.dtype(np.bool_)
        if isinstance(value, int):
            if other is not None and other != np.dtype(np.bool_):
                return other
            return np.dtype(np.int64)
        if other is not None and other.kind == "f":
            return other
        return np.dtype(np.float32)

    def operand(self, arg: Any, like: SSAValue | None = None) -> SSAValue:
        """A tensor node, or a Python scalar materialised as a 0-d constant."""
        if isinstance(arg, Node):
            return self.value(arg)
        if isinstance(arg, bool | int | float):
            return self.scalar(arg, like)
        raise self.error(f"expected a tensor or a number, got {arg!r}")

    def result_types(self, node: Node | None = None) -> list[TensorType]:
        node = node if node is not None else self.node
        assert node is not None
        val = node.meta.get("val")
        items = val if isinstance(val, list | tuple) else [val]
        types: list[TensorType] = []
        for item in items:
            if not isinstance(item, torch.Tensor):
                raise self.error(f"result {item!r} is not a tensor")
            types.append(tensor_type_of(item, lambda: f" in {describe(node)}"))
        return types

    def result_type(self, node: Node | None = None) -> TensorType:
        types = self.result_types(node)
        if len(types) != 1:
            raise self.error(f"expected one tensor result, got {len(types)}")
        return types[0]

    # ----- the walk --------------------------------------------------------------

    def run(self) -> ModuleOp:
        graph = self.ep.graph
        self._check_supported(graph.nodes)
        specs = {s.arg.name: s for s in self.ep.graph_signature.input_specs}

        arg_nodes: list[Node] = []
        arg_types: list[Attribute] = []
        for node in graph.nodes:
            if node.op != "placeholder":
                continue
            spec = specs.get(node.name)
            kind = spec.kind if spec is not None else InputKind.USER_INPUT
            if kind == InputKind.USER_INPUT:
                val = node.meta.get("val")
                if isinstance(val, torch.Tensor):
                    arg_nodes.append(node)
                    arg_types.append(tensor_type_of(val, f" of input {node.name}"))
                else:
                    self.values[node] = val
            elif kind in (
                InputKind.PARAMETER,
                InputKind.BUFFER,
                InputKind.CONSTANT_TENSOR,
            ):
                assert spec is not None
                assert spec.target is not None
                self._register_constant(node, spec.target)
            else:
                raise QoptError(
                    f"input {node.name} of kind {kind.name} is not supported: qopt imports "
                    "tensor inputs, parameters, buffers and constants"
                )

        block = Block(arg_types=arg_types)
        for node, arg in zip(arg_nodes, block.args, strict=True):
            arg.name_hint = _key(node.name)
            self.values[node] = arg
        self.builder = Builder(InsertPoint.at_end(block))

        outputs: list[SSAValue] = []
        for node in graph.nodes:
            self.node = node
            if node.op == "call_function":
                self._convert(node)
            elif node.op == "output":
                outputs = self._outputs(node)
        self.node = None

        self.builder.insert(ReturnOp(*outputs))
        func = FuncOp(
            "forward",
            (arg_types, [v.type for v in outputs]),
            Region(block),
        )
        set_output_names(func, self.output_names)
        module = attach(ModuleOp([func]), self.store)
        try:
            module.verify()
        except VerifyException as e:  # what the graph declares disagrees with itself
            first = (str(e).strip().splitlines() or [""])[0]
            raise QoptError(f"the imported program does not verify: {first}") from e
        return module

    def _check_supported(self, nodes: Any) -> None:
        unknown: list[str] = []
        seen: set[str] = set()
        for node in nodes:
            if node.op != "call_function":
                continue
            target = str(node.target)
            if target in DROPPED_TARGETS or target in self.converters:
                continue
            if target not in seen or len(unknown) < 50:
                unknown.append(describe(node))
            seen.add(target)
        if unknown:
            raise QoptError(
                f"{len(unknown)} unsupported op(s) in the exported program:\n  "
                + "\n  ".join(unknown)
                + "\nqopt imports the aten/quant ops listed in its docs; file an issue "
                "with these ops, or export a model that avoids them"
            )

    def _register_constant(self, node: Node, target: str) -> None:
        value = self.ep.state_dict.get(target)
        if value is None:
            value = self.ep.constants.get(target)
        if value is None:
            raise QoptError(f"the program has no data for {target} (input {node.name})")
        if not isinstance(value, torch.Tensor):
            raise QoptError(
                f"the data of {target} (input {node.name}) is a {type(value).__name__}, "
                "not a tensor"
            )
        expected = node.meta.get("val")
        if isinstance(expected, torch.Tensor) and (
            tuple(value.shape) != tuple(expected.shape) or value.dtype != expected.dtype
        ):
            raise QoptError(
                f"the data of {target} (input {node.name}) is a {value.dtype} tensor of shape "
                f"{list(value.shape)}, but the graph uses it as {expected.dtype} of shape "
                f"{list(expected.shape)}: the program and its weights do not belong together"
            )
        if type(value) not in (torch.Tensor, torch.nn.Parameter) and hasattr(
            value, "__tensor_flatten__"
        ):
            self.subclass_params[node] = value
            return
        self.lazy_constants[node] = value

    def _convert(self, node: Node) -> None:
        target = str(node.target)
        if target in DROPPED_TARGETS:
            return
        args = self._normalized_args(node)
        try:
            result = self.converters[target](self, node, args)
        except QoptError:
            raise
        except (
            IndexError,
            KeyError,
            TypeError,
            ValueError,
            AttributeError,
            OverflowError,
            VerifyException,  # an attribute built from an argument out of its type's range
        ) as e:
            # A node whose arguments do not have the shape torch gives them (a crafted or
            # corrupted .pt2): a converter reading them fails. Name the node.
            first = (str(e).strip().splitlines() or [""])[0]
            raise self.error(
                f"its arguments are not what '{target}' takes ({type(e).__name__}: {first}); "
                "is the program from torch.export? (rerun with --debug if it is)"
            ) from e
        loc = node_location(node)
        if isinstance(result, Operation):
            if result.parent is None:
                self.builder.insert(result)
            if loc is not None:
                result.location = loc
            results = list(result.results)
            self.values[node] = results[0] if len(results) == 1 else tuple(results)
        elif isinstance(result, SSAValue):
            self.values[node] = result
        elif result is None:
            self.values[node] = None
        else:
            self.values[node] = tuple(result)

    def _normalized_args(self, node: Node) -> dict[str, Any]:
        """Arguments by schema name, with defaults filled in."""
        schema = getattr(node.target, "_schema", None)
        if schema is None:
            return {f"arg{i}": a for i, a in enumerate(node.args)} | dict(node.kwargs)
        out: dict[str, Any] = {}
        for i, arg in enumerate(schema.arguments):
            if i < len(node.args) and not arg.kwarg_only:
                out[arg.name] = node.args[i]
            elif arg.name in node.kwargs:
                out[arg.name] = node.kwargs[arg.name]
            elif arg.has_default_value():
                out[arg.name] = arg.default_value
            else:
                out[arg.name] = None
        return out

    def _outputs(self, node: Node) -> list[SSAValue]:
        specs = self.ep.graph_signature.output_specs
        flat = node.args[0]
        items = list(flat) if isinstance(flat, list | tuple) else [flat]
        outputs: list[SSAValue] = []
        for spec, item in zip(specs, items, strict=True):
            if spec.kind != OutputKind.USER_OUTPUT:
                raise QoptError(
                    f"output {spec.arg} of kind {spec.kind.name} is not supported: qopt "
                    "compiles programs without buffer or input mutation"
                )
            if not isinstance(item, Node):
                raise QoptError(f"output {item!r} is not a tensor: qopt returns tensors only")
            self.node = item
            outputs.append(self.value(item))
            self.output_names.append(spec.arg.name)
        return outputs


def subclass_inner(imp: Importer, node: Node, args: dict[str, Any]) -> SSAValue:
    """`export.access_subclass_inner_tensor(param, 'qdata')` -> a constant of that part."""
    owner = args.get("src_subclass_tensor")
    attr = args.get("attr")
    if owner is None or attr is None:
        owner, attr = [*node.args, None, None][:2]
    subclass = imp.subclass_params.get(owner)
    if subclass is None:
        raise imp.error("access_subclass_inner_tensor must read a tensor-subclass parameter")
    parts, _ = subclass.__tensor_flatten__()
    if attr not in parts:
        raise imp.error(f"{type(subclass).__name__} has no tensor part {str(attr)[:40]!r}")
    inner = getattr(subclass, attr, None)
    if not isinstance(inner, torch.Tensor):
        raise imp.error(f"{type(subclass).__name__} has no tensor part '{attr}'")
    return imp.constant(to_numpy(inner), f"{owner.name}_{attr}", node)
