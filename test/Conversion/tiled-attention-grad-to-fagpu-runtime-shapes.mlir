// RUN: fa-opt %s -fa-tile-attention-grad="block-q=64 block-kv=64" -canonicalize -cse -fa-convert-tiled-attention-grad-to-fagpu -canonicalize -cse | FileCheck %s

// Runtime batch and lengths on the GPU tile level: the kernels' memrefs keep
// the dynamic sizes, the sizes the tiled IR reads (tensor.dim) are read from
// the kernel arguments (memref.dim), and every grid but the heads is the
// call's (kDynamic): (KV blocks, KV heads, batch) for the main kernel,
// (row blocks, query heads, batch) for the row kernels.

// CHECK-LABEL: gpu.module @fa_kernels
// CHECK: gpu.func @runtime_backward_pre(%{{.*}}: memref<?x8x?x64xbf16>, %{{.*}}: memref<?x8x?x64xbf16>, %{{.*}}: memref<?x8x?xf32>, %{{.*}}: memref<?x8x?x64xf32>) kernel
// CHECK-SAME: fa.grid = array<i64: -9223372036854775808, 8, -9223372036854775808>
// CHECK: gpu.func @runtime_backward(%[[Q:.*]]: memref<?x8x?x64xbf16>, %[[K:.*]]: memref<?x2x?x64xbf16>, %{{.*}}: memref<?x2x?x64xbf16>, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}: memref<?x2x?x64xbf16>) kernel
// CHECK-SAME: fa.grid = array<i64: -9223372036854775808, 2, -9223372036854775808>
// CHECK-DAG: memref.dim %[[Q]], %c2 : memref<?x8x?x64xbf16>
// CHECK-DAG: memref.dim %[[K]], %c2 : memref<?x2x?x64xbf16>
// CHECK: gpu.func @runtime_backward_post(%{{.*}}: memref<?x8x?x64xf32>, %{{.*}}: memref<?x8x?x64xbf16>) kernel
func.func @runtime_backward(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>,
                            %o: tensor<?x8x?x64xbf16>, %do: tensor<?x8x?x64xbf16>, %lse: tensor<?x8x?xf32>)
    -> (tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>) {
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse causal
      : tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>,
        tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>
      -> tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>
  return %dq, %dk, %dv : tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>
}
