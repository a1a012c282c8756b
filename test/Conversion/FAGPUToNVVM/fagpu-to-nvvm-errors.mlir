// RUN: fa-opt %s -split-input-file -verify-diagnostics -pass-pipeline='builtin.module(gpu.module(fa-convert-fagpu-to-nvvm))'

// More bands than the block has warpgroups: a located error, not a band
// nobody adds.

gpu.module @m {
  gpu.func @too_many_bands(%dq: memref<256x64xf32>, %row: index, %n: index) kernel attributes {fa.block = array<i64: 128, 1, 1>} {
    %s = fagpu.alloc_shared : !fagpu.smem<64x72xf32, swizzle = 0>
    // expected-error @+2 {{2 bands need as many warpgroups; the code runs on 128 threads}}
    // expected-error @+1 {{failed to legalize operation 'fagpu.reduce_to_global'}}
    fagpu.reduce_to_global %s, %dq[%row] limit %n bands = 2 : !fagpu.smem<64x72xf32, swizzle = 0>, memref<256x64xf32>
    gpu.return
  }
}

