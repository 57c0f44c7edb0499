# CMake toolchain: cross-compile the runtime for aarch64 Linux with Debian's cross compiler
# (gcc-aarch64-linux-gnu) against multiarch arm64 packages (libvulkan-dev:arm64,
# libjson-c-dev:arm64). Used by scripts/cross_build_aarch64.sh.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
