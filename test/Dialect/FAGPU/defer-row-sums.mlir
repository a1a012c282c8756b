// RUN: fa-opt %s -split-input-file -pass-pipeline='builtin.module(gpu.module(fagpu-defer-row-sums))' | FileCheck %s

// Two KV loops (unmasked, then masked) carrying the online softmax's row
// sums l' = alpha l + rowsum(P): the loops carry per-lane parts from zero
// (fagpu.accumulate_rows, no lane exchange), the second loop the first's
// parts, and the lanes' parts are added once, after the second loop.

#acc = #fagpu.mma_sync_acc<warps = 4>
#rows = #fagpu.rows<#fagpu.mma_sync_acc<warps = 4>>
gpu.module @m {
  // CHECK-LABEL: gpu.func @two_loops
  // CHECK: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : tensor<64xf32, #fagpu.rows<#fagpu.mma_sync_acc<warps = 4>, partial = true>>
  // CHECK: %[[FIRST:.*]] = scf.for {{.*}} iter_args(%[[L:.*]] = %[[ZERO]]) -> (tensor<64xf32, #[[PARTS:.*]]>)
  // CHECK-NOT: fagpu.reduce_rows
  // CHECK: %[[NEXT:.*]] = fagpu.accumulate_rows %{{.*}} scaled %{{.*}} into %[[L]] : tensor<64x16xf32, #[[ACC:.*]]>, tensor<64xf32, #[[ROWS:.*]]> -> tensor<64xf32, #[[PARTS]]>
  // CHECK-NEXT: scf.yield %[[NEXT]]
  // CHECK-NOT: fagpu.complete_rows
  // CHECK: %[[SECOND:.*]] = scf.for {{.*}} iter_args(%[[L2:.*]] = %[[FIRST]]) -> (tensor<64xf32, #[[PARTS]]>)
  // CHECK: fagpu.accumulate_rows %{{.*}} scaled %{{.*}} into %[[L2]]
  // CHECK: %[[SUMS:.*]] = fagpu.complete_rows %[[SECOND]] : tensor<64xf32, #[[PARTS]]> -> tensor<64xf32, #[[ROWS]]>
  // CHECK: arith.divf %{{.*}}, %[[SUMS]]
  gpu.func @two_loops(%s: tensor<64x16xf32, #acc>, %alpha: tensor<64xf32, #rows>, %n: index, %out: memref<64xf32>) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %zero = arith.constant dense<0.0> : tensor<64xf32, #rows>
    %one = arith.constant dense<1.0> : tensor<64xf32, #rows>
    %l1 = scf.for %i = %c0 to %n step %c1 iter_args(%l = %zero) -> (tensor<64xf32, #rows>) {
      %p = math.exp2 %s : tensor<64x16xf32, #acc>
      %scaled = arith.mulf %alpha, %l : tensor<64xf32, #rows>
      %sum = fagpu.reduce_rows sum %p : tensor<64x16xf32, #acc> -> tensor<64xf32, #rows>
      %next = arith.addf %scaled, %sum : tensor<64xf32, #rows>
      scf.yield %next : tensor<64xf32, #rows>
    }
    %l2 = scf.for %i = %c0 to %n step %c1 iter_args(%l = %l1) -> (tensor<64xf32, #rows>) {
      %p = math.exp2 %s : tensor<64x16xf32, #acc>
      %sum = fagpu.reduce_rows sum %p : tensor<64x16xf32, #acc> -> tensor<64xf32, #rows>
      %scaled = arith.mulf %l, %alpha : tensor<64xf32, #rows>
      %next = arith.addf %sum, %scaled : tensor<64xf32, #rows>
      scf.yield %next : tensor<64xf32, #rows>
    }
    %inv = arith.divf %one, %l2 : tensor<64xf32, #rows>
    gpu.return
  }
}

// -----

// Left alone: sums that start from a value other than zero or parts, and a
// carried sum that something else in the loop reads.

#acc = #fagpu.mma_sync_acc<warps = 4>
#rows = #fagpu.rows<#fagpu.mma_sync_acc<warps = 4>>
gpu.module @m {
  // CHECK-LABEL: gpu.func @left_alone
  // CHECK-NOT: fagpu.accumulate_rows
  // CHECK-COUNT-2: fagpu.reduce_rows sum
  // CHECK-NOT: fagpu.complete_rows
  gpu.func @left_alone(%s: tensor<64x16xf32, #acc>, %alpha: tensor<64xf32, #rows>, %n: index) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %one = arith.constant dense<1.0> : tensor<64xf32, #rows>
    %zero = arith.constant dense<0.0> : tensor<64xf32, #rows>
    %l1 = scf.for %i = %c0 to %n step %c1 iter_args(%l = %one) -> (tensor<64xf32, #rows>) {
      %p = math.exp2 %s : tensor<64x16xf32, #acc>
      %scaled = arith.mulf %alpha, %l : tensor<64xf32, #rows>
      %sum = fagpu.reduce_rows sum %p : tensor<64x16xf32, #acc> -> tensor<64xf32, #rows>
      %next = arith.addf %scaled, %sum : tensor<64xf32, #rows>
      scf.yield %next : tensor<64xf32, #rows>
    }
    %l2:2 = scf.for %i = %c0 to %n step %c1 iter_args(%l = %zero, %m = %zero) -> (tensor<64xf32, #rows>, tensor<64xf32, #rows>) {
      %p = math.exp2 %s : tensor<64x16xf32, #acc>
      %scaled = arith.mulf %alpha, %l : tensor<64xf32, #rows>
      %sum = fagpu.reduce_rows sum %p : tensor<64x16xf32, #acc> -> tensor<64xf32, #rows>
      %next = arith.addf %scaled, %sum : tensor<64xf32, #rows>
      %seen = arith.maximumf %m, %l : tensor<64xf32, #rows>
      scf.yield %next, %seen : tensor<64xf32, #rows>, tensor<64xf32, #rows>
    }
    gpu.return
  }
}
