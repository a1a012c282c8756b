// RUN: fa-opt %s -split-input-file -pass-pipeline='builtin.module(gpu.module(fagpu-persistent-grid{blocks=5}))' | FileCheck %s
// RUN: fa-opt %s -split-input-file -pass-pipeline='builtin.module(gpu.module(fagpu-persistent-grid))' | FileCheck %s --check-prefix=SM

// 2 x 3 x 4 = 24 tiles on 5 blocks: the body after the allocations and
// constants loops over rounds r of one tile per block, tile t = 5 r + b in
// even rounds and 5 r + (4 - b) in odd ones (block b), while t < 24: 4 full
// rounds, and in the fifth (even) blocks 0-3. The block ids become
// (t % 2, t / 2 % 3, t / 6): Q blocks, then heads, then batches, as a block
// per tile's start.

// CHECK-LABEL: gpu.func @tiles
// CHECK-SAME: fa.grid = array<i64: 5, 1, 1>
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1.0
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : index
// CHECK-DAG: %[[C3:.*]] = arith.constant 3 : index
// CHECK-DAG: %[[TILE:.*]] = fagpu.alloc_shared
// CHECK: %[[BLOCK:.*]] = gpu.block_id x
// CHECK-NEXT: %[[GRID:.*]] = gpu.grid_dim x
// CHECK-NEXT: %[[LASTBLOCK:.*]] = arith.subi %[[GRID]], %[[C1]] : index
// CHECK-NEXT: %[[MIRROR:.*]] = arith.subi %[[LASTBLOCK]], %[[BLOCK]] : index
// CHECK-NEXT: %[[C24:.*]] = arith.constant 24 : index
// CHECK-NEXT: %[[FULL:.*]] = arith.divui %[[C24]], %[[GRID]] : index
// CHECK-NEXT: %[[LEFT:.*]] = arith.remui %[[C24]], %[[GRID]] : index
// CHECK-NEXT: %[[LASTODD:.*]] = arith.remui %[[FULL]], %[[C2]] : index
// CHECK-NEXT: %[[ISODD:.*]] = arith.cmpi ne, %[[LASTODD]], %[[C0]] : index
// CHECK-NEXT: %[[LASTSLOT:.*]] = arith.select %[[ISODD]], %[[MIRROR]], %[[BLOCK]] : index
// CHECK-NEXT: %[[INLAST:.*]] = arith.cmpi ult, %[[LASTSLOT]], %[[LEFT]] : index
// CHECK-NEXT: %[[EXTRA:.*]] = arith.select %[[INLAST]], %[[C1]], %[[C0]] : index
// CHECK-NEXT: %[[ROUNDS:.*]] = arith.addi %[[FULL]], %[[EXTRA]] : index
// CHECK-NEXT: scf.for %[[R:.*]] = %[[C0]] to %[[ROUNDS]] step %[[C1]] {
// CHECK-NEXT:   %[[BASE:.*]] = arith.muli %[[R]], %[[GRID]] : index
// CHECK-NEXT:   %[[PARITY:.*]] = arith.remui %[[R]], %[[C2]] : index
// CHECK-NEXT:   %[[ODD:.*]] = arith.cmpi ne, %[[PARITY]], %[[C0]] : index
// CHECK-NEXT:   %[[SLOT:.*]] = arith.select %[[ODD]], %[[MIRROR]], %[[BLOCK]] : index
// CHECK-NEXT:   %[[T:.*]] = arith.addi %[[BASE]], %[[SLOT]] : index
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

// -----

// Runtime shapes: fa.grid's x and z are the call's, so the kernel states its
// tiles (fagpu.tile_grid: ceil(rows / 64) x 3 x batch, from its sizes). What
// computes them stays before the loop, which runs over their product; the
// statement is consumed, fa.grid stays the (dynamic) tile grid and
// fa.persistent_blocks tells the runtime to launch min(5, tiles) blocks.

// CHECK-LABEL: gpu.func @runtime_tiles
// CHECK-SAME: fa.grid = array<i64: -9223372036854775808, 3, -9223372036854775808>
// CHECK-SAME: fa.persistent_blocks = 5
// CHECK-DAG: %[[C3:.*]] = arith.constant 3 : index
// CHECK-DAG: %[[C64:.*]] = arith.constant 64 : index
// CHECK: %[[ROWS:.*]] = memref.dim %[[IN:.*]], %{{.*}} : memref<?x64xbf16>
// CHECK-NEXT: %[[X:.*]] = arith.ceildivsi %[[ROWS]], %[[C64]] : index
// CHECK-NEXT: %[[Z:.*]] = memref.dim %[[OUT:.*]], %{{.*}} : memref<?x3x?xf32>
// CHECK-NOT: fagpu.tile_grid
// CHECK: %[[XY:.*]] = arith.muli %[[X]], %[[C3]] : index
// CHECK-NEXT: %[[TILES:.*]] = arith.muli %[[XY]], %[[Z]] : index
// CHECK: %[[GRID:.*]] = gpu.grid_dim x
// CHECK: arith.divui %[[TILES]], %[[GRID]] : index
// CHECK: scf.for
// CHECK:   %[[T:.*]] = arith.addi
// CHECK-NEXT:   %[[TX:.*]] = arith.remui %[[T]], %[[X]] : index
// CHECK-NEXT:   %[[REST:.*]] = arith.divui %[[T]], %[[X]] : index
// CHECK-NEXT:   %[[TY:.*]] = arith.remui %[[REST]], %[[C3]] : index
// CHECK-NEXT:   %[[TZ:.*]] = arith.divui %[[REST]], %[[C3]] : index
// CHECK:   fagpu.copy_to_shared %{{.*}} limit %[[ROWS]]
// CHECK-NEXT:   memref.store %{{.*}}, %[[OUT]][%[[TZ]], %[[TY]], %[[TX]]]
// CHECK: } {fagpu.tiles}
// CHECK-NOT: fagpu.tile_grid
gpu.module @kernels {
  gpu.func @runtime_tiles(%rows: memref<?x64xbf16>, %out: memref<?x3x?xf32>) kernel
      attributes {fa.grid = array<i64: -9223372036854775808, 3, -9223372036854775808>} {
    %c0 = arith.constant 0 : index
    %c3 = arith.constant 3 : index
    %c64 = arith.constant 64 : index
    %one = arith.constant 1.0 : f32
    %tile = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
    %n = memref.dim %rows, %c0 : memref<?x64xbf16>
    %x = arith.ceildivsi %n, %c64 : index
    %batch = memref.dim %out, %c0 : memref<?x3x?xf32>
    fagpu.tile_grid %x, %c3, %batch
    %bz = gpu.block_id z
    %by = gpu.block_id y
    %bx = gpu.block_id x
    %row = arith.muli %bx, %c64 : index
    fagpu.copy_to_shared %rows[%row] limit %n into %tile : memref<?x64xbf16>, !fagpu.smem<64x64xbf16, swizzle = 128>
    memref.store %one, %out[%bz, %by, %bx] : memref<?x3x?xf32>
    gpu.return
  }
}
