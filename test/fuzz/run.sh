#!/usr/bin/env bash
# Runs one libFuzzer target of test/fuzz on its seed corpus.
#
#   run.sh [--smoke] FUZZER RUNS WORKDIR [libFuzzer flags...]
#
# Seeds: test/fuzz/corpus/<target>/ and, where the project has inputs of the
# kind, those (seeds.py): the .mlir files of examples/ and test/ split at
# `// -----`, fa-compile's command lines from the lit tests. New inputs the
# run finds are kept in WORKDIR/found for the next run; --smoke (the suite's
# bounded runs) starts from the seeds alone with a fixed seed, so that each
# suite run does the same work. Scratch files (caches) go to WORKDIR/tmp.
# The exit status is libFuzzer's: non-zero on a crash, a sanitizer report,
# a leak, a timeout or a broken invariant.
set -euo pipefail
smoke=0
if [ "${1:-}" = --smoke ]; then
  smoke=1
  shift
fi
fuzzer=$1 runs=$2 work=$3
shift 3
src=$(cd "$(dirname "$0")/../.." && pwd)
name=$(basename "$fuzzer")

seeds=$work/seeds found=$work/found scratch=$work/tmp
rm -rf "$seeds" "$scratch"
[ "$smoke" = 1 ] && rm -rf "$found"
mkdir -p "$seeds" "$found" "$scratch"
if [ -d "$src/test/fuzz/corpus/$name" ]; then
  cp "$src/test/fuzz/corpus/$name"/* "$seeds"/
fi
python3 "$src/test/fuzz/seeds.py" "$name" "$src" "$seeds"

flags=(-runs="$runs" -timeout=120 -rss_limit_mb=4096 -print_final_stats=1
       -artifact_prefix="$work/")
dict=$src/test/fuzz/$name.dict
case $name in
  ConfigFuzzer | CApiFuzzer) dict=$src/test/fuzz/FuzzValues.dict ;;
esac
[ -f "$dict" ] && flags+=(-dict="$dict")
[ "$smoke" = 1 ] && flags+=(-seed=1)
# LLVM's BumpPtrAllocator poisons its slabs for ASan in instrumented code
# and unpoisons what it hands out; with MLIR's uninstrumented copies of the
# same inline functions in the link, that makes false reports: ignore manual
# poisoning (ASan's own checks stay).
export ASAN_OPTIONS=allow_user_poisoning=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}
echo "fuzz: $name, $runs runs, $(ls "$seeds" | wc -l) seeds, $(ls "$found" | wc -l) found before"
# New units go to the first corpus directory: found/, not the seeds.
status=0
TMPDIR="$scratch" "$fuzzer" "${flags[@]}" "$@" "$found" "$seeds" \
  >"$work/log" 2>&1 || status=$?
tail -n 25 "$work/log"
rm -rf "$scratch"
exit "$status"
