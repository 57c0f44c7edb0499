#!/usr/bin/env bash
# Cross-build the native runtime (runtime/) for aarch64 Linux: Debian's cross compiler
# and multiarch arm64 packages; the kernel catalogue is generated on this machine (with
# the venv's python) and passed in, as an Android build does (docs/native-runtime.md).
#   scripts/cross_build_aarch64.sh            -> build/runtime-aarch64/{libqvk.so,qvk-run}
#   scripts/cross_build_aarch64.sh --qemu MODEL.qvk [qvk-run options...]
#       then runs that qvk-run under qemu-user with arm64 lavapipe (Mesa's CPU driver
#       built for arm64: LLVM emits arm64 code that qemu emulates; slow, see
#       docs/native-runtime.md), e.g. --input x.npy --output-dir out
# As root it installs what is missing (by hand only: scripts/setup.sh and the tests never
# fetch arm64 packages):
#   dpkg --add-architecture arm64; apt-get install gcc-aarch64-linux-gnu libvulkan-dev:arm64 libjson-c-dev:arm64
#   and for --qemu: qemu-user mesa-vulkan-drivers:arm64 libvulkan1:arm64 libjson-c5:arm64
set -euo pipefail
cd "$(dirname "$0")/.."
qemu_args=()
if [ "${1:-}" = "--qemu" ]; then
  shift
  [ $# -ge 1 ] || { echo "usage: $0 --qemu MODEL.qvk [qvk-run options...]" >&2; exit 2; }
  qemu_args=("$@")
  icd=/usr/share/vulkan/icd.d/lvp_icd.aarch64.json
  if ! command -v qemu-aarch64 >/dev/null 2>&1 || [ ! -f "$icd" ] \
      || [ ! -f /usr/lib/aarch64-linux-gnu/libjson-c.so.5 ]; then
    if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
      dpkg --add-architecture arm64
      apt-get update -qq
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq qemu-user mesa-vulkan-drivers:arm64 \
        libvulkan1:arm64 libjson-c5:arm64
    else
      echo "install qemu-user mesa-vulkan-drivers:arm64 libvulkan1:arm64 libjson-c5:arm64 first" >&2
      exit 1
    fi
  fi
fi
if ! command -v aarch64-linux-gnu-gcc >/dev/null 2>&1 || [ ! -f /usr/lib/aarch64-linux-gnu/libvulkan.so ] \
    || [ ! -f /usr/lib/aarch64-linux-gnu/pkgconfig/json-c.pc ]; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    dpkg --add-architecture arm64
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc-aarch64-linux-gnu libc6-dev-arm64-cross \
      libvulkan-dev:arm64 libjson-c-dev:arm64
  else
    echo "install gcc-aarch64-linux-gnu libvulkan-dev:arm64 libjson-c-dev:arm64 first" >&2
    exit 1
  fi
fi
py=${PYTHON:-.venv/bin/python}
if [ ! -f build/runtime/qvk_catalogue.c ]; then
  cmake -S runtime -B build/runtime -DQOPT_PYTHON="$PWD/$py" >/dev/null
  cmake --build build/runtime --target qvk_objects >/dev/null
fi
PKG_CONFIG_LIBDIR=/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig \
  cmake -S runtime -B build/runtime-aarch64 -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_TOOLCHAIN_FILE="$PWD/runtime/cmake/aarch64-linux-gnu.cmake" \
    -DQVK_CATALOGUE="$PWD/build/runtime/qvk_catalogue.c" >/dev/null
cmake --build build/runtime-aarch64 -j "$(nproc 2>/dev/null || echo 2)" >/dev/null
file build/runtime-aarch64/qvk-run build/runtime-aarch64/libqvk.so 2>/dev/null \
  || ls -l build/runtime-aarch64/qvk-run build/runtime-aarch64/libqvk.so
if [ ${#qemu_args[@]} -gt 0 ]; then
  # the arm64 binary's own dynamic loader and libraries are the multiarch ones
  # (/lib/ld-linux-aarch64.so.1, /usr/lib/aarch64-linux-gnu): no -L needed
  echo "running under qemu-aarch64 with arm64 lavapipe: qvk-run ${qemu_args[*]}"
  VK_ICD_FILENAMES="$icd" qemu-aarch64 build/runtime-aarch64/qvk-run "${qemu_args[@]}"
fi
