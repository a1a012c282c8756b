// RUN: fa-opt %s -fa-convert-to-online-attention -fa-tile-attention="block-q=128 block-kv=176" -fa-convert-tiled-attention-to-fagpu | FileCheck %s

// A 176-key block (11 x 16: not a power of two) carries over as it is: the
// K and V tiles have 176 rows, S and P are 128 x 176 register tiles whose
// layouts take one register repeat (11 steps of 16 columns), and the row
// statistics keep the 128-row slice. 1000 keys: five full blocks, then a
// masked one of 120.

// CHECK-LABEL: gpu.func @wide
// CHECK-SAME: fa.block_kv = 176
// CHECK-DAG: !fagpu.smem<176x128xbf16, swizzle = 128>
// CHECK-DAG: fagpu.mma {{.*}} -> tensor<128x176xf32, #fagpu.wgmma_acc<warps = 8>>
// CHECK-DAG: tensor<128x176xbf16, #fagpu.wgmma_a<warps = 8>>
// CHECK-DAG: fagpu.reduce_rows {{.*}} : tensor<128x176xf32, #fagpu.wgmma_acc<warps = 8>> -> tensor<128xf32, #fagpu.rows<#fagpu.wgmma_acc<warps = 8>>>
// CHECK-DAG: fagpu.mma {{.*}} -> tensor<128x128xf32, #fagpu.wgmma_acc<warps = 8>>
func.func @wide(%q: tensor<1x2x1000x128xbf16>, %k: tensor<1x2x1000x128xbf16>,
                %v: tensor<1x2x1000x128xbf16>)
    -> (tensor<1x2x1000x128xbf16>, tensor<1x2x1000xf32>) {
  %o, %lse = fa.attention %q, %k, %v
      : tensor<1x2x1000x128xbf16>, tensor<1x2x1000x128xbf16>, tensor<1x2x1000x128xbf16>
      -> tensor<1x2x1000x128xbf16>, tensor<1x2x1000xf32>
  return %o, %lse : tensor<1x2x1000x128xbf16>, tensor<1x2x1000xf32>
}
