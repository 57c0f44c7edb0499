#!/usr/bin/env bash
# Build llama.cpp's Vulkan backend for benchmarks/llamacpp_anchor.py (optional).
#
#     scripts/build_llamacpp.sh [--fetch-vulkan-headers] [BUILD_DIR]
#                                       (BUILD_DIR default: build/llamacpp, gitignored)
#
# The source is the llama.cpp that PyPI's llama-cpp-python sdist vendors
# (LLAMA_CPP_PYTHON_VERSION, default pinned below; downloaded once with
# `pip download --no-binary`, nothing installed). Builds llama-bench and libllama
# with -DGGML_VULKAN=ON, Release, then benchmarks/llamacpp_logits.c against it.
# Cached: a second run with the same version only prints what is there. Installs
# nothing: when a tool is missing it says which (and the Debian package) and exits 3.
# Vulkan headers: ggml-vulkan needs VK_EXT_layer_settings (headers 1.3.2xx from late
# 2023 on; Debian bookworm's libvulkan-dev 1.3.239 lacks it). VULKAN_INCLUDE_DIR names a
# newer include folder; --fetch-vulkan-headers downloads Debian trixie's libvulkan-dev
# .deb with apt-get (its own apt state under BUILD_DIR/apt, the system's apt untouched)
# and unpacks its headers under BUILD_DIR (nothing installed; the loader stays the
# system's, whose version does not matter to the headers).
# JOBS (default 2) sets the build's parallelism. Last line on success:
#     llama.cpp <commit> (llama-cpp-python <version>) built in <BUILD_DIR>/build-vk
set -euo pipefail

VERSION="${LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
TRIXIE_VULKAN="1.4.309.0-1"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
fetch_headers=0
if [ "${1:-}" = "--fetch-vulkan-headers" ]; then fetch_headers=1; shift; fi
DIR="${1:-$ROOT/build/llamacpp}"
mkdir -p "$DIR"
DIR="$(cd "$DIR" && pwd)"
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
fetched="$DIR/vulkan-headers-${TRIXIE_VULKAN%.*}/usr/include"
if [ -z "${VULKAN_INCLUDE_DIR:-}" ] && [ -f "$fetched/vulkan/vulkan.hpp" ]; then
    VULKAN_INCLUDE_DIR="$fetched"  # fetched by an earlier run
fi
if [ -z "${VULKAN_INCLUDE_DIR:-}" ] && [ "$fetch_headers" = 1 ]; then
    command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null ||
        { echo "--fetch-vulkan-headers needs apt-get and dpkg-deb (Debian)" >&2; exit 3; }
    echo "downloading Debian trixie's libvulkan-dev $TRIXIE_VULKAN for its headers" >&2
    apt_dir="$DIR/apt"
    mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
    echo "deb http://deb.debian.org/debian trixie main" >"$apt_dir/sources.list"
    touch "$apt_dir/preferences"
    apt_opts=(-o "Dir::Etc::sourcelist=$apt_dir/sources.list"
        -o "Dir::Etc::sourceparts=$apt_dir/none" -o "Dir::State::Lists=$apt_dir/lists"
        -o "Dir::Cache=$apt_dir/cache" -o "Dir::Etc::preferences=$apt_dir/preferences"
        -o "Dir::Etc::preferencesparts=$apt_dir/none")
    apt-get "${apt_opts[@]}" update -qq >&2
    (cd "$apt_dir" && apt-get "${apt_opts[@]}" download "libvulkan-dev=$TRIXIE_VULKAN" 2>/dev/null) >&2
    dpkg-deb -x "$apt_dir/libvulkan-dev_${TRIXIE_VULKAN}_$(dpkg --print-architecture).deb" \
        "${fetched%/usr/include}"
    VULKAN_INCLUDE_DIR="$fetched"
fi
include="${VULKAN_INCLUDE_DIR:-${VULKAN_SDK:+$VULKAN_SDK/include}}"
include="${include:-/usr/include}"
if [ ! -f "$include/vulkan/vulkan.hpp" ]; then
    missing+=("the Vulkan headers (Debian: libvulkan-dev)")
elif ! grep -q VK_EXT_layer_settings "$include/vulkan/vulkan_core.h"; then
    have="$(sed -n 's/^#define VK_HEADER_VERSION \([0-9]*\)$/\1/p' "$include/vulkan/vulkan_core.h")"
    missing+=("Vulkan headers with VK_EXT_layer_settings: $include has VK_HEADER_VERSION $have,
    too old for ggml-vulkan (VULKAN_INCLUDE_DIR=newer/include, or --fetch-vulkan-headers to
    unpack Debian trixie's libvulkan-dev $TRIXIE_VULKAN headers under $DIR)")
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
        -DLLAMA_BUILD_SERVER=OFF ${VULKAN_INCLUDE_DIR:+-DVulkan_INCLUDE_DIR="$VULKAN_INCLUDE_DIR"} \
        >"$DIR/configure.log" 2>&1 ||
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
