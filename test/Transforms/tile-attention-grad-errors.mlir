// RUN: not fa-opt %s -fa-tile-attention-grad="block-q=24" 2>&1 | FileCheck %s --check-prefix=GRAD
// Block sizes are bounded before any arithmetic on them (2^62).
// RUN: not fa-opt %s -fa-tile-attention-grad="block-q=4611686018427387904" 2>&1 | FileCheck %s --check-prefix=HUGE-GRAD
// The backward's blocks are checked on the backward they would tile: a
// module without one (a forward, tiled with the forward's blocks by the
// same pipeline) is left alone.
// RUN: sed -n '/^func.func @forward/,/^}/p' %s | fa-opt -fa-tile-and-decompose="block-q=192 block-kv=176" | FileCheck %s --check-prefix=FWD

// GRAD: :[[@LINE+8]]:{{[0-9]+}}: error: fa-tile-attention-grad: option block-q must be a positive power of two, got 24
// HUGE-GRAD: :[[@LINE+7]]:{{[0-9]+}}: error: fa-tile-attention-grad: option block-q must be at most 1024, got 4611686018427387904
// FWD-LABEL: func.func @forward
// FWD: scf.forall
// FWD-NOT: fa.
func.func @grad(%q: tensor<1x2x128x32xf16>, %k: tensor<1x2x128x32xf16>, %v: tensor<1x2x128x16xf16>,
                %o: tensor<1x2x128x16xf16>, %do: tensor<1x2x128x16xf16>, %lse: tensor<1x2x128xf32>)
    -> (tensor<1x2x128x32xf16>, tensor<1x2x128x32xf16>, tensor<1x2x128x16xf16>) {
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse causal
      : tensor<1x2x128x32xf16>, tensor<1x2x128x32xf16>, tensor<1x2x128x16xf16>,
        tensor<1x2x128x16xf16>, tensor<1x2x128x16xf16>, tensor<1x2x128xf32>
      -> tensor<1x2x128x32xf16>, tensor<1x2x128x32xf16>, tensor<1x2x128x16xf16>
  return %dq, %dk, %dv : tensor<1x2x128x32xf16>, tensor<1x2x128x32xf16>, tensor<1x2x128x16xf16>
}

func.func @forward(%q: tensor<1x2x1000x64xf32>) -> tensor<1x2x1000x64xf32> {
  %o, %lse = fa.attention %q, %q, %q causal
      : tensor<1x2x1000x64xf32>, tensor<1x2x1000x64xf32>, tensor<1x2x1000x64xf32>
      -> tensor<1x2x1000x64xf32>, tensor<1x2x1000xf32>
  return %o : tensor<1x2x1000x64xf32>
}
