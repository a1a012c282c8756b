// RUN: fa-opt %s -split-input-file -fa-convert-to-online-attention -fa-tile-attention="block-q=32 block-kv=64" -fa-convert-tiled-attention-to-fagpu -verify-diagnostics

// What the WGMMA kernel does not take is a located error, not a wrong kernel.

func.func @block_q(%q: tensor<1x1x64x64xbf16>, %k: tensor<1x1x64x64xbf16>,
                   %v: tensor<1x1x64x64xbf16>)
    -> (tensor<1x1x64x64xbf16>, tensor<1x1x64xf32>) {
  // expected-error @+1 {{cannot lower to the WGMMA kernel: block-q must be 64, 128 or 192 (one to three warpgroups), got 32}}
  %o, %lse = fa.attention %q, %k, %v
      : tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16>
      -> tensor<1x1x64x64xbf16>, tensor<1x1x64xf32>
  return %o, %lse : tensor<1x1x64x64xbf16>, tensor<1x1x64xf32>
}
