// RUN: fa-opt %s -fa-convert-to-online-attention -fa-tile-attention="block-q=192 block-kv=64" -fa-convert-tiled-attention-to-fagpu -verify-diagnostics

// Three compute warpgroups get 160 registers each; at head dim 256 the O
// accumulator alone is 128 of them (ptxas refuses such a kernel), so the
// conversion says so instead of producing it.
func.func @wide(%q: tensor<1x1x300x256xbf16>) -> tensor<1x1x300x256xbf16> {
  // expected-error @+1 {{cannot lower to the WGMMA kernel: block-q 192 (three warpgroups of 160 registers) takes head dims up to 128, got 256}}
  %o, %lse = fa.attention %q, %q, %q
      : tensor<1x1x300x256xbf16>, tensor<1x1x300x256xbf16>, tensor<1x1x300x256xbf16>
      -> tensor<1x1x300x256xbf16>, tensor<1x1x300xf32>
  return %o : tensor<1x1x300x256xbf16>
}
