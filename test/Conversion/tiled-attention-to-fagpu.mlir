// RUN: fa-opt %s -split-input-file -fa-convert-to-online-attention -fa-tile-attention="block-q=64 block-kv=64" -fa-convert-tiled-attention-to-fagpu -canonicalize -cse | FileCheck %s

// The tiled forward carried onto the GPU tile level: the forall is the grid,
// the padded Q/K/V tiles are shared tiles, the three KV loops stay, and the
// decomposition's math becomes the same ops on register tiles in the WGMMA
// accumulator layout (64 rows: one warpgroup).

// CHECK-LABEL: gpu.module @fa_kernels
// CHECK: gpu.func @causal_gqa(%[[Q:.*]]: memref<1x4x100x64xbf16>, %[[K:.*]]: memref<1x2x130x64xbf16>, %[[V:.*]]: memref<1x2x130x64xbf16>, %[[O:.*]]: memref<1x4x100x64xbf16>, %[[LSE:.*]]: memref<1x4x100xf32>) kernel
// CHECK-SAME: fa.block = array<i64: 128, 1, 1>
// CHECK-SAME: fa.causal
// CHECK-SAME: fa.grid = array<i64: 2, 4, 1>
// CHECK-SAME: fa.kind = "forward"
// CHECK-SAME: fa.shared_bytes = 24576
// CHECK: %[[QS:.*]] = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
// CHECK: %[[KS:.*]] = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
// CHECK: %[[VS:.*]] = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
// CHECK: %[[B:.*]] = gpu.block_id  z
// CHECK: %[[H:.*]] = gpu.block_id  y
// CHECK: %[[KVHEAD:.*]] = arith.divui %[[H]], %{{.*}} : index
// CHECK: %[[QROWS:.*]] = memref.subview %[[Q]][%[[B]], %[[H]], 0, 0] [1, 1, 100, 64]
// CHECK: fagpu.copy_to_shared %[[QROWS]][%{{.*}}] limit %{{.*}} into %[[QS]]
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (tensor<64x64xf32, #fagpu.wgmma_acc<warps = 4>>, tensor<64xf32, #fagpu.rows<#fagpu.wgmma_acc<warps = 4>>>, tensor<64xf32, #fagpu.rows<#fagpu.wgmma_acc<warps = 4>>>)
// CHECK:   memref.subview %[[K]][%[[B]], %[[KVHEAD]], 0, 0]
// CHECK:   fagpu.copy_to_shared {{.*}} into %[[KS]]
// CHECK:   fagpu.copy_to_shared {{.*}} into %[[VS]]
// CHECK:   %[[S:.*]] = fagpu.mma %[[QS]], %[[KS]], %{{.*}} transpose_b
// CHECK:   fagpu.tile_coords dim = 0 : tensor<64x64xindex, #fagpu.wgmma_acc<warps = 4>>
// CHECK:   fagpu.tile_coords dim = 1 : tensor<64x64xindex, #fagpu.wgmma_acc<warps = 4>>
// CHECK:   arith.select %{{.*}} : tensor<64x64xi1, #fagpu.wgmma_acc<warps = 4>>, tensor<64x64xf32, #fagpu.wgmma_acc<warps = 4>>
// CHECK:   fagpu.reduce_rows max
// CHECK:   math.exp2 %{{.*}} : tensor<64xf32, #fagpu.rows<#fagpu.wgmma_acc<warps = 4>>>
// CHECK:   fagpu.expand_rows
// CHECK:   math.exp2 %{{.*}} : tensor<64x64xf32, #fagpu.wgmma_acc<warps = 4>>
// CHECK:   fagpu.reduce_rows sum
// CHECK:   %[[P:.*]] = arith.truncf %{{.*}} : tensor<64x64xf32, #fagpu.wgmma_acc<warps = 4>> to tensor<64x64xbf16, #fagpu.wgmma_acc<warps = 4>>
// CHECK:   %[[PA:.*]] = fagpu.convert_layout %[[P]] : tensor<64x64xbf16, #fagpu.wgmma_acc<warps = 4>> -> tensor<64x64xbf16, #fagpu.wgmma_a<warps = 4>>
// CHECK:   fagpu.mma %[[PA]], %[[VS]], %{{.*}} : tensor<64x64xbf16, #fagpu.wgmma_a<warps = 4>>, !fagpu.smem<64x64xbf16, swizzle = 128>
// CHECK: scf.for
// CHECK: scf.for
// CHECK: math.log2 %{{.*}} : tensor<64xf32, #fagpu.rows<#fagpu.wgmma_acc<warps = 4>>>
// CHECK: %[[OROWS:.*]] = memref.subview %[[O]][%[[B]], %[[H]], 0, 0] [1, 1, 100, 64]
// CHECK: fagpu.store_tile %{{.*}}, %[[OROWS]][%{{.*}}] limit %{{.*}} : tensor<64x64xbf16, #fagpu.wgmma_acc<warps = 4>>
// CHECK: %[[LROWS:.*]] = memref.subview %[[LSE]][%[[B]], %[[H]], 0] [1, 1, 100]
// CHECK: fagpu.store_tile %{{.*}}, %[[LROWS]][%{{.*}}] limit %{{.*}} : tensor<64xf32, #fagpu.rows<#fagpu.wgmma_acc<warps = 4>>>
// CHECK: gpu.return
// CHECK-NOT: func.func
func.func @causal_gqa(%q: tensor<1x4x100x64xbf16>, %k: tensor<1x2x130x64xbf16>,
                      %v: tensor<1x2x130x64xbf16>)
    -> (tensor<1x4x100x64xbf16>, tensor<1x4x100xf32>) {
  %o, %lse = fa.attention %q, %k, %v causal
      : tensor<1x4x100x64xbf16>, tensor<1x2x130x64xbf16>, tensor<1x2x130x64xbf16>
      -> tensor<1x4x100x64xbf16>, tensor<1x4x100xf32>
  return %o, %lse : tensor<1x4x100x64xbf16>, tensor<1x4x100xf32>
}

// -----

// Soft-capping is the decomposition's tanh on the tile.

// CHECK-LABEL: gpu.func @softcap
// CHECK-SAME: fa.softcap = 3.000000e+01 : f64
// CHECK: math.tanh %{{.*}} : tensor<64x64xf32, #fagpu.wgmma_acc<warps = 4>>
func.func @softcap(%q: tensor<1x1x64x128xf16>, %k: tensor<1x1x64x128xf16>,
                   %v: tensor<1x1x64x128xf16>)
    -> (tensor<1x1x64x128xf16>, tensor<1x1x64xf32>) {
  %o, %lse = fa.attention %q, %k, %v softcap = 30.0
      : tensor<1x1x64x128xf16>, tensor<1x1x64x128xf16>, tensor<1x1x64x128xf16>
      -> tensor<1x1x64x128xf16>, tensor<1x1x64xf32>
  return %o, %lse : tensor<1x1x64x128xf16>, tensor<1x1x64xf32>
}

// -----

// Runtime shapes: the kernel's memrefs keep the dynamic batch and sequence
// sizes; a size of an input is memref.dim of its kernel argument; the grid's
// x and z are dynamic (fa.grid holds kDynamic there), so the kernel states
// its tiles, (ceil(Nq / 64), 4 heads, batch), from its own sizes
// (fagpu.tile_grid) and the Q blocks run last-first from that x; a tile's
// rows end at the runtime length.

// CHECK-LABEL: gpu.func @runtime_shapes
// CHECK-SAME: (%[[Q:.*]]: memref<?x4x?x64xbf16>, %[[K:.*]]: memref<?x2x?x64xbf16>, %[[V:.*]]: memref<?x2x?x64xbf16>, %[[O:.*]]: memref<?x4x?x64xbf16>, %[[LSE:.*]]: memref<?x4x?xf32>) kernel
// CHECK-SAME: fa.grid = array<i64: -9223372036854775808, 4, -9223372036854775808>
// CHECK-DAG: %[[C4:.*]] = arith.constant 4 : index
// CHECK-DAG: %[[C64:.*]] = arith.constant 64 : index
// CHECK: %[[ROWS:.*]] = memref.dim %[[Q]], %{{.*}} : memref<?x4x?x64xbf16>
// CHECK: %[[GX:.*]] = arith.ceildivsi %[[ROWS]], %[[C64]] : index
// CHECK: %[[BATCH:.*]] = memref.dim %[[Q]], %{{.*}} : memref<?x4x?x64xbf16>
// CHECK: fagpu.tile_grid %[[GX]], %[[C4]], %[[BATCH]]
// CHECK-NOT: gpu.grid_dim
// CHECK: %[[LAST:.*]] = arith.subi %[[GX]], %{{.*}} : index
// CHECK: %[[BX:.*]] = gpu.block_id  x
// CHECK: arith.subi %[[LAST]], %[[BX]] : index
// CHECK: %[[NK:.*]] = memref.dim %[[K]], %{{.*}} : memref<?x2x?x64xbf16>
// CHECK: %[[QROWS:.*]] = memref.subview %[[Q]][{{.*}}] [1, 1, %[[ROWS]], 64] [1, 1, 1, 1] : memref<?x4x?x64xbf16> to memref<?x64xbf16, strided<[64, 1], offset: ?>>
// CHECK: fagpu.copy_to_shared %[[QROWS]][%{{.*}}] limit %[[ROWS]]
// CHECK: scf.for
// CHECK:   fagpu.copy_to_shared %{{.*}} limit %[[NK]]
// CHECK: fagpu.store_tile %{{.*}}, %{{.*}}[%{{.*}}] limit %{{.*}} : tensor<64x64xbf16, #fagpu.wgmma_acc<warps = 4>>, memref<?x64xbf16, strided<[64, 1], offset: ?>>
func.func @runtime_shapes(%q: tensor<?x4x?x64xbf16>, %k: tensor<?x2x?x64xbf16>,
                          %v: tensor<?x2x?x64xbf16>)
    -> (tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v causal
      : tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>
      -> tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>
  return %o, %lse : tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>
}

