// RUN: not fa-opt %s -pass-pipeline='builtin.module(fa-convert-to-online-attention, fa-tile-attention{block-q=128 block-kv=256}, fa-convert-tiled-attention-to-fagpu)' 2>&1 | FileCheck %s

// Tiles over the shared memory a block can have are refused once the
// kernel is built, by location: a diagnostic on the op printed the
// half-converted function, and fa-opt crashed doing so.

// CHECK: shared-overflow.mlir:[[@LINE+4]]:14: error: cannot lower to the WGMMA kernel: its tiles need 327680 bytes of shared memory, over the 232448
// CHECK-NOT: Stack dump
func.func @f(%q: tensor<1x2x1024x256xbf16>, %k: tensor<1x2x1024x256xbf16>,
             %v: tensor<1x2x1024x256xbf16>) -> (tensor<1x2x1024x256xbf16>, tensor<1x2x1024xf32>) {
  %o, %lse = fa.attention %q, %k, %v
      : tensor<1x2x1024x256xbf16>, tensor<1x2x1024x256xbf16>, tensor<1x2x1024x256xbf16>
      -> tensor<1x2x1024x256xbf16>, tensor<1x2x1024xf32>
  return %o, %lse : tensor<1x2x1024x256xbf16>, tensor<1x2x1024xf32>
}
