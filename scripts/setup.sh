#!/usr/bin/env bash
# Create (or reuse) the virtual environment .venv with qopt and its test tools.
# torch==2.13.0 is installed first, from the CPU build on this machine's disk;
# any other torch version would be downloaded (gigabytes).
set -euo pipefail
cd "$(dirname "$0")/.."

# Vulkan tests need a Vulkan loader + driver (lavapipe on a machine without a GPU),
# glslang, spirv-tools and the Khronos validation layer. Install them with apt when
# running as root and they are missing; otherwise say why the Vulkan tests will skip.
vulkan_tools_present() {
  command -v glslangValidator >/dev/null 2>&1 && command -v spirv-val >/dev/null 2>&1 \
    && ldconfig -p 2>/dev/null | grep 'libvulkan.so.1' >/dev/null \
    && ls /usr/share/vulkan/icd.d/*.json >/dev/null 2>&1 \
    && ls /usr/share/vulkan/explicit_layer.d/*validation*.json >/dev/null 2>&1
}
if ! vulkan_tools_present; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing Vulkan packages (lavapipe, loader, glslang, spirv-tools, validation layers)"
    if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        mesa-vulkan-drivers libvulkan1 glslang-tools spirv-tools vulkan-validationlayers; }; then
      echo "warning: apt-get could not install the Vulkan packages: Vulkan tests will be skipped"
    fi
  else
    echo "note: Vulkan packages missing and not root (or no apt-get): install mesa-vulkan-drivers" \
      "libvulkan1 glslang-tools spirv-tools vulkan-validationlayers, or the Vulkan tests will be skipped"
  fi
fi

# The kernel catalogue's SPIR-V, compiled once here (qopt/kernels/spirv/, package data):
# compiling a model and loading a .qvk then run no shader tool. Incremental: only kernels
# edited since the last build are compiled, so it runs on every set-up.
build_kernels() {
  if command -v glslangValidator >/dev/null 2>&1 && command -v spirv-val >/dev/null 2>&1; then
    .venv/bin/python -m qopt.kernels.build --quiet
  else
    echo "note: glslang/spirv-tools missing: qopt's kernels are not prebuilt (Vulkan compiles need them)"
  fi
}

stamp=.venv/.qopt-setup
want="$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -d' ' -f1)"
if [ -x .venv/bin/python ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  build_kernels
  exit 0
fi

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet "torch==2.13.0"
.venv/bin/python -m pip install --quiet -e ".[test]"
build_kernels
.venv/bin/python -c "import qopt, torch, torchao, xdsl; print('qopt ready: torch', torch.__version__, '| xdsl', xdsl.__version__ if hasattr(xdsl, '__version__') else '')"
echo "$want" > "$stamp"
