// RUN: fa-opt %s -split-input-file -pass-pipeline='builtin.module(gpu.module(fagpu-pipeline-shared-copies{max-shared-bytes=40000}))' -verify-diagnostics

gpu.module @m {
  gpu.func @inside(%kmem: memref<1024x64xbf16>, %n: index) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    scf.for %i = %c0 to %n step %c1 {
      %k = fagpu.alloc_shared : !fagpu.smem<128x64xbf16, swizzle = 128>
      // expected-error @+1 {{pipelining needs the tile allocated outside the loop}}
      fagpu.copy_to_shared %kmem[%i] limit %n into %k : memref<1024x64xbf16>, !fagpu.smem<128x64xbf16, swizzle = 128>
    }
    gpu.return
  }
}

// -----

gpu.module @m {
  gpu.func @step(%kmem: memref<1024x64xbf16>, %n: index) kernel {
    %c0 = arith.constant 0 : index
    %c2 = arith.constant 2 : index
    %k = fagpu.alloc_shared : !fagpu.smem<128x64xbf16, swizzle = 128>
    // expected-error @+1 {{fagpu-pipeline-shared-copies takes loops of step 1}}
    scf.for %i = %c0 to %n step %c2 {
      fagpu.copy_to_shared %kmem[%i] limit %n into %k : memref<1024x64xbf16>, !fagpu.smem<128x64xbf16, swizzle = 128>
    }
    gpu.return
  }
}

// -----

// Rings that would not fit leave the copies synchronous, with a remark.

gpu.module @m {
  // expected-remark @+1 {{not pipelined: 2 stages need 65536 bytes of shared memory, over 40000}}
  gpu.func @big(%kmem: memref<1024x128xbf16>, %n: index) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %k = fagpu.alloc_shared : !fagpu.smem<128x128xbf16, swizzle = 128>
    scf.for %i = %c0 to %n step %c1 {
      fagpu.copy_to_shared %kmem[%i] limit %n into %k : memref<1024x128xbf16>, !fagpu.smem<128x128xbf16, swizzle = 128>
    }
    gpu.return
  }
}
