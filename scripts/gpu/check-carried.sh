#!/usr/bin/env bash
# A device call without a build: fa-gpu-check built on the CPU machine
# (static libstdc++, stripped: .gpu-carry/bin/fa-gpu-check, made by
# `scripts/gpu/make-carried-check.sh`) over each kernel of the named
# directories (fp64 reference, poisoned outputs), then compute-sanitizer
# memcheck and synccheck on $FA_SANITIZE_KERNEL if set. For calls whose
# device time is short: check-variants.sh builds build-gpu first (~100 s).
#
#   OUT=$OUT FA_SANITIZE_KERNEL=fp8only/fp8_d128_n77_causal_gqa_f16 \
#     bash scripts/gpu/check-carried.sh fp8only
#
# Exit status 0 if every check passed; 2 if the binary cannot start here.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
bin=.gpu-carry/bin/fa-gpu-check
if ! "$bin" --help >/dev/null 2>&1; then
  echo "check-carried: $bin does not start on this machine:"
  "$bin" --help 2>&1 | head -3
  exit 2
fi
status=0
for dir in "$@"; do
  for meta in .gpu-carry/"$dir"/*.meta; do
    "$bin" --ptx "${meta%.meta}.ptx" --meta "$meta" --iters 2 2>&1 |
      grep -E '^(PASS|FAIL)' || { echo "FAIL ${meta}: no verdict"; status=1; }
    [ "${PIPESTATUS[0]}" = 0 ] || status=1
  done
done
if [ -n "${FA_SANITIZE_KERNEL:-}" ]; then
  k=.gpu-carry/$FA_SANITIZE_KERNEL
  for tool in memcheck synccheck; do
    echo "== compute-sanitizer $tool on $FA_SANITIZE_KERNEL"
    timeout 120 compute-sanitizer --tool $tool --error-exitcode 3 "$bin" \
      --ptx "$k.ptx" --meta "$k.meta" --iters 1 2>&1 | tail -n 2
    [ "${PIPESTATUS[0]}" = 0 ] || { status=1; echo "   $tool FAILED"; }
  done
fi
exit $status
