#!/usr/bin/env bash
# Builds the self-contained JIT checker here (where MLIR is) and packs it for
# the GPU machine, which has no MLIR:
#
#   scripts/gpu/make-jit.sh          -> .gpu-carry/jit/fa-gpu-check-jit.xz
#
# The binary (cmake -DFA_STATIC_JIT=ON, build dir build-static) links MLIR and
# LLVM from their static archives, libstdc++/libgcc/zlib/zstd statically, is
# stripped, and needs only glibc (checked with ldd below). It compiles kernels
# to PTX in-process and lets the CUDA driver assemble them: no CUDA toolkit is
# needed where it runs. scripts/gpu/jit-check.sh unpacks and runs it there.
#
# Environment: FA_STATIC_BUILD_DIR (default build-static).
set -euo pipefail
cd "$(dirname "$0")/../.."
build_dir=${FA_STATIC_BUILD_DIR:-build-static}
out=.gpu-carry/jit
bin=$build_dir/bin/fa-gpu-check-jit

if [ ! -f "$build_dir/build.ninja" ]; then
  echo "== configuring $build_dir (FA_STATIC_JIT=ON)"
  cmake -G Ninja -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release \
    -DFA_STATIC_JIT=ON >"$build_dir.configure.log" 2>&1 ||
    { cat "$build_dir.configure.log"; echo "make-jit: cmake failed"; exit 1; }
fi
echo "== building $bin"
ninja -C "$build_dir" fa-gpu-check-jit

# Only glibc-level libraries may remain.
echo "== ldd $bin"
ldd "$bin" | tee /dev/stderr |
  grep -vE '^\s*(linux-vdso\.so|/lib64/ld-linux|(libc|libm|libdl|libpthread|librt)\.so)' &&
  { echo "make-jit: $bin depends on more than glibc"; exit 1; }

# It must run (and compile) here, without a GPU.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
FLASHMLIR_CACHE_DIR=$tmp/cache "$bin" --jit --dtype bf16 --batch 1 --heads-q 2 \
  --seq-q 64 --head-dim 64 --emit "$tmp/smoke" >/dev/null
grep -q '\.entry fa_fwd' "$tmp/smoke.ptx" ||
  { echo "make-jit: the smoke compile produced no kernel"; exit 1; }

echo "== packing into $out"
mkdir -p "$out"
rm -f "$out"/fa-gpu-check-jit.xz "$out"/MANIFEST
xz -9 -T0 -c "$bin" >"$out/fa-gpu-check-jit.xz"
{
  echo "sha256 $(sha256sum "$bin" | cut -d' ' -f1)"
  echo "bytes $(stat -c %s "$bin")"
  echo "source $(git describe --always --dirty 2>/dev/null || echo unknown)"
  echo "built $(date -u +%Y-%m-%dT%H:%M:%SZ)"
} >"$out/MANIFEST"
echo "make-jit: $(stat -c %s "$bin") bytes -> $(stat -c %s "$out/fa-gpu-check-jit.xz") bytes xz ($out)"
