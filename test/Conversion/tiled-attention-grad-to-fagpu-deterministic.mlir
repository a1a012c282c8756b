// RUN: fa-opt %s -fa-tile-attention-grad="block-q=64 block-kv=64" -canonicalize -cse -fa-convert-tiled-attention-grad-to-fagpu="dq-reduction=atomic" -canonicalize -cse | FileCheck %s
// RUN: fa-opt %s -fa-tile-attention-grad="block-q=64 block-kv=64" -canonicalize -cse -fa-convert-tiled-attention-grad-to-fagpu -canonicalize -cse | FileCheck %s --check-prefix=BULK
// RUN: not fa-opt %s -fa-tile-attention-grad="block-q=64 block-kv=64" -fa-convert-tiled-attention-grad-to-fagpu="mma-sync" 2>&1 | FileCheck %s --check-prefix=MMA

// A deterministic backward adds each dQ tile in its KV block's turn: the
// kernel takes one i32 counter per (batch, query head, Q block) after its
// nine tensors, walks the KV blocks last first (block x takes KV block
// 3 - x: every turn it waits for belongs to a block launched before it),
// and every sum of dQ waits for the counter to reach its turn: the last KV
// block whose keys the Q block's rows see (ceil(min(end row, 200) / 64) - 1
// under the causal mask) minus its own. The mma.sync backward is refused.

// Atomic sums: the turn passes right after them.
// CHECK-LABEL: gpu.func @grad(
// CHECK-SAME: %[[TURNS:[a-z0-9]+]]: memref<2x4x4xi32>) kernel
// CHECK: %[[X:.*]] = gpu.block_id  x
// CHECK: %[[KV:.*]] = arith.subi %c3, %[[X]] : index
// CHECK-NOT: fagpu.reduce_to_global
// CHECK: %[[END:.*]] = arith.minsi %{{.*}}, %c200 : index
// CHECK: %[[HI:.*]] = arith.ceildivsi %[[END]], %c64 : index
// CHECK: %[[LAST:.*]] = arith.subi %{{.*}}, %c1 : index
// CHECK: %[[TURN:.*]] = arith.subi %[[LAST]], %[[KV]] : index
// CHECK: fagpu.wait_turn %[[TURNS]][%block_id_z, %{{.*}}, %{{.*}}], %[[TURN]] : memref<2x4x4xi32>
// CHECK-NEXT: fagpu.store_tile %{{.*}} accumulate
// CHECK-NEXT: fagpu.pass_turn %[[TURNS]]
// CHECK-COUNT-2: fagpu.pass_turn %[[TURNS]]

// Bulk reductions (the choice up to head dim 128): the turn passes once
// the sums have landed in global memory, not when the copy engine has read
// the staging tile.
// BULK-LABEL: gpu.func @grad(
// BULK-SAME: %[[TURNS:[a-z0-9]+]]: memref<2x4x4xi32>) kernel
// BULK: fagpu.wait_turn %[[TURNS]][%block_id_z, %{{.*}}, %{{.*}}], %{{.*}} : memref<2x4x4xi32>
// BULK-NEXT: fagpu.wait_shared_reads
// BULK-NEXT: fagpu.store_to_shared
// BULK-NEXT: fagpu.reduce_to_global
// BULK-NEXT: fagpu.wait_global_sums
// BULK-NEXT: fagpu.pass_turn %[[TURNS]]
// BULK-COUNT-2: fagpu.wait_global_sums
// BULK-NOT: fagpu.store_tile {{.*}} accumulate

// MMA: error: cannot lower to the mma.sync backward: a deterministic backward takes the WGMMA backward (sm_90a)
func.func @grad(%q: tensor<2x4x200x64xbf16>, %k: tensor<2x2x200x64xbf16>, %v: tensor<2x2x200x64xbf16>,
                %o: tensor<2x4x200x64xbf16>, %do: tensor<2x4x200x64xbf16>, %lse: tensor<2x4x200xf32>)
    -> (tensor<2x4x200x64xbf16>, tensor<2x2x200x64xbf16>, tensor<2x2x200x64xbf16>) {
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse causal deterministic
      : tensor<2x4x200x64xbf16>, tensor<2x2x200x64xbf16>, tensor<2x2x200x64xbf16>,
        tensor<2x4x200x64xbf16>, tensor<2x4x200x64xbf16>, tensor<2x4x200xf32>
      -> tensor<2x4x200x64xbf16>, tensor<2x2x200x64xbf16>, tensor<2x2x200x64xbf16>
  return %dq, %dk, %dv : tensor<2x4x200x64xbf16>, tensor<2x2x200x64xbf16>, tensor<2x2x200x64xbf16>
}

