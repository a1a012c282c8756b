#!/usr/bin/env bash
# README command 1: set up a fresh machine, build, and run the main job:
#  1. the example forward and backward through fa-opt's tiling pipeline
#     (tiled online-softmax IR, then the host lowering);
#  2. fa-compile: the same examples to GPU kernels, PTX and (with ptxas)
#     cubin, with their launch metadata, in build/examples/;
#  3. on a machine with an NVIDIA GPU: run the kernels and report their error
#     against the fp64 reference.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
out=build/examples
mkdir -p "$out"

for example in examples/attention_forward.mlir examples/attention_backward.mlir; do
  name=$(basename "$example" .mlir)
  ./build/bin/fa-opt "$example" -fa-tile-and-decompose="block-q=64 block-kv=64" \
    -o "$out/$name.tiled.mlir"
  llvm_ops=$(./build/bin/fa-opt "$example" -fa-tile-and-decompose -fa-lower-to-host-llvm |
    grep -c 'llvm\.' || true)
  echo "== $example: tiled IR in $out/$name.tiled.mlir" \
    "($(grep -c 'linalg.generic' "$out/$name.tiled.mlir") tile-sized linalg.generic ops," \
    "$(grep -c 'scf.for' "$out/$name.tiled.mlir") KV/Q block loops); host lowering: $llvm_ops LLVM ops"
  ./build/bin/fa-compile "$example" --emit=ptx -o "$out/$name"
  echo "   GPU kernel: $out/$name.ptx ($(grep -c '^\.visible \.entry' "$out/$name.ptx") entries)," \
    "launch metadata: $out/$name.meta"
  if ./build/bin/fa-compile "$example" --emit=cubin -o "$out/$name" 2>"$out/$name.cubin.log"; then
    echo "   cubin (ptxas): $out/$name.cubin ($(stat -c %s "$out/$name.cubin") bytes)"
  else
    echo "   no cubin: $(tail -n 1 "$out/$name.cubin.log") (PTX still loads through the driver JIT)"
  fi
done
sed -n '1,40p' "$out/attention_forward.tiled.mlir"
echo "   ... ($(wc -l <"$out/attention_forward.tiled.mlir") lines)"

# On a GPU machine: run and check the kernels.
if ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1' && nvidia-smi >/dev/null 2>&1; then
  echo "== GPU found: checking the forward kernel against the fp64 reference"
  ./build/bin/fa-gpu-check --ptx "$out/attention_forward.ptx" --meta "$out/attention_forward.meta"
  if python3 -c 'import torch, triton' 2>/dev/null; then
    mkdir -p "$out/bwd" && cp "$out"/attention_backward.{ptx,meta} "$out/bwd/"
    python3 scripts/gpu/bench.py "$out/bwd" --check-only --json "$out/bwd/check.json"
  else
    echo "   (backward check needs python3 with torch and triton)"
  fi
else
  echo "== no GPU here: kernels compiled, not run (scripts/gpu/check.sh runs them on one)"
fi
