#!/usr/bin/env bash
# Build llama.cpp's Vulkan backend for benchmarks/llamacpp_anchor.py (optional).
#
#     scripts/build_llamacpp.sh [BUILD_DIR]        (default: build/llamacpp, gitignored)
#
# The source is the llama.cpp that PyPI's llama-cpp-python sdist vendors
# (LLAMA_CPP_PYTHON_VERSION, default pinned below; downloaded once with
# `pip download --no-binary`, nothing installed). Builds llama-bench and libllama
# with -DGGML_VULKAN=ON, Release, then benchmarks/llamacpp_logits.c against it.
# Cached: a second run with the same version only prints what is there. Installs
# nothing: when a tool is missing it says which (and the Debian package) and exits 3.
# JOBS (default 2) sets the build's parallelism. Last line on success:
#     llama.cpp <commit> (llama-cpp-python <version>) built in <BUILD_DIR>/build-vk
set -euo pipefail

VERSION="${LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="${1:-$ROOT/build/llamacpp}"
JOBS="${JOBS:-2}"
PYTHON="${PYTHON:-python3}"
SRC="$DIR/llama_cpp_python-$VERSION/vendor/llama.cpp"
BUILD="$DIR/build-vk"
BIN="$BUILD/bin"

missing=()
command -v cmake >/dev/null || missing+=("cmake (Debian: cmake)")
command -v c++ >/dev/null || missing+=("a C++ compiler (Debian: g++)")
command -v cc >/dev/null || missing+=("a C compiler (Debian: gcc)")
command -v glslc >/dev/null || missing+=("glslc, the GLSL to SPIR-V compiler ggml-vulkan needs (Debian: glslc)")
[ -f /usr/include/vulkan/vulkan.hpp ] || [ -n "${VULKAN_SDK:-}" ] ||
    missing+=("the Vulkan headers (Debian: libvulkan-dev)")
if ! ls /usr/share/cmake/SPIRV-Headers/SPIRV-HeadersConfig.cmake \
    /usr/lib/*/cmake/SPIRV-Headers/SPIRV-HeadersConfig.cmake >/dev/null 2>&1 &&
    [ -z "${VULKAN_SDK:-}" ]; then
    missing+=("SPIRV-Headers' CMake package (Debian: spirv-headers)")
fi
if [ "${#missing[@]}" -gt 0 ]; then
    echo "cannot build llama.cpp's Vulkan backend: missing" >&2
    printf '  - %s\n' "${missing[@]}" >&2
    exit 3
fi

if [ -x "$BIN/llama-bench" ] && [ -x "$BIN/llamacpp_logits" ] &&
    [ "$ROOT/benchmarks/llamacpp_logits.c" -ot "$BIN/llamacpp_logits" ] &&
    grep -q "llama_cpp_python-$VERSION/" "$BUILD/CMakeCache.txt" 2>/dev/null; then
    :  # cached
else
    mkdir -p "$DIR/sdist"
    sdist="$DIR/sdist/llama_cpp_python-$VERSION.tar.gz"
    if [ ! -f "$sdist" ]; then
        echo "downloading the llama-cpp-python $VERSION sdist" >&2
        "$PYTHON" -m pip download --quiet --no-deps --no-binary :all: \
            "llama-cpp-python==$VERSION" -d "$DIR/sdist"
    fi
    [ -d "$SRC" ] || tar -xzf "$sdist" -C "$DIR"
    if [ -f "$BUILD/CMakeCache.txt" ] && ! grep -q "llama_cpp_python-$VERSION/" "$BUILD/CMakeCache.txt"; then
        rm -rf "$BUILD"  # configured for another version
    fi
    cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DGGML_VULKAN=ON \
        -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
        -DLLAMA_BUILD_SERVER=OFF >"$DIR/configure.log" 2>&1 ||
        { tail -20 "$DIR/configure.log" >&2; echo "cmake configure failed: $DIR/configure.log" >&2; exit 1; }
    nice cmake --build "$BUILD" --config Release -j "$JOBS" --target llama-bench llama \
        >"$DIR/build.log" 2>&1 ||
        { tail -20 "$DIR/build.log" >&2; echo "build failed: $DIR/build.log" >&2; exit 1; }
    cc -O2 -std=c11 -I "$SRC/include" -I "$SRC/ggml/include" \
        "$ROOT/benchmarks/llamacpp_logits.c" -o "$BIN/llamacpp_logits" \
        -L "$BIN" -lllama -Wl,-rpath,"$BIN"
fi

commit="$(git -C "$SRC" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)"
echo "llama.cpp $commit (llama-cpp-python $VERSION) built in $BUILD"
