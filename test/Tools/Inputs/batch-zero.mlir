// Batch 0: nothing to launch (grid z = 0), which the runtime refuses.
func.func @f(%q: tensor<0x1x128x64xbf16>, %k: tensor<0x1x128x64xbf16>,
             %v: tensor<0x1x128x64xbf16>)
    -> (tensor<0x1x128x64xbf16>, tensor<0x1x128xf32>) {
  %o, %lse = fa.attention %q, %k, %v
      : tensor<0x1x128x64xbf16>, tensor<0x1x128x64xbf16>,
        tensor<0x1x128x64xbf16>
      -> tensor<0x1x128x64xbf16>, tensor<0x1x128xf32>
  return %o, %lse : tensor<0x1x128x64xbf16>, tensor<0x1x128xf32>
}
