// RUN: fa-opt %s -pass-pipeline='builtin.module(fa-convert-to-online-attention, fa-tile-attention-grad{block-q=64 block-kv=128}, fa-convert-tiled-attention-grad-to-fagpu, gpu.module(fagpu-tma-reductions, fagpu-warp-specialize{hand-off-reductions}), canonicalize, cse)' | FileCheck %s
// RUN: fa-opt %s -pass-pipeline='builtin.module(fa-convert-to-online-attention, fa-tile-attention-grad{block-q=64 block-kv=128}, fa-convert-tiled-attention-grad-to-fagpu, gpu.module(fagpu-tma-reductions, fagpu-warp-specialize{hand-off-reductions max-shared-bytes=131000}), canonicalize, cse)' | FileCheck %s --check-prefix=NOROOM

// dQ's reductions handed to the producer warpgroup: the staging tile
// becomes a two-stage ring with a full barrier per stage (one arrival per
// compute warp: 8) and an empty one (one arrival, the reducer warp's), after
// the Q/dO rings' barriers (2 once + 2 x 2 full + 2 x 2 empty). The compute
// warps wait for an empty stage, store into it without a block barrier and
// arrive. The producer's first warp only loads; its second (the reducer
// region) runs the same loops and drains each iteration's stage one
// iteration behind (and, after each Q loop, its last): wait full, one
// thread's reduction; then, once every reduction but that one has been read
// by the copy engine, the stage before it is empty. The reducer waits for
// the last reads before the kernel ends.

// CHECK-LABEL: gpu.func @gqa_backward(
// CHECK-SAME: fa.shared_bytes = 131184
// CHECK-DAG: %[[DQ:.*]] = fagpu.alloc_shared : !fagpu.smem<2x64x64xf32, swizzle = 128>
// CHECK: %[[BARS:.*]] = fagpu.alloc_barriers : !fagpu.barriers<14>
// CHECK: fagpu.init_barriers %[[BARS]] arrivals = [1, 1, 1, 1, 1, 1, 8, 8, 8, 8, 8, 8, 1, 1]
// CHECK: fagpu.warp_specialize producer(
// CHECK-NOT: fagpu.tma_reduce
// CHECK-NOT: fagpu.wait_shared_reads
// CHECK: } reducer {
// CHECK-NOT: fagpu.tma_load
// CHECK-NOT: fagpu.arrive_expect_bytes
// CHECK: scf.for %{{.*}} iter_args(%[[BEGIN:.*]] = %{{.*}}) -> (index) {
// CHECK: %[[END:.*]] = scf.for %[[J:.*]] = %{{.*}} to %[[UB:.*]] step %c1 iter_args(%[[IT:.*]] = %[[BEGIN]]) -> (index) {
// CHECK-NEXT: %[[LATER:.*]] = arith.cmpi ugt, %[[IT]], %[[BEGIN]]
// CHECK-NEXT: scf.if %[[LATER]] {
// CHECK-NEXT: %[[PREV:.*]] = arith.subi %[[IT]], %c1
// CHECK-NEXT: %[[PREVJ:.*]] = arith.subi %[[J]], %c1
// CHECK-NEXT: %[[S:.*]] = arith.remui %[[PREV]], %c2
// CHECK-NEXT: %[[R:.*]] = arith.divui %[[PREV]], %c2
// CHECK-NEXT: %[[FULL:.*]] = arith.addi %[[S]], %c10
// CHECK-NEXT: fagpu.wait_barrier %[[BARS]][%[[FULL]]] phase %[[R]]
// CHECK-NEXT: %[[VIEW:.*]] = fagpu.stage %[[DQ]][%[[S]]]
// CHECK-NEXT: %[[ROW:.*]] = arith.muli %[[PREVJ]], %c64
// CHECK-NEXT: %[[HEAD:.*]] = arith.addi
// CHECK-NEXT: fagpu.tma_reduce %{{.*}}[%{{.*}}, %[[HEAD]], %[[ROW]]] from %[[VIEW]] bands = 1
// CHECK-NEXT: %[[EARLIER:.*]] = arith.cmpi ugt, %[[PREV]], %c0
// CHECK-NEXT: scf.if %[[EARLIER]] {
// CHECK-NEXT: fagpu.wait_shared_reads pending = 1
// CHECK-NEXT: %[[EMPTYSTAGE:.*]] = arith.remui %[[IT]], %c2
// CHECK-NEXT: %[[EMPTY:.*]] = arith.addi %[[EMPTYSTAGE]], %c12
// CHECK-NEXT: fagpu.arrive_barrier %[[BARS]][%[[EMPTY]]]
// CHECK: %[[RAN:.*]] = arith.cmpi ugt, %[[END]], %[[BEGIN]]
// CHECK-NEXT: scf.if %[[RAN]] {
// CHECK-NEXT: %[[LASTIT:.*]] = arith.subi %[[END]], %c1
// CHECK-NEXT: arith.subi %[[UB]], %c1
// CHECK: fagpu.tma_reduce
// CHECK: fagpu.wait_shared_reads{{$}}
// CHECK-NEXT: } consumers(
// CHECK-NOT: fagpu.tma_reduce
// CHECK-NOT: fagpu.wait_shared_reads
// CHECK: scf.for %{{.*}} = %c0 to %c2 step %c1 iter_args(
// CHECK: scf.for %{{.*}} iter_args(%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %[[CIT:.*]] = %{{.*}}) -> (tensor<128x64xf32, #fagpu.wgmma_acc<warps = 8>>, tensor<128x64xf32, #fagpu.wgmma_acc<warps = 8>>, index) {
// CHECK: %[[CS:.*]] = arith.remui %[[CIT]], %c2
// CHECK: %[[NEXT:.*]] = arith.addi %{{.*}}, %c1
// CHECK-NEXT: %[[CEMPTY:.*]] = arith.addi %[[CS]], %c12
// CHECK-NEXT: fagpu.wait_barrier %[[BARS]][%[[CEMPTY]]] phase %[[NEXT]]
// CHECK-NEXT: %[[CVIEW:.*]] = fagpu.stage %[[DQ]][%[[CS]]]
// CHECK-NEXT: fagpu.store_to_shared %{{.*}}, %[[CVIEW]] sync = warp unread
// CHECK-NEXT: %[[CFULL:.*]] = arith.addi %[[CS]], %c10
// CHECK-NEXT: fagpu.arrive_barrier %[[BARS]][%[[CFULL]]]
// CHECK-NOT: fagpu.tma_reduce
// CHECK: gpu.return

// Without room for the second stage the reduction stays on the compute
// warps.

// NOROOM-LABEL: gpu.func @gqa_backward(
// NOROOM-SAME: fa.shared_bytes = 114768
// NOROOM: fagpu.alloc_barriers : !fagpu.barriers<10>
// NOROOM: } consumers(
// NOROOM: fagpu.store_to_shared %{{.*}}, %{{.*}} : tensor<64x64xf32
// NOROOM-NEXT: fagpu.tma_reduce

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
