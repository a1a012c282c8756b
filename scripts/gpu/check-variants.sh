#!/usr/bin/env bash
# One device call for compiler variants: each kernel directory checked on
# its own (fp64 reference, poisoned outputs; memcheck on its smallest
# kernel), racecheck + synccheck on chosen kernels, then an A/B benchmark.
# Few files come back (a device call returns at most 8): a log per
# directory, one sanitizer log, the A/B log and JSON.
#
#   OUT=$OUT FA_RACE="kernels/d128_n1000_bf16 bwdw/bwdw_d128_n1000_bf16" \
#     FA_AB_DIRS="ab_base ab_new" bash scripts/gpu/check-variants.sh \
#     kernels ksp bwdw
#
# Directories are named relative to .gpu-carry. Exit status 0 if every
# check passed.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
out=${OUT:?OUT must name the output directory}
status=0
# Whether a .meta file (JSON; python3 reads it, jq may be missing) sets the
# flag $2 (varlen, runtime_shapes) to true.
meta_flag() {
  python3 -c 'import json, sys
sys.exit(json.load(open(sys.argv[1])).get(sys.argv[2]) is not True)' "$1" "$2"
}
skip_build=0
for name in "$@"; do
  log="$out/check-${name//\//-}.log"
  FA_SKIP_BUILD=$skip_build FA_SKIP_UNITTESTS=1 FA_SANITIZE=1 \
    FA_LOG_DIR="build-gpu/logs-$name" bash scripts/gpu/check.sh \
    ".gpu-carry/$name" >"$log" 2>&1
  skip_build=1
  if grep -q "check.sh: all passed" "$log"; then
    echo "== $name: all passed ($(grep -o 'on [0-9]* kernel(s)' "$log"))"
  else
    echo "== $name: FAILED"; grep -E '^FAIL ' "$log" | head; status=1
  fi
done
sanitizer_log="$out/sanitizers.log"
: >"$sanitizer_log"
for entry in ${FA_RACE:-}; do
  dir=.gpu-carry/${entry%/*} kernel=${entry##*/}
  for tool in racecheck synccheck; do
    echo "== compute-sanitizer $tool on $entry" | tee -a "$sanitizer_log"
    # A varlen kernel runs on packed sequences, a runtime-shapes one at a
    # shape of its own.
    calls=()
    meta_flag "$dir/$kernel.meta" varlen &&
      calls=(--seqlens 70:20,5:90,33:0,129:1,1:130)
    meta_flag "$dir/$kernel.meta" varlen ||
      ! meta_flag "$dir/$kernel.meta" runtime_shapes ||
      calls=(--shape 2,77,300)
    compute-sanitizer --tool $tool --error-exitcode 3 build-gpu/bin/fa-gpu-check \
      --ptx "$dir/$kernel.ptx" --meta "$dir/$kernel.meta" --iters 1 "${calls[@]}" \
      >>"$sanitizer_log" 2>&1 || { status=1; echo "   $tool FAILED"; }
    tail -n 1 "$sanitizer_log"
  done
done
if [ -n "${FA_AB_DIRS:-}" ]; then
  dirs=()
  for d in $FA_AB_DIRS; do dirs+=(".gpu-carry/$d"); done
  echo "== A/B: ${dirs[*]}"
  PYTHONUNBUFFERED=1 python3 scripts/gpu/ab-bench.py "${dirs[@]}" \
    --rounds "${FA_AB_ROUNDS:-2}" --json "$out/ab-bench.json" 2>&1 |
    tee "$out/ab-bench.log" || status=1
fi
exit $status
