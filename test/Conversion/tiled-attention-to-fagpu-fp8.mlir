// RUN: fa-opt %s -split-input-file -fa-convert-to-online-attention -fa-tile-attention="block-q=128 block-kv=128" -fa-convert-tiled-attention-to-fagpu -canonicalize -cse | FileCheck %s
// RUN: fa-opt %s -split-input-file -fa-convert-to-online-attention -fa-tile-attention="block-q=128 block-kv=128" -fa-convert-tiled-attention-to-fagpu="pair-fp8-keys=true" -canonicalize -cse | FileCheck %s --check-prefix=PAIRS
// RUN: not fa-opt %s -fa-convert-to-online-attention -fa-tile-attention="block-q=128 block-kv=48" -fa-convert-tiled-attention-to-fagpu 2>&1 | FileCheck %s --check-prefix=KV48
// RUN: fa-opt %s -split-input-file -fa-convert-to-online-attention -fa-tile-attention="block-q=128 block-kv=64" -fa-convert-tiled-attention-to-fagpu | FileCheck %s --check-prefix=KV64

// KV48: error: cannot lower to the WGMMA kernel: FP8 takes block-kv in multiples of 32 (V's transpose holds the keys in swizzled rows of 32-byte atoms), got 48

// V's transpose has the block's keys as rows: 64 of them (64 bytes) in
// 64-byte swizzle atoms, which P·V reads K-major.
// KV64: fagpu.transpose_shared %{{.*}}, %{{.*}} : !fagpu.smem<64x128xf8E4M3FN, swizzle = 128>, !fagpu.smem<128x64xf8E4M3FN, swizzle = 64>
// KV64: fagpu.mma %{{.*}}, %{{.*}}, %{{.*}} transpose_b : tensor<128x64xf8E4M3FN, #fagpu.wgmma_a8<warps = 8>>, !fagpu.smem<128x64xf8E4M3FN, swizzle = 64>

// FP8: the descales are loads of the kernel's last arguments, once per
// block; QKᵀ reads two e4m3 shared tiles; P is rounded to e4m3 and
// regrouped into the 8-bit A layout; V, whose keys are rows, is transposed
// into a tile of its own, read K-major (transpose_b) as WGMMA's 8-bit
// operands must be.

// With pair-fp8-keys (FlashAttention 3's register permutation) P keeps the
// accumulator's registers as the #fagpu.wgmma_a8_pairs operand (the
// conversion is within each thread) and Vᵀ's keys follow (pair_keys).
// PAIRS-LABEL: gpu.func @fp8
// PAIRS: fagpu.transpose_shared %{{.*}}, %{{.*}} pair_keys
// PAIRS: %[[P8:.*]] = arith.truncf %{{.*}} to tensor<128x128xf8E4M3FN, #fagpu.wgmma_acc<warps = 8>>
// PAIRS: %[[PA:.*]] = fagpu.convert_layout %[[P8]] : {{.*}} -> tensor<128x128xf8E4M3FN, #fagpu.wgmma_a8_pairs<warps = 8>>
// PAIRS: fagpu.mma %[[PA]], %{{.*}}, %{{.*}} transpose_b

// CHECK-LABEL: gpu.func @fp8
// CHECK-SAME: %[[DQ:[a-z0-9]+]]: memref<1x2xf32>, %[[DK:[a-z0-9]+]]: memref<1x2xf32>, %[[DV:[a-z0-9]+]]: memref<1x2xf32>) kernel
// CHECK: fagpu.alloc_shared
// CHECK: fagpu.alloc_shared
// CHECK: %[[VS:.*]] = fagpu.alloc_shared : !fagpu.smem<128x128xf8E4M3FN, swizzle = 128>
// CHECK: %[[VT:.*]] = fagpu.alloc_shared : !fagpu.smem<128x128xf8E4M3FN, swizzle = 128>
// CHECK: memref.load %[[DQ]]
// CHECK: memref.load %[[DK]]
// CHECK: memref.load %[[DV]]
// CHECK: scf.for
// CHECK:   fagpu.mma %{{.*}}, %{{.*}}, %{{.*}} transpose_b : !fagpu.smem<128x128xf8E4M3FN, swizzle = 128>, !fagpu.smem<128x128xf8E4M3FN, swizzle = 128>
// CHECK:   fagpu.transpose_shared %[[VS]], %[[VT]]
// CHECK:   %[[P8:.*]] = arith.truncf %{{.*}} : tensor<128x128xf32, #fagpu.wgmma_acc<warps = 8>> to tensor<128x128xf8E4M3FN, #fagpu.wgmma_acc<warps = 8>>
// CHECK:   %[[PA:.*]] = fagpu.convert_layout %[[P8]] : {{.*}} -> tensor<128x128xf8E4M3FN, #fagpu.wgmma_a8<warps = 8>>
// CHECK:   fagpu.mma %[[PA]], %[[VT]], %{{.*}} transpose_b
func.func @fp8(%q: tensor<1x4x256x128xf8E4M3FN>, %k: tensor<1x2x256x128xf8E4M3FN>,
               %v: tensor<1x2x256x128xf8E4M3FN>, %dq: tensor<1x2xf32>,
               %dk: tensor<1x2xf32>, %dv: tensor<1x2xf32>)
    -> (tensor<1x4x256x128xbf16>, tensor<1x4x256xf32>) {
  %o, %lse = fa.attention %q, %k, %v
      descale(%dq, %dk, %dv : tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>)
      : tensor<1x4x256x128xf8E4M3FN>, tensor<1x2x256x128xf8E4M3FN>, tensor<1x2x256x128xf8E4M3FN>
      -> tensor<1x4x256x128xbf16>, tensor<1x4x256xf32>
  return %o, %lse : tensor<1x4x256x128xbf16>, tensor<1x4x256xf32>
}
