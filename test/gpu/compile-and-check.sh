#!/usr/bin/env bash
# ctest "gpu-kernels" (label gpu): compiles a few forward kernels with
# fa-compile and checks them with fa-gpu-check against the fp64 reference.
# Without a CUDA driver and GPU it exits 77, which ctest reports as skipped.
# Usage: compile-and-check.sh BIN_DIR WORK_DIR
set -uo pipefail
bin=$1
work=$2
mkdir -p "$work"
if ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1' && [ -z "${FLASHMLIR_LIBCUDA:-}" ]; then
  echo "no CUDA driver (libcuda.so.1) on this machine: skipping the GPU kernel checks"
  exit 77
fi
failures=0
while read -r name flags; do
  # shellcheck disable=SC2086
  "$bin/fa-compile" --entry="$name" $flags -o "$work/$name" || { failures=$((failures + 1)); continue; }
  "$bin/fa-gpu-check" --ptx "$work/$name.ptx" --meta "$work/$name.meta"
  rc=$?
  if [ $rc -ne 0 ]; then
    if "$bin/fa-gpu-check" --ptx "$work/$name.ptx" --meta "$work/$name.meta" 2>&1 |
        grep -q 'no CUDA driver\|no CUDA device'; then
      echo "no usable GPU: skipping"
      exit 77
    fi
    failures=$((failures + 1))
  fi
done <<'MATRIX'
gpu_d64_n77_causal_gqa  --batch=2 --heads-q=8 --heads-kv=2 --seq-q=77 --head-dim=64 --causal
gpu_d128_n1000_f16      --dtype=f16 --heads-q=2 --seq-q=1000 --seq-kv=700 --head-dim=128 --causal
gpu_d128_window_softcap --heads-q=2 --seq-q=300 --head-dim=128 --window=32,32 --softcap=20
MATRIX
echo "$failures failure(s)"
[ $failures -eq 0 ]
