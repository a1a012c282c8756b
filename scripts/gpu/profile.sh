#!/usr/bin/env bash
# On the GPU machine: Nsight Compute profiles of our forward kernels (each
# .gpu-carry directory named on the command line, every kernel in it launched
# once through scripts/gpu/bench.py --check-only) and of cuDNN's and FA2's
# kernels on FA_PROFILE_PEERS shapes ("D:N[:causal] ..."). For each: the
# details page (speed of light, warp states, occupancy) and the SASS source
# page with per-instruction stall samples (CSV) under $OUT.
# FA_PROFILE_KERNELS: the kernel-name regex to profile (default ^fwd_).
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
  for kernel in $(sed -n 's/^entry *= *//p' "$dir"/*.meta); do
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
exit $status
