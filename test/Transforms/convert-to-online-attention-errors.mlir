// RUN: fa-opt %s -split-input-file -fa-convert-to-online-attention -verify-diagnostics

func.func @fp8(%q: tensor<1x1x64x64xf8E4M3FN>, %d: tensor<1x1xf32>) -> tensor<1x1x64x64xbf16> {
  // expected-error @+1 {{FP8 attention has no online-softmax lowering yet; use bf16 or f16 operands}}
  %o, %lse = fa.attention %q, %q, %q descale(%d, %d, %d : tensor<1x1xf32>, tensor<1x1xf32>, tensor<1x1xf32>)
      : tensor<1x1x64x64xf8E4M3FN>, tensor<1x1x64x64xf8E4M3FN>, tensor<1x1x64x64xf8E4M3FN>
      -> tensor<1x1x64x64xbf16>, tensor<1x1x64xf32>
  return %o : tensor<1x1x64x64xbf16>
}
