#!/usr/bin/env bash
# Prepares a GPU run of the Python checks and the benchmark: packs the
# flashmlir package with its self-contained library (make-python.sh), then
# compiles every kernel both need into .gpu-carry/bench-cache with that same
# library (PTX for sm_90), so the GPU machine loads
# them instead of spending minutes in the compiler.
#
#   scripts/gpu/make-bench.sh [flashmlir.bench options, e.g. --hdims 128]
#
# Then, on the GPU machine (carry .gpu-carry/python and .gpu-carry/bench-cache):
#   scripts/gpu/bench-python.sh [the same options]
set -euo pipefail
cd "$(dirname "$0")/../.."
bash scripts/gpu/make-python.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tar -C "$tmp" -xJf .gpu-carry/python/flashmlir-python.tar.xz
export PYTHONPATH=$tmp FLASHMLIR_CACHE_DIR=$PWD/.gpu-carry/bench-cache
unset FLASHMLIR_LIBRARY
python3 scripts/gpu/python-check.py --package "" --precompile
python3 -m flashmlir.bench --precompile --chip sm_90 "$@"
echo "make-bench: $(du -sh .gpu-carry/bench-cache | cut -f1) of kernels in .gpu-carry/bench-cache"
