// N = 2^40 keys and queries: more than 2^31-1 elements per tensor.
func.func @f(%q: tensor<1x1x1099511627776x64xbf16>,
             %k: tensor<1x1x1099511627776x64xbf16>,
             %v: tensor<1x1x1099511627776x64xbf16>)
    -> (tensor<1x1x1099511627776x64xbf16>, tensor<1x1x1099511627776xf32>) {
  %o, %lse = fa.attention %q, %k, %v
      : tensor<1x1x1099511627776x64xbf16>, tensor<1x1x1099511627776x64xbf16>,
        tensor<1x1x1099511627776x64xbf16>
      -> tensor<1x1x1099511627776x64xbf16>, tensor<1x1x1099511627776xf32>
  return %o, %lse : tensor<1x1x1099511627776x64xbf16>,
                    tensor<1x1x1099511627776xf32>
}
