#!/usr/bin/env bash
# On the GPU machine: Nsight Compute profiles of our forward kernels (each
# .gpu-carry directory named on the command line, every kernel in it launched
# once through scripts/gpu/bench.py --check-only) and of cuDNN's and FA2's
# kernels on FA_PROFILE_PEERS shapes ("D:N[:causal] ..."). For each: the
# details page (speed of light, warp states, occupancy) and the SASS source
# page with per-instruction stall samples (CSV) under $OUT.
# FA_PROFILE_KERNELS: the kernel-name regex to profile (default ^fwd_).
# FA_PROFILE_FA4 ("D:N[:causal] ...", FA4 installed by fa4-install.sh): the
# same pages for FlashAttention 4's forward kernel on those shapes; with
# FA_PROFILE_FA4_BWD=1 its backward's too (the first four FA4 launches:
# forward, preprocess, backward, postprocess). Its PTX and cubins are kept
# under $OUT/fa4-dump.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
out=${OUT:-.}
ncu_common=(--clock-control none --set full --import-source no)
status=0
for dir in "$@"; do
  name=$(basename "$dir")
  ncu "${ncu_common[@]}" -k regex:"${FA_PROFILE_KERNELS:-^fwd_}" -o "$out/ncu-$name" \
    python3 scripts/gpu/bench.py "$dir" --check-only --json /dev/null \
    >"$out/ncu-$name.run.log" 2>&1 || status=1
  tail -3 "$out/ncu-$name.run.log"
  ncu -i "$out/ncu-$name.ncu-rep" --page details >"$out/ncu-$name.details.txt" 2>&1 || status=1
  # Each .meta's main kernel (JSON: python3 reads it, jq may be missing).
  for kernel in $(python3 -c 'import json, sys
for path in sys.argv[1:]:
    print(json.load(open(path))["entry"])' "$dir"/*.meta); do
    ncu -i "$out/ncu-$name.ncu-rep" -k "$kernel" --page source --csv --print-source sass \
      >"$out/src-$name-$kernel.csv" 2>&1 || status=1
    python3 scripts/gpu/ncu-top.py "$out/src-$name-$kernel.csv" 60 \
      >"$out/top-$name-$kernel.txt" 2>&1 || status=1
    gzip -f "$out/src-$name-$kernel.csv"
    ncu -i "$out/ncu-$name.ncu-rep" -k "$kernel" --page raw --csv \
      >"$out/raw-$name-$kernel.csv" 2>&1 || status=1
  done
  rm -f "$out/ncu-$name.ncu-rep"  # too big to bring back; the pages above hold it
done
if [ -n "${FA_PROFILE_PEERS:-}" ]; then
  ncu --clock-control none --set detailed -k regex:'(?i)(cudnn|flash|fmha|sm90)' \
    -o "$out/ncu-peers" python3 scripts/gpu/peer-sdpa.py $FA_PROFILE_PEERS \
    >"$out/ncu-peers.run.log" 2>&1 || status=1
  tail -3 "$out/ncu-peers.run.log"
  ncu -i "$out/ncu-peers.ncu-rep" --page details >"$out/ncu-peers.details.txt" 2>&1 || status=1
fi
if [ -n "${FA_PROFILE_FA4:-}" ]; then
  fa4_args=() fa4_count=1
  [ -n "${FA_PROFILE_FA4_BWD:-}" ] && fa4_args=(--backward) fa4_count=4
  mkdir -p "$out/fa4-dump"
  CUTE_DSL_KEEP=ptx,cubin CUTE_DSL_DUMP_DIR="$out/fa4-dump" \
    ncu "${ncu_common[@]}" -k regex:'(?i)flash' -c $fa4_count -o "$out/ncu-fa4" \
    python3 scripts/gpu/fa4-run.py "${fa4_args[@]}" $FA_PROFILE_FA4 \
    >"$out/ncu-fa4.run.log" 2>&1 || status=1
  tail -3 "$out/ncu-fa4.run.log"
  ncu -i "$out/ncu-fa4.ncu-rep" --page details >"$out/ncu-fa4.details.txt" 2>&1 || status=1
  ncu -i "$out/ncu-fa4.ncu-rep" --page source --csv --print-source sass \
    >"$out/src-fa4.csv" 2>&1 || status=1
  python3 scripts/gpu/ncu-top.py "$out/src-fa4.csv" 60 >"$out/top-fa4.txt" 2>&1 || status=1
  gzip -f "$out/src-fa4.csv"
  ncu -i "$out/ncu-fa4.ncu-rep" --page raw --csv >"$out/raw-fa4.csv" 2>&1 || status=1
  rm -f "$out/ncu-fa4.ncu-rep"
fi
exit $status
