// RUN: fa-opt %s -pass-pipeline='builtin.module(fa-convert-to-online-attention, fa-tile-attention-grad{block-q=64 block-kv=128}, fa-convert-tiled-attention-grad-to-fagpu, gpu.module(fagpu-warp-specialize), canonicalize, cse)' | FileCheck %s --implicit-check-not=fagpu.copy_to_shared
// RUN: fa-opt %s -pass-pipeline='builtin.module(fa-convert-to-online-attention, fa-tile-attention-grad{block-q=64 block-kv=128}, fa-convert-tiled-attention-grad-to-fagpu, gpu.module(fagpu-warp-specialize, fagpu-pipeline-shared-copies, fagpu-async-products), canonicalize, cse)' | FileCheck %s --check-prefix=SCHED --implicit-check-not=fagpu.async_copy_to_shared

// The backward with a TMA producer: K and V are copied once, Q and dO in
// the Q loops of the loop over the KV head's query heads (GQA, 2 per KV
// head). The producer runs that loop too, carrying the ring counter into
// each Q loop; the compute warpgroups wait for K and V once, then for each
// Q / dO stage before its first use and release it after its last.

// CHECK-LABEL: gpu.func @gqa_backward(
// CHECK-SAME: !fagpu.tensor_map<memref<1x2x256x64xbf16>, box = [128, 64]> {fagpu.tensor_map_of = 1 : i64}
// CHECK-SAME: !fagpu.tensor_map<memref<1x2x256x64xbf16>, box = [128, 64]> {fagpu.tensor_map_of = 2 : i64}
// CHECK-SAME: !fagpu.tensor_map<memref<1x4x256x64xbf16>, box = [64, 64]> {fagpu.tensor_map_of = 0 : i64}
// CHECK-SAME: !fagpu.tensor_map<memref<1x4x256x64xbf16>, box = [64, 64]> {fagpu.tensor_map_of = 3 : i64}
// CHECK-SAME: fa.block = array<i64: 384, 1, 1>
// CHECK-DAG: %[[Q:.*]] = fagpu.alloc_shared : !fagpu.smem<2x64x64xbf16, swizzle = 128>
// CHECK-DAG: %[[DO:.*]] = fagpu.alloc_shared : !fagpu.smem<2x64x64xbf16, swizzle = 128>
// CHECK: %[[BARS:.*]] = fagpu.alloc_barriers : !fagpu.barriers<10>
// CHECK: fagpu.init_barriers %[[BARS]] arrivals = [1, 1, 1, 1, 1, 1, 8, 8, 8, 8]
// CHECK: fagpu.warp_specialize producer(warpgroups = 1, registers = 24) {
// CHECK: fagpu.arrive_expect_bytes %[[BARS]][%c0], 16384
// CHECK-NEXT: fagpu.tma_load %{{.*}} into %{{.*}}, %[[BARS]][%c0]
// CHECK: fagpu.arrive_expect_bytes %[[BARS]][%c1], 16384
// CHECK-NEXT: fagpu.tma_load
// CHECK: %{{.*}} = scf.for %[[HEAD:.*]] = %c0 to %c2 step %c1 iter_args(%[[COUNT:.*]] = %c0) -> (index) {
// CHECK: scf.for %{{.*}} = %c0 to %{{.*}} step %c1 iter_args(%{{.*}} = %[[COUNT]]) -> (index) {
// CHECK: fagpu.wait_barrier %[[BARS]][%{{.*}}] phase
// CHECK: fagpu.arrive_expect_bytes %[[BARS]][%{{.*}}], 8192
// CHECK: %[[QSTAGE:.*]] = fagpu.stage %[[Q]][%{{.*}}]
// CHECK: fagpu.tma_load %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] into %[[QSTAGE]]
// CHECK: %[[DOSTAGE:.*]] = fagpu.stage %[[DO]][%{{.*}}]
// CHECK: fagpu.tma_load %{{.*}} into %[[DOSTAGE]]
// CHECK: } consumers(warpgroups = 2, registers = 240) {
// CHECK-NEXT: fagpu.wait_barrier %[[BARS]][%c0] phase %c0
// CHECK-NEXT: fagpu.wait_barrier %[[BARS]][%c1] phase %c0
// CHECK: scf.for %{{.*}} = %c0 to %c2 step %c1 iter_args(%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %[[RING:.*]] = %c0) -> (tensor<128x64xf32, #fagpu.wgmma_acc<warps = 8>>, tensor<128x64xf32, #fagpu.wgmma_acc<warps = 8>>, index) {
// CHECK: scf.for %{{.*}} iter_args(%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %[[RING]])
// CHECK: fagpu.wait_barrier
// CHECK-NEXT: %[[QVIEW:.*]] = fagpu.stage %[[Q]]
// CHECK-NEXT: fagpu.mma %[[QVIEW]], %{{.*}} transpose_b
// CHECK: fagpu.arrive_barrier
// CHECK: fagpu.mma %{{.*}}, %[[QVIEW]], %{{.*}} transpose_a
// CHECK-NEXT: arith.addi
// CHECK-NEXT: fagpu.arrive_barrier

// With the rest of the backward's passes: no cp.async rings (the producer
// fills the stages), LSE and delta still loaded one Q block ahead, and the
// release of Q's stage waits for dK's product with dQ's already issued.

// SCHED-LABEL: gpu.func @gqa_backward(
// SCHED: } consumers(
// SCHED: fagpu.load_tile
// SCHED: scf.for %{{.*}} iter_args({{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) -> ({{.*}}, index, tensor<64xf32, #fagpu.rows<#fagpu.wgmma_acc_cols<warps = 8>>>, tensor<64xf32, #fagpu.rows<#fagpu.wgmma_acc_cols<warps = 8>>>)
// SCHED: fagpu.arrive_barrier
// SCHED: fagpu.store_to_shared
// SCHED-NEXT: %[[DK:.*]] = fagpu.mma %{{.*}} transpose_a async
// SCHED-NOT: fagpu.mma_wait
// SCHED: %[[DQ:.*]] = fagpu.mma %{{.*}} async
// SCHED-NOT: fagpu.arrive_barrier
// SCHED: fagpu.mma_wait %[[DK]] in_flight = 1
// SCHED-NEXT: fagpu.mma_wait %[[DQ]]
// SCHED-NEXT: fagpu.arrive_barrier

func.func @gqa_backward(%q: tensor<1x4x256x64xbf16>, %k: tensor<1x2x256x64xbf16>,
                        %v: tensor<1x2x256x64xbf16>, %o: tensor<1x4x256x64xbf16>,
                        %do: tensor<1x4x256x64xbf16>, %lse: tensor<1x4x256xf32>)
    -> (tensor<1x4x256x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>) {
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse
      : tensor<1x4x256x64xbf16>, tensor<1x2x256x64xbf16>,
        tensor<1x2x256x64xbf16>, tensor<1x4x256x64xbf16>,
        tensor<1x4x256x64xbf16>, tensor<1x4x256xf32>
      -> tensor<1x4x256x64xbf16>, tensor<1x2x256x64xbf16>,
         tensor<1x2x256x64xbf16>
  return %dq, %dk, %dv : tensor<1x4x256x64xbf16>, tensor<1x2x256x64xbf16>,
                         tensor<1x2x256x64xbf16>
}
