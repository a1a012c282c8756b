// RUN: fa-opt %s -split-input-file -fa-convert-to-online-attention -fa-tile-attention="block-q=64 block-kv=64" -fa-convert-tiled-attention-to-gpu | FileCheck %s

// The tiled forward becomes one kernel: the forall is the grid (Q blocks,
// heads, batch), 4 warps of 16 rows each, K/V staged by cp.async, QKᵀ and
// P·V on mma.sync, quad shuffles for the row reductions, the KV loop split
// kept (masked / unmasked / masked). The host function is gone.

// CHECK-NOT: func.func
// CHECK: gpu.module @fa_kernels
// CHECK: gpu.func @fa_fwd(%{{.*}}: memref<1x4x200x64xbf16>, %{{.*}}: memref<1x2x300x64xbf16>, %{{.*}}: memref<1x2x300x64xbf16>, %{{.*}}: memref<1x4x200x64xbf16>, %{{.*}}: memref<1x4x200xf32>) kernel
// CHECK-SAME: fa.block = array<i64: 128, 1, 1>
// CHECK-SAME: fa.causal
// CHECK-SAME: fa.grid = array<i64: 4, 4, 1>
// CHECK-SAME: fa.kind = "forward"
// CHECK-SAME: fa.rows_per_warp = 16
// CHECK-SAME: fa.shared_bytes = 27648
// CHECK-SAME: known_block_size = array<i32: 128, 1, 1>
// CHECK: gpu.dynamic_shared_memory
// CHECK: memref.view {{.*}} to memref<64x72xbf16, #gpu.address_space<workgroup>>
// Prologue: Q, then the first K tile when any KV block is visible.
// CHECK: nvgpu.device_async_copy {{.*}} : memref<1x4x200x64xbf16> to memref<64x72xbf16, #gpu.address_space<workgroup>>
// CHECK: nvvm.cp.async.commit.group
// CHECK: scf.if
// CHECK:   nvgpu.device_async_copy {{.*}} : memref<1x2x300x64xbf16> to memref<64x72xbf16, #gpu.address_space<workgroup>>
// CHECK:   nvvm.cp.async.commit.group
// Each KV block: wait K, issue V, QKᵀ + softmax, wait V, prefetch K, P·V.
// CHECK: scf.for
// CHECK:   nvvm.cp.async.wait.group 0
// CHECK:   gpu.barrier
// CHECK:   nvgpu.device_async_copy {{.*}} : memref<1x2x300x64xbf16> to memref<64x72xbf16, #gpu.address_space<workgroup>>
// CHECK:   nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = false} {{.*}} -> vector<4x2xbf16>
// CHECK:   nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = false} {{.*}} -> vector<4x2xbf16>
// CHECK:   nvvm.mma.sync A[{{.*}}] B[{{.*}}] C[{{.*}}] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>}
// CHECK:   arith.select {{.*}} : f32
// CHECK:   gpu.shuffle xor
// CHECK:   llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// CHECK:   nvvm.cp.async.wait.group 0
// CHECK:   scf.if
// CHECK:     nvgpu.device_async_copy
// CHECK:   nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = true}
// CHECK: scf.for
// CHECK-NOT: gpu.shuffle xor
// CHECK:   arith.maximumf
// CHECK: scf.for
// CHECK: llvm.call_intrinsic "llvm.nvvm.lg2.approx.f"
// CHECK: gpu.return
func.func @fa_fwd(%q: tensor<1x4x200x64xbf16>, %k: tensor<1x2x300x64xbf16>, %v: tensor<1x2x300x64xbf16>)
    -> (tensor<1x4x200x64xbf16>, tensor<1x4x200xf32>) {
  %o, %lse = fa.attention %q, %k, %v causal
      : tensor<1x4x200x64xbf16>, tensor<1x2x300x64xbf16>, tensor<1x2x300x64xbf16>
      -> tensor<1x4x200x64xbf16>, tensor<1x4x200xf32>
  return %o, %lse : tensor<1x4x200x64xbf16>, tensor<1x4x200xf32>
}

// -----

// f16 keeps the operand pairs as vector<2xf16>; softcap goes through tanh.

// CHECK-LABEL: gpu.func @softcap_f16
// CHECK-SAME: fa.softcap = 2.000000e+01
// CHECK: nvvm.mma.sync {{.*}} : (vector<2xf16>, vector<2xf16>, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK: llvm.call_intrinsic "llvm.tanh.f32"
func.func @softcap_f16(%q: tensor<1x1x64x64xf16>) -> tensor<1x1x64x64xf16> {
  %o, %lse = fa.attention %q, %q, %q softcap = 20.0
      : tensor<1x1x64x64xf16>, tensor<1x1x64x64xf16>, tensor<1x1x64x64xf16>
      -> tensor<1x1x64x64xf16>, tensor<1x1x64xf32>
  return %o : tensor<1x1x64x64xf16>
}
