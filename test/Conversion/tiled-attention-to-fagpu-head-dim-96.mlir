// RUN: fa-opt %s -fa-convert-to-online-attention -fa-tile-attention="block-q=128 block-kv=128" -fa-convert-tiled-attention-to-fagpu | FileCheck %s
// RUN: fa-opt %s -fa-convert-to-online-attention -fa-tile-attention="block-q=128 block-kv=128" -fa-convert-tiled-attention-to-fagpu -fagpu-warp-specialize | FileCheck %s --check-prefix=TMA

// Head dim 96: a row of Q, K or V is 192 bytes, which 128-byte swizzle
// atoms do not divide. The operand tiles take the widest swizzle that does
// (64 bytes: three atoms of 32 columns a row), the products read them as
// they are (Q Kᵀ K-major, P·V's V N-major), and the tensor maps' boxes are
// one atom wide (32 columns), so that TMA writes the same swizzle.

// CHECK-LABEL: gpu.func @d96
// CHECK-NOT: swizzle = 128
// CHECK-DAG: fagpu.mma {{.*}} transpose_b : !fagpu.smem<128x96xbf16, swizzle = 64>, !fagpu.smem<128x96xbf16, swizzle = 64>, tensor<128x128xf32, #fagpu.wgmma_acc<warps = 8>>
// CHECK-DAG: fagpu.mma {{.*}} : tensor<128x128xbf16, #fagpu.wgmma_a<warps = 8>>, !fagpu.smem<128x96xbf16, swizzle = 64>, tensor<128x96xf32, #fagpu.wgmma_acc<warps = 8>>

// TMA-LABEL: gpu.func @d96
// TMA-SAME: !fagpu.tensor_map<memref<1x2x1000x96xbf16>, box = [128, 32]> {fagpu.tensor_map_of = 0 : i64}
// TMA-SAME: !fagpu.tensor_map<memref<1x2x1000x96xbf16>, box = [128, 32]> {fagpu.tensor_map_of = 1 : i64}
// TMA-SAME: !fagpu.tensor_map<memref<1x2x1000x96xbf16>, box = [128, 32]> {fagpu.tensor_map_of = 2 : i64}
// TMA: fagpu.tma_load {{.*}} : !fagpu.tensor_map<memref<1x2x1000x96xbf16>, box = [128, 32]>, !fagpu.smem<128x96xbf16, swizzle = 64>
func.func @d96(%q: tensor<1x2x1000x96xbf16>, %k: tensor<1x2x1000x96xbf16>,
               %v: tensor<1x2x1000x96xbf16>)
    -> (tensor<1x2x1000x96xbf16>, tensor<1x2x1000xf32>) {
  %o, %lse = fa.attention %q, %k, %v
      : tensor<1x2x1000x96xbf16>, tensor<1x2x1000x96xbf16>, tensor<1x2x1000x96xbf16>
      -> tensor<1x2x1000x96xbf16>, tensor<1x2x1000xf32>
  return %o, %lse : tensor<1x2x1000x96xbf16>, tensor<1x2x1000xf32>
}
