// RUN: fa-opt %s -pass-pipeline='builtin.module(fa-convert-to-online-attention, fa-tile-attention-grad{block-q=64 block-kv=128}, fa-convert-tiled-attention-grad-to-fagpu, gpu.module(fagpu-tma-reductions, fagpu-warp-specialize{hand-off-reductions pipeline-turns}), canonicalize, cse)' | FileCheck %s
// RUN: fa-opt %s -pass-pipeline='builtin.module(fa-convert-to-online-attention, fa-tile-attention-grad{block-q=64 block-kv=128}, fa-convert-tiled-attention-grad-to-fagpu, gpu.module(fagpu-tma-reductions, fagpu-warp-specialize{hand-off-reductions}), canonicalize, cse)' | FileCheck %s --check-prefix=SERIAL

// A deterministic backward's dQ turns go with its reductions to the reducer
// warp (FA3's dQ writer): after a stage is full it waits for the Q block's
// counter to reach this KV block's turn and issues the reduction. With
// `pipeline-turns` the previous Q block's turn passes then, once all but
// this reduction have landed (a block's wait for its sums overlaps its wait
// for the next turn), and the loop's last turn after it, once all have;
// without, each turn passes once its own sums have landed. The compute
// warps only fill the staging ring and never wait for another block.

// CHECK-LABEL: gpu.func @deterministic_backward(
// CHECK-SAME: %[[TURNS:[a-z0-9]+]]: memref<1x4x4xi32>
// CHECK: fagpu.warp_specialize producer(
// CHECK-NOT: fagpu.wait_turn
// CHECK: } reducer {
// CHECK: %[[END:.*]] = scf.for %[[J:.*]] = %{{[0-9]+}} to %{{.*}} iter_args(%[[IT:.*]] = %[[BEGIN:.*]]) -> (index) {
// CHECK: %[[COUNT:.*]] = arith.subi %[[IT]], %c1
// CHECK: %[[PENDING:.*]] = arith.cmpi ugt, %[[COUNT]], %[[BEGIN]]
// CHECK: fagpu.wait_barrier
// CHECK-NEXT: %[[VIEW:.*]] = fagpu.stage
// CHECK: fagpu.wait_turn %[[TURNS]][%{{.*}}, %{{.*}}, %{{.*}}], %{{.*}} : memref<1x4x4xi32>
// CHECK-NEXT: fagpu.tma_reduce %{{.*}} from %[[VIEW]] bands = 1
// CHECK-NEXT: scf.if %[[PENDING]] {
// CHECK-NEXT: fagpu.wait_global_sums pending = 1
// CHECK-NEXT: %[[PREVJ:.*]] = arith.subi %[[J]], %c2
// CHECK: fagpu.pass_turn %[[TURNS]]
// CHECK: fagpu.arrive_barrier
// CHECK: arith.cmpi ugt, %[[END]], %[[BEGIN]]
// CHECK: fagpu.tma_reduce
// CHECK: fagpu.wait_global_sums pending = 1
// CHECK: fagpu.pass_turn %[[TURNS]]
// CHECK: fagpu.arrive_barrier
// CHECK: }
// CHECK-NEXT: fagpu.wait_global_sums{{$}}
// CHECK-NEXT: fagpu.pass_turn %[[TURNS]]
// CHECK: } consumers(
// CHECK-NOT: fagpu.wait_turn
// CHECK-NOT: fagpu.pass_turn
// CHECK-NOT: fagpu.wait_global_sums
// CHECK: fagpu.store_to_shared %{{.*}} sync = warp unread
// CHECK-NOT: fagpu.wait_turn
// CHECK: gpu.return

// SERIAL-LABEL: gpu.func @deterministic_backward(
// SERIAL: } reducer {
// SERIAL: fagpu.wait_turn %[[TURNS:[a-z0-9]+]][%{{.*}}, %{{.*}}, %[[QB:.*]]], %{{.*}} : memref<1x4x4xi32>
// SERIAL-NEXT: fagpu.tma_reduce
// SERIAL-NEXT: fagpu.wait_global_sums{{$}}
// SERIAL-NEXT: fagpu.pass_turn %[[TURNS]][%{{.*}}, %{{.*}}, %[[QB]]]
// SERIAL-NOT: wait_global_sums pending
// SERIAL: } consumers(

func.func @deterministic_backward(%q: tensor<1x4x256x64xbf16>, %k: tensor<1x2x256x64xbf16>,
                        %v: tensor<1x2x256x64xbf16>, %o: tensor<1x4x256x64xbf16>,
                        %do: tensor<1x4x256x64xbf16>, %lse: tensor<1x4x256xf32>)
    -> (tensor<1x4x256x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>) {
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse causal deterministic
      : tensor<1x4x256x64xbf16>, tensor<1x2x256x64xbf16>,
        tensor<1x2x256x64xbf16>, tensor<1x4x256x64xbf16>,
        tensor<1x4x256x64xbf16>, tensor<1x4x256xf32>
      -> tensor<1x4x256x64xbf16>, tensor<1x2x256x64xbf16>,
         tensor<1x2x256x64xbf16>
  return %dq, %dk, %dv : tensor<1x4x256x64xbf16>, tensor<1x2x256x64xbf16>,
                         tensor<1x2x256x64xbf16>
}
