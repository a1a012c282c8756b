// RUN: fa-opt %s -fa-tile-attention-grad="block-q=64 block-kv=128" -fa-convert-tiled-attention-grad-to-fagpu -canonicalize -cse | FileCheck %s

// 128 keys a block: two warpgroups split dK and dV's rows and the columns of
// S, dP and dQ (64 query rows each); dS goes to shared memory once and feeds
// both dK (transposed) and dQ; P and dS take two buffers.

// CHECK-LABEL: gpu.func @grad_two_warpgroups(
// CHECK-SAME: fa.block = array<i64: 256, 1, 1>
// CHECK-SAME: fa.grid = array<i64: 2, 1, 1>
// CHECK: %[[KS:.*]] = fagpu.alloc_shared : !fagpu.smem<128x64xbf16, swizzle = 128>
// CHECK: %[[PS:.*]] = fagpu.alloc_shared : !fagpu.smem<64x128xbf16, swizzle = 128>
// CHECK: %[[DSS:.*]] = fagpu.alloc_shared : !fagpu.smem<64x128xbf16, swizzle = 128>
// CHECK: scf.for {{.*}} -> (tensor<128x64xf32, #fagpu.wgmma_acc<warps = 8>>, tensor<128x64xf32, #fagpu.wgmma_acc<warps = 8>>)
// CHECK:   fagpu.load_tile {{.*}} -> tensor<64xf32, #fagpu.rows<#fagpu.wgmma_acc_cols<warps = 8>>>
// CHECK:   fagpu.mma %{{.*}}, %[[KS]], %{{.*}} transpose_b : {{.*}} tensor<64x128xf32, #fagpu.wgmma_acc_cols<warps = 8>>
// CHECK:   fagpu.store_to_shared %{{.*}}, %[[PS]]
// CHECK:   fagpu.store_to_shared %{{.*}}, %[[DSS]]
// CHECK-NOT: fagpu.store_to_shared
// CHECK:   fagpu.mma %[[DSS]], %{{.*}}, %{{.*}} transpose_a : {{.*}} tensor<128x64xf32, #fagpu.wgmma_acc<warps = 8>>
// CHECK:   fagpu.mma %[[DSS]], %[[KS]], %{{.*}} : {{.*}} tensor<64x64xf32, #fagpu.wgmma_acc_cols<warps = 8>>
func.func @grad_two_warpgroups(%q: tensor<1x1x256x64xbf16>, %lse: tensor<1x1x256xf32>)
    -> (tensor<1x1x256x64xbf16>, tensor<1x1x256x64xbf16>) {
  %dq, %dk, %dv = fa.attention_grad %q, %q, %q, %q, %q, %lse
      : tensor<1x1x256x64xbf16>, tensor<1x1x256x64xbf16>, tensor<1x1x256x64xbf16>,
        tensor<1x1x256x64xbf16>, tensor<1x1x256x64xbf16>, tensor<1x1x256xf32>
      -> tensor<1x1x256x64xbf16>, tensor<1x1x256x64xbf16>, tensor<1x1x256x64xbf16>
  return %dq, %dk : tensor<1x1x256x64xbf16>, tensor<1x1x256x64xbf16>
}
