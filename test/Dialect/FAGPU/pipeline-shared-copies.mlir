// RUN: fa-opt %s -split-input-file -pass-pipeline='builtin.module(gpu.module(fagpu-pipeline-shared-copies))' | FileCheck %s
// RUN: fa-opt %s -split-input-file -pass-pipeline='builtin.module(gpu.module(fagpu-pipeline-shared-copies{stages=3}))' | FileCheck %s --check-prefix=THREE
// RUN: fa-opt %s -split-input-file -pass-pipeline='builtin.module(gpu.module(fagpu-pipeline-shared-copies{stages=3 max-shared-bytes=50000}))' | FileCheck %s --check-prefix=FIT

// The K/V tiles of a loop become rings; iteration i prefetches i + 1 (two
// stages) into the other stage while it computes on its own.

#acc = #fagpu.wgmma_acc<warps = 4>
gpu.module @m {
  // CHECK-LABEL: gpu.func @loop
  // CHECK-SAME: fa.shared_bytes = 40960 : i64
  // CHECK: %[[Q:.*]] = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
  // CHECK: %[[KR:.*]] = fagpu.alloc_shared : !fagpu.smem<2x128x64xbf16, swizzle = 128>
  // Prologue: iteration lb into stage 0, if the loop runs at all.
  // CHECK: %[[ITER0:.*]] = arith.addi %[[LB:[a-z0-9]+]], %{{.*}} : index
  // CHECK: %[[FIRST:.*]] = arith.cmpi slt, %[[ITER0]], %[[UB:[a-z0-9]+]] : index
  // CHECK: scf.if %[[FIRST]] {
  // CHECK:   %[[ROW0:.*]] = arith.muli %[[ITER0]], %{{.*}} : index
  // CHECK:   %[[S0:.*]] = fagpu.stage %[[KR]][%{{.*}}]
  // CHECK:   fagpu.async_copy_to_shared %{{.*}}[%[[ROW0]]] limit %{{.*}} into %[[S0]]
  // CHECK: }
  // CHECK: fagpu.commit_shared_copies
  // CHECK: scf.for %[[I:.*]] = %[[LB]] to %[[UB]]
  // CHECK:   %[[REL:.*]] = arith.subi %[[I]], %[[LB]] : index
  // CHECK:   %[[CUR:.*]] = arith.remui %[[REL]], %{{.*}} : index
  // CHECK:   %[[AHEAD:.*]] = arith.addi %[[REL]], %{{.*}} : index
  // CHECK:   %[[NEXTSTAGE:.*]] = arith.remui %[[AHEAD]], %{{.*}} : index
  // CHECK:   %[[NEXT:.*]] = arith.addi %[[LB]], %[[AHEAD]] : index
  // CHECK:   scf.if
  // CHECK:     arith.muli %[[NEXT]], %{{.*}} : index
  // CHECK:     fagpu.stage %[[KR]][%[[NEXTSTAGE]]]
  // CHECK:     fagpu.async_copy_to_shared
  // CHECK:   fagpu.commit_shared_copies
  // CHECK:   fagpu.wait_shared_copies pending = 1
  // CHECK:   %[[K:.*]] = fagpu.stage %[[KR]][%[[CUR]]]
  // CHECK-NOT: fagpu.copy_to_shared
  // CHECK:   fagpu.mma %[[Q]], %[[K]], %{{.*}} transpose_b
  // CHECK:   gpu.barrier
  // CHECK-NEXT: scf.yield

  // Three stages: wait first (its barrier ends the reads of iteration i - 1),
  // then prefetch i + 2; no barrier in the loop, one after it.
  // THREE-LABEL: gpu.func @loop
  // THREE-SAME: fa.shared_bytes = 57344 : i64
  // THREE: fagpu.alloc_shared : !fagpu.smem<3x128x64xbf16, swizzle = 128>
  // THREE-COUNT-2: fagpu.commit_shared_copies
  // THREE: scf.for
  // THREE: fagpu.wait_shared_copies pending = 1
  // THREE: fagpu.async_copy_to_shared
  // THREE: fagpu.commit_shared_copies
  // THREE: fagpu.mma
  // THREE-NOT: gpu.barrier
  // THREE: scf.yield
  // THREE-NEXT: }
  // THREE-NEXT: gpu.barrier

  // As many stages as fit: two in 50000 bytes.
  // FIT-LABEL: gpu.func @loop
  // FIT: fagpu.alloc_shared : !fagpu.smem<2x128x64xbf16, swizzle = 128>
  gpu.func @loop(%kmem: memref<1024x64xbf16>, %lb: index, %ub: index)
      kernel attributes {fa.shared_bytes = 24576 : i64} {
    %q = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
    %k = fagpu.alloc_shared : !fagpu.smem<128x64xbf16, swizzle = 128>
    %c1 = arith.constant 1 : index
    %c128 = arith.constant 128 : index
    %c1024 = arith.constant 1024 : index
    %zero = arith.constant dense<0.0> : tensor<64x128xf32, #acc>
    %r = scf.for %i = %lb to %ub step %c1 iter_args(%acc = %zero) -> (tensor<64x128xf32, #acc>) {
      %row = arith.muli %i, %c128 : index
      fagpu.copy_to_shared %kmem[%row] limit %c1024 into %k : memref<1024x64xbf16>, !fagpu.smem<128x64xbf16, swizzle = 128>
      %s = fagpu.mma %q, %k, %acc transpose_b : !fagpu.smem<64x64xbf16, swizzle = 128>, !fagpu.smem<128x64xbf16, swizzle = 128>, tensor<64x128xf32, #acc> -> tensor<64x128xf32, #acc>
      scf.yield %s : tensor<64x128xf32, #acc>
    }
    gpu.return
  }
}

// -----

// Per-row register loads (the backward's LSE) are carried one iteration
// ahead: iteration lb's rows are loaded before the loop, iteration i + 1's
// at the top of iteration i, and the loop computes on the carried tile.

#rows = #fagpu.rows<#fagpu.wgmma_acc<warps = 4>>
gpu.module @m {
  // CHECK-LABEL: gpu.func @register_loads
  // CHECK: %[[FIRST:.*]] = fagpu.load_tile %{{.*}}[%{{.*}}] limit
  // CHECK: scf.for %[[I:.*]] = %[[LB:.*]] to %{{.*}} step %{{.*}} iter_args(%[[CUR:.*]] = %[[FIRST]])
  // CHECK:   %[[NEXT:.*]] = arith.addi %[[I]], %c1
  // CHECK:   %[[AHEAD:.*]] = fagpu.load_tile %{{.*}}[%{{.*}}] limit
  // CHECK:   fagpu.wait_shared_copies
  // CHECK:   fagpu.store_tile %[[CUR]]
  // CHECK:   scf.yield %[[AHEAD]]
  gpu.func @register_loads(%src: memref<1024x64xbf16>, %lse: memref<1024xf32>, %out: memref<1024xf32>,
                           %lb: index, %ub: index, %n: index) kernel {
    %t = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    scf.for %i = %lb to %ub step %c1 {
      %row = arith.muli %i, %c64 : index
      fagpu.copy_to_shared %src[%row] limit %n into %t : memref<1024x64xbf16>, !fagpu.smem<64x64xbf16, swizzle = 128>
      %l = fagpu.load_tile %lse[%row] limit %n : memref<1024xf32> -> tensor<64xf32, #rows>
      fagpu.store_tile %l, %out[%row] limit %n : tensor<64xf32, #rows>, memref<1024xf32>
    }
    gpu.return
  }
}
