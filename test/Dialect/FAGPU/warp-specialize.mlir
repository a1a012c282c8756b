// RUN: fa-opt %s -split-input-file -pass-pipeline='builtin.module(fa-convert-to-online-attention, fa-tile-attention{block-q=128 block-kv=128}, fa-convert-tiled-attention-to-fagpu, gpu.module(fagpu-warp-specialize), canonicalize, cse)' | FileCheck %s --implicit-check-not=fagpu.copy_to_shared --implicit-check-not='{{^ *gpu\.barrier}}'
// RUN: fa-opt %s -split-input-file -pass-pipeline='builtin.module(fa-convert-to-online-attention, fa-tile-attention{block-q=128 block-kv=128}, fa-convert-tiled-attention-to-fagpu, gpu.module(fagpu-warp-specialize{stages=3}), canonicalize, cse)' | FileCheck %s --check-prefix=THREE
// RUN: fa-opt %s -split-input-file -pass-pipeline='builtin.module(fa-convert-to-online-attention, fa-tile-attention{block-q=128 block-kv=128}, fa-convert-tiled-attention-to-fagpu, gpu.module(fagpu-warp-specialize{stages=3 max-shared-bytes=229479}), canonicalize, cse)' | FileCheck %s --check-prefix=FIT
// RUN: fa-opt %s -split-input-file -pass-pipeline='builtin.module(fa-convert-to-online-attention, fa-tile-attention{block-q=128 block-kv=128}, fa-convert-tiled-attention-to-fagpu, gpu.module(fagpu-warp-specialize{stages=4}), canonicalize, cse)' | FileCheck %s --check-prefix=FOUR
// RUN: fa-opt %s -split-input-file -pass-pipeline='builtin.module(gpu.module(fagpu-warp-specialize))' | FileCheck %s --check-prefix=RAW
// RUN: fa-opt %s -split-input-file -pass-pipeline='builtin.module(fa-convert-to-online-attention, fa-tile-attention{block-q=64 block-kv=128}, fa-convert-tiled-attention-to-fagpu, gpu.module(fagpu-warp-specialize), canonicalize, cse)' | FileCheck %s --check-prefix=ONE

// The causal GQA forward (Q 300 rows, K/V 400 rows, 4 query heads on 2 KV
// heads: three KV loops) as the compiler builds it, split by
// fagpu-warp-specialize: Q/K/V get tensor-map parameters, K and V rings of
// two stages, nine mbarriers ([Q][K full x2][V full x2][K empty x2][V empty
// x2]); the producer warpgroup walks the same three loops issuing only the
// loads, the two compute warpgroups wait for each tile just before its
// first use and release its stage after its last (K after QKᵀ, V after
// P·V); one counter runs through all three loops on both sides.

// CHECK-LABEL: gpu.func @causal_gqa
// CHECK-SAME: (%{{[a-z0-9]+}}: memref<1x4x300x64xbf16>, %{{[a-z0-9]+}}: memref<1x2x400x64xbf16>, %{{[a-z0-9]+}}: memref<1x2x400x64xbf16>, %{{[a-z0-9]+}}: memref<1x4x300x64xbf16>, %{{[a-z0-9]+}}: memref<1x4x300xf32>,
// CHECK-SAME: %[[QMAP:[a-z0-9]+]]: !fagpu.tensor_map<memref<1x4x300x64xbf16>, box = [128, 64]> {fagpu.tensor_map_of = 0 : i64},
// CHECK-SAME: %[[KMAP:[a-z0-9]+]]: !fagpu.tensor_map<memref<1x2x400x64xbf16>, box = [128, 64]> {fagpu.tensor_map_of = 1 : i64},
// CHECK-SAME: %[[VMAP:[a-z0-9]+]]: !fagpu.tensor_map<memref<1x2x400x64xbf16>, box = [128, 64]> {fagpu.tensor_map_of = 2 : i64})
// Two compute warpgroups + the producer; Q + 2 x K + 2 x V + 9 x 8 bytes.
// CHECK-SAME: fa.block = array<i64: 384, 1, 1>
// CHECK-SAME: fa.shared_bytes = 81992 : i64
// CHECK-SAME: known_block_size = array<i32: 384, 1, 1>
// One block per SM: ptxas then knows the register count at entry and
// honours setmaxnreg.
// CHECK-SAME: nvvm.minctasm = 1 : i32
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : index
// CHECK-DAG: %[[C3:.*]] = arith.constant 3 : index
// CHECK-DAG: %[[C5:.*]] = arith.constant 5 : index
// CHECK-DAG: %[[C7:.*]] = arith.constant 7 : index
// CHECK-DAG: %[[C128:.*]] = arith.constant 128 : index
// CHECK: %[[QS:.*]] = fagpu.alloc_shared : !fagpu.smem<128x64xbf16, swizzle = 128>
// CHECK-NEXT: %[[KR:.*]] = fagpu.alloc_shared : !fagpu.smem<2x128x64xbf16, swizzle = 128>
// CHECK-NEXT: %[[VR:.*]] = fagpu.alloc_shared : !fagpu.smem<2x128x64xbf16, swizzle = 128>
// CHECK-NOT: fagpu.alloc_shared
// What the loads need stays before the split, shared by both sides: the
// block ids, Q's row (Q blocks last-first: block x takes Q block 2 - x),
// the KV head, the loop bounds.
// CHECK: %[[BZ:.*]] = gpu.block_id z
// CHECK-NEXT: %[[BY:.*]] = gpu.block_id y
// CHECK-NEXT: %[[BX:.*]] = gpu.block_id x
// CHECK-NEXT: %[[QB:.*]] = arith.subi %[[C2]], %[[BX]] : index
// CHECK-NEXT: %[[QROW:.*]] = arith.muli %[[QB]], %[[C128]] : index
// CHECK: %[[KVH:.*]] = arith.divui %[[BY]], %[[C2]] : index
// CHECK: %[[BARS:.*]] = fagpu.alloc_barriers : !fagpu.barriers<9>
// CHECK-NEXT: fagpu.init_barriers %[[BARS]] arrivals = [1, 1, 1, 1, 1, 8, 8, 8, 8] : !fagpu.barriers<9>
// CHECK-NEXT: fagpu.warp_specialize producer(warpgroups = 1, registers = 24) {
// Q once, on barrier 0.
// CHECK-NEXT: fagpu.arrive_expect_bytes %[[BARS]][%[[C0]]], 16384 : !fagpu.barriers<9>
// CHECK-NEXT: fagpu.tma_load %[[QMAP]][%[[BZ]], %[[BY]], %[[QROW]]] into %[[QS]], %[[BARS]][%[[C0]]] : !fagpu.tensor_map<memref<1x4x300x64xbf16>, box = [128, 64]>, !fagpu.smem<128x64xbf16, swizzle = 128>, !fagpu.barriers<9>
// The first loop: stage = it % 2; K's empty barrier 5 + stage waited with
// the previous phase (it / 2 + 1: a fresh barrier's passes at once), then
// K into its full barrier 1 + stage; V the same with 7 + stage and 3 +
// stage; 16 KiB each.
// CHECK-NEXT: %[[P1:.*]] = scf.for %[[J1:.*]] = %[[LO:.*]] to %[[B1:.*]] step %[[C1]] iter_args(%[[IT1:.*]] = %[[C0]]) -> (index) {
// CHECK-NEXT:   %[[S1:.*]] = arith.remui %[[IT1]], %[[C2]] : index
// CHECK-NEXT:   %[[R1:.*]] = arith.divui %[[IT1]], %[[C2]] : index
// CHECK-NEXT:   %[[PH1:.*]] = arith.addi %[[R1]], %[[C1]] : index
// CHECK-NEXT:   %[[KROW1:.*]] = arith.muli %[[J1]], %[[C128]] : index
// CHECK-NEXT:   %[[E1:.*]] = arith.addi %[[S1]], %[[C5]] : index
// CHECK-NEXT:   fagpu.wait_barrier %[[BARS]][%[[E1]]] phase %[[PH1]] : !fagpu.barriers<9>
// CHECK-NEXT:   %[[FK1:.*]] = arith.addi %[[S1]], %[[C1]] : index
// CHECK-NEXT:   fagpu.arrive_expect_bytes %[[BARS]][%[[FK1]]], 16384 : !fagpu.barriers<9>
// CHECK-NEXT:   %[[KST1:.*]] = fagpu.stage %[[KR]][%[[S1]]] : !fagpu.smem<2x128x64xbf16, swizzle = 128> -> !fagpu.smem<128x64xbf16, swizzle = 128>
// CHECK-NEXT:   fagpu.tma_load %[[KMAP]][%[[BZ]], %[[KVH]], %[[KROW1]]] into %[[KST1]], %[[BARS]][%[[FK1]]]
// CHECK-NEXT:   %[[EV1:.*]] = arith.addi %[[S1]], %[[C7]] : index
// CHECK-NEXT:   fagpu.wait_barrier %[[BARS]][%[[EV1]]] phase %[[PH1]] : !fagpu.barriers<9>
// CHECK-NEXT:   %[[FV1:.*]] = arith.addi %[[S1]], %[[C3]] : index
// CHECK-NEXT:   fagpu.arrive_expect_bytes %[[BARS]][%[[FV1]]], 16384 : !fagpu.barriers<9>
// CHECK-NEXT:   %[[VST1:.*]] = fagpu.stage %[[VR]][%[[S1]]]
// CHECK-NEXT:   fagpu.tma_load %[[VMAP]][%[[BZ]], %[[KVH]], %[[KROW1]]] into %[[VST1]], %[[BARS]][%[[FV1]]]
// CHECK-NEXT:   %[[N1:.*]] = arith.addi %[[IT1]], %[[C1]] : index
// CHECK-NEXT:   scf.yield %[[N1]] : index
// CHECK-NEXT: }
// The second and third loops continue the counter where the previous one
// stopped.
// CHECK-NEXT: %[[P2:.*]] = scf.for %{{.*}} = %[[B1]] to %[[B2:.*]] step %[[C1]] iter_args(%{{.*}} = %[[P1]]) -> (index) {
// CHECK: fagpu.wait_barrier
// CHECK: fagpu.tma_load %[[KMAP]]
// CHECK: fagpu.tma_load %[[VMAP]]
// CHECK: scf.yield
// CHECK-NEXT: }
// CHECK-NEXT: scf.for %{{.*}} = %[[B2]] to %[[HI:.*]] step %[[C1]] iter_args(%{{.*}} = %[[P2]]) -> (index) {
// CHECK: fagpu.tma_load %[[KMAP]]
// CHECK: fagpu.tma_load %[[VMAP]]
// CHECK: scf.yield
// CHECK-NEXT: }
// CHECK-NEXT: } consumers(warpgroups = 2, registers = 240) {
// The consumers: Q's wait where its copy was, then the same three loops
// carrying the counter as a fourth iter_arg.
// CHECK-NEXT: fagpu.wait_barrier %[[BARS]][%[[C0]]] phase %[[C0]] : !fagpu.barriers<9>
// CHECK-NEXT: %[[L1:.*]]:4 = scf.for %{{.*}} = %[[LO]] to %[[B1]] step %[[C1]] iter_args(%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %[[CIT:.*]] = %[[C0]]) -> ({{.*}}, index) {
// CHECK-NEXT:   %[[CS:.*]] = arith.remui %[[CIT]], %[[C2]] : index
// CHECK-NEXT:   %[[CR:.*]] = arith.divui %[[CIT]], %[[C2]] : index
// K: waited (phase it / 2) just before QKᵀ, which reads the stage, and
// released right after it.
// CHECK:        %[[CFK:.*]] = arith.addi %[[CS]], %[[C1]] : index
// CHECK-NEXT:   fagpu.wait_barrier %[[BARS]][%[[CFK]]] phase %[[CR]] : !fagpu.barriers<9>
// CHECK-NEXT:   %[[K:.*]] = fagpu.stage %[[KR]][%[[CS]]]
// CHECK-NEXT:   fagpu.mma %[[QS]], %[[K]], %{{.*}} transpose_b
// CHECK-NEXT:   %[[CEK:.*]] = arith.addi %[[CS]], %[[C5]] : index
// CHECK-NEXT:   fagpu.arrive_barrier %[[BARS]][%[[CEK]]] : !fagpu.barriers<9>
// CHECK-NOT:    fagpu.wait_barrier
// V: waited just before P·V, then its stage is released.
// CHECK:        fagpu.convert_layout
// CHECK-NEXT:   %[[CFV:.*]] = arith.addi %[[CS]], %[[C3]] : index
// CHECK-NEXT:   fagpu.wait_barrier %[[BARS]][%[[CFV]]] phase %[[CR]] : !fagpu.barriers<9>
// CHECK-NEXT:   %[[V:.*]] = fagpu.stage %[[VR]][%[[CS]]]
// CHECK-NEXT:   %[[O:.*]] = fagpu.mma %{{.*}}, %[[V]], %{{.*}} : tensor<128x128xbf16, #fagpu.wgmma_a<warps = 8>>
// CHECK-NEXT:   %[[CE:.*]] = arith.addi %[[CS]], %[[C7]] : index
// CHECK-NEXT:   fagpu.arrive_barrier %[[BARS]][%[[CE]]] : !fagpu.barriers<9>
// CHECK-NEXT:   %[[CN:.*]] = arith.addi %[[CIT]], %[[C1]] : index
// CHECK-NEXT:   scf.yield %[[O]], %{{.*}}, %{{.*}}, %[[CN]] :
// CHECK-NEXT: }
// CHECK-NEXT: %[[L2:.*]]:4 = scf.for %{{.*}} = %[[B1]] to %[[B2]] step %[[C1]] iter_args(%{{.*}} = %[[L1]]#0, %{{.*}} = %[[L1]]#1, %{{.*}} = %[[L1]]#2, %{{.*}} = %[[L1]]#3)
// CHECK: fagpu.wait_barrier
// CHECK: fagpu.mma %[[QS]]
// CHECK: fagpu.wait_barrier
// CHECK: fagpu.mma
// CHECK: fagpu.arrive_barrier
// CHECK: %[[L3:.*]]:4 = scf.for %{{.*}} = %[[B2]] to %[[HI]] step %[[C1]] iter_args(%{{.*}} = %[[L2]]#0, %{{.*}} = %[[L2]]#1, %{{.*}} = %[[L2]]#2, %{{.*}} = %[[L2]]#3)
// CHECK: fagpu.arrive_barrier
// CHECK: fagpu.store_tile
// CHECK: fagpu.store_tile
// CHECK-NEXT: }
// CHECK-NEXT: gpu.return

// Three stages: 49152 + 512 (barriers) + 2 x 32768 <= 232448 bytes; ten
// barriers ([Q][K full x3][V full x3][K empty x3][V empty x3]), stage =
// it % 3.
// THREE-LABEL: gpu.func @causal_gqa
// THREE-SAME: fa.shared_bytes = 114792 : i64
// THREE-DAG: %[[C3:.*]] = arith.constant 3 : index
// THREE-DAG: %[[C4:.*]] = arith.constant 4 : index
// THREE-DAG: %[[C7:.*]] = arith.constant 7 : index
// THREE-DAG: %[[C10:.*]] = arith.constant 10 : index
// THREE: fagpu.alloc_shared : !fagpu.smem<3x128x64xbf16, swizzle = 128>
// THREE-NEXT: fagpu.alloc_shared : !fagpu.smem<3x128x64xbf16, swizzle = 128>
// THREE: fagpu.init_barriers %{{.*}} arrivals = [1, 1, 1, 1, 1, 1, 1, 8, 8, 8, 8, 8, 8] : !fagpu.barriers<13>
// THREE: scf.for {{.*}} -> (index) {
// THREE-NEXT: %[[S:.*]] = arith.remui %{{.*}}, %[[C3]] : index
// THREE-NEXT: arith.divui %{{.*}}, %[[C3]] : index
// THREE-NEXT: arith.addi
// THREE-NEXT: arith.muli
// THREE-NEXT: arith.addi %[[S]], %[[C7]] : index
// THREE: arith.addi %[[S]], %[[C10]] : index
// THREE: arith.addi %[[S]], %[[C4]] : index
// THREE: consumers(warpgroups = 2, registers = 240)

// Four stages fit too (17 barriers).
// FOUR-LABEL: gpu.func @causal_gqa
// FOUR: fagpu.alloc_shared : !fagpu.smem<4x128x64xbf16, swizzle = 128>
// FOUR: fagpu.alloc_barriers : !fagpu.barriers<17>

// 64-row Q blocks: one compute warpgroup (4 warps release a stage), a block
// of 256 threads, Q boxes of 64 rows.
// ONE-LABEL: gpu.func @causal_gqa
// ONE-SAME: %{{[a-z0-9]+}}: !fagpu.tensor_map<memref<1x4x300x64xbf16>, box = [64, 64]> {fagpu.tensor_map_of = 0 : i64}
// ONE-SAME: %{{[a-z0-9]+}}: !fagpu.tensor_map<memref<1x2x400x64xbf16>, box = [128, 64]> {fagpu.tensor_map_of = 1 : i64}
// ONE-SAME: fa.block = array<i64: 256, 1, 1>
// ONE-SAME: fa.shared_bytes = 73800 : i64
// ONE-SAME: known_block_size = array<i32: 256, 1, 1>
// ONE: fagpu.init_barriers %{{.*}} arrivals = [1, 1, 1, 1, 1, 4, 4, 4, 4] : !fagpu.barriers<9>
// ONE-NEXT: fagpu.warp_specialize producer(warpgroups = 1, registers = 24) {
// ONE-NEXT: fagpu.arrive_expect_bytes %{{.*}}, 8192 : !fagpu.barriers<9>
// ONE: fagpu.arrive_expect_bytes %{{.*}}, 16384 : !fagpu.barriers<9>
// ONE: } consumers(warpgroups = 1, registers = 240) {
// ONE: fagpu.mma {{.*}} -> tensor<64x128xf32, #fagpu.wgmma_acc<warps = 4>>
// ONE: fagpu.arrive_barrier
func.func @causal_gqa(%q: tensor<1x4x300x64xbf16>, %k: tensor<1x2x400x64xbf16>,
                      %v: tensor<1x2x400x64xbf16>)
    -> (tensor<1x4x300x64xbf16>, tensor<1x4x300xf32>) {
  %o, %lse = fa.attention %q, %k, %v causal
      : tensor<1x4x300x64xbf16>, tensor<1x2x400x64xbf16>, tensor<1x2x400x64xbf16>
      -> tensor<1x4x300x64xbf16>, tensor<1x4x300xf32>
  return %o, %lse : tensor<1x4x300x64xbf16>, tensor<1x4x300xf32>
}

// -----

// Head dim 128, no mask (one KV loop): a tile is two 64-column boxes (32 KiB
// on one barrier); the counter starts at 0 and only this loop carries it.

// CHECK-LABEL: gpu.func @wide
// CHECK-SAME: %{{[a-z0-9]+}}: !fagpu.tensor_map<memref<2x4x512x128xbf16>, box = [128, 64]> {fagpu.tensor_map_of = 1 : i64}
// CHECK-SAME: fa.block = array<i64: 384, 1, 1>
// CHECK-SAME: fa.shared_bytes = 163912 : i64
// CHECK: fagpu.alloc_shared : !fagpu.smem<128x128xbf16, swizzle = 128>
// CHECK-NEXT: fagpu.alloc_shared : !fagpu.smem<2x128x128xbf16, swizzle = 128>
// CHECK-NEXT: fagpu.alloc_shared : !fagpu.smem<2x128x128xbf16, swizzle = 128>
// CHECK: fagpu.warp_specialize
// CHECK-NEXT: fagpu.arrive_expect_bytes %{{.*}}, 32768 : !fagpu.barriers<9>
// CHECK: scf.for
// CHECK-COUNT-2: fagpu.arrive_expect_bytes %{{.*}}, 32768 : !fagpu.barriers<9>
// CHECK-NOT: scf.for
// CHECK: consumers(warpgroups = 2, registers = 240)
// CHECK: scf.for
// CHECK-NOT: scf.for
// CHECK: gpu.return

// Three stages of 128 x 128 tiles just fit: 32768 (Q) + 2 x 98304 (rings)
// + 104 (13 barriers) = 229480 <= 232448 bytes.
// THREE-LABEL: gpu.func @wide
// THREE-SAME: fa.shared_bytes = 229480 : i64
// THREE: fagpu.alloc_shared : !fagpu.smem<3x128x128xbf16, swizzle = 128>
// THREE-NEXT: fagpu.alloc_shared : !fagpu.smem<3x128x128xbf16, swizzle = 128>
// THREE: fagpu.alloc_barriers : !fagpu.barriers<13>

// With one byte less the rings fall back to two stages...
// FIT-LABEL: gpu.func @wide
// FIT-SAME: fa.shared_bytes = 163912 : i64
// FIT: fagpu.alloc_shared : !fagpu.smem<2x128x128xbf16, swizzle = 128>
// FIT-NEXT: fagpu.alloc_shared : !fagpu.smem<2x128x128xbf16, swizzle = 128>
// FIT: fagpu.alloc_barriers : !fagpu.barriers<9>

// ... and four stages asked give the three that fit.
// FOUR-LABEL: gpu.func @wide
// FOUR: fagpu.alloc_shared : !fagpu.smem<3x128x128xbf16, swizzle = 128>
// FOUR: fagpu.alloc_barriers : !fagpu.barriers<13>
func.func @wide(%q: tensor<2x4x256x128xbf16>, %k: tensor<2x4x512x128xbf16>,
                %v: tensor<2x4x512x128xbf16>)
    -> (tensor<2x4x256x128xbf16>, tensor<2x4x256xf32>) {
  %o, %lse = fa.attention %q, %k, %v
      : tensor<2x4x256x128xbf16>, tensor<2x4x512x128xbf16>, tensor<2x4x512x128xbf16>
      -> tensor<2x4x256x128xbf16>, tensor<2x4x256xf32>
  return %o, %lse : tensor<2x4x256x128xbf16>, tensor<2x4x256xf32>
}

// -----

// Written at the GPU tile level: the loop bound and the copies' coordinates
// computed before the loop stay before the split (both sides use them);
// what only the computation needs (here Q's subview, used by its copy
// alone, and the accumulator) moves into the consumers. A 3-D argument:
// coordinates [matrix, row].

#acc = #fagpu.wgmma_acc<warps = 4>
gpu.module @m {
  // CHECK-LABEL: gpu.func @prologue
  // CHECK-SAME: (%{{[a-z0-9]+}}: memref<2x256x64xbf16>, %{{[a-z0-9]+}}: memref<2x256x64xbf16>, %{{[a-z0-9]+}}: index,
  // CHECK-SAME: %{{[a-z0-9]+}}: !fagpu.tensor_map<memref<2x256x64xbf16>, box = [64, 64]> {fagpu.tensor_map_of = 0 : i64},
  // CHECK-SAME: %{{[a-z0-9]+}}: !fagpu.tensor_map<memref<2x256x64xbf16>, box = [64, 64]> {fagpu.tensor_map_of = 1 : i64})
  // CHECK-SAME: fa.block = array<i64: 256, 1, 1>
  // CHECK-SAME: fa.shared_bytes = 24616 : i64
  // CHECK-SAME: known_block_size = array<i32: 256, 1, 1>
  // CHECK: fagpu.init_barriers %{{.*}} arrivals = [1, 1, 1, 4, 4] : !fagpu.barriers<5>

  // The pass alone (no clean-up after it):
  // RAW-LABEL: gpu.func @prologue
  // RAW-SAME: (%[[Q:[a-z0-9]+]]: memref<2x256x64xbf16>, %[[K:[a-z0-9]+]]: memref<2x256x64xbf16>, %[[N:[a-z0-9]+]]: index,
  // RAW-SAME: %[[QMAP:[a-z0-9]+]]: !fagpu.tensor_map<{{[^{]*}} {fagpu.tensor_map_of = 0 : i64}, %[[KMAP:[a-z0-9]+]]: !fagpu.tensor_map<
  // RAW: %[[B:.*]] = gpu.block_id y
  // RAW-NEXT: %[[X:.*]] = gpu.block_id x
  // RAW-NEXT: %[[QROW:.*]] = arith.muli %[[X]], %{{.*}} : index
  // RAW-NEXT: %[[HI:.*]] = arith.addi %[[N]], %{{.*}} : index
  // RAW-NEXT: %[[QS:.*]] = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
  // RAW-NEXT: %[[KR:.*]] = fagpu.alloc_shared : !fagpu.smem<2x64x64xbf16, swizzle = 128>
  // RAW-NEXT: %[[BARS:.*]] = fagpu.alloc_barriers : !fagpu.barriers<5>
  // RAW-NEXT: fagpu.init_barriers %[[BARS]]
  // RAW-NEXT: fagpu.warp_specialize producer(warpgroups = 1, registers = 24) {
  // RAW-NOT: memref.subview
  // RAW: fagpu.tma_load %[[QMAP]][%[[B]], %[[QROW]]] into %[[QS]]
  // RAW: scf.for %[[I:.*]] = %{{.*}} to %[[HI]] step
  // RAW-NOT: memref.subview
  // RAW: %[[ROW:.*]] = arith.muli %[[I]], %{{.*}} : index
  // RAW-NOT: memref.subview
  // RAW: fagpu.stage %[[KR]]
  // RAW-NEXT: fagpu.tma_load %[[KMAP]][%[[B]], %[[ROW]]]
  // RAW: } consumers(warpgroups = 1, registers = 240) {
  // RAW: memref.subview %[[Q]][%[[B]], 0, 0] [1, 256, 64] [1, 1, 1]
  // RAW: fagpu.wait_barrier %[[BARS]]
  // RAW-NEXT: arith.constant dense<0.000000e+00>
  // RAW-NEXT: scf.for %{{.*}} = %{{.*}} to %[[HI]] step
  // RAW: fagpu.wait_barrier %[[BARS]]
  // RAW-NEXT: %[[KT:.*]] = fagpu.stage %[[KR]]
  // RAW-NEXT: fagpu.mma %[[QS]], %[[KT]]
  gpu.func @prologue(%q: memref<2x256x64xbf16>, %k: memref<2x256x64xbf16>, %n: index) kernel
      attributes {fa.block = array<i64: 128, 1, 1>, fa.shared_bytes = 16384 : i64} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %c256 = arith.constant 256 : index
    %b = gpu.block_id y
    %x = gpu.block_id x
    %qrow = arith.muli %x, %c64 : index
    %hi = arith.addi %n, %c1 : index
    %qs = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
    %ks = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
    %qv = memref.subview %q[%b, 0, 0] [1, 256, 64] [1, 1, 1] : memref<2x256x64xbf16> to memref<256x64xbf16, strided<[64, 1], offset: ?>>
    fagpu.copy_to_shared %qv[%qrow] limit %c256 into %qs : memref<256x64xbf16, strided<[64, 1], offset: ?>>, !fagpu.smem<64x64xbf16, swizzle = 128>
    %z = arith.constant dense<0.0> : tensor<64x64xf32, #acc>
    %r = scf.for %i = %c0 to %hi step %c1 iter_args(%acc = %z) -> (tensor<64x64xf32, #acc>) {
      %row = arith.muli %i, %c64 : index
      %kv = memref.subview %k[%b, 0, 0] [1, 256, 64] [1, 1, 1] : memref<2x256x64xbf16> to memref<256x64xbf16, strided<[64, 1], offset: ?>>
      fagpu.copy_to_shared %kv[%row] limit %c256 into %ks : memref<256x64xbf16, strided<[64, 1], offset: ?>>, !fagpu.smem<64x64xbf16, swizzle = 128>
      %s = fagpu.mma %qs, %ks, %acc transpose_b : !fagpu.smem<64x64xbf16, swizzle = 128>, !fagpu.smem<64x64xbf16, swizzle = 128>, tensor<64x64xf32, #acc> -> tensor<64x64xf32, #acc>
      scf.yield %s : tensor<64x64xf32, #acc>
    }
    gpu.return
  }
}

// -----

// Copies only before any loop: no rings, one barrier per copy, waited where
// the copy was; the block still grows by the producer.

gpu.module @m {
  // CHECK-LABEL: gpu.func @once
  // CHECK-SAME: fa.block = array<i64: 384, 1, 1>
  // CHECK-SAME: fa.shared_bytes = 16392 : i64
  // CHECK: %[[T:.*]] = fagpu.alloc_shared : !fagpu.smem<128x64xbf16, swizzle = 128>
  // CHECK-NOT: fagpu.alloc_shared
  // CHECK: %[[BARS:.*]] = fagpu.alloc_barriers : !fagpu.barriers<1>
  // CHECK-NEXT: fagpu.init_barriers %[[BARS]] arrivals = [1] : !fagpu.barriers<1>
  // CHECK-NEXT: fagpu.warp_specialize producer(warpgroups = 1, registers = 24) {
  // CHECK-NEXT: fagpu.arrive_expect_bytes %[[BARS]][%[[C0:.*]]], 16384
  // CHECK-NEXT: fagpu.tma_load %{{.*}} into %[[T]], %[[BARS]][%[[C0]]]
  // CHECK-NEXT: } consumers(warpgroups = 2, registers = 240) {
  // CHECK-NEXT: fagpu.wait_barrier %[[BARS]][%[[C0]]] phase %[[C0]]
  // CHECK-NEXT: fagpu.mma %[[T]], %[[T]]
  // CHECK-NEXT: fagpu.store_tile
  gpu.func @once(%k: memref<1x256x64xbf16>, %o: memref<128x128xf32>) kernel
      attributes {fa.block = array<i64: 256, 1, 1>, fa.shared_bytes = 16384 : i64} {
    %c0 = arith.constant 0 : index
    %c256 = arith.constant 256 : index
    %t = fagpu.alloc_shared : !fagpu.smem<128x64xbf16, swizzle = 128>
    %kv = memref.subview %k[0, 0, 0] [1, 256, 64] [1, 1, 1] : memref<1x256x64xbf16> to memref<256x64xbf16, strided<[64, 1]>>
    fagpu.copy_to_shared %kv[%c0] limit %c256 into %t : memref<256x64xbf16, strided<[64, 1]>>, !fagpu.smem<128x64xbf16, swizzle = 128>
    %z = arith.constant dense<0.0> : tensor<128x128xf32, #fagpu.wgmma_acc<warps = 8>>
    %s = fagpu.mma %t, %t, %z transpose_b : !fagpu.smem<128x64xbf16, swizzle = 128>, !fagpu.smem<128x64xbf16, swizzle = 128>, tensor<128x128xf32, #fagpu.wgmma_acc<warps = 8>> -> tensor<128x128xf32, #fagpu.wgmma_acc<warps = 8>>
    fagpu.store_tile %s, %o[%c0] limit %c256 : tensor<128x128xf32, #fagpu.wgmma_acc<warps = 8>>, memref<128x128xf32>
    gpu.return
  }
}

// -----

// A kernel without copies is left alone.

gpu.module @m {
  // CHECK-LABEL: gpu.func @no_copies
  // CHECK-SAME: fa.block = array<i64: 128, 1, 1>
  // CHECK-NOT: known_block_size
  // CHECK-NOT: fagpu.warp_specialize
  // CHECK-NOT: fagpu.alloc_barriers
  // CHECK: gpu.return
  gpu.func @no_copies(%x: f32) kernel attributes {fa.block = array<i64: 128, 1, 1>} {
    %s = tensor.splat %x : tensor<64x64xf32, #fagpu.wgmma_acc<warps = 4>>
    gpu.return
  }
}

// -----

// Runtime shapes: a copy's rows end at the argument's runtime row count
// (memref.dim), where the tensor map's bounds end them for the producer;
// the map's type keeps the dynamic sizes (the host encodes it at launch).

// CHECK-LABEL: gpu.func @runtime_rows
// CHECK-SAME: %{{.*}}: !fagpu.tensor_map<memref<2x?x64xbf16>, box = [128, 64]> {fagpu.tensor_map_of = 0 : i64}
// CHECK: fagpu.warp_specialize producer
// CHECK: fagpu.tma_load
gpu.module @m {
  gpu.func @runtime_rows(%k: memref<2x?x64xbf16>, %o: memref<128x128xf32>) kernel
      attributes {fa.block = array<i64: 256, 1, 1>, fa.shared_bytes = 16384 : i64} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = memref.dim %k, %c1 : memref<2x?x64xbf16>
    %t = fagpu.alloc_shared : !fagpu.smem<128x64xbf16, swizzle = 128>
    %kv = memref.subview %k[1, 0, 0] [1, %n, 64] [1, 1, 1] : memref<2x?x64xbf16> to memref<?x64xbf16, strided<[64, 1], offset: ?>>
    fagpu.copy_to_shared %kv[%c0] limit %n into %t : memref<?x64xbf16, strided<[64, 1], offset: ?>>, !fagpu.smem<128x64xbf16, swizzle = 128>
    %z = arith.constant dense<0.0> : tensor<128x128xf32, #fagpu.wgmma_acc<warps = 8>>
    %s = fagpu.mma %t, %t, %z transpose_b : !fagpu.smem<128x64xbf16, swizzle = 128>, !fagpu.smem<128x64xbf16, swizzle = 128>, tensor<128x128xf32, #fagpu.wgmma_acc<warps = 8>> -> tensor<128x128xf32, #fagpu.wgmma_acc<warps = 8>>
    fagpu.store_tile %s, %o[%c0] limit %n : tensor<128x128xf32, #fagpu.wgmma_acc<warps = 8>>, memref<128x128xf32>
    gpu.return
  }
}

// -----

// Packed sequences: the grid's z is the sequence, whose first rows and
// lengths are read from cu_seqlens before the split (both sides read the
// same offsets); the producer loads Q, K and V at the sequence's rows and
// the consumers store the sequence's rows only (limit = row + its rows,
// not the tensor's end, which is the next sequence's).
// CHECK-LABEL: gpu.func @varlen
// CHECK-SAME: %[[O:arg3]]: memref<1x4x?x64xbf16>
// CHECK-SAME: %[[CQ:arg5]]: memref<?xi32>, %[[CK:arg6]]: memref<?xi32>
// CHECK-SAME: fa.grid = array<i64: -9223372036854775808, 4, -9223372036854775808>
// CHECK: %[[SEQ:.*]] = gpu.block_id z
// CHECK: %[[QOFF32:.*]] = memref.load %[[CQ]][%[[SEQ]]]
// CHECK: %[[QOFF:.*]] = arith.index_cast %[[QOFF32]]
// CHECK: memref.load %[[CQ]]
// CHECK: memref.load %[[CK]][%[[SEQ]]]
// CHECK: memref.load %[[CK]]
// CHECK: %[[ROWS:.*]] = arith.maxsi %{{.*}}, %c0
// CHECK: %[[QROW:.*]] = arith.addi %[[QOFF]], %{{.*}}
// CHECK: fagpu.warp_specialize producer
// CHECK:   fagpu.tma_load %{{.*}}[%c0, %{{.*}}, %[[QROW]]]
// CHECK: consumers
// CHECK:   %[[END:.*]] = arith.addi %[[QROW]], %[[ROWS]]
// CHECK:   fagpu.store_tile %{{.*}}, %{{.*}}[%[[QROW]]] limit %[[END]]
func.func @varlen(%q: tensor<1x4x?x64xbf16>, %k: tensor<1x2x?x64xbf16>, %v: tensor<1x2x?x64xbf16>,
                  %cq: tensor<?xi32>, %ck: tensor<?xi32>, %mq: index, %mk: index)
    -> (tensor<1x4x?x64xbf16>, tensor<1x4x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v seqlens(%cq, %ck max %mq, %mk : tensor<?xi32>, tensor<?xi32>) causal
      : tensor<1x4x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>
      -> tensor<1x4x?x64xbf16>, tensor<1x4x?xf32>
  return %o, %lse : tensor<1x4x?x64xbf16>, tensor<1x4x?xf32>
}
