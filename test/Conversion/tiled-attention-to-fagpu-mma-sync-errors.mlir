// RUN: fa-opt %s -split-input-file -fa-convert-to-online-attention -fa-tile-attention="block-q=8 block-kv=64" -fa-convert-tiled-attention-to-fagpu="mma-sync=1" -verify-diagnostics

// The mma.sync forward's limits, by name.

func.func @small_block(%q: tensor<1x1x64x64xbf16>) -> tensor<1x1x64x64xbf16> {
  // expected-error @+1 {{cannot lower to the mma.sync kernel: block-q must be 16 rows per warp times a power of two of warps, at most 16, got 8}}
  %o, %lse = fa.attention %q, %q, %q
      : tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16>
      -> tensor<1x1x64x64xbf16>, tensor<1x1x64xf32>
  return %o : tensor<1x1x64x64xbf16>
}

// -----

func.func @f32(%q: tensor<1x1x64x64xf32>) -> tensor<1x1x64x64xf32> {
  // expected-error @+1 {{cannot lower to the mma.sync kernel: operands must be f16 or bf16}}
  %o, %lse = fa.attention %q, %q, %q
      : tensor<1x1x64x64xf32>, tensor<1x1x64x64xf32>, tensor<1x1x64x64xf32>
      -> tensor<1x1x64x64xf32>, tensor<1x1x64xf32>
  return %o : tensor<1x1x64x64xf32>
}
