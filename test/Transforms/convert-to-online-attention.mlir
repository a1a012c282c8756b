// RUN: fa-opt %s -split-input-file -fa-convert-to-online-attention | FileCheck %s

// The running state starts at acc = 0, max = -inf, sum = 0; the default scale
// 1/sqrt(D) is resolved onto the online op; normalize produces O and LSE.

// CHECK-LABEL: func @default_scale
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG: %[[NEGINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK: %[[ACC:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.*}} : tensor<2x8x128x64xf32>)
// CHECK: %[[MAX:.*]] = linalg.fill ins(%[[NEGINF]] : f32) outs(%{{.*}} : tensor<2x8x128xf32>)
// CHECK: %[[SUM:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.*}} : tensor<2x8x128xf32>)
// CHECK: %[[A:.*]], %[[M:.*]], %[[L:.*]] = fa.online_attention ins(%arg0, %arg1, %arg2 : {{.*}}) outs(%[[ACC]], %[[MAX]], %[[SUM]] : {{.*}}) scale = 1.250000e-01
// CHECK-NOT: causal
// CHECK: %[[O:.*]], %[[LSE:.*]] = fa.normalize %[[A]], %[[M]], %[[L]] : tensor<2x8x128x64xf32>, tensor<2x8x128xf32>, tensor<2x8x128xf32> -> tensor<2x8x128x64xbf16>, tensor<2x8x128xf32>
// CHECK: return %[[O]], %[[LSE]]
// CHECK-NOT: fa.attention
func.func @default_scale(%q: tensor<2x8x128x64xbf16>, %k: tensor<2x2x128x64xbf16>,
                         %v: tensor<2x2x128x64xbf16>)
    -> (tensor<2x8x128x64xbf16>, tensor<2x8x128xf32>) {
  %o, %lse = fa.attention %q, %k, %v
      : tensor<2x8x128x64xbf16>, tensor<2x2x128x64xbf16>, tensor<2x2x128x64xbf16>
      -> tensor<2x8x128x64xbf16>, tensor<2x8x128xf32>
  return %o, %lse : tensor<2x8x128x64xbf16>, tensor<2x8x128xf32>
}

// -----

// Attributes carry over unchanged.

// CHECK-LABEL: func @attrs_carry_over
// CHECK: fa.online_attention {{.*}} scale = 5.000000e-01 causal window [16, 0] softcap = 3.000000e+01
// CHECK-NOT: unmasked
func.func @attrs_carry_over(%q: tensor<1x2x32x16xf32>, %k: tensor<1x2x48x16xf32>,
                            %v: tensor<1x2x48x8xf32>) -> tensor<1x2x32x8xf32> {
  %o, %lse = fa.attention %q, %k, %v scale = 0.5 causal window [16, 0] softcap = 30.0
      : tensor<1x2x32x16xf32>, tensor<1x2x48x16xf32>, tensor<1x2x48x8xf32>
      -> tensor<1x2x32x8xf32>, tensor<1x2x32xf32>
  return %o : tensor<1x2x32x8xf32>
}

// -----

// The backward is left for fa-tile-attention-grad.

// CHECK-LABEL: func @grad_untouched
// CHECK: fa.attention_grad
// CHECK-NOT: fa.online_attention
func.func @grad_untouched(%q: tensor<1x1x8x8xf32>, %o: tensor<1x1x8x8xf32>, %lse: tensor<1x1x8xf32>)
    -> tensor<1x1x8x8xf32> {
  %dq, %dk, %dv = fa.attention_grad %q, %q, %q, %o, %o, %lse
      : tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32>,
        tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32>, tensor<1x1x8xf32>
      -> tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32>
  return %dq : tensor<1x1x8x8xf32>
}

// -----

// Runtime shapes: the accumulator and the row statistics take their dynamic
// sizes (batch, Nq) from Q, and the head dim of O from V.

// CHECK-LABEL: func @runtime_shapes
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : index
// CHECK-DAG: %[[C3:.*]] = arith.constant 3 : index
// CHECK: %[[B:.*]] = tensor.dim %arg0, %[[C0]] : tensor<?x4x?x64xbf16>
// CHECK: %[[N:.*]] = tensor.dim %arg0, %[[C2]] : tensor<?x4x?x64xbf16>
// CHECK: %[[DV:.*]] = tensor.dim %arg2, %[[C3]] : tensor<?x2x?x?xbf16>
// CHECK: tensor.empty(%[[B]], %[[N]], %[[DV]]) : tensor<?x4x?x?xf32>
// CHECK: tensor.empty(%{{.*}}, %{{.*}}) : tensor<?x4x?xf32>
// CHECK: fa.online_attention ins(%arg0, %arg1, %arg2 : tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x?xbf16>) outs({{.*}} : tensor<?x4x?x?xf32>, tensor<?x4x?xf32>, tensor<?x4x?xf32>)
func.func @runtime_shapes(%q: tensor<?x4x?x64xbf16>, %k: tensor<?x2x?x64xbf16>,
                          %v: tensor<?x2x?x?xbf16>)
    -> (tensor<?x4x?x?xbf16>, tensor<?x4x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v causal
      : tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x?xbf16>
      -> tensor<?x4x?x?xbf16>, tensor<?x4x?xf32>
  return %o, %lse : tensor<?x4x?x?xbf16>, tensor<?x4x?xf32>
}

// -----

// FP8: q's and k's descales go to the online op (they scale the scores),
// v's to normalize (it scales O).

// CHECK-LABEL: func @fp8
// CHECK-SAME: %[[DQ:[a-z0-9]+]]: tensor<2x2xf32>, %[[DK:[a-z0-9]+]]: tensor<2x2xf32>, %[[DV:[a-z0-9]+]]: tensor<2x2xf32>
// CHECK: fa.online_attention ins({{.*}} : tensor<2x4x128x128xf8E4M3FN>, tensor<2x2x128x128xf8E4M3FN>, tensor<2x2x128x128xf8E4M3FN>) outs({{.*}}) descale(%[[DQ]], %[[DK]] : tensor<2x2xf32>, tensor<2x2xf32>) scale = 0.088388347648318433 causal
// CHECK: fa.normalize {{.*}} descale(%[[DV]] : tensor<2x2xf32>) : {{.*}} -> tensor<2x4x128x128xbf16>, tensor<2x4x128xf32>
func.func @fp8(%q: tensor<2x4x128x128xf8E4M3FN>, %k: tensor<2x2x128x128xf8E4M3FN>,
               %v: tensor<2x2x128x128xf8E4M3FN>, %dq: tensor<2x2xf32>,
               %dk: tensor<2x2xf32>, %dv: tensor<2x2xf32>)
    -> (tensor<2x4x128x128xbf16>, tensor<2x4x128xf32>) {
  %o, %lse = fa.attention %q, %k, %v
      descale(%dq, %dk, %dv : tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>) causal
      : tensor<2x4x128x128xf8E4M3FN>, tensor<2x2x128x128xf8E4M3FN>, tensor<2x2x128x128xf8E4M3FN>
      -> tensor<2x4x128x128xbf16>, tensor<2x4x128xf32>
  return %o, %lse : tensor<2x4x128x128xbf16>, tensor<2x4x128xf32>
}
