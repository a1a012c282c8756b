// RUN: fa-opt %s -split-input-file -pass-pipeline='builtin.module(gpu.module(fa-convert-fagpu-to-nvvm))' | FileCheck %s
// RUN: fa-opt %s -split-input-file -pass-pipeline='builtin.module(gpu.module(fa-convert-fagpu-to-nvvm,canonicalize,cse))' | FileCheck %s --check-prefix=ADDR

// fagpu.mma on an mma.sync accumulator: one mma.sync.m16n8k16 per (m16
// tile, n8 tile, k16 step). S = Q Kᵀ from two shared tiles, 16 rows a warp:
// per k16 step one ldmatrix.x4 of Q (a0..a7) and one of K per two n8 tiles
// (4 + 16 loads, 4 x 8 products); a zero accumulator is zero registers.

#acc = #fagpu.mma_sync_acc<warps = 4>
gpu.module @m {
  // CHECK-LABEL: gpu.func @scores
  // CHECK: arith.constant 0.000000e+00 : f32
  // CHECK-COUNT-5: nvvm.ldmatrix %{{.*}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<row>, num = 4 : i32, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>}
  // CHECK-COUNT-8: nvvm.mma.sync A[{{.*}}] B[{{.*}}] C[{{.*}}] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (i32, i32, f32)
  // CHECK-NOT: nvvm.mma.sync
  // CHECK-COUNT-5: nvvm.ldmatrix
  // CHECK-COUNT-8: nvvm.mma.sync
  // CHECK-COUNT-5: nvvm.ldmatrix
  // CHECK-COUNT-8: nvvm.mma.sync
  // CHECK-COUNT-5: nvvm.ldmatrix
  // CHECK-COUNT-8: nvvm.mma.sync
  // CHECK-NOT: nvvm.mma.sync
  // CHECK: gpu.return

  // A lane's addresses: one per swizzle phase it meets, the rest constants
  // away. K's four loads of a k16 step are 16 rows (2048 bytes) apart in the
  // same phase; each k16 step of the 128-byte swizzle is a phase of its own.
  // ADDR-LABEL: gpu.func @scores
  // ADDR: llvm.getelementptr %{{.*}}[%{{.*}}] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
  // ADDR-NEXT: nvvm.ldmatrix
  // ADDR: %[[K0:.*]] = llvm.getelementptr %{{.*}}[%{{.*}}] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
  // ADDR-NEXT: nvvm.ldmatrix %[[K0]]
  // ADDR: llvm.getelementptr %[[K0]][2048] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8
  // ADDR: llvm.getelementptr %[[K0]][4096] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8
  // ADDR: llvm.getelementptr %[[K0]][6144] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8
  // ADDR-COUNT-6: llvm.getelementptr %{{.*}}[%{{.*}}] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
  // ADDR-NOT: (!llvm.ptr<3>, i32) -> !llvm.ptr<3>
  // ADDR: gpu.return
  gpu.func @scores(%q: !fagpu.smem<64x64xbf16, swizzle = 128>, %k: !fagpu.smem<64x64xbf16, swizzle = 128>) kernel {
    %zero = arith.constant dense<0.0> : tensor<64x64xf32, #acc>
    %s = fagpu.mma %q, %k, %zero transpose_b : !fagpu.smem<64x64xbf16, swizzle = 128>, !fagpu.smem<64x64xbf16, swizzle = 128>, tensor<64x64xf32, #acc> -> tensor<64x64xf32, #acc>
    gpu.return
  }
}

// -----

// O += P V: P from registers (#fagpu.mma_sync_a words, f16 pairs as
// vector<2xf16>), V [K, N] read transposed by ldmatrix.trans; 32 rows a
// warp (two m16 tiles), three n8 tiles (a .x4 and an .x2 a k16 step), two
// k16 steps: 2 x 3 x 2 products.

#acc = #fagpu.mma_sync_acc<warps = 2>
#a = #fagpu.mma_sync_a<warps = 2>
gpu.module @m {
  // CHECK-LABEL: gpu.func @values
  // CHECK-NOT: layout = #nvvm.mma_layout<row>
  // CHECK: nvvm.ldmatrix %{{.*}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<col>, num = 4 : i32
  // CHECK: nvvm.ldmatrix %{{.*}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<col>, num = 2 : i32
  // CHECK-COUNT-6: nvvm.mma.sync {{.*}} : (vector<2xf16>, vector<2xf16>, f32) -> !llvm.struct<(f32, f32, f32, f32)>
  // CHECK: nvvm.ldmatrix {{.*}} num = 4 : i32
  // CHECK: nvvm.ldmatrix {{.*}} num = 2 : i32
  // CHECK-COUNT-6: nvvm.mma.sync
  // CHECK-NOT: nvvm.mma.sync
  gpu.func @values(%p: tensor<64x32xf16, #a>, %v: !fagpu.smem<32x24xf16, swizzle = 0>, %o: tensor<64x24xf32, #acc>) kernel {
    %r = fagpu.mma %p, %v, %o : tensor<64x32xf16, #a>, !fagpu.smem<32x24xf16, swizzle = 0>, tensor<64x24xf32, #acc> -> tensor<64x24xf32, #acc>
    gpu.return
  }
}

// -----

// dQ = dS K with dS stored transposed (dSᵀ [keys, queries], transpose_a):
// A's fragments by ldmatrix.x4.trans from the warp's 16 columns, K [keys,
// D] by .trans as V is; 64 keys: four k16 steps of one A load and two B
// loads (four n8 tiles), 4 x 4 products.

#acc = #fagpu.mma_sync_acc<warps = 4>
gpu.module @m {
  // CHECK-LABEL: gpu.func @dq
  // CHECK-COUNT-3: nvvm.ldmatrix %{{.*}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<col>, num = 4 : i32
  // CHECK-COUNT-4: nvvm.mma.sync
  // CHECK-COUNT-3: nvvm.ldmatrix {{.*}} layout = #nvvm.mma_layout<col>, num = 4
  // CHECK-COUNT-4: nvvm.mma.sync
  // CHECK-COUNT-3: nvvm.ldmatrix {{.*}} layout = #nvvm.mma_layout<col>, num = 4
  // CHECK-COUNT-4: nvvm.mma.sync
  // CHECK-COUNT-3: nvvm.ldmatrix {{.*}} layout = #nvvm.mma_layout<col>, num = 4
  // CHECK-COUNT-4: nvvm.mma.sync
  // CHECK-NOT: nvvm.mma.sync
  // CHECK: gpu.return

  // The warp's first query is a column of dSᵀ: 16 columns a warp, added to
  // the lane's column in the ldmatrix.trans pattern.
  // ADDR-LABEL: gpu.func @dq
  // ADDR: %[[WARP:.*]] = arith.index_castui {{.*}} {fagpu.uniform_warp_index}
  // ADDR: %[[FIRST:.*]] = arith.muli %[[WARP]], %c16 : index
  // ADDR-NEXT: arith.addi %[[FIRST]], %{{.*}} : index
  // ADDR: nvvm.ldmatrix {{.*}} layout = #nvvm.mma_layout<col>
  // ADDR: gpu.return
  gpu.func @dq(%dst: !fagpu.smem<64x64xbf16, swizzle = 128>, %k: !fagpu.smem<64x32xbf16, swizzle = 64>, %dq: tensor<64x32xf32, #acc>) kernel {
    %r = fagpu.mma %dst, %k, %dq transpose_a : !fagpu.smem<64x64xbf16, swizzle = 128>, !fagpu.smem<64x32xbf16, swizzle = 64>, tensor<64x32xf32, #acc> -> tensor<64x32xf32, #acc>
    gpu.return
  }
}

// -----

// Column groups (#fagpu.mma_sync_acc_cols): dQ's 64 rows over 8 warps, 4
// row blocks x 2 column groups of 32. Each warp: one m16 tile, four n8
// tiles of its group's columns; 128 keys = 8 k16 steps of one dSᵀ load and
// two K loads (the group's 32 columns) a step: 24 loads, 32 products.

#cols = #fagpu.mma_sync_acc_cols<warps = 8, columns = 2>
gpu.module @m {
  // CHECK-LABEL: gpu.func @dq_column_groups
  // CHECK-COUNT-3: nvvm.ldmatrix {{.*}} layout = #nvvm.mma_layout<col>, num = 4
  // CHECK-COUNT-4: nvvm.mma.sync
  // CHECK-COUNT-21: nvvm.ldmatrix
  // CHECK-NOT: nvvm.ldmatrix
  // CHECK: gpu.return

  // Row block w % 4 (16 queries: dSᵀ's columns), column group w / 4 (32 of
  // K's columns).
  // ADDR-LABEL: gpu.func @dq_column_groups
  // ADDR: %[[WARP:.*]] = arith.index_castui {{.*}} {fagpu.uniform_warp_index}
  // ADDR-DAG: %[[ROWW:.*]] = arith.remui %[[WARP]], %c4 : index
  // ADDR-DAG: arith.muli %[[ROWW]], %c16 : index
  // ADDR-DAG: %[[GROUP:.*]] = arith.divui %[[WARP]], %c4 : index
  // ADDR-DAG: arith.muli %[[GROUP]], %c32 : index
  // ADDR: gpu.return
  gpu.func @dq_column_groups(%dst: !fagpu.smem<128x64xbf16, swizzle = 128>, %k: !fagpu.smem<128x64xbf16, swizzle = 128>, %dq: tensor<64x64xf32, #cols>) kernel {
    %r = fagpu.mma %dst, %k, %dq transpose_a : !fagpu.smem<128x64xbf16, swizzle = 128>, !fagpu.smem<128x64xbf16, swizzle = 128>, tensor<64x64xf32, #cols> -> tensor<64x64xf32, #cols>
    gpu.return
  }
}
