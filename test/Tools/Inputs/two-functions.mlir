// A causal, GQA (4 query heads per KV head) attention forward in bf16, as a
// framework would hand it to FlashMLIR.
func.func @attention_forward(%q: tensor<1x8x256x64xbf16>, %k: tensor<1x2x256x64xbf16>,
                   %v: tensor<1x2x256x64xbf16>)
    -> (tensor<1x8x256x64xbf16>, tensor<1x8x256xf32>) {
  %o, %lse = fa.attention %q, %k, %v causal
      : tensor<1x8x256x64xbf16>, tensor<1x2x256x64xbf16>,
        tensor<1x2x256x64xbf16>
      -> tensor<1x8x256x64xbf16>, tensor<1x8x256xf32>
  return %o, %lse : tensor<1x8x256x64xbf16>, tensor<1x8x256xf32>
}
// A causal, GQA (4 query heads per KV head) attention forward in bf16, as a
// framework would hand it to FlashMLIR.
func.func @second(%q: tensor<1x8x256x64xbf16>, %k: tensor<1x2x256x64xbf16>,
                   %v: tensor<1x2x256x64xbf16>)
    -> (tensor<1x8x256x64xbf16>, tensor<1x8x256xf32>) {
  %o, %lse = fa.attention %q, %k, %v causal
      : tensor<1x8x256x64xbf16>, tensor<1x2x256x64xbf16>,
        tensor<1x2x256x64xbf16>
      -> tensor<1x8x256x64xbf16>, tensor<1x8x256xf32>
  return %o, %lse : tensor<1x8x256x64xbf16>, tensor<1x8x256xf32>
}
