// RUN: fa-opt %s -fa-tile-attention-grad -fa-convert-tiled-attention-to-gpu -verify-diagnostics

// expected-error @+1 {{the GPU lowering of the backward is not implemented yet}}
func.func @grad(%q: tensor<1x1x64x64xbf16>, %lse: tensor<1x1x64xf32>) -> tensor<1x1x64x64xbf16> {
  %dq, %dk, %dv = fa.attention_grad %q, %q, %q, %q, %q, %lse
      : tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16>,
        tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16>, tensor<1x1x64xf32>
      -> tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16>
  return %dq : tensor<1x1x64x64xbf16>
}
