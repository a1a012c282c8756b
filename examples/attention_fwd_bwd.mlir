// A causal, GQA (4 query heads per KV head) attention forward and backward in
// bf16, as a framework would hand it to FlashMLIR.
func.func @forward(%q: tensor<1x8x256x64xbf16>, %k: tensor<1x2x256x64xbf16>,
                   %v: tensor<1x2x256x64xbf16>)
    -> (tensor<1x8x256x64xbf16>, tensor<1x8x256xf32>) {
  %o, %lse = fa.attention %q, %k, %v causal
      : tensor<1x8x256x64xbf16>, tensor<1x2x256x64xbf16>,
        tensor<1x2x256x64xbf16>
      -> tensor<1x8x256x64xbf16>, tensor<1x8x256xf32>
  return %o, %lse : tensor<1x8x256x64xbf16>, tensor<1x8x256xf32>
}

func.func @backward(%q: tensor<1x8x256x64xbf16>, %k: tensor<1x2x256x64xbf16>,
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
