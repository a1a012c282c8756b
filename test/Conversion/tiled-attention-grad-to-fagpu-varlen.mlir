// RUN: fa-opt %s -fa-tile-attention-grad="block-q=64 block-kv=64" -canonicalize -cse -fa-convert-tiled-attention-grad-to-fagpu -canonicalize -cse | FileCheck %s

// Packed sequences on the GPU tile level: the forall over sequences and its
// loop over KV blocks are the grid (KV block, KV head, sequence), sized by
// the call (kDynamic: the longest sequence's KV blocks, the sequences).
// cu_seqlens_q and cu_seqlens_k follow the tensors as kernel arguments and
// are loaded at the sequence's block id; the LSE rows of a Q block end at
// the sequence's end and read +inf past it (P = 0 for rows of the next
// sequence), and dK / dV are stored up to the block's keys of the sequence.
// The row kernels run over every packed row (their grid's x the call's).

// CHECK-LABEL: gpu.module @fa_kernels
// CHECK: gpu.func @varlen_backward_pre(%{{.*}}: memref<1x8x?x64xbf16>, %{{.*}}: memref<1x8x?x64xbf16>, %{{.*}}: memref<1x8x?xf32>, %{{.*}}: memref<1x8x?x64xf32>) kernel
// CHECK-SAME: fa.grid = array<i64: -9223372036854775808, 8, 1>
// CHECK: memref.dim %{{.*}}, %c2 : memref<1x8x?x64xbf16>
// CHECK: gpu.func @varlen_backward(%{{.*}}: memref<1x8x?x64xbf16>, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}: memref<1x2x?x64xbf16>, %[[CUQ:.*]]: memref<?xi32>, %[[CUK:.*]]: memref<?xi32>) kernel
// CHECK-SAME: fa.grid = array<i64: -9223372036854775808, 2, -9223372036854775808>
// CHECK-SAME: fa.kind = "backward"
// CHECK: %[[SEQ:.*]] = gpu.block_id  z
// CHECK: memref.load %[[CUQ]][%[[SEQ]]] : memref<?xi32>
// CHECK: memref.load %[[CUK]][%[[SEQ]]] : memref<?xi32>
// CHECK: gpu.block_id  x
// CHECK: fagpu.copy_to_shared
// CHECK: scf.for
// CHECK: fagpu.load_tile %{{.*}} limit %{{.*}} {padding = 0x7FF0000000000000 : f64}
// CHECK: fagpu.store_tile {{.*}} limit
// CHECK: gpu.func @varlen_backward_post(%{{.*}}: memref<1x8x?x64xf32>, %{{.*}}: memref<1x8x?x64xbf16>) kernel
// CHECK-SAME: fa.grid = array<i64: -9223372036854775808, 8, 1>
func.func @varlen_backward(%q: tensor<1x8x?x64xbf16>, %k: tensor<1x2x?x64xbf16>, %v: tensor<1x2x?x64xbf16>,
                           %o: tensor<1x8x?x64xbf16>, %do: tensor<1x8x?x64xbf16>, %lse: tensor<1x8x?xf32>,
                           %cq: tensor<?xi32>, %ck: tensor<?xi32>, %mq: index, %mk: index)
    -> (tensor<1x8x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>) {
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse
      seqlens(%cq, %ck max %mq, %mk : tensor<?xi32>, tensor<?xi32>) causal
      : tensor<1x8x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>,
        tensor<1x8x?x64xbf16>, tensor<1x8x?x64xbf16>, tensor<1x8x?xf32>
      -> tensor<1x8x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>
  return %dq, %dk, %dv : tensor<1x8x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>
}
