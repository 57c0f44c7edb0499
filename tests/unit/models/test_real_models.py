"""Convnets and a vision transformer as people write them (BatchNorm in eval mode,
max pooling, residuals, depthwise convolutions, ReLU6/hardswish, LayerNorm,
nn.MultiheadAttention, GELU), quantized under the schemes that apply, exported,
compiled for Vulkan (run on the device) and CoreML (saved, read back,
interpreted) and compared with torch eager on fresh inputs."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pytest
import torch
from torch import nn

import qopt
from qopt.examples import apply_scheme


class ResNetish(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, 16, 3, 2, 1, bias=False),
            nn.BatchNorm2d(16),
            nn.ReLU(),
            nn.MaxPool2d(3, 2, 1),
        )
        self.c1, self.b1 = nn.Conv2d(16, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16)
        self.c2, self.b2 = nn.Conv2d(16, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16)
        self.fc = nn.Linear(16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x)
        y = self.b2(self.c2(torch.relu(self.b1(self.c1(x)))))
        x = torch.relu(x + y)
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


class MobileNetV2ish(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.pw, self.bn1 = nn.Conv2d(8, 32, 1), nn.BatchNorm2d(32)
        self.dw, self.bn2 = nn.Conv2d(32, 32, 3, 1, 1, groups=32), nn.BatchNorm2d(32)
        self.pj, self.bn3 = nn.Conv2d(32, 8, 1), nn.BatchNorm2d(8)
        self.fc = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = nn.functional.relu6(self.bn1(self.pw(x)))
        y = nn.functional.hardswish(self.bn2(self.dw(y)))
        y = self.bn3(self.pj(y))
        return self.fc((x + y).mean(dim=(2, 3)))


class ViTish(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.patch = nn.Conv2d(3, 32, 4, 4)
        self.ln1, self.ln2 = nn.LayerNorm(32), nn.LayerNorm(32)
        self.att = nn.MultiheadAttention(32, 4, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 32))
        self.head = nn.Linear(32, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = self.patch(x).flatten(2).transpose(1, 2)
        h = self.ln1(t)
        t = t + self.att(h, h, h, need_weights=False)[0]
        t = t + self.mlp(self.ln2(t))
        return self.head(t.mean(1))


MODELS: dict[str, tuple[type[nn.Module], tuple[int, ...]]] = {
    "resnet": (ResNetish, (1, 3, 32, 32)),
    "mobilenetv2": (MobileNetV2ish, (1, 8, 16, 16)),
    "vit": (ViTish, (1, 3, 16, 16)),
}
# torchao's IntxUnpackedToInt8Tensor has no kernel for nn.MultiheadAttention's
# packed in-projection, so weight-only schemes skip the ViT (torchao, before qopt).
CASES = [
    (m, s) for m in MODELS for s in ("float", "pt2e_static", "w8c") if (m, s) != ("vit", "w8c")
]


@functools.cache
def exported(name: str, scheme: str) -> Any:
    cls, shape = MODELS[name]
    gen = torch.Generator().manual_seed(0)
    torch.manual_seed(0)
    model = cls().eval()
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):  # non-trivial statistics
                m.running_mean.uniform_(-0.5, 0.5, generator=gen)
                m.running_var.uniform_(0.5, 2.0, generator=gen)
    example = (torch.randn(*shape, generator=gen),)
    calibration = [(torch.randn(*shape, generator=gen),) for _ in range(2)]
    quantized = apply_scheme(model, scheme, example, calibration)
    with torch.no_grad():
        return torch.export.export(quantized, example), shape


def _rel(got: np.ndarray, want: np.ndarray) -> float:
    want = np.asarray(want, np.float64)
    return float(np.linalg.norm(np.asarray(got, np.float64) - want) / np.linalg.norm(want))


def _fresh(shape: tuple[int, ...]) -> tuple[torch.Tensor]:
    return (torch.randn(*shape, generator=torch.Generator().manual_seed(7)),)


@pytest.mark.parametrize(("name", "scheme"), CASES)
def test_real_model_on_vulkan(name: str, scheme: str) -> None:
    from qopt.backends.vulkan.runtime import vulkan_available

    if (reason := vulkan_available()) is not None:
        print(f"Vulkan test skipped: {reason}")
        pytest.skip(reason)
    ep, shape = exported(name, scheme)
    inputs = _fresh(shape)
    want = ep.module()(*inputs).detach().numpy()
    with qopt.compile(ep, target="vulkan") as artifact:
        (got,) = artifact(*inputs)
    assert _rel(got, want) < (1e-2 if scheme == "pt2e_static" else 1e-5), _rel(got, want)


# Measured relative L2 errors vs torch eager (fp32, iOS18, the `_fresh` input):
# resnet float 8.0e-8, w8c 1.3e-7; mobilenetv2 float 9.2e-8, w8c 1.1e-7; vit float
# 1.9e-7; pt2e_static 0 for all three. The static schemes differed by one-step
# flips (vit: 5.8e-3 on the input of seed 0) while MIL's quantize divided by the
# scale; the package now multiplies by torch's f32(1 / scale) and quantizes with
# scale 1. 1e-2 still leaves room for a flip from a float sum added in another order.
@pytest.mark.parametrize(("name", "scheme"), CASES)
def test_real_model_on_coreml(name: str, scheme: str, tmp_path: Any) -> None:
    ep, shape = exported(name, scheme)
    inputs = _fresh(shape)
    want = ep.module()(*inputs).detach().numpy()
    artifact = qopt.compile(ep, target="coreml", compute_precision="fp32")
    path = tmp_path / "m.mlpackage"
    artifact.save(path)
    back = qopt.read_mlpackage(path)
    (got,) = qopt.interpret(back, *inputs)
    err = _rel(got, want)
    print(f"{name} {scheme}: relative L2 error {err:.2e}")
    assert err < (1e-2 if scheme == "pt2e_static" else 1e-4), err
