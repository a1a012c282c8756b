#!/usr/bin/env bash
# README command 2: set up, build and run every test suite (lit + GoogleTest)
# under ctest. Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -j "$(nproc)"
