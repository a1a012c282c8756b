// RUN: fa-opt %s -split-input-file -fa-tile-attention-grad="block-q=64 block-kv=64" -canonicalize -cse -fa-convert-tiled-attention-grad-to-fagpu="dq-reduction=atomic" -canonicalize -cse | FileCheck %s
// RUN: fa-opt %s -split-input-file -fa-tile-attention-grad="block-q=64 block-kv=64" -canonicalize -cse -fa-convert-tiled-attention-grad-to-fagpu -canonicalize -cse | FileCheck %s --check-prefix=BULK
// RUN: fa-opt %s -split-input-file -fa-tile-attention-grad="block-q=64 block-kv=64" -canonicalize -cse -fa-convert-tiled-attention-grad-to-fagpu="dq-reduction=bulk" -canonicalize -cse | FileCheck %s --check-prefix=BULK
// RUN: not fa-opt %s -split-input-file -fa-tile-attention-grad="block-q=64 block-kv=64" -fa-convert-tiled-attention-grad-to-fagpu="dq-reduction=fast" 2>&1 | FileCheck %s --check-prefix=BADOPT

// The tiled backward carried onto the GPU tile level: the forall's (batch,
// KV head) and its KV-block loop are the grid, the group's heads and the
// masked / unmasked / masked Q loops stay loops carrying dK and dV in
// registers, LSE and delta are per-row register tiles, P and dS go through
// shared memory for the transposed products, and dQ is summed into memory
// from registers (atomic vector reductions); with `dq-reduction=bulk` each
// dQ tile goes to an f32 shared tile whose rows are dq_acc's back to back
// and is added by one bulk reduction, which the next tile's store and the
// kernel's end wait for. delta and dQ's cast are the pre and post kernels.

// CHECK-LABEL: gpu.module @fa_kernels
// CHECK: gpu.func @grad_gqa_causal_pre(
// CHECK-SAME: fa.kind = "backward_pre"
// CHECK: gpu.func @grad_gqa_causal(%[[Q:.*]]: memref<2x4x200x64xbf16>, %[[K:.*]]: memref<2x2x200x64xbf16>, %[[V:.*]]: memref<2x2x200x64xbf16>, %[[DO:.*]]: memref<2x4x200x64xbf16>, %[[LSE:.*]]: memref<2x4x200xf32>, %[[DELTA:.*]]: memref<2x4x200xf32>, %[[DQ:.*]]: memref<2x4x200x64xf32>, %[[DK:.*]]: memref<2x2x200x64xbf16>, %[[DV:.*]]: memref<2x2x200x64xbf16>) kernel
// CHECK-SAME: fa.block = array<i64: 128, 1, 1>
// CHECK-SAME: fa.grid = array<i64: 4, 2, 2>
// CHECK-SAME: fa.kind = "backward"
// CHECK: %[[KS:.*]] = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
// CHECK: %[[VS:.*]] = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
// CHECK: %[[QS:.*]] = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
// CHECK: %[[DOS:.*]] = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
// CHECK: %[[PS:.*]] = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
// CHECK: %[[DSS:.*]] = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
// CHECK-NOT: swizzle = 0
// CHECK-DAG: %[[KVH:.*]] = gpu.block_id  y
// CHECK-DAG: %[[B:.*]] = gpu.block_id  z
// CHECK-DAG: %[[KB:.*]] = gpu.block_id  x
// CHECK: memref.subview %[[K]][%[[B]], %[[KVH]], 0, 0]
// CHECK: fagpu.copy_to_shared {{.*}} into %[[KS]]
// CHECK: fagpu.copy_to_shared {{.*}} into %[[VS]]
// CHECK: %[[HEADS:.*]]:2 = scf.for {{.*}} -> (tensor<64x64xf32, #fagpu.wgmma_acc<warps = 4>>, tensor<64x64xf32, #fagpu.wgmma_acc<warps = 4>>)
// CHECK:   scf.for
// CHECK:     fagpu.copy_to_shared {{.*}} into %[[QS]]
// CHECK:     fagpu.copy_to_shared {{.*}} into %[[DOS]]
// CHECK:     fagpu.load_tile {{.*}} -> tensor<64xf32, #fagpu.rows<#fagpu.wgmma_acc<warps = 4>>>
// CHECK:     fagpu.load_tile {{.*}} -> tensor<64xf32, #fagpu.rows<#fagpu.wgmma_acc<warps = 4>>>
// CHECK:     %[[S:.*]] = fagpu.mma %[[QS]], %[[KS]], %{{.*}} transpose_b
// CHECK:     math.exp2
// CHECK:     fagpu.store_to_shared %{{.*}}, %[[PS]]
// CHECK:     fagpu.mma %[[PS]], %[[DOS]], %{{.*}} transpose_a
// CHECK:     fagpu.mma %[[DOS]], %[[VS]], %{{.*}} transpose_b
// CHECK:     fagpu.store_to_shared %{{.*}}, %[[DSS]]
// CHECK:     fagpu.mma %[[DSS]], %[[QS]], %{{.*}} transpose_a
// CHECK:     %[[DSA:.*]] = fagpu.convert_layout %{{.*}} -> tensor<64x64xbf16, #fagpu.wgmma_a<warps = 4>>
// CHECK:     %[[DQT:.*]] = fagpu.mma %[[DSA]], %[[KS]], %{{.*}} :
// CHECK:     fagpu.store_tile %[[DQT]], %{{.*}} accumulate : tensor<64x64xf32, #fagpu.wgmma_acc<warps = 4>>, memref<200x64xf32, strided<[64, 1], offset: ?>>
// The unmasked Q blocks: no positions, no mask.
// CHECK:   scf.for
// CHECK-NOT: fagpu.tile_coords
// CHECK:     fagpu.store_tile {{.*}} accumulate
// CHECK:   scf.for
// CHECK:     fagpu.tile_coords
// CHECK: arith.truncf %[[HEADS]]#0
// CHECK: fagpu.store_tile %{{.*}}, %{{.*}} limit %{{.*}} : tensor<64x64xbf16, #fagpu.wgmma_acc<warps = 4>>
// CHECK: arith.truncf %[[HEADS]]#1
// CHECK: fagpu.store_tile
// CHECK-NOT: fagpu.wait_shared_reads
// CHECK: gpu.return
// BULK-LABEL: gpu.func @grad_gqa_causal(
// BULK: %[[DQS:.*]] = fagpu.alloc_shared : !fagpu.smem<64x64xf32, swizzle = 0>
// BULK: %[[DQT:.*]] = fagpu.mma %{{.*}}, %{{.*}}, %{{.*}} : tensor<64x64xbf16, #fagpu.wgmma_a<warps = 4>>, !fagpu.smem<64x64xbf16, swizzle = 128>, tensor<64x64xf32
// BULK: fagpu.wait_shared_reads
// BULK-NEXT: fagpu.store_to_shared %[[DQT]], %[[DQS]] : tensor<64x64xf32, #fagpu.wgmma_acc<warps = 4>>, !fagpu.smem<64x64xf32, swizzle = 0>
// BULK-NEXT: fagpu.reduce_to_global %[[DQS]], %{{.*}}[%{{.*}}] limit %{{.*}} bands = 1 : !fagpu.smem<64x64xf32, swizzle = 0>, memref<200x64xf32, strided<[64, 1], offset: ?>>
// BULK-NOT: accumulate
// BULK: fagpu.store_tile %{{.*}} : tensor<64x64xbf16
// BULK: fagpu.store_tile %{{.*}} : tensor<64x64xbf16
// BULK-NEXT: fagpu.wait_shared_reads
// BULK-NEXT: gpu.return
// BADOPT: error: fa-convert-tiled-attention-grad-to-fagpu: dq-reduction must be auto, bulk or atomic, got 'fast'
// CHECK: gpu.func @grad_gqa_causal_post(
// CHECK-SAME: fa.kind = "backward_post"
// CHECK-NOT: func.func
func.func @grad_gqa_causal(%q: tensor<2x4x200x64xbf16>, %k: tensor<2x2x200x64xbf16>, %v: tensor<2x2x200x64xbf16>,
                           %o: tensor<2x4x200x64xbf16>, %do: tensor<2x4x200x64xbf16>, %lse: tensor<2x4x200xf32>)
    -> (tensor<2x4x200x64xbf16>, tensor<2x2x200x64xbf16>, tensor<2x2x200x64xbf16>) {
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse causal
      : tensor<2x4x200x64xbf16>, tensor<2x2x200x64xbf16>, tensor<2x2x200x64xbf16>,
        tensor<2x4x200x64xbf16>, tensor<2x4x200x64xbf16>, tensor<2x4x200xf32>
      -> tensor<2x4x200x64xbf16>, tensor<2x2x200x64xbf16>, tensor<2x2x200x64xbf16>
  return %dq, %dk, %dv : tensor<2x4x200x64xbf16>, tensor<2x2x200x64xbf16>, tensor<2x2x200x64xbf16>
}

