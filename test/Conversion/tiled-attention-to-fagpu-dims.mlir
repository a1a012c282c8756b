// RUN: fa-opt %s -split-input-file -fa-convert-to-online-attention -fa-tile-attention="block-q=64 block-kv=64" -fa-tile-attention-grad -fa-convert-tiled-attention-to-fagpu -verify-diagnostics

// Head dims must fill 32-byte swizzle atoms (multiples of 16 16-bit
// elements); the backward stays on the mma.sync path.

func.func @head_dim(%q: tensor<1x1x64x72xbf16>, %k: tensor<1x1x64x72xbf16>,
                    %v: tensor<1x1x64x72xbf16>)
    -> (tensor<1x1x64x72xbf16>, tensor<1x1x64xf32>) {
  // expected-error @+1 {{cannot lower to the WGMMA kernel: head dims must be multiples of 16 up to 256 (32-byte swizzle atoms), got 72}}
  %o, %lse = fa.attention %q, %k, %v
      : tensor<1x1x64x72xbf16>, tensor<1x1x64x72xbf16>, tensor<1x1x64x72xbf16>
      -> tensor<1x1x64x72xbf16>, tensor<1x1x64xf32>
  return %o, %lse : tensor<1x1x64x72xbf16>, tensor<1x1x64xf32>
}

// -----

// expected-error @+1 {{fa-convert-tiled-attention-to-fagpu takes one tiled attention forward per function (fa-tile-attention); the backward is on the mma.sync path}}
func.func @backward(%q: tensor<1x1x64x64xbf16>, %k: tensor<1x1x64x64xbf16>,
                    %v: tensor<1x1x64x64xbf16>, %o: tensor<1x1x64x64xbf16>,
                    %do: tensor<1x1x64x64xbf16>, %lse: tensor<1x1x64xf32>)
    -> (tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16>) {
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse
      : tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16>,
        tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16>, tensor<1x1x64xf32>
      -> tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16>
  return %dq, %dk, %dv : tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16>
}
