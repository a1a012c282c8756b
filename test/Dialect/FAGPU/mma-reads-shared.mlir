// RUN: fa-opt %s -cse | FileCheck %s

// fagpu.mma reads its shared tiles: two products of the same tiles with a
// copy into them between are two products (a static KV length of 77 once
// folded its two single-block loops into straight code whose second QKᵀ
// CSE took for the first: wrong scores for the last 13 keys).

#acc = #fagpu.mma_sync_acc<warps = 4>
// CHECK-LABEL: func.func @two_blocks
// CHECK: %[[S0:.*]] = fagpu.mma
// CHECK: fagpu.async_copy_to_shared
// CHECK: fagpu.wait_shared_copies
// CHECK: %[[S1:.*]] = fagpu.mma
// CHECK: return %[[S0]], %[[S1]]
func.func @two_blocks(%q: !fagpu.smem<64x64xbf16, swizzle = 128>, %k: !fagpu.smem<64x64xbf16, swizzle = 128>, %src: memref<77x64xbf16>) -> (tensor<64x64xf32, #acc>, tensor<64x64xf32, #acc>) {
  %c64 = arith.constant 64 : index
  %c77 = arith.constant 77 : index
  %zero = arith.constant dense<0.0> : tensor<64x64xf32, #acc>
  %s0 = fagpu.mma %q, %k, %zero transpose_b : !fagpu.smem<64x64xbf16, swizzle = 128>, !fagpu.smem<64x64xbf16, swizzle = 128>, tensor<64x64xf32, #acc> -> tensor<64x64xf32, #acc>
  fagpu.async_copy_to_shared %src[%c64] limit %c77 into %k : memref<77x64xbf16>, !fagpu.smem<64x64xbf16, swizzle = 128>
  fagpu.commit_shared_copies
  fagpu.wait_shared_copies pending = 0
  %s1 = fagpu.mma %q, %k, %zero transpose_b : !fagpu.smem<64x64xbf16, swizzle = 128>, !fagpu.smem<64x64xbf16, swizzle = 128>, tensor<64x64xf32, #acc> -> tensor<64x64xf32, #acc>
  return %s0, %s1 : tensor<64x64xf32, #acc>, tensor<64x64xf32, #acc>
}
