// RUN: fa-opt %s -pass-pipeline='builtin.module(fa-convert-to-online-attention, fa-tile-attention{block-q=128 block-kv=128}, fa-convert-tiled-attention-to-fagpu, gpu.module(fagpu-warp-specialize, fagpu-transpose-in-producer), canonicalize, cse)' | FileCheck %s
// RUN: fa-opt %s -pass-pipeline='builtin.module(fa-convert-to-online-attention, fa-tile-attention{block-q=128 block-kv=128}, fa-convert-tiled-attention-to-fagpu, gpu.module(fagpu-warp-specialize, fagpu-transpose-in-producer, fagpu-overlap-softmax, fagpu-pingpong), canonicalize, cse)' | FileCheck %s --check-prefix=TURNS
// RUN: fa-opt %s -pass-pipeline='builtin.module(fa-convert-to-online-attention, fa-tile-attention{block-q=128 block-kv=128}, fa-convert-tiled-attention-to-fagpu, gpu.module(fagpu-warp-specialize, fagpu-overlap-softmax, fagpu-pingpong), canonicalize, cse)' | FileCheck %s --check-prefix=TOGETHER

// The FP8 forward: the compute warpgroups transposed each V stage into a
// tile of their own. After the pass, V's tile is a ring of V's two stages
// with a full (9, 10) and an empty (11, 12) barrier each; V's empty
// barriers (7, 8) count the transposer's three warps. The transposer runs
// the producer's KV loop without loads: it waits for its stage to be empty
// (the producer's phase), for V's to be full (the next parity), transposes,
// releases V's stage and announces its own. The consumers wait for the
// transposed stage, read it in P·V and release it after.

// CHECK-LABEL: gpu.func @fp8
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : index
// CHECK-DAG: %[[C3:.*]] = arith.constant 3 : index
// CHECK-DAG: %[[C7:.*]] = arith.constant 7 : index
// CHECK-DAG: %[[C9:.*]] = arith.constant 9 : index
// CHECK-DAG: %[[C11:.*]] = arith.constant 11 : index
// CHECK: fagpu.alloc_shared : !fagpu.smem<2x128x128xf8E4M3FN, swizzle = 128>
// CHECK-NEXT: %[[V:.*]] = fagpu.alloc_shared : !fagpu.smem<2x128x128xf8E4M3FN, swizzle = 128>
// CHECK-NEXT: %[[VT:.*]] = fagpu.alloc_shared : !fagpu.smem<2x128x128xf8E4M3FN, swizzle = 128>
// CHECK: %[[BARS:.*]] = fagpu.alloc_barriers : !fagpu.barriers<13>
// CHECK-NEXT: fagpu.init_barriers %[[BARS]] arrivals = [1, 1, 1, 1, 1, 8, 8, 3, 3, 3, 3, 8, 8]
// CHECK: fagpu.warp_specialize producer(warpgroups = 1, registers = 24) {
// CHECK: fagpu.tma_load
// CHECK: } transposer {
// CHECK-NOT: fagpu.tma_load
// CHECK-NOT: fagpu.arrive_expect_bytes
// CHECK: scf.for %{{.*}} iter_args(%[[N:.*]] = %{{.*}}) -> (index) {
// CHECK-NEXT: %[[S:.*]] = arith.remui %[[N]], %[[C2]] : index
// CHECK-NEXT: %[[ROUND:.*]] = arith.divui %[[N]], %[[C2]] : index
// CHECK-NEXT: %[[EMPTYPHASE:.*]] = arith.addi %[[ROUND]], %[[C1]] : index
// CHECK-NEXT: %[[OWNEMPTY:.*]] = arith.addi %[[S]], %[[C11]] : index
// CHECK-NEXT: fagpu.wait_barrier %[[BARS]][%[[OWNEMPTY]]] phase %[[EMPTYPHASE]]
// CHECK-NEXT: %[[VFULL:.*]] = arith.addi %[[S]], %[[C3]] : index
// CHECK-NEXT: %[[VSTAGE:.*]] = fagpu.stage %[[V]][%[[S]]]
// CHECK-NEXT: %[[FULLPHASE:.*]] = arith.addi %[[ROUND]], %[[C2]] : index
// CHECK-NEXT: fagpu.wait_barrier %[[BARS]][%[[VFULL]]] phase %[[FULLPHASE]]
// CHECK-NEXT: %[[OWN:.*]] = fagpu.stage %[[VT]][%[[S]]]
// CHECK-NEXT: fagpu.transpose_shared %[[VSTAGE]], %[[OWN]]
// CHECK-NEXT: %[[VEMPTY:.*]] = arith.addi %[[S]], %[[C7]] : index
// CHECK-NEXT: fagpu.arrive_barrier %[[BARS]][%[[VEMPTY]]]
// CHECK-NEXT: %[[OWNFULL:.*]] = arith.addi %[[S]], %[[C9]] : index
// CHECK-NEXT: fagpu.arrive_barrier %[[BARS]][%[[OWNFULL]]]
// CHECK: } consumers(warpgroups = 2, registers = 240) {
// CHECK-NOT: fagpu.transpose_shared
// CHECK: %[[CS:.*]] = arith.remui
// CHECK: %[[CFULL:.*]] = arith.addi %[[CS]], %[[C9]] : index
// CHECK-NEXT: fagpu.wait_barrier %[[BARS]][%[[CFULL]]]
// CHECK: %[[COWN:.*]] = fagpu.stage %[[VT]][%[[CS]]]
// CHECK-NEXT: fagpu.mma %{{.*}}, %[[COWN]], %{{.*}} transpose_b : tensor<128x128xf8E4M3FN, #fagpu.wgmma_a8<warps = 8>>
// CHECK-NEXT: %[[CEMPTY:.*]] = arith.addi %[[CS]], %[[C11]] : index
// CHECK-NEXT: fagpu.arrive_barrier %[[BARS]][%[[CEMPTY]]]

// With the transposition gone from the consumers, their products take
// turns (and QKᵀ of the next block is issued with P·V of this one)...
// TURNS: } transposer {
// TURNS: fagpu.named_barrier_sync
// TURNS: fagpu.mma {{.*}} async
// TURNS: fagpu.mma {{.*}} async
// TURNS: fagpu.named_barrier_arrive

// ...while a transposition that both compute warpgroups share (a barrier of
// all of them) keeps the overlap and turns away.
// TOGETHER-NOT: fagpu.named_barrier_sync
// TOGETHER-NOT: async
// TOGETHER: fagpu.transpose_shared
// TOGETHER-NOT: fagpu.named_barrier_sync
// TOGETHER-NOT: async

func.func @fp8(%q: tensor<1x2x512x128xf8E4M3FN>, %k: tensor<1x2x512x128xf8E4M3FN>,
               %v: tensor<1x2x512x128xf8E4M3FN>, %dq: tensor<1x2xf32>, %dk: tensor<1x2xf32>,
               %dv: tensor<1x2xf32>) -> (tensor<1x2x512x128xbf16>, tensor<1x2x512xf32>) {
  %o, %lse = fa.attention %q, %k, %v descale(%dq, %dk, %dv : tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>)
      : tensor<1x2x512x128xf8E4M3FN>, tensor<1x2x512x128xf8E4M3FN>, tensor<1x2x512x128xf8E4M3FN>
      -> tensor<1x2x512x128xbf16>, tensor<1x2x512xf32>
  return %o, %lse : tensor<1x2x512x128xbf16>, tensor<1x2x512xf32>
}
