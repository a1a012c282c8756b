// RUN: fa-opt %s -split-input-file -pass-pipeline='builtin.module(gpu.module(fa-convert-fagpu-to-nvvm))' | FileCheck %s
// RUN: fa-opt %s -split-input-file -pass-pipeline='builtin.module(gpu.module(fa-convert-fagpu-to-nvvm{matrix-stores=1}))' | FileCheck %s --check-prefix=MATRIX

// Register tiles become the thread's registers (a vector in the layout's
// register order: a 64x16 WGMMA accumulator over 4 warps is 8 f32 per
// thread); elementwise math runs on them unchanged, exp2 as ex2.approx.

#acc = #fagpu.wgmma_acc<warps = 4>
gpu.module @m {
  // CHECK-LABEL: gpu.func @elementwise
  // CHECK: %[[C:.*]] = arith.constant dense<2.000000e+00> : vector<8xf32>
  // CHECK: %[[S:.*]] = vector.broadcast %{{.*}} : f32 to vector<8xf32>
  // CHECK: arith.mulf %[[S]], %[[C]] fastmath<contract> : vector<8xf32>
  // CHECK-COUNT-8: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
  // CHECK-NOT: tensor<
  gpu.func @elementwise(%x: f32) kernel {
    %c = arith.constant dense<2.0> : tensor<64x16xf32, #acc>
    %s = tensor.splat %x : tensor<64x16xf32, #acc>
    %y = arith.mulf %c, %s : tensor<64x16xf32, #acc>
    %e = math.exp2 %y : tensor<64x16xf32, #acc>
    gpu.return
  }
}

// -----

// Coordinates: the lane/warp part computed once, the register part a
// constant in register order (d0..d7 of m64n16: columns 0 1 0 1 8 9 8 9).

#acc = #fagpu.wgmma_acc<warps = 4>
gpu.module @m {
  // CHECK-LABEL: gpu.func @coords
  // CHECK: gpu.thread_id x
  // CHECK: %[[BASE:.*]] = arith.index_cast %{{.*}} : index to i32
  // CHECK: %[[SPLAT:.*]] = vector.broadcast %[[BASE]] : i32 to vector<8xi32>
  // CHECK: %[[REG:.*]] = arith.constant dense<[0, 1, 0, 1, 8, 9, 8, 9]> : vector<8xi32>
  // CHECK: arith.addi %[[SPLAT]], %[[REG]] : vector<8xi32>
  gpu.func @coords() kernel {
    %cols = fagpu.tile_coords dim = 1 : tensor<64x16xi32, #acc>
    gpu.return
  }
}

// -----

// A mask's compares: coordinates (or the diagonal j - i) against a bound
// become each register's static offset against the bound less the thread's
// part, in 32-bit registers: one compare of an immediate per element, no
// coordinate held per element (m64n16: columns 0 1 0 1 8 9 8 9, rows
// 0 0 8 8 0 0 8 8, so j - i is 0 1 -8 -7 8 9 0 1).

#acc = #fagpu.wgmma_acc<warps = 4>
gpu.module @m {
  // CHECK-LABEL: gpu.func @coordinate_compare
  // CHECK-SAME: (%[[KEYS:.*]]: index, %[[EDGE:.*]]: index)
  // CHECK: %[[K32:.*]] = arith.index_cast %[[KEYS]] : index to i32
  // CHECK: %[[KV:.*]] = vector.broadcast %[[K32]] : i32 to vector<8xi32>
  // CHECK: %[[KB:.*]] = arith.subi %[[KV]], %{{.*}} : vector<8xi32>
  // CHECK-NEXT: %[[COLS:.*]] = arith.constant dense<[0, 1, 0, 1, 8, 9, 8, 9]> : vector<8xi32>
  // CHECK-NEXT: %[[IN:.*]] = arith.cmpi slt, %[[COLS]], %[[KB]] : vector<8xi32>
  // CHECK: %[[E32:.*]] = arith.index_cast %[[EDGE]] : index to i32
  // CHECK: %[[EV:.*]] = vector.broadcast %[[E32]] : i32 to vector<8xi32>
  // CHECK: %[[EB:.*]] = arith.subi %[[EV]], %{{.*}} : vector<8xi32>
  // CHECK-NEXT: %[[DIAG:.*]] = arith.constant dense<[0, 1, -8, -7, 8, 9, 0, 1]> : vector<8xi32>
  // CHECK-NEXT: %[[BAND:.*]] = arith.cmpi slt, %[[DIAG]], %[[EB]] : vector<8xi32>
  // CHECK-NEXT: arith.andi %[[IN]], %[[BAND]] : vector<8xi1>
  // An unsigned order keeps the coordinates as they are (the registers'
  // coordinates against the bound, not a constant against it).
  // CHECK: arith.cmpi ult, %{{[0-9]+}}, %{{[0-9]+}} : vector<8xi32>
  gpu.func @coordinate_compare(%keys: index, %edge: index) kernel {
    %i = fagpu.tile_coords dim = 0 : tensor<64x16xindex, #acc>
    %j = fagpu.tile_coords dim = 1 : tensor<64x16xindex, #acc>
    %left = tensor.splat %keys : tensor<64x16xindex, #acc>
    %in = arith.cmpi slt, %j, %left : tensor<64x16xindex, #acc>
    %diag = arith.subi %j, %i : tensor<64x16xindex, #acc>
    %upper = tensor.splat %edge : tensor<64x16xindex, #acc>
    %band = arith.cmpi slt, %diag, %upper : tensor<64x16xindex, #acc>
    %both = arith.andi %in, %band : tensor<64x16xi1, #acc>
    %unsigned = arith.cmpi ult, %j, %left : tensor<64x16xindex, #acc>
    gpu.return
  }
}

// -----

// Constant bounds (a sequence end inside a block at a static length): a
// register whose compare has one outcome on every thread becomes that
// constant. m64n16: registers 0-3 hold columns 0-7 (2t + 0 1), 4-7 columns
// 8-15, so j < 8 is decided everywhere, j < 4 only on registers 4-7 (the
// rest stay compares), and j - i < 16 holds everywhere.

#acc = #fagpu.wgmma_acc<warps = 4>
gpu.module @m {
  // CHECK-LABEL: gpu.func @constant_bounds
  // CHECK: %[[WHOLE:.*]] = arith.constant dense<[true, true, true, true, false, false, false, false]> : vector<8xi1>
  // CHECK-NOT: arith.cmpi
  // CHECK: %[[PART:.*]] = arith.cmpi slt, %{{.*}}, %{{.*}} : vector<8xi32>
  // CHECK: %[[KNOWN:.*]] = arith.constant dense<[false, false, false, false, true, true, true, true]> : vector<8xi1>
  // CHECK: %[[FALSE:.*]] = arith.constant dense<false> : vector<8xi1>
  // CHECK: %[[EDGE:.*]] = arith.select %[[KNOWN]], %[[FALSE]], %[[PART]] : vector<8xi1>, vector<8xi1>
  // CHECK: %[[BOTH:.*]] = arith.andi %[[WHOLE]], %[[EDGE]] : vector<8xi1>
  // CHECK-NOT: arith.cmpi
  // CHECK: %[[TRUE:.*]] = arith.constant dense<true> : vector<8xi1>
  // CHECK: arith.andi %[[BOTH]], %[[TRUE]] : vector<8xi1>
  gpu.func @constant_bounds() kernel {
    %i = fagpu.tile_coords dim = 0 : tensor<64x16xindex, #acc>
    %j = fagpu.tile_coords dim = 1 : tensor<64x16xindex, #acc>
    %eight = arith.constant dense<8> : tensor<64x16xindex, #acc>
    %four = arith.constant dense<4> : tensor<64x16xindex, #acc>
    %sixteen = arith.constant dense<16> : tensor<64x16xindex, #acc>
    %whole = arith.cmpi slt, %j, %eight : tensor<64x16xindex, #acc>
    %part = arith.cmpi slt, %j, %four : tensor<64x16xindex, #acc>
    %both = arith.andi %whole, %part : tensor<64x16xi1, #acc>
    %diag = arith.subi %j, %i : tensor<64x16xindex, #acc>
    %band = arith.cmpi slt, %diag, %sixteen : tensor<64x16xindex, #acc>
    %all = arith.andi %both, %band : tensor<64x16xi1, #acc>
    gpu.return
  }
}

// -----

// Row max: the two registers of each row the thread holds, then a butterfly
// over the quad (lanes 4g .. 4g + 3 split a row: xor 1, xor 2). The result
// holds rows g and g + 8; expanding it back is a register shuffle.

#acc = #fagpu.wgmma_acc<warps = 4>
#rows = #fagpu.rows<#fagpu.wgmma_acc<warps = 4>>
gpu.module @m {
  // CHECK-LABEL: gpu.func @rows
  // CHECK: arith.maximumf
  // CHECK: gpu.shuffle  xor %{{.*}}, %c1_i32, %{{.*}} : f32
  // CHECK: arith.maximumf
  // CHECK: gpu.shuffle  xor %{{.*}}, %c2_i32, %{{.*}} : f32
  // CHECK: %[[ROWS:.*]] = vector.from_elements %{{.*}}, %{{.*}} : vector<2xf32>
  // CHECK: vector.shuffle %[[ROWS]], %[[ROWS]] [0, 0, 1, 1, 0, 0, 1, 1] : vector<2xf32>, vector<2xf32>
  gpu.func @rows(%x: f32) kernel {
    %s = tensor.splat %x : tensor<64x16xf32, #acc>
    %m = fagpu.reduce_rows max %s : tensor<64x16xf32, #acc> -> tensor<64xf32, #rows>
    %e = fagpu.expand_rows %m : tensor<64xf32, #rows> -> tensor<64x16xf32, #acc>
    gpu.return
  }
}

// -----

// Row sums in per-lane parts: each part is the thread's registers of the
// row added, then the scaled running part added (no shuffle); completing
// them is the butterfly over the quad alone.

#acc = #fagpu.mma_sync_acc<warps = 4>
#rows = #fagpu.rows<#fagpu.mma_sync_acc<warps = 4>>
#parts = #fagpu.rows<#fagpu.mma_sync_acc<warps = 4>, partial = true>
gpu.module @m {
  // CHECK-LABEL: gpu.func @row_parts
  // CHECK-NOT: gpu.shuffle
  // CHECK: arith.addf
  // CHECK: %[[SCALED:.*]] = arith.mulf
  // CHECK-NEXT: arith.addf %[[SCALED]], %{{.*}} : f32
  // CHECK-NOT: gpu.shuffle
  // CHECK: vector.from_elements
  // CHECK: gpu.shuffle  xor %{{.*}}, %c1_i32, %{{.*}} : f32
  // CHECK-NEXT: arith.addf
  // CHECK: gpu.shuffle  xor %{{.*}}, %c2_i32, %{{.*}} : f32
  // CHECK-NEXT: arith.addf
  // CHECK-COUNT-2: gpu.shuffle
  // CHECK-NOT: gpu.shuffle
  gpu.func @row_parts(%x: f32, %y: f32) kernel {
    %p = tensor.splat %x : tensor<64x16xf32, #acc>
    %alpha = tensor.splat %y : tensor<64xf32, #rows>
    %zero = arith.constant dense<0.0> : tensor<64xf32, #parts>
    %l = fagpu.accumulate_rows %p scaled %alpha into %zero : tensor<64x16xf32, #acc>, tensor<64xf32, #rows> -> tensor<64xf32, #parts>
    %sums = fagpu.complete_rows %l : tensor<64xf32, #parts> -> tensor<64xf32, #rows>
    gpu.return
  }
}

// -----

// The accumulator of P becoming P·V's register A operand: the same threads
// hold the same elements in the same register order (d0..d3 of the first n8
// chunk are a0..a3, the second chunk's are a4..a7), so the shuffle is the
// identity and folds away.

#acc = #fagpu.wgmma_acc<warps = 4>
#a = #fagpu.wgmma_a<warps = 4>
gpu.module @m {
  // CHECK-LABEL: gpu.func @convert
  // CHECK: vector.shuffle %{{.*}}, %{{.*}} [0, 1, 2, 3, 4, 5, 6, 7] : vector<8xbf16>, vector<8xbf16>
  gpu.func @convert(%x: bf16) kernel {
    %s = tensor.splat %x : tensor<64x16xbf16, #acc>
    %a = fagpu.convert_layout %s : tensor<64x16xbf16, #acc> -> tensor<64x16xbf16, #a>
    gpu.return
  }
}

// -----

// Shared tiles are placed 1024-byte aligned in the dynamic shared memory;
// the kernel records the total. A copy ends with the async-proxy fence (the
// tensor cores read next) and a barrier.

gpu.module @m {
  // CHECK: llvm.mlir.global external @__fa_shared_tiles() {addr_space = 3 : i32, alignment = 1024 : i64} : !llvm.array<0 x i8>
  // CHECK-LABEL: gpu.func @copy
  // CHECK-SAME: fa.shared_bytes = 13312 : i64
  // CHECK: llvm.mlir.addressof @__fa_shared_tiles : !llvm.ptr<3>
  // CHECK: arith.constant 9216 : index
  // CHECK: scf.for
  // CHECK:   arith.xori
  // CHECK:   llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<8xbf16>
  // CHECK:   llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<8xbf16>, !llvm.ptr<3>
  // CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
  // CHECK-NEXT: gpu.barrier
  gpu.func @copy(%src: memref<128x32xbf16>, %row: index, %n: index) kernel {
    %pad = fagpu.alloc_shared : !fagpu.smem<8x64xbf16, swizzle = 0>
    %t = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
    %u = fagpu.alloc_shared : !fagpu.smem<64x32xbf16, swizzle = 64>
    fagpu.copy_to_shared %src[%row] limit %n into %u : memref<128x32xbf16>, !fagpu.smem<64x32xbf16, swizzle = 64>
    gpu.return
  }
}

// -----

// S = Q Kᵀ from two shared tiles: one wgmma per k16 step between one fence
// and one commit + wait. Each operand's descriptor is built once from its
// address; step k's is step 0's with the start-address field moved by
// 32 k bytes (>> 4: 2 k), one 32-bit add on the low word. From a zero
// accumulator the first step does not read D (scale-d 0, an undefined
// input: no register is zeroed first).

#acc = #fagpu.wgmma_acc<warps = 4>
gpu.module @m {
  // CHECK-LABEL: gpu.func @mma_ss
  // CHECK: nvvm.wgmma.fence.aligned
  // CHECK: %[[UNDEF:.*]] = llvm.mlir.undef : !llvm.struct<(f32, f32
  // CHECK-COUNT-2: llvm.ptrtoint
  // CHECK-NOT: llvm.ptrtoint
  // CHECK: nvvm.wgmma.mma_async %[[A0:.*]], %[[B0:.*]], %[[UNDEF]], <m = 64, n = 64, k = 16>, D[<f32>, <zero>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
  // CHECK: %[[B1LOW:.*]] = arith.trunci %[[B0]] : i64 to i32
  // CHECK: arith.addi %[[B1LOW]], %c2_i32
  // CHECK: arith.andi %[[B0]], %c-4294967296_i64
  // CHECK: %[[A1LOW:.*]] = arith.trunci %[[A0]] : i64 to i32
  // CHECK: arith.addi %[[A1LOW]], %c2_i32
  // CHECK: nvvm.wgmma.mma_async {{.*}} D[<f32>, <one>]
  // CHECK: arith.addi %{{.*}}, %c4_i32
  // CHECK: nvvm.wgmma.mma_async
  // CHECK: arith.addi %{{.*}}, %c6_i32
  // CHECK: nvvm.wgmma.mma_async
  // CHECK-NOT: nvvm.wgmma.mma_async
  // CHECK: nvvm.wgmma.commit.group.sync.aligned
  // CHECK-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
  gpu.func @mma_ss() kernel {
    %q = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
    %k = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
    %z = arith.constant dense<0.0> : tensor<64x64xf32, #acc>
    %s = fagpu.mma %q, %k, %z transpose_b : !fagpu.smem<64x64xbf16, swizzle = 128>, !fagpu.smem<64x64xbf16, swizzle = 128>, tensor<64x64xf32, #acc> -> tensor<64x64xf32, #acc>
    gpu.return
  }
}

// -----

// O = P V with P in registers: the register-A wgmma as one inline PTX
// instruction (V is N-major: imm-trans-b = 1), k16 steps over the 64 keys.

#acc = #fagpu.wgmma_acc<warps = 4>
#a = #fagpu.wgmma_a<warps = 4>
gpu.module @m {
  // CHECK-LABEL: gpu.func @mma_rs
  // CHECK: nvvm.wgmma.fence.aligned
  // CHECK-COUNT-4: llvm.inline_asm has_side_effects asm_dialect = att "{{.*}}wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {{.*}}, p, 1, 1, 1;
  // CHECK: nvvm.wgmma.commit.group.sync.aligned
  gpu.func @mma_rs(%x: f16) kernel {
    %v = fagpu.alloc_shared : !fagpu.smem<64x64xf16, swizzle = 128>
    %p = tensor.splat %x : tensor<64x64xf16, #a>
    %z = arith.constant dense<0.0> : tensor<64x64xf32, #acc>
    %o = fagpu.mma %p, %v, %z : tensor<64x64xf16, #a>, !fagpu.smem<64x64xf16, swizzle = 128>, tensor<64x64xf32, #acc> -> tensor<64x64xf32, #acc>
    gpu.return
  }
}

// -----

// Per-row values are held by the four lanes of a quad: only the first
// stores.

#rows = #fagpu.rows<#fagpu.wgmma_acc<warps = 4>>
gpu.module @m {
  // CHECK-LABEL: gpu.func @store_rows
  // CHECK: %[[OWNER:.*]] = arith.cmpi eq
  // CHECK: arith.andi %{{.*}}, %[[OWNER]] : i1
  // CHECK: scf.if
  // CHECK:   memref.store %{{.*}}, %{{.*}}[%{{.*}}] : memref<64xf32>
  gpu.func @store_rows(%x: f32, %dst: memref<64xf32>, %row: index, %n: index) kernel {
    %s = tensor.splat %x : tensor<64xf32, #rows>
    fagpu.store_tile %s, %dst[%row] limit %n : tensor<64xf32, #rows>, memref<64xf32>
    gpu.return
  }
}

// -----

// A bf16 tile in the WGMMA accumulator layout: each thread holds column
// pairs (2c, 2c + 1) of every 8-column chunk. The four lanes that split a
// chunk trade pairs (two xor shuffles, one per lane bit) so that each holds
// a whole chunk: 64 x 64 / 128 threads = 32 registers go out as 4
// eight-element stores, 16-byte aligned. A row stride of 2 (not 8) keeps
// two-element stores; an f32 tile or an odd row stride one store per
// element.

#acc = #fagpu.wgmma_acc<warps = 4>
gpu.module @m {
  // CHECK-LABEL: gpu.func @store_chunks
  // CHECK-COUNT-4: gpu.shuffle xor %{{.*}}, %{{.*}}, %{{.*}} : i32
  // CHECK-NOT: gpu.shuffle xor
  // CHECK: vector.store %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<256x64xbf16>, vector<8xbf16>
  // CHECK-COUNT-4: gpu.shuffle xor %{{.*}}, %{{.*}}, %{{.*}} : i32
  // CHECK-NOT: gpu.shuffle xor
  // CHECK: vector.store %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<256x64xbf16>, vector<8xbf16>
  // CHECK-COUNT-4: gpu.shuffle xor %{{.*}}, %{{.*}}, %{{.*}} : i32
  // CHECK-NOT: gpu.shuffle xor
  // CHECK: vector.store %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<256x64xbf16>, vector<8xbf16>
  // CHECK-COUNT-4: gpu.shuffle xor %{{.*}}, %{{.*}}, %{{.*}} : i32
  // CHECK-NOT: gpu.shuffle xor
  // CHECK: vector.store %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<256x64xbf16>, vector<8xbf16>
  // CHECK-NOT: vector.store
  // CHECK-NOT: memref.store
  // CHECK: gpu.return
  gpu.func @store_chunks(%x: bf16, %dst: memref<256x64xbf16>, %row: index, %n: index) kernel {
    %s = tensor.splat %x : tensor<64x64xbf16, #acc>
    fagpu.store_tile %s, %dst[%row] limit %n : tensor<64x64xbf16, #acc>, memref<256x64xbf16>
    gpu.return
  }
  // CHECK-LABEL: gpu.func @store_pairs
  // CHECK-NOT: gpu.shuffle xor
  // CHECK-COUNT-16: vector.store %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}] {alignment = 4 : i64} : memref<256x64xbf16, strided<[66, 1]>>, vector<2xbf16>
  // CHECK-NOT: memref.store
  // CHECK: gpu.return
  gpu.func @store_pairs(%x: bf16, %dst: memref<256x64xbf16, strided<[66, 1]>>, %row: index, %n: index) kernel {
    %s = tensor.splat %x : tensor<64x64xbf16, #acc>
    fagpu.store_tile %s, %dst[%row] limit %n : tensor<64x64xbf16, #acc>, memref<256x64xbf16, strided<[66, 1]>>
    gpu.return
  }
  // CHECK-LABEL: gpu.func @store_odd_stride
  // CHECK-NOT: vector.store
  // CHECK-COUNT-32: memref.store
  gpu.func @store_odd_stride(%x: bf16, %dst: memref<256x64xbf16, strided<[65, 1]>>, %row: index, %n: index) kernel {
    %s = tensor.splat %x : tensor<64x64xbf16, #acc>
    fagpu.store_tile %s, %dst[%row] limit %n : tensor<64x64xbf16, #acc>, memref<256x64xbf16, strided<[65, 1]>>
    gpu.return
  }
}

// -----

// Asynchronous copies: one cp.async of 16 bytes per chunk (0 source bytes,
// zero fill, past the limit), committed as a group; the wait is followed by
// the async-proxy fence and a barrier. A stage of a ring is its base plus a
// 1024-byte-aligned stride.

gpu.module @m {
  // CHECK-LABEL: gpu.func @async
  // CHECK-SAME: fa.shared_bytes = 32768 : i64
  // CHECK: %[[STRIDE:.*]] = arith.constant 16384 : index
  // CHECK: arith.muli %{{.*}}, %[[STRIDE]] : index
  // CHECK: scf.for
  // CHECK:   memref.extract_aligned_pointer_as_index
  // CHECK:   %[[SIZE:.*]] = arith.select %{{.*}}, %c16_i32, %c0_i32 : i32
  // CHECK:   nvvm.cp.async.shared.global %{{.*}}, %{{.*}}, 16, cache = cg, %[[SIZE]] : !llvm.ptr<3>, !llvm.ptr<1>, i32
  // CHECK: nvvm.cp.async.commit.group
  // CHECK: nvvm.cp.async.wait.group 1
  // CHECK-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
  // CHECK-NEXT: gpu.barrier
  gpu.func @async(%src: memref<1024x64xbf16>, %row: index, %n: index, %i: index) kernel {
    %ring = fagpu.alloc_shared : !fagpu.smem<2x128x64xbf16, swizzle = 128>
    %t = fagpu.stage %ring[%i] : !fagpu.smem<2x128x64xbf16, swizzle = 128> -> !fagpu.smem<128x64xbf16, swizzle = 128>
    fagpu.async_copy_to_shared %src[%row] limit %n into %t : memref<1024x64xbf16>, !fagpu.smem<128x64xbf16, swizzle = 128>
    fagpu.commit_shared_copies
    fagpu.wait_shared_copies pending = 1
    gpu.return
  }
}

// -----

// The backward's memory ops: per-row statistics loaded by the threads that
// hold each row (2 rows a thread in a 64-row accumulator, rows past the
// limit 0); a 16-bit tile written into shared memory two columns a store,
// after a barrier and before the proxy fence and barrier that publish it;
// an accumulated store trades pairs between neighbouring lanes (one
// shuffle a word) and adds four columns at a time with one vector reduction.

#acc = #fagpu.wgmma_acc<warps = 4>
#rows = #fagpu.rows<#fagpu.wgmma_acc<warps = 4>>
gpu.module @m {
  // CHECK-LABEL: gpu.func @backward_memory
  // CHECK-COUNT-2: memref.load %{{.*}} : memref<256xf32>
  // CHECK: gpu.barrier
  // CHECK-COUNT-16: llvm.store %{{.*}}, %{{.*}} {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<3>
  // CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
  // With matrix-stores, the 16 column pairs a thread holds go out four to
  // a stmatrix.x4 (the f32 tile below keeps its paired stores).
  // MATRIX-LABEL: gpu.func @backward_memory
  // MATRIX: gpu.barrier
  // MATRIX-NOT: llvm.store
  // MATRIX-COUNT-4: nvvm.stmatrix %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<row>, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>} : !llvm.ptr<3>, i32, i32, i32, i32
  // MATRIX-NOT: llvm.store
  // MATRIX: nvvm.fence.proxy
  // MATRIX-LABEL: gpu.func @dq_through_shared
  // MATRIX-NOT: nvvm.stmatrix
  // MATRIX-COUNT-8: llvm.store %{{.*}}, %{{.*}} {alignment = 8 : i64} : vector<2xf32>, !llvm.ptr<3>
  // CHECK: gpu.barrier
  // CHECK-COUNT-2: gpu.shuffle  xor
  // CHECK: llvm.inline_asm has_side_effects asm_dialect = att "red.global.add.v4.f32 [$0], {$1, $2, $3, $4};", "l,f,f,f,f"
  // CHECK-COUNT-7: red.global.add.v4.f32
  // CHECK-NOT: memref.store
  // CHECK-NOT: memref.atomic_rmw
  gpu.func @backward_memory(%lse: memref<256xf32>, %dq: memref<256x64xf32>, %p: tensor<64x64xbf16, #acc>, %acc: tensor<64x64xf32, #acc>, %row: index, %n: index) kernel {
    %stats = fagpu.load_tile %lse[%row] limit %n : memref<256xf32> -> tensor<64xf32, #rows>
    %ps = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
    fagpu.store_to_shared %p, %ps : tensor<64x64xbf16, #acc>, !fagpu.smem<64x64xbf16, swizzle = 128>
    fagpu.store_tile %acc, %dq[%row] limit %n accumulate : tensor<64x64xf32, #acc>, memref<256x64xf32>
    gpu.return
  }
}

// -----

// dQ through shared memory: an f32 tile written into a padded plain tile
// eight bytes (a column pair) a store, published to the writing warpgroup
// alone (named barrier 8 + warpgroup, 128 threads) and with no leading
// wait where `unread`; then thread t of warpgroup b adds row t's band b
// (32 columns, 128 bytes) with one bulk reduction and commits it; the
// wait for the reductions' reads is cp.async.bulk.wait_group.read 0.

#cols = #fagpu.wgmma_acc_cols<warps = 8>
gpu.module @m {
  // CHECK-LABEL: gpu.func @dq_through_shared
  // CHECK: nvvm.cp.async.bulk.wait_group 0 {read}
  // CHECK-NOT: gpu.barrier
  // CHECK-NOT: nvvm.barrier
  // CHECK-COUNT-8: llvm.store %{{.*}}, %{{.*}} {alignment = 8 : i64} : vector<2xf32>, !llvm.ptr<3>
  // CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
  // CHECK: %[[WG:.*]] = arith.divui %{{.*}}, %c128
  // CHECK: %[[ID:.*]] = arith.addi %[[WG]], %c8
  // CHECK: %[[ID32:.*]] = arith.index_castui %[[ID]] : index to i32
  // CHECK: nvvm.barrier id = %[[ID32]] number_of_threads = %{{.*}}
  // CHECK: scf.if
  // CHECK: scf.if
  // CHECK: llvm.inline_asm has_side_effects asm_dialect = att "cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [$0], [$1], $2;", "l,r,r" %{{.*}}, %{{.*}}, %c128_i32
  // CHECK: nvvm.cp.async.bulk.commit.group
  // CHECK-NOT: cp.reduce.async.bulk
  // The second store waits for the reads, then at its warpgroup's barrier.
  // CHECK: nvvm.cp.async.bulk.wait_group 0 {read}
  // CHECK: nvvm.barrier id
  // CHECK-COUNT-8: llvm.store
  // CHECK: nvvm.barrier id
  // CHECK-NOT: gpu.barrier
  // CHECK: gpu.return
  gpu.func @dq_through_shared(%dq: memref<256x64xf32>, %acc: tensor<64x64xf32, #cols>, %row: index, %n: index) kernel attributes {fa.block = array<i64: 256, 1, 1>} {
    %s = fagpu.alloc_shared : !fagpu.smem<64x72xf32, swizzle = 0>
    fagpu.wait_shared_reads
    fagpu.store_to_shared %acc, %s sync = warpgroup unread : tensor<64x64xf32, #cols>, !fagpu.smem<64x72xf32, swizzle = 0>
    fagpu.reduce_to_global %s, %dq[%row] limit %n bands = 2 : !fagpu.smem<64x72xf32, swizzle = 0>, memref<256x64xf32>
    fagpu.wait_shared_reads
    fagpu.store_to_shared %acc, %s sync = warpgroup : tensor<64x64xf32, #cols>, !fagpu.smem<64x72xf32, swizzle = 0>
    gpu.return
  }
}

// -----

// A tile whose rows are the destination's, back to back (64 x 64 f32 into
// a 64-column dq_acc): one reduction of the valid rows (at most 64, 256
// bytes each) by the first thread, then its commit.

#acc = #fagpu.wgmma_acc<warps = 4>
gpu.module @m {
  // CHECK-LABEL: gpu.func @dq_whole_tile
  // CHECK: nvvm.fence.proxy
  // CHECK-NEXT: gpu.barrier
  // CHECK: %[[TID:.*]] = gpu.thread_id  x
  // CHECK-NEXT: %[[FIRST:.*]] = arith.cmpi eq, %[[TID]], %c0
  // CHECK: scf.if %[[FIRST]] {
  // CHECK:   %[[LEFT:.*]] = arith.subi %{{.*}}, %{{.*}} : index
  // CHECK:   %[[ROWS:.*]] = arith.minsi %{{.*}}, %[[LEFT]] : index
  // CHECK:   %[[ANY:.*]] = arith.cmpi sgt, %[[ROWS]], %c0
  // CHECK:   scf.if %[[ANY]] {
  // CHECK:     %[[BYTES:.*]] = arith.muli %[[ROWS]], %c256
  // CHECK:     %[[SIZE:.*]] = arith.index_cast %[[BYTES]] : index to i32
  // CHECK:     llvm.inline_asm has_side_effects asm_dialect = att "cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [$0], [$1], $2;", "l,r,r" %{{.*}}, %{{.*}}, %[[SIZE]]
  // CHECK:     nvvm.cp.async.bulk.commit.group
  // CHECK-NOT: cp.reduce.async.bulk
  // CHECK: gpu.return
  gpu.func @dq_whole_tile(%dq: memref<256x64xf32>, %acc: tensor<64x64xf32, #acc>, %row: index, %n: index) kernel attributes {fa.block = array<i64: 128, 1, 1>} {
    %s = fagpu.alloc_shared : !fagpu.smem<64x64xf32, swizzle = 0>
    fagpu.store_to_shared %acc, %s : tensor<64x64xf32, #acc>, !fagpu.smem<64x64xf32, swizzle = 0>
    fagpu.reduce_to_global %s, %dq[%row] limit %n bands = 1 : !fagpu.smem<64x64xf32, swizzle = 0>, memref<256x64xf32>
    fagpu.wait_shared_reads
    gpu.return
  }
}

// -----

// A transposed A (Pᵀ for Pᵀ·dO) is read from shared memory M-major: the
// descriptor's layout is col, one instruction per k16 step (4 for K = 64).

#acc = #fagpu.wgmma_acc<warps = 4>
gpu.module @m {
  // CHECK-LABEL: gpu.func @transposed_a
  // CHECK-COUNT-4: nvvm.wgmma.mma_async {{.*}} A[<bf16>, <one>, <col>], B[<bf16>, <one>, <row>]
  // CHECK-NOT: nvvm.wgmma.mma_async
  gpu.func @transposed_a(%acc: tensor<64x128xf32, #acc>) kernel {
    %ps = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
    %dos = fagpu.alloc_shared : !fagpu.smem<64x128xbf16, swizzle = 128>
    %dv = fagpu.mma %ps, %dos, %acc transpose_a : !fagpu.smem<64x64xbf16, swizzle = 128>, !fagpu.smem<64x128xbf16, swizzle = 128>, tensor<64x128xf32, #acc> -> tensor<64x128xf32, #acc>
    gpu.return
  }
}

// -----

// Warpgroups that split a 64-row accumulator's columns each issue m64n64
// (N / 2) over the whole A; B's descriptor starts at the warpgroup's 64
// rows of K (128 bytes each: 8 KiB for warpgroup 1).

#cols = #fagpu.wgmma_acc_cols<warps = 8>
gpu.module @m {
  // CHECK-LABEL: gpu.func @column_split
  // CHECK: %[[WG:.*]] = arith.divui %{{.*}}, %c4{{.*}} : index
  // CHECK: arith.muli %[[WG]], %c64{{.*}} : index
  // CHECK-COUNT-4: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 64, k = 16>
  // CHECK-NOT: nvvm.wgmma.mma_async
  gpu.func @column_split(%acc: tensor<64x128xf32, #cols>) kernel {
    %q = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
    %k = fagpu.alloc_shared : !fagpu.smem<128x64xbf16, swizzle = 128>
    %s = fagpu.mma %q, %k, %acc transpose_b : !fagpu.smem<64x64xbf16, swizzle = 128>, !fagpu.smem<128x64xbf16, swizzle = 128>, tensor<64x128xf32, #cols> -> tensor<64x128xf32, #cols>
    gpu.return
  }
}

// -----

// Two warpgroups split the 192 columns of an N-major B (dQ = dS K at head
// dim 192): 96 each, and the second warpgroup's start (column 96) lies
// half way through a 64-column swizzle atom. Each k16 step is three
// 32-column pieces that never cross an atom, each from its own descriptor
// (the warpgroup's first column, + 32, + 64) and accumulator registers
// (16 of the warpgroup's 48 each).

#cols = #fagpu.wgmma_acc_cols<warps = 8>
gpu.module @m {
  // CHECK-LABEL: gpu.func @column_split_inside_atoms
  // CHECK: %[[WG:.*]] = arith.divui %{{.*}}, %c4{{.*}} : index
  // CHECK: %[[FIRST:.*]] = arith.muli %[[WG]], %c96{{.*}} : index
  // CHECK: nvvm.wgmma.fence.aligned
  // CHECK-COUNT-4: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 32, k = 16>
  // CHECK: arith.addi %[[FIRST]], %c32{{.*}} : index
  // CHECK-COUNT-4: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 32, k = 16>
  // CHECK: arith.addi %[[FIRST]], %c64{{.*}} : index
  // CHECK-COUNT-4: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 32, k = 16>
  // CHECK-NOT: nvvm.wgmma.mma_async
  // CHECK: nvvm.wgmma.commit.group.sync.aligned
  gpu.func @column_split_inside_atoms(%acc: tensor<64x192xf32, #cols>) kernel {
    %ds = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
    %k = fagpu.alloc_shared : !fagpu.smem<64x192xbf16, swizzle = 128>
    %dq = fagpu.mma %ds, %k, %acc : !fagpu.smem<64x64xbf16, swizzle = 128>, !fagpu.smem<64x192xbf16, swizzle = 128>, tensor<64x192xf32, #cols> -> tensor<64x192xf32, #cols>
    gpu.return
  }
}

// -----

// matrix-stores on an unswizzled, padded tile (144-byte rows: a row's
// 16-byte chunks stay aligned, as they do in every shared tile): the rows'
// own addresses, four column pairs a stmatrix; the default lowering keeps
// its column-pair stores.

#acc = #fagpu.wgmma_acc<warps = 4>
gpu.module @m {
  // MATRIX-LABEL: gpu.func @matrix_stores_padded_rows
  // MATRIX-NOT: llvm.store
  // MATRIX-COUNT-4: nvvm.stmatrix
  // MATRIX-NOT: llvm.store
  // MATRIX: gpu.return
  // CHECK-LABEL: gpu.func @matrix_stores_padded_rows
  // CHECK-NOT: nvvm.stmatrix
  // CHECK-COUNT-16: llvm.store %{{.*}}, %{{.*}} {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<3>
  // CHECK-NOT: nvvm.stmatrix
  // CHECK: gpu.return
  gpu.func @matrix_stores_padded_rows(%p: tensor<64x64xbf16, #acc>) kernel {
    %padded = fagpu.alloc_shared : !fagpu.smem<64x72xbf16, swizzle = 0>
    fagpu.store_to_shared %p, %padded : tensor<64x64xbf16, #acc>, !fagpu.smem<64x72xbf16, swizzle = 0>
    gpu.return
  }
}

// -----

// An 8-bit tile's transpose (V for P·V in FP8). With pair_keys, a warp at a
// time takes 16 source rows x 32 columns: one ldmatrix.trans.x4 of 16-bit
// pairs, four byte permutes (even bytes 0x6420, odd 0x7531 of matrices 0
// and 1, then 2 and 3), one stmatrix.x4; 128 x 128 bytes are 32 such units
// for the block's 8 warps, between the barrier that frees the destination
// and the proxy fence that publishes it. Without pair_keys (or on sides not
// multiples of 32), threads regroup 4 x 4 byte blocks: 4 loads and 4 stores
// of 32 bits each.

gpu.module @m {
  // CHECK-LABEL: gpu.func @transpose_pairs
  // CHECK: gpu.barrier
  // CHECK: scf.for %{{.*}} = %{{.*}} to %c32{{(_[0-9]+)?}} step %{{.*}} {
  // CHECK: %[[M:.*]] = nvvm.ldmatrix %{{.*}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<col>, num = 4 : i32, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>} : (!llvm.ptr<3>) -> !llvm.struct<(i32, i32, i32, i32)>
  // CHECK-DAG: %[[M0:.*]] = llvm.extractvalue %[[M]][0]
  // CHECK-DAG: %[[M1:.*]] = llvm.extractvalue %[[M]][1]
  // CHECK-DAG: %[[M2:.*]] = llvm.extractvalue %[[M]][2]
  // CHECK-DAG: %[[M3:.*]] = llvm.extractvalue %[[M]][3]
  // CHECK-DAG: %[[EVEN:.*]] = arith.constant 25632 : i32
  // CHECK-DAG: %[[ODD:.*]] = arith.constant 30001 : i32
  // CHECK: %[[E0:.*]] = nvvm.prmt <default> %[[EVEN]], %[[M0]], %[[M1]] : i32
  // CHECK: %[[O0:.*]] = nvvm.prmt <default> %[[ODD]], %[[M0]], %[[M1]] : i32
  // CHECK: %[[E1:.*]] = nvvm.prmt <default> %[[EVEN]], %[[M2]], %[[M3]] : i32
  // CHECK: %[[O1:.*]] = nvvm.prmt <default> %[[ODD]], %[[M2]], %[[M3]] : i32
  // CHECK: nvvm.stmatrix %{{.*}}, %[[E0]], %[[O0]], %[[E1]], %[[O1]] {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<row>, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>}
  // CHECK-NOT: llvm.load
  // CHECK: }
  // CHECK: nvvm.fence.proxy
  // CHECK-LABEL: gpu.func @transpose_blocks
  // CHECK-NOT: nvvm.ldmatrix
  // CHECK: scf.for
  // CHECK-COUNT-4: llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr<3> -> i32
  // CHECK-COUNT-4: llvm.store %{{.*}}, %{{.*}} {alignment = 4 : i64} : i32, !llvm.ptr<3>
  // CHECK: nvvm.fence.proxy
  gpu.func @transpose_pairs() kernel attributes {fa.block = array<i64: 256, 1, 1>} {
    %v = fagpu.alloc_shared : !fagpu.smem<128x128xf8E4M3FN, swizzle = 128>
    %vt = fagpu.alloc_shared : !fagpu.smem<128x128xf8E4M3FN, swizzle = 128>
    fagpu.transpose_shared %v, %vt pair_keys : !fagpu.smem<128x128xf8E4M3FN, swizzle = 128>, !fagpu.smem<128x128xf8E4M3FN, swizzle = 128>
    gpu.return
  }
  gpu.func @transpose_blocks() kernel attributes {fa.block = array<i64: 256, 1, 1>} {
    %v = fagpu.alloc_shared : !fagpu.smem<128x128xf8E4M3FN, swizzle = 128>
    %vt = fagpu.alloc_shared : !fagpu.smem<128x128xf8E4M3FN, swizzle = 128>
    fagpu.transpose_shared %v, %vt : !fagpu.smem<128x128xf8E4M3FN, swizzle = 128>, !fagpu.smem<128x128xf8E4M3FN, swizzle = 128>
    gpu.return
  }
}

// -----

// Whether some row a warp holds is true: the thread's two rows OR-ed, then
// one vote over the warp; `rarely` tells LLVM the vote is expected false.

#rows = #fagpu.rows<#fagpu.wgmma_acc<warps = 4>>
gpu.module @m {
  // CHECK-LABEL: gpu.func @warp_any
  // CHECK: %[[R0:.*]] = vector.extract %{{.*}}[0] : i1 from vector<2xi1>
  // CHECK: %[[R1:.*]] = vector.extract %{{.*}}[1] : i1 from vector<2xi1>
  // CHECK: %[[EITHER:.*]] = arith.ori %[[R0]], %[[R1]] : i1
  // CHECK: %[[ALL:.*]] = arith.constant -1 : i32
  // CHECK: %[[VOTE:.*]] = nvvm.vote.sync  any %[[ALL]], %[[EITHER]] -> i1
  // CHECK: %[[NO:.*]] = arith.constant false
  // CHECK: llvm.intr.expect %[[VOTE]], %[[NO]] : i1
  // CHECK-LABEL: gpu.func @warp_any_plain
  // CHECK: nvvm.vote.sync  any
  // CHECK-NOT: llvm.intr.expect
  // CHECK: gpu.return
  gpu.func @warp_any(%x: f32) kernel {
    %s = tensor.splat %x : tensor<64xf32, #rows>
    %one = arith.constant dense<1.0> : tensor<64xf32, #rows>
    %ne = arith.cmpf une, %s, %one : tensor<64xf32, #rows>
    %any = fagpu.warp_any rarely %ne : tensor<64xi1, #rows>
    gpu.return
  }
  gpu.func @warp_any_plain(%x: f32) kernel {
    %s = tensor.splat %x : tensor<64xf32, #rows>
    %one = arith.constant dense<1.0> : tensor<64xf32, #rows>
    %ne = arith.cmpf une, %s, %one : tensor<64xf32, #rows>
    %any = fagpu.warp_any %ne : tensor<64xi1, #rows>
    gpu.return
  }
}
