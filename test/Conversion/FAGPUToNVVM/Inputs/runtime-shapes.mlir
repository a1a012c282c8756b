// The causal GQA forward with runtime batch and sequence lengths (used by
// runtime-shapes-ptx.test).
func.func @runtime_shapes(%q: tensor<?x4x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>)
    -> (tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v causal
      : tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>
      -> tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>
  return %o, %lse : tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>
}
