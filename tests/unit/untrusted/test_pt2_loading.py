"""`.pt2` loading: legitimate archives load, crafted ones never run code."""

from __future__ import annotations

import io
import json
import logging
import operator
import os
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

import qopt
from qopt import examples
from qopt.errors import QoptError
from qopt.frontend.pt2 import load_pt2


class _Touch:
    """Unpickling this runs `touch <marker>` (needs full pickle)."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch '{self.marker}'",))


class _Trojan:
    """Unpickles to `value`, touching `marker` on the way."""

    def __init__(self, marker: Path, value: object):
        self.marker = marker
        self.value = value

    def __reduce__(self):
        return (operator.getitem, ((_Touch(self.marker), self.value), 1))


def _entries(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as z:
        return {n: z.read(n) for n in z.namelist()}


def _entry(entries: dict[str, bytes], suffix: str) -> str:
    (name,) = [n for n in entries if n.endswith("/" + suffix)]
    return name


def _write(path: Path, entries: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        for name, data in entries.items():
            z.writestr(name, data)
    return path


def _saved(tmp_path: Path, ep: torch.export.ExportedProgram, name: str) -> Path:
    path = tmp_path / f"{name}.pt2"
    torch.export.save(ep, path)
    return path


def _trojan_bytes(marker: Path, value: object) -> bytes:
    buf = io.BytesIO()
    torch.save(_Trojan(marker, value), buf)
    return buf.getvalue()


def _one_line(e: pytest.ExceptionInfo[QoptError]) -> str:
    msg = str(e.value)
    assert "\n" not in msg.strip(), msg
    return msg


@pytest.mark.parametrize("scheme", examples.SCHEMES)
def test_mlp_pt2_roundtrip(tmp_path: Path, scheme: str):
    ep = examples.export_model("mlp", scheme)
    path = _saved(tmp_path, ep, scheme)
    inputs = [t.numpy() for t in examples.random_inputs("mlp")]
    want = qopt.interpret(qopt.import_program(ep), *inputs)
    got = qopt.interpret(qopt.import_program(path), *inputs)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype
        assert g.shape == w.shape
        assert g.tobytes() == w.tobytes()


def _check_refused_then_trusted(path: Path, marker: Path, what: str) -> None:
    with pytest.raises(QoptError) as e:
        qopt.import_program(path)
    msg = _one_line(e)
    assert "trust" in msg, msg
    assert what in msg, msg
    assert not marker.exists()
    qopt.import_program(path, trust_pickle=True)
    assert marker.exists()  # the payload is real


def test_malicious_pickled_weight(tmp_path: Path):
    path = _saved(tmp_path, examples.export_model("mlp", "w4g32"), "legit")
    entries = _entries(path)
    config = json.loads(entries[_entry(entries, "data/weights/model_weights_config.json")])
    meta = next(v for v in config["config"].values() if v["use_pickle"])
    name = _entry(entries, "data/weights/" + meta["path_name"])
    value = torch.load(io.BytesIO(entries[name]), weights_only=True)
    marker = tmp_path / "pwned_weight"
    entries[name] = _trojan_bytes(marker, value)
    what = "data/weights/" + meta["path_name"]
    _check_refused_then_trusted(_write(tmp_path / "evil.pt2", entries), marker, what)


class _WithConstant(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c = torch.arange(4.0)  # plain attribute: a lifted tensor constant

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x + self.c)


def test_malicious_pickled_constant(tmp_path: Path):
    ep = torch.export.export(_WithConstant(), (torch.randn(2, 4),))
    entries = _entries(_saved(tmp_path, ep, "legit"))
    config_name = _entry(entries, "data/constants/model_constants_config.json")
    config = json.loads(entries[config_name])
    (meta,) = config["config"].values()
    meta["use_pickle"] = True  # how torch.export.save stores tensor-subclass constants
    entries[config_name] = json.dumps(config).encode()
    name = _entry(entries, "data/constants/" + meta["path_name"])
    marker = tmp_path / "pwned_constant"
    entries[name] = _trojan_bytes(marker, torch.arange(4.0))
    what = "data/constants/" + meta["path_name"]
    _check_refused_then_trusted(_write(tmp_path / "evil.pt2", entries), marker, what)


def test_custom_object_constant_refused(tmp_path: Path):
    ep = torch.export.export(_WithConstant(), (torch.randn(2, 4),))
    entries = _entries(_saved(tmp_path, ep, "legit"))
    config_name = _entry(entries, "data/constants/model_constants_config.json")
    config = json.loads(entries[config_name])
    (meta,) = config["config"].values()
    old = _entry(entries, "data/constants/" + meta["path_name"])
    meta["path_name"] = "custom_obj_0"  # how torch.export.save stores a ScriptObject
    meta["use_pickle"] = True
    entries[config_name] = json.dumps(config).encode()
    entries[old.replace(old.rsplit("/", 1)[1], "custom_obj_0")] = b"not even a pickle"
    with pytest.raises(QoptError) as e:
        qopt.import_program(_write(tmp_path / "obj.pt2", entries))
    assert "custom_obj_0" in _one_line(e)
    assert "trust" in str(e.value)


def test_malicious_sample_inputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    ep = examples.export_model("mlp", "float")
    entries = _entries(_saved(tmp_path, ep, "legit"))
    name = _entry(entries, "data/sample_inputs/model.pt")
    value = torch.load(io.BytesIO(entries[name]), weights_only=True)
    marker = tmp_path / "pwned_inputs"
    entries[name] = _trojan_bytes(marker, value)
    path = _write(tmp_path / "evil.pt2", entries)
    # qopt does not need sample inputs: the refused entry is dropped with a warning.
    with pytest.warns(UserWarning, match="sample inputs dropped"):
        module = qopt.import_program(path)
    assert not marker.exists()
    inputs = [t.numpy() for t in examples.random_inputs("mlp")]
    want = qopt.interpret(qopt.import_program(ep), *inputs)
    got = qopt.interpret(module, *inputs)
    assert all(np.asarray(g).tobytes() == np.asarray(w).tobytes() for g, w in zip(got, want))
    # torch falls back to full pickle, then logs with a broken format string that
    # pytest's log capture turns into an error: silence that logger.
    monkeypatch.setattr(logging.getLogger("torch._export.serde.serialize"), "disabled", True)
    qopt.import_program(path, trust_pickle=True)
    assert marker.exists()


class _Dynamic(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.reshape(-1) * 2


def test_malicious_shape_expression(tmp_path: Path):
    ep = torch.export.export(
        _Dynamic(), (torch.randn(4, 3),), dynamic_shapes={"x": {0: torch.export.Dim("b")}}
    )
    entries = _entries(_saved(tmp_path, ep, "legit"))
    name = _entry(entries, "models/model.json")
    marker = tmp_path / "pwned_expr"
    code = f"import os; os.system(\"touch '{marker}'\")"
    evil = "exec(" + "+".join(f"chr({ord(c)})" for c in code) + ")"
    text = entries[name].decode()
    assert '"expr_str": "' in text
    head, tail = text.split('"expr_str": "', 1)
    entries[name] = (head + '"expr_str": "' + evil + '"' + tail.split('"', 1)[1]).encode()
    path = _write(tmp_path / "evil.pt2", entries)
    with pytest.raises(QoptError) as e:
        load_pt2(str(path))
    assert "exec" in _one_line(e)
    assert "never evaluates" in str(e.value)
    assert not marker.exists()


def test_bad_files(tmp_path: Path):
    legit = _saved(tmp_path, examples.export_model("mlp", "w4g32"), "legit")
    data = legit.read_bytes()
    (tmp_path / "truncated.pt2").write_bytes(data[: len(data) // 2])
    (tmp_path / "random.pt2").write_bytes(np.random.default_rng(0).bytes(4096))
    (tmp_path / "empty.pt2").write_bytes(b"")
    (tmp_path / "adir.pt2").mkdir()
    plain_zip = _write(tmp_path / "plain.pt2", {"hello.txt": b"hi"})
    entries = _entries(legit)
    entries[_entry(entries, "models/model.json")] = b"{not json"
    bad_json = _write(tmp_path / "badjson.pt2", entries)
    entries = _entries(legit)
    entries[_entry(entries, "models/model.json")] = b'{"graph_module": 3}'
    bad_schema = _write(tmp_path / "badschema.pt2", entries)
    for path in [
        tmp_path / "truncated.pt2",
        tmp_path / "random.pt2",
        tmp_path / "empty.pt2",
        tmp_path / "adir.pt2",
        tmp_path / "missing.pt2",
        plain_zip,
        bad_json,
        bad_schema,
    ]:
        for trust in (False, True):
            with pytest.raises(QoptError) as e:
                qopt.import_program(path, trust_pickle=trust)
            assert str(path) in _one_line(e)


def test_pickled_weights_read_from_the_archive_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Pickled weights (torchao subclasses) of a stored archive are read by torch.load
    straight from the file (no copy of each record's bytes first); a deflated archive's
    are read as bytes; both give the same weights."""
    from qopt.frontend import pt2

    path = _saved(tmp_path, examples.export_model("mlp", "w4g32"), "stored")
    deflated = tmp_path / "deflated.pt2"
    with zipfile.ZipFile(deflated, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in _entries(path).items():
            z.writestr(name, data)
    sources: list[type] = []
    restricted_load = pt2._restricted_load

    def spy(data: object, what: str, limits: object) -> object:
        if "data/weights/" in what:
            sources.append(type(data))
        return restricted_load(data, what, limits)  # pyright: ignore[reportArgumentType]

    monkeypatch.setattr(pt2, "_restricted_load", spy)
    stored_ep = load_pt2(str(path))
    assert sources
    assert set(sources) == {pt2._MemberFile}
    sources.clear()
    deflated_ep = load_pt2(str(deflated))
    assert sources
    assert set(sources) == {bytes}
    for name, value in stored_ep.state_dict.items():
        other = deflated_ep.state_dict[name]
        assert type(other) is type(value)
        for part in value.__tensor_flatten__()[0] if hasattr(value, "__tensor_flatten__") else []:
            assert torch.equal(getattr(value, part), getattr(other, part))
        if not hasattr(value, "__tensor_flatten__"):
            assert torch.equal(value, other)
