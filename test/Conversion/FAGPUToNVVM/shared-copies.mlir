// RUN: fa-opt %s -split-input-file -pass-pipeline='builtin.module(gpu.module(fa-convert-fagpu-to-nvvm,canonicalize,cse))' | FileCheck %s

// Where the kernel's block size is in the IR (fa.block), a thread's 16-byte
// chunks are unrolled: 64 rows x 16 chunks over 128 threads are 8 chunks a
// thread, 8 rows apart. The swizzle's phase repeats every 8 rows, so each
// chunk's shared address is the first one's plus 1024 bytes a step (an
// immediate, not a register per chunk), and its global address the first
// one's plus 8 rows (2048 bytes) a step; a chunk whose row is past the
// limit reads row 0 with source size 0.

gpu.module @m {
  // CHECK-LABEL: gpu.func @async_copy_unrolled
  // CHECK-NOT: scf.for
  // CHECK: %[[READ0:.*]] = arith.select %[[IN0:.*]], %[[FIRST:.*]], %[[ROWZERO:.*]] : i64
  // CHECK: %[[DST0:.*]] = llvm.getelementptr %{{.*}}[%{{.*}}] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
  // CHECK: %[[SIZE0:.*]] = arith.select %[[IN0]], %c16_i32, %c0_i32 : i32
  // CHECK: %[[SRC0:.*]] = llvm.inttoptr %[[READ0]] : i64 to !llvm.ptr<1>
  // CHECK: nvvm.cp.async.shared.global %[[DST0]], %[[SRC0]], 16, cache = cg, %[[SIZE0]]
  // CHECK: %[[NEXT:.*]] = arith.addi %[[FIRST]], %{{.*}} : i64
  // CHECK: arith.select %{{.*}}, %[[NEXT]], %[[ROWZERO]] : i64
  // CHECK: llvm.getelementptr %[[DST0]][1024] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8
  // CHECK: nvvm.cp.async.shared.global
  // CHECK-COUNT-6: llvm.getelementptr %[[DST0]][{{2048|3072|4096|5120|6144|7168}}]
  // CHECK: nvvm.cp.async.shared.global
  // CHECK-NOT: nvvm.cp.async.shared.global
  // CHECK: nvvm.cp.async.commit.group
  gpu.func @async_copy_unrolled(%src: memref<8192x128xbf16>, %row: index, %n: index) kernel attributes {fa.block = array<i64: 128, 1, 1>} {
    %t = fagpu.alloc_shared : !fagpu.smem<64x128xbf16, swizzle = 128>
    fagpu.async_copy_to_shared %src[%row] limit %n into %t : memref<8192x128xbf16>, !fagpu.smem<64x128xbf16, swizzle = 128>
    fagpu.commit_shared_copies
    gpu.return
  }
}

// -----

// 64 rows of 32 chunks (head dim 256) over 128 threads: 16 chunks a thread,
// 4 rows apart. Rows 4 apart are in different swizzle phases, rows 8 apart
// in the same: two offsets are computed, every other chunk is one of them
// plus 1024 bytes a step of 8 rows (the layout function decides which).

gpu.module @m {
  // CHECK-LABEL: gpu.func @async_copy_two_phases
  // CHECK: %[[A:.*]] = llvm.getelementptr %{{.*}}[%{{.*}}] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
  // CHECK: nvvm.cp.async.shared.global %[[A]],
  // CHECK: %[[B:.*]] = llvm.getelementptr %{{.*}}[%{{.*}}] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
  // CHECK: nvvm.cp.async.shared.global %[[B]],
  // CHECK: llvm.getelementptr %[[A]][1024]
  // CHECK: llvm.getelementptr %[[B]][1024]
  // CHECK-COUNT-12: llvm.getelementptr %{{[0-9]+}}[{{[0-9]+}}] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8
  // CHECK-NOT: (!llvm.ptr<3>, i32) -> !llvm.ptr<3>
  // CHECK: nvvm.cp.async.commit.group
  gpu.func @async_copy_two_phases(%src: memref<8192x256xbf16>, %row: index, %n: index) kernel attributes {fa.block = array<i64: 128, 1, 1>} {
    %t = fagpu.alloc_shared : !fagpu.smem<64x256xbf16, swizzle = 128>
    fagpu.async_copy_to_shared %src[%row] limit %n into %t : memref<8192x256xbf16>, !fagpu.smem<64x256xbf16, swizzle = 128>
    fagpu.commit_shared_copies
    gpu.return
  }
}

// -----

// Without a known block size the chunks stay a loop over the block's
// threads (one chunk a thread an iteration).

gpu.module @m {
  // CHECK-LABEL: gpu.func @async_copy_loop
  // CHECK: scf.for %{{.*}} = %{{.*}} to %c1024 step %{{.*}}
  // CHECK:   nvvm.cp.async.shared.global
  // CHECK: }
  gpu.func @async_copy_loop(%src: memref<8192x128xbf16>, %row: index, %n: index) kernel {
    %t = fagpu.alloc_shared : !fagpu.smem<64x128xbf16, swizzle = 128>
    fagpu.async_copy_to_shared %src[%row] limit %n into %t : memref<8192x128xbf16>, !fagpu.smem<64x128xbf16, swizzle = 128>
    fagpu.commit_shared_copies
    gpu.return
  }
}
