#!/usr/bin/env bash
# README command 2: set up, build and run every test suite (lit + GoogleTest
# + Python, under ctest), then the same suite under ASan + UBSan with a
# bounded run of each libFuzzer target (scripts/sanitize.sh). That second
# build is configured outside the source tree, so it is also the check that
# no test relies on the build being build/ under the sources (issue 13;
# scripts/out-of-tree.sh repeats the plain build elsewhere on demand): one
# extra build instead of two (CI's measured time: docs/robustness.md).
# Exits non-zero on any failure.
# FA_TEST_STEPS=main runs only the first (the build/ suite).
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
step bash test/python/wheel-check.sh
if [ "${FA_TEST_STEPS:-all}" = main ]; then
  exit 0
fi
# One directory per checkout, kept between runs: ccache serves the rebuilds.
id=$(printf '%s' "$PWD" | cksum | cut -d' ' -f1)
step env FA_SANITIZE_DIR="${FA_SANITIZE_DIR:-${TMPDIR:-/tmp}/flashmlir-sanitize-$id}" \
  bash scripts/sanitize.sh
