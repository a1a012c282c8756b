#!/usr/bin/env bash
# Compiles GPU kernels with fa-compile (here, where MLIR is) for the GPU
# machine, which has no MLIR.
#   scripts/gpu/make-kernels.sh [OUT_DIR] [CHIP]          check matrix
#       -> .gpu-carry/kernels, run by scripts/gpu/check.sh
#   scripts/gpu/make-kernels.sh --bwd [OUT_DIR] [CHIP]    backward matrix
#       -> .gpu-carry/bwd, run by bench.py --check-only
#   scripts/gpu/make-kernels.sh --bwd-wgmma [OUT_DIR] [CHIP]  the WGMMA
#       backward's matrix -> .gpu-carry/bwdw, run by scripts/gpu/check.sh
#   scripts/gpu/make-kernels.sh --fp8 [OUT_DIR] [CHIP]    FP8 (e4m3) forward
#       matrix and its FA3-paper benchmark shapes -> .gpu-carry/fp8, run by
#       scripts/gpu/check.sh
#   scripts/gpu/make-kernels.sh --quantize [OUT_DIR] [CHIP]  fa.quantize's
#       kernels (.mlir written here, one fa.quantize each) -> .gpu-carry/quant,
#       run by scripts/gpu/quantize-check.py
#   scripts/gpu/make-kernels.sh --bench [OUT_DIR] [CHIP]  FA3-paper shapes
#       (16k tokens, hidden 2048), forward and backward -> .gpu-carry/bench,
#       run by bench.py
# FA_BENCH_DIMS / FA_BENCH_SEQS / FA_BENCH_CAUSAL (0, 1 or both) narrow the
# bench shapes; FA_BENCH_FLAGS adds fa-compile flags (e.g. block sizes) to
# every forward bench kernel, FA_BENCH_BWD_FLAGS to every backward one;
# FA_BENCH_DIRECTIONS="fwd" (or "bwd") compiles one direction only.
# In every mode, FA_MATRIX_MATCH (an extended regex) keeps the kernels whose
# names match it and FA_MATRIX_FLAGS adds fa-compile flags to each, e.g.
#   FA_MATRIX_MATCH=persistent FA_MATRIX_FLAGS=--q-buffers=2 \
#     scripts/gpu/make-kernels.sh .gpu-carry/kq2 sm_90
# CHIP sm_90a compiles the forward through the GPU tile level (WGMMA).
set -euo pipefail
cd "$(dirname "$0")/../.."
mode=check
case "${1:-}" in
  --bench) mode=bench; shift ;;
  --bwd) mode=bwd; shift ;;
  --bwd-wgmma) mode=bwd_wgmma; shift ;;
  --fp8) mode=fp8; shift ;;
  --quantize) mode=quantize; shift ;;
esac
default_out=.gpu-carry/kernels
[ "$mode" = bench ] && default_out=.gpu-carry/bench
[ "$mode" = bwd ] && default_out=.gpu-carry/bwd
[ "$mode" = bwd_wgmma ] && default_out=.gpu-carry/bwdw
[ "$mode" = fp8 ] && default_out=.gpu-carry/fp8
[ "$mode" = quantize ] && default_out=.gpu-carry/quant
out=${1:-$default_out}
chip=${2:-sm_90}
compile=${FA_COMPILE:-build/bin/fa-compile}
mkdir -p "$out"
rm -f "$out"/*.ptx "$out"/*.meta

check_matrix() {
  cat <<'MATRIX'
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
d128_n1000_causal_persistent7 --dtype=bf16 --batch=2 --heads-q=4 --seq-q=1000 --head-dim=128 --causal --persistent-blocks=7
d64_n77_gqa_persistent5     --dtype=f16 --batch=2 --heads-q=8 --heads-kv=2 --seq-q=77 --seq-kv=300 --head-dim=64 --persistent-blocks=5
d192_dv128_n1000_causal_bf16 --dtype=bf16 --batch=1 --heads-q=4 --heads-kv=2 --seq-q=1000 --head-dim=192 --head-dim-v=128 --causal
d192_n500_f16               --dtype=f16 --batch=2 --heads-q=2 --seq-q=500 --head-dim=192
d96_n1000_bf16              --dtype=bf16 --batch=1 --heads-q=4 --seq-q=1000 --head-dim=96
d96_n77_causal_gqa_f16      --dtype=f16 --batch=2 --heads-q=8 --heads-kv=2 --seq-q=77 --head-dim=96 --causal
d96_nq77_nk1000_causal      --dtype=bf16 --batch=1 --heads-q=4 --seq-q=77 --seq-kv=1000 --head-dim=96 --causal
d96_n1000_window_softcap    --dtype=bf16 --batch=1 --heads-q=4 --seq-q=1000 --head-dim=96 --window=100,30 --softcap=30
d96_n4096_causal_gqa_bf16   --dtype=bf16 --batch=1 --heads-q=8 --heads-kv=2 --seq-q=4096 --head-dim=96 --causal
d96_n1000_causal_persistent7 --dtype=bf16 --batch=2 --heads-q=4 --seq-q=1000 --head-dim=96 --causal --persistent-blocks=7
d96_dv64_n1000_f16          --dtype=f16 --batch=1 --heads-q=4 --seq-q=1000 --head-dim=96 --head-dim-v=64
d160_n1000_causal_bf16      --dtype=bf16 --batch=1 --heads-q=2 --seq-q=1000 --head-dim=160 --causal
d224_n500_gqa_f16           --dtype=f16 --batch=1 --heads-q=4 --heads-kv=2 --seq-q=500 --head-dim=224
d80_n1000_bf16              --dtype=bf16 --batch=1 --heads-q=4 --seq-q=1000 --head-dim=80
d80_n77_causal_gqa_f16      --dtype=f16 --batch=2 --heads-q=8 --heads-kv=2 --seq-q=77 --head-dim=80 --causal
d80_nq77_nk1000_causal      --dtype=bf16 --batch=1 --heads-q=4 --seq-q=77 --seq-kv=1000 --head-dim=80 --causal
d80_n1000_window_softcap    --dtype=bf16 --batch=1 --heads-q=4 --seq-q=1000 --head-dim=80 --window=100,30 --softcap=30
d80_n4096_causal_gqa_bf16   --dtype=bf16 --batch=1 --heads-q=8 --heads-kv=2 --seq-q=4096 --head-dim=80 --causal
d80_n1000_causal_persistent7 --dtype=bf16 --batch=2 --heads-q=4 --seq-q=1000 --head-dim=80 --causal --persistent-blocks=7
d80_dv48_n1000_f16          --dtype=f16 --batch=1 --heads-q=4 --seq-q=1000 --head-dim=80 --head-dim-v=48
d48_n1000_causal_bf16       --dtype=bf16 --batch=1 --heads-q=4 --seq-q=1000 --head-dim=48 --causal
d16_n300_causal_f16         --dtype=f16 --batch=2 --heads-q=2 --seq-q=300 --head-dim=16 --causal
d112_n1000_bf16             --dtype=bf16 --batch=1 --heads-q=4 --seq-q=1000 --head-dim=112
d144_n500_causal_f16        --dtype=f16 --batch=1 --heads-q=2 --seq-q=500 --head-dim=144 --causal
d240_n500_gqa_bf16          --dtype=bf16 --batch=1 --heads-q=4 --heads-kv=2 --seq-q=500 --head-dim=240
rt_d80_causal_bf16          --runtime-shapes --dtype=bf16 --heads-q=4 --heads-kv=2 --head-dim=80 --causal
vl_d80_causal_bf16          --varlen --dtype=bf16 --heads-q=4 --heads-kv=2 --head-dim=80 --causal
rt_d96_causal_bf16          --runtime-shapes --dtype=bf16 --heads-q=4 --heads-kv=2 --head-dim=96 --causal
vl_d96_causal_bf16          --varlen --dtype=bf16 --heads-q=4 --heads-kv=2 --head-dim=96 --causal
MATRIX
  # A block per tile where the compiler now picks the persistent grid
  # (tiles of up to 16 KV blocks).
  case "$chip" in
    sm_90|sm_90a) cat <<'MATRIX'
d128_n1000_causal_tile_per_block --dtype=bf16 --batch=1 --heads-q=4 --seq-q=1000 --head-dim=128 --causal --persistent-blocks=0
d64_n1000_window_tile_per_block --dtype=f16 --batch=1 --heads-q=4 --seq-q=1000 --head-dim=64 --window=100,30 --persistent-blocks=0
MATRIX
  esac
  # KV blocks that are not powers of two (a register repeat in the score
  # tiles): ragged last blocks, causal bands that cross them, GQA, window.
  case "$chip" in
    sm_90|sm_90a) cat <<'MATRIX'
d128_n1000_kv176_bf16       --dtype=bf16 --batch=1 --heads-q=4 --seq-q=1000 --head-dim=128 --block-kv=176
d128_n1000_causal_kv176_f16 --dtype=f16 --batch=1 --heads-q=4 --seq-q=1000 --head-dim=128 --causal --block-kv=176
d128_nq77_nk1000_causal_kv176 --dtype=bf16 --batch=1 --heads-q=4 --seq-q=77 --seq-kv=1000 --head-dim=128 --causal --block-kv=176
d128_nq1000_nk77_causal_kv176 --dtype=bf16 --batch=1 --heads-q=4 --seq-q=1000 --seq-kv=77 --head-dim=128 --causal --block-kv=176
d128_n1000_window_kv176_f16 --dtype=f16 --batch=1 --heads-q=4 --seq-q=1000 --head-dim=128 --window=100,30 --block-kv=176
d128_n1000_softcap_kv176    --dtype=bf16 --batch=1 --heads-q=4 --seq-q=1000 --head-dim=128 --softcap=30 --causal --block-kv=176
d128_n4096_gqa_kv176_bf16   --dtype=bf16 --batch=1 --heads-q=8 --heads-kv=2 --seq-q=4096 --head-dim=128 --block-kv=176
d128_n1000_persistent_kv176 --dtype=bf16 --batch=2 --heads-q=4 --seq-q=1000 --head-dim=128 --causal --persistent-blocks=7 --block-kv=176
d256_n1000_kv80_bf16        --dtype=bf16 --batch=1 --heads-q=2 --seq-q=1000 --head-dim=256 --block-kv=80
d256_n4096_causal_kv80_f16  --dtype=f16 --batch=1 --heads-q=2 --seq-q=4096 --head-dim=256 --causal --block-kv=80
d64_n1000_kv192_bf16        --dtype=bf16 --batch=1 --heads-q=4 --seq-q=1000 --head-dim=64 --block-kv=192
d64_n4096_causal_gqa_kv192  --dtype=f16 --batch=1 --heads-q=8 --heads-kv=2 --seq-q=4096 --head-dim=64 --causal --block-kv=192
rt_d128_causal_kv176_bf16   --runtime-shapes --dtype=bf16 --heads-q=8 --heads-kv=2 --head-dim=128 --causal --block-kv=176
MATRIX
  esac
  # Masks on whole KV blocks (static KV lengths that are multiples of the
  # block: keys_in_bounds tiles, the band masks and the sequence end does
  # not): causal with Nq != Nk, window, softcap, three warpgroups, 80 keys.
  case "$chip" in
    sm_90|sm_90a) cat <<'MATRIX'
d128_n2048_window_bf16      --dtype=bf16 --batch=1 --heads-q=4 --seq-q=2048 --head-dim=128 --window=300,40
d128_n2048_softcap_causal   --dtype=bf16 --batch=1 --heads-q=4 --seq-q=2048 --head-dim=128 --softcap=30 --causal
d128_nq640_nk1408_causal_kv176 --dtype=f16 --batch=1 --heads-q=4 --seq-q=640 --seq-kv=1408 --head-dim=128 --causal --block-kv=176
d64_n1536_causal_q192       --dtype=bf16 --batch=2 --heads-q=4 --seq-q=1536 --head-dim=64 --causal --block-q=192
d256_n1280_causal_kv80      --dtype=bf16 --batch=1 --heads-q=2 --seq-q=1280 --head-dim=256 --causal --block-kv=80
MATRIX
  esac
  # 192-row Q blocks on three compute warpgroups (a warp repeat in the
  # layouts): ragged Q blocks, causal bands across them, window, softcap,
  # GQA, the persistent grid, runtime shapes.
  case "$chip" in
    sm_90|sm_90a) cat <<'MATRIX'
d64_n1000_q192_bf16         --dtype=bf16 --batch=1 --heads-q=4 --seq-q=1000 --head-dim=64 --block-q=192 --block-kv=128
d64_n1000_causal_q192_f16   --dtype=f16 --batch=1 --heads-q=4 --seq-q=1000 --head-dim=64 --causal --block-q=192 --block-kv=128
d64_nq77_nk1000_causal_q192 --dtype=bf16 --batch=1 --heads-q=4 --seq-q=77 --seq-kv=1000 --head-dim=64 --causal --block-q=192 --block-kv=128
d64_nq1000_nk77_causal_q192 --dtype=bf16 --batch=1 --heads-q=4 --seq-q=1000 --seq-kv=77 --head-dim=64 --causal --block-q=192 --block-kv=128
d64_n1000_window_q192_f16   --dtype=f16 --batch=1 --heads-q=4 --seq-q=1000 --head-dim=64 --window=100,30 --block-q=192 --block-kv=128
d64_n1000_softcap_q192      --dtype=bf16 --batch=1 --heads-q=4 --seq-q=1000 --head-dim=64 --softcap=30 --causal --block-q=192 --block-kv=128
d64_n4096_causal_gqa_q192   --dtype=bf16 --batch=1 --heads-q=8 --heads-kv=2 --seq-q=4096 --head-dim=64 --causal --block-q=192 --block-kv=128
d64_n1000_persistent_q192   --dtype=bf16 --batch=2 --heads-q=4 --seq-q=1000 --head-dim=64 --causal --persistent-blocks=7 --block-q=192 --block-kv=128
d64_n1000_q192_kv192        --dtype=bf16 --batch=1 --heads-q=4 --seq-q=1000 --head-dim=64 --block-q=192 --block-kv=192
rt_d64_causal_q192_bf16     --runtime-shapes --dtype=bf16 --heads-q=8 --heads-kv=2 --head-dim=64 --causal --block-q=192 --block-kv=128
MATRIX
  esac
  # One kernel for every batch and length (the GPU tile level's kernels,
  # WGMMA or mma.sync): check.sh runs each at several shapes
  # ($FA_RUNTIME_SHAPES).
  cat <<'MATRIX'
rt_d128_causal_gqa_bf16     --runtime-shapes --dtype=bf16 --heads-q=8 --heads-kv=2 --head-dim=128 --causal
rt_d64_f16                  --runtime-shapes --dtype=f16 --heads-q=4 --head-dim=64
rt_d128_window_f16          --runtime-shapes --dtype=f16 --heads-q=4 --head-dim=128 --window=64,64
MATRIX
  # Packed sequences (varlen): check.sh runs each on several batches of
  # lengths ($FA_VARLEN_SEQLENS).
  cat <<'MATRIX'
vl_d64_causal_gqa_bf16      --varlen --dtype=bf16 --heads-q=8 --heads-kv=2 --head-dim=64 --causal
vl_d128_bf16                --varlen --dtype=bf16 --heads-q=4 --head-dim=128
vl_d128_causal_f16          --varlen --dtype=f16 --heads-q=4 --head-dim=128 --causal
vl_d128_window_bf16         --varlen --dtype=bf16 --heads-q=4 --heads-kv=2 --head-dim=128 --window=64,64
vl_d128_softcap_causal_bf16 --varlen --dtype=bf16 --heads-q=4 --head-dim=128 --softcap=30 --causal
vl_d128_dv64_bf16           --varlen --dtype=bf16 --heads-q=4 --head-dim=128 --head-dim-v=64
vl_d256_causal_bf16         --varlen --dtype=bf16 --heads-q=2 --head-dim=256 --causal
MATRIX
}

bwd_matrix() {
  cat <<'MATRIX'
bwd_d64_n1_bf16                --backward --dtype=bf16 --batch=1 --heads-q=2 --seq-q=1 --head-dim=64
bwd_d64_n77_causal_gqa_bf16    --backward --dtype=bf16 --batch=2 --heads-q=8 --heads-kv=2 --seq-q=77 --head-dim=64 --causal
bwd_d64_n1000_f16              --backward --dtype=f16 --batch=1 --heads-q=4 --seq-q=1000 --head-dim=64
bwd_d128_n1000_bf16            --backward --dtype=bf16 --batch=1 --heads-q=4 --seq-q=1000 --head-dim=128
bwd_d128_n1000_causal_f16      --backward --dtype=f16 --batch=1 --heads-q=4 --seq-q=1000 --head-dim=128 --causal
bwd_d128_nq77_nk1000_causal    --backward --dtype=bf16 --batch=1 --heads-q=4 --seq-q=77 --seq-kv=1000 --head-dim=128 --causal
bwd_d128_nq1000_nk77_causal    --backward --dtype=bf16 --batch=1 --heads-q=4 --seq-q=1000 --seq-kv=77 --head-dim=128 --causal
bwd_d128_n1000_window_f16      --backward --dtype=f16 --batch=1 --heads-q=4 --seq-q=1000 --head-dim=128 --window=64,64
bwd_d128_n1000_softcap_bf16    --backward --dtype=bf16 --batch=1 --heads-q=4 --seq-q=1000 --head-dim=128 --softcap=30 --causal
bwd_d128_dv64_n1000_bf16       --backward --dtype=bf16 --batch=1 --heads-q=4 --seq-q=1000 --head-dim=128 --head-dim-v=64
bwd_d128_n4096_causal_gqa_bf16 --backward --dtype=bf16 --batch=1 --heads-q=8 --heads-kv=2 --seq-q=4096 --head-dim=128 --causal
bwd_d256_n1000_bf16            --backward --dtype=bf16 --batch=1 --heads-q=2 --seq-q=1000 --head-dim=256
bwd_d128_q128_kv128_one_stage  --backward --dtype=bf16 --batch=1 --heads-q=4 --seq-q=1000 --head-dim=128 --causal --block-q=128 --block-kv=128
bwd_d192_q128_kv64_one_stage   --backward --dtype=f16 --batch=1 --heads-q=2 --heads-kv=1 --seq-q=300 --seq-kv=500 --head-dim=192 --block-q=128 --block-kv=64
bwd_d80_n1000_causal_bf16      --backward --dtype=bf16 --batch=1 --heads-q=4 --seq-q=1000 --head-dim=80 --causal
bwd_d160_n500_gqa_f16          --backward --dtype=f16 --batch=1 --heads-q=4 --heads-kv=2 --seq-q=500 --head-dim=160
bwd_d208_n300_bf16             --backward --dtype=bf16 --batch=1 --heads-q=2 --seq-q=300 --head-dim=208 --causal
bwd_d256_n1000_causal_f16      --backward --dtype=f16 --batch=1 --heads-q=2 --seq-q=1000 --head-dim=256 --causal
bwd_d128_q32_kv64_dq_col_split --backward --dtype=bf16 --batch=2 --heads-q=4 --heads-kv=2 --seq-q=777 --head-dim=128 --causal --block-q=32 --block-kv=64
bwd_d80_n300_gradlse_causal    --backward --dtype=bf16 --batch=2 --heads-q=4 --heads-kv=2 --seq-q=300 --seq-kv=500 --head-dim=80 --causal --grad-lse
MATRIX
}

# The WGMMA backward (sm_90a; head dims in multiples of 16 up to 256).
# FP8 forward: e4m3 inputs with per (batch, KV head) descales, O in bf16 or
# f16; ragged lengths, masks, GQA; then the FA3 paper's FP8 shapes (16k
# tokens, hidden 2048) at head dims 128 and 256.
fp8_matrix() {
  cat <<'MATRIX'
fp8_d128_n1000_bf16          --dtype=e4m3 --batch=1 --heads-q=4 --seq-q=1000 --head-dim=128
fp8_d128_n77_causal_gqa_f16  --dtype=e4m3 --out-dtype=f16 --batch=2 --heads-q=8 --heads-kv=2 --seq-q=77 --head-dim=128 --causal
fp8_d128_nq77_nk1000_causal  --dtype=e4m3 --batch=1 --heads-q=4 --seq-q=77 --seq-kv=1000 --head-dim=128 --causal
fp8_d128_nq1000_nk77_causal  --dtype=e4m3 --batch=1 --heads-q=4 --seq-q=1000 --seq-kv=77 --head-dim=128 --causal
fp8_d128_n1000_window_softcap --dtype=e4m3 --batch=1 --heads-q=4 --seq-q=1000 --head-dim=128 --window=100,30 --softcap=30
fp8_d256_n1000_bf16          --dtype=e4m3 --batch=1 --heads-q=2 --seq-q=1000 --head-dim=256
fp8_d256_n4096_causal_gqa_f16 --dtype=e4m3 --out-dtype=f16 --batch=1 --heads-q=4 --heads-kv=2 --seq-q=4096 --head-dim=256 --causal
MATRIX
  for d in 128 256; do
    for n in 2048 8192 16384; do
      for causal in 0 1; do
        flags="--dtype=e4m3 --batch=$((16384 / n)) --heads-q=$((2048 / d)) --seq-q=$n --head-dim=$d"
        name="fp8bench_d${d}_n${n}"
        [ $causal = 1 ] && { flags="$flags --causal"; name="${name}_causal"; }
        echo "$name $flags"
      done
    done
  done
}

bwd_wgmma_matrix() {
  cat <<'MATRIX'
bwdw_d64_n1_bf16                --dtype=bf16 --batch=1 --heads-q=2 --seq-q=1 --head-dim=64
bwdw_d64_n77_causal_gqa_bf16    --dtype=bf16 --batch=2 --heads-q=8 --heads-kv=2 --seq-q=77 --head-dim=64 --causal
bwdw_d64_n1000_f16              --dtype=f16 --batch=1 --heads-q=4 --seq-q=1000 --head-dim=64
bwdw_d128_n1000_bf16            --dtype=bf16 --batch=1 --heads-q=4 --seq-q=1000 --head-dim=128
bwdw_d128_n1000_causal_f16      --dtype=f16 --batch=1 --heads-q=4 --seq-q=1000 --head-dim=128 --causal
bwdw_d128_nq77_nk1000_causal    --dtype=bf16 --batch=1 --heads-q=4 --seq-q=77 --seq-kv=1000 --head-dim=128 --causal
bwdw_d128_nq1000_nk77_causal    --dtype=bf16 --batch=1 --heads-q=4 --seq-q=1000 --seq-kv=77 --head-dim=128 --causal
bwdw_d128_n1000_window_f16      --dtype=f16 --batch=1 --heads-q=4 --seq-q=1000 --head-dim=128 --window=64,64
bwdw_d128_n1000_softcap_bf16    --dtype=bf16 --batch=1 --heads-q=4 --seq-q=1000 --head-dim=128 --softcap=30 --causal
bwdw_d128_dv64_n1000_bf16       --dtype=bf16 --batch=1 --heads-q=4 --seq-q=1000 --head-dim=128 --head-dim-v=64
bwdw_d128_n4096_causal_gqa_bf16 --dtype=bf16 --batch=1 --heads-q=8 --heads-kv=2 --seq-q=4096 --head-dim=128 --causal
bwdw_d256_n1000_bf16            --dtype=bf16 --batch=1 --heads-q=2 --seq-q=1000 --head-dim=256
bwdw_d256_n1000_causal_f16      --dtype=f16 --batch=1 --heads-q=2 --seq-q=1000 --head-dim=256 --causal
bwdw_d256_nq77_nk500_causal_gqa --dtype=bf16 --batch=2 --heads-q=4 --heads-kv=2 --seq-q=77 --seq-kv=500 --head-dim=256 --causal
bwdw_d192_dv128_n1000_causal    --dtype=bf16 --batch=1 --heads-q=4 --seq-q=1000 --head-dim=192 --head-dim-v=128 --causal
bwdw_d192_nq77_nk500_gqa_f16    --dtype=f16 --batch=2 --heads-q=4 --heads-kv=2 --seq-q=77 --seq-kv=500 --head-dim=192
bwdw_d192_dv128_window_softcap  --dtype=bf16 --batch=1 --heads-q=2 --seq-q=1000 --head-dim=192 --head-dim-v=128 --window=100,30 --softcap=30
bwdw_d192_dv128_n4096_causal    --dtype=bf16 --batch=1 --heads-q=4 --heads-kv=1 --seq-q=4096 --head-dim=192 --head-dim-v=128 --causal
bwdw_d96_n1000_bf16             --dtype=bf16 --batch=1 --heads-q=4 --seq-q=1000 --head-dim=96
bwdw_d96_n77_causal_gqa_f16     --dtype=f16 --batch=2 --heads-q=8 --heads-kv=2 --seq-q=77 --head-dim=96 --causal
bwdw_d96_nq77_nk1000_causal     --dtype=bf16 --batch=1 --heads-q=4 --seq-q=77 --seq-kv=1000 --head-dim=96 --causal
bwdw_d96_n1000_window_softcap   --dtype=bf16 --batch=1 --heads-q=4 --seq-q=1000 --head-dim=96 --window=100,30 --softcap=30
bwdw_d96_n4096_causal_gqa_bf16  --dtype=bf16 --batch=1 --heads-q=8 --heads-kv=2 --seq-q=4096 --head-dim=96 --causal
bwdw_d160_n500_gqa_f16          --dtype=f16 --batch=1 --heads-q=4 --heads-kv=2 --seq-q=500 --head-dim=160
bwdw_d224_n300_causal_bf16      --dtype=bf16 --batch=1 --heads-q=2 --seq-q=300 --head-dim=224 --causal
bwdw_d80_n1000_bf16             --dtype=bf16 --batch=1 --heads-q=4 --seq-q=1000 --head-dim=80
bwdw_d80_n77_causal_gqa_f16     --dtype=f16 --batch=2 --heads-q=8 --heads-kv=2 --seq-q=77 --head-dim=80 --causal
bwdw_d80_nq77_nk1000_causal     --dtype=bf16 --batch=1 --heads-q=4 --seq-q=77 --seq-kv=1000 --head-dim=80 --causal
bwdw_d80_n1000_window_softcap   --dtype=bf16 --batch=1 --heads-q=4 --seq-q=1000 --head-dim=80 --window=100,30 --softcap=30
bwdw_d80_n4096_causal_gqa_bf16  --dtype=bf16 --batch=1 --heads-q=8 --heads-kv=2 --seq-q=4096 --head-dim=80 --causal
bwdw_d48_n1000_causal_bf16      --dtype=bf16 --batch=1 --heads-q=4 --seq-q=1000 --head-dim=48 --causal
bwdw_d16_n300_causal_f16        --dtype=f16 --batch=2 --heads-q=2 --seq-q=300 --head-dim=16 --causal
bwdw_d112_n1000_f16             --dtype=f16 --batch=1 --heads-q=4 --seq-q=1000 --head-dim=112
bwdw_d144_n500_causal_bf16      --dtype=bf16 --batch=1 --heads-q=2 --seq-q=500 --head-dim=144 --causal
bwdw_d240_n300_gqa_f16          --dtype=f16 --batch=1 --heads-q=4 --heads-kv=2 --seq-q=300 --head-dim=240
bwdw_vl_d64_causal_gqa_bf16     --varlen --dtype=bf16 --heads-q=4 --heads-kv=2 --head-dim=64 --causal
bwdw_vl_d64_f16                 --varlen --dtype=f16 --heads-q=2 --head-dim=64
bwdw_vl_d128_bf16               --varlen --dtype=bf16 --heads-q=2 --head-dim=128
bwdw_vl_d128_causal_gqa_f16     --varlen --dtype=f16 --heads-q=4 --heads-kv=2 --head-dim=128 --causal
bwdw_vl_d128_window_bf16        --varlen --dtype=bf16 --heads-q=2 --head-dim=128 --window=64,64
bwdw_vl_d128_softcap_causal     --varlen --dtype=bf16 --heads-q=2 --head-dim=128 --softcap=30 --causal
bwdw_vl_d128_dv64_bf16          --varlen --dtype=bf16 --heads-q=2 --head-dim=128 --head-dim-v=64
bwdw_vl_d256_causal_bf16        --varlen --dtype=bf16 --heads-q=2 --head-dim=256 --causal
bwdw_vl_d192_dv128_causal_gqa   --varlen --dtype=bf16 --heads-q=4 --heads-kv=2 --head-dim=192 --head-dim-v=128 --causal
bwdw_vl_d96_causal_f16          --varlen --dtype=f16 --heads-q=4 --heads-kv=2 --head-dim=96 --causal
bwdw_rt_d128_causal_gqa_bf16    --runtime-shapes --dtype=bf16 --heads-q=8 --heads-kv=2 --head-dim=128 --causal
bwdw_rt_d64_f16                 --runtime-shapes --dtype=f16 --heads-q=4 --head-dim=64
bwdw_rt_d256_window_bf16        --runtime-shapes --dtype=bf16 --heads-q=2 --head-dim=256 --window=64,64
bwdw_rt_d192_dv128_f16          --runtime-shapes --dtype=f16 --heads-q=2 --head-dim=192 --head-dim-v=128
bwdw_vl_d80_causal_f16          --varlen --dtype=f16 --heads-q=4 --heads-kv=2 --head-dim=80 --causal
bwdw_rt_d80_causal_bf16         --runtime-shapes --dtype=bf16 --heads-q=4 --heads-kv=2 --head-dim=80 --causal
bwdw_rt_d96_causal_bf16         --runtime-shapes --dtype=bf16 --heads-q=4 --heads-kv=2 --head-dim=96 --causal
bwdw_d64_n1000_gradlse_f16      --dtype=f16 --batch=2 --heads-q=4 --heads-kv=2 --seq-q=1000 --head-dim=64 --grad-lse
bwdw_d128_nq77_nk1000_gradlse   --dtype=bf16 --batch=1 --heads-q=4 --seq-q=77 --seq-kv=1000 --head-dim=128 --causal --softcap=30 --grad-lse
bwdw_d256_n500_gradlse_bf16     --dtype=bf16 --batch=1 --heads-q=2 --seq-q=500 --head-dim=256 --window=64,64 --grad-lse
bwdw_rt_d128_gradlse_bf16       --runtime-shapes --dtype=bf16 --heads-q=4 --heads-kv=2 --head-dim=128 --causal --grad-lse
MATRIX
}

bench_matrix() {
  for d in ${FA_BENCH_DIMS:-64 128 256}; do
    for n in ${FA_BENCH_SEQS:-512 2048 8192 16384}; do
      for causal in ${FA_BENCH_CAUSAL:-0 1}; do
        flags="--dtype=bf16 --batch=$((16384 / n)) --heads-q=$((2048 / d)) --seq-q=$n --head-dim=$d"
        name="fwd_d${d}_n${n}"
        [ $causal = 1 ] && { flags="$flags --causal"; name="${name}_causal"; }
        case "${FA_BENCH_DIRECTIONS:-fwd bwd}" in
          *fwd*) echo "$name $flags ${FA_BENCH_FLAGS:-}" ;;
        esac
        case "${FA_BENCH_DIRECTIONS:-fwd bwd}" in
          *bwd*) echo "${name/fwd/bwd} --backward $flags ${FA_BENCH_BWD_FLAGS:-}" ;;
        esac
      done
    done
  done
}

# name  dtype batch heads groups seq head_dim seed (- for no rotation);
# quantize_fp8acc_*: Q/K (rotated) and V of fp8-bench.py's accuracy shapes.
quantize_matrix() {
  cat <<'MATRIX'
quantize_d128_rot_bf16       bf16 2 16 16 1000 128 12345
quantize_d128_gqa_rot_f16    f16  2 16 4  777  128 7
quantize_d256_plain_bf16     bf16 1 8  8  4096 256 -
quantize_d256_rot_bf16       bf16 1 8  2  333  256 99
quantize_d64_rot_f16         f16  1 4  2  100  64  3
quantize_bench_d128_n16k_rot bf16 1 16 16 16384 128 1
quantize_bench_d256_n16k_rot bf16 1 16 16 16384 256 1
quantize_d192_plain_bf16     bf16 2 4  2  300  192 -
quantize_d192_plain_f16      f16  1 4  4  77   192 -
quantize_fp8acc_d128_rot     bf16 8 16 16 2048 128 2026
quantize_fp8acc_d128_plain   bf16 8 16 16 2048 128 -
quantize_fp8acc_d256_rot     bf16 8 8  8  2048 256 2026
quantize_fp8acc_d256_plain   bf16 8 8  8  2048 256 -
MATRIX
}

if [ "$mode" = quantize ]; then
  while read -r name dtype b h g n d seed; do
    [[ "$name" =~ ${FA_MATRIX_MATCH:-.} ]] || continue
    rotate=""
    [ "$seed" != - ] && rotate=" rotate(seed = $seed)"
    x="tensor<${b}x${h}x${n}x${d}x${dtype}>"
    q="tensor<${b}x${h}x${n}x${d}xf8E4M3FN>"
    s="tensor<${b}x${g}xf32>"
    printf '%s\n' "func.func @$name(%x: $x) -> ($q, $s) {" \
      "  %q, %s = fa.quantize %x$rotate : $x -> $q, $s" \
      "  return %q, %s : $q, $s" "}" > "$out/$name.mlir"
    "$compile" --chip="$chip" "$out/$name.mlir" -o "$out/$name"
  done < <(quantize_matrix)
  echo "make-kernels: $(ls "$out"/*.ptx | wc -l) kernels in $out"
  exit 0
fi

while read -r name flags; do
  [ -z "$name" ] && continue
  [[ "$name" =~ ${FA_MATRIX_MATCH:-.} ]] || continue
  # shellcheck disable=SC2086
  "$compile" --chip="$chip" --entry="$name" $flags ${FA_MATRIX_FLAGS:-} \
    -o "$out/$name"
done < <(case "$mode" in
           bench) bench_matrix ;;
           bwd) bwd_matrix ;;
           fp8) fp8_matrix ;;
           bwd_wgmma) bwd_wgmma_matrix |
                        sed 's/$/ --backward --backward-variant=wgmma/' ;;
           *) check_matrix ;;
         esac)
echo "make-kernels: $(ls "$out"/*.ptx | wc -l) kernels in $out"
