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

// -----

#acc = #fagpu.wgmma_acc<warps = 4>
#rows = #fagpu.rows<#fagpu.wgmma_acc<warps = 4>>

// FP8's descaled factor, a runtime scalar: positive or NaN by its guard
// (select(c > 0, c, NaN), as the decomposition emits it), times a positive
// constant, it commutes with max as a constant scale does; the row factor
// is a splat of the same scalar.
// CHECK-LABEL: func.func @guarded_runtime_scale
// CHECK-SAME: (%[[S:.*]]: tensor<64x64xf32, {{.*}}>, %[[D:.*]]: f32)
// CHECK: %[[G:.*]] = arith.select
// CHECK: %[[F:.*]] = arith.mulf %[[G]], %{{.*}} : f32
// CHECK-DAG: %[[C:.*]] = tensor.splat %[[F]] : tensor<64x64xf32
// CHECK-DAG: %[[R:.*]] = tensor.splat %[[F]] : tensor<64xf32
// CHECK-DAG: %[[X:.*]] = arith.mulf %[[S]], %[[C]]
// CHECK-DAG: %[[M:.*]] = fagpu.reduce_rows max %[[S]]
// CHECK: arith.mulf %[[M]], %[[R]]
func.func @guarded_runtime_scale(%s: tensor<64x64xf32, #acc>, %d: f32)
    -> (tensor<64x64xf32, #acc>, tensor<64xf32, #rows>) {
  %zero = arith.constant 0.0 : f32
  %nan = arith.constant 0x7FC00000 : f32
  %log2e = arith.constant 1.44269502 : f32
  %positive = arith.cmpf ogt, %d, %zero : f32
  %g = arith.select %positive, %d, %nan : f32
  %f = arith.mulf %g, %log2e : f32
  %c = tensor.splat %f : tensor<64x64xf32, #acc>
  %x = arith.mulf %s, %c : tensor<64x64xf32, #acc>
  %m = fagpu.reduce_rows max %x : tensor<64x64xf32, #acc> -> tensor<64xf32, #rows>
  return %x, %m : tensor<64x64xf32, #acc>, tensor<64xf32, #rows>
}

// -----

#acc = #fagpu.wgmma_acc<warps = 4>
#rows = #fagpu.rows<#fagpu.wgmma_acc<warps = 4>>

// A runtime scale of unknown sign, one whose guard lets zero through
// (c >= 0), and one whose guard tests another value, stay inside the max.
// CHECK-LABEL: func.func @unguarded_runtime_scales_stay
// CHECK-COUNT-3: fagpu.reduce_rows max %{{[0-9]+}}
// CHECK-NOT: fagpu.reduce_rows max %arg0
func.func @unguarded_runtime_scales_stay(%s: tensor<64x64xf32, #acc>, %d: f32, %e: f32)
    -> (tensor<64xf32, #rows>, tensor<64xf32, #rows>, tensor<64xf32, #rows>) {
  %c = tensor.splat %d : tensor<64x64xf32, #acc>
  %x = arith.mulf %s, %c : tensor<64x64xf32, #acc>
  %m = fagpu.reduce_rows max %x : tensor<64x64xf32, #acc> -> tensor<64xf32, #rows>
  %zero = arith.constant 0.0 : f32
  %nan = arith.constant 0x7FC00000 : f32
  %nonNegative = arith.cmpf oge, %d, %zero : f32
  %g = arith.select %nonNegative, %d, %nan : f32
  %cg = tensor.splat %g : tensor<64x64xf32, #acc>
  %y = arith.mulf %s, %cg : tensor<64x64xf32, #acc>
  %n = fagpu.reduce_rows max %y : tensor<64x64xf32, #acc> -> tensor<64xf32, #rows>
  %other = arith.cmpf ogt, %e, %zero : f32
  %h = arith.select %other, %d, %nan : f32
  %ch = tensor.splat %h : tensor<64x64xf32, #acc>
  %z = arith.mulf %s, %ch : tensor<64x64xf32, #acc>
  %o = fagpu.reduce_rows max %z : tensor<64x64xf32, #acc> -> tensor<64xf32, #rows>
  return %m, %n, %o : tensor<64xf32, #rows>, tensor<64xf32, #rows>, tensor<64xf32, #rows>
}
