// RUN: fa-opt %s -fa-convert-to-online-attention -fa-tile-attention="block-q=128 block-kv=256" -fa-convert-tiled-attention-to-fagpu -verify-diagnostics

// Tiles that do not fit a block's shared memory are an error, not a kernel
// that cannot launch.

func.func @too_big(%q: tensor<1x1x512x256xbf16>, %k: tensor<1x1x512x256xbf16>,
                   %v: tensor<1x1x512x256xbf16>)
    -> (tensor<1x1x512x256xbf16>, tensor<1x1x512xf32>) {
  // expected-error @+1 {{cannot lower to the WGMMA kernel: its tiles need 327680 bytes of shared memory, over the 232448 a block can have (smaller block-q or block-kv)}}
  %o, %lse = fa.attention %q, %k, %v
      : tensor<1x1x512x256xbf16>, tensor<1x1x512x256xbf16>, tensor<1x1x512x256xbf16>
      -> tensor<1x1x512x256xbf16>, tensor<1x1x512xf32>
  return %o, %lse : tensor<1x1x512x256xbf16>, tensor<1x1x512xf32>
}
