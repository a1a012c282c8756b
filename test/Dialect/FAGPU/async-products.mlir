// RUN: fa-opt %s -split-input-file -pass-pipeline='builtin.module(gpu.module(fagpu-async-products))' | FileCheck %s

// The backward's products: S and dP are both held back only by the copies'
// wait, so they are issued together, in their order, before the per-row
// loads; S is waited for (dP still running) where P needs it, dP (dV
// running) where dS does; dK and dQ go back to back, all three waited for
// before dQ's store, which needs the last of them.

#cols = #fagpu.wgmma_acc_cols<warps = 8>
#rows = #fagpu.wgmma_acc<warps = 8>
#stats = #fagpu.rows<#fagpu.wgmma_acc_cols<warps = 8>>
gpu.module @m {
  // CHECK-LABEL: gpu.func @backward_block
  // CHECK: fagpu.wait_shared_copies
  // CHECK-NEXT: %[[S:.*]] = fagpu.mma %[[Q:.*]], %[[K:.*]], %{{.*}} transpose_b async
  // CHECK-NEXT: %[[DP:.*]] = fagpu.mma %[[DO:.*]], %[[V:.*]], %{{.*}} transpose_b async
  // CHECK-NEXT: fagpu.load_tile
  // CHECK-NEXT: fagpu.expand_rows
  // CHECK-NEXT: %[[SW:.*]] = fagpu.mma_wait %[[S]] in_flight = 1
  // CHECK-NEXT: arith.subf %[[SW]]
  // CHECK-NEXT: math.exp2
  // CHECK: fagpu.store_to_shared %{{.*}}, %[[PS:.*]] :
  // CHECK-NEXT: %[[DV:.*]] = fagpu.mma %[[PS]], %[[DO]], %{{.*}} transpose_a async
  // CHECK-NEXT: %[[DPW:.*]] = fagpu.mma_wait %[[DP]] in_flight = 1
  // CHECK-NEXT: arith.subf %[[DPW]]
  // CHECK: fagpu.store_to_shared %{{.*}}, %[[DSS:.*]] :
  // CHECK-NEXT: %[[DK:.*]] = fagpu.mma %[[DSS]], %[[Q]], %{{.*}} transpose_a async
  // CHECK-NEXT: %[[DQ:.*]] = fagpu.mma %[[DSS]], %[[K]], %{{.*}} async
  // CHECK-NEXT: %[[DVW:.*]] = fagpu.mma_wait %[[DV]] in_flight = 2
  // CHECK-NEXT: %[[DKW:.*]] = fagpu.mma_wait %[[DK]] in_flight = 1
  // CHECK-NEXT: %[[DQW:.*]] = fagpu.mma_wait %[[DQ]] :
  // CHECK-NEXT: fagpu.store_tile %[[DQW]], {{.*}} accumulate
  // CHECK-NEXT: gpu.return
  gpu.func @backward_block(%dq: memref<256x128xf32>, %lse: memref<256xf32>,
                           %dk0: tensor<128x128xf32, #rows>, %dv0: tensor<128x128xf32, #rows>,
                           %row: index, %n: index) kernel {
    %k = fagpu.alloc_shared : !fagpu.smem<128x128xbf16, swizzle = 128>
    %v = fagpu.alloc_shared : !fagpu.smem<128x128xbf16, swizzle = 128>
    %q = fagpu.alloc_shared : !fagpu.smem<64x128xbf16, swizzle = 128>
    %do = fagpu.alloc_shared : !fagpu.smem<64x128xbf16, swizzle = 128>
    %ps = fagpu.alloc_shared : !fagpu.smem<64x128xbf16, swizzle = 128>
    %dss = fagpu.alloc_shared : !fagpu.smem<64x128xbf16, swizzle = 128>
    %zero = arith.constant dense<0.0> : tensor<64x128xf32, #cols>
    fagpu.wait_shared_copies pending = 0
    %l = fagpu.load_tile %lse[%row] limit %n : memref<256xf32> -> tensor<64xf32, #stats>
    %s = fagpu.mma %q, %k, %zero transpose_b : !fagpu.smem<64x128xbf16, swizzle = 128>, !fagpu.smem<128x128xbf16, swizzle = 128>, tensor<64x128xf32, #cols> -> tensor<64x128xf32, #cols>
    %le = fagpu.expand_rows %l : tensor<64xf32, #stats> -> tensor<64x128xf32, #cols>
    %x = arith.subf %s, %le : tensor<64x128xf32, #cols>
    %p = math.exp2 %x : tensor<64x128xf32, #cols>
    %pb = arith.truncf %p : tensor<64x128xf32, #cols> to tensor<64x128xbf16, #cols>
    fagpu.store_to_shared %pb, %ps : tensor<64x128xbf16, #cols>, !fagpu.smem<64x128xbf16, swizzle = 128>
    %dv = fagpu.mma %ps, %do, %dv0 transpose_a : !fagpu.smem<64x128xbf16, swizzle = 128>, !fagpu.smem<64x128xbf16, swizzle = 128>, tensor<128x128xf32, #rows> -> tensor<128x128xf32, #rows>
    %dp = fagpu.mma %do, %v, %zero transpose_b : !fagpu.smem<64x128xbf16, swizzle = 128>, !fagpu.smem<128x128xbf16, swizzle = 128>, tensor<64x128xf32, #cols> -> tensor<64x128xf32, #cols>
    %d = arith.subf %dp, %p : tensor<64x128xf32, #cols>
    %ds = arith.truncf %d : tensor<64x128xf32, #cols> to tensor<64x128xbf16, #cols>
    fagpu.store_to_shared %ds, %dss : tensor<64x128xbf16, #cols>, !fagpu.smem<64x128xbf16, swizzle = 128>
    %dk = fagpu.mma %dss, %q, %dk0 transpose_a : !fagpu.smem<64x128xbf16, swizzle = 128>, !fagpu.smem<64x128xbf16, swizzle = 128>, tensor<128x128xf32, #rows> -> tensor<128x128xf32, #rows>
    %dqt = fagpu.mma %dss, %k, %zero : !fagpu.smem<64x128xbf16, swizzle = 128>, !fagpu.smem<128x128xbf16, swizzle = 128>, tensor<64x128xf32, #cols> -> tensor<64x128xf32, #cols>
    fagpu.store_tile %dqt, %dq[%row] limit %n accumulate : tensor<64x128xf32, #cols>, memref<256x128xf32>
    gpu.return
  }
}

// -----

// A write of a tile an in-flight product reads waits for that product
// first; mma.sync products stay synchronous.

#acc = #fagpu.wgmma_acc<warps = 4>
#sync = #fagpu.mma_sync_acc<warps = 4>
#a = #fagpu.mma_sync_a<warps = 4>
gpu.module @m {
  // CHECK-LABEL: gpu.func @clobber
  // CHECK: %[[P1:.*]] = fagpu.mma %{{.*}}, %{{.*}}, %{{.*}} transpose_a async
  // CHECK-NEXT: %[[W:.*]] = fagpu.mma_wait %[[P1]] :
  // CHECK-NEXT: fagpu.store_to_shared
  // CHECK: fagpu.mma %{{.*}}, %{{.*}}, %{{.*}} : tensor<64x64xbf16, #fagpu.mma_sync_a<warps = 4>>
  gpu.func @clobber(%t: tensor<64x64xbf16, #acc>, %acc: tensor<64x64xf32, #acc>,
                    %ra: tensor<64x64xbf16, #a>, %sacc: tensor<64x64xf32, #sync>) kernel {
    %ps = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
    %b = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
    %r = fagpu.mma %ps, %b, %acc transpose_a : !fagpu.smem<64x64xbf16, swizzle = 128>, !fagpu.smem<64x64xbf16, swizzle = 128>, tensor<64x64xf32, #acc> -> tensor<64x64xf32, #acc>
    fagpu.store_to_shared %t, %ps : tensor<64x64xbf16, #acc>, !fagpu.smem<64x64xbf16, swizzle = 128>
    %s = fagpu.mma %ra, %b, %sacc : tensor<64x64xbf16, #a>, !fagpu.smem<64x64xbf16, swizzle = 128>, tensor<64x64xf32, #sync> -> tensor<64x64xf32, #sync>
    gpu.return
  }
}
