func.func @fwd(%x: tensor<1x2x256x64xbf16>) -> (tensor<1x2x256x64xbf16>, tensor<1x2x256xf32>) {
  %o, %lse = fa.attention %x, %x, %x : tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16> -> tensor<1x2x256x64xbf16>, tensor<1x2x256xf32>
  return %o, %lse : tensor<1x2x256x64xbf16>, tensor<1x2x256xf32>
}
