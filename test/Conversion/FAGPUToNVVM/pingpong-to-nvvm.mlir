// RUN: fa-opt %s -split-input-file -pass-pipeline='builtin.module(gpu.module(fa-convert-fagpu-to-nvvm))' | FileCheck %s

// The ping-pong ops on NVVM. warpgroup_id is the thread id (in the group)
// over 128; named_barrier_sync is bar.sync (nvvm.barrier) and
// named_barrier_arrive bar.arrive, both with the thread count. An async
// product is fenced, issued and committed but not waited for: the wait
// (wait_group 0) comes at fagpu.mma_wait, after the hand-off, and each of
// the accumulator's 32 registers then goes through an empty volatile asm so
// that nothing reads it before the wait.

#acc = #fagpu.wgmma_acc<warps = 4>
gpu.module @m {
  // CHECK-LABEL: gpu.func @turn
  // CHECK: %[[C128:.*]] = arith.constant 128 : index
  // CHECK-NEXT: %[[TID:.*]] = gpu.thread_id x
  // CHECK-NEXT: %[[WG:.*]] = arith.divui %[[TID]], %[[C128]] : index
  // CHECK-NEXT: %[[N1:.*]] = arith.constant 256 : i32
  // CHECK-NEXT: %[[ID1:.*]] = arith.index_castui %[[WG]] : index to i32
  // CHECK-NEXT: nvvm.barrier id = %[[ID1]] number_of_threads = %[[N1]]
  // CHECK: nvvm.wgmma.fence.aligned
  // CHECK-COUNT-4: nvvm.wgmma.mma_async
  // CHECK-NOT: nvvm.wgmma
  // CHECK: nvvm.wgmma.commit.group.sync.aligned
  // CHECK-NOT: nvvm.wgmma.wait.group.sync.aligned
  // CHECK: %[[PENDING:.*]] = vector.from_elements
  // CHECK-NEXT: %[[N2:.*]] = arith.constant 256 : i32
  // CHECK-NEXT: %[[ID2:.*]] = arith.index_castui %[[WG]] : index to i32
  // CHECK-NEXT: nvvm.barrier.arrive id = %[[ID2]] number_of_threads = %[[N2]]
  // CHECK-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
  // CHECK-NEXT: %[[R0:.*]] = vector.extract %[[PENDING]][0] : f32 from vector<32xf32>
  // CHECK-COUNT-31: vector.extract %[[PENDING]]
  // CHECK-NEXT: %[[F0:.*]] = llvm.inline_asm has_side_effects asm_dialect = att "", "=f,0" %[[R0]] : (f32) -> f32
  // CHECK-COUNT-31: llvm.inline_asm has_side_effects asm_dialect = att "", "=f,0" %{{.*}} : (f32) -> f32
  // CHECK-NEXT: %[[READY:.*]] = vector.from_elements %[[F0]],
  // CHECK-NOT: llvm.inline_asm
  // CHECK-NOT: nvvm.wgmma
  // CHECK: vector.extract %[[READY]][0]
  // CHECK: memref.store
  // CHECK: gpu.return
  gpu.func @turn(%out: memref<64x64xf32>, %n: index) kernel attributes {fa.block = array<i64: 256, 1, 1>} {
    %q = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
    %k = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
    %z = arith.constant dense<0.0> : tensor<64x64xf32, #acc>
    %wg = fagpu.warpgroup_id
    fagpu.named_barrier_sync %wg, threads = 256
    %p = fagpu.mma %q, %k, %z transpose_b async : !fagpu.smem<64x64xbf16, swizzle = 128>, !fagpu.smem<64x64xbf16, swizzle = 128>, tensor<64x64xf32, #acc> -> tensor<64x64xf32, #acc>
    fagpu.named_barrier_arrive %wg, threads = 256
    %s = fagpu.mma_wait %p : tensor<64x64xf32, #acc>
    fagpu.store_tile %s, %out[%n] limit %n : tensor<64x64xf32, #acc>, memref<64x64xf32>
    gpu.return
  }
}

// -----

// In the consumer region of a split the warpgroups count from the first
// consumer: (thread id - 128) / 128. Other thread counts pass through.

gpu.module @m {
  // CHECK-LABEL: gpu.func @consumers
  // CHECK: nvvm.setmaxregister increase 240
  // CHECK-NEXT: %[[C128:.*]] = arith.constant 128 : index
  // CHECK-NEXT: %[[TID:.*]] = gpu.thread_id x
  // CHECK-NEXT: %[[OFF:.*]] = arith.constant 128 : index
  // CHECK-NEXT: %[[REL:.*]] = arith.subi %[[TID]], %[[OFF]] : index
  // CHECK-NEXT: %[[WG:.*]] = arith.divui %[[REL]], %[[C128]] : index
  // CHECK-NEXT: %[[N:.*]] = arith.constant 384 : i32
  // CHECK-NEXT: %[[ID:.*]] = arith.index_castui %[[WG]] : index to i32
  // CHECK-NEXT: nvvm.barrier.arrive id = %[[ID]] number_of_threads = %[[N]]
  // CHECK-NEXT: %[[N2:.*]] = arith.constant 64 : i32
  // CHECK-NEXT: %[[ID2:.*]] = arith.index_castui %[[WG]] : index to i32
  // CHECK-NEXT: nvvm.barrier id = %[[ID2]] number_of_threads = %[[N2]]
  // CHECK-NEXT: }
  gpu.func @consumers(%n: index) kernel attributes {fa.block = array<i64: 384, 1, 1>} {
    fagpu.warp_specialize producer(warpgroups = 1, registers = 24) {
      %p = arith.constant 0 : index
    } consumers(warpgroups = 2, registers = 240) {
      %wg = fagpu.warpgroup_id
      fagpu.named_barrier_arrive %wg, threads = 384
      fagpu.named_barrier_sync %wg, threads = 64
    }
    gpu.return
  }
}

// -----

// fagpu.after_issue: each register of the tile through an empty volatile
// asm after the product's commit, and no wait: the product stays in flight
// while the multiplication runs.

#acc = #fagpu.wgmma_acc<warps = 4>
gpu.module @m {
  // CHECK-LABEL: gpu.func @after_issue
  // CHECK: nvvm.wgmma.commit.group.sync.aligned
  // CHECK-NOT: nvvm.wgmma.wait.group.sync.aligned
  // CHECK: %[[O:.*]] = vector.extract %{{.*}}[0] : f32 from vector<32xf32>
  // CHECK: %[[HELD:.*]] = llvm.inline_asm has_side_effects asm_dialect = att "", "=f,0" %[[O]] : (f32) -> f32
  // CHECK-COUNT-31: llvm.inline_asm has_side_effects asm_dialect = att "", "=f,0"
  // CHECK-NOT: nvvm.wgmma.wait.group.sync.aligned
  // CHECK: arith.mulf
  // CHECK: nvvm.wgmma.wait.group.sync.aligned 0
  gpu.func @after_issue(%out: memref<64x64xf32>, %n: index, %o: tensor<64x64xf32, #acc>) kernel attributes {fa.block = array<i64: 128, 1, 1>} {
    %q = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
    %k = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
    %z = arith.constant dense<0.0> : tensor<64x64xf32, #acc>
    %p = fagpu.mma %q, %k, %z transpose_b async : !fagpu.smem<64x64xbf16, swizzle = 128>, !fagpu.smem<64x64xbf16, swizzle = 128>, tensor<64x64xf32, #acc> -> tensor<64x64xf32, #acc>
    %held = fagpu.after_issue %o, %p : tensor<64x64xf32, #acc>, tensor<64x64xf32, #acc>
    %scaled = arith.mulf %held, %held : tensor<64x64xf32, #acc>
    %s = fagpu.mma_wait %p : tensor<64x64xf32, #acc>
    %sum = arith.addf %s, %scaled : tensor<64x64xf32, #acc>
    fagpu.store_tile %sum, %out[%n] limit %n : tensor<64x64xf32, #acc>, memref<64x64xf32>
    gpu.return
  }
}
