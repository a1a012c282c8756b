// RUN: fa-opt %s -split-input-file -pass-pipeline='builtin.module(gpu.module(fagpu-skip-unit-rescales))' | FileCheck %s

// O's rescale in a KV loop (the accumulator times 2^(m - m') broadcast along
// its rows) runs only in warps where some factor is not 1; else the loop
// carries O as it is. P's conversion, which only the next iteration reads,
// moves past the branch (its e4m3 words packed beside their conversions).

#acc = #fagpu.wgmma_acc<warps = 4>
#rows = #fagpu.rows<#fagpu.wgmma_acc<warps = 4>>
gpu.module @m {
  // CHECK-LABEL: gpu.func @rescale_in_loop
  // CHECK: scf.for {{.*}} iter_args(%[[O:.*]] = %{{.*}}, %[[M:.*]] = %{{.*}}, %[[P:.*]] = %{{.*}})
  // CHECK: %[[ALPHA:.*]] = math.exp2 %{{.*}} : tensor<64xf32, #[[ROWS:.*]]>
  // CHECK: %[[EXPANDED:.*]] = fagpu.expand_rows %[[ALPHA]]
  // CHECK-NEXT: %[[ONE:.*]] = arith.constant dense<1.000000e+00> : tensor<64xf32, #[[ROWS]]>
  // CHECK-NEXT: %[[NOT_ONE:.*]] = arith.cmpf une, %[[ALPHA]], %[[ONE]] : tensor<64xf32, #[[ROWS]]>
  // CHECK-NEXT: %[[ANY:.*]] = fagpu.warp_any rarely %[[NOT_ONE]] : tensor<64xi1, #[[ROWS]]>
  // CHECK-NEXT: %[[NEW_O:.*]] = scf.if %[[ANY]] -> (tensor<64x16xf32, #[[ACC:.*]]>) {
  // CHECK-NEXT:   %[[SCALED:.*]] = arith.mulf %[[EXPANDED]], %[[O]] : tensor<64x16xf32, #[[ACC]]>
  // CHECK-NEXT:   scf.yield %[[SCALED]]
  // CHECK-NEXT: } else {
  // CHECK-NEXT:   scf.yield %[[O]]
  // CHECK-NEXT: }
  // CHECK-NEXT: %[[NEW_P:.*]] = arith.truncf %{{.*}} : tensor<64x16xf32, #[[ACC]]> to tensor<64x16xbf16, #[[ACC]]>
  // CHECK-NEXT: scf.yield %[[NEW_O]], %{{.*}}, %[[NEW_P]]
  gpu.func @rescale_in_loop(%s: tensor<64x16xf32, #acc>, %n: index) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %zero = arith.constant dense<0.0> : tensor<64x16xf32, #acc>
    %minf = arith.constant dense<0xFF800000> : tensor<64xf32, #rows>
    %p0 = arith.constant dense<0.0> : tensor<64x16xbf16, #acc>
    %r:3 = scf.for %i = %c0 to %n step %c1
        iter_args(%o = %zero, %m = %minf, %p = %p0)
        -> (tensor<64x16xf32, #acc>, tensor<64xf32, #rows>, tensor<64x16xbf16, #acc>) {
      %mx = fagpu.reduce_rows max %s : tensor<64x16xf32, #acc> -> tensor<64xf32, #rows>
      %mnew = arith.maximumf %m, %mx : tensor<64xf32, #rows>
      %d = arith.subf %m, %mnew : tensor<64xf32, #rows>
      %alpha = math.exp2 %d : tensor<64xf32, #rows>
      %ex = fagpu.expand_rows %mnew : tensor<64xf32, #rows> -> tensor<64x16xf32, #acc>
      %sub = arith.subf %s, %ex : tensor<64x16xf32, #acc>
      %pf = math.exp2 %sub : tensor<64x16xf32, #acc>
      %pb = arith.truncf %pf : tensor<64x16xf32, #acc> to tensor<64x16xbf16, #acc>
      %ea = fagpu.expand_rows %alpha : tensor<64xf32, #rows> -> tensor<64x16xf32, #acc>
      %onew = arith.mulf %ea, %o : tensor<64x16xf32, #acc>
      scf.yield %onew, %mnew, %pb : tensor<64x16xf32, #acc>, tensor<64xf32, #rows>, tensor<64x16xbf16, #acc>
    }
    gpu.return
  }
}

// -----

// Left alone: a multiply by factors that are no exponentials (O's final
// normalisation by 1 / l) and rescales of tiles that are no loop's
// accumulator (the first KV block's, of a constant or of an argument).

#acc = #fagpu.wgmma_acc<warps = 4>
#rows = #fagpu.rows<#fagpu.wgmma_acc<warps = 4>>
gpu.module @m {
  // CHECK-LABEL: gpu.func @not_rescales
  // CHECK-NOT: fagpu.warp_any
  // CHECK-NOT: scf.if
  // CHECK: gpu.return
  gpu.func @not_rescales(%o: tensor<64x16xf32, #acc>, %l: tensor<64xf32, #rows>, %n: index) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %zero = arith.constant dense<0.0> : tensor<64x16xf32, #acc>
    %first = math.exp2 %l : tensor<64xf32, #rows>
    %ef = fagpu.expand_rows %first : tensor<64xf32, #rows> -> tensor<64x16xf32, #acc>
    %o1 = arith.mulf %ef, %o : tensor<64x16xf32, #acc>
    %r = scf.for %i = %c0 to %n step %c1 iter_args(%a = %o1) -> (tensor<64x16xf32, #acc>) {
      %inv = arith.divf %l, %l : tensor<64xf32, #rows>
      %ei = fagpu.expand_rows %inv : tensor<64xf32, #rows> -> tensor<64x16xf32, #acc>
      %normalised = arith.mulf %a, %ei : tensor<64x16xf32, #acc>
      %e = math.exp2 %l : tensor<64xf32, #rows>
      %ee = fagpu.expand_rows %e : tensor<64xf32, #rows> -> tensor<64x16xf32, #acc>
      %scaled_zero = arith.mulf %ee, %zero : tensor<64x16xf32, #acc>
      %sum = arith.addf %normalised, %scaled_zero : tensor<64x16xf32, #acc>
      scf.yield %sum : tensor<64x16xf32, #acc>
    }
    gpu.return
  }
}
