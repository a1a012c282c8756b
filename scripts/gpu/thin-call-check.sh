#!/usr/bin/env bash
# Issue 12 on the GPU machine in one call: the C++ launch path's CPU cost
# (fa-launch-overhead: rt::attentionForward against a bare cuLaunchKernel),
# the Python call's (call-overhead.py: flashmlir.attention against the C
# API's launch and torch SDPA), flashmlir on every device of the machine
# (multi-device-check.py), python-check.py and python-varlen-check.py
# against float64, and compile-check.py (torch.compile).
#
# Here first:
#   scripts/gpu/make-bench.sh                       (the package, kernels)
#   scripts/gpu/thin-call-check.sh --kernels        (.gpu-carry/overhead)
# There (carry .gpu-carry):
#   OUT=$OUT bash scripts/gpu/thin-call-check.sh
# (FA_THIN_CALL_ONLY=1: fa-launch-overhead and call-overhead.py only.)
set -uo pipefail
cd "$(dirname "$0")/../.."
kernels=.gpu-carry/overhead
if [ "${1:-}" = --kernels ]; then
  compile=${FA_COMPILE:-build/bin/fa-compile}
  mkdir -p "$kernels"
  # The tiny problem the Python measure runs (B = H = 1, N = 128, D = 64,
  # bf16), built for its shape and with runtime shapes.
  "$compile" --dtype=bf16 --batch=1 --heads-q=1 --seq-q=128 --head-dim=64 \
    --chip=sm_90a -o "$kernels/tiny_d64_n128" &&
    "$compile" --runtime-shapes --dtype=bf16 --heads-q=1 --head-dim=64 \
      --chip=sm_90a -o "$kernels/tiny_rt_d64"
  exit
fi
out=${OUT:-/tmp/thin-call-check}
mkdir -p "$out"
status=0
nvidia-smi -L
echo "== fa-launch-overhead (runtime-only build)"
# The runtime's .meta parser needs nlohmann-json: installed, or its
# headers carried (as scripts/gpu/check.sh takes them).
json_args=()
[ -f .gpu-carry/nlohmann-json/nlohmann/json.hpp ] &&
  json_args=(-DFA_NLOHMANN_JSON_INCLUDE_DIR="$PWD/.gpu-carry/nlohmann-json")
cmake -G Ninja -S . -B build-gpu -DFA_RUNTIME_ONLY=ON -DFA_ENABLE_TESTS=OFF \
  -DCMAKE_BUILD_TYPE=Release ${json_args[@]+"${json_args[@]}"} >/dev/null &&
  ninja -C build-gpu fa-launch-overhead >/dev/null ||
  { echo "thin-call-check: build failed"; exit 1; }
for round in 1 2 3; do
  build-gpu/bin/fa-launch-overhead --ptx $kernels/tiny_d64_n128.ptx \
    --meta $kernels/tiny_d64_n128.meta || status=1
  build-gpu/bin/fa-launch-overhead --ptx $kernels/tiny_rt_d64.ptx \
    --meta $kernels/tiny_rt_d64.meta --shape 1,128,128 || status=1
done
work=$(mktemp -d)
tar -C "$work" -xJf .gpu-carry/python/flashmlir-python.tar.xz
# Kernels precompiled by scripts/gpu/make-bench.sh, if carried.
[ -d .gpu-carry/bench-cache ] && cp -r .gpu-carry/bench-cache "$work/cache"
export PYTHONPATH=$work FLASHMLIR_CACHE_DIR=$work/cache PYTHONUNBUFFERED=1
echo "== call-overhead.py"
python3 scripts/gpu/call-overhead.py --profile 2>&1 | tee "$out/call-overhead.log" || status=1
# FA_THIN_CALL_ONLY=1: the two cost measures alone (a short device call).
[ "${FA_THIN_CALL_ONLY:-0}" = 1 ] && exit $status
echo "== multi-device-check.py"
python3 scripts/gpu/multi-device-check.py --package "" 2>&1 |
  tee "$out/multi-device.log" || status=1
echo "== python-check.py ${FA_PYTHON_CHECK_ARGS:-}"
python3 scripts/gpu/python-check.py --package "" ${FA_PYTHON_CHECK_ARGS:-} 2>&1 |
  tee "$out/python-check.log" || status=1
echo "== python-varlen-check.py"
python3 scripts/gpu/python-varlen-check.py 2>&1 | tee "$out/python-varlen.log" ||
  status=1
echo "== compile-check.py"
python3 scripts/gpu/compile-check.py --package "" 2>&1 |
  tee "$out/compile-check.log" || status=1
exit $status
