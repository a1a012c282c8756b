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

// A limit that is not the tile cut at the tensor's end into an argument
// that something else writes too (TMA would add the box's rows past the
// limit, zeros or not), a padded tile (its rows are not the destination's)
// and a destination that is not a kernel argument's rows stay bulk
// reductions.

#acc = #fagpu.wgmma_acc_cols<warps = 8>
gpu.module @m {
  // CHECK-LABEL: gpu.func @stays
  // CHECK-NOT: fagpu.tma_reduce
  // CHECK-COUNT-3: fagpu.reduce_to_global
  gpu.func @stays(%acc: memref<1x1x1000x128xf32>, %plain: memref<1000x128xf32>,
                  %dq: tensor<64x128xf32, #acc>, %row: index, %n: index) kernel {
    %c0 = arith.constant 0 : index
    %tile = fagpu.alloc_shared : !fagpu.smem<64x128xf32, swizzle = 0>
    %padded = fagpu.alloc_shared : !fagpu.smem<64x136xf32, swizzle = 0>
    %view = memref.subview %acc[0, 0, 0, 0] [1, 1, 1000, 128] [1, 1, 1, 1] : memref<1x1x1000x128xf32> to memref<1000x128xf32, strided<[128, 1]>>
    %zero = arith.constant 0.0 : f32
    memref.store %zero, %acc[%c0, %c0, %row, %c0] : memref<1x1x1000x128xf32>
    fagpu.store_to_shared %dq, %tile : tensor<64x128xf32, #acc>, !fagpu.smem<64x128xf32, swizzle = 0>
    fagpu.reduce_to_global %tile, %view[%row] limit %n bands = 1 : !fagpu.smem<64x128xf32, swizzle = 0>, memref<1000x128xf32, strided<[128, 1]>>
    fagpu.store_to_shared %dq, %padded : tensor<64x128xf32, #acc>, !fagpu.smem<64x136xf32, swizzle = 0>
    fagpu.reduce_to_global %padded, %view[%row] limit %n bands = 1 : !fagpu.smem<64x136xf32, swizzle = 0>, memref<1000x128xf32, strided<[128, 1]>>
    fagpu.reduce_to_global %tile, %plain[%row] limit %n bands = 1 : !fagpu.smem<64x128xf32, swizzle = 0>, memref<1000x128xf32>
    gpu.return
  }
}

// -----

// Runtime shapes: the row count is another argument's (q's length, the
// call's seq_q for both), so the limit is not provably the workspace's end.
// The workspace is written by these reductions alone, so the staged rows at
// and past limit - row become zeros and the whole box is added.

#acc = #fagpu.wgmma_acc_cols<warps = 8>
gpu.module @m {
  // CHECK-LABEL: gpu.func @runtime_rows
  // CHECK-SAME: %[[DQ:arg[0-9]+]]: tensor<64x128xf32, #fagpu.wgmma_acc_cols<warps = 8>>
  // CHECK-SAME: %{{arg[0-9]+}}: index, %{{arg[0-9]+}}: index, %[[ROW:arg[0-9]+]]: index
  // CHECK-SAME: %[[MAP:arg[0-9]+]]: !fagpu.tensor_map<memref<?x4x?x128xf32>, box = [64, 32]> {fagpu.tensor_map_of = 0 : i64}
  // CHECK: %[[TILE:[0-9]+]] = fagpu.alloc_shared : !fagpu.smem<64x128xf32, swizzle = 128>
  // CHECK: %[[LIMIT:.*]] = arith.addi %[[ROW]]
  // CHECK: %[[COORDS:.*]] = fagpu.tile_coords dim = 0 : tensor<64x128xindex, #fagpu.wgmma_acc_cols<warps = 8>>
  // CHECK: %[[VALID:.*]] = arith.subi %[[LIMIT]], %[[ROW]] : index
  // CHECK: %[[BOUND:.*]] = tensor.splat %[[VALID]] : tensor<64x128xindex, #fagpu.wgmma_acc_cols<warps = 8>>
  // CHECK: %[[INSIDE:.*]] = arith.cmpi slt, %[[COORDS]], %[[BOUND]]
  // CHECK: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : tensor<64x128xf32, #fagpu.wgmma_acc_cols<warps = 8>>
  // CHECK: %[[MASKED:.*]] = arith.select %[[INSIDE]], %[[DQ]], %[[ZERO]]
  // CHECK: fagpu.store_to_shared %[[MASKED]], %[[TILE]]
  // CHECK-NEXT: fagpu.tma_reduce %[[MAP]][%{{.*}}, %{{.*}}, %[[ROW]]] from %[[TILE]] bands = 1
  // CHECK-NOT: fagpu.reduce_to_global
  gpu.func @runtime_rows(%acc: memref<?x4x?x128xf32>, %q: memref<?x4x?x128xbf16>,
                         %dq: tensor<64x128xf32, #acc>, %b: index, %h: index,
                         %row: index) kernel {
    %c2 = arith.constant 2 : index
    %c64 = arith.constant 64 : index
    %n = memref.dim %q, %c2 : memref<?x4x?x128xbf16>
    %acc_rows = memref.dim %acc, %c2 : memref<?x4x?x128xf32>
    %tile = fagpu.alloc_shared : !fagpu.smem<64x128xf32, swizzle = 0>
    %view = memref.subview %acc[%b, %h, 0, 0] [1, 1, %acc_rows, 128] [1, 1, 1, 1] : memref<?x4x?x128xf32> to memref<?x128xf32, strided<[128, 1], offset: ?>>
    %left = arith.subi %n, %row : index
    %rows = arith.minsi %left, %c64 : index
    %limit = arith.addi %row, %rows : index
    fagpu.wait_shared_reads
    fagpu.store_to_shared %dq, %tile : tensor<64x128xf32, #acc>, !fagpu.smem<64x128xf32, swizzle = 0>
    fagpu.reduce_to_global %tile, %view[%row] limit %limit bands = 1 : !fagpu.smem<64x128xf32, swizzle = 0>, memref<?x128xf32, strided<[128, 1], offset: ?>>
    gpu.return
  }
}

// -----

// The same, but the tile's value was stored in another block: no value to
// zero the rows of, so the reduction stays as it is.

#acc = #fagpu.wgmma_acc_cols<warps = 8>
gpu.module @m {
  // CHECK-LABEL: gpu.func @stored_elsewhere
  // CHECK-NOT: fagpu.tma_reduce
  // CHECK-NOT: fagpu.tile_coords
  // CHECK: fagpu.reduce_to_global
  gpu.func @stored_elsewhere(%acc: memref<?x4x?x128xf32>, %dq: tensor<64x128xf32, #acc>,
                             %row: index, %limit: index, %c: i1) kernel {
    %c2 = arith.constant 2 : index
    %acc_rows = memref.dim %acc, %c2 : memref<?x4x?x128xf32>
    %tile = fagpu.alloc_shared : !fagpu.smem<64x128xf32, swizzle = 0>
    %view = memref.subview %acc[0, 0, 0, 0] [1, 1, %acc_rows, 128] [1, 1, 1, 1] : memref<?x4x?x128xf32> to memref<?x128xf32, strided<[128, 1]>>
    scf.if %c {
      fagpu.store_to_shared %dq, %tile : tensor<64x128xf32, #acc>, !fagpu.smem<64x128xf32, swizzle = 0>
    }
    fagpu.reduce_to_global %tile, %view[%row] limit %limit bands = 1 : !fagpu.smem<64x128xf32, swizzle = 0>, memref<?x128xf32, strided<[128, 1]>>
    gpu.return
  }
}
