// RUN: fa-opt %s -pass-pipeline='builtin.module(gpu.module(fa-finalize-nvvm-kernels))' | FileCheck %s

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
