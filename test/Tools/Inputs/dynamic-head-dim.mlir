// A dynamic head dim (MlirInputFuzzer): with an explicit scale it overflowed
// the default blocks' shared-memory count (UBSan); without one the default
// scale 1/sqrt(head dim) was NaN, reported as a subnormal.
func.func @f(%q: tensor<1x1x128x?xbf16>, %k: tensor<1x1x128x?xbf16>,
             %v: tensor<1x1x128x?xbf16>)
    -> (tensor<1x1x128x?xbf16>, tensor<1x1x128xf32>) {
  %o, %lse = fa.attention %q, %k, %v scale = 0.125
      : tensor<1x1x128x?xbf16>, tensor<1x1x128x?xbf16>,
        tensor<1x1x128x?xbf16>
      -> tensor<1x1x128x?xbf16>, tensor<1x1x128xf32>
  return %o, %lse : tensor<1x1x128x?xbf16>, tensor<1x1x128xf32>
}
