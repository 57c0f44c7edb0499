"""runtime/gen_rules.py, the translator of the kernels' Python rules (`KernelSpec.extents`
and `.workgroups`) into the native runtime's C: every kernel of the catalogue translates;
a rule outside the translatable subset stops the build with a message naming the kernel
and the line; a new rule (not one of the catalogue's: the translator has no per-kernel
code) compiled with the C compiler gives the Python function's counts and refusal texts.
The catalogue's own translated rules are compared with Python in test_native_corpus.py."""

from __future__ import annotations

import ctypes
import importlib.util
import itertools
import math
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from qopt.kernels import catalogue
from qopt.kernels.extents import WG_RANGE, ceil_div, count, grid_workgroups, guarded, ints, nonzero
from qopt.kernels.spec import Extents, KernelSpec, PushValues, SpecValues, binding, push_of

ROOT = Path(__file__).resolve().parents[3]


def _gen_rules() -> Any:
    if "qvk_gen_rules" not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            "qvk_gen_rules", ROOT / "runtime" / "gen_rules.py"
        )
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["qvk_gen_rules"] = module
        spec.loader.exec_module(module)
    return sys.modules["qvk_gen_rules"]


def _bounded_extents(push: PushValues, spec: SpecValues) -> Extents:
    """A made-up attention-like rule: L query rows at position P over S keys, reading at
    most the keys up to P + L when CAUSAL."""
    rows_l, keys_s, pos = ints(push, "L", "S", "P")
    rows = count(rows_l * keys_s, "L * S")
    keys = min(keys_s, pos + rows_l) if int(spec["CAUSAL"]) == 1 else keys_s
    if rows == 0:
        return {"q": 0, "out": 0}
    nonzero(push, "S")
    words = [ceil_div(rows, 4) * 4, max(keys, 1) * rows_l]
    if pos < 0:
        raise ValueError(f"position {pos} is negative (L = {rows_l})")
    return {"q": words[0], "out": words[1] + sum(k % 3 for k in (keys, pos))}


NEW_RULE = KernelSpec(
    name="bounded",
    glsl="bounded.glsl",
    bindings=(binding("q", "f32"), binding("out", "f32", True)),
    push=(*push_of("L", "S"), ("P", "i32")),
    spec=(("CAUSAL", 0), ("WG", 64)),
    workgroups=grid_workgroups(lambda p: int(p["L"]) * int(p["S"])),
    extents=guarded("bounded", _bounded_extents),
    spec_bounds={"CAUSAL": (0, 1), "WG": WG_RANGE},
)


def _while_rule(push: PushValues, spec: SpecValues) -> Extents:
    n = int(push["n"])
    while n > 1:
        n //= 2
    return {"y": n}


def _power_rule(push: PushValues, spec: SpecValues) -> Extents:
    return {"y": int(push["n"]) ** 2}


def _unknown_call_rule(push: PushValues, spec: SpecValues) -> Extents:
    return {"y": math.isqrt(int(push["n"]))}


def _bad(name: str, fn: Any) -> KernelSpec:
    return KernelSpec(name=name, glsl="bad.glsl", bindings=(binding("y", "f32", True),),
                      push=push_of("n"), extents=fn)  # fmt: skip


def test_every_catalogue_kernel_translates() -> None:
    gen = _gen_rules()
    for index, (name, spec) in enumerate(sorted(catalogue().items())):
        lines = gen.kernel_rules(index, spec)
        text = "\n".join(lines)
        assert f"rules_extents_{index}(" in text, name
        assert f"rules_workgroups_{index}(" in text, name


@pytest.mark.parametrize(
    ("fn", "what"),
    [(_while_rule, "While"), (_power_rule, "Pow"), (_unknown_call_rule, "isqrt")],
)
def test_untranslatable_rule_fails_naming_kernel_and_line(fn: Any, what: str) -> None:
    gen = _gen_rules()
    with pytest.raises(gen.RuleError) as error:
        gen.kernel_rules(0, _bad("badkernel", fn))
    message = str(error.value)
    assert "kernel badkernel" in message
    assert "test_gen_rules line" in message
    assert what in message


def test_a_new_rule_compiles_to_the_python_semantics(tmp_path: Path) -> None:
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        print("skipped: no C compiler")
        pytest.skip("no C compiler")
    gen = _gen_rules()
    source = tmp_path / "rules.c"
    source.write_text(
        "#include <stdarg.h>\n#include <stdint.h>\n#include <stdio.h>\n#include <string.h>\n"
        '#include "catalogue.h"\n'
        + gen.HELPERS
        + "\n".join(gen.kernel_rules(0, NEW_RULE))
        + """
int run_rules(const int64_t *P, const int64_t *S, int64_t *W, int64_t *E, char *msg) {
  qvk_rule_ctx X = {"bounded", 0, ""};
  int r = rules_workgroups_0(P, S, W, &X);
  if (r == 0) r = rules_extents_0(P, S, E, &X);
  if (r) memcpy(msg, X.msg, sizeof X.msg);
  return r;
}
"""
    )
    library = tmp_path / "librules.so"
    subprocess.run(
        [cc, "-shared", "-fPIC", "-O1", "-Wall", "-Wextra", "-Werror",
         "-Wno-unused-variable", "-Wno-unused-function",
         f"-I{ROOT / 'runtime' / 'src'}", str(source), "-o", str(library)],
        check=True, capture_output=True,
    )  # fmt: skip
    run = ctypes.CDLL(str(library)).run_rules
    extents = NEW_RULE.extents
    assert extents is not None
    tally = {"ok": 0, "refused": 0, "overflow": 0}
    values = [0, 1, 2, 3, 5, 64, 65535, 2**31 - 1, 2**32 - 1]
    positions = [-(2**31), -5, -1, 0, 1, 7, 2**31 - 1]
    for rows_l, keys_s, pos, causal in itertools.product(values, values, positions, (0, 1)):
        push, spec = {"L": rows_l, "S": keys_s, "P": pos}, {"CAUSAL": causal, "WG": 64}
        try:
            want: tuple = (tuple(NEW_RULE.workgroups(push, spec)),
                           tuple(extents(push, spec).values()))  # fmt: skip
        except ValueError as e:
            want = (str(e),)
        p = (ctypes.c_int64 * 3)(rows_l, keys_s, pos)
        s = (ctypes.c_int64 * 2)(causal, 64)
        w, e, msg = (ctypes.c_int64 * 3)(), (ctypes.c_int64 * 2)(), ctypes.create_string_buffer(512)
        got = (msg.value.decode(),) if run(p, s, w, e, msg) else (tuple(w), tuple(e))
        if len(got) == 1 and "64-bit integer overflow" in got[0]:
            tally["overflow"] += 1
            continue
        assert got == want, (push, spec)
        tally["ok" if len(want) == 2 else "refused"] += 1
    print(f"a new rule, C against Python: {tally}")
    assert tally["ok"] > 100
    assert tally["refused"] > 100
