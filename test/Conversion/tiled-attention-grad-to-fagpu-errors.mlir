// RUN: fa-opt %s -split-input-file -fa-tile-attention-grad="block-q=64 block-kv=64" -fa-convert-tiled-attention-grad-to-fagpu -verify-diagnostics
// Refused before any kernel is built (fa-opt used to crash printing the op
// half converted with dq-reduction=bulk at head dim 256):
// RUN: not fa-opt %S/../Tools/Inputs/backward-d256.mlir -fa-tile-attention-grad="block-q=64 block-kv=64" -fa-convert-tiled-attention-grad-to-fagpu="dq-reduction=bulk" 2>&1 | FileCheck %s --check-prefix=BULK
// BULK: backward-d256.mlir:8:19: error: dq-reduction=bulk takes head dims up to 128
// BULK-NOT: Stack dump

// What the WGMMA backward does not take is a located error, not a wrong
// kernel.

func.func @head_dim(%q: tensor<1x1x64x72xbf16>, %lse: tensor<1x1x64xf32>)
    -> tensor<1x1x64x72xbf16> {
  // expected-error @+1 {{cannot lower to the WGMMA backward: head dims must be multiples of 16 up to 256, got 72}}
  %dq, %dk, %dv = fa.attention_grad %q, %q, %q, %q, %q, %lse
      : tensor<1x1x64x72xbf16>, tensor<1x1x64x72xbf16>, tensor<1x1x64x72xbf16>,
        tensor<1x1x64x72xbf16>, tensor<1x1x64x72xbf16>, tensor<1x1x64xf32>
      -> tensor<1x1x64x72xbf16>, tensor<1x1x64x72xbf16>, tensor<1x1x64x72xbf16>
  return %dq : tensor<1x1x64x72xbf16>
}

// -----

func.func @f32(%q: tensor<1x1x64x64xf32>, %lse: tensor<1x1x64xf32>)
    -> tensor<1x1x64x64xf32> {
  // expected-error @+1 {{cannot lower to the WGMMA backward: operands must be f16 or bf16}}
  %dq, %dk, %dv = fa.attention_grad %q, %q, %q, %q, %q, %lse
      : tensor<1x1x64x64xf32>, tensor<1x1x64x64xf32>, tensor<1x1x64x64xf32>,
        tensor<1x1x64x64xf32>, tensor<1x1x64x64xf32>, tensor<1x1x64xf32>
      -> tensor<1x1x64x64xf32>, tensor<1x1x64x64xf32>, tensor<1x1x64x64xf32>
  return %dq : tensor<1x1x64x64xf32>
}

// -----

// expected-error @+1 {{fa-convert-tiled-attention-grad-to-fagpu takes one tiled attention backward per function}}
func.func @forward(%q: tensor<1x1x64x64xbf16>) -> tensor<1x1x64x64xbf16> {
  %c = arith.constant 0 : index
  %r = scf.forall (%i) in (1) shared_outs(%o = %q) -> tensor<1x1x64x64xbf16> {
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %q into %o[0, 0, 0, 0] [1, 1, 64, 64] [1, 1, 1, 1] : tensor<1x1x64x64xbf16> into tensor<1x1x64x64xbf16>
    }
  }
  return %r : tensor<1x1x64x64xbf16>
}
