// RUN: fa-opt %s -split-input-file -pass-pipeline='builtin.module(gpu.module(fagpu-async-products{hoist-stage-waits=true}))' | FileCheck %s
// RUN: fa-opt %s -split-input-file -pass-pipeline='builtin.module(gpu.module(fagpu-async-products))' | FileCheck %s --check-prefix=OFF

// The backward's Q and dO ring stages (in the consumers of a
// warp_specialize, where the producer fills them): dO's wait (its stage read by
// products only) moves up beside Q's with its view and the index it needs,
// so dP = dO Vᵀ issues with S = Q Kᵀ instead of after P's store. Without
// the option dO's wait stays where it was, and dP waits for it.

#cols = #fagpu.wgmma_acc_cols<warps = 8>
#rows = #fagpu.wgmma_acc<warps = 8>
gpu.module @m {
  // CHECK-LABEL: gpu.func @rings
  // CHECK: fagpu.wait_barrier %[[BARS:.*]][%{{.*}}] phase
  // CHECK-NEXT: %[[DOB:.*]] = arith.addi
  // CHECK-NEXT: fagpu.wait_barrier %[[BARS]][%[[DOB]]] phase
  // CHECK-NEXT: %[[QV:.*]] = fagpu.stage
  // CHECK-NEXT: %[[S:.*]] = fagpu.mma %[[QV]], %{{.*}}, %{{.*}} transpose_b async
  // CHECK-NEXT: %[[DOV:.*]] = fagpu.stage
  // CHECK-NEXT: %[[DP:.*]] = fagpu.mma %[[DOV]], %{{.*}}, %{{.*}} transpose_b async
  // CHECK-NEXT: fagpu.mma_wait %[[S]] in_flight = 1
  // CHECK: fagpu.store_to_shared
  // CHECK-NEXT: fagpu.mma %{{.*}}, %[[DOV]], %{{.*}} transpose_a async
  // CHECK-NEXT: fagpu.mma_wait %[[DP]] in_flight = 1
  // OFF-LABEL: gpu.func @rings
  // OFF: fagpu.mma %{{.*}}, %{{.*}}, %{{.*}} transpose_b async
  // OFF-NOT: fagpu.mma {{.*}} async
  // OFF: fagpu.store_to_shared
  // OFF-NEXT: arith.addi
  // OFF-NEXT: fagpu.wait_barrier
  // OFF-NEXT: fagpu.stage
  // OFF-NEXT: fagpu.mma %{{.*}}, %{{.*}}, %{{.*}} transpose_a async
  // OFF-NEXT: fagpu.mma %{{.*}}, %{{.*}}, %{{.*}} transpose_b async
  gpu.func @rings(%s0: index, %ph: index, %dv0: tensor<128x128xf32, #rows>) kernel {
    fagpu.warp_specialize producer(warpgroups = 1, registers = 24) {
    } consumers(warpgroups = 2, registers = 240) {
      %c2 = arith.constant 2 : index
      %k = fagpu.alloc_shared : !fagpu.smem<128x128xbf16, swizzle = 128>
      %v = fagpu.alloc_shared : !fagpu.smem<128x128xbf16, swizzle = 128>
      %q = fagpu.alloc_shared : !fagpu.smem<2x64x128xbf16, swizzle = 128>
      %do = fagpu.alloc_shared : !fagpu.smem<2x64x128xbf16, swizzle = 128>
      %ps = fagpu.alloc_shared : !fagpu.smem<64x128xbf16, swizzle = 128>
      %bars = fagpu.alloc_barriers : !fagpu.barriers<4>
      %zero = arith.constant dense<0.0> : tensor<64x128xf32, #cols>
      fagpu.wait_barrier %bars[%s0] phase %ph : !fagpu.barriers<4>
      %qv = fagpu.stage %q[%s0] : !fagpu.smem<2x64x128xbf16, swizzle = 128> -> !fagpu.smem<64x128xbf16, swizzle = 128>
      %s = fagpu.mma %qv, %k, %zero transpose_b : !fagpu.smem<64x128xbf16, swizzle = 128>, !fagpu.smem<128x128xbf16, swizzle = 128>, tensor<64x128xf32, #cols> -> tensor<64x128xf32, #cols>
      %p = math.exp2 %s : tensor<64x128xf32, #cols>
      %pb = arith.truncf %p : tensor<64x128xf32, #cols> to tensor<64x128xbf16, #cols>
      fagpu.store_to_shared %pb, %ps : tensor<64x128xbf16, #cols>, !fagpu.smem<64x128xbf16, swizzle = 128>
      %s1 = arith.addi %s0, %c2 : index
      fagpu.wait_barrier %bars[%s1] phase %ph : !fagpu.barriers<4>
      %dov = fagpu.stage %do[%s0] : !fagpu.smem<2x64x128xbf16, swizzle = 128> -> !fagpu.smem<64x128xbf16, swizzle = 128>
      %dv = fagpu.mma %ps, %dov, %dv0 transpose_a : !fagpu.smem<64x128xbf16, swizzle = 128>, !fagpu.smem<64x128xbf16, swizzle = 128>, tensor<128x128xf32, #rows> -> tensor<128x128xf32, #rows>
      %dp = fagpu.mma %dov, %v, %zero transpose_b : !fagpu.smem<64x128xbf16, swizzle = 128>, !fagpu.smem<128x128xbf16, swizzle = 128>, tensor<64x128xf32, #cols> -> tensor<64x128xf32, #cols>
      %d = arith.subf %dp, %p : tensor<64x128xf32, #cols>
      %db = arith.truncf %d : tensor<64x128xf32, #cols> to tensor<64x128xbf16, #cols>
      fagpu.store_to_shared %db, %ps : tensor<64x128xbf16, #cols>, !fagpu.smem<64x128xbf16, swizzle = 128>
    }
    gpu.return
  }
}

// -----

// An arrival between the two waits stays before the second: another
// thread may wait for it, so the second wait does not move above it.

#cols = #fagpu.wgmma_acc_cols<warps = 8>
gpu.module @m {
  // CHECK-LABEL: gpu.func @arrival_between
  // CHECK: fagpu.arrive_barrier
  // CHECK-NEXT: fagpu.wait_barrier
  // CHECK-NEXT: fagpu.stage
  gpu.func @arrival_between(%s0: index, %ph: index) kernel {
    fagpu.warp_specialize producer(warpgroups = 1, registers = 24) {
    } consumers(warpgroups = 2, registers = 240) {
      %c1 = arith.constant 1 : index
      %k = fagpu.alloc_shared : !fagpu.smem<128x128xbf16, swizzle = 128>
      %q = fagpu.alloc_shared : !fagpu.smem<2x64x128xbf16, swizzle = 128>
      %bars = fagpu.alloc_barriers : !fagpu.barriers<4>
      %zero = arith.constant dense<0.0> : tensor<64x128xf32, #cols>
      fagpu.wait_barrier %bars[%s0] phase %ph : !fagpu.barriers<4>
      fagpu.arrive_barrier %bars[%c1] : !fagpu.barriers<4>
      fagpu.wait_barrier %bars[%s0] phase %ph : !fagpu.barriers<4>
      %qv = fagpu.stage %q[%s0] : !fagpu.smem<2x64x128xbf16, swizzle = 128> -> !fagpu.smem<64x128xbf16, swizzle = 128>
      %s = fagpu.mma %qv, %k, %zero transpose_b : !fagpu.smem<64x128xbf16, swizzle = 128>, !fagpu.smem<128x128xbf16, swizzle = 128>, tensor<64x128xf32, #cols> -> tensor<64x128xf32, #cols>
      %e = math.exp2 %s : tensor<64x128xf32, #cols>
      %t = arith.truncf %e : tensor<64x128xf32, #cols> to tensor<64x128xbf16, #cols>
      %ps = fagpu.alloc_shared : !fagpu.smem<64x128xbf16, swizzle = 128>
      fagpu.store_to_shared %t, %ps : tensor<64x128xbf16, #cols>, !fagpu.smem<64x128xbf16, swizzle = 128>
    }
    gpu.return
  }
}

// -----

// A stage that something other than a product uses (here a store into
// it) keeps its wait where it is.

#cols = #fagpu.wgmma_acc_cols<warps = 8>
gpu.module @m {
  // CHECK-LABEL: gpu.func @not_products_only
  // CHECK: fagpu.store_to_shared
  // CHECK-NEXT: fagpu.wait_barrier
  // CHECK-NEXT: fagpu.stage
  gpu.func @not_products_only(%s0: index, %ph: index) kernel {
    fagpu.warp_specialize producer(warpgroups = 1, registers = 24) {
    } consumers(warpgroups = 2, registers = 240) {
      %k = fagpu.alloc_shared : !fagpu.smem<128x128xbf16, swizzle = 128>
      %q = fagpu.alloc_shared : !fagpu.smem<2x64x128xbf16, swizzle = 128>
      %o = fagpu.alloc_shared : !fagpu.smem<2x64x128xbf16, swizzle = 128>
      %ps = fagpu.alloc_shared : !fagpu.smem<64x128xbf16, swizzle = 128>
      %bars = fagpu.alloc_barriers : !fagpu.barriers<4>
      %zero = arith.constant dense<0.0> : tensor<64x128xf32, #cols>
      fagpu.wait_barrier %bars[%s0] phase %ph : !fagpu.barriers<4>
      %qv = fagpu.stage %q[%s0] : !fagpu.smem<2x64x128xbf16, swizzle = 128> -> !fagpu.smem<64x128xbf16, swizzle = 128>
      %s = fagpu.mma %qv, %k, %zero transpose_b : !fagpu.smem<64x128xbf16, swizzle = 128>, !fagpu.smem<128x128xbf16, swizzle = 128>, tensor<64x128xf32, #cols> -> tensor<64x128xf32, #cols>
      %e = math.exp2 %s : tensor<64x128xf32, #cols>
      %t = arith.truncf %e : tensor<64x128xf32, #cols> to tensor<64x128xbf16, #cols>
      fagpu.store_to_shared %t, %ps : tensor<64x128xbf16, #cols>, !fagpu.smem<64x128xbf16, swizzle = 128>
      fagpu.wait_barrier %bars[%s0] phase %ph : !fagpu.barriers<4>
      %ov = fagpu.stage %o[%s0] : !fagpu.smem<2x64x128xbf16, swizzle = 128> -> !fagpu.smem<64x128xbf16, swizzle = 128>
      fagpu.store_to_shared %t, %ov : tensor<64x128xbf16, #cols>, !fagpu.smem<64x128xbf16, swizzle = 128>
    }
    gpu.return
  }
}

// -----

// Outside a warp_specialize the thread may fill the stage itself (no
// producer): the wait stays.

#cols = #fagpu.wgmma_acc_cols<warps = 8>
gpu.module @m {
  // CHECK-LABEL: gpu.func @no_producer
  // CHECK: fagpu.store_to_shared
  // CHECK-NEXT: fagpu.wait_barrier
  // CHECK-NEXT: fagpu.stage
  gpu.func @no_producer(%s0: index, %ph: index) kernel {
    %k = fagpu.alloc_shared : !fagpu.smem<128x128xbf16, swizzle = 128>
    %v = fagpu.alloc_shared : !fagpu.smem<128x128xbf16, swizzle = 128>
    %q = fagpu.alloc_shared : !fagpu.smem<2x64x128xbf16, swizzle = 128>
    %do = fagpu.alloc_shared : !fagpu.smem<2x64x128xbf16, swizzle = 128>
    %ps = fagpu.alloc_shared : !fagpu.smem<64x128xbf16, swizzle = 128>
    %bars = fagpu.alloc_barriers : !fagpu.barriers<4>
    %zero = arith.constant dense<0.0> : tensor<64x128xf32, #cols>
    fagpu.wait_barrier %bars[%s0] phase %ph : !fagpu.barriers<4>
    %qv = fagpu.stage %q[%s0] : !fagpu.smem<2x64x128xbf16, swizzle = 128> -> !fagpu.smem<64x128xbf16, swizzle = 128>
    %s = fagpu.mma %qv, %k, %zero transpose_b : !fagpu.smem<64x128xbf16, swizzle = 128>, !fagpu.smem<128x128xbf16, swizzle = 128>, tensor<64x128xf32, #cols> -> tensor<64x128xf32, #cols>
    %e = math.exp2 %s : tensor<64x128xf32, #cols>
    %t = arith.truncf %e : tensor<64x128xf32, #cols> to tensor<64x128xbf16, #cols>
    fagpu.store_to_shared %t, %ps : tensor<64x128xbf16, #cols>, !fagpu.smem<64x128xbf16, swizzle = 128>
    fagpu.wait_barrier %bars[%s0] phase %ph : !fagpu.barriers<4>
    %dov = fagpu.stage %do[%s0] : !fagpu.smem<2x64x128xbf16, swizzle = 128> -> !fagpu.smem<64x128xbf16, swizzle = 128>
    %dp = fagpu.mma %dov, %v, %zero transpose_b : !fagpu.smem<64x128xbf16, swizzle = 128>, !fagpu.smem<128x128xbf16, swizzle = 128>, tensor<64x128xf32, #cols> -> tensor<64x128xf32, #cols>
    %db = arith.truncf %dp : tensor<64x128xf32, #cols> to tensor<64x128xbf16, #cols>
    fagpu.store_to_shared %db, %ps : tensor<64x128xbf16, #cols>, !fagpu.smem<64x128xbf16, swizzle = 128>
    gpu.return
  }
}
