#!/usr/bin/env bash
# Prepares FlashAttention 4 (flash-attn-4, CuTe DSL) for the GPU machine, as
# the benchmark's `fa4` peer (../shared/bench/FA4.md). Its wheels are ~100 MB
# and one device call carries at most 64 MiB with the repository, so:
#   .gpu-carry/fa4-a, .gpu-carry/fa4-b  the cu13 libraries (xz'd, in halves)
#   .gpu-carry/fa4-wheels               the other wheels (10 MB)
# There, in consecutive calls (a machine idle for 30 s is given back):
#   scripts/gpu/fa4-install.sh a          (carry .gpu-carry/fa4-a)
#   scripts/gpu/fa4-install.sh b          (carry .gpu-carry/fa4-b, fa4-wheels)
# then FLASHMLIR_BENCH_SITE=/tmp/fa4/site python -m flashmlir.bench --peers
# cudnn,fa4 ... (the site survives while the machine stays warm).
set -euo pipefail
cd "$(dirname "$0")/../.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
  --implementation cp --platform manylinux_2_28_x86_64 \
  --platform manylinux_2_17_x86_64 -d "$work/wheels" \
  flash-attn-4==4.0.0b36 nvidia-cutlass-dsl==4.8.1 \
  nvidia-cutlass-dsl-libs-base==4.8.1 nvidia-cutlass-dsl-libs-core==4.8.1 \
  nvidia-cutlass-dsl-libs-cu13==4.8.1 apache-tvm-ffi torch-c-dlpack-ext \
  quack-kernels
mkdir -p "$work/cu13"
python3 -c "import zipfile, sys; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])" \
  "$work"/wheels/nvidia_cutlass_dsl_libs_cu13-*.whl "$work/cu13"
rm "$work"/wheels/nvidia_cutlass_dsl_libs_cu13-*.whl
rm -rf .gpu-carry/fa4-a .gpu-carry/fa4-b .gpu-carry/fa4-wheels
mkdir -p .gpu-carry/fa4-a .gpu-carry/fa4-b
tar -C "$work/cu13" -c . | xz -9e -T0 > "$work/cu13.tar.xz"
size=$(stat -c %s "$work/cu13.tar.xz")
head -c $((size / 2)) "$work/cu13.tar.xz" > .gpu-carry/fa4-a/cu13.tar.xz.part
tail -c +$((size / 2 + 1)) "$work/cu13.tar.xz" > .gpu-carry/fa4-b/cu13.tar.xz.part
cp -r "$work/wheels" .gpu-carry/fa4-wheels
du -sh .gpu-carry/fa4-a .gpu-carry/fa4-b .gpu-carry/fa4-wheels
