// A positive but subnormal scale: the .meta text of it does not read back.
func.func @f(%q: tensor<1x1x128x64xbf16>, %k: tensor<1x1x128x64xbf16>,
             %v: tensor<1x1x128x64xbf16>)
    -> (tensor<1x1x128x64xbf16>, tensor<1x1x128xf32>) {
  %o, %lse = fa.attention %q, %k, %v scale = 4.9406564584124654e-324
      : tensor<1x1x128x64xbf16>, tensor<1x1x128x64xbf16>,
        tensor<1x1x128x64xbf16>
      -> tensor<1x1x128x64xbf16>, tensor<1x1x128xf32>
  return %o, %lse : tensor<1x1x128x64xbf16>, tensor<1x1x128xf32>
}
