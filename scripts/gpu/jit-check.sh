#!/usr/bin/env bash
# Runs the JIT checker on the GPU machine (carry .gpu-carry, made by
# scripts/gpu/make-jit.sh here):
#
#   scripts/gpu/jit-check.sh [PACKED_BINARY]  # default .gpu-carry/jit/fa-gpu-check-jit.xz
#
# Unpacks the static fa-gpu-check-jit, then runs every config below twice
# against a fresh kernel cache: the first run must compile (cache=miss), the
# second must load the cached entry without compiling (cache=hit), and both
# must PASS against the fp64 reference. Prints a summary table.
#
# Environment:
#   FA_JIT_ARGS        extra fa-gpu-check-jit arguments (e.g. "--iters 3")
#   FLASHMLIR_CACHE_DIR  kernel cache (default: a fresh temporary directory)
#   FA_LOG_DIR         per-run logs (default: $TMPDIR/fa-jit-check-logs)
#
# Exit status: 0 if everything passed, 1 otherwise.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
packed=${1:-.gpu-carry/jit/fa-gpu-check-jit.xz}
work=$(mktemp -d "${TMPDIR:-/tmp}/fa-jit.XXXXXX")
log_dir=${FA_LOG_DIR:-${TMPDIR:-/tmp}/fa-jit-check-logs}
export FLASHMLIR_CACHE_DIR=${FLASHMLIR_CACHE_DIR:-$work/cache}
bin=$work/fa-gpu-check-jit
trap 'rm -rf "$work"' EXIT

[ -f "$packed" ] || { echo "jit-check: $packed not found (run scripts/gpu/make-jit.sh here and carry .gpu-carry)"; exit 1; }
if command -v xz >/dev/null; then
  xz -dc "$packed" >"$bin" || { echo "jit-check: cannot unpack $packed"; exit 1; }
else
  python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' \
    "$packed" "$bin" || { echo "jit-check: cannot unpack $packed"; exit 1; }
fi
chmod +x "$bin"
if ! "$bin" --help >/dev/null 2>&1; then
  echo "jit-check: the binary does not start here (it needs glibc >= 2.35):"
  "$bin" --help 2>&1 | head -n 3
  exit 1
fi
manifest=$(dirname "$packed")/MANIFEST
if [ -f "$manifest" ]; then
  want=$(sed -n 's/^sha256 //p' "$manifest")
  have=$(sha256sum "$bin" | cut -d' ' -f1)
  [ "$want" = "$have" ] || { echo "jit-check: sha256 mismatch ($have, manifest $want)"; exit 1; }
  echo "== $(tr '\n' ' ' <"$manifest")"
fi
echo "== ldd: $(ldd "$bin" 2>&1 | awk '{print $1}' | tr '\n' ' ')"
echo "== kernel cache: $FLASHMLIR_CACHE_DIR"
mkdir -p "$log_dir"

# name | fa-gpu-check-jit config flags
configs() {
  cat <<'CONFIGS'
d128_gqa_n1000              --dtype bf16 --batch 2 --heads-q 8 --heads-kv 2 --seq-q 1000 --seq-kv 1000 --head-dim 128
d128_gqa_n1000_causal       --dtype bf16 --batch 2 --heads-q 8 --heads-kv 2 --seq-q 1000 --seq-kv 1000 --head-dim 128 --causal
d64_gqa_nq77_nk1000_causal  --dtype bf16 --batch 2 --heads-q 8 --heads-kv 2 --seq-q 77 --seq-kv 1000 --head-dim 64 --causal
d64_mqa_nq1000_nk300_f16    --dtype f16 --batch 1 --heads-q 8 --heads-kv 1 --seq-q 1000 --seq-kv 300 --head-dim 64
d128_nq500_nk700_window_cap --dtype bf16 --batch 1 --heads-q 4 --heads-kv 2 --seq-q 500 --seq-kv 700 --head-dim 128 --window 64,16 --softcap 30
d256_n1000_causal_f16       --dtype f16 --batch 1 --heads-q 2 --seq-q 1000 --head-dim 256 --block-kv 32 --causal
d64_gqa_n333_cubin_entry    --dtype bf16 --batch 2 --heads-q 4 --heads-kv 2 --seq-q 333 --head-dim 64 --causal --format cubin
CONFIGS
}

failures=0
results=()
field() {
  local v
  v=$(sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2")
  echo "${v:--}"
}
while read -r name flags; do
  [ -z "$name" ] && continue
  row="$name"
  for run in 1 2; do
    # shellcheck disable=SC2086
    line=$("$bin" --jit --name "$name" $flags ${FA_JIT_ARGS:-} \
      2>"$log_dir/$name.$run.log" | grep -E '^(PASS|FAIL) ' | tail -n1)
    rc=${PIPESTATUS[0]}
    [ -n "$line" ] || line="FAIL $name reason=\"no verdict (exit $rc); see $log_dir/$name.$run.log\""
    echo "$line"
    want=miss
    [ $run = 2 ] && want=hit
    cache=$(field cache "$line")
    if [ "$rc" -ne 0 ] || [[ $line != PASS* ]]; then
      failures=$((failures + 1))
    elif [ "$cache" != "$want" ]; then
      echo "   expected cache=$want on run $run, got cache=$cache"
      failures=$((failures + 1))
    fi
    row="$row ${line%% *} $(field err_o "$line") $cache $(field jit_ms "$line")"
  done
  results+=("$row")
done < <(configs)

# A kernel compiled ahead of time (--emit writes PTX + .meta, as fa-compile
# does) loads and checks through the AOT path of the same binary.
echo "== ahead-of-time: --emit, then --ptx/--meta --cache"
aot=$work/aot_d128_causal
aot_ok=1
"$bin" --jit --dtype bf16 --batch 1 --heads-q 4 --seq-q 256 --seq-kv 512 \
  --head-dim 128 --causal --emit "$aot" >"$log_dir/aot.emit.log" 2>&1 || aot_ok=0
line=$("$bin" --ptx "$aot.ptx" --meta "$aot.meta" --cache 2>"$log_dir/aot.log" |
  grep -E '^(PASS|FAIL) ' | tail -n1)
rc=${PIPESTATUS[0]}
echo "${line:-FAIL aot (no verdict, exit $rc; see $log_dir/aot.log)}"
[ "$aot_ok" = 1 ] && [ "$rc" -eq 0 ] && [[ $line == PASS* ]] || failures=$((failures + 1))

echo
echo "== summary (run 1 compiles, run 2 loads the cached cubin or PTX)"
printf '%-28s | %-4s %-10s %-5s %-9s | %-4s %-10s %-5s %-9s\n' CONFIG RUN1 ERR_O CACHE JIT_MS RUN2 ERR_O CACHE JIT_MS
for row in "${results[@]}"; do
  # shellcheck disable=SC2086
  printf '%-28s | %-4s %-10s %-5s %-9s | %-4s %-10s %-5s %-9s\n' $row
done
echo
if [ "$failures" -ne 0 ]; then
  echo "jit-check: $failures failure(s) (logs: $log_dir)"
  exit 1
fi
echo "jit-check: all passed"
