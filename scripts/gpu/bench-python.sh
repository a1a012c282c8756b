#!/usr/bin/env bash
# On the GPU machine: the Python package's checks (python-check.py: forward
# and gradients vs float64 torch, finite differences) and then
# `python -m flashmlir.bench` with the given options, from the package and
# kernel cache that scripts/gpu/make-bench.sh prepared. Logs, JSON and the
# plot go to $OUT (default: docs/perf).
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-docs/perf}
work=$(mktemp -d)
tar -C "$work" -xJf .gpu-carry/python/flashmlir-python.tar.xz
cp -r .gpu-carry/bench-cache "$work/cache"
export PYTHONPATH=$work FLASHMLIR_CACHE_DIR=$work/cache PYTHONUNBUFFERED=1
unset FLASHMLIR_LIBRARY
status=0
python3 scripts/gpu/python-check.py --package "" 2>&1 |
  tee "$out/python-check-$(date +%F).log" || status=1
python3 -m flashmlir.bench --out "$out" "$@" 2>&1 | tee "$out/bench-$(date +%F).log" ||
  status=1
exit $status
