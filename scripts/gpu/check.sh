#!/usr/bin/env bash
# Checks fa-compile kernels on a GPU machine (which has cmake, ninja, g++ and
# the CUDA toolkit but no MLIR). Run from anywhere in the repo:
#
#   scripts/gpu/check.sh [KERNEL_DIR...]     # default: .gpu-carry/kernels
#   scripts/gpu/check.sh .gpu-carry/kernels .gpu-carry/bwd   # fwd + bwd
#
# Every directory may hold kernels of both kinds: fa-gpu-check reads `kind`
# from each .meta and checks a forward kernel (O, LSE) or a backward kernel
# set (dQ, dK, dV via attentionBackward) accordingly.
#
# 1. Builds the runtime-only tree (cmake -G Ninja -DFA_RUNTIME_ONLY=ON -B
#    build-gpu; ninja -C build-gpu). The runtime reads .meta files with the
#    header-only nlohmann-json: installed, or else a copy of its headers in
#    .gpu-carry/nlohmann-json (on the dev machine, which has Debian's
#    nlohmann-json3-dev: mkdir -p .gpu-carry/nlohmann-json &&
#    cp -r /usr/include/nlohmann .gpu-carry/nlohmann-json/; carry
#    .gpu-carry).
# 2. Runs the runtime unit tests (their GPU tests run here), if GoogleTest was
#    available to the build: installed, or sources in .gpu-carry/googletest
#    (copy /usr/src/googletest there on the dev machine and carry .gpu-carry).
# 3. Runs fa-gpu-check on every KERNEL_DIR/*.ptx with its .meta, smallest
#    problem first (all directories together), and prints a summary table.
# 4. With FA_SANITIZE=1, runs the smallest kernel of each kind under
#    compute-sanitizer --tool memcheck.
#
# Environment:
#   FA_CHECK_ARGS      extra fa-gpu-check arguments, e.g. "--bench --iters 50"
#   FA_SANITIZE=1      also run compute-sanitizer memcheck on the first kernel
#   FA_SKIP_BUILD=1    reuse an existing build-gpu
#   FA_SKIP_UNITTESTS=1  do not run the unit tests
#   FA_BUILD_DIR       build directory (default build-gpu)
#   FA_LOG_DIR         per-kernel logs (default $FA_BUILD_DIR/gpu-check-logs)
#   FA_RUNTIME_SHAPES  the calls (B,NQ,NKV ...) a kernel with runtime shapes
#                      ("runtime_shapes": true) is checked at, a verdict each
#   FA_VARLEN_SEQLENS  the batches of packed sequences (Q:K,Q:K,... each) a
#                      varlen kernel ("varlen": true) is checked on, a verdict
#                      each
#
# Exit status: 0 if everything passed, 1 otherwise.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1

kernel_dirs=("$@")
[ ${#kernel_dirs[@]} -eq 0 ] && kernel_dirs=(.gpu-carry/kernels)
build_dir=${FA_BUILD_DIR:-build-gpu}
log_dir=${FA_LOG_DIR:-$build_dir/gpu-check-logs}
failures=0

if [ "${FA_SKIP_BUILD:-0}" != 1 ]; then
  echo "== building runtime-only tree in $build_dir"
  mkdir -p "$build_dir"
  json_args=()
  [ -f .gpu-carry/nlohmann-json/nlohmann/json.hpp ] &&
    json_args=(-DFA_NLOHMANN_JSON_INCLUDE_DIR="$PWD/.gpu-carry/nlohmann-json")
  cmake -G Ninja -S . -B "$build_dir" -DFA_RUNTIME_ONLY=ON \
    -DCMAKE_BUILD_TYPE=Release ${json_args[@]+"${json_args[@]}"} \
    >"$build_dir/configure.log" 2>&1 ||
    { cat "$build_dir/configure.log"; echo "check.sh: cmake failed"; exit 1; }
  ninja -C "$build_dir" || { echo "check.sh: build failed"; exit 1; }
fi
tool=$build_dir/bin/fa-gpu-check
[ -x "$tool" ] || { echo "check.sh: $tool not built"; exit 1; }

if [ "${FA_SKIP_UNITTESTS:-0}" != 1 ]; then
  if [ -x "$build_dir/unittests/Runtime/FARuntimeTests" ]; then
    echo "== runtime unit tests"
    if ! ctest --test-dir "$build_dir" --output-on-failure -j4 >"$build_dir/ctest.log" 2>&1; then
      cat "$build_dir/ctest.log"
      echo "check.sh: unit tests FAILED"
      failures=$((failures + 1))
    fi
    tail -n 3 "$build_dir/ctest.log" | sed '/^$/d'
    skipped=$(grep -c '(Skipped)' "$build_dir/ctest.log" || true)
    [ "$skipped" != 0 ] && echo "   ($skipped tests skipped)"
  else
    echo "== runtime unit tests not built (no GoogleTest); skipping"
  fi
fi

# Kernels, smallest problem (B*Hq*Nq*Nk*(D+Dv)) first.
shopt -s nullglob
ptx_files=()
for dir in "${kernel_dirs[@]}"; do
  dir_files=("$dir"/*.ptx)
  if [ ${#dir_files[@]} -eq 0 ]; then
    echo "check.sh: no *.ptx files in $dir"
    exit 1
  fi
  ptx_files+=("${dir_files[@]}")
done
# A top-level key of a .meta file (JSON; python3 reads it, jq may be
# missing): true/false as 1/0, nothing where the key is absent.
meta_value() {
  python3 -c 'import json, sys
v = json.load(open(sys.argv[1])).get(sys.argv[2], "")
print(int(v) if isinstance(v, bool) else v)' "$1" "$2"
}
# --shape arguments for a kernel with runtime shapes (none otherwise).
runtime_shapes=${FA_RUNTIME_SHAPES:-1,1,1 2,77,77 1,77,1000 1,1000,77 3,1000,1000 1,4096,4096}
shape_args() {
  [ "$(meta_value "$1" runtime_shapes)" = 1 ] || return 0
  [ "$(meta_value "$1" varlen)" = 1 ] && return 0
  for shape in ${2:-$runtime_shapes}; do printf -- '--shape %s ' "$shape"; done
}
# Packed sequences ("varlen": true): each set (Q:K lengths, comma-separated) is
# one call and one verdict.
varlen_sets=${FA_VARLEN_SEQLENS:-0:0,1:1,17:17,1000:1000,4097:4097 70:20,5:90,33:0,129:1,1:130 300:300,0:7,2000:100,128:128,64:4000}
is_varlen() { [ "$(meta_value "$1" varlen)" = 1 ]; }
sorted=()
while IFS= read -r line; do sorted+=("${line#* }"); done < <(
  for ptx in "${ptx_files[@]}"; do
    meta=${ptx%.ptx}.meta
    size=0
    if [ -f "$meta" ]; then
      # B * Hq * Nq * Nkv * (D + Dv); 0 for a kernel without them (runtime
      # shapes, a quantization).
      size=$(python3 -c 'import json, sys
m = json.load(open(sys.argv[1]))
n = [m.get(k, 0) for k in ("batch", "heads_q", "seq_q", "seq_kv")]
print(n[0] * n[1] * n[2] * n[3] * (m.get("head_dim", 0) + m.get("head_dim_v", 0)))' "$meta")
    fi
    echo "$size $ptx"
  done | sort -n -k1,1)

mkdir -p "$log_dir"
echo "== fa-gpu-check on ${#sorted[@]} kernel(s) from ${kernel_dirs[*]} (logs: $log_dir)"
results=()
for ptx in "${sorted[@]}"; do
  name=$(basename "${ptx%.ptx}")
  meta=${ptx%.ptx}.meta
  if [ ! -f "$meta" ]; then
    results+=("FAIL $name reason=\"no $meta\"")
    failures=$((failures + 1))
    continue
  fi
  # One verdict line per call (several for a kernel with runtime shapes).
  if is_varlen "$meta"; then
    verdicts= rc=0
    : >"$log_dir/$name.log"
    for set in $varlen_sets; do
      # shellcheck disable=SC2086
      v=$("$tool" --ptx "$ptx" --meta "$meta" --seqlens "$set" \
        ${FA_CHECK_ARGS:-} 2>>"$log_dir/$name.log" | grep -E '^(PASS|FAIL) ')
      r=${PIPESTATUS[0]}
      [ -n "$v" ] || v="FAIL $name reason=\"no verdict for --seqlens $set (exit $r)\""
      [ "$r" -eq 0 ] || rc=$r
      verdicts+="$v seqlens=$set"$'\n'
    done
    verdicts=${verdicts%$'\n'}
  else
  # shellcheck disable=SC2086
  verdicts=$("$tool" --ptx "$ptx" --meta "$meta" $(shape_args "$meta") \
    ${FA_CHECK_ARGS:-} 2>"$log_dir/$name.log" | grep -E '^(PASS|FAIL) ')
  rc=${PIPESTATUS[0]}
  fi
  [ -n "$verdicts" ] || verdicts="FAIL $name reason=\"no verdict (exit $rc); see $log_dir/$name.log\""
  [ "$rc" -eq 0 ] || failures=$((failures + 1))
  while IFS= read -r line; do
    [ "$rc" -ne 0 ] || [[ $line == PASS* ]] || failures=$((failures + 1))
    echo "$line"
    results+=("$line")
  done <<<"$verdicts"
done

echo
echo "== summary"
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"; }
# Forward: ERRORS = o,lse; backward: dq,dk,dv.
printf '%-6s %-48s %-4s %-32s %-10s %-8s\n' RESULT KERNEL KIND ERRORS MS TFLOPS
for line in "${results[@]}"; do
  read -r verdict name _ <<<"$line"
  if [[ $line == *" err_dq="* ]]; then
    kind=bwd
    errors="$(field err_dq "$line"),$(field err_dk "$line"),$(field err_dv "$line")"
  else
    kind=fwd
    errors="$(field err_o "$line"),$(field err_lse "$line")"
  fi
  printf '%-6s %-48s %-4s %-32s %-10s %-8s\n' "$verdict" "$name" "$kind" \
    "$errors" "$(field ms "$line")" "$(field tflops "$line")"
  reason=$(sed -n 's/.* reason=\(.*\)/\1/p' <<<"$line")
  [ -n "$reason" ] && echo "       $reason"
done

if [ "${FA_SANITIZE:-0}" = 1 ]; then
  sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  # The smallest forward, backward and runtime-shapes kernel.
  for kind in forward backward runtime-shapes varlen; do
    first=
    for ptx in "${sorted[@]}"; do
      meta=${ptx%.ptx}.meta
      [ -f "$meta" ] || continue
      this=$(meta_value "$meta" kind)
      [ "$(meta_value "$meta" runtime_shapes)" = 1 ] && this=runtime-shapes
      is_varlen "$meta" && this=varlen
      [ "$this" = "$kind" ] && { first=$ptx; break; }
    done
    [ -n "$first" ] || continue
    echo
    echo "== compute-sanitizer memcheck on $(basename "$first") ($kind)"
    # shellcheck disable=SC2046
    if "$sanitizer" --tool memcheck --error-exitcode 3 \
        "$tool" --ptx "$first" --meta "${first%.ptx}.meta" --iters 1 \
        $(shape_args "${first%.ptx}.meta" "2,77,77 1,77,300 1,300,77") \
        $(is_varlen "${first%.ptx}.meta" && echo --seqlens 70:20,5:90,33:0,129:1,1:130) \
        >"$log_dir/sanitizer-$kind.log" 2>&1; then
      echo "memcheck: clean"
    else
      tail -n 30 "$log_dir/sanitizer-$kind.log"
      echo "memcheck: FAILED (full log: $log_dir/sanitizer-$kind.log)"
      failures=$((failures + 1))
    fi
  done
fi

echo
if [ "$failures" -ne 0 ]; then
  echo "check.sh: $failures failure(s)"
  exit 1
fi
echo "check.sh: all passed"
