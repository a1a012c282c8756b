// A backward with head dim 256: its default blocks (32 x 128) come from the
// op and its head dim, whatever the command line says.
func.func @g(%q: tensor<1x1x64x256xbf16>, %k: tensor<1x1x64x256xbf16>,
             %v: tensor<1x1x64x256xbf16>, %o: tensor<1x1x64x256xbf16>,
             %do: tensor<1x1x64x256xbf16>, %lse: tensor<1x1x64xf32>)
    -> (tensor<1x1x64x256xbf16>, tensor<1x1x64x256xbf16>,
        tensor<1x1x64x256xbf16>) {
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse
      : tensor<1x1x64x256xbf16>, tensor<1x1x64x256xbf16>,
        tensor<1x1x64x256xbf16>, tensor<1x1x64x256xbf16>,
        tensor<1x1x64x256xbf16>, tensor<1x1x64xf32>
      -> tensor<1x1x64x256xbf16>, tensor<1x1x64x256xbf16>,
         tensor<1x1x64x256xbf16>
  return %dq, %dk, %dv : tensor<1x1x64x256xbf16>, tensor<1x1x64x256xbf16>,
                         tensor<1x1x64x256xbf16>
}
