#!/usr/bin/env bash
# The suite under AddressSanitizer + UndefinedBehaviorSanitizer: configures
# (once) a second build of FlashMLIR with clang-22 and FA_SANITIZE=ON in
# build-sanitize/ (FA_SANITIZE_DIR), all of our code instrumented (LLVM and
# MLIR are Debian's libraries; FA_SANITIZE_DIR may be outside the source
# tree, as scripts/test.sh puts it), builds it and runs its ctest: the runtime,
# JIT, C API, reference, layout and execution unit tests, the lit tests
# through the instrumented fa-opt / fa-compile, and a bounded run of each
# libFuzzer target (test/fuzz). Assertions are on (LLVM_ENABLE_ASSERTIONS:
# our asserts, MLIR's inline ones, libstdc++'s bounds checks).
#
#   scripts/sanitize.sh [--build-only] [ninja targets...]
#
# Exits non-zero on a build failure or any failing test (a sanitizer report
# fails the test that made it). Needs clang-22 and libclang-rt-22-dev
# (scripts/setup.sh). Jobs: FA_SANITIZE_JOBS (default: the cores).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${FA_SANITIZE_DIR:-build-sanitize}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
jobs=${FA_SANITIZE_JOBS:-$(nproc)}
build_only=0
if [ "${1:-}" = --build-only ]; then
  build_only=1
  shift
fi
clang=/usr/lib/llvm-22/bin
if [ ! -x "$clang/clang++" ]; then
  echo "sanitize: $clang/clang++ missing (scripts/setup.sh installs clang-22)" >&2
  exit 1
fi
if [ ! -f "$dir/build.ninja" ]; then
  # -O1: ASan's recommended level, and half the compile time of -O3.
  cmake -G Ninja -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER="$clang/clang" -DCMAKE_CXX_COMPILER="$clang/clang++" \
    -DCMAKE_C_FLAGS_RELEASE=-O1 -DCMAKE_CXX_FLAGS_RELEASE=-O1 \
    -DLLVM_ENABLE_ASSERTIONS=ON -DFA_SANITIZE=ON
fi
# Compiler.cpp includes the generated CompilerFingerprint.inc, but its
# object library does not depend on the target that writes it (only the
# archive does): generate it first, or a partial build can fail.
ninja -C "$dir" FACompilerFingerprint >/dev/null
ninja -C "$dir" -j "$jobs" "$@"
[ "$build_only" = 1 ] && exit 0
# Reports abort (a crash, whatever the test expected of the exit status)
# with a symbolized stack; leaks are reported at exit. allow_user_poisoning=0:
# LLVM's BumpPtrAllocator poisons its slabs in instrumented code and
# unpoisons what it hands out; with MLIR's uninstrumented copies of the same
# inline functions in the link, that makes false reports (ASan's own checks
# stay).
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:allow_user_poisoning=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:abort_on_error=1}
export ASAN_SYMBOLIZER_PATH=${ASAN_SYMBOLIZER_PATH:-$clang/llvm-symbolizer}
# From elsewhere, so that nothing resolves against the working directory.
cd /
ctest --test-dir "$dir" --output-on-failure -j "$jobs"
