// RUN: fa-opt %s -split-input-file -fa-tile-attention-grad="block-q=64 block-kv=64" -canonicalize -cse | FileCheck %s
// RUN: fa-opt %s -split-input-file -fa-tile-attention-grad="block-q=64 block-kv=64 scale-grads-once" -canonicalize -cse | FileCheck %s --check-prefix=ONCE

// delta = rowsum(dO * O) first; then one parallel iteration per (batch, KV
// head) walks the KV blocks, keeps f32 dK/dV tile accumulators over the
// query heads of the group (GQA 2:1) and the Q blocks (masked, unmasked,
// masked), and accumulates dQ in f32, cast to f16 at the end.

// scale-grads-once: the tile ops leave the scale (1/sqrt(32)) out of dS;
// dK's cast (not dV's) and dQ's multiply by it.
// ONCE-LABEL: func @grad_gqa_causal
// ONCE: %[[SCALE:.*]] = arith.constant 0.176776{{[0-9]*}} : f32
// ONCE: scf.forall
// ONCE-COUNT-3: fa.attention_grad_tile {{.*}} unscaled_grads
// ONCE: linalg.generic {{.*}} ins(%{{.*}} : tensor<64x32xf32>) outs(%{{.*}} : tensor<64x32xf16>)
// ONCE-NEXT: ^bb0(%[[X:.*]]: f32, %{{.*}}: f16):
// ONCE-NEXT:   %[[Y:.*]] = arith.mulf %[[X]], %[[SCALE]] : f32
// ONCE-NEXT:   arith.truncf %[[Y]] : f32 to f16
// ONCE: linalg.generic {{.*}} ins(%{{.*}} : tensor<64x16xf32>) outs(%{{.*}} : tensor<64x16xf16>)
// ONCE-NEXT: ^bb0(%[[V:.*]]: f32, %{{.*}}: f16):
// ONCE-NEXT:   arith.truncf %[[V]] : f32 to f16
// ONCE: scf.forall.in_parallel
// ONCE: linalg.generic {{.*}} ins(%{{.*}} : tensor<1x4x128x32xf32>) outs(%{{.*}} : tensor<1x4x128x32xf16>)
// ONCE-NEXT: ^bb0(%[[DQ:.*]]: f32, %{{.*}}: f16):
// ONCE-NEXT:   %[[DQS:.*]] = arith.mulf %[[DQ]], %[[SCALE]] : f32
// ONCE-NEXT:   arith.truncf %[[DQS]] : f32 to f16
// CHECK-LABEL: func @grad_gqa_causal
// CHECK: %[[DELTA:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%arg3, %arg4 : tensor<1x4x128x16xf16>, tensor<1x4x128x16xf16>) outs(%{{.*}} : tensor<1x4x128xf32>)
// CHECK:   arith.extf
// CHECK:   arith.mulf
// CHECK:   arith.addf
// CHECK: %[[R:.*]]:3 = scf.forall (%[[KVH:.*]]) in (2) shared_outs(%[[DQ:.*]] = %{{.*}}, %[[DK:.*]] = %{{.*}}, %[[DV:.*]] = %{{.*}}) -> (tensor<1x4x128x32xf32>, tensor<1x2x128x32xf16>, tensor<1x2x128x16xf16>)
// CHECK:   scf.for %[[KB:.*]] = %c0 to %c2
// CHECK:     %[[DKACC:.*]] = linalg.fill {{.*}} -> tensor<64x32xf32>
// CHECK:     %[[DVACC:.*]] = linalg.fill {{.*}} -> tensor<64x16xf32>
// CHECK:     %[[HEADS:.*]]:3 = scf.for %[[G:.*]] = %c0 to %c2 {{.*}} iter_args(%{{.*}} = %{{.*}}, %{{.*}} = %[[DKACC]], %{{.*}} = %[[DVACC]])
// CHECK:       scf.for
// CHECK:         fa.attention_grad_tile ins({{.*}} : tensor<64x32xf16>, tensor<64x32xf16>, tensor<64x16xf16>, tensor<64x16xf16>, tensor<64xf32>, tensor<64xf32>) outs({{.*}} : tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x16xf32>) tile({{.*}}) scale = {{.*}} causal{{$}}
// CHECK:       scf.for
// CHECK:         fa.attention_grad_tile {{.*}} causal unmasked
// CHECK:       scf.for
// CHECK:         fa.attention_grad_tile {{.*}} causal{{$}}
// CHECK:     arith.truncf
// CHECK:     tensor.insert_slice {{.*}} : tensor<?x32xf16> into tensor<1x1x128x32xf16>
// CHECK:     arith.truncf
// CHECK:     tensor.insert_slice {{.*}} : tensor<?x16xf16> into tensor<1x1x128x16xf16>
// CHECK:   scf.forall.in_parallel
// CHECK:     tensor.parallel_insert_slice %{{.*}} into %[[DQ]][0, %{{.*}}, 0, 0] [1, 2, 128, 32]
// CHECK:     tensor.parallel_insert_slice %{{.*}} into %[[DK]][0, %[[KVH]], 0, 0] [1, 1, 128, 32]
// CHECK:     tensor.parallel_insert_slice %{{.*}} into %[[DV]][0, %[[KVH]], 0, 0] [1, 1, 128, 16]
// CHECK: %[[DQH:.*]] = linalg.generic {{.*}} ins(%[[R]]#0 : tensor<1x4x128x32xf32>) outs(%{{.*}} : tensor<1x4x128x32xf16>)
// CHECK:   arith.truncf
// CHECK: return %[[DQH]], %[[R]]#1, %[[R]]#2
func.func @grad_gqa_causal(%q: tensor<1x4x128x32xf16>, %k: tensor<1x2x128x32xf16>, %v: tensor<1x2x128x16xf16>,
                           %o: tensor<1x4x128x16xf16>, %do: tensor<1x4x128x16xf16>, %lse: tensor<1x4x128xf32>)
    -> (tensor<1x4x128x32xf16>, tensor<1x2x128x32xf16>, tensor<1x2x128x16xf16>) {
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse causal
      : tensor<1x4x128x32xf16>, tensor<1x2x128x32xf16>, tensor<1x2x128x16xf16>,
        tensor<1x4x128x16xf16>, tensor<1x4x128x16xf16>, tensor<1x4x128xf32>
      -> tensor<1x4x128x32xf16>, tensor<1x2x128x32xf16>, tensor<1x2x128x16xf16>
  return %dq, %dk, %dv : tensor<1x4x128x32xf16>, tensor<1x2x128x32xf16>, tensor<1x2x128x16xf16>
}

// -----

// f32 needs no casts; without a mask every tile is unmasked.

// CHECK-LABEL: func @grad_f32_nomask
// CHECK-NOT: arith.truncf
// CHECK: fa.attention_grad_tile {{.*}} scale = 2.500000e-01 unmasked
// CHECK-NOT: arith.truncf
func.func @grad_f32_nomask(%q: tensor<1x1x64x16xf32>, %o: tensor<1x1x64x16xf32>, %lse: tensor<1x1x64xf32>)
    -> tensor<1x1x64x16xf32> {
  %dq, %dk, %dv = fa.attention_grad %q, %q, %q, %o, %o, %lse scale = 0.25
      : tensor<1x1x64x16xf32>, tensor<1x1x64x16xf32>, tensor<1x1x64x16xf32>,
        tensor<1x1x64x16xf32>, tensor<1x1x64x16xf32>, tensor<1x1x64xf32>
      -> tensor<1x1x64x16xf32>, tensor<1x1x64x16xf32>, tensor<1x1x64x16xf32>
  return %dk : tensor<1x1x64x16xf32>
}

// -----

// grad_lse: the loss also reads LSE; since dLSE/dS = P, delta becomes
// rowsum(dO * O) - dLSE before the forall, which reads it as before.

// CHECK-LABEL: func @grad_lse
// CHECK-SAME: %[[DLSE:arg6]]: tensor<2x4x100xf32>
// CHECK: %[[ROWSUM:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
// CHECK: %[[DELTA:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[ROWSUM]], %[[DLSE]] : tensor<2x4x100xf32>, tensor<2x4x100xf32>)
// CHECK-NEXT: ^bb0(%[[D:.*]]: f32, %[[G:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:   %[[SUB:.*]] = arith.subf %[[D]], %[[G]] : f32
// CHECK-NEXT:   linalg.yield %[[SUB]]
// CHECK: scf.forall
// CHECK: tensor.extract_slice %[[DELTA]]
func.func @grad_lse(%q: tensor<2x4x100x64xbf16>, %k: tensor<2x4x100x64xbf16>,
                    %v: tensor<2x4x100x64xbf16>, %o: tensor<2x4x100x64xbf16>,
                    %do: tensor<2x4x100x64xbf16>, %lse: tensor<2x4x100xf32>,
                    %dlse: tensor<2x4x100xf32>)
    -> (tensor<2x4x100x64xbf16>, tensor<2x4x100x64xbf16>, tensor<2x4x100x64xbf16>) {
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse
      grad_lse(%dlse : tensor<2x4x100xf32>) causal
      : tensor<2x4x100x64xbf16>, tensor<2x4x100x64xbf16>, tensor<2x4x100x64xbf16>,
        tensor<2x4x100x64xbf16>, tensor<2x4x100x64xbf16>, tensor<2x4x100xf32>
      -> tensor<2x4x100x64xbf16>, tensor<2x4x100x64xbf16>, tensor<2x4x100x64xbf16>
  return %dq, %dk, %dv : tensor<2x4x100x64xbf16>, tensor<2x4x100x64xbf16>, tensor<2x4x100x64xbf16>
}
