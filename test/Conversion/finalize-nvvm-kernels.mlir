// RUN: fa-opt %s -split-input-file -pass-pipeline='builtin.module(gpu.module(fa-finalize-nvvm-kernels))' | FileCheck %s

// The dynamic shared window must be an external zero-sized shared global;
// other globals keep their linkage.

// CHECK-LABEL: gpu.module @kernels
// CHECK: llvm.mlir.global external @__dynamic_shmem__0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
// CHECK: llvm.mlir.global internal @static_tile() {addr_space = 3 : i32} : !llvm.array<64 x i8>
// CHECK: llvm.mlir.global internal @not_shared() {addr_space = 1 : i32} : !llvm.array<0 x i8>
module attributes {gpu.container_module} {
  gpu.module @kernels {
    llvm.mlir.global internal @__dynamic_shmem__0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
    llvm.mlir.global internal @static_tile() {addr_space = 3 : i32} : !llvm.array<64 x i8>
    llvm.mlir.global internal @not_shared() {addr_space = 1 : i32} : !llvm.array<0 x i8>
  }
}

// -----

// Tensor-map parameters of a kernel (listed by fa-convert-fagpu-to-nvvm in
// fagpu.tensor_map_args) become 128-byte by-value grid constants, 64-byte
// aligned, and the list is dropped; a function that is not a kernel keeps
// its pointer parameters and the list.

// CHECK-LABEL: gpu.module @tma
// CHECK: llvm.func @fwd(%{{[a-z0-9]+}}: !llvm.ptr<1>,
// CHECK-SAME: %{{[a-z0-9]+}}: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant},
// CHECK-SAME: %{{[a-z0-9]+}}: i32,
// CHECK-SAME: %{{[a-z0-9]+}}: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant})
// CHECK-SAME: attributes {nvvm.kernel}
// CHECK: llvm.func @helper(%{{[a-z0-9]+}}: !llvm.ptr) attributes {fagpu.tensor_map_args = array<i64: 0>}
module attributes {gpu.container_module} {
  gpu.module @tma {
    llvm.func @fwd(%q: !llvm.ptr<1>, %map: !llvm.ptr, %n: i32, %map2: !llvm.ptr) attributes {nvvm.kernel, fagpu.tensor_map_args = array<i64: 1, 3>} {
      llvm.return
    }
    llvm.func @helper(%map: !llvm.ptr) attributes {fagpu.tensor_map_args = array<i64: 0>} {
      llvm.return
    }
  }
}
