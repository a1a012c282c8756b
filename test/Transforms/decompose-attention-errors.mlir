// RUN: fa-opt %s -fa-decompose-attention -verify-diagnostics

// Decomposing whole tensors would materialize Nq x Nk scores; refuse.
func.func @whole(%q: tensor<1x1x64x64xf16>, %acc: tensor<1x1x64x64xf32>, %m: tensor<1x1x64xf32>,
                 %l: tensor<1x1x64xf32>) -> tensor<1x1x64x64xf32> {
  // expected-error @+1 {{fa-decompose-attention works on tiles; run fa-tile-attention first}}
  %a, %mm, %ll = fa.online_attention ins(%q, %q, %q : tensor<1x1x64x64xf16>, tensor<1x1x64x64xf16>, tensor<1x1x64x64xf16>)
                                     outs(%acc, %m, %l : tensor<1x1x64x64xf32>, tensor<1x1x64xf32>, tensor<1x1x64xf32>)
                                     scale = 0.125
  return %a : tensor<1x1x64x64xf32>
}
