// RUN: fa-opt %s -split-input-file -verify-diagnostics -pass-pipeline='builtin.module(gpu.module(fa-pass-runtime-sizes))' | FileCheck %s

// A kernel argument with runtime sizes becomes its pointer (typed one
// element: bare pointers take static shapes) and one index argument per
// dynamic size, appended after every other argument (the tensor map stays
// where it is); the body reads the view rebuilt from the sizes with
// row-major strides. Static arguments are left alone.

// CHECK-LABEL: gpu.func @runtime_sizes
// CHECK-SAME: (%[[Q:.*]]: memref<1xbf16>, %[[S:.*]]: memref<2x8xf32>, %[[LSE:.*]]: memref<1xf32>, %[[MAP:.*]]: i64, %[[B:.*]]: index, %[[N:.*]]: index, %[[B2:.*]]: index, %[[N2:.*]]: index)
// CHECK-SAME: fa.runtime_sizes = array<i64: 0, 0, 0, 2, 2, 0, 2, 2>
// CHECK: %[[C64:.*]] = arith.constant 64 : index
// CHECK: %[[PERHEAD:.*]] = arith.muli %[[N]], %[[C64]] : index
// CHECK: %[[C4:.*]] = arith.constant 4 : index
// CHECK: %[[PERBATCH:.*]] = arith.muli %[[C4]], %[[PERHEAD]] : index
// CHECK: %[[QV:.*]] = memref.reinterpret_cast %[[Q]] to offset: [0], sizes: [%[[B]], 4, %[[N]], 64], strides: [%[[PERBATCH]], %[[PERHEAD]], 64, 1] : memref<1xbf16> to memref<?x4x?x64xbf16>
// CHECK: %[[LPERBATCH:.*]] = arith.muli %{{.*}}, %[[N2]] : index
// CHECK: %[[LV:.*]] = memref.reinterpret_cast %[[LSE]] to offset: [0], sizes: [%[[B2]], 4, %[[N2]]], strides: [%[[LPERBATCH]], %[[N2]], 1] : memref<1xf32> to memref<?x4x?xf32>
// CHECK: memref.dim %[[QV]]
// CHECK: memref.store %{{.*}}, %[[LV]]
// CHECK: memref.store %{{.*}}, %[[S]]
gpu.module @m {
  gpu.func @runtime_sizes(%q: memref<?x4x?x64xbf16>, %s: memref<2x8xf32>,
                          %lse: memref<?x4x?xf32>, %map: i64) kernel {
    %c0 = arith.constant 0 : index
    %c2 = arith.constant 2 : index
    %n = memref.dim %q, %c2 : memref<?x4x?x64xbf16>
    %f = arith.index_cast %n : index to i64
    %x = arith.sitofp %f : i64 to f32
    memref.store %x, %lse[%c0, %c0, %c0] : memref<?x4x?xf32>
    memref.store %x, %s[%c0, %c0] : memref<2x8xf32>
    gpu.return
  }
}

// -----

// Nothing to do without runtime sizes.

// CHECK-LABEL: gpu.func @static_sizes
// CHECK-SAME: (%{{.*}}: memref<2x4x8x64xbf16>)
// CHECK-NOT: fa.runtime_sizes
gpu.module @m {
  gpu.func @static_sizes(%q: memref<2x4x8x64xbf16>) kernel {
    gpu.return
  }
}

// -----

// Named sizes (the compiler's .meta names them): sizes of one name are one
// value at every launch, so they share one appended argument, in order of
// first appearance, and both views compute their strides from it.

// CHECK-LABEL: gpu.func @named_sizes
// CHECK-SAME: (%[[Q:.*]]: memref<1xbf16>, %[[DO:.*]]: memref<1xbf16>, %[[K:.*]]: memref<1xbf16>, %[[B:.*]]: index, %[[N:.*]]: index, %[[NK:.*]]: index)
// CHECK-SAME: fa.runtime_sizes = array<i64: 0, 0, 0, 2, 1, 0, 1, 2, 2, 0, 2, 2>
// CHECK: memref.reinterpret_cast %[[Q]] to offset: [0], sizes: [%[[B]], 4, %[[N]], 64]
// CHECK: memref.reinterpret_cast %[[DO]] to offset: [0], sizes: [%[[B]], 4, %[[N]], 64]
// CHECK: memref.reinterpret_cast %[[K]] to offset: [0], sizes: [%[[B]], 2, %[[NK]], 64]
gpu.module @m {
  gpu.func @named_sizes(%q: memref<?x4x?x64xbf16>, %do: memref<?x4x?x64xbf16>,
                        %k: memref<?x2x?x64xbf16>) kernel
      attributes {fa.runtime_size_names = ["batch", "seq_q", "batch", "seq_q",
                                           "batch", "seq_kv"]} {
    gpu.return
  }
}

// -----

// A name per size, or none: anything else is an error on the kernel.

gpu.module @m {
  // expected-error @below {{fa-pass-runtime-sizes: fa.runtime_size_names must name each of the 2 runtime sizes with a string}}
  gpu.func @wrong_names(%q: memref<?x4x?x64xbf16>) kernel
      attributes {fa.runtime_size_names = ["batch"]} {
    gpu.return
  }
}
