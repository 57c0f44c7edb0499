#!/usr/bin/env bash
# Create (or reuse) the virtual environment .venv with qopt and its test tools.
# torch==2.13.0 is installed first, from the CPU build on this machine's disk;
# any other torch version would be downloaded (gigabytes).
set -euo pipefail
cd "$(dirname "$0")/.."

# Vulkan tests need a Vulkan loader + driver (lavapipe on a machine without a GPU),
# glslang, spirv-tools and the Khronos validation layer; the native runtime (runtime/)
# builds with cmake, a C compiler, the Vulkan headers and json-c (clang for its fuzz
# harness). Install them with apt when running as root and they are missing; otherwise
# say why the Vulkan tests will skip.
vulkan_tools_present() {
  command -v glslangValidator >/dev/null 2>&1 && command -v spirv-val >/dev/null 2>&1 \
    && ldconfig -p 2>/dev/null | grep 'libvulkan.so.1' >/dev/null \
    && ls /usr/share/vulkan/icd.d/*.json >/dev/null 2>&1 \
    && ls /usr/share/vulkan/explicit_layer.d/*validation*.json >/dev/null 2>&1 \
    && command -v cmake >/dev/null 2>&1 && command -v cc >/dev/null 2>&1 \
    && command -v pkg-config >/dev/null 2>&1 \
    && [ -f /usr/include/vulkan/vulkan.h ] && [ -f /usr/include/json-c/json.h ]
}
if ! vulkan_tools_present; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing Vulkan packages (lavapipe, loader, glslang, spirv-tools, validation layers)"
    if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        mesa-vulkan-drivers libvulkan1 glslang-tools spirv-tools vulkan-validationlayers \
        libvulkan-dev libjson-c-dev cmake pkg-config gcc clang; }; then
      echo "warning: apt-get could not install the Vulkan packages: Vulkan tests will be skipped"
    fi
  else
    echo "note: Vulkan packages missing and not root (or no apt-get): install mesa-vulkan-drivers" \
      "libvulkan1 glslang-tools spirv-tools vulkan-validationlayers libvulkan-dev libjson-c-dev" \
      "cmake pkg-config gcc clang, or the Vulkan tests will be skipped"
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

# The native runtime (runtime/: libqvk and qvk-run), built once the venv exists (its
# kernel catalogue is generated with the venv's python from qopt/kernels), rebuilt when
# its sources or the kernels change; qvk-run is copied into .venv/bin and libqvk.so into
# .venv/lib (the header: runtime/include/qvk.h).
build_runtime() {
  local stamp=build/runtime/.qopt-runtime want
  want="$(find runtime qopt/kernels qopt/backends/vulkan/spirv.py qopt/limits.py qopt/version.py \
    pyproject.toml -type f ! -path '*/__pycache__/*' -print0 | sort -z | xargs -0 sha256sum \
    | sha256sum | cut -d' ' -f1)"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x .venv/bin/qvk-run ]; then
    return 0
  fi
  if ! command -v cmake >/dev/null 2>&1 || ! command -v glslangValidator >/dev/null 2>&1; then
    echo "note: cmake or glslang missing: the native runtime (qvk-run) is not built"
    return 0
  fi
  local jobs
  jobs="$(nproc 2>/dev/null || echo 2)"
  if ! { cmake -S runtime -B build/runtime -DCMAKE_BUILD_TYPE=Release \
      -DQOPT_PYTHON="$PWD/.venv/bin/python" >/dev/null && cmake --build build/runtime -j "$jobs" >/dev/null; }; then
    echo "warning: the native runtime did not build (see the errors above): its tests will be skipped"
    return 0
  fi
  if command -v clang >/dev/null 2>&1; then  # the ASan+UBSan build and the loader's fuzz harness
    CC=clang cmake -S runtime -B build/runtime-asan -DCMAKE_BUILD_TYPE=Debug -DQVK_SANITIZE=ON \
      -DQVK_FUZZ=ON -DQVK_CATALOGUE="$PWD/build/runtime/qvk_catalogue.c" >/dev/null \
      && cmake --build build/runtime-asan -j "$jobs" >/dev/null \
      || echo "warning: the sanitizer build of the native runtime failed: its tests will be skipped"
  fi
  mkdir -p .venv/lib
  install -m 755 build/runtime/qvk-run .venv/bin/qvk-run  # a new file: running copies keep theirs
  install -m 755 build/runtime/libqvk.so .venv/lib/libqvk.so
  echo "$want" > "$stamp"
  echo "native runtime ready: .venv/bin/qvk-run, .venv/lib/libqvk.so"
}

stamp=.venv/.qopt-setup
want="$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -d' ' -f1)"
if [ -x .venv/bin/python ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  build_kernels
  build_runtime
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
build_runtime
