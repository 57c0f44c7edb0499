"""benchmarks/machine.py: the CPU line every benchmark prints names the first
processor's model, its family / model / stepping numbers and its vector ISA."""

from __future__ import annotations

from pathlib import Path

from benchmarks.machine import cpu_model

_BLOCK = """processor\t: {n}
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: {model}
model name\t: AMD EPYC
stepping\t: 1
flags\t\t: fpu sse2 avx {isa}

"""


def test_cpu_line_names_the_first_processor(tmp_path: Path) -> None:
    info = tmp_path / "cpuinfo"
    info.write_text(
        _BLOCK.format(n=0, model=1, isa="avx2") + _BLOCK.format(n=1, model=17, isa="avx512f")
    )
    assert cpu_model(info) == "AMD EPYC (family/model/stepping 25/1/1, AVX2)"
    info.write_text(_BLOCK.format(n=0, model=17, isa="avx2 avx512f"))
    assert cpu_model(info) == "AMD EPYC (family/model/stepping 25/17/1, AVX-512)"


def test_cpu_line_without_cpuinfo(tmp_path: Path) -> None:
    assert cpu_model(tmp_path / "missing")  # what `platform` knows, never an error
