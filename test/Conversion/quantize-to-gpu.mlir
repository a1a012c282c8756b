// RUN: fa-opt %s -split-input-file -fa-convert-quantize-to-gpu -verify-diagnostics | FileCheck %s

// Without rotation: NAME_amax reads a row's 4 values a lane (one vector
// load), takes |y| and the warp's maximum by xor shuffles, and lane 0 adds
// it to the block's amax by an atomic max, all on the bits of |y| (which
// order as the floats do); NAME scales
// by 448 / max(amax, 1e-12), clamps, rounds pairs to e4m3 and stores the
// lane's 4 bytes; the first thread of x = 0 writes the descale. Grid:
// (2 heads x 100 rows / 64, 2 groups, 3 batches).
// CHECK-LABEL: gpu.module @fa_kernels
// CHECK: gpu.func @plain_amax(%[[X:.*]]: memref<3x4x100x128xbf16>, %[[AMAX:.*]]: memref<3x2xi32>) kernel
// CHECK-SAME: fa.grid = array<i64: 4, 2, 3>
// CHECK-SAME: fa.kind = "quantize_amax"
// CHECK: scf.for
// CHECK: scf.if
// CHECK: vector.load %[[X]]{{.*}} {alignment = 8 : i64} : memref<3x4x100x128xbf16>, vector<4xbf16>
// CHECK: arith.bitcast %{{.*}} : f32 to i32
// CHECK: arith.andi %{{.*}}, %{{.*}} : i32
// CHECK: arith.maxui
// CHECK-NOT: gpu.shuffle
// CHECK: scf.yield
// CHECK-COUNT-5: gpu.shuffle xor %{{.*}} : i32
// CHECK: memref.atomic_rmw maxs %{{.*}}, %[[AMAX]]
// CHECK: gpu.func @plain(%{{.*}}: memref<3x4x100x128xbf16>, %{{.*}}: memref<3x2xi32>, %[[OUT:.*]]: memref<3x4x100x128xi8>, %[[DESCALE:.*]]: memref<3x2xf32>) kernel
// CHECK-SAME: fa.kind = "quantize"
// CHECK: %[[FLOOR:.*]] = arith.constant 9.99999996E-13 : f32
// CHECK: %[[BITS:.*]] = memref.load
// CHECK: %[[AMAXF:.*]] = arith.bitcast %[[BITS]] : i32 to f32
// CHECK: %[[A:.*]] = arith.maximumf %[[AMAXF]], %[[FLOOR]]
// CHECK: %[[SCALE:.*]] = arith.divf %{{.*}}, %[[A]]
// CHECK: scf.for
// CHECK-NOT: gpu.shuffle
// CHECK: arith.mulf %{{.*}}, %[[SCALE]]
// CHECK: nvvm.convert.f32x2.to.f8x2 {{.*}} sat = #nvvm.sat_mode<satfinite>
// CHECK: vector.store %{{.*}}, %[[OUT]]{{.*}} {alignment = 4 : i64} : memref<3x4x100x128xi8>, vector<4xi8>
// CHECK: memref.store %{{.*}}, %[[DESCALE]]
// CHECK-NOT: func.func @plain
func.func @plain(%x: tensor<3x4x100x128xbf16>) -> (tensor<3x4x100x128xf8E4M3FN>, tensor<3x2xf32>) {
  %q, %d = fa.quantize %x : tensor<3x4x100x128xbf16> -> tensor<3x4x100x128xf8E4M3FN>, tensor<3x2xf32>
  return %q, %d : tensor<3x4x100x128xf8E4M3FN>, tensor<3x2xf32>
}

// -----

// D = 192: 6 values a lane, at 12-byte (bf16) and 6-byte (e4m3) steps, so
// the accesses are as aligned as the largest power of two dividing those:
// 4 and 2 (an alignment must be a power of two; found by CApiFuzzer).
// CHECK-LABEL: gpu.module @fa_kernels
// CHECK: gpu.func @wide_amax
// CHECK: vector.load %{{.*}} {alignment = 4 : i64} : memref<1x2x64x192xbf16>, vector<6xbf16>
// CHECK: gpu.func @wide(
// CHECK: vector.load %{{.*}} {alignment = 4 : i64} : memref<1x2x64x192xbf16>, vector<6xbf16>
// CHECK-COUNT-3: nvvm.convert.f32x2.to.f8x2
// CHECK: vector.store %{{.*}} {alignment = 2 : i64} : memref<1x2x64x192xi8>, vector<6xi8>
func.func @wide(%x: tensor<1x2x64x192xbf16>) -> (tensor<1x2x64x192xf8E4M3FN>, tensor<1x1xf32>) {
  %q, %d = fa.quantize %x : tensor<1x2x64x192xbf16> -> tensor<1x2x64x192xf8E4M3FN>, tensor<1x1xf32>
  return %q, %d : tensor<1x2x64x192xf8E4M3FN>, tensor<1x1xf32>
}

// -----

// With rotation (D = 64: 2 values a lane): signs as xors of the sign bit,
// one butterfly inside the lane, five across lanes, then 1 / sqrt(64); in
// both kernels.
// CHECK-LABEL: gpu.module @fa_kernels
// CHECK: gpu.func @rotated_amax
// CHECK: vector.load
// CHECK: arith.xori
// CHECK: arith.addf
// CHECK: arith.subf
// CHECK-COUNT-10: gpu.shuffle xor
// CHECK: arith.constant 1.250000e-01 : f32
// CHECK: gpu.func @rotated(
// CHECK-SAME: fa.rotation_seed = 7 : i64
// CHECK: vector.load
// CHECK-COUNT-10: gpu.shuffle xor
// CHECK: nvvm.convert.f32x2.to.f8x2
func.func @rotated(%x: tensor<1x2x64x64xf16>) -> (tensor<1x2x64x64xf8E4M3FN>, tensor<1x1xf32>) {
  %q, %d = fa.quantize %x rotate(seed = 7) : tensor<1x2x64x64xf16> -> tensor<1x2x64x64xf8E4M3FN>, tensor<1x1xf32>
  return %q, %d : tensor<1x2x64x64xf8E4M3FN>, tensor<1x1xf32>
}

// -----

func.func @dynamic(%x: tensor<?x2x64x64xf16>) -> (tensor<?x2x64x64xf8E4M3FN>, tensor<?x1xf32>) {
  // expected-error @+1 {{the GPU quantization is built for static shapes}}
  %q, %d = fa.quantize %x : tensor<?x2x64x64xf16> -> tensor<?x2x64x64xf8E4M3FN>, tensor<?x1xf32>
  return %q, %d : tensor<?x2x64x64xf8E4M3FN>, tensor<?x1xf32>
}

// -----

func.func @narrow(%x: tensor<1x2x64x32xf16>) -> (tensor<1x2x64x32xf8E4M3FN>, tensor<1x2xf32>) {
  // expected-error @+1 {{the GPU quantization takes head dims of 64 to 256 in steps of 64}}
  %q, %d = fa.quantize %x : tensor<1x2x64x32xf16> -> tensor<1x2x64x32xf8E4M3FN>, tensor<1x2xf32>
  return %q, %d : tensor<1x2x64x32xf8E4M3FN>, tensor<1x2xf32>
}

// -----

func.func @more(%x: tensor<1x2x64x64xf16>) -> tensor<1x2x64x64xf8E4M3FN> {
  // expected-error @+1 {{a GPU quantization is a function of one argument whose body is the fa.quantize of it}}
  %q, %d = fa.quantize %x : tensor<1x2x64x64xf16> -> tensor<1x2x64x64xf8E4M3FN>, tensor<1x1xf32>
  %e = arith.constant 0 : index
  return %q : tensor<1x2x64x64xf8E4M3FN>
}

// -----

func.func @huge(%x: tensor<1x2x1073741824x64xf16>) -> (tensor<1x2x1073741824x64xf8E4M3FN>, tensor<1x2xf32>) {
  // expected-error @+1 {{the GPU quantization takes at most 2^31 - 1 elements}}
  %q, %d = fa.quantize %x : tensor<1x2x1073741824x64xf16> -> tensor<1x2x1073741824x64xf8E4M3FN>, tensor<1x2xf32>
  return %q, %d : tensor<1x2x1073741824x64xf8E4M3FN>, tensor<1x2xf32>
}
