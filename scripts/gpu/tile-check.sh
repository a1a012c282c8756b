#!/usr/bin/env bash
# On the GPU machine: checks the GPU-tile-level kernels compiled here
# (fa-compile test/gpu/Inputs/tile-kernels.mlir --chip=sm_90a -o
# .gpu-carry/tile/tile-kernels, plus ptxas -arch=sm_90a for the .cubin):
# correctness against float64 torch, compute-sanitizer (memcheck, racecheck,
# synccheck) on one case per kernel, and the SASS instructions that show the
# Hopper path (HGMMA).
set -uo pipefail
cd "$(dirname "$0")/../.."
dir=${1:-.gpu-carry/tile}
status=0
python3 scripts/gpu/tile-check.py "$dir/tile-kernels.ptx" || status=1
for tool in memcheck racecheck synccheck; do
  echo "== compute-sanitizer --tool $tool"
  compute-sanitizer --tool "$tool" --error-exitcode 3 \
    python3 scripts/gpu/tile-check.py "$dir/tile-kernels.ptx" --quick \
    2>&1 | grep -E "ERROR SUMMARY|RACECHECK SUMMARY|passed|FAIL|Error" || status=1
done
echo "== SASS (cuobjdump) of $dir/tile-kernels.cubin"
cuobjdump --dump-sass "$dir/tile-kernels.cubin" | grep -oE "HGMMA[.A-Z0-9x]*|UTMALDG[.A-Z0-9]*|HMMA[.A-Z0-9]*" | sort | uniq -c
exit $status
