// RUN: fa-opt %s -split-input-file -pass-pipeline='builtin.module(gpu.module(fa-convert-fagpu-to-nvvm),canonicalize,cse)' | FileCheck %s

// e4m3 register tiles are words: four bytes to an i32, as WGMMA's 8-bit A
// operand takes them (a byte vector was built and taken apart byte by byte
// by LLVM and NVPTX: 8 integer instructions a word of P). P rounded to
// e4m3 two registers at a time (16-bit pairs, two to a word), its pairs
// regrouped into the #fagpu.wgmma_a8_pairs words (the accumulator's registers 0-1 with 4-5,
// 2-3 with 6-7: columns 2t, 2t + 1, 8 + 2t, 9 + 2t of a row), each word one
// vector<2xi16>; carried by the loop as words; each k32 step's four words
// straight into the register-A wgmma. No byte anywhere.

#acc = #fagpu.wgmma_acc<warps = 4>
#pairs = #fagpu.wgmma_a8_pairs<warps = 4>
gpu.module @m {
  // CHECK-LABEL: gpu.func @pairs_in_words
  // CHECK-NOT: xi8>
  // CHECK: %[[P0:.*]] = nvvm.convert.f32x2.to.f8x2 {{.*}} : i16(f8E4M3FN)
  // CHECK-NEXT: %[[P1:.*]] = nvvm.convert.f32x2.to.f8x2
  // CHECK-NOT: xi8>
  // CHECK: vector.from_elements %[[P0]], %[[P1]] : vector<2xi16>
  // CHECK-NEXT: vector.bitcast %{{.*}} : vector<2xi16> to vector<1xi32>
  // CHECK: %[[WORDS:.*]] = vector.from_elements {{.*}} : vector<16xi32>
  // CHECK-NEXT: %[[PAIRS:.*]] = vector.bitcast %[[WORDS]] : vector<16xi32> to vector<32xi16>
  // CHECK-NEXT: %[[Q0:.*]] = vector.extract %[[PAIRS]][0]
  // CHECK-NEXT: %[[Q1:.*]] = vector.extract %[[PAIRS]][1]
  // CHECK-NEXT: %[[Q2:.*]] = vector.extract %[[PAIRS]][2]
  // CHECK-NOT: xi8>
  // CHECK: vector.from_elements %[[Q0]], %[[Q2]] : vector<2xi16>
  // CHECK-NOT: xi8>
  // CHECK: %[[W:.*]] = vector.from_elements {{.*}} : vector<16xi32>
  // CHECK: scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}, %[[A:.*]] = %[[W]]) -> (vector<64xf32>, vector<16xi32>)
  // CHECK: %[[A0:.*]] = vector.extract %[[A]][0] : i32 from vector<16xi32>
  // CHECK: %[[A3:.*]] = vector.extract %[[A]][3] : i32 from vector<16xi32>
  // CHECK: llvm.inline_asm {{.*}}wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 {{.*}}, %[[A0]], %{{.*}}, %{{.*}}, %[[A3]],
  // CHECK-NOT: xi8>
  // CHECK: scf.yield %{{.*}}, %{{.*}} : vector<64xf32>, vector<16xi32>
  gpu.func @pairs_in_words(%x: f32, %n: index) kernel {
    %v = fagpu.alloc_shared : !fagpu.smem<128x128xf8E4M3FN, swizzle = 128>
    %s = tensor.splat %x : tensor<64x128xf32, #acc>
    %z = arith.constant dense<0.0> : tensor<64x128xf32, #acc>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %p8 = arith.truncf %s : tensor<64x128xf32, #acc> to tensor<64x128xf8E4M3FN, #acc>
    %p0 = fagpu.convert_layout %p8 : tensor<64x128xf8E4M3FN, #acc> -> tensor<64x128xf8E4M3FN, #pairs>
    %r:2 = scf.for %i = %c0 to %n step %c1 iter_args(%o = %z, %p = %p0) -> (tensor<64x128xf32, #acc>, tensor<64x128xf8E4M3FN, #pairs>) {
      %o2 = fagpu.mma %p, %v, %o transpose_b : tensor<64x128xf8E4M3FN, #pairs>, !fagpu.smem<128x128xf8E4M3FN, swizzle = 128>, tensor<64x128xf32, #acc> -> tensor<64x128xf32, #acc>
      %q8 = arith.truncf %o2 : tensor<64x128xf32, #acc> to tensor<64x128xf8E4M3FN, #acc>
      %q = fagpu.convert_layout %q8 : tensor<64x128xf8E4M3FN, #acc> -> tensor<64x128xf8E4M3FN, #pairs>
      scf.yield %o2, %q : tensor<64x128xf32, #acc>, tensor<64x128xf8E4M3FN, #pairs>
    }
    gpu.return
  }
}

// -----

// #fagpu.wgmma_a8 (V's keys in order): each thread's words of pairs
// (columns 2t, 2t + 1 with 8 + 2t, 9 + 2t) trade halves across the quad
// (indexed shuffles); still words, no bytes.

#acc = #fagpu.wgmma_acc<warps = 4>
#a8 = #fagpu.wgmma_a8<warps = 4>
gpu.module @m {
  // CHECK-LABEL: gpu.func @a8_in_words
  // CHECK-NOT: xi8>
  // CHECK: vector.bitcast %{{.*}} : vector<16xi32> to vector<32xi16>
  // CHECK: gpu.shuffle idx
  // CHECK-NOT: xi8>
  // CHECK: llvm.inline_asm {{.*}}wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3
  // CHECK-NOT: xi8>
  // CHECK: gpu.return
  gpu.func @a8_in_words(%x: f32) kernel {
    %v = fagpu.alloc_shared : !fagpu.smem<128x128xf8E4M3FN, swizzle = 128>
    %s = tensor.splat %x : tensor<64x128xf32, #acc>
    %p8 = arith.truncf %s : tensor<64x128xf32, #acc> to tensor<64x128xf8E4M3FN, #acc>
    %p = fagpu.convert_layout %p8 : tensor<64x128xf8E4M3FN, #acc> -> tensor<64x128xf8E4M3FN, #a8>
    %z = arith.constant dense<0.0> : tensor<64x128xf32, #acc>
    %o = fagpu.mma %p, %v, %z transpose_b : tensor<64x128xf8E4M3FN, #a8>, !fagpu.smem<128x128xf8E4M3FN, swizzle = 128>, tensor<64x128xf32, #acc> -> tensor<64x128xf32, #acc>
    gpu.return
  }
}
