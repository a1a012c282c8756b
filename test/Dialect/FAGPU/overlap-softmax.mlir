// RUN: fa-opt %s -pass-pipeline='builtin.module(fa-convert-to-online-attention, fa-tile-attention{block-q=128 block-kv=128}, fa-convert-tiled-attention-to-fagpu, gpu.module(fagpu-warp-specialize{stages=3}))' \
// RUN:   | fa-opt -pass-pipeline='builtin.module(gpu.module(fagpu-overlap-softmax), canonicalize, cse)' | FileCheck %s
// RUN: fa-opt %s -pass-pipeline='builtin.module(fa-convert-to-online-attention, fa-tile-attention{block-q=128 block-kv=128}, fa-convert-tiled-attention-to-fagpu, gpu.module(fagpu-warp-specialize{stages=2}, fagpu-overlap-softmax))' | grep -c "in_flight = 1" | FileCheck %s --check-prefix=COUNT
// RUN: fa-opt %s -pass-pipeline='builtin.module(fa-convert-to-online-attention, fa-tile-attention{block-q=128 block-kv=128}, fa-convert-tiled-attention-to-fagpu, gpu.module(fagpu-warp-specialize{stages=3}, fagpu-overlap-softmax))' | grep -c "in_flight = 1" | FileCheck %s --check-prefix=COUNT

// RUN: fa-opt %s -pass-pipeline='builtin.module(fa-convert-to-online-attention, fa-tile-attention{block-q=128 block-kv=128}, fa-convert-tiled-attention-to-fagpu, gpu.module(fagpu-warp-specialize{stages=3}, fagpu-overlap-softmax{rescale-before-product}, fagpu-pingpong), canonicalize, cse)' | FileCheck %s --check-prefix=BEFORE

// The causal GQA forward (three KV loops) after fagpu-overlap-softmax with
// three-stage rings. Each loop becomes, under lb < ub: iteration lb's QKᵀ
// (synchronous), softmax and rescale; a loop over lb + 1 .. ub carrying the
// rescaled accumulator and P of the previous block, where QKᵀ of block j and
// P·V of block j - 1 are issued back to back after both tiles' waits, S_j is
// waited for with P·V left in flight, K_j's stage released, the softmax
// runs, then P·V is waited for, V_{j-1}'s stage released and the
// accumulator rescaled; after it, the last block's P·V (synchronous) and
// release. Two stages suffice (second RUN): the producer refills K's stage
// while the softmax runs, since fagpu-warp-specialize releases each tile
// after its own last use.

// CHECK-LABEL: gpu.func @causal_gqa
// CHECK: fagpu.warp_specialize
// CHECK: } consumers(warpgroups = 2, registers = 240) {
// CHECK: %[[NONEMPTY:.*]] = arith.cmpi slt, %[[LB:.*]], %[[UB:.*]] : index
// CHECK: scf.if %[[NONEMPTY]] -> (tensor<128x64xf32, #fagpu.wgmma_acc<warps = 8>>, tensor<128xf32, {{.*}}>, tensor<128xf32, {{.*}}>, index) {
//      Prologue: block lb.
// CHECK:   fagpu.wait_barrier
// CHECK:   %[[S0:.*]] = fagpu.mma %{{.*}}, %{{.*}}, %{{.*}} transpose_b : {{.*}} -> tensor<128x128xf32
// CHECK-NOT: fagpu.mma
// CHECK:   %[[P0:.*]] = fagpu.convert_layout {{.*}} -> tensor<128x128xbf16, #fagpu.wgmma_a<warps = 8>>
// CHECK:   %[[LOOP:.*]]:5 = scf.for %[[J:.*]] = %{{.*}} to %[[UB]] step %{{.*}} iter_args(%[[OACC:.*]] = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %[[IT:.*]] = %{{.*}}, %[[PPREV:.*]] = %[[P0]])
// CHECK:     %[[ITPREV:.*]] = arith.subi %[[IT]], %c1
//      The waits for K_j and for V_{j-1}, then both issues.
// CHECK:     fagpu.wait_barrier
// CHECK:     fagpu.wait_barrier
// CHECK-NOT: fagpu.mma_wait
// CHECK:     %[[S:.*]] = fagpu.mma %{{.*}}, %{{.*}}, %{{.*}} transpose_b async
// CHECK-NEXT: %[[PV:.*]] = fagpu.mma %[[PPREV]], %{{.*}}, %[[OACC]] async
// CHECK-NEXT: %[[SREADY:.*]] = fagpu.mma_wait %[[S]] in_flight = 1
//      K_j released, then the softmax of block j while P·V of block j - 1
//      runs.
// CHECK:     fagpu.arrive_barrier
// CHECK:     fagpu.reduce_rows max
// CHECK:     fagpu.reduce_rows sum
// CHECK:     %[[P:.*]] = fagpu.convert_layout {{.*}} -> tensor<128x128xbf16, #fagpu.wgmma_a<warps = 8>>
// CHECK:     %[[O:.*]] = fagpu.mma_wait %[[PV]] :
// CHECK:     fagpu.arrive_barrier
// CHECK:     %[[SCALED:.*]] = arith.mulf %{{.*}}, %[[O]]
// CHECK:     scf.yield %[[SCALED]], %{{.*}}, %{{.*}}, %{{.*}}, %[[P]]
//      Epilogue: the last block's P·V.
// CHECK:   fagpu.wait_barrier
// CHECK:   %[[LAST:.*]] = fagpu.mma %[[LOOP]]#4, %{{.*}}, %[[LOOP]]#0 :
// CHECK:   fagpu.arrive_barrier
// CHECK:   scf.yield %[[LAST]], %[[LOOP]]#1, %[[LOOP]]#2, %[[LOOP]]#3
// CHECK: } else {
// CHECK-NEXT: scf.yield
// CHECK: fagpu.store_tile
//      The second and third loops get the same shape: three overlapped
//      waits in all.
// COUNT: 3
func.func @causal_gqa(%q: tensor<1x4x300x64xbf16>, %k: tensor<1x2x400x64xbf16>,
                      %v: tensor<1x2x400x64xbf16>)
    -> (tensor<1x4x300x64xbf16>, tensor<1x4x300xf32>) {
  %o, %lse = fa.attention %q, %k, %v causal
      : tensor<1x4x300x64xbf16>, tensor<1x2x400x64xbf16>, tensor<1x2x400x64xbf16>
      -> tensor<1x4x300x64xbf16>, tensor<1x4x300xf32>
  return %o, %lse : tensor<1x4x300x64xbf16>, tensor<1x4x300xf32>
}

// With rescale-before-product the loop carries O as P·V left it and the row
// factors of the block before: O is scaled once QKᵀ of block j is issued
// (fagpu.after_issue holds it back until then) and before P·V of block
// j - 1, which adds to it; the last block's rescale precedes its P·V after
// the loop. Ping-pong keeps QKᵀ, the rescale and P·V in one turn.
// BEFORE-LABEL: gpu.func @causal_gqa
// BEFORE: scf.for {{.*}} iter_args(%[[O:[^ ]*]] = %{{.*}}, {{.*}}, %[[PPREV:[^ ]*]] = %{{.*}}, %[[ALPHA:[^ ]*]] = %{{.*}}) -> (tensor<128x64xf32, #fagpu.wgmma_acc<warps = 8>>, {{.*}}, tensor<128xf32, #fagpu.rows<#fagpu.wgmma_acc<warps = 8>>>)
// BEFORE:   fagpu.named_barrier_sync
// BEFORE-NEXT: %[[S:.*]] = fagpu.mma %{{.*}}, %{{.*}}, %{{.*}} transpose_b async
// BEFORE-NEXT: %[[HELD:.*]] = fagpu.after_issue %[[O]], %[[S]]
// BEFORE-NEXT: %[[FACTOR:.*]] = fagpu.expand_rows %[[ALPHA]]
// BEFORE-NEXT: %[[SCALED:.*]] = arith.mulf %[[FACTOR]], %[[HELD]]
// BEFORE-NEXT: %[[PV:.*]] = fagpu.mma %[[PPREV]], %{{.*}}, %[[SCALED]] async
// BEFORE-NEXT: fagpu.named_barrier_arrive
// BEFORE-NEXT: fagpu.mma_wait %[[S]] in_flight = 1
// BEFORE:   %[[P:.*]] = fagpu.convert_layout
// BEFORE:   %[[OUT:.*]] = fagpu.mma_wait %[[PV]] :
// BEFORE:   scf.yield %[[OUT]], {{.*}}, %[[P]], %{{.*}} :
// BEFORE: %[[LASTFACTOR:.*]] = fagpu.expand_rows %{{.*}}#5
// BEFORE-NEXT: %[[LASTSCALED:.*]] = arith.mulf %[[LASTFACTOR]], %{{.*}}#0
// BEFORE: fagpu.mma %{{.*}}#4, %{{.*}}, %[[LASTSCALED]] async
