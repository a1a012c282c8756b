// RUN: fa-opt %s -split-input-file -fa-convert-to-online-attention -fa-tile-attention="block-q=8 block-kv=64" -fa-convert-tiled-attention-to-gpu -verify-diagnostics

func.func @small_block(%q: tensor<1x1x64x64xbf16>) -> tensor<1x1x64x64xbf16> {
  // expected-error @+1 {{cannot lower to the mma.sync kernel: block-q must be 16 rows per warp times a power of two of warps, at most 16, got 8}}
  %o, %lse = fa.attention %q, %q, %q
      : tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16>
      -> tensor<1x1x64x64xbf16>, tensor<1x1x64xf32>
  return %o : tensor<1x1x64x64xbf16>
}

// -----

func.func @f32(%q: tensor<1x1x64x64xf32>) -> tensor<1x1x64x64xf32> {
  // expected-error @+1 {{cannot lower to the mma.sync kernel: the mma.sync kernel takes f16 or bf16 operands}}
  %o, %lse = fa.attention %q, %q, %q
      : tensor<1x1x64x64xf32>, tensor<1x1x64x64xf32>, tensor<1x1x64x64xf32>
      -> tensor<1x1x64x64xf32>, tensor<1x1x64xf32>
  return %o : tensor<1x1x64x64xf32>
}

// -----

// Runtime shapes: the mma.sync kernels are built for one shape.

func.func @runtime_shapes(%q: tensor<?x4x?x64xbf16>, %k: tensor<?x4x?x64xbf16>,
                          %v: tensor<?x4x?x64xbf16>)
    -> (tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>) {
  // expected-error @+1 {{cannot lower to the mma.sync kernel: its kernels are built for one shape; runtime batch and sequence lengths are lowered to the WGMMA kernels (sm_90a) and the CPU}}
  %o, %lse = fa.attention %q, %k, %v
      : tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>
      -> tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>
  return %o, %lse : tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>
}
