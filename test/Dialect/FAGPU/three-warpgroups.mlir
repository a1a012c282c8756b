// RUN: fa-opt %s -pass-pipeline='builtin.module(fa-convert-to-online-attention, fa-tile-attention{block-q=192 block-kv=128}, fa-convert-tiled-attention-to-fagpu)' | FileCheck %s --check-prefix=TILES
// RUN: fa-opt %s -pass-pipeline='builtin.module(fa-convert-to-online-attention, fa-tile-attention{block-q=192 block-kv=128}, fa-convert-tiled-attention-to-fagpu, gpu.module(fagpu-warp-specialize, fagpu-pingpong), canonicalize, cse)' | FileCheck %s
// RUN: not fa-opt %s -pass-pipeline='builtin.module(fa-convert-to-online-attention, fa-tile-attention{block-q=192 block-kv=128}, fa-convert-tiled-attention-to-fagpu, gpu.module(fagpu-warp-specialize{consumer-registers=240}))' 2>&1 | FileCheck %s --check-prefix=REGS

// FlashAttention 3's head-dim-64 block: 192 query rows on three compute
// warpgroups (twelve warps: the layouts' warp index has a digit of 3,
// warpgroup g owning rows 64 g .. 64 g + 63). The tiled forward carries over
// as it is, on 192-row register tiles; the split adds the producer (512
// threads) and gives the compute warpgroups what the register file leaves
// (160 each beside the producer's 24, FA3's numbers); ping-pong passes the
// turn around the three (next = (w + 1) % 3 + 1).

// TILES-LABEL: gpu.func @three
// TILES-SAME: fa.block = array<i64: 384, 1, 1>
// TILES-SAME: fa.block_q = 192
// TILES-DAG: !fagpu.smem<192x64xbf16, swizzle = 128>
// TILES-DAG: fagpu.mma {{.*}} transpose_b : {{.*}} -> tensor<192x128xf32, #fagpu.wgmma_acc<warps = 12>>
// TILES-DAG: fagpu.reduce_rows {{.*}} : tensor<192x128xf32, #fagpu.wgmma_acc<warps = 12>> -> tensor<192xf32, #fagpu.rows<#fagpu.wgmma_acc<warps = 12>>>
// TILES-DAG: fagpu.mma {{.*}} : tensor<192x128xbf16, #fagpu.wgmma_a<warps = 12>>, {{.*}} -> tensor<192x64xf32, #fagpu.wgmma_acc<warps = 12>>

// CHECK-LABEL: gpu.func @three
// CHECK-SAME: !fagpu.tensor_map<memref<1x2x1000x64xbf16>, box = [192, 64]>
// CHECK-SAME: fa.block = array<i64: 512, 1, 1>
// CHECK: fagpu.warp_specialize producer(warpgroups = 1, registers = 24) {
// CHECK: } consumers(warpgroups = 3, registers = 160) {
// CHECK-NEXT: %[[WG:.*]] = fagpu.warpgroup_id
// CHECK-NEXT: %[[MINE:.*]] = arith.addi %[[WG]], %[[C1:.*]] : index
// CHECK-NEXT: %[[NEXTWG:.*]] = arith.remui %[[MINE]], %[[C3:.*]] : index
// CHECK-NEXT: %[[NEXT:.*]] = arith.addi %[[NEXTWG]], %[[C1]] : index
// CHECK-NEXT: %[[ISLAST:.*]] = arith.cmpi eq, %[[WG]], %[[C2:.*]] : index
// CHECK-NEXT: scf.if %[[ISLAST]] {
// CHECK-NEXT:   fagpu.named_barrier_arrive %[[C1]], threads = 256
// CHECK:      fagpu.named_barrier_sync %[[MINE]], threads = 256
// CHECK-NEXT: fagpu.mma {{.*}} -> tensor<192x128xf32, #fagpu.wgmma_acc<warps = 12>>
// CHECK-NEXT: fagpu.named_barrier_arrive %[[NEXT]], threads = 256

// Three warpgroups at 240 registers do not fit beside the producer.
// REGS: error: fagpu-warp-specialize: setmaxnreg 24 (producer) and 240 (3 compute warpgroups) must be multiples of 8 in [24, 256] that fit the 64K-register file
func.func @three(%q: tensor<1x2x1000x64xbf16>, %k: tensor<1x2x1000x64xbf16>,
                 %v: tensor<1x2x1000x64xbf16>)
    -> (tensor<1x2x1000x64xbf16>, tensor<1x2x1000xf32>) {
  %o, %lse = fa.attention %q, %k, %v {causal}
      : tensor<1x2x1000x64xbf16>, tensor<1x2x1000x64xbf16>, tensor<1x2x1000x64xbf16>
      -> tensor<1x2x1000x64xbf16>, tensor<1x2x1000xf32>
  return %o, %lse : tensor<1x2x1000x64xbf16>, tensor<1x2x1000xf32>
}
