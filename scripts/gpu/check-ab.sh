#!/usr/bin/env bash
# On the GPU machine: a check matrix and an A/B of compiler variants in one
# call. Prepare here (each A/B directory from one compiler or flag set, the
# same bench shapes):
#   scripts/gpu/make-kernels.sh --bwd-wgmma      # .gpu-carry/bwdw (default)
#   scripts/gpu/make-kernels.sh                  # .gpu-carry/kernels (forward)
#   FA_BENCH_DIRECTIONS=bwd scripts/gpu/make-kernels.sh --bench .gpu-carry/ab_<variant> sm_90
# then carry .gpu-carry and run
#   FA_AB_DIRS="ab_base ab_new" bash scripts/gpu/check-ab.sh
#   FA_CHECK_DIR=.gpu-carry/kernels FA_RACE_KERNELS="d128_n1000_bf16" \
#     FA_AB_DIRS="ab_base ab_new" bash scripts/gpu/check-ab.sh
# Steps: scripts/gpu/check.sh on FA_CHECK_DIR (fp64 reference, poisoned
# outputs, memcheck on the smallest kernel); racecheck and synccheck on the
# kernels of FA_CHECK_DIR named by FA_RACE_KERNELS; scripts/gpu/ab-bench.py
# over the FA_AB_DIRS (FA_AB_ROUNDS rounds). Logs and JSON go to $OUT.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
out=${OUT:-.}
status=0
# FA_CHECK_DIR: one directory or several (space-separated), checked together.
read -r -a check_dirs <<<"${FA_CHECK_DIR:-.gpu-carry/bwdw}"
check_log="$out/check-$(basename "${check_dirs[0]}").log"
FA_SKIP_UNITTESTS=1 FA_SANITIZE=1 bash scripts/gpu/check.sh "${check_dirs[@]}" 2>&1 |
  tee "$check_log" | grep -vE '^(PASS|FAIL) ' || true
grep -q "check.sh: all passed" "$check_log" || status=1
for kernel in ${FA_RACE_KERNELS:-bwdw_d128_n1000_bf16 bwdw_d64_n77_causal_gqa_bf16}; do
  dir=${check_dirs[0]}
  for d in "${check_dirs[@]}"; do [ -f "$d/$kernel.ptx" ] && dir=$d; done
  for tool in racecheck synccheck; do
    echo "== compute-sanitizer $tool on $kernel"
    compute-sanitizer --tool $tool --error-exitcode 3 build-gpu/bin/fa-gpu-check \
      --ptx "$dir/$kernel.ptx" --meta "$dir/$kernel.meta" \
      --iters 1 >"$out/$tool-$kernel.log" 2>&1 || status=1
    tail -n 2 "$out/$tool-$kernel.log"
  done
done
dirs=()
for d in ${FA_AB_DIRS:-ab_base ab_new}; do dirs+=(".gpu-carry/$d"); done
echo "== A/B: ${dirs[*]}"
PYTHONUNBUFFERED=1 python3 scripts/gpu/ab-bench.py "${dirs[@]}" \
  --rounds "${FA_AB_ROUNDS:-2}" --json "$out/ab-bench.json" 2>&1 |
  tee "$out/ab-bench.log" || status=1
exit $status
