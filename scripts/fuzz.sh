#!/usr/bin/env bash
# Runs the libFuzzer targets of test/fuzz longer than the suite's smoke runs
# (docs/robustness.md records the runs). They are built in the ASan + UBSan
# build (scripts/sanitize.sh, build-sanitize/); inputs found are kept in
# build-sanitize/fuzz/<target>/found for the next run.
#
#   scripts/fuzz.sh [RUNS] [TARGET...]    default 1000000 runs, every target
#
# FA_FUZZ_SECONDS caps each target's time (libFuzzer -max_total_time);
# FA_FUZZ_JOBS builds with that many jobs (default 1). Exits non-zero on a
# crash, a sanitizer report, a broken invariant or a build failure.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-1000000}
shift || true
dir=${FA_SANITIZE_DIR:-build-sanitize}
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(MetadataFuzzer KernelCacheFuzzer MlirInputFuzzer CompileFlagsFuzzer
           ConfigFuzzer CApiFuzzer)
fi
FA_SANITIZE_JOBS=${FA_FUZZ_JOBS:-1} bash scripts/sanitize.sh --build-only \
  "${targets[@]}"
extra=()
[ -n "${FA_FUZZ_SECONDS:-}" ] && extra+=(-max_total_time="$FA_FUZZ_SECONDS")
status=0
for name in "${targets[@]}"; do
  start=$(date +%s)
  bash test/fuzz/run.sh "$dir/bin/fuzz/$name" "$runs" "$dir/fuzz/$name" \
    "${extra[@]}" || status=1
  echo "== $name: $(($(date +%s) - start)) s"
done
exit "$status"
