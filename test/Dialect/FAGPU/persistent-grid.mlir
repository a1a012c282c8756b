// RUN: fa-opt %s -split-input-file -pass-pipeline='builtin.module(gpu.module(fagpu-persistent-grid{blocks=5}))' | FileCheck %s
// RUN: fa-opt %s -split-input-file -pass-pipeline='builtin.module(gpu.module(fagpu-persistent-grid))' | FileCheck %s --check-prefix=SM

// 2 x 3 x 4 = 24 tiles on 5 blocks: the body after the allocations and
// constants loops over t = block_id.x, + grid_dim.x, ... < 24, and the block
// ids become (t % 2, t / 2 % 3, t / 6): Q blocks, then heads, then
// batches, as a block per tile's start.

// CHECK-LABEL: gpu.func @tiles
// CHECK-SAME: fa.grid = array<i64: 5, 1, 1>
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1.0
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : index
// CHECK-DAG: %[[C3:.*]] = arith.constant 3 : index
// CHECK-DAG: %[[C24:.*]] = arith.constant 24 : index
// CHECK-DAG: %[[TILE:.*]] = fagpu.alloc_shared
// CHECK: %[[FIRST:.*]] = gpu.block_id x
// CHECK-NEXT: %[[STRIDE:.*]] = gpu.grid_dim x
// CHECK-NEXT: scf.for %[[T:.*]] = %[[FIRST]] to %[[C24]] step %[[STRIDE]] {
// CHECK-NEXT:   %[[X:.*]] = arith.remui %[[T]], %[[C2]] : index
// CHECK-NEXT:   %[[REST:.*]] = arith.divui %[[T]], %[[C2]] : index
// CHECK-NEXT:   %[[Y:.*]] = arith.remui %[[REST]], %[[C3]] : index
// CHECK-NEXT:   %[[Z:.*]] = arith.divui %[[REST]], %[[C3]] : index
// CHECK-NEXT:   %[[ROW:.*]] = arith.muli %[[X]], %{{.*}} : index
// CHECK-NEXT:   fagpu.copy_to_shared %{{.*}}[%[[ROW]]] limit %{{.*}} into %[[TILE]]
// CHECK-NEXT:   memref.store %[[ONE]], %{{.*}}[%[[Z]], %[[Y]], %[[X]]]
// CHECK-NEXT: } {fagpu.tiles}
// CHECK-NEXT: gpu.return

// One block per SM of an H100/H200 SXM by default: 132 > 24, so 24.
// SM-LABEL: gpu.func @tiles
// SM-SAME: fa.grid = array<i64: 24, 1, 1>
// SM: scf.for
// SM: } {fagpu.tiles}
gpu.module @kernels {
  gpu.func @tiles(%rows: memref<256x64xbf16>, %out: memref<4x3x2xf32>) kernel
      attributes {fa.grid = array<i64: 2, 3, 4>} {
    %c64 = arith.constant 64 : index
    %c256 = arith.constant 256 : index
    %one = arith.constant 1.0 : f32
    %tile = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
    %bz = gpu.block_id z
    %by = gpu.block_id y
    %bx = gpu.block_id x
    %row = arith.muli %bx, %c64 : index
    fagpu.copy_to_shared %rows[%row] limit %c256 into %tile : memref<256x64xbf16>, !fagpu.smem<64x64xbf16, swizzle = 128>
    memref.store %one, %out[%bz, %by, %bx] : memref<4x3x2xf32>
    gpu.return
  }
}
