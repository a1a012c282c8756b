// RUN: fa-opt %s -split-input-file -fa-convert-to-online-attention -fa-tile-attention="block-q=64 block-kv=64" -verify-diagnostics

// Batch and sequence lengths may be dynamic; head counts and head dims shape
// the tiles and must be static.

func.func @dynamic_head_dim(%q: tensor<1x4x128x?xbf16>, %k: tensor<1x4x128x?xbf16>,
                            %v: tensor<1x4x128x64xbf16>)
    -> (tensor<1x4x128x64xbf16>, tensor<1x4x128xf32>) {
  // expected-error @+1 {{fa-tile-attention needs static head counts and head dims, got 'tensor<1x4x128x?xbf16>'}}
  %o, %lse = fa.attention %q, %k, %v scale = 0.125
      : tensor<1x4x128x?xbf16>, tensor<1x4x128x?xbf16>, tensor<1x4x128x64xbf16>
      -> tensor<1x4x128x64xbf16>, tensor<1x4x128xf32>
  return %o, %lse : tensor<1x4x128x64xbf16>, tensor<1x4x128xf32>
}

// -----

func.func @dynamic_heads(%q: tensor<1x?x128x64xbf16>, %k: tensor<1x?x128x64xbf16>,
                         %v: tensor<1x?x128x64xbf16>)
    -> (tensor<1x?x128x64xbf16>, tensor<1x?x128xf32>) {
  // expected-error @+1 {{fa-tile-attention needs static head counts and head dims, got 'tensor<1x?x128x64xbf16>'}}
  %o, %lse = fa.attention %q, %k, %v
      : tensor<1x?x128x64xbf16>, tensor<1x?x128x64xbf16>, tensor<1x?x128x64xbf16>
      -> tensor<1x?x128x64xbf16>, tensor<1x?x128xf32>
  return %o, %lse : tensor<1x?x128x64xbf16>, tensor<1x?x128xf32>
}
