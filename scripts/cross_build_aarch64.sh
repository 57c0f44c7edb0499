#!/usr/bin/env bash
# Cross-build the native runtime (runtime/) for aarch64 Linux: Debian's cross compiler
# and multiarch arm64 packages; the kernel catalogue is generated on this machine (with
# the venv's python) and passed in, as an Android build does (docs/native-runtime.md).
#   scripts/cross_build_aarch64.sh            -> build/runtime-aarch64/{libqvk.so,qvk-run}
# As root it installs what is missing:
#   dpkg --add-architecture arm64; apt-get install gcc-aarch64-linux-gnu libvulkan-dev:arm64 libjson-c-dev:arm64
set -euo pipefail
cd "$(dirname "$0")/.."
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
