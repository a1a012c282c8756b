// RUN: fa-opt %s -fa-tile-and-decompose="block-q=64 block-kv=32" | FileCheck %s
// RUN: fa-opt %s -fa-tile-and-decompose -fa-lower-to-host-llvm | FileCheck %s --check-prefix=LLVM

// After tiling and decomposition nothing is Nq x Nk (here 512 x 384) and no
// fa op is left; every score tensor is one [Br, Bc] = [64, 32] tile.

// CHECK-LABEL: func @forward
// CHECK-NOT: 512x384
// CHECK-NOT: fa.
// CHECK: scf.forall
// CHECK-NOT: 512x384
// CHECK: tensor<64x32xf32>
// CHECK-NOT: 512x384
// CHECK-NOT: fa.
// CHECK: return
func.func @forward(%q: tensor<1x4x512x64xbf16>, %k: tensor<1x2x384x64xbf16>, %v: tensor<1x2x384x64xbf16>)
    -> (tensor<1x4x512x64xbf16>, tensor<1x4x512xf32>) {
  %o, %lse = fa.attention %q, %k, %v causal softcap = 30.0
      : tensor<1x4x512x64xbf16>, tensor<1x2x384x64xbf16>, tensor<1x2x384x64xbf16>
      -> tensor<1x4x512x64xbf16>, tensor<1x4x512xf32>
  return %o, %lse : tensor<1x4x512x64xbf16>, tensor<1x4x512xf32>
}

// CHECK-LABEL: func @backward
// CHECK-NOT: 512x384
// CHECK-NOT: 384x512
// CHECK-NOT: fa.
// CHECK: tensor<64x32xf32>
// CHECK-NOT: 512x384
// CHECK-NOT: 384x512
// CHECK-NOT: fa.
// CHECK: return
func.func @backward(%q: tensor<1x4x512x64xbf16>, %k: tensor<1x2x384x64xbf16>, %v: tensor<1x2x384x64xbf16>,
                    %o: tensor<1x4x512x64xbf16>, %do: tensor<1x4x512x64xbf16>, %lse: tensor<1x4x512xf32>)
    -> (tensor<1x4x512x64xbf16>, tensor<1x2x384x64xbf16>, tensor<1x2x384x64xbf16>) {
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse window [100, 20]
      : tensor<1x4x512x64xbf16>, tensor<1x2x384x64xbf16>, tensor<1x2x384x64xbf16>,
        tensor<1x4x512x64xbf16>, tensor<1x4x512x64xbf16>, tensor<1x4x512xf32>
      -> tensor<1x4x512x64xbf16>, tensor<1x2x384x64xbf16>, tensor<1x2x384x64xbf16>
  return %dq, %dk, %dv : tensor<1x4x512x64xbf16>, tensor<1x2x384x64xbf16>, tensor<1x2x384x64xbf16>
}

// The host pipeline leaves only the LLVM dialect.
// LLVM-NOT: {{ (linalg|scf|tensor|memref|bufferization|arith|math|fa|affine)\.}}
// LLVM: llvm.func @forward
// LLVM-NOT: {{ (linalg|scf|tensor|memref|bufferization|arith|math|fa|affine)\.}}
// LLVM: llvm.func @backward
// LLVM-NOT: {{ (linalg|scf|tensor|memref|bufferization|arith|math|fa|affine)\.}}
