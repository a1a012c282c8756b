#!/usr/bin/env bash
# Varlen forward speed on the GPU machine, in one process per call: each
# varlen kernel DIR/vlb_<x> on 8 equal sequences and on 8 mixed lengths of
# the same 16k tokens, beside the runtime-shapes kernel DIR/rtb_<x> on the
# dense batch of those tokens (8 x 2048). TFLOP/s count real tokens only
# (each sequence's own products). Rounds interleave the kernels.
#
#   bash scripts/gpu/bench-varlen.sh .gpu-carry/vlb [ROUNDS]
#
# Needs build-gpu/bin/fa-gpu-check (scripts/gpu/check.sh builds it).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
dir=${1:-.gpu-carry/vlb}
rounds=${2:-3}
tool=${FA_GPU_CHECK:-build-gpu/bin/fa-gpu-check}
equal=2048:2048,2048:2048,2048:2048,2048:2048,2048:2048,2048:2048,2048:2048,2048:2048
mixed=512:512,1024:1024,4096:4096,3072:3072,2048:2048,5120:5120,128:128,384:384
status=0
run() {
  local label=$1
  shift
  local line
  line=$("$tool" "$@" --bench --iters 50 2>/dev/null | grep -E '^(PASS|FAIL) ')
  [[ $line == PASS* ]] || status=1
  printf '%-28s %s\n' "$label" "$line"
}
for round in $(seq "$rounds"); do
  echo "== round $round"
  for meta in "$dir"/rtb_*.meta; do
    x=${meta##*/rtb_}
    x=${x%.meta}
    rt=$dir/rtb_$x vl=$dir/vlb_$x
    run "$x dense 8x2048" --ptx "$rt.ptx" --meta "$rt.meta" --shape 8,2048,2048
    run "$x varlen equal" --ptx "$vl.ptx" --meta "$vl.meta" --seqlens "$equal"
    run "$x varlen mixed" --ptx "$vl.ptx" --meta "$vl.meta" --seqlens "$mixed"
  done
done
exit $status
