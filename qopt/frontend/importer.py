"""torch.export ExportedProgram -> `builtin.module` of aten + quant ops.

One op per node of the exported graph. User inputs become the arguments of
`func.func @forward`, user outputs its results (their names in the function's
`qopt.output_names`, qopt/dialects/signature.py). Parameters, buffers, constants
and the inner tensors of torchao tensor subclasses become `arith.constant`s
holding numpy-backed `dense_resource` blobs, created on first use (PT2E keeps
unused float weights as parameters: they are not imported).

Symbolic values: a SymInt torch knows at export (a static dim's size) is a Python
int that folds away; one known only at run time (`.item()`, a dynamic dim's
`x.shape[d]`, arithmetic on those) is a 0-d tensor (qopt/dialects/aten/scalar.py)
carrying its asserted range, and torch's run-time assertions stay as
`aten.assert_scalar`. A bounded `torch.export.Dim` makes `?` dims: the function
records each symbol's range and each argument's dims' symbols
(qopt/dialects/signature.py); ops whose size depends on a run-time scalar take it
as an operand (`aten.dynamic_slice`), and tensors created at a dynamic size are
created at the Dim's max and cut to the run-time size.

Size variants: targets that compile static shapes import a Dim-exported program
once per size (`Importer(..., sizes={"s0": 5})`): every expression of a Dim's
symbol is then the int it takes at that size, so the function is static
(`enumerate_sizes` chooses the sizes, `import_methods` names the functions
`<method>__<size>`: qopt/frontend/methods.py, qopt/dialects/signature.py). What the
importer reads from single nodes (types, static ints, locations) is nodes.py's.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind, OutputKind
from torch.fx import Node
from xdsl.builder import Builder
from xdsl.dialects.arith import ConstantOp
from xdsl.dialects.builtin import (
    BytesAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DenseResourceAttr,
    ModuleOp,
    TensorType,
    i64,
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint
from xdsl.utils.exceptions import VerifyException

from qopt.dialects.aten import elementwise as ew
from qopt.dialects.aten import indexing as ix
from qopt.dialects.aten import shape as sh
from qopt.dialects.aten.scalar import INT64_MAX
from qopt.dialects.ml_program import GlobalLoadOp, GlobalOp, GlobalStoreOp
from qopt.dialects.signature import set_dynamic_dims, set_output_names
from qopt.dtypes import numpy_dtype
from qopt.errors import QoptError, quoted
from qopt.frontend.decompose import Decomposition, decompose_graph
from qopt.frontend.mutation import (
    IDENTITY_VIEWS,
    RESHAPE_VIEWS,
    TRANSPOSE_VIEWS,
    functional_target,
    is_view,
    mutated_argument,
)
from qopt.frontend.nodes import (
    describe,
    node_location,
    range_ints,
    specialized,
    static_int,
    tensor_type,
    tensor_type_of,
    to_numpy,
)
from qopt.resources import WeightStore, attach, make_resource, printable_inline

#: Constants with at most this many elements are printed inline (`dense<...>`).
INLINE_CONSTANT_LIMIT = 16


#: Graph nodes that carry no computation and are dropped.
DROPPED_TARGETS = frozenset(
    {
        "aten._assert_tensor_metadata.default",
        "aten._assert_async.msg",
    }
)

ConverterResult = Operation | SSAValue | Sequence[SSAValue] | int | float | None
Converter = Callable[["Importer", Node, dict[str, Any]], ConverterResult]


def _key(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", name)


class Importer:
    """Walks one ExportedProgram and builds the module."""

    def __init__(
        self,
        ep: ExportedProgram,
        converters: dict[str, Converter],
        *,
        store: WeightStore | None = None,
        function: str = "forward",
        sizes: Mapping[str, int] | None = None,
    ):
        self.ep = ep
        self.sizes = dict(sizes or {})
        """The size each Dim symbol takes in this (static) size variant; {} keeps the
        Dims dynamic."""
        self.converters = converters
        self.values: dict[Node, Any] = {}
        self.lazy_constants: dict[Node, torch.Tensor] = {}
        self.subclass_params: dict[Node, Any] = {}
        self.node: Node | None = None
        self.builder: Builder
        self.store = store if store is not None else WeightStore()
        """The module's weights (attached to it when the walk ends); several entry
        points of one program share one store (`import_methods`)."""
        self.function = function
        self.output_names: list[str] = []
        """The graph signature's user output names (recorded on the function)."""
        # Functionalization (qopt/frontend/mutation.py).
        self.base: dict[Node, Node] = {}
        """A view's or in-place op's base: the tensor whose elements it aliases."""
        self.parent: dict[Node, Node] = {}
        """A view's source (the tensor it is a view of)."""
        self.written: dict[Node, Node] = {}
        """An in-place op's written argument (its result aliases it)."""
        self.mutated: set[Node] = set()
        """Bases some in-place op writes."""
        self.version: dict[Node, int] = {}
        """Writes to each mutated base so far."""
        self.view_version: dict[Node, int] = {}
        """The base version a view's current value was computed from."""
        self.states: dict[Node, str] = {}
        """Placeholders that are program state, by state name."""
        self.globals: list[Operation] = []
        self.mutation_outputs: dict[str | None, Node] = {}
        """BUFFER_MUTATION outputs' buffers: their placeholders."""
        self.symbols: dict[str, tuple[int, int]] = {}
        """The dynamic input dims' symbols and their ranges (`qopt.symbols`)."""
        self.decompositions: dict[str, Decomposition] = {}
        """The ops without a converter that were decomposed (or tried), by target."""

    # ----- public helpers for converters ---------------------------------------

    def error(self, message: str) -> QoptError:
        where = describe(self.node) if self.node is not None else "the program"
        return QoptError(f"{where}: {message}")

    def value(self, arg: Any) -> SSAValue:
        """The SSA value of an FX node argument (tensor): for an in-place op, the
        current value of what it wrote; for a view of a base written since the view
        was computed, the view recomputed from the base's new value."""
        if not isinstance(arg, Node):
            raise self.error(f"expected a tensor argument, got {arg!r}")
        arg = self.resolve(arg)
        base = self.base.get(arg)
        if base is not None and arg in self.view_version:
            if self.view_version[arg] != self.version.get(base, 0):
                self._reconvert(arg)
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
            key = self.store.find(_key(name), array)  # the same weight of another method
            if key is not None:
                value = DenseResourceAttr.from_params(key, type)
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

    # ----- run-time scalars (SymInt / SymBool values, qopt/dialects/aten/scalar.py) --

    def symint(self, arg: Any, what: str = "an integer argument") -> int | SSAValue:
        """An integer argument: a Python int, a SymInt node torch knows the value of
        (an int), or a run-time scalar (the node's 0-d int64 tensor)."""
        if isinstance(arg, Node):
            value = self.values.get(self.resolve(arg))
            if isinstance(value, bool | int):
                return int(value)
            if isinstance(value, SSAValue) and isinstance(value.type, TensorType):
                if not value.type.get_shape():
                    return value
            raise self.error(f"{what} ({arg.name}) is not an integer")
        known = static_int(arg)
        if known is None:
            raise self.error(f"{what} must be an integer, got {arg!r}")
        return known

    def static(self, arg: Any, what: str) -> int:
        """An integer argument that must be known at compile time."""
        value = self.symint(arg, what)
        if isinstance(value, SSAValue):
            raise self.error(
                f"{what} is computed at run time ({arg.name if isinstance(arg, Node) else arg}); "
                "qopt needs it constant here"
            )
        return value

    def scalar_operand(self, value: float | bool | SSAValue) -> SSAValue:
        """A run-time scalar, or a Python number as a 0-d constant (int64 for an int,
        i1 for a bool, f64 for a float: SymInt / SymBool / SymFloat types)."""
        if isinstance(value, SSAValue):
            return value
        if isinstance(value, bool):
            return self.constant(np.array(value, dtype=np.bool_), "scalar")
        if isinstance(value, int):
            return self.constant(np.array(value, dtype=np.int64), "scalar")
        return self.constant(np.array(value, dtype=np.float64), "scalar")

    def symbol_range(self, value: Any) -> tuple[int, int] | None:
        """The range `[min, max]` torch proved or asserted for a SymInt (its symbol's
        `ep.range_constraints` entry, or its expression bounded by its symbols'
        ranges); None if unbounded both ways or not a SymInt."""
        if not isinstance(value, torch.SymInt):
            return None
        from torch.utils._sympy.value_ranges import ValueRanges, bound_sympy

        expr = value.node.expr
        env = value.node.shape_env
        ranges: dict[Any, ValueRanges] = {}
        for symbol in expr.free_symbols:
            known = self.ep.range_constraints.get(symbol)
            if known is None and env is not None:
                known = env.var_to_range.get(symbol)
            if known is not None:
                ranges[symbol] = known
        try:
            bounds = bound_sympy(expr, ranges)
        except Exception:  # a sympy expression torch's range analysis cannot bound
            return None
        return range_ints(bounds.lower, bounds.upper)

    def operand(self, arg: Any, like: SSAValue | None = None) -> SSAValue:
        """A tensor node, or a Python scalar materialised as a 0-d constant."""
        if isinstance(arg, Node):
            known = self.values.get(self.resolve(arg))
            if isinstance(known, bool | int | float):  # a SymInt torch knew at export
                return self.scalar(known, like)
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
        if self.sizes:
            dims = self.dynamic_dims()
            for symbol, size in self.sizes.items():
                low, high = dims.get(symbol, (size, size))
                if symbol not in dims or not low <= size <= high:
                    where = f"its range [{low}, {high}]" if symbol in dims else "its Dims"
                    raise QoptError(f"size {size} of {symbol} is outside {where}")
            with specialized(self.sizes):
                return self._run()
        return self._run()

    def dynamic_dims(self) -> dict[str, tuple[int, int]]:
        """The program's dynamic input dims: each Dim's symbol and its range (a
        QoptError for forms qopt does not import)."""
        specs = {s.arg.name: s for s in self.ep.graph_signature.input_specs}
        self._input_dims(self.ep.graph.nodes, specs)
        dims, self.symbols = dict(self.symbols), {}
        return dims

    def _run(self) -> ModuleOp:
        graph = self.ep.graph
        specs = {s.arg.name: s for s in self.ep.graph_signature.input_specs}
        # Dynamic inputs first: a program exported with a form of dynamic shape qopt
        # does not import says so before its symbolic nodes are listed as unknown ops.
        # An op with no converter is replaced by torch's decomposition of it, where
        # every piece of that has one (qopt/frontend/decompose.py).
        graph, self.decompositions = decompose_graph(graph, self.converters, DROPPED_TARGETS)
        input_dims = self._input_dims(graph.nodes, specs)
        self._check_supported(graph.nodes)
        self._plan_mutations(graph.nodes, specs)
        state_nodes: list[Node] = []

        arg_nodes: list[Node] = []
        arg_types: list[Attribute] = []
        for node in graph.nodes:
            if node.op != "placeholder":
                continue
            spec = specs.get(node.name)
            kind = spec.kind if spec is not None else InputKind.USER_INPUT
            if node in self.mutated:
                assert spec is not None
                assert spec.target is not None
                self._declare_state(node, spec.target, kind)
                state_nodes.append(node)
            elif kind == InputKind.USER_INPUT:
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
        for node in state_nodes:
            load = GlobalLoadOp(self.states[node], tensor_type_of(node.meta["val"]))
            self.values[node] = self.builder.insert(load).result

        outputs: list[SSAValue] = []
        for node in graph.nodes:
            self.node = node
            if node.op == "call_function":
                self._convert(node)
            elif node.op == "output":
                outputs = self._outputs(node)
        self.node = None
        for node in state_nodes:  # each state's value at the end of the call
            self.builder.insert(GlobalStoreOp(self.states[node], self.value(node)))

        self.builder.insert(ReturnOp(*outputs))
        func = FuncOp(
            self.function,
            (arg_types, [v.type for v in outputs]),
            Region(block),
        )
        set_output_names(func, self.output_names)
        if any(any(dims) for dims in input_dims.values()):
            set_dynamic_dims(func, self.symbols, [input_dims[n] for n in arg_nodes])
        module = attach(ModuleOp([*self.globals, func]), self.store)
        return self._verified(module)

    def _input_dims(self, nodes: Any, specs: dict[str, Any]) -> dict[Node, list[str]]:
        """Each tensor user input's dims by symbol name ("" for a static dim); fills
        `self.symbols` with each symbol's range. A dynamic input dim must be a
        `torch.export.Dim` itself (not an expression of one) with a finite range."""
        dims: dict[Node, list[str]] = {}
        for node in nodes:
            if node.op != "placeholder":
                continue
            spec = specs.get(node.name)
            if spec is not None and spec.kind != InputKind.USER_INPUT:
                continue
            val = node.meta.get("val")
            if not isinstance(val, torch.Tensor):
                continue
            names: list[str] = []
            for i, d in enumerate(val.shape):
                if static_int(d) is not None:
                    names.append("")
                    continue
                expr = d.node.expr if isinstance(d, torch.SymInt) else None
                if expr is None or not expr.is_Symbol:
                    raise QoptError(
                        f"dim {i} of input {node.name} is {d}: qopt imports dynamic input dims "
                        "that are a torch.export.Dim (not an expression of one); export with "
                        'one Dim per dim, or one method per size (import_program({"prefill": '
                        'ep_s8, "decode": ep_s1}))'
                    )
                bounds = self.symbol_range(d)

                if bounds is None or bounds[1] == INT64_MAX:
                    raise QoptError(
                        f"dim {i} of input {node.name} ({d}) has no upper bound: give its "
                        'torch.export.Dim a max (Dim("seq", min=1, max=...)) so a target can '
                        "allocate for it"
                    )
                self.symbols[str(expr)] = (max(bounds[0], 0), bounds[1])
                names.append(str(expr))
            dims[node] = names
        return dims

    def _verified(self, module: ModuleOp) -> ModuleOp:
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
            if mutated_argument(node) not in (None, "*") and (
                target == "aten.copy_.default" or functional_target(target) in self.converters
            ):
                continue
            if target not in seen or len(unknown) < 50:
                record = self.decompositions.get(target)
                why = f": {record.refusal()}" if record is not None else ""
                unknown.append(describe(node) + why)
            seen.add(target)
        if unknown:
            raise QoptError(
                f"{len(unknown)} unsupported op(s) in the exported program:\n  "
                + "\n  ".join(unknown)
                + "\nqopt's op coverage per target is measured in docs/conformance.md (the "
                "README links it); export a model that avoids these ops, or file an issue "
                "with them"
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
        args = {k: self._known(a) for k, a in self._normalized_args(node).items()}
        if node in self.written:
            self._call_converter(node, args, Importer._convert_in_place)
            return
        self._call_converter(node, args, self.converters[target])
        base = self.base.get(node)
        if base is not None and base in self.mutated:
            self.view_version[node] = self.version.get(base, 0)

    def _call_converter(self, node: Node, args: dict[str, Any], converter: Converter) -> None:
        target = str(node.target)
        try:
            result = converter(self, node, args)
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
        elif result is None or isinstance(result, int | float):
            self.values[node] = result  # a scalar torch knows at export (a static size)
        else:
            self.values[node] = tuple(result)

    # ----- functionalization (qopt/frontend/mutation.py) ---------------------------

    def resolve(self, node: Node) -> Node:
        """The tensor `node` stands for: an in-place op's result is what it wrote."""
        while node in self.written:
            node = self.written[node]
        return node

    def _plan_mutations(self, nodes: Any, specs: dict[str, Any]) -> None:
        """Which nodes alias which bases, and which bases in-place ops write (before
        any conversion: a mutated buffer is state from the start of the call)."""
        for node in nodes:
            if node.op != "call_function":
                continue
            written = mutated_argument(node)
            if written == "*":
                raise QoptError(f"{describe(node)}: writes several tensors in place")
            if written is not None:
                target = self._normalized_args(node).get(written)
                if not isinstance(target, Node):
                    raise QoptError(f"{describe(node)}: writes no tensor of the graph")
                target = self.resolve(target)
                self.written[node] = target
                base = self.base.get(target, target)
                self.base[node] = base
                self.mutated.add(base)
            elif is_view(node):
                source = self.resolve(node.args[0])
                self.parent[node] = source
                self.base[node] = self.base.get(source, source)
        by_target = {s.target: name for name, s in specs.items() if s.kind == InputKind.BUFFER}
        placeholders = {n.name: n for n in nodes if n.op == "placeholder"}
        for spec in self.ep.graph_signature.output_specs:
            if spec.kind == OutputKind.USER_INPUT_MUTATION:
                raise QoptError(
                    f"the program mutates its input {spec.target} in place: no target "
                    "can express that; return the new value as an output instead"
                )
            if spec.kind == OutputKind.BUFFER_MUTATION:
                name = by_target.get(spec.target)
                if name is None or name not in placeholders:
                    raise QoptError(f"the program mutates {spec.target}, which is no buffer")
                if spec.target in self.mutation_outputs:  # one new value per buffer
                    raise QoptError(
                        f"the program writes buffer {quoted(spec.target)} twice (two "
                        "BUFFER_MUTATION outputs), which torch.export never makes: only the "
                        "last would be kept; re-export the program"
                    )
                self.mutation_outputs[spec.target] = placeholders[name]
                self.mutated.add(placeholders[name])
        for base in self.mutated:
            if base.op != "placeholder":
                continue  # an intermediate tensor: written functionally, no state
            spec = specs.get(base.name)
            kind = spec.kind if spec is not None else InputKind.USER_INPUT
            if kind in (InputKind.USER_INPUT, InputKind.PARAMETER):
                what = "input" if kind == InputKind.USER_INPUT else "parameter"
                raise QoptError(
                    f"the program mutates its {what} {base.name} in place (node "
                    f"{self._first_writer(base)}): no target can express that; copy it "
                    "first, or return the new value as an output"
                )

    def _first_writer(self, base: Node) -> str:
        for node, written in self.written.items():
            if self.base.get(node) is base or written is base:
                return describe(node)
        return "a BUFFER_MUTATION output"

    def _state_name(self, target: str, kind: Any) -> str:
        """A buffer's qualified name; a lifted constant that shares its storage
        with a buffer (transformers' static cache) is named after that buffer."""
        if kind == InputKind.CONSTANT_TENSOR:
            value = self.ep.constants.get(target)
            if isinstance(value, torch.Tensor):
                pointer = value.untyped_storage().data_ptr()
                buffers = dict(self.ep.named_buffers())
                for name, buffer in buffers.items():
                    if name != target and buffer.untyped_storage().data_ptr() == pointer:
                        return name
        return target

    def _declare_state(self, node: Node, target: str, kind: Any) -> None:
        """`node` (a mutated buffer or lifted constant) as an `ml_program.global`
        whose initial value is the tensor's value at export."""
        if kind not in (InputKind.BUFFER, InputKind.CONSTANT_TENSOR):
            raise QoptError(f"input {node.name} of kind {kind.name} cannot be program state")
        tensor = self.ep.state_dict.get(target)
        if tensor is None:
            tensor = self.ep.constants.get(target)
        if not isinstance(tensor, torch.Tensor):
            raise QoptError(f"the program has no data for {target} (input {node.name})")
        name = self._state_name(target, kind)
        if name in self.states.values():
            raise QoptError(f"two inputs of the program are the state {name}")
        # A copy: the model's buffer may be mutated after the import (eager decoding).
        array = to_numpy(tensor).copy()
        type = tensor_type(array.dtype, array.shape)
        expected = node.meta.get("val")
        if not isinstance(expected, torch.Tensor) or tensor_type_of(expected) != type:
            raise QoptError(
                f"the data of {target} (input {node.name}) does not have the type the "
                "graph uses: the program and its weights do not belong together"
            )
        value: Attribute
        if array.size <= INLINE_CONSTANT_LIMIT and printable_inline(array):
            value = DenseIntOrFPElementsAttr(type, BytesAttr(array.tobytes()))
        else:
            key = self.store.find(_key(name), array)
            value = (
                DenseResourceAttr.from_params(key, type)
                if key is not None
                else make_resource(_key(name), array, type, self.store)
            )
        self.globals.append(GlobalOp(name, type, value))
        self.states[node] = name

    def _reconvert(self, node: Node) -> None:
        """Recompute the view `node` from its base's current value."""
        saved, self.node = self.node, node
        try:
            self._convert(node)
        finally:
            self.node = saved

    def _convert_in_place(self, node: Node, args: dict[str, Any]) -> SSAValue:
        """The functional op of an in-place op, written into what it writes."""
        target = str(node.target)
        written = self.written[node]
        if target == "aten.copy_.default":
            new = self._copy_value(written, args["src"])
        else:
            converter = self.converters[functional_target(target)]
            result = converter(self, node, args)
            if isinstance(result, Operation):
                if result.parent is None:
                    self.builder.insert(result)
                if (loc := node_location(node)) is not None:
                    result.location = loc
                new = result.results[0]
            elif isinstance(result, SSAValue):
                new = result
            else:
                raise self.error("an in-place op must have one result")
        self._write(written, new)
        return self.value(written)

    def _copy_value(self, dst: Node, src: Any) -> SSAValue:
        """`dst.copy_(src)`: src broadcast to dst's shape, in dst's element type."""
        type = self.value(dst).type
        assert isinstance(type, TensorType)
        value = self.operand(src, self.value(dst))
        source = value.type
        assert isinstance(source, TensorType)
        if source.get_element_type() != type.get_element_type():
            cast = TensorType(type.get_element_type(), source.get_shape())
            value = self.builder.insert(
                ew.CastOp.create(operands=[value], result_types=[cast])
            ).results[0]
        if tuple(source.get_shape()) != tuple(type.get_shape()):
            value = self.builder.insert(
                sh.ExpandOp.create(operands=[value], result_types=[type])
            ).results[0]
        return value

    def _write(self, node: Node, new: SSAValue) -> None:
        """`node`'s elements now hold `new`: the base's new value, through the inverse
        of each view between the base and `node`."""
        node = self.resolve(node)
        base = self.base.get(node, node)
        value = new
        while node is not base:
            parent = self.parent[node]
            value = self._unview(node, self.value(parent), value)
            node = parent
        self.values[base] = value
        self.version[base] = self.version.get(base, 0) + 1

    def _unview(self, view: Node, parent: SSAValue, value: SSAValue) -> SSAValue:
        """The new value of `parent` when its view `view` is written with `value`."""
        target = str(view.target)
        parent_type = parent.type
        op: Operation
        if target in IDENTITY_VIEWS:
            return value
        if target in RESHAPE_VIEWS:
            op = sh.ViewOp.create(operands=[value], result_types=[parent_type])
        elif target in TRANSPOSE_VIEWS:
            forward = self.value(view).owner
            assert isinstance(forward, Operation)
            properties = dict(forward.properties)
            if isinstance(forward, sh.PermuteOp):
                dims = [int(d) for d in forward.dims.get_values()]
                inverse = [dims.index(i) for i in range(len(dims))]
                properties["dims"] = DenseArrayBase.from_list(i64, inverse)
            op = type(forward).create(
                operands=[value], result_types=[parent_type], properties=properties
            )
        elif target in ("aten.slice.Tensor", "aten.narrow.default", "aten.select.int"):
            op = self._scatter_into(view, parent, value)
        else:
            raise self.error(
                f"writes in place through '{target}' (node {view.name}), a view qopt cannot "
                "write back through; write the base tensor instead"
            )
        if (loc := node_location(view)) is not None:
            op.location = loc
        return self.builder.insert(op).results[0]

    def _scatter_into(self, view: Node, parent: SSAValue, value: SSAValue) -> Operation:
        """`parent` with the elements its slice or select `view` takes replaced by
        `value`: `aten.slice_scatter` / `aten.select_scatter` with the view's own
        (normalised) parameters; `aten.dynamic_update_slice` at the run-time start of
        an `aten.dynamic_slice` (a narrow or select at a SymInt)."""
        forward = self.value(view).owner
        if isinstance(forward, sh.SqueezeOp) and isinstance(
            window := forward.input.owner, ix.DynamicSliceOp
        ):
            # A select at a run-time index: the squeezed dim back, then the window.
            value = self.builder.insert(
                sh.UnsqueezeOp.create(
                    operands=[value],
                    result_types=[window.result.type],
                    properties={"dim": window.dim},
                )
            ).results[0]
            forward = window
        if isinstance(forward, ix.DynamicSliceOp):
            # A narrow at a run-time start: the window written back at that start.
            return ix.DynamicUpdateSliceOp.create(
                operands=[parent, value, forward.start],
                result_types=[parent.type],
                properties={"dim": forward.dim},
            )
        if isinstance(forward, sh.SliceOp):
            scatter: type[Operation] = ix.SliceScatterOp
        elif isinstance(forward, sh.SelectOp):
            scatter = ix.SelectScatterOp
        else:
            raise self.error(f"writes in place through {view.name}, a view qopt cannot invert")
        return scatter.create(
            operands=[parent, value],
            result_types=[parent.type],
            properties=dict(forward.properties),
        )

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

    def _known(self, arg: Any) -> Any:
        """An argument with each SymInt / SymBool / SymFloat node whose value is known
        at import (a static size, or any size of a size variant, `specialized`)
        replaced by that number, in lists too: converters see the ints a static
        export gives, whichever way a size reached them."""
        if isinstance(arg, Node):
            value = self.values.get(self.resolve(arg))
            return value if isinstance(value, bool | int | float) else arg
        if isinstance(arg, list | tuple):
            return type(arg)(self._known(a) for a in arg)
        return arg

    def _outputs(self, node: Node) -> list[SSAValue]:
        specs = self.ep.graph_signature.output_specs
        flat = node.args[0]
        items = list(flat) if isinstance(flat, list | tuple) else [flat]
        outputs: list[SSAValue] = []
        for spec, item in zip(specs, items, strict=True):
            if spec.kind == OutputKind.BUFFER_MUTATION and isinstance(item, Node):
                # The functional form: the buffer's new value (written in _plan_mutations'
                # placeholder, stored at the end of the call).
                placeholder = self.mutation_outputs[spec.target]
                self.values[placeholder] = self.value(item)
                continue
            if spec.kind != OutputKind.USER_OUTPUT:
                raise QoptError(
                    f"output {spec.arg.name} of kind {spec.kind.name} is not supported: "
                    "qopt imports programs that mutate buffers, not "
                    f"{spec.kind.name.lower().replace('_', ' ')}s"
                )
            if not isinstance(item, Node):
                raise QoptError(f"output {item!r} is not a tensor: qopt returns tensors only")
            self.node = item
            outputs.append(self.value(item))
            self.output_names.append(spec.arg.name)
        return outputs
