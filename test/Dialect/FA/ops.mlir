// RUN: fa-opt %s -split-input-file | fa-opt -split-input-file | FileCheck %s
// RUN: fa-opt %s -split-input-file -mlir-print-op-generic | fa-opt -split-input-file | FileCheck %s

// CHECK-LABEL: func @attention_plain
// CHECK: fa.attention %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x4x128x64xf32>, tensor<2x4x128x64xf32>, tensor<2x4x128x64xf32> -> tensor<2x4x128x64xf32>, tensor<2x4x128xf32>
func.func @attention_plain(%q: tensor<2x4x128x64xf32>, %k: tensor<2x4x128x64xf32>,
                           %v: tensor<2x4x128x64xf32>) -> tensor<2x4x128x64xf32> {
  %o, %lse = fa.attention %q, %k, %v
      : tensor<2x4x128x64xf32>, tensor<2x4x128x64xf32>, tensor<2x4x128x64xf32>
      -> tensor<2x4x128x64xf32>, tensor<2x4x128xf32>
  return %o : tensor<2x4x128x64xf32>
}

// -----

// CHECK-LABEL: func @attention_all_attrs
// CHECK: fa.attention %{{.*}}, %{{.*}}, %{{.*}} scale = 1.000000e-01 causal window [256, 0] softcap = 3.000000e+01 :
// CHECK-SAME: tensor<1x8x100x128xbf16>, tensor<1x2x300x128xbf16>, tensor<1x2x300x64xbf16> -> tensor<1x8x100x64xbf16>, tensor<1x8x100xf32>
func.func @attention_all_attrs(%q: tensor<1x8x100x128xbf16>, %k: tensor<1x2x300x128xbf16>,
                               %v: tensor<1x2x300x64xbf16>) -> tensor<1x8x100xf32> {
  %o, %lse = fa.attention %q, %k, %v scale = 0.1 causal window [256, 0] softcap = 30.0
      : tensor<1x8x100x128xbf16>, tensor<1x2x300x128xbf16>, tensor<1x2x300x64xbf16>
      -> tensor<1x8x100x64xbf16>, tensor<1x8x100xf32>
  return %lse : tensor<1x8x100xf32>
}

// -----

// CHECK-LABEL: func @attention_window_mqa_f16
// CHECK: fa.attention %{{.*}}, %{{.*}}, %{{.*}} window [-1, 32] :
func.func @attention_window_mqa_f16(%q: tensor<1x4x64x64xf16>, %k: tensor<1x1x64x64xf16>,
                                    %v: tensor<1x1x64x64xf16>) -> tensor<1x4x64x64xf16> {
  %o, %lse = fa.attention %q, %k, %v window [-1, 32]
      : tensor<1x4x64x64xf16>, tensor<1x1x64x64xf16>, tensor<1x1x64x64xf16>
      -> tensor<1x4x64x64xf16>, tensor<1x4x64xf32>
  return %o : tensor<1x4x64x64xf16>
}

// -----

// CHECK-LABEL: func @attention_fp8
// CHECK: fa.attention %{{.*}}, %{{.*}}, %{{.*}} descale(%{{.*}}, %{{.*}}, %{{.*}} : tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>) causal :
// CHECK-SAME: -> tensor<2x4x256x256xbf16>, tensor<2x4x256xf32>
func.func @attention_fp8(%q: tensor<2x4x256x256xf8E4M3FN>, %k: tensor<2x2x256x256xf8E4M3FN>,
                         %v: tensor<2x2x256x256xf8E4M3FN>, %qd: tensor<2x2xf32>,
                         %kd: tensor<2x2xf32>, %vd: tensor<2x2xf32>) -> tensor<2x4x256x256xbf16> {
  %o, %lse = fa.attention %q, %k, %v descale(%qd, %kd, %vd : tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>) causal
      : tensor<2x4x256x256xf8E4M3FN>, tensor<2x2x256x256xf8E4M3FN>, tensor<2x2x256x256xf8E4M3FN>
      -> tensor<2x4x256x256xbf16>, tensor<2x4x256xf32>
  return %o : tensor<2x4x256x256xbf16>
}

// -----

// CHECK-LABEL: func @attention_dynamic
// CHECK: fa.attention {{.*}} : tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16> -> tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>
func.func @attention_dynamic(%q: tensor<?x4x?x64xbf16>, %k: tensor<?x4x?x64xbf16>,
                             %v: tensor<?x4x?x64xbf16>) -> tensor<?x4x?x64xbf16> {
  %o, %lse = fa.attention %q, %k, %v
      : tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>
      -> tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>
  return %o : tensor<?x4x?x64xbf16>
}

// -----

// CHECK-LABEL: func @attention_grad
// CHECK: fa.attention_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} scale = 1.250000e-01 causal softcap = 5.000000e+01 :
// CHECK-SAME: -> tensor<1x4x128x64xbf16>, tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16>
func.func @attention_grad(%q: tensor<1x4x128x64xbf16>, %k: tensor<1x2x128x64xbf16>,
                          %v: tensor<1x2x128x64xbf16>, %o: tensor<1x4x128x64xbf16>,
                          %do: tensor<1x4x128x64xbf16>, %lse: tensor<1x4x128xf32>)
    -> tensor<1x2x128x64xbf16> {
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse scale = 0.125 causal softcap = 50.0
      : tensor<1x4x128x64xbf16>, tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16>,
        tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16>, tensor<1x4x128xf32>
      -> tensor<1x4x128x64xbf16>, tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16>
  return %dk : tensor<1x2x128x64xbf16>
}

// -----

// CHECK-LABEL: func @online_whole
// CHECK: fa.online_attention ins(%{{.*}}, %{{.*}}, %{{.*}} : tensor<1x4x64x32xf16>, tensor<1x2x64x32xf16>, tensor<1x2x64x16xf16>) outs(%{{.*}}, %{{.*}}, %{{.*}} : tensor<1x4x64x16xf32>, tensor<1x4x64xf32>, tensor<1x4x64xf32>) scale = 2.500000e-01 window [8, 8]
// CHECK: fa.normalize %{{.*}}, %{{.*}}, %{{.*}} : tensor<1x4x64x16xf32>, tensor<1x4x64xf32>, tensor<1x4x64xf32> -> tensor<1x4x64x16xf16>, tensor<1x4x64xf32>
func.func @online_whole(%q: tensor<1x4x64x32xf16>, %k: tensor<1x2x64x32xf16>, %v: tensor<1x2x64x16xf16>,
                        %acc: tensor<1x4x64x16xf32>, %m: tensor<1x4x64xf32>, %l: tensor<1x4x64xf32>)
    -> tensor<1x4x64x16xf16> {
  %a, %mm, %ll = fa.online_attention ins(%q, %k, %v : tensor<1x4x64x32xf16>, tensor<1x2x64x32xf16>, tensor<1x2x64x16xf16>)
                                     outs(%acc, %m, %l : tensor<1x4x64x16xf32>, tensor<1x4x64xf32>, tensor<1x4x64xf32>)
                                     scale = 0.25 window [8, 8]
  %o, %lse = fa.normalize %a, %mm, %ll : tensor<1x4x64x16xf32>, tensor<1x4x64xf32>, tensor<1x4x64xf32>
      -> tensor<1x4x64x16xf16>, tensor<1x4x64xf32>
  return %o : tensor<1x4x64x16xf16>
}

// -----

// CHECK-LABEL: func @online_tile
// CHECK: fa.online_attention ins({{.*}}) outs({{.*}}) tile(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) scale = 1.250000e-01 causal softcap = 2.000000e+01 unmasked
func.func @online_tile(%q: tensor<64x64xbf16>, %k: tensor<32x64xbf16>, %v: tensor<32x64xbf16>,
                       %acc: tensor<64x64xf32>, %m: tensor<64xf32>, %l: tensor<64xf32>,
                       %qs: index, %ks: index, %nq: index, %nk: index) -> tensor<64x64xf32> {
  %a, %mm, %ll = fa.online_attention ins(%q, %k, %v : tensor<64x64xbf16>, tensor<32x64xbf16>, tensor<32x64xbf16>)
                                     outs(%acc, %m, %l : tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>)
                                     tile(%qs, %ks, %nq, %nk) scale = 0.125 causal softcap = 20.0 unmasked
  return %a : tensor<64x64xf32>
}

// -----

// CHECK-LABEL: func @online_tile_keys_in_bounds
// CHECK: fa.online_attention ins({{.*}}) outs({{.*}}) tile(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) scale = 1.250000e-01 causal keys_in_bounds{{$}}
func.func @online_tile_keys_in_bounds(%q: tensor<64x64xbf16>, %k: tensor<32x64xbf16>, %v: tensor<32x64xbf16>,
                       %acc: tensor<64x64xf32>, %m: tensor<64xf32>, %l: tensor<64xf32>,
                       %qs: index, %ks: index, %nq: index, %nk: index) -> tensor<64x64xf32> {
  %a, %mm, %ll = fa.online_attention ins(%q, %k, %v : tensor<64x64xbf16>, tensor<32x64xbf16>, tensor<32x64xbf16>)
                                     outs(%acc, %m, %l : tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>)
                                     tile(%qs, %ks, %nq, %nk) scale = 0.125 causal keys_in_bounds
  return %a : tensor<64x64xf32>
}

// -----

// CHECK-LABEL: func @grad_tile
// CHECK: fa.attention_grad_tile ins({{.*}}) outs({{.*}}) tile(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) scale = 1.250000e-01 window [16, -1]
func.func @grad_tile(%q: tensor<64x64xf16>, %k: tensor<32x64xf16>, %v: tensor<32x48xf16>,
                     %do: tensor<64x48xf16>, %lse: tensor<64xf32>, %delta: tensor<64xf32>,
                     %dq: tensor<64x64xf32>, %dk: tensor<32x64xf32>, %dv: tensor<32x48xf32>,
                     %qs: index, %ks: index, %nq: index, %nk: index) -> tensor<32x48xf32> {
  %a, %b, %c = fa.attention_grad_tile
      ins(%q, %k, %v, %do, %lse, %delta : tensor<64x64xf16>, tensor<32x64xf16>, tensor<32x48xf16>, tensor<64x48xf16>, tensor<64xf32>, tensor<64xf32>)
      outs(%dq, %dk, %dv : tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x48xf32>)
      tile(%qs, %ks, %nq, %nk) scale = 0.125 window [16, -1]
  return %c : tensor<32x48xf32>
}

// -----

// CHECK-LABEL: func @grad_tile_unscaled
// CHECK: fa.attention_grad_tile ins({{.*}}) outs({{.*}}) tile(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) scale = 1.250000e-01 causal unmasked unscaled_grads
func.func @grad_tile_unscaled(%q: tensor<64x64xf16>, %lse: tensor<64xf32>, %acc: tensor<64x64xf32>, %i: index)
    -> tensor<64x64xf32> {
  %a, %b, %c = fa.attention_grad_tile
      ins(%q, %q, %q, %q, %lse, %lse : tensor<64x64xf16>, tensor<64x64xf16>, tensor<64x64xf16>, tensor<64x64xf16>, tensor<64xf32>, tensor<64xf32>)
      outs(%acc, %acc, %acc : tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>)
      tile(%i, %i, %i, %i) scale = 0.125 causal unmasked unscaled_grads
  return %a : tensor<64x64xf32>
}

// -----

// Packed sequences: batch-1 tensors, B + 1 offsets per side, the maxima.
// CHECK-LABEL: func @varlen
// CHECK: fa.attention %{{.*}}, %{{.*}}, %{{.*}} seqlens(%{{.*}}, %{{.*}} max %{{.*}}, %{{.*}} : tensor<?xi32>, tensor<?xi32>) causal :
// CHECK: fa.online_attention ins({{.*}}) outs({{.*}}) seqlens(%{{.*}}, %{{.*}} max %{{.*}}, %{{.*}} : tensor<5xi32>, tensor<5xi32>) scale = 1.250000e-01
func.func @varlen(%q: tensor<1x8x?x64xbf16>, %k: tensor<1x2x?x64xbf16>, %cq: tensor<?xi32>, %ck: tensor<?xi32>,
                  %mq: index, %mk: index, %c5: tensor<5xi32>, %acc: tensor<1x8x?x64xf32>, %m: tensor<1x8x?xf32>)
    -> (tensor<1x8x?x64xbf16>, tensor<1x8x?x64xf32>) {
  %o, %lse = fa.attention %q, %k, %k seqlens(%cq, %ck max %mq, %mk : tensor<?xi32>, tensor<?xi32>) causal
      : tensor<1x8x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>
      -> tensor<1x8x?x64xbf16>, tensor<1x8x?xf32>
  %a, %b, %c = fa.online_attention ins(%q, %k, %k : tensor<1x8x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>)
      outs(%acc, %m, %m : tensor<1x8x?x64xf32>, tensor<1x8x?xf32>, tensor<1x8x?xf32>)
      seqlens(%c5, %c5 max %mq, %mk : tensor<5xi32>, tensor<5xi32>) scale = 0.125
  return %o, %a : tensor<1x8x?x64xbf16>, tensor<1x8x?x64xf32>
}

// -----

// e4m3 per (batch, head group): plain, and rotated with a seed; dynamic
// batch and length.
// CHECK-LABEL: func @quantize
// CHECK: fa.quantize %{{.*}} : tensor<2x8x?x128xbf16> -> tensor<2x8x?x128xf8E4M3FN>, tensor<2x2xf32>
// CHECK: fa.quantize %{{.*}} rotate(seed = 7) : tensor<?x8x?x128xf16> -> tensor<?x8x?x128xf8E4M3FN>, tensor<?x8xf32>
func.func @quantize(%x: tensor<2x8x?x128xbf16>, %y: tensor<?x8x?x128xf16>)
    -> (tensor<2x8x?x128xf8E4M3FN>, tensor<2x2xf32>, tensor<?x8x?x128xf8E4M3FN>, tensor<?x8xf32>) {
  %a, %da = fa.quantize %x : tensor<2x8x?x128xbf16> -> tensor<2x8x?x128xf8E4M3FN>, tensor<2x2xf32>
  %b, %db = fa.quantize %y rotate(seed = 7) : tensor<?x8x?x128xf16> -> tensor<?x8x?x128xf8E4M3FN>, tensor<?x8xf32>
  return %a, %da, %b, %db : tensor<2x8x?x128xf8E4M3FN>, tensor<2x2xf32>, tensor<?x8x?x128xf8E4M3FN>, tensor<?x8xf32>
}
