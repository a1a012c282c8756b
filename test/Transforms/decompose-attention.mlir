// RUN: fa-opt %s -split-input-file -fa-decompose-attention -cse | FileCheck %s

// One masked online-softmax step in base 2: s = mask(qk) * (scale * log2 e),
// masked to -inf before the scale (so that x * scale - max stays one FMA),
// m' = max(m, rowmax s), alpha = 2^(m - m'), p = 2^(s - m'),
// l' = alpha l + rowsum p, A' = alpha A + p V. The mask compares the in-tile
// column j with the keys left, kv_len - kv_start, and the diagonal j - i with
// the causal edge q_start + kv_len - q_len + 1 - kv_start, both scalars of
// the tile clamped to [-Br, Bc] = [-32, 16].

// CHECK-LABEL: func @online_step_masked
// CHECK-SAME: %[[QS:[a-z0-9]+]]: index, %[[KS:[a-z0-9]+]]: index, %[[NQ:[a-z0-9]+]]: index, %[[NK:[a-z0-9]+]]: index)
// CHECK: %[[LEFT:.*]] = arith.subi %[[NK]], %[[KS]] : index
// CHECK-NEXT: %[[CM32:.*]] = arith.constant -32 : index
// CHECK-NEXT: %[[LEFTLO:.*]] = arith.maxsi %[[LEFT]], %[[CM32]]
// CHECK-NEXT: %[[C16:.*]] = arith.constant 16 : index
// CHECK-NEXT: %[[KEYS:.*]] = arith.minsi %[[LEFTLO]], %[[C16]]
// CHECK-NEXT: %[[QKV:.*]] = arith.addi %[[QS]], %[[NK]] : index
// CHECK-NEXT: %[[KVQ:.*]] = arith.addi %[[NQ]], %[[KS]] : index
// CHECK-NEXT: %[[SHIFT:.*]] = arith.subi %[[QKV]], %[[KVQ]] : index
// CHECK-NEXT: %[[C1:.*]] = arith.constant 1 : index
// CHECK-NEXT: %[[EDGE:.*]] = arith.addi %[[SHIFT]], %[[C1]] : index
// CHECK-NEXT: %[[EDGELO:.*]] = arith.maxsi %[[EDGE]], %[[CM32]]
// CHECK-NEXT: %[[UPPER:.*]] = arith.minsi %[[EDGELO]], %[[C16]]
// CHECK: %[[QK:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]} ins(%arg0, %arg1 : tensor<32x64xbf16>, tensor<16x64xbf16>) outs(%{{.*}} : tensor<32x16xf32>)
// CHECK: %[[S:.*]] = linalg.generic {{.*}} ins(%[[QK]] : tensor<32x16xf32>)
// CHECK-NEXT: ^bb0(%[[RAW:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:   %[[I:.*]] = linalg.index 0
// CHECK-NEXT:   %[[J:.*]] = linalg.index 1
// CHECK-NEXT:   %[[INB:.*]] = arith.cmpi slt, %[[J]], %[[KEYS]] : index
// CHECK-NEXT:   %[[DIAG:.*]] = arith.subi %[[J]], %[[I]] : index
// CHECK-NEXT:   %[[BAND:.*]] = arith.cmpi slt, %[[DIAG]], %[[UPPER]] : index
// CHECK-NEXT:   %[[VIS:.*]] = arith.andi %[[INB]], %[[BAND]] : i1
// CHECK-NEXT:   %[[NEGINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK-NEXT:   %[[MASKED:.*]] = arith.select %[[VIS]], %[[RAW]], %[[NEGINF]] : f32
// CHECK-NEXT:   %[[SCALE:.*]] = arith.constant 0.180336878 : f32
// CHECK-NEXT:   %[[SCALED:.*]] = arith.mulf %[[MASKED]], %[[SCALE]] : f32
// CHECK-NEXT:   linalg.yield %[[SCALED]]
// CHECK: %[[M:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[S]] : tensor<32x16xf32>) outs(%arg4 : tensor<32xf32>)
// CHECK:   arith.maximumf
// CHECK: %[[RESCALE:.*]]:2 = linalg.generic {{.*}} ins(%arg4, %[[M]] : tensor<32xf32>, tensor<32xf32>)
// CHECK:   arith.cmpf oeq
// CHECK:   %[[SAFE:.*]] = arith.select
// CHECK:   %[[DIFF:.*]] = arith.subf %{{.*}}, %[[SAFE]]
// CHECK:   math.exp2 %[[DIFF]]
// CHECK: %[[P:.*]] = linalg.generic {{.*}} ins(%[[S]], %[[RESCALE]]#0 : tensor<32x16xf32>, tensor<32xf32>)
// CHECK:   math.exp2
// CHECK: %[[LSCALED:.*]] = linalg.generic {{.*}} ins(%[[RESCALE]]#1, %arg5 : tensor<32xf32>, tensor<32xf32>)
// CHECK: %[[L:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[P]] : tensor<32x16xf32>) outs(%[[LSCALED]] : tensor<32xf32>)
// CHECK:   arith.addf
// CHECK: %[[ASCALED:.*]] = linalg.generic {{.*}} ins(%[[RESCALE]]#1, %arg3 : tensor<32xf32>, tensor<32x32xf32>)
// CHECK: %[[A:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[P]], %arg2 : tensor<32x16xf32>, tensor<16x32xbf16>) outs(%[[ASCALED]] : tensor<32x32xf32>)
// CHECK: return %[[A]], %[[M]], %[[L]]
// CHECK-NOT: fa.
func.func @online_step_masked(%q: tensor<32x64xbf16>, %k: tensor<16x64xbf16>, %v: tensor<16x32xbf16>,
                              %acc: tensor<32x32xf32>, %m: tensor<32xf32>, %l: tensor<32xf32>,
                              %qs: index, %ks: index, %nq: index, %nk: index)
    -> (tensor<32x32xf32>, tensor<32xf32>, tensor<32xf32>) {
  %a, %mm, %ll = fa.online_attention ins(%q, %k, %v : tensor<32x64xbf16>, tensor<16x64xbf16>, tensor<16x32xbf16>)
                                     outs(%acc, %m, %l : tensor<32x32xf32>, tensor<32xf32>, tensor<32xf32>)
                                     tile(%qs, %ks, %nq, %nk) scale = 0.125 causal
  return %a, %mm, %ll : tensor<32x32xf32>, tensor<32xf32>, tensor<32xf32>
}

// -----

// An unmasked tile emits no mask code; softcap goes through tanh with
// log2 e folded into the cap.

// CHECK-LABEL: func @online_step_unmasked_softcap
// CHECK-NOT: linalg.index
// CHECK: math.tanh
// CHECK-NOT: linalg.index
// CHECK: return
func.func @online_step_unmasked_softcap(%q: tensor<16x16xf32>, %acc: tensor<16x16xf32>, %m: tensor<16xf32>,
                                        %l: tensor<16xf32>, %i: index)
    -> (tensor<16x16xf32>, tensor<16xf32>, tensor<16xf32>) {
  %a, %mm, %ll = fa.online_attention ins(%q, %q, %q : tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>)
                                     outs(%acc, %m, %l : tensor<16x16xf32>, tensor<16xf32>, tensor<16xf32>)
                                     tile(%i, %i, %i, %i) scale = 0.25 causal softcap = 10.0 unmasked
  return %a, %mm, %ll : tensor<16x16xf32>, tensor<16xf32>, tensor<16xf32>
}

// -----

// O = acc times each row's 1 / l (0 for an empty row: one division per
// row), cast to the output type; LSE in natural log, -inf for an empty row.

// CHECK-LABEL: func @normalize_tile
// CHECK: %[[INV:.*]] = linalg.generic {{.*}} ins(%arg2 : tensor<32xf32>) outs(%{{.*}} : tensor<32xf32>)
// CHECK:   %[[EMPTY:.*]] = arith.cmpf oeq
// CHECK:   %[[R:.*]] = arith.divf %cst{{.*}}, %in
// CHECK:   arith.select %[[EMPTY]], %{{.*}}, %[[R]]
// CHECK: linalg.generic {{.*}} ins(%[[INV]], %arg0 : tensor<32xf32>, tensor<32x16xf32>) outs(%{{.*}} : tensor<32x16xbf16>)
// CHECK-NOT: arith.divf
// CHECK:   arith.mulf
// CHECK:   arith.truncf %{{.*}} : f32 to bf16
// CHECK: linalg.generic {{.*}} ins(%arg1, %arg2 : tensor<32xf32>, tensor<32xf32>)
// CHECK:   math.log2
// CHECK:   arith.constant 0.693147182 : f32
// CHECK:   arith.constant 0xFF800000 : f32
func.func @normalize_tile(%acc: tensor<32x16xf32>, %m: tensor<32xf32>, %l: tensor<32xf32>)
    -> (tensor<32x16xbf16>, tensor<32xf32>) {
  %o, %lse = fa.normalize %acc, %m, %l : tensor<32x16xf32>, tensor<32xf32>, tensor<32xf32>
      -> tensor<32x16xbf16>, tensor<32xf32>
  return %o, %lse : tensor<32x16xbf16>, tensor<32xf32>
}

// -----

// The backward tile: QKᵀ, P = 2^(s - LSE log2 e) masked to 0, dV += Pᵀ dO,
// dP = dO Vᵀ, dS = P (dP - delta) scale, dQ += dS K, dK += dSᵀ Q.

// CHECK-LABEL: func @grad_tile
// CHECK: %[[QK:.*]] = linalg.generic {{.*}} ins(%arg0, %arg1 : tensor<64x32xf16>, tensor<16x32xf16>) outs(%{{.*}} : tensor<64x16xf32>)
// CHECK: %[[P:.*]] = linalg.generic {{.*}} ins(%[[QK]], %arg4 : tensor<64x16xf32>, tensor<64xf32>)
// CHECK:   math.exp2
// CHECK:   arith.select
// CHECK: %[[DV:.*]] = linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}], iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[P]], %arg3 : tensor<64x16xf32>, tensor<64x8xf16>) outs(%arg8 : tensor<16x8xf32>)
// CHECK: %[[DP:.*]] = linalg.generic {{.*}} ins(%arg3, %arg2 : tensor<64x8xf16>, tensor<16x8xf16>) outs(%{{.*}} : tensor<64x16xf32>)
// CHECK: %[[DS:.*]] = linalg.generic {{.*}} ins(%[[P]], %[[DP]], %arg5 : tensor<64x16xf32>, tensor<64x16xf32>, tensor<64xf32>)
// CHECK:   arith.subf
// CHECK: %[[DK:.*]] = linalg.generic {{.*}} ins(%[[DS]], %arg0 : tensor<64x16xf32>, tensor<64x32xf16>) outs(%arg7 : tensor<16x32xf32>)
// CHECK: %[[DQ:.*]] = linalg.generic {{.*}} ins(%[[DS]], %arg1 : tensor<64x16xf32>, tensor<16x32xf16>) outs(%arg6 : tensor<64x32xf32>)
// CHECK: return %[[DQ]], %[[DK]], %[[DV]]
func.func @grad_tile(%q: tensor<64x32xf16>, %k: tensor<16x32xf16>, %v: tensor<16x8xf16>,
                     %do: tensor<64x8xf16>, %lse: tensor<64xf32>, %delta: tensor<64xf32>,
                     %dq: tensor<64x32xf32>, %dk: tensor<16x32xf32>, %dv: tensor<16x8xf32>, %i: index)
    -> (tensor<64x32xf32>, tensor<16x32xf32>, tensor<16x8xf32>) {
  %a, %b, %c = fa.attention_grad_tile
      ins(%q, %k, %v, %do, %lse, %delta : tensor<64x32xf16>, tensor<16x32xf16>, tensor<16x8xf16>, tensor<64x8xf16>, tensor<64xf32>, tensor<64xf32>)
      outs(%dq, %dk, %dv : tensor<64x32xf32>, tensor<16x32xf32>, tensor<16x8xf32>)
      tile(%i, %i, %i, %i) scale = 0.125 window [8, 8]
  return %a, %b, %c : tensor<64x32xf32>, tensor<16x32xf32>, tensor<16x8xf32>
}

// -----

// With softcap the backward chains dS through 1 - tanh^2.

// CHECK-LABEL: func @grad_tile_softcap
// CHECK: %[[REC:.*]]:2 = linalg.generic
// CHECK:   math.tanh
// CHECK:   arith.mulf
// CHECK:   arith.subf
// CHECK: linalg.generic {{.*}} ins(%[[REC]]#0, %{{.*}}, %arg1, %[[REC]]#1 :
func.func @grad_tile_softcap(%q: tensor<16x16xbf16>, %lse: tensor<16xf32>, %acc: tensor<16x16xf32>, %i: index)
    -> tensor<16x16xf32> {
  %a, %b, %c = fa.attention_grad_tile
      ins(%q, %q, %q, %q, %lse, %lse : tensor<16x16xbf16>, tensor<16x16xbf16>, tensor<16x16xbf16>, tensor<16x16xbf16>, tensor<16xf32>, tensor<16xf32>)
      outs(%acc, %acc, %acc : tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>)
      tile(%i, %i, %i, %i) scale = 0.25 softcap = 5.0 unmasked
  return %a : tensor<16x16xf32>
}

// -----

// unscaled_grads: dS keeps neither the scale nor, with softcap, the scale
// in the chain-rule factor 1 - tanh^2 (the caller scales dQ and dK once).

// CHECK-LABEL: func @grad_tile_unscaled
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}}, %arg1 : tensor<16x16xf32>, tensor<16x16xf32>, tensor<16xf32>)
// CHECK-NEXT: ^bb0(%[[PE:.*]]: f32, %[[DPE:.*]]: f32, %[[DE:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:   %[[DIFF:.*]] = arith.subf %[[DPE]], %[[DE]]
// CHECK-NEXT:   %[[DS:.*]] = arith.mulf %[[PE]], %[[DIFF]]
// CHECK-NEXT:   linalg.yield %[[DS]]
// CHECK-LABEL: func @grad_tile_unscaled_softcap
// CHECK: %[[REC:.*]]:2 = linalg.generic
// CHECK:   %[[T:.*]] = math.tanh
// CHECK:   %[[T2:.*]] = arith.mulf %[[T]], %[[T]]
// CHECK:   %[[DT:.*]] = arith.subf %{{.*}}, %[[T2]]
// CHECK:   linalg.yield %{{.*}}, %[[DT]]
func.func @grad_tile_unscaled(%q: tensor<16x16xbf16>, %lse: tensor<16xf32>, %acc: tensor<16x16xf32>, %i: index)
    -> tensor<16x16xf32> {
  %a, %b, %c = fa.attention_grad_tile
      ins(%q, %q, %q, %q, %lse, %lse : tensor<16x16xbf16>, tensor<16x16xbf16>, tensor<16x16xbf16>, tensor<16x16xbf16>, tensor<16xf32>, tensor<16xf32>)
      outs(%acc, %acc, %acc : tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>)
      tile(%i, %i, %i, %i) scale = 0.25 unmasked unscaled_grads
  return %a : tensor<16x16xf32>
}
func.func @grad_tile_unscaled_softcap(%q: tensor<16x16xbf16>, %lse: tensor<16xf32>, %acc: tensor<16x16xf32>, %i: index)
    -> tensor<16x16xf32> {
  %a, %b, %c = fa.attention_grad_tile
      ins(%q, %q, %q, %q, %lse, %lse : tensor<16x16xbf16>, tensor<16x16xbf16>, tensor<16x16xbf16>, tensor<16x16xbf16>, tensor<16xf32>, tensor<16xf32>)
      outs(%acc, %acc, %acc : tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>)
      tile(%i, %i, %i, %i) scale = 0.25 softcap = 5.0 unmasked unscaled_grads
  return %a : tensor<16x16xf32>
}

// -----

// FP8 (e4m3) tiles: the descales multiply the score factor once per tile,
// outside the element bodies (scale * log2 e * dq * dk), so that each score
// still meets one multiply; descales must be positive: a factor that is not
// becomes NaN (so that GPU kernels may scale the raw row max, as with a
// constant scale); the operands are extended to f32 in the contractions;
// v's descale is normalize's numerator.

// CHECK-LABEL: func @online_step_fp8
// CHECK-SAME: %[[DQ:[a-z0-9]+]]: f32, %[[DK:[a-z0-9]+]]: f32, %[[DV:[a-z0-9]+]]: f32
// CHECK: %[[QK:.*]] = linalg.generic {{.*}} ins(%arg0, %arg1 : tensor<32x64xf8E4M3FN>, tensor<16x64xf8E4M3FN>)
// CHECK:   arith.extf %{{.*}} : f8E4M3FN to f32
// CHECK: %[[C:.*]] = arith.constant 0.180336878 : f32
// CHECK: %[[F1:.*]] = arith.mulf %[[C]], %[[DQ]] : f32
// CHECK: %[[F2:.*]] = arith.mulf %[[F1]], %[[DK]] : f32
// CHECK: %[[POS:.*]] = arith.cmpf ogt, %[[F2]], %{{.*}} : f32
// CHECK: %[[NAN:.*]] = arith.constant 0x7FC00000 : f32
// CHECK: %[[F:.*]] = arith.select %[[POS]], %[[F2]], %[[NAN]] : f32
// CHECK: linalg.generic {{.*}} ins(%[[QK]] : tensor<32x16xf32>)
// CHECK-NEXT: ^bb0(%[[RAW:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:   %[[SCALED:.*]] = arith.mulf %[[RAW]], %[[F]] : f32
// CHECK-NEXT:   linalg.yield %[[SCALED]]
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %arg2 : tensor<32x16xf32>, tensor<16x32xf8E4M3FN>)
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : tensor<32xf32>)
// CHECK:   arith.divf %[[DV]], %{{.*}} : f32
func.func @online_step_fp8(%q: tensor<32x64xf8E4M3FN>, %k: tensor<16x64xf8E4M3FN>, %v: tensor<16x32xf8E4M3FN>,
                           %acc: tensor<32x32xf32>, %m: tensor<32xf32>, %l: tensor<32xf32>,
                           %dq: f32, %dk: f32, %dv: f32, %i: index)
    -> (tensor<32x32xbf16>, tensor<32xf32>) {
  %a, %mm, %ll = fa.online_attention ins(%q, %k, %v : tensor<32x64xf8E4M3FN>, tensor<16x64xf8E4M3FN>, tensor<16x32xf8E4M3FN>)
                                     outs(%acc, %m, %l : tensor<32x32xf32>, tensor<32xf32>, tensor<32xf32>)
                                     descale(%dq, %dk : f32, f32)
                                     tile(%i, %i, %i, %i) scale = 0.125 unmasked
  %o, %lse = fa.normalize %a, %mm, %ll descale(%dv : f32) : tensor<32x32xf32>, tensor<32xf32>, tensor<32xf32> -> tensor<32x32xbf16>, tensor<32xf32>
  return %o, %lse : tensor<32x32xbf16>, tensor<32xf32>
}
