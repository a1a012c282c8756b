// RUN: fa-opt %s -split-input-file -fa-decompose-quantize | FileCheck %s
// RUN: fa-opt %s -split-input-file -fa-decompose-quantize -fa-lower-to-host-llvm | FileCheck %s --check-prefix=LLVM

// Without rotation: f32 values in the blocks' [B, G, R, N, D] space, the
// amax per (b, g) from 1e-12, descale = amax / 448, e4m3 of the clamped
// scaled values, collapsed back to [B, H, N, D].
// CHECK-LABEL: func @plain
// CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0], [1, 2], [3], [4]] output_shape [2, 2, 2, 64, 32] : tensor<2x4x64x32xbf16> into tensor<2x2x2x64x32xbf16>
// CHECK: linalg.generic
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: %[[FLOOR:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<2x2xf32>)
// CHECK: %[[AMAX:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction", "reduction", "reduction"]
// CHECK-SAME: outs(%[[FLOOR]] : tensor<2x2xf32>)
// CHECK: math.absf
// CHECK: arith.maximumf
// CHECK: %[[DESCALE:.*]] = linalg.generic {{.*}} ins(%[[AMAX]] : tensor<2x2xf32>)
// CHECK: arith.divf %{{.*}}, %{{.*}} : f32
// CHECK: %[[Q:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %[[AMAX]] : tensor<2x2x2x64x32xf32>, tensor<2x2xf32>)
// CHECK: arith.maximumf
// CHECK: arith.minimumf
// CHECK: arith.truncf %{{.*}} : f32 to f8E4M3FN
// CHECK: %[[OUT:.*]] = tensor.collapse_shape %[[Q]] {{\[\[}}0], [1, 2], [3], [4]] : tensor<2x2x2x64x32xf8E4M3FN> into tensor<2x4x64x32xf8E4M3FN>
// CHECK: return %[[OUT]], %[[DESCALE]]
// LLVM-LABEL: llvm.func @plain
// LLVM-NOT: f8E4M3FN
func.func @plain(%x: tensor<2x4x64x32xbf16>) -> (tensor<2x4x64x32xf8E4M3FN>, tensor<2x2xf32>) {
  %q, %d = fa.quantize %x : tensor<2x4x64x32xbf16> -> tensor<2x4x64x32xf8E4M3FN>, tensor<2x2xf32>
  return %q, %d : tensor<2x4x64x32xf8E4M3FN>, tensor<2x2xf32>
}

// -----

// Rotated: a contraction over D with the constant diag(signs) Hd / sqrt(D)
// (entries +-1/sqrt(8)); a dynamic length.
// CHECK-LABEL: func @rotated
// CHECK: %[[R:.*]] = arith.constant dense<{{.*}}0.353553{{.*}}> : tensor<8x8xf32>
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]
// CHECK-SAME: ins(%{{.*}}, %[[R]] : tensor<1x1x2x?x8xf16>, tensor<8x8xf32>)
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: arith.truncf %{{.*}} : f32 to f8E4M3FN
// CHECK: tensor.collapse_shape
// LLVM-LABEL: llvm.func @rotated
// LLVM-NOT: f8E4M3FN
func.func @rotated(%x: tensor<1x2x?x8xf16>) -> (tensor<1x2x?x8xf8E4M3FN>, tensor<1x1xf32>) {
  %q, %d = fa.quantize %x rotate(seed = 3) : tensor<1x2x?x8xf16> -> tensor<1x2x?x8xf8E4M3FN>, tensor<1x1xf32>
  return %q, %d : tensor<1x2x?x8xf8E4M3FN>, tensor<1x1xf32>
}
