// RUN: fa-opt %s -pass-pipeline='builtin.module(gpu.module(fa-convert-fagpu-to-nvvm{exp2-on-fma-every=4}))' | FileCheck %s
// RUN: fa-opt %s -pass-pipeline='builtin.module(gpu.module(fa-convert-fagpu-to-nvvm))' | FileCheck %s --check-prefix=MUFU
// RUN: not fa-opt %s -pass-pipeline='builtin.module(gpu.module(fa-convert-fagpu-to-nvvm{exp2-on-fma-every=-1}))' 2>&1 | FileCheck %s --check-prefix=BAD

// exp2-on-fma-every=4: of a thread's 8 exponentials (a 64x16 WGMMA
// accumulator over 4 warps), registers 3 and 7 are computed on the FMA pipe
// (clamp, floor, a cubic by three FMAs, the exponent added to the bits, 0
// below -127), the others by MUFU's ex2.approx.

#acc = #fagpu.wgmma_acc<warps = 4>
gpu.module @m {
  // CHECK-LABEL: gpu.func @softmax_exponentials
  // CHECK-COUNT-3: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
  // CHECK: %[[CLAMP:.*]] = llvm.call_intrinsic "llvm.nvvm.fmax.f"(%{{.*}}, %{{.*}})
  // CHECK: %[[J:.*]] = llvm.call_intrinsic "llvm.nvvm.floor.f"(%[[CLAMP]])
  // CHECK: %[[F:.*]] = arith.subf %[[CLAMP]], %[[J]]
  // CHECK: llvm.call_intrinsic "llvm.nvvm.fma.rn.f"(%{{.*}}, %[[F]], %{{.*}})
  // CHECK: llvm.call_intrinsic "llvm.nvvm.fma.rn.f"(%{{.*}}, %[[F]], %{{.*}})
  // CHECK: %[[P:.*]] = llvm.call_intrinsic "llvm.nvvm.fma.rn.f"(%{{.*}}, %[[F]], %{{.*}})
  // CHECK: %[[E:.*]] = arith.fptosi %[[J]] : f32 to i32
  // CHECK: %[[SHIFT:.*]] = arith.shli %[[E]], %{{.*}} : i32
  // CHECK: %[[PBITS:.*]] = arith.bitcast %[[P]] : f32 to i32
  // CHECK: %[[BITS:.*]] = arith.addi %[[PBITS]], %[[SHIFT]] : i32
  // CHECK: %[[R:.*]] = arith.bitcast %[[BITS]] : i32 to f32
  // CHECK: %[[LOW:.*]] = arith.cmpf olt, %{{.*}}, %{{.*}} : f32
  // CHECK: arith.select %[[LOW]], %{{.*}}, %[[R]] : f32
  // CHECK-COUNT-3: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
  // CHECK: llvm.call_intrinsic "llvm.nvvm.floor.f"
  // CHECK-NOT: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
  // MUFU-COUNT-8: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
  // MUFU-NOT: llvm.nvvm.floor.f
  // BAD: error: fa-convert-fagpu-to-nvvm: exp2-on-fma-every must be 0 or positive, got -1
  gpu.func @softmax_exponentials(%x: f32) kernel {
    %s = tensor.splat %x : tensor<64x16xf32, #acc>
    %e = math.exp2 %s : tensor<64x16xf32, #acc>
    gpu.return
  }
}
