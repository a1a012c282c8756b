// RUN: fa-opt %s -fa-tile-attention -verify-diagnostics

// The tiler fuses the normalization into the Q-block loop; an online op whose
// state escapes elsewhere cannot be tiled that way.
func.func @state_escapes(%q: tensor<1x1x64x64xf16>, %acc: tensor<1x1x64x64xf32>, %m: tensor<1x1x64xf32>,
                         %l: tensor<1x1x64xf32>) -> tensor<1x1x64x64xf32> {
  // expected-error @+1 {{fa-tile-attention expects the results of a whole-tensor fa.online_attention to feed one fa.normalize and nothing else}}
  %a, %mm, %ll = fa.online_attention ins(%q, %q, %q : tensor<1x1x64x64xf16>, tensor<1x1x64x64xf16>, tensor<1x1x64x64xf16>)
                                     outs(%acc, %m, %l : tensor<1x1x64x64xf32>, tensor<1x1x64xf32>, tensor<1x1x64xf32>)
                                     scale = 0.125
  return %a : tensor<1x1x64x64xf32>
}
