#!/usr/bin/env bash
# Compiles the GPU check matrix with fa-compile (here, where MLIR is) into
# .gpu-carry/kernels/NAME.{ptx,meta}; scripts/gpu/check.sh runs them on the
# GPU machine. Usage: scripts/gpu/make-kernels.sh [OUT_DIR] [CHIP]
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-.gpu-carry/kernels}
chip=${2:-sm_90}
compile=${FA_COMPILE:-build/bin/fa-compile}
mkdir -p "$out"
rm -f "$out"/*.ptx "$out"/*.meta

# name                      flags
while read -r name flags; do
  [ -z "$name" ] && continue
  case "$name" in \#*) continue ;; esac
  # shellcheck disable=SC2086
  "$compile" --chip="$chip" --entry="$name" $flags -o "$out/$name"
done <<'MATRIX'
d64_n1_bf16                 --dtype=bf16 --batch=1 --heads-q=2 --seq-q=1 --head-dim=64
d64_n77_causal_gqa_bf16     --dtype=bf16 --batch=2 --heads-q=8 --heads-kv=2 --seq-q=77 --head-dim=64 --causal
d64_n77_f16                 --dtype=f16 --batch=1 --heads-q=4 --seq-q=77 --head-dim=64
d64_n4096_causal_gqa_f16    --dtype=f16 --batch=1 --heads-q=8 --heads-kv=2 --seq-q=4096 --head-dim=64 --causal
d128_n1000_bf16             --dtype=bf16 --batch=1 --heads-q=4 --seq-q=1000 --head-dim=128
d128_n1000_causal_f16       --dtype=f16 --batch=1 --heads-q=4 --seq-q=1000 --head-dim=128 --causal
d128_nq77_nk1000_causal     --dtype=bf16 --batch=1 --heads-q=4 --seq-q=77 --seq-kv=1000 --head-dim=128 --causal
d128_nq1000_nk77_causal     --dtype=bf16 --batch=1 --heads-q=4 --seq-q=1000 --seq-kv=77 --head-dim=128 --causal
d128_n1000_window_f16       --dtype=f16 --batch=1 --heads-q=4 --seq-q=1000 --head-dim=128 --window=64,64
d128_n1000_softcap_bf16     --dtype=bf16 --batch=1 --heads-q=4 --seq-q=1000 --head-dim=128 --softcap=30 --causal
d128_dv64_n1000_bf16        --dtype=bf16 --batch=1 --heads-q=4 --seq-q=1000 --head-dim=128 --head-dim-v=64
d128_n4096_causal_gqa_bf16  --dtype=bf16 --batch=1 --heads-q=8 --heads-kv=2 --seq-q=4096 --head-dim=128 --causal
d256_n1000_bf16             --dtype=bf16 --batch=1 --heads-q=2 --seq-q=1000 --head-dim=256 --block-kv=32
d256_n4096_causal_f16       --dtype=f16 --batch=1 --heads-q=2 --seq-q=4096 --head-dim=256 --block-kv=32 --causal
MATRIX
ls "$out" | wc -l
