// The backward of examples/attention_forward.mlir: dQ, dK, dV from Q, K, V,
// the forward's O and LSE, and dO.
func.func @attention_backward(%q: tensor<1x8x256x64xbf16>, %k: tensor<1x2x256x64xbf16>,
                    %v: tensor<1x2x256x64xbf16>, %o: tensor<1x8x256x64xbf16>,
                    %do: tensor<1x8x256x64xbf16>, %lse: tensor<1x8x256xf32>)
    -> (tensor<1x8x256x64xbf16>, tensor<1x2x256x64xbf16>,
        tensor<1x2x256x64xbf16>) {
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse causal
      : tensor<1x8x256x64xbf16>, tensor<1x2x256x64xbf16>,
        tensor<1x2x256x64xbf16>, tensor<1x8x256x64xbf16>,
        tensor<1x8x256x64xbf16>, tensor<1x8x256xf32>
      -> tensor<1x8x256x64xbf16>, tensor<1x2x256x64xbf16>,
         tensor<1x2x256x64xbf16>
  return %dq, %dk, %dv : tensor<1x8x256x64xbf16>, tensor<1x2x256x64xbf16>,
                         tensor<1x2x256x64xbf16>
}
