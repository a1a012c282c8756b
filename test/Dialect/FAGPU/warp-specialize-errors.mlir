// RUN: fa-opt %s -split-input-file -pass-pipeline='builtin.module(gpu.module(fagpu-warp-specialize{max-shared-bytes=40000}))' -verify-diagnostics
// RUN: not fa-opt %s -split-input-file -pass-pipeline='builtin.module(gpu.module(fagpu-warp-specialize{stages=1}))' 2>&1 | FileCheck %s --check-prefix=STAGES
// RUN: not fa-opt %s -split-input-file -pass-pipeline='builtin.module(gpu.module(fagpu-warp-specialize{tile-buffers=0}))' 2>&1 | FileCheck %s --check-prefix=BUFFERS

// A ring needs two stages at least (the option is checked before any
// kernel, on the module):
// STAGES: error: fagpu-warp-specialize needs at least 2 stages, got 1
// STAGES-NOT: error: fagpu-warp-specialize needs copy rows
// and a tile copied once per tile one buffer:
// BUFFERS: error: fagpu-warp-specialize takes 1 to 8 tile buffers, got 0
// BUFFERS-NOT: error: fagpu-warp-specialize needs copy rows

// Every error fagpu-warp-specialize emits, on the smallest kernel that
// reaches it. The kernels read rows of one matrix of a [2, 256, 64]
// argument, as the compiler's do of a [B, H, N, D] one.

// A TMA copy needs a kernel argument under its subview: here the argument
// itself.
gpu.module @m {
  gpu.func @no_subview(%k: memref<256x64xbf16>) kernel attributes {fa.block = array<i64: 128, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c256 = arith.constant 256 : index
    %t = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
    // expected-error @+1 {{a TMA copy reads a subview of a kernel argument}}
    fagpu.copy_to_shared %k[%c0] limit %c256 into %t : memref<256x64xbf16>, !fagpu.smem<64x64xbf16, swizzle = 128>
    gpu.return
  }
}

// -----

// ... here a subview of a local buffer.
gpu.module @m {
  gpu.func @local(%n: index) kernel attributes {fa.block = array<i64: 128, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c256 = arith.constant 256 : index
    %buf = memref.alloc() : memref<2x256x64xbf16>
    %v = memref.subview %buf[0, 0, 0] [1, 256, 64] [1, 1, 1] : memref<2x256x64xbf16> to memref<256x64xbf16, strided<[64, 1]>>
    %t = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
    // expected-error @+1 {{a TMA copy reads a subview of a kernel argument}}
    fagpu.copy_to_shared %v[%c0] limit %c256 into %t : memref<256x64xbf16, strided<[64, 1]>>, !fagpu.smem<64x64xbf16, swizzle = 128>
    gpu.return
  }
}

// -----

// Half of each row (columns 64..127 of a 128-column matrix).
gpu.module @m {
  gpu.func @columns(%k: memref<2x256x128xbf16>) kernel attributes {fa.block = array<i64: 128, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c256 = arith.constant 256 : index
    %v = memref.subview %k[0, 0, 64] [1, 256, 64] [1, 1, 1] : memref<2x256x128xbf16> to memref<256x64xbf16, strided<[128, 1], offset: 64>>
    %t = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
    // expected-error @+1 {{a TMA copy reads whole rows of one matrix of a dense kernel argument}}
    fagpu.copy_to_shared %v[%c0] limit %c256 into %t : memref<256x64xbf16, strided<[128, 1], offset: 64>>, !fagpu.smem<64x64xbf16, swizzle = 128>
    gpu.return
  }
}

// -----

// Part of the rows of the matrix.
gpu.module @m {
  gpu.func @rows(%k: memref<2x256x64xbf16>) kernel attributes {fa.block = array<i64: 128, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c128 = arith.constant 128 : index
    %v = memref.subview %k[0, 128, 0] [1, 128, 64] [1, 1, 1] : memref<2x256x64xbf16> to memref<128x64xbf16, strided<[64, 1], offset: 8192>>
    %t = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
    // expected-error @+1 {{a TMA copy reads whole rows of one matrix of a dense kernel argument}}
    fagpu.copy_to_shared %v[%c0] limit %c128 into %t : memref<128x64xbf16, strided<[64, 1], offset: 8192>>, !fagpu.smem<64x64xbf16, swizzle = 128>
    gpu.return
  }
}

// -----

// TMA zero-fills past the tensor's last row only: a smaller limit cannot be
// honoured.
gpu.module @m {
  gpu.func @limit(%k: memref<2x256x64xbf16>, %n: index) kernel attributes {fa.block = array<i64: 128, 1, 1>} {
    %c0 = arith.constant 0 : index
    %v = memref.subview %k[0, 0, 0] [1, 256, 64] [1, 1, 1] : memref<2x256x64xbf16> to memref<256x64xbf16, strided<[64, 1]>>
    %t = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
    // expected-error @+1 {{a TMA copy zero-fills past the tensor's end, so its limit must be the row count 256}}
    fagpu.copy_to_shared %v[%c0] limit %n into %t : memref<256x64xbf16, strided<[64, 1]>>, !fagpu.smem<64x64xbf16, swizzle = 128>
    gpu.return
  }
}

// -----

// With runtime rows the limit must be the argument's row count read at run
// time (memref.dim of it), not another length.
gpu.module @m {
  gpu.func @runtime_limit(%k: memref<2x?x64xbf16>, %n: index) kernel attributes {fa.block = array<i64: 128, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %rows = memref.dim %k, %c1 : memref<2x?x64xbf16>
    %v = memref.subview %k[0, 0, 0] [1, %rows, 64] [1, 1, 1] : memref<2x?x64xbf16> to memref<?x64xbf16, strided<[64, 1]>>
    %t = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
    // expected-error @+1 {{a TMA copy zero-fills past the tensor's end, so its limit must be the row count (memref.dim of the kernel argument, dim 1)}}
    fagpu.copy_to_shared %v[%c0] limit %n into %t : memref<?x64xbf16, strided<[64, 1]>>, !fagpu.smem<64x64xbf16, swizzle = 128>
    gpu.return
  }
}

// -----

// A copy under an scf.if.
gpu.module @m {
  gpu.func @conditional(%k: memref<2x256x64xbf16>, %p: i1) kernel attributes {fa.block = array<i64: 128, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c256 = arith.constant 256 : index
    %v = memref.subview %k[0, 0, 0] [1, 256, 64] [1, 1, 1] : memref<2x256x64xbf16> to memref<256x64xbf16, strided<[64, 1]>>
    %t = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
    scf.if %p {
      // expected-error @+1 {{fagpu-warp-specialize takes copies at the kernel's top level (its tile loop's body in a persistent kernel) or in the loops there}}
      fagpu.copy_to_shared %v[%c0] limit %c256 into %t : memref<256x64xbf16, strided<[64, 1]>>, !fagpu.smem<64x64xbf16, swizzle = 128>
    }
    gpu.return
  }
}

// -----

// A copy two loops below the top level's (a loop of copying loops is the
// deepest nest the producer replays).
gpu.module @m {
  gpu.func @nested(%k: memref<2x256x64xbf16>, %n: index) kernel attributes {fa.block = array<i64: 128, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    %v = memref.subview %k[0, 0, 0] [1, 256, 64] [1, 1, 1] : memref<2x256x64xbf16> to memref<256x64xbf16, strided<[64, 1]>>
    %t = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
    scf.for %h = %c0 to %n step %c1 {
      scf.for %i = %c0 to %n step %c1 {
        scf.for %j = %c0 to %n step %c1 {
          // expected-error @+1 {{fagpu-warp-specialize takes copies at the kernel's top level (its tile loop's body in a persistent kernel) or in the loops there (or in the loops of one loop there)}}
          fagpu.copy_to_shared %v[%j] limit %c256 into %t : memref<256x64xbf16, strided<[64, 1]>>, !fagpu.smem<64x64xbf16, swizzle = 128>
        }
      }
    }
    gpu.return
  }
}

// -----

// A tile allocated in the loop cannot become a ring.
gpu.module @m {
  gpu.func @inside(%k: memref<2x256x64xbf16>, %n: index) kernel attributes {fa.block = array<i64: 128, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    %v = memref.subview %k[0, 0, 0] [1, 256, 64] [1, 1, 1] : memref<2x256x64xbf16> to memref<256x64xbf16, strided<[64, 1]>>
    scf.for %i = %c0 to %n step %c1 {
      %t = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
      // expected-error @+1 {{the tile must be allocated at the kernel's top level}}
      fagpu.copy_to_shared %v[%i] limit %c256 into %t : memref<256x64xbf16, strided<[64, 1]>>, !fagpu.smem<64x64xbf16, swizzle = 128>
    }
    gpu.return
  }
}

// -----

// The KV loops share one ring sequence: they must copy the same tiles, in
// the same order.
gpu.module @m {
  gpu.func @order(%k: memref<2x256x64xbf16>, %n: index) kernel attributes {fa.block = array<i64: 128, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    %v = memref.subview %k[0, 0, 0] [1, 256, 64] [1, 1, 1] : memref<2x256x64xbf16> to memref<256x64xbf16, strided<[64, 1]>>
    %a = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
    %b = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
    scf.for %i = %c0 to %n step %c1 {
      fagpu.copy_to_shared %v[%i] limit %c256 into %a : memref<256x64xbf16, strided<[64, 1]>>, !fagpu.smem<64x64xbf16, swizzle = 128>
      fagpu.copy_to_shared %v[%i] limit %c256 into %b : memref<256x64xbf16, strided<[64, 1]>>, !fagpu.smem<64x64xbf16, swizzle = 128>
    }
    // expected-error @+1 {{every KV loop must copy the same tiles in the same order}}
    scf.for %i = %n to %c256 step %c1 {
      fagpu.copy_to_shared %v[%i] limit %c256 into %b : memref<256x64xbf16, strided<[64, 1]>>, !fagpu.smem<64x64xbf16, swizzle = 128>
      fagpu.copy_to_shared %v[%i] limit %c256 into %a : memref<256x64xbf16, strided<[64, 1]>>, !fagpu.smem<64x64xbf16, swizzle = 128>
    }
    gpu.return
  }
}

// -----

gpu.module @m {
  gpu.func @step(%k: memref<2x256x64xbf16>, %n: index) kernel attributes {fa.block = array<i64: 128, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c2 = arith.constant 2 : index
    %c256 = arith.constant 256 : index
    %v = memref.subview %k[0, 0, 0] [1, 256, 64] [1, 1, 1] : memref<2x256x64xbf16> to memref<256x64xbf16, strided<[64, 1]>>
    %t = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
    // expected-error @+1 {{fagpu-warp-specialize takes loops of step 1}}
    scf.for %i = %c0 to %n step %c2 {
      fagpu.copy_to_shared %v[%i] limit %c256 into %t : memref<256x64xbf16, strided<[64, 1]>>, !fagpu.smem<64x64xbf16, swizzle = 128>
    }
    gpu.return
  }
}

// -----

// The block size decides the consumer warpgroups: it must be given ...
gpu.module @m {
  // expected-error @+1 {{fagpu-warp-specialize needs fa.block = [128 * warpgroups, 1, 1]}}
  gpu.func @no_block(%k: memref<2x256x64xbf16>) kernel {
    %c0 = arith.constant 0 : index
    %c256 = arith.constant 256 : index
    %v = memref.subview %k[0, 0, 0] [1, 256, 64] [1, 1, 1] : memref<2x256x64xbf16> to memref<256x64xbf16, strided<[64, 1]>>
    %t = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
    fagpu.copy_to_shared %v[%c0] limit %c256 into %t : memref<256x64xbf16, strided<[64, 1]>>, !fagpu.smem<64x64xbf16, swizzle = 128>
    gpu.return
  }
}

// -----

// ... in whole warpgroups ...
gpu.module @m {
  // expected-error @+1 {{fagpu-warp-specialize needs fa.block = [128 * warpgroups, 1, 1]}}
  gpu.func @partial(%k: memref<2x256x64xbf16>) kernel attributes {fa.block = array<i64: 192, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c256 = arith.constant 256 : index
    %v = memref.subview %k[0, 0, 0] [1, 256, 64] [1, 1, 1] : memref<2x256x64xbf16> to memref<256x64xbf16, strided<[64, 1]>>
    %t = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
    fagpu.copy_to_shared %v[%c0] limit %c256 into %t : memref<256x64xbf16, strided<[64, 1]>>, !fagpu.smem<64x64xbf16, swizzle = 128>
    gpu.return
  }
}

// -----

// ... and one-dimensional.
gpu.module @m {
  // expected-error @+1 {{fagpu-warp-specialize needs fa.block = [128 * warpgroups, 1, 1]}}
  gpu.func @two_d(%k: memref<2x256x64xbf16>) kernel attributes {fa.block = array<i64: 128, 2, 1>} {
    %c0 = arith.constant 0 : index
    %c256 = arith.constant 256 : index
    %v = memref.subview %k[0, 0, 0] [1, 256, 64] [1, 1, 1] : memref<2x256x64xbf16> to memref<256x64xbf16, strided<[64, 1]>>
    %t = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
    fagpu.copy_to_shared %v[%c0] limit %c256 into %t : memref<256x64xbf16, strided<[64, 1]>>, !fagpu.smem<64x64xbf16, swizzle = 128>
    gpu.return
  }
}

// -----

// Two stages of a 128 x 128 tile: 32768 + 512 (barriers) + 32768 bytes, over
// the 40000 the RUN line allows.
gpu.module @m {
  // expected-error @+1 {{fagpu-warp-specialize: rings of 2 stages need 65568 bytes of shared memory, over 40000}}
  gpu.func @big(%k: memref<2x256x128xbf16>, %n: index) kernel attributes {fa.block = array<i64: 128, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    %v = memref.subview %k[0, 0, 0] [1, 256, 128] [1, 1, 1] : memref<2x256x128xbf16> to memref<256x128xbf16, strided<[128, 1]>>
    %t = fagpu.alloc_shared : !fagpu.smem<128x128xbf16, swizzle = 128>
    scf.for %i = %c0 to %n step %c1 {
      fagpu.copy_to_shared %v[%i] limit %c256 into %t : memref<256x128xbf16, strided<[128, 1]>>, !fagpu.smem<128x128xbf16, swizzle = 128>
    }
    gpu.return
  }
}

// -----

// What the producer needs from before the loops is computed on both sides
// of the split: a load from memory the kernel writes cannot be (one from
// an argument it only reads can: warp-specialize.mlir, @read_only_rows).
gpu.module @m {
  gpu.func @effects(%k: memref<2x256x64xbf16>, %rows: memref<4xindex>) kernel attributes {fa.block = array<i64: 128, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c256 = arith.constant 256 : index
    // expected-error @+1 {{fagpu-warp-specialize: the loads depend on an op with side effects}}
    %row = memref.load %rows[%c0] : memref<4xindex>
    %v = memref.subview %k[0, 0, 0] [1, 256, 64] [1, 1, 1] : memref<2x256x64xbf16> to memref<256x64xbf16, strided<[64, 1]>>
    %t = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
    fagpu.copy_to_shared %v[%row] limit %c256 into %t : memref<256x64xbf16, strided<[64, 1]>>, !fagpu.smem<64x64xbf16, swizzle = 128>
    memref.store %c0, %rows[%c0] : memref<4xindex>
    gpu.return
  }
}

// -----

// The same for a loop bound.
gpu.module @m {
  gpu.func @bound_effects(%k: memref<2x256x64xbf16>, %bounds: memref<4xindex>) kernel attributes {fa.block = array<i64: 128, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    // expected-error @+1 {{fagpu-warp-specialize: the loads depend on an op with side effects}}
    %n = memref.load %bounds[%c0] : memref<4xindex>
    %v = memref.subview %k[0, 0, 0] [1, 256, 64] [1, 1, 1] : memref<2x256x64xbf16> to memref<256x64xbf16, strided<[64, 1]>>
    %t = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
    scf.for %i = %c0 to %n step %c1 {
      fagpu.copy_to_shared %v[%i] limit %c256 into %t : memref<256x64xbf16, strided<[64, 1]>>, !fagpu.smem<64x64xbf16, swizzle = 128>
    }
    memref.store %c0, %bounds[%c1] : memref<4xindex>
    gpu.return
  }
}

// -----

// A ring's stage is only named inside the loops: a use of the tile after
// them has no stage.
#acc = #fagpu.wgmma_acc<warps = 4>
gpu.module @m {
  gpu.func @after(%k: memref<2x256x64xbf16>, %n: index) kernel attributes {fa.block = array<i64: 128, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    %v = memref.subview %k[0, 0, 0] [1, 256, 64] [1, 1, 1] : memref<2x256x64xbf16> to memref<256x64xbf16, strided<[64, 1]>>
    // expected-error @+1 {{a ring tile is used outside its loops}}
    %t = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
    scf.for %i = %c0 to %n step %c1 {
      fagpu.copy_to_shared %v[%i] limit %c256 into %t : memref<256x64xbf16, strided<[64, 1]>>, !fagpu.smem<64x64xbf16, swizzle = 128>
    }
    %z = arith.constant dense<0.0> : tensor<64x64xf32, #acc>
    %s = fagpu.mma %t, %t, %z transpose_b : !fagpu.smem<64x64xbf16, swizzle = 128>, !fagpu.smem<64x64xbf16, swizzle = 128>, tensor<64x64xf32, #acc> -> tensor<64x64xf32, #acc>
    gpu.return
  }
}

// -----

// Two copies of one KV loop into the same tile would need two stages of
// one ring per iteration.
gpu.module @m {
  gpu.func @same_tile(%k: memref<2x256x64xbf16>, %n: index) kernel attributes {fa.block = array<i64: 128, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    %v = memref.subview %k[0, 0, 0] [1, 256, 64] [1, 1, 1] : memref<2x256x64xbf16> to memref<256x64xbf16, strided<[64, 1]>>
    %t = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
    // expected-error @+1 {{each copy of a KV loop needs a tile of its own (one ring per tile)}}
    scf.for %i = %c0 to %n step %c1 {
      fagpu.copy_to_shared %v[%i] limit %c256 into %t : memref<256x64xbf16, strided<[64, 1]>>, !fagpu.smem<64x64xbf16, swizzle = 128>
      fagpu.copy_to_shared %v[%i] limit %c256 into %t : memref<256x64xbf16, strided<[64, 1]>>, !fagpu.smem<64x64xbf16, swizzle = 128>
    }
    gpu.return
  }
}

// -----

// The producer recomputes a copy's row from the induction variable: a row
// the loop carries (here directly) exists on the consumers' side only ...
gpu.module @m {
  gpu.func @carried_row(%k: memref<2x256x64xbf16>, %n: index) kernel attributes {fa.block = array<i64: 128, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %c256 = arith.constant 256 : index
    %v = memref.subview %k[0, 0, 0] [1, 256, 64] [1, 1, 1] : memref<2x256x64xbf16> to memref<256x64xbf16, strided<[64, 1]>>
    %t = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
    %r = scf.for %i = %c0 to %n step %c1 iter_args(%row = %c0) -> (index) {
      // expected-error @+1 {{fagpu-warp-specialize needs copy rows computed from the induction variable, not from values the loop carries}}
      fagpu.copy_to_shared %v[%row] limit %c256 into %t : memref<256x64xbf16, strided<[64, 1]>>, !fagpu.smem<64x64xbf16, swizzle = 128>
      %next = arith.addi %row, %c64 : index
      scf.yield %next : index
    }
    gpu.return
  }
}

// -----

// ... or computed from a carried value.
gpu.module @m {
  gpu.func @carried_operand(%k: memref<2x256x64xbf16>, %n: index) kernel attributes {fa.block = array<i64: 128, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %c256 = arith.constant 256 : index
    %v = memref.subview %k[0, 0, 0] [1, 256, 64] [1, 1, 1] : memref<2x256x64xbf16> to memref<256x64xbf16, strided<[64, 1]>>
    %t = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
    %r = scf.for %i = %c0 to %n step %c1 iter_args(%block = %c0) -> (index) {
      %row = arith.muli %block, %c64 : index
      // expected-error @+1 {{fagpu-warp-specialize needs copy rows computed from the induction variable, not from values the loop carries}}
      fagpu.copy_to_shared %v[%row] limit %c256 into %t : memref<256x64xbf16, strided<[64, 1]>>, !fagpu.smem<64x64xbf16, swizzle = 128>
      %next = arith.addi %block, %c1 : index
      scf.yield %next : index
    }
    gpu.return
  }
}
