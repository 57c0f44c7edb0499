"""The passes the pipelines run before a conversion (issue 23: a conversion converts):
expand-dynamic-windows, externalize-states, compose (they change IR: the interpreter
gives the same results before and after), check-mid-level and record-source-hash
(analyses: no op changes). A conversion run alone runs the same pass objects first
(`prepare=true`), so its result equals the pipeline's pieces run one by one.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects.builtin import StringAttr
from xdsl.dialects.func import FuncOp
from xdsl.passes import ModulePass

import qopt
from qopt.context import make_context, parse_module, print_module
from qopt.dialects.queries import SOURCE_HASH_ATTR, program_hash
from qopt.lowering import get_all_passes
from qopt.lowering.analyses import CheckMidLevelPass, RecordSourceHashPass
from qopt.lowering.compose import ComposePass
from qopt.lowering.convert_to_coreml import ConvertToCoremlPass
from qopt.lowering.convert_to_vkc import ConvertToVkcPass
from qopt.lowering.dynamic_windows import ExpandDynamicWindowsPass
from qopt.lowering.external_state import ExternalizeStatesPass
from qopt.lowering.fold_constants import FoldConstantsPass
from qopt.lowering.fuse_quant import FuseQuantPass
from qopt.lowering.pipelines import QoptCoremlPipeline, QoptVulkanPipeline, sub_passes
from qopt.report import QoptWarning

LIT = Path(__file__).parents[2] / "lit"
WINDOWS = LIT / "expand-dynamic-windows" / "windows.mlir"
STATES = LIT / "externalize-states" / "externalize-states.mlir"
COMPOSE = LIT / "compose" / "compose.mlir"
MID_LEVEL = LIT / "check-mid-level" / "check-mid-level.mlir"

PREPARATION = ("expand-dynamic-windows", "check-mid-level", "compose")
VULKAN_PREPARATION = (*PREPARATION, "fold-constants")
"""convert-to-vkc's: then fold-constants{target=vulkan} (the conversion evaluates
nothing)."""


def _module(path: Path):
    return parse_module(path.read_text(), str(path))


def _apply(module_pass: ModulePass, module) -> None:
    module_pass.apply(make_context(), module)
    module.verify()


def test_the_passes_are_registered() -> None:
    passes = get_all_passes()
    for name, cls in (
        ("expand-dynamic-windows", ExpandDynamicWindowsPass),
        ("externalize-states", ExternalizeStatesPass),
        ("check-mid-level", CheckMidLevelPass),
        ("record-source-hash", RecordSourceHashPass),
        ("compose", ComposePass),
    ):
        assert passes[name]() is cls


@pytest.mark.parametrize("position", [0, 1, 2])
def test_expand_dynamic_windows_is_equivalent(position: int) -> None:
    rng = np.random.default_rng(position)
    x = rng.normal(size=(1, 2)).astype(np.float32)
    module = _module(WINDOWS)
    before = qopt.interpret(module, np.array([position]), x)
    _apply(ExpandDynamicWindowsPass(), module)
    text = print_module(module)
    assert "aten.item" not in text
    assert "aten.dynamic" not in text
    after = qopt.interpret(module, np.array([position]), x)
    np.testing.assert_array_equal(after[0], before[0])


def test_expand_dynamic_windows_keeps_the_range_check() -> None:
    module = _module(WINDOWS)
    _apply(ExpandDynamicWindowsPass(), module)
    with pytest.raises(qopt.QoptError, match="u0 < 3"):
        qopt.interpret(module, np.array([3]), np.ones((1, 2), np.float32))


def test_externalize_states_is_equivalent() -> None:
    """Three calls keeping the state in a session, against three calls of the stateless
    program with the states passed in and the new values passed back."""
    rng = np.random.default_rng(0)
    module = _module(STATES)
    session = qopt.session(module)
    external = _module(STATES)
    _apply(ExternalizeStatesPass(), external)
    assert "ml_program.global" not in print_module(external)
    cache, count = np.zeros(2, np.float32), np.array(0, np.int64)
    for _ in range(3):
        x = rng.normal(size=2).astype(np.float32)
        (want,) = session.run(x, method="forward")
        got, count = qopt.interpret(external, x, cache, count)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(count, session.read_state("step.count"))
    assert int(count) == 3
    x = rng.normal(size=2).astype(np.float32)
    np.testing.assert_array_equal(
        qopt.interpret(external, x, function="reset")[0],
        qopt.interpret(module, x, function="reset")[0],
    )


@pytest.mark.parametrize("target", ["vulkan", "coreml"])
def test_compose_is_equivalent(target: str) -> None:
    rng = np.random.default_rng(1)
    module = _module(COMPOSE)
    functions = {
        f.sym_name.data: [tuple(t.get_shape()) for t in f.function_type.inputs.data]  # pyright: ignore
        for f in module.ops
        if isinstance(f, FuncOp)
    }
    inputs = {
        name: [rng.normal(size=shape).astype(np.float32) for shape in shapes]
        for name, shapes in functions.items()
    }
    before = {name: qopt.interpret(module, *xs, function=name) for name, xs in inputs.items()}
    _apply(ComposePass(target=target), module)
    assert "aten.diff" not in print_module(module)
    for name, xs in inputs.items():
        (after,) = qopt.interpret(module, *xs, function=name)
        np.testing.assert_allclose(after, before[name][0], rtol=1e-6, atol=1e-6)


def test_check_mid_level_changes_nothing_and_warns() -> None:
    module = _module(MID_LEVEL)
    text = print_module(module)
    with pytest.warns(QoptWarning, match=r"^convert-to-coreml: 1 quantized pattern\(s\)"):
        _apply(CheckMidLevelPass(target="coreml"), module)
    assert print_module(module) == text
    FuseQuantPass().apply(make_context(), module)
    with warnings.catch_warnings():
        warnings.simplefilter("error", QoptWarning)  # fused: nothing to warn about
        _apply(CheckMidLevelPass(target="vulkan"), module)


def test_record_source_hash_records_once() -> None:
    module = _module(MID_LEVEL)
    want = program_hash(module)
    _apply(RecordSourceHashPass(), module)
    recorded = module.attributes[SOURCE_HASH_ATTR]
    assert isinstance(recorded, StringAttr)
    assert recorded.data == want
    FuseQuantPass().apply(make_context(), module)  # the program changes; the hash stays
    _apply(RecordSourceHashPass(), module)
    assert module.attributes[SOURCE_HASH_ATTR] == recorded


def test_convert_to_vkc_alone_runs_the_pipelines_pieces() -> None:
    """convert-to-vkc (prepare=true) gives the IR of its preparation passes followed by
    convert-to-vkc{prepare=false}: the same pass objects."""
    alone = _module(WINDOWS)
    _apply(ConvertToVkcPass(schedule=False), alone)
    pieces = _module(WINDOWS)
    for module_pass in (*ConvertToVkcPass.preparation(), ConvertToVkcPass(False, prepare=False)):
        _apply(module_pass, pieces)
    assert [p.name for p in ConvertToVkcPass.preparation()] == list(VULKAN_PREPARATION)
    assert print_module(alone) == print_module(pieces)


def test_convert_to_coreml_alone_runs_the_pipelines_pieces() -> None:
    convert = ConvertToCoremlPass(target="iOS16", states="io")
    alone = _module(STATES)
    _apply(convert, alone)
    pieces = _module(STATES)
    for module_pass in (*convert.preparation(), ConvertToCoremlPass("iOS16", "io", prepare=False)):
        _apply(module_pass, pieces)
    assert [p.name for p in convert.preparation()] == [
        "record-source-hash",
        "externalize-states",
        *PREPARATION,
    ]
    assert print_module(alone) == print_module(pieces)


def test_the_pipelines_list_each_pass() -> None:
    """What runs before and after a conversion is a sub-pass of the pipeline (so
    --print-ir-after, --time-passes and --list-passes see it); the conversion in the
    pipeline only converts."""
    vulkan = sub_passes(QoptVulkanPipeline())
    assert vulkan is not None
    names = [p.name for p in vulkan]
    at = names.index("convert-to-vkc")
    assert names[at - 4 : at] == list(VULKAN_PREPARATION)
    assert vulkan[at - 1] == FoldConstantsPass(target="vulkan")
    assert names[-2:] == ["vkc-plan-buffers", "vkc-insert-barriers"]
    convert = vulkan[at]
    assert isinstance(convert, ConvertToVkcPass)
    assert (convert.prepare, convert.schedule) == (False, False)
    for states, stateful in (("state", []), ("io", ["externalize-states"])):
        coreml = sub_passes(QoptCoremlPipeline(states=states))
        assert coreml is not None
        names = [p.name for p in coreml]
        at = names.index("convert-to-coreml")
        assert names[names.index("record-source-hash") : at] == [
            "record-source-hash",
            *stateful,
            *PREPARATION,
        ]
        convert = coreml[at]
        assert isinstance(convert, ConvertToCoremlPass)
        assert not convert.prepare
