// RUN: fa-opt %s -split-input-file -fa-tile-attention-grad="block-q=64 block-kv=64 scale-grads-once" -canonicalize -cse -fa-convert-tiled-attention-grad-to-fagpu="mma-sync" -canonicalize -cse | FileCheck %s
// RUN: fa-opt %s -split-input-file -fa-tile-attention-grad="block-q=64 block-kv=64 scale-grads-once" -fa-convert-tiled-attention-grad-to-fagpu="mma-sync" | fa-opt -split-input-file -fa-convert-fagpu-to-nvvm | FileCheck %s --check-prefix=NVVM
// RUN: fa-opt %s -split-input-file -fa-tile-attention-grad="block-q=64 block-kv=128 scale-grads-once" -canonicalize -cse -fa-convert-tiled-attention-grad-to-fagpu="mma-sync" -canonicalize -cse | FileCheck %s --check-prefix=COLS
// RUN: not fa-opt %s -split-input-file -fa-tile-attention-grad="block-q=64 block-kv=64" -fa-convert-tiled-attention-grad-to-fagpu="mma-sync dq-reduction=bulk" 2>&1 | FileCheck %s --check-prefix=BULK
// RUN: not fa-opt %s -split-input-file -fa-tile-attention-grad="block-q=256 block-kv=64" -fa-convert-tiled-attention-grad-to-fagpu="mma-sync" 2>&1 | FileCheck %s --check-prefix=BLOCKS
// RUN: not fa-opt %s -split-input-file -fa-tile-attention-grad="block-q=64 block-kv=16" -fa-convert-tiled-attention-grad-to-fagpu="mma-sync" 2>&1 | FileCheck %s --check-prefix=KEYS

// The tiled backward on the GPU tile level in mma.sync layouts (FlashAttention
// 2's backward, the portable kernel): the same carrying as the WGMMA
// backward's, with S and dP computed transposed (Sᵀ = K Qᵀ, dPᵀ = V dOᵀ),
// 16 keys a warp (64 keys: 4 warps) in #fagpu.mma_sync_acc; LSE and delta per
// column of it; the softmax gradient elementwise in
// #fagpu.transposed<#fagpu.mma_sync_acc>. Pᵀ and dSᵀ are the accumulator of
// the transpose, register A operands (#fagpu.mma_sync_a) of dV += Pᵀ dO and
// dK += dSᵀ Q; dSᵀ goes to shared memory once for dQ = dS K (transpose_a:
// ldmatrix.trans), 16 query rows a warp, added into dq_acc with atomics.
// dK is scaled once after its sums.

// CHECK-LABEL: gpu.func @grad_mma_sync(
// CHECK-SAME: fa.block = array<i64: 128, 1, 1>
// CHECK-SAME: fa.grid = array<i64: 4, 2, 2>
// CHECK: %[[KS:.*]] = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
// CHECK: %[[VS:.*]] = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
// CHECK: %[[QS:.*]] = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
// CHECK: %[[DOS:.*]] = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
// CHECK: %[[DST:.*]] = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
// CHECK-NOT: fagpu.alloc_shared
// CHECK: fagpu.copy_to_shared {{.*}} into %[[KS]]
// CHECK: fagpu.copy_to_shared {{.*}} into %[[VS]]
// CHECK: %[[HEADS:.*]]:2 = scf.for {{.*}} -> (tensor<64x64xf32, #fagpu.mma_sync_acc<warps = 4>>, tensor<64x64xf32, #fagpu.mma_sync_acc<warps = 4>>)
// CHECK:   scf.for
// CHECK:     fagpu.copy_to_shared {{.*}} into %[[QS]]
// CHECK:     fagpu.copy_to_shared {{.*}} into %[[DOS]]
// CHECK:     %[[LSE:.*]] = fagpu.load_tile {{.*}} {padding = 0x7FF0000000000000 : f64} : {{.*}} -> tensor<64xf32, #fagpu.rows<#fagpu.transposed<#fagpu.mma_sync_acc<warps = 4>>>>
// CHECK:     %[[DELTA:.*]] = fagpu.load_tile {{.*}} -> tensor<64xf32, #fagpu.rows<#fagpu.transposed<#fagpu.mma_sync_acc<warps = 4>>>>
// CHECK:     %[[ST:.*]] = fagpu.mma %[[KS]], %[[QS]], %{{.*}} transpose_b : {{.*}} -> tensor<64x64xf32, #fagpu.mma_sync_acc<warps = 4>>
// CHECK:     %[[S:.*]] = fagpu.transpose %[[ST]] : tensor<64x64xf32, #fagpu.mma_sync_acc<warps = 4>> -> tensor<64x64xf32, #fagpu.transposed<#fagpu.mma_sync_acc<warps = 4>>>
// CHECK:     fagpu.expand_rows %[[LSE]]
// CHECK:     math.exp2 %{{.*}} : tensor<64x64xf32, #fagpu.transposed<#fagpu.mma_sync_acc<warps = 4>>>
// CHECK:     fagpu.tile_coords dim = 0 : tensor<64x64xindex, #fagpu.transposed<#fagpu.mma_sync_acc<warps = 4>>>
// CHECK:     %[[PT:.*]] = fagpu.transpose %{{.*}} : tensor<64x64xf32, #fagpu.transposed<#fagpu.mma_sync_acc<warps = 4>>> -> tensor<64x64xf32, #fagpu.mma_sync_acc<warps = 4>>
// CHECK:     %[[PTA:.*]] = fagpu.convert_layout %{{.*}} : tensor<64x64xbf16, #fagpu.mma_sync_acc<warps = 4>> -> tensor<64x64xbf16, #fagpu.mma_sync_a<warps = 4>>
// CHECK:     %[[DV:.*]] = fagpu.mma %[[PTA]], %[[DOS]], %{{.*}} : tensor<64x64xbf16, #fagpu.mma_sync_a<warps = 4>>, !fagpu.smem<64x64xbf16, swizzle = 128>
// CHECK:     %[[DPT:.*]] = fagpu.mma %[[VS]], %[[DOS]], %{{.*}} transpose_b
// CHECK:     fagpu.expand_rows %[[DELTA]]
// CHECK:     %[[DSB:.*]] = arith.truncf %{{.*}} : tensor<64x64xf32, #fagpu.mma_sync_acc<warps = 4>> to tensor<64x64xbf16, #fagpu.mma_sync_acc<warps = 4>>
// CHECK:     %[[DSA:.*]] = fagpu.convert_layout %[[DSB]] : tensor<64x64xbf16, #fagpu.mma_sync_acc<warps = 4>> -> tensor<64x64xbf16, #fagpu.mma_sync_a<warps = 4>>
// CHECK:     %[[DK:.*]] = fagpu.mma %[[DSA]], %[[QS]], %{{.*}} :
// CHECK:     fagpu.store_to_shared %[[DSB]], %[[DST]] :
// CHECK:     %[[DQ:.*]] = fagpu.mma %[[DST]], %[[KS]], %{{.*}} transpose_a : {{.*}} -> tensor<64x64xf32, #fagpu.mma_sync_acc<warps = 4>>
// CHECK:     fagpu.store_tile %[[DQ]], %{{.*}} accumulate : tensor<64x64xf32, #fagpu.mma_sync_acc<warps = 4>>, memref<200x64xf32
// CHECK:     scf.yield %[[DK]], %[[DV]]
// The unmasked Q blocks: no positions, no mask.
// CHECK:   scf.for
// CHECK-NOT: fagpu.tile_coords
// CHECK:     fagpu.store_tile {{.*}} accumulate
// CHECK:   scf.for
// CHECK:     fagpu.tile_coords
// dK scaled once, then both stored.
// CHECK: %[[DKS:.*]] = arith.mulf %[[HEADS]]#0, %{{.*}} : tensor<64x64xf32, #fagpu.mma_sync_acc<warps = 4>>
// CHECK: arith.truncf %[[DKS]]
// CHECK: fagpu.store_tile
// CHECK: arith.truncf %[[HEADS]]#1
// CHECK: fagpu.store_tile
// CHECK-NOT: fagpu.wait_shared_reads
// CHECK: gpu.return

// Every op lowers: mma.sync products, ldmatrix.trans for dO, Q (B as
// [K, N]) and dSᵀ (transpose_a), scalar atomics for dQ (no target here:
// the lowering alone keeps sm_90's vector reductions; fa-compile's sm_80
// kernels are checked in fa-compile-varlen-backward.test).
// NVVM-LABEL: gpu.func @grad_mma_sync(
// NVVM: nvvm.mma.sync
// NVVM: nvvm.ldmatrix {{.*}} layout = #nvvm.mma_layout<col>
// NVVM-NOT: fagpu.
// NVVM: gpu.return

// 128 keys (FlashAttention 2's 64 x 128): 8 warps of 16 keys for Sᵀ, dK and
// dV; dQ's 64 rows over 4 row blocks x 2 column groups of warps.
// COLS-LABEL: gpu.func @grad_mma_sync(
// COLS-SAME: fa.block = array<i64: 256, 1, 1>
// COLS: fagpu.mma {{.*}} transpose_b : {{.*}} -> tensor<128x64xf32, #fagpu.mma_sync_acc<warps = 8>>
// COLS: %[[DQ:.*]] = fagpu.mma %{{.*}}, %{{.*}}, %{{.*}} transpose_a : !fagpu.smem<128x64xbf16, swizzle = 128>, !fagpu.smem<128x64xbf16, swizzle = 128>, tensor<64x64xf32, #fagpu.mma_sync_acc_cols<warps = 8, columns = 2>>
// COLS: fagpu.store_tile %[[DQ]], %{{.*}} accumulate : tensor<64x64xf32, #fagpu.mma_sync_acc_cols<warps = 8, columns = 2>>
// BULK: error: dq-reduction=bulk is the WGMMA backward's (mma-sync adds dQ with atomics and always computes the scores transposed)
// BLOCKS: error: cannot lower to the mma.sync backward: block-q must be a multiple of block-kv up to 128, or block-kv a power of two times block-q (dQ's rows, then its columns, split over the warps), got 256 and 64
// KEYS: error: cannot lower to the mma.sync backward: block-kv must be 32, 64 or 128 (16 keys a warp), got 16
func.func @grad_mma_sync(%q: tensor<2x4x200x64xbf16>, %k: tensor<2x2x200x64xbf16>, %v: tensor<2x2x200x64xbf16>,
                         %o: tensor<2x4x200x64xbf16>, %do: tensor<2x4x200x64xbf16>, %lse: tensor<2x4x200xf32>)
    -> (tensor<2x4x200x64xbf16>, tensor<2x2x200x64xbf16>, tensor<2x2x200x64xbf16>) {
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse causal
      : tensor<2x4x200x64xbf16>, tensor<2x2x200x64xbf16>, tensor<2x2x200x64xbf16>,
        tensor<2x4x200x64xbf16>, tensor<2x4x200x64xbf16>, tensor<2x4x200xf32>
      -> tensor<2x4x200x64xbf16>, tensor<2x2x200x64xbf16>, tensor<2x2x200x64xbf16>
  return %dq, %dk, %dv : tensor<2x4x200x64xbf16>, tensor<2x2x200x64xbf16>, tensor<2x2x200x64xbf16>
}
