// RUN: fa-opt %s -split-input-file -pass-pipeline='builtin.module(gpu.module(fagpu-narrow-shared-syncs))' | FileCheck %s

// The backward's loop: P and dS written by two warpgroups in column halves
// (#cols), a block barrier closing each iteration. dV += Pᵀ dO reads, in
// warpgroup g, the rows g of its accumulator = the columns g of P, which g
// wrote: P publishes to its warpgroup. dQ = dS K reads all of dS in both
// warpgroups: dS keeps the block scope. Both stores are separated from the
// previous iteration's reads by the closing barrier (and the first from
// nothing at all): no leading wait. dQ's staging tile is read by bulk
// reductions whose band g warpgroup g wrote: warpgroup scope, but the wait
// for the previous tile's reads comes right before it: it keeps its wait.

#acc = #fagpu.wgmma_acc<warps = 8>
#cols = #fagpu.wgmma_acc_cols<warps = 8>
gpu.module @m {
  // CHECK-LABEL: gpu.func @backward_loop
  // CHECK: fagpu.store_to_shared %{{.*}}, %[[P:.*]] sync = warpgroup unread :
  // CHECK: fagpu.store_to_shared %{{.*}}, %[[DS:.*]] unread :
  // CHECK: fagpu.wait_shared_reads
  // CHECK-NEXT: fagpu.store_to_shared %{{.*}}, %[[DQ:.*]] sync = warpgroup :
  gpu.func @backward_loop(%n: index, %p: tensor<64x128xbf16, #cols>, %ds: tensor<64x128xbf16, #cols>, %dv: tensor<128x128xf32, #acc>, %z: tensor<64x128xf32, #cols>, %dq: memref<256x128xf32>) kernel attributes {fa.block = array<i64: 256, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %ps = fagpu.alloc_shared : !fagpu.smem<64x128xbf16, swizzle = 128>
    %dss = fagpu.alloc_shared : !fagpu.smem<64x128xbf16, swizzle = 128>
    %dos = fagpu.alloc_shared : !fagpu.smem<64x128xbf16, swizzle = 128>
    %ks = fagpu.alloc_shared : !fagpu.smem<128x128xbf16, swizzle = 128>
    %dqs = fagpu.alloc_shared : !fagpu.smem<64x136xf32, swizzle = 0>
    %r = scf.for %i = %c0 to %n step %c1 iter_args(%a = %dv) -> (tensor<128x128xf32, #acc>) {
      fagpu.store_to_shared %p, %ps : tensor<64x128xbf16, #cols>, !fagpu.smem<64x128xbf16, swizzle = 128>
      %v = fagpu.mma %ps, %dos, %a transpose_a async : !fagpu.smem<64x128xbf16, swizzle = 128>, !fagpu.smem<64x128xbf16, swizzle = 128>, tensor<128x128xf32, #acc> -> tensor<128x128xf32, #acc>
      fagpu.store_to_shared %ds, %dss : tensor<64x128xbf16, #cols>, !fagpu.smem<64x128xbf16, swizzle = 128>
      %q = fagpu.mma %dss, %ks, %z : !fagpu.smem<64x128xbf16, swizzle = 128>, !fagpu.smem<128x128xbf16, swizzle = 128>, tensor<64x128xf32, #cols> -> tensor<64x128xf32, #cols>
      %vw = fagpu.mma_wait %v : tensor<128x128xf32, #acc>
      fagpu.wait_shared_reads
      fagpu.store_to_shared %q, %dqs : tensor<64x128xf32, #cols>, !fagpu.smem<64x136xf32, swizzle = 0>
      fagpu.reduce_to_global %dqs, %dq[%i] limit %n bands = 2 : !fagpu.smem<64x136xf32, swizzle = 0>, memref<256x128xf32>
      gpu.barrier
      scf.yield %vw : tensor<128x128xf32, #acc>
    }
    fagpu.wait_shared_reads
    gpu.return
  }
}

// -----

// No closing barrier: the previous iteration's product read P after the
// store and its wait comes before the next store, with nothing between: the
// leading wait stays. The product splits its rows over the warpgroups, so
// each reads every column of P (B), half of which the other wrote: block
// scope too.

#acc = #fagpu.wgmma_acc<warps = 8>
#cols = #fagpu.wgmma_acc_cols<warps = 8>
gpu.module @m {
  // CHECK-LABEL: gpu.func @read_in_previous_iteration
  // CHECK: fagpu.store_to_shared %{{.*}}, %{{.*}} : tensor<64x128xbf16
  gpu.func @read_in_previous_iteration(%n: index, %p: tensor<64x128xbf16, #cols>, %z: tensor<128x128xf32, #acc>) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %ps = fagpu.alloc_shared : !fagpu.smem<64x128xbf16, swizzle = 128>
    %qs = fagpu.alloc_shared : !fagpu.smem<128x64xbf16, swizzle = 128>
    scf.for %i = %c0 to %n step %c1 {
      fagpu.store_to_shared %p, %ps : tensor<64x128xbf16, #cols>, !fagpu.smem<64x128xbf16, swizzle = 128>
      %s = fagpu.mma %qs, %ps, %z async : !fagpu.smem<128x64xbf16, swizzle = 128>, !fagpu.smem<64x128xbf16, swizzle = 128>, tensor<128x128xf32, #acc> -> tensor<128x128xf32, #acc>
      %w = fagpu.mma_wait %s : tensor<128x128xf32, #acc>
    }
    gpu.return
  }
}

// -----

// A barrier between the product and its wait does not separate the read:
// the product may still read P past it. An earlier loop that ends with a
// barrier does.

#acc = #fagpu.wgmma_acc<warps = 4>
gpu.module @m {
  // CHECK-LABEL: gpu.func @wait_after_barrier
  // CHECK: fagpu.store_to_shared %{{.*}}, %{{.*}} unread :
  // CHECK: fagpu.store_to_shared %{{.*}}, %{{.*}} :
  gpu.func @wait_after_barrier(%n: index, %p: tensor<64x64xbf16, #acc>, %z: tensor<64x64xf32, #acc>) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %ps = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
    %ks = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
    scf.for %i = %c0 to %n step %c1 {
      %s = fagpu.mma %ps, %ks, %z transpose_b : !fagpu.smem<64x64xbf16, swizzle = 128>, !fagpu.smem<64x64xbf16, swizzle = 128>, tensor<64x64xf32, #acc> -> tensor<64x64xf32, #acc>
      gpu.barrier
    }
    fagpu.store_to_shared %p, %ps : tensor<64x64xbf16, #acc>, !fagpu.smem<64x64xbf16, swizzle = 128>
    %s = fagpu.mma %ps, %ks, %z transpose_b async : !fagpu.smem<64x64xbf16, swizzle = 128>, !fagpu.smem<64x64xbf16, swizzle = 128>, tensor<64x64xf32, #acc> -> tensor<64x64xf32, #acc>
    gpu.barrier
    %w = fagpu.mma_wait %s : tensor<64x64xf32, #acc>
    fagpu.store_to_shared %p, %ps : tensor<64x64xbf16, #acc>, !fagpu.smem<64x64xbf16, swizzle = 128>
    gpu.return
  }
}

// -----

// Inside a warp_specialize region only the scope narrows (one warpgroup
// reads what it wrote): the walk does not look past the region, whose
// barriers are the regions' own.

#acc = #fagpu.wgmma_acc<warps = 4>
gpu.module @m {
  // CHECK-LABEL: gpu.func @specialized
  // CHECK: fagpu.store_to_shared %{{.*}}, %{{.*}} : tensor<64x64xbf16
  gpu.func @specialized(%p: tensor<64x64xbf16, #acc>) kernel {
    %ps = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
    fagpu.warp_specialize producer(warpgroups = 1, registers = 24) {
    } consumers(warpgroups = 1, registers = 240) {
      fagpu.store_to_shared %p, %ps : tensor<64x64xbf16, #acc>, !fagpu.smem<64x64xbf16, swizzle = 128>
    }
    gpu.return
  }
}

// -----

// dQ's staging tile read by TMA reductions (fagpu-tma-reductions' form):
// the copy engine reads it until the issuing thread's wait_shared_reads,
// which the other threads pass at once. A block barrier between the
// previous iteration's issue and the store (dS's) does not free it: the
// store after the wait keeps its leading barrier.

#acc = #fagpu.wgmma_acc<warps = 8>
#cols = #fagpu.wgmma_acc_cols<warps = 8>
gpu.module @m {
  // CHECK-LABEL: gpu.func @tma_reduce_reads_until_the_wait
  // CHECK: fagpu.store_to_shared %{{.*}}, %[[DS:.*]] unread :
  // CHECK: fagpu.wait_shared_reads
  // CHECK-NEXT: fagpu.store_to_shared %{{[0-9a-z_]+}}, %{{[0-9a-z_]+}} : tensor<64x128xf32
  gpu.func @tma_reduce_reads_until_the_wait(%n: index, %ds: tensor<64x128xbf16, #cols>, %z: tensor<64x128xf32, #cols>, %m: !fagpu.tensor_map<memref<1x2x256x128xf32>, box = [64, 32]>) kernel attributes {fa.block = array<i64: 256, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %dss = fagpu.alloc_shared : !fagpu.smem<64x128xbf16, swizzle = 128>
    %ks = fagpu.alloc_shared : !fagpu.smem<128x128xbf16, swizzle = 128>
    %dqs = fagpu.alloc_shared : !fagpu.smem<64x128xf32, swizzle = 128>
    scf.for %i = %c0 to %n step %c1 {
      fagpu.store_to_shared %ds, %dss : tensor<64x128xbf16, #cols>, !fagpu.smem<64x128xbf16, swizzle = 128>
      %q = fagpu.mma %dss, %ks, %z : !fagpu.smem<64x128xbf16, swizzle = 128>, !fagpu.smem<128x128xbf16, swizzle = 128>, tensor<64x128xf32, #cols> -> tensor<64x128xf32, #cols>
      fagpu.wait_shared_reads
      fagpu.store_to_shared %q, %dqs : tensor<64x128xf32, #cols>, !fagpu.smem<64x128xf32, swizzle = 128>
      fagpu.tma_reduce %m[%c0, %c0, %i] from %dqs bands = 1 : !fagpu.tensor_map<memref<1x2x256x128xf32>, box = [64, 32]>, !fagpu.smem<64x128xf32, swizzle = 128>
    }
    fagpu.wait_shared_reads
    gpu.return
  }
}
