// RUN: fa-opt %s -split-input-file -canonicalize | FileCheck %s

// A row max or sum of x * c, c > 0, is the row max or sum of x times c:
// one product per row instead of one per element (the softmax scale), and
// the elementwise product is left to its other users (x * c - max becomes
// one FMA).

#acc = #fagpu.wgmma_acc<warps = 4>
#rows = #fagpu.rows<#fagpu.wgmma_acc<warps = 4>>

// CHECK-LABEL: func.func @scale_after_max
// CHECK-SAME: (%[[S:.*]]: tensor<64x64xf32, {{.*}}>)
// CHECK-DAG: %[[C:.*]] = arith.constant dense<1.250000e-01> : tensor<64x64xf32
// CHECK-DAG: %[[R:.*]] = arith.constant dense<1.250000e-01> : tensor<64xf32
// CHECK: %[[X:.*]] = arith.mulf %[[S]], %[[C]]
// CHECK: %[[M:.*]] = fagpu.reduce_rows max %[[S]]
// CHECK: %[[MS:.*]] = arith.mulf %[[M]], %[[R]]
// CHECK: %[[SUM:.*]] = fagpu.reduce_rows sum %[[S]]
// CHECK: arith.mulf %[[SUM]], %[[R]]
func.func @scale_after_max(%s: tensor<64x64xf32, #acc>)
    -> (tensor<64x64xf32, #acc>, tensor<64xf32, #rows>, tensor<64xf32, #rows>) {
  %c = arith.constant dense<0.125> : tensor<64x64xf32, #acc>
  %x = arith.mulf %s, %c : tensor<64x64xf32, #acc>
  %m = fagpu.reduce_rows max %x : tensor<64x64xf32, #acc> -> tensor<64xf32, #rows>
  %y = arith.mulf %c, %s : tensor<64x64xf32, #acc>
  %sum = fagpu.reduce_rows sum %y : tensor<64x64xf32, #acc> -> tensor<64xf32, #rows>
  return %x, %m, %sum : tensor<64x64xf32, #acc>, tensor<64xf32, #rows>, tensor<64xf32, #rows>
}

// -----

#acc = #fagpu.wgmma_acc<warps = 4>
#rows = #fagpu.rows<#fagpu.wgmma_acc<warps = 4>>

// A negative or zero scale does not commute with max: left alone.
// CHECK-LABEL: func.func @negative_scale_stays
// CHECK: %[[X:.*]] = arith.mulf
// CHECK: fagpu.reduce_rows max %[[X]]
// CHECK: %[[Z:.*]] = arith.mulf
// CHECK: fagpu.reduce_rows max %[[Z]]
func.func @negative_scale_stays(%s: tensor<64x64xf32, #acc>)
    -> (tensor<64xf32, #rows>, tensor<64xf32, #rows>) {
  %c = arith.constant dense<-0.125> : tensor<64x64xf32, #acc>
  %x = arith.mulf %s, %c : tensor<64x64xf32, #acc>
  %m = fagpu.reduce_rows max %x : tensor<64x64xf32, #acc> -> tensor<64xf32, #rows>
  %zero = arith.constant dense<0.0> : tensor<64x64xf32, #acc>
  %z = arith.mulf %s, %zero : tensor<64x64xf32, #acc>
  %n = fagpu.reduce_rows max %z : tensor<64x64xf32, #acc> -> tensor<64xf32, #rows>
  return %m, %n : tensor<64xf32, #rows>, tensor<64xf32, #rows>
}
