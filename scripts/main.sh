#!/usr/bin/env bash
# README command 1: set up a fresh machine, build, and run the main job:
# compile the example attention forward + backward through the tiling
# pipeline and show the tiled IR, then lower it for the host.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
EXAMPLE=${1:-examples/attention_fwd_bwd.mlir}
echo "== $EXAMPLE -> tiled, online-softmax IR (fa-tile-and-decompose) =="
./build/bin/fa-opt "$EXAMPLE" -fa-tile-and-decompose="block-q=64 block-kv=64"
echo "== host LLVM dialect (fa-lower-to-host-llvm): $(./build/bin/fa-opt "$EXAMPLE" \
  -fa-tile-and-decompose -fa-lower-to-host-llvm | grep -c 'llvm\.') LLVM ops =="
