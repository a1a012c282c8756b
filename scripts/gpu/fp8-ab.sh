#!/usr/bin/env bash
# One device call for an FP8 forward change: the check matrices of each
# variant directory (fa-gpu-check: fp64 reference, poisoned outputs), the
# sanitizers on small kernels, then fp8-bench.py over each bench directory
# in turn (cuDNN bf16 beside, in each process). Everything under $OUT.
#
#   OUT=$OUT FA_CHECK="fcc fpc fct fpt" FA_SANITIZE="fct/tiny128 fpt/tiny128" \
#     FA_BENCH="fcb fpb ob" FA_QUANTIZE_DIR=quantacc bash scripts/gpu/fp8-ab.sh
#
# Directories are under .gpu-carry; FA_QUANTIZE_DIR (optional) adds the
# accuracy test with the compiler's quantization to the first bench.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
out=${OUT:-.}
status=0
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$out/gpu.txt"
# shellcheck disable=SC2086
bash scripts/gpu/check-carried.sh ${FA_CHECK:-} 2>&1 | tee "$out/check.log"
[ "${PIPESTATUS[0]}" = 0 ] || status=1
sanitize=()
for k in ${FA_SANITIZE:-}; do sanitize+=(".gpu-carry/$k"); done
if [ ${#sanitize[@]} -gt 0 ]; then
  OUT=$out bash scripts/gpu/sanitize.sh "${sanitize[@]}" || status=1
fi
quantize=${FA_QUANTIZE_DIR:+--quantize-dir .gpu-carry/$FA_QUANTIZE_DIR}
for dir in ${FA_BENCH:-}; do
  echo "== fp8-bench $dir"
  # shellcheck disable=SC2086
  PYTHONUNBUFFERED=1 python3 scripts/gpu/fp8-bench.py .gpu-carry/$dir \
    $quantize --json "$out/fp8-bench-$dir.json" 2>&1 | tee "$out/bench-$dir.log"
  quantize=
done
exit $status
