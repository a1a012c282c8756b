// RUN: fa-opt %s -fa-tile-attention-grad="block-q=64 block-kv=128" -fa-convert-tiled-attention-grad-to-fagpu="transpose-scores" -canonicalize -cse | FileCheck %s
// RUN: fa-opt %s -fa-tile-attention-grad="block-q=64 block-kv=128" -fa-convert-tiled-attention-grad-to-fagpu="transpose-scores" | fa-opt -fa-convert-fagpu-to-nvvm > /dev/null
// RUN: not fa-opt %S/../Tools/Inputs/backward-d256.mlir -fa-tile-attention-grad="block-q=64 block-kv=64" -fa-convert-tiled-attention-grad-to-fagpu="transpose-scores" 2>&1 | FileCheck %s --check-prefix=WIDE

// transpose-scores (FlashAttention 3's SdP_swapAB): S and dP are computed
// as Sᵀ = K Qᵀ and dPᵀ = V dOᵀ (128 keys on WGMMA's M side, one 64-key
// half a warpgroup; 64 queries on N) and held as S and dP in the
// transposed accumulator layout; LSE and delta are per column of the
// accumulator (rows of the transposed layout); the softmax gradient is
// elementwise in that layout. Pᵀ and dSᵀ are the accumulator of the
// transpose (fagpu.transpose, no data moved), register A operands of
// dV += Pᵀ dO and dK += dSᵀ Q; dS reaches dQ = dS K as dSᵀ stored in
// shared memory and read transposed. P no longer goes through shared
// memory.

// CHECK-LABEL: gpu.func @grad_transposed_scores(
// CHECK-SAME: fa.block = array<i64: 256, 1, 1>
// CHECK: %[[KS:.*]] = fagpu.alloc_shared : !fagpu.smem<128x64xbf16, swizzle = 128>
// CHECK: %[[VS:.*]] = fagpu.alloc_shared : !fagpu.smem<128x64xbf16, swizzle = 128>
// CHECK: %[[QS:.*]] = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
// CHECK: %[[DOS:.*]] = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
// CHECK: %[[DST:.*]] = fagpu.alloc_shared : !fagpu.smem<128x64xbf16, swizzle = 128>
// CHECK-NOT: fagpu.alloc_shared : !fagpu.smem<64x128xbf16
// CHECK: scf.for
// CHECK:   %[[LSE:.*]] = fagpu.load_tile {{.*}} -> tensor<64xf32, #fagpu.rows<#fagpu.transposed<#fagpu.wgmma_acc<warps = 8>>>>
// CHECK:   %[[DELTA:.*]] = fagpu.load_tile {{.*}} -> tensor<64xf32, #fagpu.rows<#fagpu.transposed<#fagpu.wgmma_acc<warps = 8>>>>
// CHECK:   %[[ST:.*]] = fagpu.mma %[[KS]], %[[QS]], %{{.*}} transpose_b : !fagpu.smem<128x64xbf16, swizzle = 128>, !fagpu.smem<64x64xbf16, swizzle = 128>, tensor<128x64xf32, #fagpu.wgmma_acc<warps = 8>>
// CHECK:   %[[S:.*]] = fagpu.transpose %[[ST]] : tensor<128x64xf32, #fagpu.wgmma_acc<warps = 8>> -> tensor<64x128xf32, #fagpu.transposed<#fagpu.wgmma_acc<warps = 8>>>
// LSE is subtracted before log2(e) scales the difference: every product
// needs S, so none runs (waiting for LSE's loads) before S is issued.
// CHECK:   %[[LSEX:.*]] = fagpu.expand_rows %[[LSE]] : {{.*}} -> tensor<64x128xf32, #fagpu.transposed<#fagpu.wgmma_acc<warps = 8>>>
// CHECK:   %[[SCALED:.*]] = arith.mulf %[[S]], %{{.*}} : tensor<64x128xf32, #fagpu.transposed
// CHECK:   %[[CENTRED:.*]] = arith.subf %[[SCALED]], %[[LSEX]]
// CHECK:   %[[LOG2:.*]] = arith.mulf %[[CENTRED]], %{{.*}}
// CHECK:   %[[P:.*]] = math.exp2 %[[LOG2]] : tensor<64x128xf32, #fagpu.transposed<#fagpu.wgmma_acc<warps = 8>>>
// CHECK:   %[[PT:.*]] = fagpu.transpose %[[P]] : tensor<64x128xf32, #fagpu.transposed<#fagpu.wgmma_acc<warps = 8>>> -> tensor<128x64xf32, #fagpu.wgmma_acc<warps = 8>>
// CHECK:   %[[PT16:.*]] = arith.truncf %[[PT]]
// CHECK:   %[[PTA:.*]] = fagpu.convert_layout %[[PT16]] : tensor<128x64xbf16, #fagpu.wgmma_acc<warps = 8>> -> tensor<128x64xbf16, #fagpu.wgmma_a<warps = 8>>
// CHECK:   fagpu.mma %[[PTA]], %[[DOS]], %{{.*}} : tensor<128x64xbf16, #fagpu.wgmma_a<warps = 8>>, !fagpu.smem<64x64xbf16, swizzle = 128>, tensor<128x64xf32, #fagpu.wgmma_acc<warps = 8>>
// CHECK:   %[[DPT:.*]] = fagpu.mma %[[VS]], %[[DOS]], %{{.*}} transpose_b : {{.*}} tensor<128x64xf32, #fagpu.wgmma_acc<warps = 8>>
// CHECK:   %[[DP:.*]] = fagpu.transpose %[[DPT]]
// CHECK:   fagpu.expand_rows %[[DELTA]]
// CHECK:   arith.subf %[[DP]], %{{.*}} : tensor<64x128xf32, #fagpu.transposed<#fagpu.wgmma_acc<warps = 8>>>
// CHECK:   %[[DSTR:.*]] = fagpu.transpose %{{.*}} : tensor<64x128xf32, #fagpu.transposed<#fagpu.wgmma_acc<warps = 8>>> -> tensor<128x64xf32, #fagpu.wgmma_acc<warps = 8>>
// CHECK:   %[[DST16:.*]] = arith.truncf %[[DSTR]]
// CHECK:   %[[DSTA:.*]] = fagpu.convert_layout %[[DST16]]
// CHECK:   fagpu.mma %[[DSTA]], %[[QS]], %{{.*}} : tensor<128x64xbf16, #fagpu.wgmma_a<warps = 8>>
// CHECK:   fagpu.store_to_shared %[[DST16]], %[[DST]] : tensor<128x64xbf16, #fagpu.wgmma_acc<warps = 8>>
// CHECK-NOT: fagpu.store_to_shared %{{.*}} : tensor<{{.*}}bf16
// CHECK:   fagpu.mma %[[DST]], %[[KS]], %{{.*}} transpose_a : {{.*}} tensor<64x64xf32, #fagpu.wgmma_acc_cols<warps = 8>>

// WIDE: transpose-scores needs 64 keys a compute warpgroup, got 64 keys on 2
func.func @grad_transposed_scores(%q: tensor<1x1x256x64xbf16>, %k: tensor<1x1x256x64xbf16>,
                                  %v: tensor<1x1x256x64xbf16>, %o: tensor<1x1x256x64xbf16>,
                                  %do: tensor<1x1x256x64xbf16>, %lse: tensor<1x1x256xf32>)
    -> (tensor<1x1x256x64xbf16>, tensor<1x1x256x64xbf16>, tensor<1x1x256x64xbf16>) {
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse
      : tensor<1x1x256x64xbf16>, tensor<1x1x256x64xbf16>, tensor<1x1x256x64xbf16>,
        tensor<1x1x256x64xbf16>, tensor<1x1x256x64xbf16>, tensor<1x1x256xf32>
      -> tensor<1x1x256x64xbf16>, tensor<1x1x256x64xbf16>, tensor<1x1x256x64xbf16>
  return %dq, %dk, %dv : tensor<1x1x256x64xbf16>, tensor<1x1x256x64xbf16>, tensor<1x1x256x64xbf16>
}
