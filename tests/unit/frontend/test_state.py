"""Programs that keep state: in-place ops functionalized at import, mutated buffers
as `ml_program` globals, and interpreter sessions that keep them between calls.

Every check runs torch eager on its own copy of the model (its buffers mutate as
it decodes) and compares tokens exactly and logits within float tolerance.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from torch import nn

import qopt
from qopt.context import print_module
from qopt.dialects import ml_program as mlp
from qopt.examples import apply_scheme, build_kv_llama
from qopt.resources import weights_of

CONFIG = {"vocab_size": 64, "dim": 32, "n_layers": 2, "n_heads": 4, "hidden_dim": 64,
          "max_seq_len": 40}  # fmt: skip


def _export(model: nn.Module, *inputs: torch.Tensor) -> torch.export.ExportedProgram:
    with torch.no_grad():
        return torch.export.export(copy.deepcopy(model), inputs, strict=False)


def _greedy_torch(model: nn.Module, prompt: int, steps: int) -> tuple[list[int], list[np.ndarray]]:
    model = copy.deepcopy(model)
    tokens, logits, token = [], [], prompt
    with torch.no_grad():
        for pos in range(steps):
            out = model(torch.tensor([[token]]), torch.tensor([pos]))
            logits.append(out.numpy())
            token = int(out[0, -1].argmax())
            tokens.append(token)
    return tokens, logits


def _greedy_session(session, prompt: int, steps: int) -> tuple[list[int], list[np.ndarray]]:
    tokens, logits, token = [], [], prompt
    for pos in range(steps):
        (out,) = session.run(np.array([[token]]), np.array([pos]))
        logits.append(out)
        token = int(out[0, -1].argmax())
        tokens.append(token)
    return tokens, logits


@pytest.mark.parametrize("update", ["index_put", "index_copy"])
@pytest.mark.parametrize("scheme", ["float", "w4g32", "8da4w", "codebook4"])
def test_kv_cache_decode_matches_torch(update: str, scheme: str) -> None:
    """32 greedy tokens of an ExecuTorch-style decoder (cache in mutated buffers,
    `repeat_interleave` GQA, `mask[input_pos]`) through an interpreter session,
    imported as exported and after fuse-quant, equal torch eager's."""
    float_model = build_kv_llama(update=update, **CONFIG)
    example = (torch.tensor([[1]]), torch.tensor([0]))
    model = apply_scheme(float_model, scheme, example)
    module = qopt.import_program(_export(model, *example))
    names = [g.sym_name.data for g in mlp.globals_of(module)]
    assert names == [f"layers.{i}.attention.{c}" for i in range(2) for c in ("k_cache", "v_cache")]
    want_tokens, want_logits = _greedy_torch(model, 3, 32)
    for fused in (False, True):
        if fused:
            qopt.fuse(module)
        got_tokens, got_logits = _greedy_session(qopt.session(module), 3, 32)
        assert got_tokens == want_tokens, (fused, got_tokens, want_tokens)
        worst = max(float(np.abs(g - w).max()) for g, w in zip(got_logits, want_logits))
        assert worst < (2e-3 if scheme == "float" else 2e-2), (fused, worst)


def test_sessions_are_independent_and_reset() -> None:
    model = build_kv_llama(**CONFIG)
    module = qopt.import_program(_export(model, torch.tensor([[1]]), torch.tensor([0])))
    a, b = qopt.session(module), qopt.session(module)
    first, _ = _greedy_session(a, 3, 6)
    assert np.any(a.read_state("layers.0.attention.k_cache")[:, :, :6] != 0)
    assert not np.any(b.read_state("layers.0.attention.k_cache"))
    # Interleaved calls: b's cache is its own.
    b_tokens, _ = _greedy_session(b, 3, 6)
    assert b_tokens == first
    a.reset()
    assert not np.any(a.read_state("layers.0.attention.k_cache"))
    again, _ = _greedy_session(a, 3, 6)
    assert again == first
    # qopt.interpret runs one call on the initial state, every time.
    one = qopt.interpret(module, np.array([[3]]), np.array([0]))[0]
    assert np.array_equal(one, qopt.interpret(module, np.array([[3]]), np.array([0]))[0])
    with pytest.raises(
        qopt.QoptError, match=r"no state named 'nope'.*layers\.0\.attention\.k_cache"
    ):
        a.read_state("nope")


class _Counter(nn.Module):
    """`copy_`, `add_` and a write through views (`narrow`, `select`, `view`)."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("count", torch.zeros((), dtype=torch.int64))
        self.register_buffer("history", torch.zeros(4, 3))

    def forward(self, x: torch.Tensor, slot: torch.Tensor) -> torch.Tensor:
        self.count.add_(1)
        row = self.history.narrow(0, 1, 2)  # a view, written through
        row.select(0, 1).copy_(x)
        row.view(-1)[0:2].mul_(2.0)
        flat = self.history.view(12)  # a view taken after the writes sees them
        return flat * self.count + slot


def test_in_place_ops_through_views_match_torch() -> None:
    model = _Counter()
    x, slot = torch.tensor([1.0, 2.0, 3.0]), torch.tensor(0.5)
    module = qopt.import_program(_export(model, x, slot))
    text = print_module(module)
    assert "aten.slice_scatter" in text
    assert "aten.select_scatter" in text
    session, eager = qopt.session(module), copy.deepcopy(model)
    for step in range(3):
        xs = x + step
        want = eager(xs, slot).detach().numpy()
        (got,) = session.run(xs.numpy(), slot.numpy())
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(session.read_state("history"), eager.history.numpy())
        assert int(session.read_state("count")) == int(eager.count)


class _Transposes(nn.Module):
    """`x.T`, `x.mT`, `x.mH`, `x.adjoint()` (found by benchmarks/conformance.py), and a
    write through `mT` into a buffer."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("acc", torch.zeros(2, 4, 3))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        self.acc.mT.add_(x)
        return x.T, x.mT * 2, x.mH, x.adjoint(), self.acc + 0


def test_transposing_views_read_and_write_through() -> None:
    model = _Transposes()
    x = torch.arange(24.0).reshape(2, 3, 4)
    session, eager = qopt.session(qopt.import_program(_export(model, x))), copy.deepcopy(model)
    for _ in range(2):
        for got, want in zip(session.run(x.numpy()), eager(x), strict=True):
            np.testing.assert_array_equal(got, want.numpy())


def test_functional_form_buffer_mutation_outputs() -> None:
    """After `run_decompositions`, torch gives BUFFER_MUTATION outputs: the same state."""
    model = _Counter()
    x, slot = torch.tensor([1.0, 2.0, 3.0]), torch.tensor(0.5)
    ep = _export(model, x, slot).run_decompositions({})
    kinds = [s.kind.name for s in ep.graph_signature.output_specs]
    assert kinds.count("BUFFER_MUTATION") == 2
    session, eager = qopt.session(qopt.import_program(ep)), copy.deepcopy(model)
    for step in range(3):
        want = eager(x + step, slot).detach().numpy()
        np.testing.assert_array_equal(session.run((x + step).numpy(), slot.numpy())[0], want)
    assert int(session.read_state("count")) == 3


def test_in_place_eval_dropout_is_the_identity() -> None:
    """`nn.Dropout(inplace=True)` in eval mode (MobileNetV2's classifier) exports as
    `dropout_`, whose input is `self` where `dropout`'s is `input`."""
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5, inplace=True)).eval()
    x = torch.randn(2, 4)
    (got,) = qopt.interpret(qopt.import_program(_export(model, x)), x)
    np.testing.assert_allclose(got, model(x).detach().numpy(), rtol=1e-6, atol=1e-7)


class _MutatesInput(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x.add_(1)
        return x * 2


def test_mutated_user_input_is_an_error() -> None:
    ep = _export(_MutatesInput(), torch.ones(3))
    with pytest.raises(qopt.QoptError, match=r"mutates its input x"):
        qopt.import_program(ep)


def test_saved_artifacts_load_and_generate(tmp_path) -> None:
    """`qopt.load` of a saved `.mlpackage` and `.qvk`: their sessions generate the
    interpreter's (= torch's, above) tokens; the state names survive the round trip."""
    from qopt.backends.vulkan.runtime import vulkan_available

    model = build_kv_llama(**CONFIG)
    ep = _export(model, torch.tensor([[1]]), torch.tensor([0]))
    want = qopt.generate(qopt.import_program(ep), [5, 9, 2], 8)
    names = [f"layers.{i}.attention.{c}" for i in range(2) for c in ("k_cache", "v_cache")]
    targets = {"coreml": "kv.mlpackage", "vulkan": "kv.qvk"}
    if (reason := vulkan_available()) is not None:
        print(f"Vulkan part skipped: {reason}")
        del targets["vulkan"]
    for target, name in targets.items():
        path = tmp_path / name
        exact = {"compute_precision": "fp32"} if target == "coreml" else {}
        qopt.compile(ep, target=target, **exact).save(path)
        artifact = qopt.load(path)
        assert artifact.state_names == names, target
        assert qopt.generate(artifact, [5, 9, 2], 8) == want, target
    with pytest.raises(qopt.QoptError, match=r"reads a \.qvk bundle or an \.mlpackage"):
        qopt.load(tmp_path / "model.onnx")


def test_transformers_static_cache_decode_matches_torch(tmp_path) -> None:
    """transformers' `TorchExportableModuleWithStaticCache` exported as-is: torch
    lifts the caches as constants it mutates in place (`index_copy_`, `copy_`,
    `add_` on an aliasing `to`); they import as states named after the buffers."""
    transformers = pytest.importorskip("transformers")
    from transformers.integrations.executorch import TorchExportableModuleWithStaticCache

    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
    )  # fmt: skip
    model = transformers.LlamaForCausalLM(config).eval()
    model.generation_config = transformers.GenerationConfig(
        use_cache=True, cache_implementation="static", max_length=40,
        cache_config={"batch_size": 1, "max_cache_len": 40, "device": "cpu"},
    )  # fmt: skip
    wrapper = TorchExportableModuleWithStaticCache(model)
    with torch.no_grad():
        ep = torch.export.export(
            wrapper,
            args=(),
            kwargs={"input_ids": torch.tensor([[1]]), "cache_position": torch.tensor([0])},
            strict=False,
        )
    module = qopt.import_program(ep)
    names = {g.sym_name.data for g in mlp.globals_of(module)}
    assert {"key_cache_0", "value_cache_1", "cumulative_length_0"} <= names
    # Compiled before torch decodes: the program's constants share storage with the
    # wrapper's caches, which eager calls mutate.
    from qopt.backends.vulkan.runtime import vulkan_available

    saved = {"coreml": tmp_path / "hf.mlpackage", "vulkan": tmp_path / "hf.qvk"}
    if (reason := vulkan_available()) is not None:
        print(f"Vulkan part skipped: {reason}")
        del saved["vulkan"]
    for target, path in saved.items():
        exact = {"compute_precision": "fp32"} if target == "coreml" else {}
        qopt.compile(ep, target=target, **exact).save(path)
    session = qopt.session(module)
    token, want_token = 3, 3
    for pos in range(32):
        with torch.no_grad():
            want = wrapper(
                input_ids=torch.tensor([[want_token]]), cache_position=torch.tensor([pos])
            )
        (got,) = session.run(np.array([[token]]), np.array([pos]))
        np.testing.assert_allclose(got, want.numpy(), atol=2e-4, rtol=0)
        token, want_token = int(got[0, -1].argmax()), int(want[0, -1].argmax())
        assert token == want_token, pos
    # T1 on both targets: the package read back and the .qvk on the device. CoreML
    # drops the write-only cumulative_length states (an int state it could not hold).
    expected = qopt.generate(qopt.session(module), [3], 32)
    for target, path in saved.items():
        artifact = qopt.load(path)
        assert qopt.generate(artifact, [3], 32) == expected, target
        assert ("cumulative_length_0" in artifact.state_names) == (target == "vulkan")


@pytest.mark.parametrize("scheme", ["float", "8da4w"])
def test_prefill_then_decode_methods_share_state(scheme: str) -> None:
    """`prefill` (8 tokens) and `decode` (1 token) of one model imported as one module
    (`import_program({...})`): weights stored once, states declared once; a session
    runs prefill, then 24 decode steps, and its tokens equal torch's."""
    float_model = build_kv_llama(update="index_copy", **CONFIG)
    prompt = torch.tensor([[5, 9, 2, 33, 7, 1, 60, 12]])
    model = apply_scheme(float_model, scheme, (prompt, torch.arange(8)))
    prefill = _export(model, prompt, torch.arange(8))
    decode = _export(model, torch.tensor([[1]]), torch.tensor([0]))
    single = qopt.import_program(decode)
    module = qopt.import_program({"prefill": prefill, "decode": decode})
    assert len(mlp.globals_of(module)) == 4
    assert weights_of(module).nbytes() == weights_of(single).nbytes()
    session = qopt.session(qopt.fuse(module))
    assert session.methods == ["prefill", "decode"]

    eager = copy.deepcopy(model)
    with torch.no_grad():
        want = [int(eager(prompt, torch.arange(8))[0, -1].argmax())]
        for pos in range(8, 32):
            want.append(int(eager(torch.tensor([[want[-1]]]), torch.tensor([pos]))[0, -1].argmax()))
    (logits,) = session.run(prompt.numpy(), np.arange(8), method="prefill")
    got = [int(logits[0, -1].argmax())]
    for pos in range(8, 32):
        (logits,) = session.run(np.array([[got[-1]]]), np.array([pos]), method="decode")
        got.append(int(logits[0, -1].argmax()))
    assert got == want
    with pytest.raises(qopt.QoptError, match="several methods"):
        session.run(prompt.numpy(), np.arange(8))


def test_generate_feeds_prompts_and_matches_torch() -> None:
    """`qopt.generate` on a decode-only module (the prompt a token per call) and on a
    prefill + decode module give torch's greedy tokens."""
    model = build_kv_llama(update="index_copy", **CONFIG)
    prompt = [5, 9, 2, 33]
    eager = copy.deepcopy(model)
    with torch.no_grad():
        logits = eager(torch.tensor([prompt]), torch.arange(4))
        want = [int(logits[0, -1].argmax())]
        for pos in range(4, 12):
            step = eager(torch.tensor([[want[-1]]]), torch.tensor([pos]))
            want.append(int(step[0, -1].argmax()))
    decode = _export(model, torch.tensor([[1]]), torch.tensor([0]))
    assert qopt.generate(qopt.import_program(decode), prompt, 9) == want
    prefill = _export(model, torch.tensor([prompt]), torch.arange(4))
    both = qopt.import_program({"prefill": prefill, "decode": decode})
    assert qopt.generate(qopt.session(both), prompt, 9) == want
    with pytest.raises(qopt.QoptError, match="at least one token"):
        qopt.generate(both, [], 3)


def test_qopt_run_generates_from_a_pt2(tmp_path, capsys) -> None:
    from qopt.tools import qopt_run

    model = build_kv_llama(**CONFIG)
    path = tmp_path / "kv.pt2"
    torch.export.save(_export(model, torch.tensor([[1]]), torch.tensor([0])), path)
    want = qopt.generate(
        qopt.import_program(_export(model, torch.tensor([[1]]), torch.tensor([0]))), [5, 9, 2], 6
    )
    qopt_run.main([str(path), "--generate", "6", "--prompt-ids", "5,9,2"])
    assert capsys.readouterr().out.split() == [str(t) for t in want]
    from qopt.backends.vulkan.runtime import vulkan_available

    if vulkan_available() is None:
        qopt_run.main([str(path), "--generate", "6", "--prompt-ids", "5,9,2", "--device", "vulkan"])
        assert capsys.readouterr().out.split() == [str(t) for t in want]
    with pytest.raises(SystemExit):
        qopt_run.main([str(path), "--generate", "6", "--prompt-ids", "5,x"])
    assert (
        "qopt-run: error: --prompt-ids must be comma-separated integers" in capsys.readouterr().err
    )
