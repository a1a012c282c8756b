func.func @windowed(%q: tensor<1x4x4096x128xbf16>, %k: tensor<1x4x4096x128xbf16>, %v: tensor<1x4x4096x128xbf16>) -> (tensor<1x4x4096x128xbf16>, tensor<1x4x4096xf32>) {
  %o, %lse = fa.attention %q, %k, %v window [64, 64] : tensor<1x4x4096x128xbf16>, tensor<1x4x4096x128xbf16>, tensor<1x4x4096x128xbf16> -> tensor<1x4x4096x128xbf16>, tensor<1x4x4096xf32>
  return %o, %lse : tensor<1x4x4096x128xbf16>, tensor<1x4x4096xf32>
}
