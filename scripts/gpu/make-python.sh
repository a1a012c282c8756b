#!/usr/bin/env bash
# Packs the flashmlir Python package with a self-contained libFlashMLIR.so
# (FA_STATIC_JIT build in build-static: MLIR/LLVM/libstdc++ linked in, glibc
# only) for the GPU machine, which has torch but no MLIR:
#
#   scripts/gpu/make-python.sh   -> .gpu-carry/python/flashmlir-python.tar.xz
#
# There: python3 scripts/gpu/python-check.py (carry .gpu-carry).
# Environment: FA_STATIC_BUILD_DIR (default build-static).
set -euo pipefail
cd "$(dirname "$0")/../.."
build_dir=${FA_STATIC_BUILD_DIR:-build-static}
out=.gpu-carry/python
if [ ! -f "$build_dir/build.ninja" ]; then
  echo "== configuring $build_dir (FA_STATIC_JIT=ON)"
  cmake -G Ninja -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release \
    -DFA_STATIC_JIT=ON >"$build_dir.configure.log" 2>&1 ||
    { cat "$build_dir.configure.log"; echo "make-python: cmake failed"; exit 1; }
fi
ninja -C "$build_dir" FlashMLIRCAPI
lib=$build_dir/lib/libFlashMLIR.so
ldd "$lib" |
  grep -vE '^\s*(linux-vdso\.so|/lib64/ld-linux|(libc|libm|libdl|libpthread|librt)\.so)' &&
  { echo "make-python: $lib depends on more than glibc"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r python/flashmlir "$tmp/"
rm -rf "$tmp/flashmlir/__pycache__"
cp "$lib" "$tmp/flashmlir/libFlashMLIR.so"
# It must load and compile here, without a GPU.
(cd "$tmp" && env -u FLASHMLIR_LIBRARY PYTHONPATH="$tmp" python3 -c \
  'import flashmlir; flashmlir.validate(flashmlir.Config(causal=True), backward=True); print(flashmlir.library_path())')
mkdir -p "$out"
tar -C "$tmp" -cJf "$out/flashmlir-python.tar.xz" flashmlir
echo "make-python: $(stat -c %s "$out/flashmlir-python.tar.xz") bytes ($out)"
