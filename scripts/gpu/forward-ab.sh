#!/usr/bin/env bash
# One device call for a forward change that touches bf16 and FP8 kernels:
# scripts/gpu/check.sh over the bf16/f16 check directories (runtime shapes
# and packed sequences at their shapes; memcheck on the smallest kernel of
# each kind) with the carried fa-gpu-check, then scripts/gpu/fp8-ab.sh (the
# FP8 checks; memcheck, racecheck and synccheck on FA_SANITIZE's kernels,
# bf16 ones too; the FP8 benchmarks), then ab-bench.py over the bf16 bench
# directories (cuDNN beside, same process). Everything under $OUT.
#
#   OUT=$OUT FA_CHECK_BF16="k8" FA_CHECK="cn8" \
#     FA_SANITIZE="cn8/tiny128 k8/d128_n1000_causal_persistent7" \
#     FA_BENCH="n0 n8" FA_AB="bb0 bb8" FA_AB_ROUNDS=2 \
#     bash scripts/gpu/forward-ab.sh
#
# Directories are under .gpu-carry (made by scripts/gpu/make-kernels.sh;
# .gpu-carry/bin/fa-gpu-check by scripts/gpu/make-carried-check.sh).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
out=${OUT:-.}
status=0
dirs=()
for d in ${FA_CHECK_BF16:-}; do dirs+=(".gpu-carry/$d"); done
if [ ${#dirs[@]} -gt 0 ]; then
  FA_BUILD_DIR=.gpu-carry FA_SKIP_BUILD=1 FA_SKIP_UNITTESTS=1 FA_SANITIZE=1 \
    FA_LOG_DIR=/tmp/forward-ab-logs timeout 300 bash scripts/gpu/check.sh \
    "${dirs[@]}" >"$out/check-bf16.log" 2>&1 || status=1
  grep -E "^(FAIL|== summary)|memcheck|passed|failed" "$out/check-bf16.log" | head -40
  echo "bf16 checks: $(grep -c '^PASS' "$out/check-bf16.log") PASS, $(grep -c '^FAIL' "$out/check-bf16.log") FAIL"
fi
OUT=$out bash scripts/gpu/fp8-ab.sh || status=1
ab=()
for d in ${FA_AB:-}; do ab+=(".gpu-carry/$d"); done
if [ ${#ab[@]} -gt 0 ]; then
  PYTHONUNBUFFERED=1 python3 scripts/gpu/ab-bench.py "${ab[@]}" \
    --rounds "${FA_AB_ROUNDS:-2}" --json "$out/ab-bench.json" 2>&1 |
    tee "$out/ab-bench.log"
fi
exit $status
