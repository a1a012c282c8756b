// RUN: fa-opt %s -split-input-file -fa-convert-to-online-attention -fa-tile-attention="block-q=64 block-kv=64 rescale-threshold=8" | FileCheck %s --check-prefix=TILE
// RUN: fa-opt %s -split-input-file -fa-convert-to-online-attention -fa-tile-attention="block-q=64 block-kv=64" | FileCheck %s --check-prefix=EXACT
// RUN: fa-opt %s -split-input-file -fa-convert-to-online-attention -fa-tile-attention="block-q=64 block-kv=64 rescale-threshold=8" -fa-decompose-attention -cse | FileCheck %s --check-prefix=DECOMP
// RUN: not fa-opt %s -split-input-file -fa-convert-to-online-attention -fa-tile-attention="rescale-threshold=-1" 2>&1 | FileCheck %s --check-prefix=NEG
// RUN: not fa-opt %s -split-input-file -fa-convert-to-online-attention -fa-tile-attention="rescale-threshold=9" 2>&1 | FileCheck %s --check-prefix=FP8

// fa-tile-attention{rescale-threshold} puts the threshold on every tile step
// (masked and unmasked loops alike); without it the steps keep the exact max.

// TILE-LABEL: func @attention
// TILE-COUNT-3: fa.online_attention {{.*}} rescale_threshold = 8.000000e+00
// EXACT-LABEL: func @attention
// EXACT-NOT: rescale_threshold

// The decomposition: m̂ = max(m, rowmax s), then m' = m̂ > m + 8 ? m̂ : m,
// and 2^(m - m') against the kept max.

// DECOMP-LABEL: func @attention
// DECOMP: %[[MHAT:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]}
// DECOMP:   arith.maximumf
// DECOMP: %[[MNEW:.*]] = linalg.generic {{.*}} ins(%[[M:[^,]*]], %[[MHAT]] : tensor<64xf32>, tensor<64xf32>)
// DECOMP-NEXT: ^bb0(%[[OLD:.*]]: f32, %[[CAND:.*]]: f32, %{{.*}}: f32):
// DECOMP-NEXT:   %[[TAU:.*]] = arith.constant 8.000000e+00 : f32
// DECOMP-NEXT:   %[[BOUND:.*]] = arith.addf %[[OLD]], %[[TAU]] : f32
// DECOMP-NEXT:   %[[PASSES:.*]] = arith.cmpf ogt, %[[CAND]], %[[BOUND]] : f32
// DECOMP-NEXT:   %[[KEPT:.*]] = arith.select %[[PASSES]], %[[CAND]], %[[OLD]] : f32
// DECOMP-NEXT:   linalg.yield %[[KEPT]]
// DECOMP: linalg.generic {{.*}} ins(%[[M]], %[[MNEW]] : tensor<64xf32>, tensor<64xf32>)
// DECOMP:   math.exp2
func.func @attention(%q: tensor<1x2x200x64xbf16>, %k: tensor<1x2x200x64xbf16>, %v: tensor<1x2x200x64xbf16>) -> (tensor<1x2x200x64xbf16>, tensor<1x2x200xf32>) {
  %o, %lse = fa.attention %q, %k, %v causal : tensor<1x2x200x64xbf16>, tensor<1x2x200x64xbf16>, tensor<1x2x200x64xbf16> -> tensor<1x2x200x64xbf16>, tensor<1x2x200xf32>
  return %o, %lse : tensor<1x2x200x64xbf16>, tensor<1x2x200xf32>
}

// NEG: error: fa-tile-attention: rescale-threshold must be finite and at least 0, got -1

// -----

// P = 2^(s - m') reaches 2^9 = 512 past e4m3's 448.

// FP8: error: fa-tile-attention: rescale-threshold 9 lets P reach 2^9, past the largest 'f8E4M3FN'
func.func @fp8(%q: tensor<1x1x128x128xf8E4M3FN>, %k: tensor<1x1x128x128xf8E4M3FN>, %v: tensor<1x1x128x128xf8E4M3FN>, %d: tensor<1x1xf32>) -> (tensor<1x1x128x128xbf16>, tensor<1x1x128xf32>) {
  %o, %lse = fa.attention %q, %k, %v descale(%d, %d, %d : tensor<1x1xf32>, tensor<1x1xf32>, tensor<1x1xf32>) : tensor<1x1x128x128xf8E4M3FN>, tensor<1x1x128x128xf8E4M3FN>, tensor<1x1x128x128xf8E4M3FN> -> tensor<1x1x128x128xbf16>, tensor<1x1x128xf32>
  return %o, %lse : tensor<1x1x128x128xbf16>, tensor<1x1x128xf32>
}
