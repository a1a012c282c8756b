#!/usr/bin/env bash
# README command 2: set up, build and run every test suite (lit + GoogleTest
# + Python, under ctest), then the same suite under ASan + UBSan with a
# bounded run of each libFuzzer target (scripts/sanitize.sh), then from a
# build outside the source tree (scripts/out-of-tree.sh). Exits non-zero on
# any failure. FA_TEST_STEPS=main runs only the first (the build/ suite).
set -euo pipefail
cd "$(dirname "$0")/.."
step() {
  local start=$SECONDS
  echo "=== test.sh: $*"
  "$@"
  echo "=== test.sh: $* took $((SECONDS - start)) s"
}
step bash scripts/setup.sh
step bash scripts/build.sh
step ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -j "$(nproc)"
if [ "${FA_TEST_STEPS:-all}" = main ]; then
  exit 0
fi
step bash scripts/sanitize.sh
step bash scripts/out-of-tree.sh
