#!/usr/bin/env bash
# compute-sanitizer memcheck, racecheck and synccheck on chosen kernels, on
# the GPU machine, with the carried fa-gpu-check (make-carried-check.sh):
#
#   OUT=$OUT bash scripts/gpu/sanitize.sh .gpu-carry/k/rt_d64_f16@3,1000,1000 \
#     .gpu-carry/k/d128_n1000_causal_f16
#
# Each argument is a kernel's path without .ptx / .meta; a kernel with
# runtime shapes takes its call after `@` (B,NQ,NKV; default 3,1000,1000:
# more tiles than a persistent grid has blocks, ragged Q and KV blocks).
# Exit status 1 if any tool reports an error.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
tool=${FA_CHECK_TOOL:-.gpu-carry/bin/fa-gpu-check}
out=${OUT:-.}
sanitize() {
  local status=0 item kernel call check shape
  for item in "$@"; do
    kernel=${item%@*}
    shape=()
    if grep -q '"runtime_shapes": true' "$kernel.meta"; then
      call=3,1000,1000
      [ "$item" != "$kernel" ] && call=${item#*@}
      shape=(--shape "$call")
    fi
    for check in memcheck racecheck synccheck; do
      echo "== compute-sanitizer $check on $(basename "$kernel") ${shape[*]}"
      timeout 120 compute-sanitizer --tool $check --error-exitcode 3 "$tool" \
        --ptx "$kernel.ptx" --meta "$kernel.meta" --iters 1 "${shape[@]}" 2>&1 |
        tail -n 2
      [ "${PIPESTATUS[0]}" = 0 ] || { status=1; echo "   $check FAILED"; }
    done
  done
  return $status
}
sanitize "$@" 2>&1 | tee "$out/sanitize.log"
exit "${PIPESTATUS[0]}"
