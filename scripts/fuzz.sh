#!/usr/bin/env bash
# Builds the libFuzzer targets in test/fuzz with clang-22 (ASan + UBSan,
# the runtime's sources compiled in) and runs each on its seed corpus.
#
#   scripts/fuzz.sh [RUNS]        default 1000000 executions per target
#
# The suite runs a short smoke (test/fuzz/CMakeLists.txt); longer runs are
# recorded in docs/robustness.md. Exits non-zero on a crash, a sanitizer
# report or a build failure. Needs libclang-rt-22-dev (scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-1000000}
out=${FA_FUZZ_DIR:-build/fuzz}
cuda=${FA_CUDA_INCLUDE_DIR:-/usr/local/cuda/include}
clang=${FA_FUZZ_CXX:-/usr/lib/llvm-22/bin/clang++}
if [ ! -x "$clang" ] ||
   ! ls /usr/lib/llvm-22/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a \
     >/dev/null 2>&1; then
  echo "fuzz: clang-22 or its libFuzzer runtime (libclang-rt-22-dev) missing: skipped"
  exit 77
fi
mkdir -p "$out"
flags=(-std=c++17 -O1 -g -fsanitize=fuzzer,address,undefined
       -fno-sanitize-recover=undefined -Iinclude -isystem "$cuda")
for src in test/fuzz/*Fuzzer.cpp; do
  name=$(basename "$src" .cpp)
  "$clang" "${flags[@]}" "$src" lib/Runtime/*.cpp -ldl -o "$out/$name"
  corpus="$out/$name-corpus"
  mkdir -p "$corpus"
  cp test/fuzz/corpus/"$name"/* "$corpus"/ 2>/dev/null || true
  echo "== $name: $runs runs"
  dict=()
  [ -f "test/fuzz/$name.dict" ] && dict=(-dict="test/fuzz/$name.dict")
  # Targets that need scratch files (the kernel cache's) keep them here.
  scratch="$out/$name-tmp"
  rm -rf "$scratch" && mkdir -p "$scratch"
  TMPDIR="$scratch" "$out/$name" -runs="$runs" -max_len=4096 -timeout=10 \
    "${dict[@]}" -print_final_stats=1 "$corpus" 2>&1 | tail -15
  rm -rf "$scratch"
done
