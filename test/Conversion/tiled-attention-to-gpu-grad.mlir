// RUN: fa-opt %s -split-input-file -fa-tile-attention-grad="block-q=64 block-kv=64" -fa-convert-tiled-attention-to-gpu | FileCheck %s
// RUN: not fa-opt %s -fa-tile-attention-grad="block-q=64 block-kv=8" -fa-convert-tiled-attention-to-gpu 2>&1 | FileCheck %s --check-prefix=SMALL

// The tiled backward becomes three kernels: the delta pre-pass (which also
// zeroes the f32 dQ accumulator), the main kernel over (KV block, KV head,
// batch) with 16 keys per warp, and the dQ cast.

// CHECK: gpu.module @fa_kernels
// CHECK: gpu.func @grad_pre(%{{.*}}: memref<1x4x128x16xf16>, %{{.*}}: memref<1x4x128x16xf16>, %{{.*}}: memref<1x4x128xf32>, %{{.*}}: memref<1x4x128x32xf32>) kernel
// CHECK-SAME: fa.grid = array<i64: 32, 4, 1>
// CHECK-SAME: fa.kind = "backward_pre"
// CHECK: gpu.shuffle xor
// CHECK: gpu.return
// CHECK: gpu.func @grad(%{{.*}}: memref<1x4x128x32xf16>, %{{.*}}: memref<1x2x128x32xf16>, %{{.*}}: memref<1x2x128x16xf16>, %{{.*}}: memref<1x4x128x16xf16>, %{{.*}}: memref<1x4x128xf32>, %{{.*}}: memref<1x4x128xf32>, %{{.*}}: memref<1x4x128x32xf32>, %{{.*}}: memref<1x2x128x32xf16>, %{{.*}}: memref<1x2x128x16xf16>) kernel
// CHECK-SAME: fa.block = array<i64: 128, 1, 1>
// CHECK-SAME: fa.causal
// CHECK-SAME: fa.grid = array<i64: 2, 2, 1>
// CHECK-SAME: fa.kind = "backward"
// K and V are loaded once, and the first visit's Q and dO into stage 0 of
// the two-stage (2 x 64-row) tiles; the block walks the group's query heads...
// CHECK: nvgpu.device_async_copy {{.*}} : memref<1x2x128x32xf16> to memref<64x40xf16, #gpu.address_space<workgroup>>
// CHECK: nvgpu.device_async_copy {{.*}} : memref<1x2x128x16xf16> to memref<64x24xf16, #gpu.address_space<workgroup>>
// CHECK: nvgpu.device_async_copy {{.*}} : memref<1x4x128x32xf16> to memref<128x40xf16, #gpu.address_space<workgroup>>
// CHECK: nvgpu.device_async_copy {{.*}} : memref<1x4x128x16xf16> to memref<128x24xf16, #gpu.address_space<workgroup>>
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}}
// ... and the visible Q blocks, masked first, each fetching the next visit's
// tiles into the other stage before computing its own.
// CHECK:   scf.for
// CHECK:     nvvm.cp.async.wait.group 0
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: scf.if
// CHECK:       nvgpu.device_async_copy {{.*}} : memref<1x4x128x32xf16> to memref<128x40xf16, #gpu.address_space<workgroup>>
// CHECK:       nvgpu.device_async_copy {{.*}} : memref<1x4x128x16xf16> to memref<128x24xf16, #gpu.address_space<workgroup>>
// CHECK:     nvvm.mma.sync
// CHECK:     llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// CHECK:     arith.select
// CHECK:     nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = true}
// CHECK:     gpu.barrier
// CHECK:     memref.atomic_rmw addf {{.*}} : (f32, memref<1x4x128x32xf32>) -> f32
// CHECK:   scf.for
// CHECK:   scf.for
// dK and dV leave once, cast to f16.
// CHECK: arith.truncf {{.*}} : f32 to f16
// CHECK: memref.store {{.*}} : memref<1x2x128x32xf16>
// CHECK: gpu.return
// CHECK: gpu.func @grad_post(%{{.*}}: memref<1x4x128x32xf32>, %{{.*}}: memref<1x4x128x32xf16>) kernel
// CHECK-SAME: fa.kind = "backward_post"
// CHECK: arith.truncf
func.func @grad(%q: tensor<1x4x128x32xf16>, %k: tensor<1x2x128x32xf16>, %v: tensor<1x2x128x16xf16>,
                %o: tensor<1x4x128x16xf16>, %do: tensor<1x4x128x16xf16>, %lse: tensor<1x4x128xf32>)
    -> (tensor<1x4x128x32xf16>, tensor<1x2x128x32xf16>, tensor<1x2x128x16xf16>) {
  // SMALL: error: cannot lower to the mma.sync kernel: block-kv of the backward must be a multiple of 16 keys (one warp each) in [16, 256], got 8
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse causal
      : tensor<1x4x128x32xf16>, tensor<1x2x128x32xf16>, tensor<1x2x128x16xf16>,
        tensor<1x4x128x16xf16>, tensor<1x4x128x16xf16>, tensor<1x4x128xf32>
      -> tensor<1x4x128x32xf16>, tensor<1x2x128x32xf16>, tensor<1x2x128x16xf16>
  return %dq, %dk, %dv : tensor<1x4x128x32xf16>, tensor<1x2x128x32xf16>, tensor<1x2x128x16xf16>
}
