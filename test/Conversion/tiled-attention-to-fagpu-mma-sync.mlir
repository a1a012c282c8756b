// RUN: fa-opt %s -split-input-file -fa-convert-to-online-attention -fa-tile-attention="block-q=64 block-kv=64" -fa-convert-tiled-attention-to-fagpu="mma-sync=1" -canonicalize -cse | FileCheck %s
// RUN: fa-opt %s -split-input-file -fa-convert-to-online-attention -fa-tile-attention="block-q=128 block-kv=64" -fa-convert-tiled-attention-to-fagpu="mma-sync=1" -canonicalize -cse | FileCheck %s --check-prefix=WIDE
// RUN: not fa-opt %s -split-input-file -fa-convert-to-online-attention -fa-tile-attention="block-q=64 block-kv=64" -fa-convert-tiled-attention-to-fagpu="mma-sync=1 rows-per-warp=8" 2>&1 | FileCheck %s --check-prefix=ROWS

// The same tiled forward as tiled-attention-to-fagpu.mlir, in the mma.sync
// layouts (sm_80 / sm_89): the register tiles are #fagpu.mma_sync_acc, a
// warp per 16 query rows; QKᵀ reads Q from its shared tile (ldmatrix at the
// product), P·V takes P in #fagpu.mma_sync_a, in the registers the
// accumulator left it. Everything else (copies, masks, the softmax, the
// stores) is the IR of the WGMMA kernel with another layout.

// CHECK-LABEL: gpu.func @causal_gqa
// CHECK-SAME: fa.block = array<i64: 128, 1, 1>
// CHECK-SAME: fa.rows_per_warp = 16
// CHECK: %[[QS:.*]] = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
// CHECK: %[[KS:.*]] = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
// CHECK: %[[VS:.*]] = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
// CHECK: fagpu.copy_to_shared %{{.*}} into %[[QS]]
// CHECK: scf.for {{.*}} -> (tensor<64x64xf32, #fagpu.mma_sync_acc<warps = 4>>, tensor<64xf32, #fagpu.rows<#fagpu.mma_sync_acc<warps = 4>>>, tensor<64xf32, #fagpu.rows<#fagpu.mma_sync_acc<warps = 4>>>)
// CHECK:   fagpu.copy_to_shared {{.*}} into %[[KS]]
// CHECK:   fagpu.copy_to_shared {{.*}} into %[[VS]]
// CHECK:   fagpu.mma %[[QS]], %[[KS]], %{{.*}} transpose_b : !fagpu.smem<64x64xbf16, swizzle = 128>, !fagpu.smem<64x64xbf16, swizzle = 128>, tensor<64x64xf32, #fagpu.mma_sync_acc<warps = 4>>
// CHECK:   fagpu.tile_coords dim = 1 : tensor<64x64xindex, #fagpu.mma_sync_acc<warps = 4>>
// CHECK:   fagpu.reduce_rows max
// CHECK:   fagpu.reduce_rows sum
// CHECK:   %[[PA:.*]] = fagpu.convert_layout %{{.*}} : tensor<64x64xbf16, #fagpu.mma_sync_acc<warps = 4>> -> tensor<64x64xbf16, #fagpu.mma_sync_a<warps = 4>>
// CHECK:   fagpu.mma %[[PA]], %[[VS]], %{{.*}} : tensor<64x64xbf16, #fagpu.mma_sync_a<warps = 4>>, !fagpu.smem<64x64xbf16, swizzle = 128>
// CHECK: fagpu.store_tile %{{.*}} : tensor<64x64xbf16, #fagpu.mma_sync_acc<warps = 4>>
// CHECK: fagpu.store_tile %{{.*}} : tensor<64xf32, #fagpu.rows<#fagpu.mma_sync_acc<warps = 4>>>

// 128-row Q blocks up to head dim 128: 32 rows a warp (FA2's choice), four
// warps.
// WIDE-LABEL: gpu.func @causal_gqa
// WIDE-SAME: fa.block = array<i64: 128, 1, 1>
// WIDE-SAME: fa.rows_per_warp = 32
// WIDE: fagpu.mma {{.*}} -> tensor<128x64xf32, #fagpu.mma_sync_acc<warps = 4>>

// ROWS: error: cannot lower to the mma.sync kernel: rows per warp must be 16 or 32, got 8
func.func @causal_gqa(%q: tensor<1x4x100x64xbf16>, %k: tensor<1x2x130x64xbf16>,
                      %v: tensor<1x2x130x64xbf16>)
    -> (tensor<1x4x100x64xbf16>, tensor<1x4x100xf32>) {
  %o, %lse = fa.attention %q, %k, %v causal
      : tensor<1x4x100x64xbf16>, tensor<1x2x130x64xbf16>, tensor<1x2x130x64xbf16>
      -> tensor<1x4x100x64xbf16>, tensor<1x4x100xf32>
  return %o, %lse : tensor<1x4x100x64xbf16>, tensor<1x4x100xf32>
}
