// RUN: fa-opt %s -pass-pipeline='builtin.module(fa-convert-to-online-attention, fa-tile-attention{block-q=128 block-kv=128}, fa-convert-tiled-attention-to-fagpu, gpu.module(fagpu-warp-specialize))' \
// RUN:   | fa-opt -pass-pipeline='builtin.module(gpu.module(fagpu-pingpong), canonicalize, cse)' | FileCheck %s --implicit-check-not=fagpu.named_barrier --implicit-check-not=fagpu.mma --implicit-check-not=fagpu.warpgroup_id
// RUN: fa-opt %s -pass-pipeline='builtin.module(fa-convert-to-online-attention, fa-tile-attention{block-q=128 block-kv=128}, fa-convert-tiled-attention-to-fagpu, gpu.module(fagpu-warp-specialize{stages=3}, fagpu-overlap-softmax, fagpu-pingpong), canonicalize, cse)' | FileCheck %s --check-prefix=OVERLAP
// RUN: fa-opt %s -pass-pipeline='builtin.module(fa-convert-to-online-attention, fa-tile-attention{block-q=64 block-kv=128}, fa-convert-tiled-attention-to-fagpu, gpu.module(fagpu-warp-specialize, fagpu-pingpong), canonicalize, cse)' | FileCheck %s --check-prefix=ONE
// RUN: fa-opt %s -pass-pipeline='builtin.module(fa-convert-to-online-attention, fa-tile-attention{block-q=64 block-kv=128}, fa-convert-tiled-attention-to-fagpu, gpu.module(fagpu-warp-specialize), canonicalize, cse)' > %t.split
// RUN: fa-opt %s -pass-pipeline='builtin.module(fa-convert-to-online-attention, fa-tile-attention{block-q=64 block-kv=128}, fa-convert-tiled-attention-to-fagpu, gpu.module(fagpu-warp-specialize, fagpu-pingpong), canonicalize, cse)' > %t.pingpong
// RUN: diff %t.split %t.pingpong

// The causal GQA forward of warp-specialize.mlir (three KV loops, two
// compute warpgroups) after fagpu-pingpong: every product of the consumers'
// loops (QKᵀ and P·V in each of the three loops: six) is one turn, warpgroup
// w waiting at named barrier 1 + w, issuing the product asynchronously,
// handing the turn to (w + 1) % 2 + 1 and only then waiting for its product,
// whose result replaces the product's. Before the loops the last warpgroup
// (1) gives warpgroup 0 its first turn on barrier 1; after the last loop
// warpgroup 0 takes back the turn the last hand-off left on barrier 1.
// Nothing changes on the producer's side.

// CHECK-LABEL: gpu.func @causal_gqa
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : index
// CHECK: fagpu.warp_specialize producer(warpgroups = 1, registers = 24) {
// CHECK: } consumers(warpgroups = 2, registers = 240) {
// CHECK-NEXT: %[[WG:.*]] = fagpu.warpgroup_id
// CHECK-NEXT: %[[MINE:.*]] = arith.addi %[[WG]], %[[C1]] : index
// CHECK-NEXT: %[[NEXTWG:.*]] = arith.remui %[[MINE]], %[[C2]] : index
// CHECK-NEXT: %[[NEXT:.*]] = arith.addi %[[NEXTWG]], %[[C1]] : index
// CHECK-NEXT: %[[ISLAST:.*]] = arith.cmpi eq, %[[WG]], %[[C1]] : index
// CHECK-NEXT: scf.if %[[ISLAST]] {
// CHECK-NEXT:   fagpu.named_barrier_arrive %[[C1]], threads = 256
// CHECK-NEXT: }
// CHECK-NEXT: fagpu.wait_barrier %{{.*}}[%[[C0]]] phase %[[C0]]
//
// The first loop: QKᵀ, then P·V, each a turn.
// CHECK-NEXT: %[[L1:.*]]:4 = scf.for
// CHECK:        fagpu.wait_barrier
// CHECK-NEXT:   %[[K1:.*]] = fagpu.stage
// CHECK-NEXT:   fagpu.named_barrier_sync %[[MINE]], threads = 256
// CHECK-NEXT:   %[[S1:.*]] = fagpu.mma %{{.*}}, %[[K1]], %{{.*}} transpose_b async : {{.*}} -> tensor<128x128xf32, #fagpu.wgmma_acc<warps = 8>>
// CHECK-NEXT:   fagpu.named_barrier_arrive %[[NEXT]], threads = 256
// CHECK-NEXT:   %[[SW1:.*]] = fagpu.mma_wait %[[S1]] : tensor<128x128xf32, #fagpu.wgmma_acc<warps = 8>>
// K's stage is released once the wait says QKᵀ has read it.
// CHECK-NEXT:   arith.addi
// CHECK-NEXT:   fagpu.arrive_barrier
// The mask applies to the raw scores, the scale after it (x * scale - max
// stays one FMA).
// CHECK:        %[[MASKED1:.*]] = arith.select %{{.*}}, %[[SW1]], %{{.*}} : tensor<128x128xi1,
// CHECK-NEXT:   arith.mulf %[[MASKED1]], %{{.*}} : tensor<128x128xf32, #fagpu.wgmma_acc<warps = 8>>
// CHECK:        fagpu.wait_barrier
// CHECK-NEXT:   %[[V1:.*]] = fagpu.stage
// CHECK-NEXT:   fagpu.named_barrier_sync %[[MINE]], threads = 256
// CHECK-NEXT:   %[[O1:.*]] = fagpu.mma %{{.*}}, %[[V1]], %{{.*}} async : tensor<128x128xbf16, #fagpu.wgmma_a<warps = 8>>, {{.*}} -> tensor<128x64xf32, #fagpu.wgmma_acc<warps = 8>>
// CHECK-NEXT:   fagpu.named_barrier_arrive %[[NEXT]], threads = 256
// CHECK-NEXT:   %[[OW1:.*]] = fagpu.mma_wait %[[O1]] : tensor<128x64xf32, #fagpu.wgmma_acc<warps = 8>>
// CHECK-NEXT:   arith.addi
// CHECK-NEXT:   fagpu.arrive_barrier
// CHECK-NEXT:   arith.addi
// CHECK-NEXT:   scf.yield %[[OW1]], 
// CHECK-NEXT: }
//
// The second loop.
// CHECK-NEXT: %[[L2:.*]]:4 = scf.for %{{.*}} iter_args(%{{.*}} = %[[L1]]#0,
// CHECK:        fagpu.named_barrier_sync %[[MINE]], threads = 256
// CHECK-NEXT:   %[[S2:.*]] = fagpu.mma %{{.*}} transpose_b async
// CHECK-NEXT:   fagpu.named_barrier_arrive %[[NEXT]], threads = 256
// CHECK-NEXT:   %[[SW2:.*]] = fagpu.mma_wait %[[S2]]
// CHECK-NEXT:   arith.addi
// CHECK-NEXT:   fagpu.arrive_barrier
// CHECK-NEXT:   arith.mulf %[[SW2]]
// CHECK:        fagpu.named_barrier_sync %[[MINE]], threads = 256
// CHECK-NEXT:   %[[O2:.*]] = fagpu.mma %{{.*}} async : tensor<128x128xbf16, #fagpu.wgmma_a<warps = 8>>
// CHECK-NEXT:   fagpu.named_barrier_arrive %[[NEXT]], threads = 256
// CHECK-NEXT:   %[[OW2:.*]] = fagpu.mma_wait %[[O2]]
// CHECK:        scf.yield %[[OW2]], 
// CHECK-NEXT: }
//
// The third (last) loop.
// CHECK-NEXT: %[[L3:.*]]:4 = scf.for %{{.*}} iter_args(%{{.*}} = %[[L2]]#0,
// CHECK:        fagpu.named_barrier_sync %[[MINE]], threads = 256
// CHECK-NEXT:   %[[S3:.*]] = fagpu.mma %{{.*}} transpose_b async
// CHECK-NEXT:   fagpu.named_barrier_arrive %[[NEXT]], threads = 256
// CHECK-NEXT:   %[[SW3:.*]] = fagpu.mma_wait %[[S3]]
// CHECK-NEXT:   arith.addi
// CHECK-NEXT:   fagpu.arrive_barrier
// CHECK:        arith.select %{{.*}}, %[[SW3]], %{{.*}} : tensor<128x128xi1,
// CHECK:        fagpu.named_barrier_sync %[[MINE]], threads = 256
// CHECK-NEXT:   %[[O3:.*]] = fagpu.mma %{{.*}} async : tensor<128x128xbf16, #fagpu.wgmma_a<warps = 8>>
// CHECK-NEXT:   fagpu.named_barrier_arrive %[[NEXT]], threads = 256
// CHECK-NEXT:   %[[OW3:.*]] = fagpu.mma_wait %[[O3]]
// CHECK:        scf.yield %[[OW3]], 
// CHECK-NEXT: }
//
// Warpgroup 0 takes back the last turn, after the last loop and before the
// epilogue.
// CHECK-NEXT: %[[IS0:.*]] = arith.cmpi eq, %[[WG]], %[[C0]] : index
// CHECK-NEXT: scf.if %[[IS0]] {
// CHECK-NEXT:   fagpu.named_barrier_sync %[[C1]], threads = 256
// CHECK-NEXT: }
// CHECK: fagpu.store_tile %{{.*}} : tensor<128x64xbf16
// CHECK: fagpu.store_tile
// CHECK-NEXT: }
// CHECK-NEXT: gpu.return

// One compute warpgroup (64-row Q blocks): nothing to alternate with, the
// kernel is left as fagpu-warp-specialize made it (the diff above) and its
// products stay synchronous.
// ONE-LABEL: gpu.func @causal_gqa
// ONE: consumers(warpgroups = 1, registers = 240)
// ONE-NOT: fagpu.warpgroup_id
// ONE-NOT: fagpu.named_barrier
// ONE-NOT: async
// ONE-NOT: fagpu.mma_wait
// ONE: gpu.return
func.func @causal_gqa(%q: tensor<1x4x300x64xbf16>, %k: tensor<1x2x400x64xbf16>,
                      %v: tensor<1x2x400x64xbf16>)
    -> (tensor<1x4x300x64xbf16>, tensor<1x4x300xf32>) {
  %o, %lse = fa.attention %q, %k, %v causal
      : tensor<1x4x300x64xbf16>, tensor<1x2x400x64xbf16>, tensor<1x2x400x64xbf16>
      -> tensor<1x4x300x64xbf16>, tensor<1x4x300xf32>
  return %o, %lse : tensor<1x4x300x64xbf16>, tensor<1x4x300xf32>
}

// After fagpu-overlap-softmax, QKᵀ of block j and P·V of block j - 1 are
// adjacent asynchronous products: one turn holds both, and the waits the
// overlap placed stay (S_j with P·V in flight, then P·V).
// OVERLAP-LABEL: gpu.func @causal_gqa
// OVERLAP: fagpu.named_barrier_sync %[[MINE:.*]], threads = 256
// OVERLAP: %[[PV:.*]] = fagpu.mma %{{.*}}, %{{.*}}, %{{.*}} async : tensor<128x128xbf16
// OVERLAP-NEXT: fagpu.named_barrier_arrive %[[NEXT:.*]], threads = 256
// OVERLAP-NEXT: fagpu.mma_wait %{{.*}} in_flight = 1
// OVERLAP: fagpu.mma_wait %[[PV]] :
