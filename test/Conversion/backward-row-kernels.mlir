// RUN: fa-opt %s -fa-tile-attention-grad="block-q=64 block-kv=64 scale-grads-once" -canonicalize -cse -fa-convert-tiled-attention-grad-to-fagpu -canonicalize -cse | FileCheck %s
// RUN: fa-opt %s -fa-tile-attention-grad="block-q=64 block-kv=64 scale-grads-once" -canonicalize -cse -fa-convert-tiled-attention-grad-to-fagpu="mma-sync" -canonicalize -cse | FileCheck %s

// The ops around the tiled backward's forall lowered as they are, a warp a
// row: before it, delta = rowsum(O * dO) (each lane's columns, then a
// butterfly of the payload's combiner, lane 0 stores) and dQ's zeroed f32
// accumulator; after it, dQ's cast. With scale-grads-once the softmax
// scale (1/8 at D = 64) is left out of dS and multiplies dK in the main
// kernel's epilogue and dQ in the post kernel. The mma.sync backward
// (mma-sync) takes the same row kernels.

// CHECK-LABEL: gpu.func @grad_pre(
// CHECK-SAME: %[[O:.*]]: memref<2x4x200x64xbf16>, %[[DO:.*]]: memref<2x4x200x64xbf16>, %[[DELTA:.*]]: memref<2x4x200xf32>, %[[ACC:.*]]: memref<2x4x200x64xf32>)
// CHECK-SAME: fa.grid = array<i64: 50, 4, 2>
// CHECK-SAME: fa.kind = "backward_pre"
// CHECK: %[[ROW:.*]] = arith.addi
// CHECK: scf.if
// CHECK:   %[[O0:.*]] = memref.load %[[O]][%{{.*}}, %{{.*}}, %[[ROW]], %[[LANE:.*]]]
// CHECK:   %[[DO0:.*]] = memref.load %[[DO]][%{{.*}}, %{{.*}}, %[[ROW]], %[[LANE]]]
// CHECK:   arith.mulf
// CHECK:   %[[COL1:.*]] = arith.addi %[[LANE]], %c32
// CHECK:   memref.load %[[O]][%{{.*}}, %{{.*}}, %[[ROW]], %[[COL1]]]
// CHECK-COUNT-5: gpu.shuffle  xor
// CHECK:   scf.if
// CHECK-NEXT: memref.store %{{.*}}, %[[DELTA]][%{{.*}}, %{{.*}}, %[[ROW]]]
// CHECK:   memref.store %{{.*}}, %[[ACC]][%{{.*}}, %{{.*}}, %[[ROW]], %[[LANE]]]
// CHECK:   memref.store %{{.*}}, %[[ACC]][%{{.*}}, %{{.*}}, %[[ROW]], %[[COL1]]]

// The scale's first use is dK's epilogue, after the loops (dS unscaled).
// CHECK-LABEL: gpu.func @grad(
// CHECK: %[[SCALE:.*]] = arith.constant dense<1.250000e-01>
// CHECK: scf.for
// CHECK: arith.mulf %{{.*}}, %[[SCALE]] :
// CHECK-NEXT: arith.truncf
// CHECK-NEXT: memref.subview %{{.*}}[%{{.*}}, %{{.*}}, 0, 0] [1, 1, 200, 64]
// CHECK-NEXT: fagpu.store_tile

// CHECK-LABEL: gpu.func @grad_post(
// CHECK-SAME: %[[SUM:.*]]: memref<2x4x200x64xf32>, %[[DQ:.*]]: memref<2x4x200x64xbf16>)
// CHECK-SAME: fa.kind = "backward_post"
// CHECK: %[[S:.*]] = arith.constant 1.250000e-01 : f32
// CHECK: %[[X:.*]] = memref.load %[[SUM]]
// CHECK-NEXT: %[[Y:.*]] = arith.mulf %[[X]], %[[S]]
// CHECK-NEXT: %[[Z:.*]] = arith.truncf %[[Y]] : f32 to bf16
// CHECK-NEXT: memref.store %[[Z]], %[[DQ]]


func.func @grad(%q: tensor<2x4x200x64xbf16>, %k: tensor<2x2x200x64xbf16>, %v: tensor<2x2x200x64xbf16>,
                %o: tensor<2x4x200x64xbf16>, %do: tensor<2x4x200x64xbf16>, %lse: tensor<2x4x200xf32>)
    -> (tensor<2x4x200x64xbf16>, tensor<2x2x200x64xbf16>, tensor<2x2x200x64xbf16>) {
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse causal
      : tensor<2x4x200x64xbf16>, tensor<2x2x200x64xbf16>, tensor<2x2x200x64xbf16>,
        tensor<2x4x200x64xbf16>, tensor<2x4x200x64xbf16>, tensor<2x4x200xf32>
      -> tensor<2x4x200x64xbf16>, tensor<2x2x200x64xbf16>, tensor<2x2x200x64xbf16>
  return %dq, %dk, %dv : tensor<2x4x200x64xbf16>, tensor<2x2x200x64xbf16>, tensor<2x2x200x64xbf16>
}
