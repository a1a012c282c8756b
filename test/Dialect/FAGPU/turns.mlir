// RUN: fa-opt %s -split-input-file | fa-opt -split-input-file | FileCheck %s
// RUN: fa-opt %s -split-input-file -pass-pipeline='builtin.module(gpu.module(fa-convert-fagpu-to-nvvm))' | FileCheck %s --check-prefix=NVVM

// A section of global sums taken in turns: the first thread spins on an
// acquire load (GPU scope) until the counter holds this block's turn, the
// block syncs, sums, syncs, and its first thread adds 1 with release
// semantics (one red.release.gpu: the LLVM path drops the ordering).

// CHECK-LABEL: gpu.func @in_turn
// CHECK: fagpu.wait_turn %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}], %{{.*}} : memref<2x4x8xi32>
// CHECK: fagpu.pass_turn %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] : memref<2x4x8xi32>
// NVVM-LABEL: gpu.func @in_turn
// NVVM: scf.if
// NVVM: scf.while
// NVVM: llvm.load %{{.*}} atomic syncscope("device") acquire {alignment = 4 : i64} : !llvm.ptr<1> -> i32
// NVVM: arith.cmpi ne
// NVVM: gpu.barrier
// NVVM: memref.store
// NVVM: gpu.barrier
// NVVM: scf.if
// NVVM: llvm.inline_asm has_side_effects asm_dialect = att "red.release.gpu.global.add.u32 [$0], 1;", "l"
gpu.module @m {
  gpu.func @in_turn(%turns: memref<2x4x8xi32>, %out: memref<16xf32>, %b: index, %h: index, %q: index, %turn: index, %x: f32) kernel {
    fagpu.wait_turn %turns[%b, %h, %q], %turn : memref<2x4x8xi32>
    memref.store %x, %out[%q] : memref<16xf32>
    fagpu.pass_turn %turns[%b, %h, %q] : memref<2x4x8xi32>
    gpu.return
  }
}

