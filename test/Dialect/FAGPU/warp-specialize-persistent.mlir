// RUN: fa-opt %s -pass-pipeline='builtin.module(fa-convert-to-online-attention, fa-tile-attention{block-q=128 block-kv=128}, fa-convert-tiled-attention-to-fagpu, gpu.module(fagpu-persistent-grid{blocks=3}))' \
// RUN:   | fa-opt -pass-pipeline='builtin.module(gpu.module(fagpu-warp-specialize), canonicalize, cse)' | FileCheck %s
// RUN: fa-opt %s -pass-pipeline='builtin.module(fa-convert-to-online-attention, fa-tile-attention{block-q=128 block-kv=128}, fa-convert-tiled-attention-to-fagpu, gpu.module(fagpu-persistent-grid{blocks=3}))' \
// RUN:   | fa-opt -pass-pipeline='builtin.module(gpu.module(fagpu-warp-specialize{tile-buffers=2}), canonicalize, cse)' | FileCheck %s --check-prefix=TWO

// fagpu-warp-specialize on a persistent kernel (16 tiles on 3 blocks, from
// fagpu-persistent-grid): each side gets its own loop over the tiles,
// carrying the ring counter (the KV loop starts from it and hands it on)
// and the tile's round. Q gets an empty barrier (9, one arrival per compute
// warp) next to its full one (0): the compute warpgroups wait for Q with
// the round's parity and release it after the KV loop, and the producer
// waits for that release (the previous round's parity: a fresh barrier's
// passes at once) before loading the next tile's Q. That is with one Q
// buffer (tile-buffers=1, the default).

// CHECK-LABEL: gpu.func @wide
// CHECK-SAME: fa.grid = array<i64: 3, 1, 1>
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG: %[[C9:.*]] = arith.constant 9 : index
// CHECK: %[[Q:.*]] = fagpu.alloc_shared : !fagpu.smem<128x128xbf16, swizzle = 128>
// CHECK: gpu.block_id x
// CHECK: %[[ROUNDS:.*]] = arith.addi
// CHECK-NEXT: %[[BARS:.*]] = fagpu.alloc_barriers : !fagpu.barriers<10>
// CHECK-NEXT: fagpu.init_barriers %[[BARS]] arrivals = [1, 1, 1, 1, 1, 8, 8, 8, 8, 8] : !fagpu.barriers<10>
// CHECK-NEXT: fagpu.warp_specialize producer(warpgroups = 1, registers = 24) {
// CHECK-NEXT: scf.for %[[R:.*]] = %[[C0]] to %[[ROUNDS]] step %[[C1]] iter_args(%[[PIT:.*]] = %[[C0]], %[[PROUND:.*]] = %[[C0]]) -> (index, index) {
// CHECK:        %[[PREV:.*]] = arith.addi %[[PROUND]], %[[C1]] : index
// CHECK-NEXT:   fagpu.wait_barrier %[[BARS]][%[[C9]]] phase %[[PREV]]
// CHECK-NEXT:   fagpu.arrive_expect_bytes %[[BARS]][%[[C0]]], 32768
// CHECK-NEXT:   fagpu.tma_load %{{.*}} into %[[Q]], %[[BARS]][%[[C0]]]
// CHECK-NEXT:   %[[PNEXT:.*]] = scf.for %{{.*}} iter_args(%{{.*}} = %[[PIT]]) -> (index) {
// CHECK:        }
// CHECK-NEXT:   scf.yield %[[PNEXT]], %[[PREV]] : index, index
// CHECK-NEXT: }
// CHECK-NEXT: } consumers(warpgroups = 2, registers = 240) {
// CHECK-NEXT: scf.for %{{.*}} = %[[C0]] to %[[ROUNDS]] step %[[C1]] iter_args(%[[CIT:.*]] = %[[C0]], %[[CROUND:.*]] = %[[C0]]) -> (index, index) {
// CHECK:        fagpu.wait_barrier %[[BARS]][%[[C0]]] phase %[[CROUND]]
// CHECK-NEXT:   %[[KV:.*]]:4 = scf.for {{.*}} iter_args({{.*}}, %{{.*}} = %[[CIT]])
// CHECK:        }
// CHECK-NEXT:   fagpu.arrive_barrier %[[BARS]][%[[C9]]]
// CHECK:        fagpu.store_tile
// CHECK:        fagpu.store_tile
// CHECK-NEXT:   %[[CNEXT:.*]] = arith.addi %[[CROUND]], %[[C1]] : index
// CHECK-NEXT:   scf.yield %[[KV]]#3, %[[CNEXT]] : index, index
// CHECK-NEXT: } {fagpu.tiles}
// With tile-buffers=2 Q gets two buffers (they fit beside the two-stage
// rings): the
// buffer is the round's parity and the phase its half, each buffer a full
// (0, 1) and an empty (10, 11) barrier, so the producer loads tile t + 1's Q
// into the other buffer while tile t still computes on its own.
// TWO-LABEL: gpu.func @wide
// TWO-DAG: %[[C1:.*]] = arith.constant 1 : index
// TWO-DAG: %[[C2:.*]] = arith.constant 2 : index
// TWO-DAG: %[[C10:.*]] = arith.constant 10 : index
// TWO: %[[Q:.*]] = fagpu.alloc_shared : !fagpu.smem<2x128x128xbf16, swizzle = 128>
// TWO: %[[BARS:.*]] = fagpu.alloc_barriers : !fagpu.barriers<12>
// TWO-NEXT: fagpu.init_barriers %[[BARS]] arrivals = [1, 1, 1, 1, 1, 1, 8, 8, 8, 8, 8, 8] : !fagpu.barriers<12>
// TWO-NEXT: fagpu.warp_specialize producer(warpgroups = 1, registers = 24) {
// TWO-NEXT: scf.for %{{.*}} iter_args(%{{.*}} = %{{.*}}, %[[PROUND:.*]] = %{{.*}}) -> (index, index) {
// TWO:        %[[PBUF:.*]] = arith.remui %[[PROUND]], %[[C2]] : index
// TWO-NEXT:   %[[PHALF:.*]] = arith.divui %[[PROUND]], %[[C2]] : index
// TWO-NEXT:   %[[PPREV:.*]] = arith.addi %[[PHALF]], %[[C1]] : index
// TWO-NEXT:   %[[PEMPTY:.*]] = arith.addi %[[PBUF]], %[[C10]] : index
// TWO-NEXT:   fagpu.wait_barrier %[[BARS]][%[[PEMPTY]]] phase %[[PPREV]]
// TWO-NEXT:   fagpu.arrive_expect_bytes %[[BARS]][%[[PBUF]]], 32768
// TWO-NEXT:   %[[PQ:.*]] = fagpu.stage %[[Q]][%[[PBUF]]]
// TWO-NEXT:   fagpu.tma_load %{{.*}} into %[[PQ]], %[[BARS]][%[[PBUF]]]
// TWO:      } consumers(warpgroups = 2, registers = 240) {
// TWO-NEXT: scf.for %{{.*}} iter_args(%{{.*}} = %{{.*}}, %[[CROUND:.*]] = %{{.*}}) -> (index, index) {
// TWO:        %[[CBUF:.*]] = arith.remui %[[CROUND]], %[[C2]] : index
// TWO-NEXT:   %[[CHALF:.*]] = arith.divui %[[CROUND]], %[[C2]] : index
// TWO-NEXT:   fagpu.wait_barrier %[[BARS]][%[[CBUF]]] phase %[[CHALF]]
// TWO-NEXT:   %[[CQ:.*]] = fagpu.stage %[[Q]][%[[CBUF]]]
// TWO-NEXT:   scf.for
// TWO:          fagpu.mma %[[CQ]], %{{.*}}, %{{.*}} transpose_b
// TWO:        }
// TWO-NEXT:   %[[CEMPTY:.*]] = arith.addi %[[CBUF]], %[[C10]] : index
// TWO-NEXT:   fagpu.arrive_barrier %[[BARS]][%[[CEMPTY]]]
// TWO:      } {fagpu.tiles}
func.func @wide(%q: tensor<2x4x256x128xbf16>, %k: tensor<2x4x512x128xbf16>,
                %v: tensor<2x4x512x128xbf16>)
    -> (tensor<2x4x256x128xbf16>, tensor<2x4x256xf32>) {
  %o, %lse = fa.attention %q, %k, %v
      : tensor<2x4x256x128xbf16>, tensor<2x4x512x128xbf16>, tensor<2x4x512x128xbf16>
      -> tensor<2x4x256x128xbf16>, tensor<2x4x256xf32>
  return %o, %lse : tensor<2x4x256x128xbf16>, tensor<2x4x256xf32>
}
