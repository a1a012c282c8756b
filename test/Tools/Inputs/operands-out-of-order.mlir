func.func @fwd(%k: tensor<1x2x256x64xbf16>, %q: tensor<1x2x128x64xbf16>, %v: tensor<1x2x256x64xbf16>) -> (tensor<1x2x128x64xbf16>, tensor<1x2x128xf32>) {
  %o, %lse = fa.attention %q, %k, %v : tensor<1x2x128x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16> -> tensor<1x2x128x64xbf16>, tensor<1x2x128xf32>
  return %o, %lse : tensor<1x2x128x64xbf16>, tensor<1x2x128xf32>
}
