// RUN: fa-opt %s -split-input-file -pass-pipeline='builtin.module(gpu.module(fagpu-tma-reductions))' | FileCheck %s

// dQ's tile (rows [row, min(row + 64, 1000)) of head h, batch b of the
// f32 workspace) staged in a plain shared tile and added by a bulk
// reduction: the tile takes the 128-byte swizzle, a tensor map of the
// workspace (boxes of 64 rows x 32 f32) becomes a kernel parameter, and
// the reduction goes through it, the coordinates (b, h, row).

#acc = #fagpu.wgmma_acc_cols<warps = 8>
gpu.module @m {
  // CHECK-LABEL: gpu.func @dq
  // CHECK-SAME: %[[ACC:arg[0-9]+]]: memref<2x4x1000x128xf32>
  // CHECK-SAME: %[[MAP:arg[0-9]+]]: !fagpu.tensor_map<memref<2x4x1000x128xf32>, box = [64, 32]> {fagpu.tensor_map_of = 0 : i64}
  // CHECK: %[[TILE:[0-9]+]] = fagpu.alloc_shared : !fagpu.smem<64x128xf32, swizzle = 128>
  // CHECK: fagpu.store_to_shared %{{.*}}, %[[TILE]] : tensor<64x128xf32, #fagpu.wgmma_acc_cols<warps = 8>>, !fagpu.smem<64x128xf32, swizzle = 128>
  // CHECK-NEXT: fagpu.tma_reduce %[[MAP]][%{{.*}}, %{{.*}}, %[[ROW:.*]]] from %[[TILE]] bands = 2 : !fagpu.tensor_map<memref<2x4x1000x128xf32>, box = [64, 32]>, !fagpu.smem<64x128xf32, swizzle = 128>
  // CHECK-NOT: fagpu.reduce_to_global
  gpu.func @dq(%acc: memref<2x4x1000x128xf32>, %dq: tensor<64x128xf32, #acc>,
               %b: index, %h: index, %row: index) kernel {
    %c64 = arith.constant 64 : index
    %c1000 = arith.constant 1000 : index
    %tile = fagpu.alloc_shared : !fagpu.smem<64x128xf32, swizzle = 0>
    %view = memref.subview %acc[%b, %h, 0, 0] [1, 1, 1000, 128] [1, 1, 1, 1] : memref<2x4x1000x128xf32> to memref<1000x128xf32, strided<[128, 1], offset: ?>>
    %left = arith.subi %c1000, %row : index
    %rows = arith.minsi %left, %c64 : index
    %limit = arith.addi %row, %rows : index
    fagpu.wait_shared_reads
    fagpu.store_to_shared %dq, %tile : tensor<64x128xf32, #acc>, !fagpu.smem<64x128xf32, swizzle = 0>
    fagpu.reduce_to_global %tile, %view[%row] limit %limit bands = 2 : !fagpu.smem<64x128xf32, swizzle = 0>, memref<1000x128xf32, strided<[128, 1], offset: ?>>
    gpu.return
  }
}

// -----

// A limit that is not the tile cut at the tensor's end (TMA would add rows
// up to the end), a padded tile (its rows are not the destination's) and a
// destination that is not a kernel argument's rows stay bulk reductions.

#acc = #fagpu.wgmma_acc_cols<warps = 8>
gpu.module @m {
  // CHECK-LABEL: gpu.func @stays
  // CHECK-NOT: fagpu.tma_reduce
  // CHECK-COUNT-3: fagpu.reduce_to_global
  gpu.func @stays(%acc: memref<1x1x1000x128xf32>, %plain: memref<1000x128xf32>,
                  %dq: tensor<64x128xf32, #acc>, %row: index, %n: index) kernel {
    %tile = fagpu.alloc_shared : !fagpu.smem<64x128xf32, swizzle = 0>
    %padded = fagpu.alloc_shared : !fagpu.smem<64x136xf32, swizzle = 0>
    %view = memref.subview %acc[0, 0, 0, 0] [1, 1, 1000, 128] [1, 1, 1, 1] : memref<1x1x1000x128xf32> to memref<1000x128xf32, strided<[128, 1]>>
    fagpu.store_to_shared %dq, %tile : tensor<64x128xf32, #acc>, !fagpu.smem<64x128xf32, swizzle = 0>
    fagpu.reduce_to_global %tile, %view[%row] limit %n bands = 1 : !fagpu.smem<64x128xf32, swizzle = 0>, memref<1000x128xf32, strided<[128, 1]>>
    fagpu.store_to_shared %dq, %padded : tensor<64x128xf32, #acc>, !fagpu.smem<64x136xf32, swizzle = 0>
    fagpu.reduce_to_global %padded, %view[%row] limit %n bands = 1 : !fagpu.smem<64x136xf32, swizzle = 0>, memref<1000x128xf32, strided<[128, 1]>>
    fagpu.reduce_to_global %tile, %plain[%row] limit %n bands = 1 : !fagpu.smem<64x128xf32, swizzle = 0>, memref<1000x128xf32>
    gpu.return
  }
}
