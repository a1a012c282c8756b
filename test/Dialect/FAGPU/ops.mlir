// RUN: fa-opt %s | fa-opt | FileCheck %s
// RUN: fa-opt %s -mlir-print-op-generic | fa-opt | FileCheck %s

// Every layout, the shared tile type and every op of the GPU tile level
// round-trip in custom and generic form.

#acc = #fagpu.wgmma_acc<warps = 4>
#a = #fagpu.wgmma_a<warps = 4>
#rows = #fagpu.rows<#fagpu.wgmma_acc<warps = 4>>

// CHECK-LABEL: func.func @attention_tile
// CHECK: fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
// CHECK: fagpu.copy_to_shared %{{.*}}[%{{.*}}] limit %{{.*}} into %{{.*}} : memref<256x64xbf16>, !fagpu.smem<64x64xbf16, swizzle = 128>
// CHECK: fagpu.mma %{{.*}}, %{{.*}}, %{{.*}} transpose_b : !fagpu.smem<64x64xbf16, swizzle = 128>, !fagpu.smem<128x64xbf16, swizzle = 128>, tensor<64x128xf32, #fagpu.wgmma_acc<warps = 4>> -> tensor<64x128xf32, #fagpu.wgmma_acc<warps = 4>>
// CHECK: fagpu.tile_coords dim = 1 : tensor<64x128xi32, #fagpu.wgmma_acc<warps = 4>>
// CHECK: fagpu.reduce_rows max %{{.*}} : tensor<64x128xf32, #fagpu.wgmma_acc<warps = 4>> -> tensor<64xf32, #fagpu.rows<#fagpu.wgmma_acc<warps = 4>>>
// CHECK: fagpu.expand_rows %{{.*}} : tensor<64xf32, #fagpu.rows<#fagpu.wgmma_acc<warps = 4>>> -> tensor<64x128xf32, #fagpu.wgmma_acc<warps = 4>>
// CHECK: fagpu.reduce_rows sum
// CHECK: fagpu.convert_layout %{{.*}} : tensor<64x128xbf16, #fagpu.wgmma_acc<warps = 4>> -> tensor<64x128xbf16, #fagpu.wgmma_a<warps = 4>>
// CHECK: fagpu.mma %{{.*}}, %{{.*}}, %{{.*}} : tensor<64x128xbf16, #fagpu.wgmma_a<warps = 4>>, !fagpu.smem<128x64xbf16, swizzle = 128>
// CHECK: fagpu.store_tile %{{.*}}, %{{.*}}[%{{.*}}] limit %{{.*}} : tensor<64x64xf32, #fagpu.wgmma_acc<warps = 4>>, memref<256x64xf32>
func.func @attention_tile(%q: memref<256x64xbf16>, %k: memref<128x64xbf16>,
                          %v: memref<128x64xbf16>, %o: memref<256x64xf32>,
                          %row: index, %nq: index, %nk: index) {
  %qs = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
  %ks = fagpu.alloc_shared : !fagpu.smem<128x64xbf16, swizzle = 128>
  %vs = fagpu.alloc_shared : !fagpu.smem<128x64xbf16, swizzle = 128>
  fagpu.copy_to_shared %q[%row] limit %nq into %qs : memref<256x64xbf16>, !fagpu.smem<64x64xbf16, swizzle = 128>
  %zero = arith.constant dense<0.0> : tensor<64x128xf32, #acc>
  %s = fagpu.mma %qs, %ks, %zero transpose_b : !fagpu.smem<64x64xbf16, swizzle = 128>, !fagpu.smem<128x64xbf16, swizzle = 128>, tensor<64x128xf32, #acc> -> tensor<64x128xf32, #acc>
  %cols = fagpu.tile_coords dim = 1 : tensor<64x128xi32, #acc>
  %m = fagpu.reduce_rows max %s : tensor<64x128xf32, #acc> -> tensor<64xf32, #rows>
  %me = fagpu.expand_rows %m : tensor<64xf32, #rows> -> tensor<64x128xf32, #acc>
  %d = arith.subf %s, %me : tensor<64x128xf32, #acc>
  %p = math.exp2 %d : tensor<64x128xf32, #acc>
  %l = fagpu.reduce_rows sum %p : tensor<64x128xf32, #acc> -> tensor<64xf32, #rows>
  %pb = arith.truncf %p : tensor<64x128xf32, #acc> to tensor<64x128xbf16, #acc>
  %pa = fagpu.convert_layout %pb : tensor<64x128xbf16, #acc> -> tensor<64x128xbf16, #a>
  %o0 = arith.constant dense<0.0> : tensor<64x64xf32, #acc>
  %ov = fagpu.mma %pa, %vs, %o0 : tensor<64x128xbf16, #a>, !fagpu.smem<128x64xbf16, swizzle = 128>, tensor<64x64xf32, #acc> -> tensor<64x64xf32, #acc>
  fagpu.store_tile %ov, %o[%row] limit %nq : tensor<64x64xf32, #acc>, memref<256x64xf32>
  return
}

// CHECK-LABEL: func.func @mma_sync_layouts
// CHECK-SAME: tensor<64x64xf32, #fagpu.mma_sync_acc<warps = 4>>
// CHECK-SAME: tensor<64x32xbf16, #fagpu.mma_sync_a<warps = 4>>
// CHECK-SAME: tensor<32x64xbf16, #fagpu.mma_sync_b<warps = 4>>
// CHECK-SAME: !fagpu.smem<32x64xbf16, swizzle = 0>
func.func @mma_sync_layouts(%acc: tensor<64x64xf32, #fagpu.mma_sync_acc<warps = 4>>,
                            %a: tensor<64x32xbf16, #fagpu.mma_sync_a<warps = 4>>,
                            %b: tensor<32x64xbf16, #fagpu.mma_sync_b<warps = 4>>,
                            %s: !fagpu.smem<32x64xbf16, swizzle = 0>) {
  return
}
