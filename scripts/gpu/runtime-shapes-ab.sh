#!/usr/bin/env bash
# Issue 12's "runtime-shape kernels within 3 % of the specialised ones", on
# the GPU machine: each kernel built for its shape against the kernel with
# runtime shapes of the same config, launched at that shape, in turn, for
# several rounds (fa-gpu-check --bench: CUDA events, median of the timed
# launches; every launch's outputs NaN-poisoned first, a verdict against
# float64 each).
#
# Here first (the kernels, named KIND_dD_nN[_causal] for the shape and
# KIND_rt_dD[_causal] for runtime shapes):
#   scripts/gpu/runtime-shapes-ab.sh --kernels .gpu-carry/rt
# There (carry .gpu-carry/rt and .gpu-carry/nlohmann-json):
#   OUT=$OUT bash scripts/gpu/runtime-shapes-ab.sh .gpu-carry/rt [ROUNDS]
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1

if [ "${1:-}" = --kernels ]; then
  dir=${2:?the kernel directory}
  compile=${FA_COMPILE:-build/bin/fa-compile}
  mkdir -p "$dir"
  common=(--chip=sm_90a --dtype=bf16 --heads-q=16)
  for hd in ${FA_RT_DIMS:-64 128}; do
    for causal in "" _causal; do
      flag=()
      [ -n "$causal" ] && flag=(--causal)
      for kind in fwd bwd; do
        dir_flag=()
        [ $kind = bwd ] && dir_flag=(--backward)
        "$compile" "${common[@]}" "${dir_flag[@]}" "${flag[@]}" \
          --head-dim="$hd" --runtime-shapes -o "$dir/${kind}_rt_d$hd$causal" ||
          exit 1
        # The forward's blocks looping over the call's tiles as well.
        [ $kind = fwd ] && { "$compile" "${common[@]}" "${flag[@]}" \
          --head-dim="$hd" --runtime-shapes --persistent-blocks=132 \
          -o "$dir/${kind}_rtp_d$hd$causal" || exit 1; }
        for shape in 8,2048 2,8192; do
          "$compile" "${common[@]}" "${dir_flag[@]}" "${flag[@]}" \
            --head-dim="$hd" --batch="${shape%,*}" --seq-q="${shape#*,}" \
            -o "$dir/${kind}_d${hd}_n${shape#*,}$causal" || exit 1
        done
      done
    done
  done
  echo "runtime-shapes-ab: $(ls "$dir"/*.ptx | wc -l) kernels in $dir"
  exit
fi

dir=${1:?the kernel directory}
rounds=${2:-3}
out=${OUT:-/tmp/runtime-shapes-ab}
mkdir -p "$out"
FA_SKIP_UNITTESTS=1 bash scripts/gpu/check.sh /dev/null >/dev/null 2>&1
tool=build-gpu/bin/fa-gpu-check
[ -x "$tool" ] || { echo "runtime-shapes-ab: $tool not built"; exit 1; }
meta() {
  python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"
}
# One timing: TFLOP/s (and the verdict) of a kernel at its shape.
time_kernel() {
  local line
  line=$("$tool" --ptx "$1.ptx" --meta "$1.meta" --bench --iters 30 "${@:2}" |
    grep -E '^(PASS|FAIL) ')
  [[ $line == PASS* ]] || { echo "FAIL"; return; }
  sed -n 's/.* tflops=\([^ ]*\).*/\1/p' <<<"$line"
}
status=0
printf '%-24s %-6s %-10s %s\n' KERNEL ROUND STATIC "RUNTIME VARIANTS (tflops, ratio to static)" |
  tee "$out/runtime-shapes-ab.log"
for round in $(seq 1 "$rounds"); do
  for ptx in "$dir"/*_n*.ptx; do
    static=${ptx%.ptx}
    name=$(basename "$static")
    # Every runtime-shapes kernel of the same config: KIND_rt<variant>_dD[_causal].
    pattern=$(sed -E 's/^([a-z]+)_d([0-9]+)_n[0-9]+(.*)$/\1_rt*_d\2\3.ptx/' <<<"$name")
    runtimes=()
    for r in "$dir"/$pattern; do [ -f "$r" ] && runtimes+=("${r%.ptx}"); done
    [ ${#runtimes[@]} -gt 0 ] || continue
    shape="$(meta "$static.meta" batch),$(meta "$static.meta" seq_q),$(meta "$static.meta" seq_kv)"
    # The static kernel first in odd rounds, last in even ones.
    [ $((round % 2)) = 1 ] && s=$(time_kernel "$static")
    results=
    for r in "${runtimes[@]}"; do
      t=$(time_kernel "$r" --shape "$shape")
      results+="$(basename "$r")=$t "
      [ "$t" = FAIL ] && status=1
    done
    [ $((round % 2)) = 0 ] && s=$(time_kernel "$static")
    [ "$s" = FAIL ] && status=1
    line=
    for entry in $results; do
      t=${entry#*=}
      ratio=$(python3 -c "import sys; print(f'{float(sys.argv[2]) / float(sys.argv[1]):.3f}')" "$s" "$t" 2>/dev/null || echo -)
      line+="${entry%%=*} $t ($ratio)  "
    done
    printf '%-24s %-6s %-10s %s\n' "$name" "$round" "$s" "$line" |
      tee -a "$out/runtime-shapes-ab.log"
  done
done
exit $status
