#!/usr/bin/env bash
# On the GPU machine: checks and times the forward compiled through the GPU
# tile level for sm_90a (WGMMA). Prepare here:
#   scripts/gpu/make-kernels.sh .gpu-carry/k90a sm_90a             # check matrix
#   FA_BENCH_DIRECTIONS=fwd scripts/gpu/make-kernels.sh --bench .gpu-carry/b90a sm_90a
#   FA_BENCH_DIRECTIONS=fwd scripts/gpu/make-kernels.sh --bench .gpu-carry/b90 sm_90
#   ptxas -arch=sm_90a .gpu-carry/k90a/d128_n1000_causal_f16.ptx -o .gpu-carry/k90a/d128.cubin
# then carry .gpu-carry. Steps: the C++ runtime check against the fp64
# reference (scripts/gpu/check.sh, poisoned outputs) with compute-sanitizer
# memcheck, racecheck and synccheck on one kernel; the SASS instructions; the
# timing beside torch's SDPA backends (scripts/gpu/bench.py), sm_90a and the
# mma.sync sm_90 kernels of the same shapes (FA_BENCH_DIRS names other
# .gpu-carry directories to time instead). Logs and JSON go to $OUT.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
out=${OUT:-.}
status=0
FA_SANITIZE=1 bash scripts/gpu/check.sh .gpu-carry/k90a 2>&1 | tee "$out/check-90a.log" || status=1
kernel=.gpu-carry/k90a/d128_n1000_causal_f16
for tool in racecheck synccheck; do
  echo "== compute-sanitizer $tool on $(basename $kernel)"
  compute-sanitizer --tool $tool --error-exitcode 3 build-gpu/bin/fa-gpu-check \
    --ptx $kernel.ptx --meta $kernel.meta --iters 1 2>&1 | tail -3 || status=1
done
rt=.gpu-carry/k90a/rt_d128_causal_gqa_bf16
if [ -f $rt.meta ]; then
  echo "== compute-sanitizer racecheck on $(basename $rt) (runtime shapes)"
  compute-sanitizer --tool racecheck --error-exitcode 3 build-gpu/bin/fa-gpu-check \
    --ptx $rt.ptx --meta $rt.meta --shape 1,1000,300 --iters 1 2>&1 | tail -3 || status=1
fi
# Runtime-shapes kernels (.gpu-carry/rtb, from make-kernels.sh with
# FA_BENCH_FLAGS=--runtime-shapes) timed at the bench shapes of their head
# dim, beside the static kernels of the same shapes in the bench below.
for meta in .gpu-carry/rtb/*.meta; do
  [ -f "$meta" ] || continue
  for n in ${FA_RT_BENCH_SEQS:-2048 8192}; do
    echo "== bench $(basename "${meta%.meta}") at batch $((16384 / n)), N $n"
    build-gpu/bin/fa-gpu-check --ptx "${meta%.meta}.ptx" --meta "$meta" \
      --shape $((16384 / n)),$n,$n --bench 2>&1 | grep -E '^(PASS|FAIL)' || status=1
  done
done
if [ -f .gpu-carry/k90a/d128.cubin ]; then
  echo "== SASS of d128_n1000_causal_f16 (sm_90a)"
  cuobjdump --dump-sass .gpu-carry/k90a/d128.cubin |
    grep -oE "HGMMA[.A-Z0-9x]*|HMMA[.A-Z0-9]*|UTMALDG[.A-Z0-9]*" | sort | uniq -c
fi
for dir in ${FA_BENCH_DIRS:-b90a b90}; do
  [ -d .gpu-carry/$dir ] || continue
  echo "== bench .gpu-carry/$dir"
  PYTHONUNBUFFERED=1 python3 scripts/gpu/bench.py .gpu-carry/$dir \
    --json "$out/bench-$dir.json" 2>&1 | tee "$out/bench-$dir.log" || status=1
done
exit $status
