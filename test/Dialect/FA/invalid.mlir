// RUN: fa-opt %s -split-input-file -verify-diagnostics
// RUN: not fa-opt %s -split-input-file 2>&1 | FileCheck %s --check-prefix=EXIT
// EXIT: error:

// Every verifier branch of the fa dialect, with the message it gives.

func.func @f(%q: tensor<4x128x64xbf16>, %k: tensor<1x2x128x64xbf16>, %v: tensor<1x2x128x64xbf16>) {
  // expected-error @+1 {{query must have rank 4 [B, Hq, Nq, D], got 'tensor<4x128x64xbf16>'}}
  %o, %lse = fa.attention %q, %k, %v  : tensor<4x128x64xbf16>, tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16> -> tensor<1x4x128x64xbf16>, tensor<1x4x128xf32>
  return
}

// -----

func.func @f(%q: tensor<1x4x128x64xbf16>, %k: tensor<2x2x128x64xbf16>, %v: tensor<1x2x128x64xbf16>) {
  // expected-error @+1 {{key dim 0 (B) is 2, expected 1 to match query dim 0}}
  %o, %lse = fa.attention %q, %k, %v  : tensor<1x4x128x64xbf16>, tensor<2x2x128x64xbf16>, tensor<1x2x128x64xbf16> -> tensor<1x4x128x64xbf16>, tensor<1x4x128xf32>
  return
}

// -----

func.func @f(%q: tensor<1x4x128x64xbf16>, %k: tensor<1x2x128x32xbf16>, %v: tensor<1x2x128x64xbf16>) {
  // expected-error @+1 {{key dim 3 (D) is 32, expected 64 to match query dim 3}}
  %o, %lse = fa.attention %q, %k, %v  : tensor<1x4x128x64xbf16>, tensor<1x2x128x32xbf16>, tensor<1x2x128x64xbf16> -> tensor<1x4x128x64xbf16>, tensor<1x4x128xf32>
  return
}

// -----

func.func @f(%q: tensor<1x4x128x64xbf16>, %k: tensor<1x2x128x64xbf16>, %v: tensor<1x2x100x64xbf16>) {
  // expected-error @+1 {{value dim 2 (Nk) is 100, expected 128 to match key dim 2}}
  %o, %lse = fa.attention %q, %k, %v  : tensor<1x4x128x64xbf16>, tensor<1x2x128x64xbf16>, tensor<1x2x100x64xbf16> -> tensor<1x4x128x64xbf16>, tensor<1x4x128xf32>
  return
}

// -----

func.func @f(%q: tensor<1x4x128x64xbf16>, %k: tensor<1x2x128x64xbf16>, %v: tensor<1x2x128x32xbf16>) {
  // expected-error @+1 {{output dim 3 (Dv) is 64, expected 32 to match value dim 3}}
  %o, %lse = fa.attention %q, %k, %v  : tensor<1x4x128x64xbf16>, tensor<1x2x128x64xbf16>, tensor<1x2x128x32xbf16> -> tensor<1x4x128x64xbf16>, tensor<1x4x128xf32>
  return
}

// -----

func.func @f(%q: tensor<1x4x128x64xbf16>, %k: tensor<1x2x128x64xbf16>, %v: tensor<1x2x128x64xbf16>) {
  // expected-error @+1 {{lse dim 2 (Nq) is 64, expected 128 to match query dim 2}}
  %o, %lse = fa.attention %q, %k, %v  : tensor<1x4x128x64xbf16>, tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16> -> tensor<1x4x128x64xbf16>, tensor<1x4x64xf32>
  return
}

// -----

func.func @f(%q: tensor<1x6x128x64xbf16>, %k: tensor<1x4x128x64xbf16>, %v: tensor<1x4x128x64xbf16>) {
  // expected-error @+1 {{query heads (Hq = 6) must be a multiple of key/value heads (Hkv = 4) for GQA/MQA}}
  %o, %lse = fa.attention %q, %k, %v  : tensor<1x6x128x64xbf16>, tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16> -> tensor<1x6x128x64xbf16>, tensor<1x6x128xf32>
  return
}

// -----

func.func @f(%q: tensor<1x4x128x64xbf16>, %k: tensor<1x2x128x64xf16>, %v: tensor<1x2x128x64xbf16>) {
  // expected-error @+1 {{key element type 'f16' differs from query element type 'bf16'; mixed element types are not supported}}
  %o, %lse = fa.attention %q, %k, %v  : tensor<1x4x128x64xbf16>, tensor<1x2x128x64xf16>, tensor<1x2x128x64xbf16> -> tensor<1x4x128x64xbf16>, tensor<1x4x128xf32>
  return
}

// -----

func.func @f(%q: tensor<1x4x128x64xbf16>, %k: tensor<1x2x128x64xbf16>, %v: tensor<1x2x128x64xbf16>) {
  // expected-error @+1 {{output element type 'f16' differs from query element type 'bf16'}}
  %o, %lse = fa.attention %q, %k, %v  : tensor<1x4x128x64xbf16>, tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16> -> tensor<1x4x128x64xf16>, tensor<1x4x128xf32>
  return
}

// -----

func.func @f(%q: tensor<1x4x128x64xf8E4M3FN>, %k: tensor<1x2x128x64xf8E4M3FN>, %v: tensor<1x2x128x64xf8E4M3FN>) {
  // expected-error @+1 {{FP8 operands need descale(%q_descale, %k_descale, %v_descale), got 0 descale operands}}
  %o, %lse = fa.attention %q, %k, %v  : tensor<1x4x128x64xf8E4M3FN>, tensor<1x2x128x64xf8E4M3FN>, tensor<1x2x128x64xf8E4M3FN> -> tensor<1x4x128x64xbf16>, tensor<1x4x128xf32>
  return
}

// -----

func.func @f(%q: tensor<1x4x128x64xf8E4M3FN>, %k: tensor<1x2x128x64xf8E4M3FN>, %v: tensor<1x2x128x64xf8E4M3FN>, %d0: tensor<1x2xf32>, %d1: tensor<1x2xf32>, %d2: tensor<1x2xf32>) {
  // expected-error @+1 {{FP8 attention produces a bf16 or f16 output, got 'f8E4M3FN'}}
  %o, %lse = fa.attention %q, %k, %v descale(%d0, %d1, %d2 : tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>)  : tensor<1x4x128x64xf8E4M3FN>, tensor<1x2x128x64xf8E4M3FN>, tensor<1x2x128x64xf8E4M3FN> -> tensor<1x4x128x64xf8E4M3FN>, tensor<1x4x128xf32>
  return
}

// -----

func.func @f(%q: tensor<1x4x128x64xf8E4M3FN>, %k: tensor<1x2x128x64xf8E4M3FN>, %v: tensor<1x2x128x64xf8E4M3FN>, %d0: tensor<1x2xf32>, %d1: tensor<1x3xf32>, %d2: tensor<1x2xf32>) {
  // expected-error @+1 {{descale #1 dim 1 (Hkv) is 3, expected 2 to match key dim 1}}
  %o, %lse = fa.attention %q, %k, %v descale(%d0, %d1, %d2 : tensor<1x2xf32>, tensor<1x3xf32>, tensor<1x2xf32>)  : tensor<1x4x128x64xf8E4M3FN>, tensor<1x2x128x64xf8E4M3FN>, tensor<1x2x128x64xf8E4M3FN> -> tensor<1x4x128x64xbf16>, tensor<1x4x128xf32>
  return
}

// -----

func.func @f(%q: tensor<1x4x128x64xbf16>, %k: tensor<1x2x128x64xbf16>, %v: tensor<1x2x128x64xbf16>, %d0: tensor<1x2xf32>, %d1: tensor<1x2xf32>, %d2: tensor<1x2xf32>) {
  // expected-error @+1 {{descale operands are only meaningful for FP8 operands, got 'bf16'}}
  %o, %lse = fa.attention %q, %k, %v descale(%d0, %d1, %d2 : tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>)  : tensor<1x4x128x64xbf16>, tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16> -> tensor<1x4x128x64xbf16>, tensor<1x4x128xf32>
  return
}

// -----

func.func @f(%q: tensor<1x4x128x64xbf16>, %k: tensor<1x2x128x64xbf16>, %v: tensor<1x2x128x64xbf16>) {
  // expected-error @+1 {{scale must be a positive finite number, got 0}}
  %o, %lse = fa.attention %q, %k, %v scale = 0.0  : tensor<1x4x128x64xbf16>, tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16> -> tensor<1x4x128x64xbf16>, tensor<1x4x128xf32>
  return
}

// -----

func.func @f(%q: tensor<1x4x128x64xbf16>, %k: tensor<1x2x128x64xbf16>, %v: tensor<1x2x128x64xbf16>) {
  // expected-error @+1 {{softcap must be a positive finite number, got -5}}
  %o, %lse = fa.attention %q, %k, %v softcap = -5.0  : tensor<1x4x128x64xbf16>, tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16> -> tensor<1x4x128x64xbf16>, tensor<1x4x128xf32>
  return
}

// -----

func.func @f(%q: tensor<1x4x128x64xbf16>, %k: tensor<1x2x128x64xbf16>, %v: tensor<1x2x128x64xbf16>) {
  // expected-error @+1 {{window must be [left, right], got 3 values}}
  %o, %lse = fa.attention %q, %k, %v window [1, 2, 3]  : tensor<1x4x128x64xbf16>, tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16> -> tensor<1x4x128x64xbf16>, tensor<1x4x128xf32>
  return
}

// -----

func.func @f(%q: tensor<1x4x128x64xbf16>, %k: tensor<1x2x128x64xbf16>, %v: tensor<1x2x128x64xbf16>) {
  // expected-error @+1 {{window bounds must be >= 0, or -1 for unbounded, got [-2, 4]}}
  %o, %lse = fa.attention %q, %k, %v window [-2, 4]  : tensor<1x4x128x64xbf16>, tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16> -> tensor<1x4x128x64xbf16>, tensor<1x4x128xf32>
  return
}

// -----

func.func @f(%q: tensor<1x4x128x64xbf16>, %k: tensor<1x2x128x64xbf16>, %v: tensor<1x2x128x64xbf16>) {
  // expected-error @+1 {{window bounds must be at most 2147483647 (a wider side is unbounded: use -1), got [9223372036854775807, 0]}}
  %o, %lse = fa.attention %q, %k, %v window [9223372036854775807, 0]  : tensor<1x4x128x64xbf16>, tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16> -> tensor<1x4x128x64xbf16>, tensor<1x4x128xf32>
  return
}

// -----

func.func @f(%q: tensor<1x4x128x64xbf16>, %k: tensor<1x2x128x64xbf16>, %v: tensor<1x2x128x64xbf16>) {
  // expected-error @+1 {{window [-1, -1] is unbounded on both sides; drop the window}}
  %o, %lse = fa.attention %q, %k, %v window [-1, -1]  : tensor<1x4x128x64xbf16>, tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16> -> tensor<1x4x128x64xbf16>, tensor<1x4x128xf32>
  return
}

// -----

func.func @f(%q: tensor<1x4x128x64xbf16>, %k: tensor<1x2x128x64xbf16>, %v: tensor<1x2x128x64xbf16>) {
  // expected-error @+1 {{window [64, 8] is meaningless on a causal op}}
  %o, %lse = fa.attention %q, %k, %v causal window [64, 8]  : tensor<1x4x128x64xbf16>, tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16> -> tensor<1x4x128x64xbf16>, tensor<1x4x128xf32>
  return
}

// -----

func.func @f(%q: tensor<1x4x128x64xbf16>, %k: tensor<1x2x128x64xbf16>, %v: tensor<1x2x128x64xbf16>) {
  // expected-error @+1 {{window [-1, 0] is meaningless on a causal op}}
  %o, %lse = fa.attention %q, %k, %v causal window [-1, 0]  : tensor<1x4x128x64xbf16>, tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16> -> tensor<1x4x128x64xbf16>, tensor<1x4x128xf32>
  return
}

// -----

func.func @f(%q: tensor<1x4x128x64xi32>, %k: tensor<1x2x128x64xi32>, %v: tensor<1x2x128x64xi32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type or f8E4M3FN type values}}
  %o, %lse = fa.attention %q, %k, %v  : tensor<1x4x128x64xi32>, tensor<1x2x128x64xi32>, tensor<1x2x128x64xi32> -> tensor<1x4x128x64xi32>, tensor<1x4x128xf32>
  return
}

// -----

func.func @f(%q: tensor<1x4x128x64xbf16>, %k: tensor<1x2x128x64xbf16>, %v: tensor<1x2x128x64xbf16>, %o: tensor<1x4x128x64xbf16>, %do: tensor<1x4x128x64xbf16>, %lse: tensor<1x4x128xf32>) {
  // expected-error @+1 {{grad_key dim 2 (Nk) is 64, expected 128 to match key dim 2}}
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse : tensor<1x4x128x64xbf16>, tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16>, tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16>, tensor<1x4x128xf32> -> tensor<1x4x128x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x128x64xbf16>
  return
}

// -----

func.func @f(%q: tensor<1x4x128x64xbf16>, %k: tensor<1x2x128x64xbf16>, %v: tensor<1x2x128x64xbf16>, %o: tensor<1x4x128x64xbf16>, %do: tensor<1x4x128x64xbf16>, %lse: tensor<1x4x128xf32>, %dlse: tensor<1x4x64xf32>) {
  // expected-error @+1 {{grad_lse dim 2 (Nq) is 64, expected 128 to match query dim 2}}
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse grad_lse(%dlse : tensor<1x4x64xf32>) : tensor<1x4x128x64xbf16>, tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16>, tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16>, tensor<1x4x128xf32> -> tensor<1x4x128x64xbf16>, tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16>
  return
}

// -----

func.func @f(%q: tensor<1x4x128x64xbf16>, %k: tensor<1x2x128x64xbf16>, %v: tensor<1x2x128x64xbf16>, %o: tensor<1x4x128x64xbf16>, %do: tensor<1x4x128x64xbf16>, %lse: tensor<1x4x128xf32>) {
  // expected-error @+1 {{grad_query element type 'f16' differs from query element type 'bf16'}}
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse : tensor<1x4x128x64xbf16>, tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16>, tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16>, tensor<1x4x128xf32> -> tensor<1x4x128x64xf16>, tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16>
  return
}

// -----

func.func @f(%q: tensor<1x4x128x64xf8E4M3FN>, %k: tensor<1x2x128x64xf8E4M3FN>, %v: tensor<1x2x128x64xf8E4M3FN>, %o: tensor<1x4x128x64xf8E4M3FN>, %do: tensor<1x4x128x64xf8E4M3FN>, %lse: tensor<1x4x128xf32>) {
  // expected-error @+1 {{FP8 backward is not supported; run the backward in bf16 or f16}}
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse : tensor<1x4x128x64xf8E4M3FN>, tensor<1x2x128x64xf8E4M3FN>, tensor<1x2x128x64xf8E4M3FN>, tensor<1x4x128x64xf8E4M3FN>, tensor<1x4x128x64xf8E4M3FN>, tensor<1x4x128xf32> -> tensor<1x4x128x64xf8E4M3FN>, tensor<1x2x128x64xf8E4M3FN>, tensor<1x2x128x64xf8E4M3FN>
  return
}

// -----

func.func @f(%q: tensor<1x4x128x64xbf16>, %k: tensor<1x3x128x64xbf16>, %v: tensor<1x3x128x64xbf16>, %o: tensor<1x4x128x64xbf16>, %do: tensor<1x4x128x64xbf16>, %lse: tensor<1x4x128xf32>) {
  // expected-error @+1 {{query heads (Hq = 4) must be a multiple of key/value heads (Hkv = 3)}}
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse : tensor<1x4x128x64xbf16>, tensor<1x3x128x64xbf16>, tensor<1x3x128x64xbf16>, tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16>, tensor<1x4x128xf32> -> tensor<1x4x128x64xbf16>, tensor<1x3x128x64xbf16>, tensor<1x3x128x64xbf16>
  return
}

// -----

func.func @f(%q: tensor<1x4x128x64xbf16>, %k: tensor<1x2x128x64xbf16>, %v: tensor<1x2x128x64xbf16>, %o: tensor<1x4x128x64xbf16>, %do: tensor<1x4x128x64xbf16>, %lse: tensor<1x4x128xf32>) {
  // expected-error @+1 {{window [4, 4] is meaningless on a causal op}}
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse causal window [4, 4] : tensor<1x4x128x64xbf16>, tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16>, tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16>, tensor<1x4x128xf32> -> tensor<1x4x128x64xbf16>, tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16>
  return
}

// -----

func.func @f(%q: tensor<4x64x64xf16>, %k: tensor<4x64x64xf16>, %v: tensor<4x64x64xf16>, %acc: tensor<4x64x64xf32>, %m: tensor<4x64xf32>, %l: tensor<4x64xf32>, %i: index) {
  // expected-error @+1 {{query must have rank 4 [B, Hq, Nq, D] (whole tensors) or rank 2 [Br, D] (a tile), got 'tensor<4x64x64xf16>'}}
  %a, %b, %c = fa.online_attention ins(%q, %k, %v : tensor<4x64x64xf16>, tensor<4x64x64xf16>, tensor<4x64x64xf16>) outs(%acc, %m, %l : tensor<4x64x64xf32>, tensor<4x64xf32>, tensor<4x64xf32>) scale = 0.125
  return
}

// -----

func.func @f(%q: tensor<64x64xf16>, %k: tensor<32x64xf16>, %v: tensor<32x64xf16>, %acc: tensor<64x64xf32>, %m: tensor<64xf32>, %l: tensor<64xf32>, %i: index) {
  // expected-error @+1 {{a tile needs tile(%q_start, %kv_start, %q_len, %kv_len), got 0 index operands}}
  %a, %b, %c = fa.online_attention ins(%q, %k, %v : tensor<64x64xf16>, tensor<32x64xf16>, tensor<32x64xf16>) outs(%acc, %m, %l : tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>) scale = 0.125
  return
}

// -----

func.func @f(%q: tensor<1x2x64x64xf16>, %k: tensor<1x2x64x64xf16>, %v: tensor<1x2x64x64xf16>, %acc: tensor<1x2x64x64xf32>, %m: tensor<1x2x64xf32>, %l: tensor<1x2x64xf32>, %i: index) {
  // expected-error @+1 {{whole-tensor operands take no tile position}}
  %a, %b, %c = fa.online_attention ins(%q, %k, %v : tensor<1x2x64x64xf16>, tensor<1x2x64x64xf16>, tensor<1x2x64x64xf16>) outs(%acc, %m, %l : tensor<1x2x64x64xf32>, tensor<1x2x64xf32>, tensor<1x2x64xf32>) tile(%i, %i, %i, %i) scale = 0.125
  return
}

// -----

func.func @f(%q: tensor<1x2x64x64xf16>, %k: tensor<1x2x64x64xf16>, %v: tensor<1x2x64x64xf16>, %acc: tensor<1x2x64x64xf32>, %m: tensor<1x2x64xf32>, %l: tensor<1x2x64xf32>, %i: index) {
  // expected-error @+1 {{'unmasked' is only meaningful on a tile}}
  %a, %b, %c = fa.online_attention ins(%q, %k, %v : tensor<1x2x64x64xf16>, tensor<1x2x64x64xf16>, tensor<1x2x64x64xf16>) outs(%acc, %m, %l : tensor<1x2x64x64xf32>, tensor<1x2x64xf32>, tensor<1x2x64xf32>) scale = 0.125 unmasked
  return
}

// -----

func.func @f(%q: tensor<1x2x64x64xf16>, %k: tensor<1x2x64x64xf16>, %v: tensor<1x2x64x64xf16>, %acc: tensor<1x2x64x64xf32>, %m: tensor<1x2x64xf32>, %l: tensor<1x2x64xf32>) {
  // expected-error @+1 {{'keys_in_bounds' is only meaningful on a tile}}
  %a, %b, %c = fa.online_attention ins(%q, %k, %v : tensor<1x2x64x64xf16>, tensor<1x2x64x64xf16>, tensor<1x2x64x64xf16>) outs(%acc, %m, %l : tensor<1x2x64x64xf32>, tensor<1x2x64xf32>, tensor<1x2x64xf32>) scale = 0.125 causal keys_in_bounds
  return
}

// -----

func.func @f(%q: tensor<1x2x64x64xf16>, %k: tensor<1x2x64x64xf16>, %v: tensor<1x2x64x64xf16>, %acc: tensor<1x2x64x64xf32>, %m: tensor<1x2x64xf32>, %l: tensor<1x2x64xf32>) {
  // expected-error @+1 {{'rescale_threshold' is only meaningful on a tile}}
  %a, %b, %c = fa.online_attention ins(%q, %k, %v : tensor<1x2x64x64xf16>, tensor<1x2x64x64xf16>, tensor<1x2x64x64xf16>) outs(%acc, %m, %l : tensor<1x2x64x64xf32>, tensor<1x2x64xf32>, tensor<1x2x64xf32>) scale = 0.125 rescale_threshold = 8.0
  return
}

// -----

func.func @f(%q: tensor<64x64xf16>, %k: tensor<64x64xf16>, %v: tensor<64x64xf16>, %acc: tensor<64x64xf32>, %m: tensor<64xf32>, %l: tensor<64xf32>, %i: index) {
  // expected-error @+1 {{'rescale_threshold' must be finite and at least 0, got -1}}
  %a, %b, %c = fa.online_attention ins(%q, %k, %v : tensor<64x64xf16>, tensor<64x64xf16>, tensor<64x64xf16>) outs(%acc, %m, %l : tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>) tile(%i, %i, %i, %i) scale = 0.125 rescale_threshold = -1.0
  return
}

// -----

func.func @f(%q: tensor<64x64xf16>, %k: tensor<64x64xf16>, %v: tensor<64x64xf16>, %acc: tensor<64x64xf32>, %m: tensor<64xf32>, %l: tensor<64xf32>, %i: index) {
  // expected-error @+1 {{'rescale_threshold' = 17 lets P reach 2^17, past the largest 'f16' (65504)}}
  %a, %b, %c = fa.online_attention ins(%q, %k, %v : tensor<64x64xf16>, tensor<64x64xf16>, tensor<64x64xf16>) outs(%acc, %m, %l : tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>) tile(%i, %i, %i, %i) scale = 0.125 rescale_threshold = 17.0
  return
}

// -----

func.func @f(%q: tensor<64x128xf8E4M3FN>, %k: tensor<64x128xf8E4M3FN>, %v: tensor<64x128xf8E4M3FN>, %acc: tensor<64x128xf32>, %m: tensor<64xf32>, %l: tensor<64xf32>, %d: f32, %i: index) {
  // expected-error @+1 {{'rescale_threshold' = 9 lets P reach 2^9, past the largest 'f8E4M3FN' (448)}}
  %a, %b, %c = fa.online_attention ins(%q, %k, %v : tensor<64x128xf8E4M3FN>, tensor<64x128xf8E4M3FN>, tensor<64x128xf8E4M3FN>) outs(%acc, %m, %l : tensor<64x128xf32>, tensor<64xf32>, tensor<64xf32>) descale(%d, %d : f32, f32) tile(%i, %i, %i, %i) scale = 0.125 rescale_threshold = 9.0
  return
}

// -----

func.func @f(%q: tensor<64x64xf16>, %k: tensor<64x64xf16>, %v: tensor<64x64xf16>, %acc: tensor<64x64xf32>, %m: tensor<64xf32>, %l: tensor<64xf32>, %i: index) {
  // expected-error @+1 {{'keys_in_bounds' is implied by 'unmasked'; give one of them}}
  %a, %b, %c = fa.online_attention ins(%q, %k, %v : tensor<64x64xf16>, tensor<64x64xf16>, tensor<64x64xf16>) outs(%acc, %m, %l : tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>) tile(%i, %i, %i, %i) scale = 0.125 causal unmasked keys_in_bounds
  return
}

// -----

func.func @f(%q: tensor<64x64xf16>, %k: tensor<32x64xf16>, %v: tensor<32x64xf16>, %acc: tensor<64x64xf32>, %m: tensor<64xf32>, %l: tensor<64xf32>, %i: index) {
  // expected-error @+1 {{requires 'scale': the online form carries the resolved softmax scale}}
  %a, %b, %c = fa.online_attention ins(%q, %k, %v : tensor<64x64xf16>, tensor<32x64xf16>, tensor<32x64xf16>) outs(%acc, %m, %l : tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>) tile(%i, %i, %i, %i) causal
  return
}

// -----

func.func @f(%q: tensor<64x64xf16>, %k: tensor<32x64xf16>, %v: tensor<32x16xf16>, %acc: tensor<64x64xf32>, %m: tensor<64xf32>, %l: tensor<64xf32>, %i: index) {
  // expected-error @+1 {{acc dim 1 (Dv) is 64, expected 16 to match value dim 1}}
  %a, %b, %c = fa.online_attention ins(%q, %k, %v : tensor<64x64xf16>, tensor<32x64xf16>, tensor<32x16xf16>) outs(%acc, %m, %l : tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>) tile(%i, %i, %i, %i) scale = 0.125
  return
}

// -----

func.func @f(%q: tensor<64x64xf16>, %k: tensor<32x64xf16>, %v: tensor<32x64xf16>, %acc: tensor<64x64xf32>, %m: tensor<32xf32>, %l: tensor<64xf32>, %i: index) {
  // expected-error @+1 {{max dim 0 (Br) is 32, expected 64 to match query dim 0}}
  %a, %b, %c = fa.online_attention ins(%q, %k, %v : tensor<64x64xf16>, tensor<32x64xf16>, tensor<32x64xf16>) outs(%acc, %m, %l : tensor<64x64xf32>, tensor<32xf32>, tensor<64xf32>) tile(%i, %i, %i, %i) scale = 0.125
  return
}

// -----

func.func @f(%acc: tensor<4x64x64xf32>, %m: tensor<4x64xf32>, %l: tensor<4x64xf32>) {
  // expected-error @+1 {{acc must have rank 4 [B, H, N, Dv] or rank 2 [Br, Dv], got 'tensor<4x64x64xf32>'}}
  %o, %lse = fa.normalize %acc, %m, %l : tensor<4x64x64xf32>, tensor<4x64xf32>, tensor<4x64xf32> -> tensor<4x64x64xf16>, tensor<4x64xf32>
  return
}

// -----

func.func @f(%acc: tensor<64x64xf32>, %m: tensor<64xf32>, %l: tensor<64xf32>) {
  // expected-error @+1 {{output must be f32, f16 or bf16, got 'f8E4M3FN'}}
  %o, %lse = fa.normalize %acc, %m, %l : tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32> -> tensor<64x64xf8E4M3FN>, tensor<64xf32>
  return
}

// -----

func.func @f(%acc: tensor<64x64xf32>, %m: tensor<64xf32>, %l: tensor<64xf32>) {
  // expected-error @+1 {{lse dim 0 (N) is 32, expected 64 to match acc dim 0}}
  %o, %lse = fa.normalize %acc, %m, %l : tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32> -> tensor<64x64xbf16>, tensor<32xf32>
  return
}

// -----

func.func @f(%q: tensor<64x64xf16>, %k: tensor<32x64xf16>, %v: tensor<32x64xf16>, %do: tensor<64x64xf16>, %lse: tensor<64xf32>, %delta: tensor<32xf32>, %dq: tensor<64x64xf32>, %dk: tensor<32x64xf32>, %dv: tensor<32x64xf32>, %i: index) {
  // expected-error @+1 {{delta dim 0 (Br) is 32, expected 64 to match query dim 0}}
  %a, %b, %c = fa.attention_grad_tile ins(%q, %k, %v, %do, %lse, %delta : tensor<64x64xf16>, tensor<32x64xf16>, tensor<32x64xf16>, tensor<64x64xf16>, tensor<64xf32>, tensor<32xf32>) outs(%dq, %dk, %dv : tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>) tile(%i, %i, %i, %i) scale = 0.125
  return
}

// -----

func.func @f(%q: tensor<64x64xf16>, %k: tensor<32x64xf16>, %v: tensor<32x64xf16>, %do: tensor<64x64xf16>, %lse: tensor<64xf32>, %delta: tensor<64xf32>, %dq: tensor<64x64xf32>, %dk: tensor<32x64xf32>, %dv: tensor<32x64xf32>, %i: index) {
  // expected-error @+1 {{requires 'scale': the tile form carries the resolved softmax scale}}
  %a, %b, %c = fa.attention_grad_tile ins(%q, %k, %v, %do, %lse, %delta : tensor<64x64xf16>, tensor<32x64xf16>, tensor<32x64xf16>, tensor<64x64xf16>, tensor<64xf32>, tensor<64xf32>) outs(%dq, %dk, %dv : tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>) tile(%i, %i, %i, %i) causal
  return
}

// -----

func.func @f(%q: tensor<64x64xf8E4M3FN>, %k: tensor<32x64xf8E4M3FN>, %v: tensor<32x64xf8E4M3FN>, %do: tensor<64x64xf8E4M3FN>, %lse: tensor<64xf32>, %delta: tensor<64xf32>, %dq: tensor<64x64xf32>, %dk: tensor<32x64xf32>, %dv: tensor<32x64xf32>, %i: index) {
  // expected-error @+1 {{FP8 backward is not supported}}
  %a, %b, %c = fa.attention_grad_tile ins(%q, %k, %v, %do, %lse, %delta : tensor<64x64xf8E4M3FN>, tensor<32x64xf8E4M3FN>, tensor<32x64xf8E4M3FN>, tensor<64x64xf8E4M3FN>, tensor<64xf32>, tensor<64xf32>) outs(%dq, %dk, %dv : tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>) tile(%i, %i, %i, %i) scale = 0.125
  return
}

// -----

func.func @f(%q: tensor<64x64xf16>, %k: tensor<32x64xf16>, %v: tensor<32x64xf16>, %do: tensor<64x64xf16>, %lse: tensor<64xf32>, %delta: tensor<64xf32>, %dq: tensor<64x64xf32>, %dk: tensor<32x64xf32>, %dv: tensor<32x64xf32>, %i: index) {
  // expected-error @+1 {{softcap must be a positive finite number, got 0}}
  %a, %b, %c = fa.attention_grad_tile ins(%q, %k, %v, %do, %lse, %delta : tensor<64x64xf16>, tensor<32x64xf16>, tensor<32x64xf16>, tensor<64x64xf16>, tensor<64xf32>, tensor<64xf32>) outs(%dq, %dk, %dv : tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>) tile(%i, %i, %i, %i) scale = 0.125 softcap = 0.0
  return
}

// -----

func.func @f(%q: tensor<2x4x?x64xf16>, %c: tensor<?xi32>, %m: index) {
  // expected-error @+1 {{varlen packs the sequences along N: the batch dim must be a static 1, got 2}}
  %o, %lse = fa.attention %q, %q, %q seqlens(%c, %c max %m, %m : tensor<?xi32>, tensor<?xi32>) : tensor<2x4x?x64xf16>, tensor<2x4x?x64xf16>, tensor<2x4x?x64xf16> -> tensor<2x4x?x64xf16>, tensor<2x4x?xf32>
  return
}

// -----

func.func @f(%q: tensor<1x4x?x64xf16>, %c: tensor<5xi32>, %d: tensor<3xi32>, %m: index) {
  // expected-error @+1 {{cu_seqlens_q and cu_seqlens_k must have the same size (B + 1), got 5 and 3}}
  %o, %lse = fa.attention %q, %q, %q seqlens(%c, %d max %m, %m : tensor<5xi32>, tensor<3xi32>) : tensor<1x4x?x64xf16>, tensor<1x4x?x64xf16>, tensor<1x4x?x64xf16> -> tensor<1x4x?x64xf16>, tensor<1x4x?xf32>
  return
}

// -----

func.func @f(%q: tensor<1x4x?x64xf16>, %c: tensor<0xi32>, %m: index) {
  // expected-error @+1 {{cu_seqlens hold B + 1 offsets (at least one), got 'tensor<0xi32>'}}
  %o, %lse = fa.attention %q, %q, %q seqlens(%c, %c max %m, %m : tensor<0xi32>, tensor<0xi32>) : tensor<1x4x?x64xf16>, tensor<1x4x?x64xf16>, tensor<1x4x?x64xf16> -> tensor<1x4x?x64xf16>, tensor<1x4x?xf32>
  return
}

// -----

func.func @f(%q: tensor<1x4x?x64xf16>, %c: tensor<?xi64>, %m: index) {
  // expected-error @+1 {{operand #3 must be 1D tensor of 32-bit signless integer values}}
  %o, %lse = fa.attention %q, %q, %q seqlens(%c, %c max %m, %m : tensor<?xi64>, tensor<?xi64>) : tensor<1x4x?x64xf16>, tensor<1x4x?x64xf16>, tensor<1x4x?x64xf16> -> tensor<1x4x?x64xf16>, tensor<1x4x?xf32>
  return
}

// -----

func.func @f(%q: tensor<1x4x?x64xf16>, %c: tensor<?xi32>, %m: index) {
  // expected-error @+1 {{varlen needs cu_seqlens_q, cu_seqlens_k, max_seqlen_q and max_seqlen_k, got 2 of them}}
  %o, %lse = "fa.attention"(%q, %q, %q, %c, %c) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 1, 0, 0>} : (tensor<1x4x?x64xf16>, tensor<1x4x?x64xf16>, tensor<1x4x?x64xf16>, tensor<?xi32>, tensor<?xi32>) -> (tensor<1x4x?x64xf16>, tensor<1x4x?xf32>)
  return
}

// -----

func.func @f(%q: tensor<?x4x?x64xf16>, %l: tensor<?x4x?xf32>, %c: tensor<?xi32>, %m: index) {
  // expected-error @+1 {{varlen packs the sequences along N: the batch dim must be a static 1, got ?}}
  %a, %b, %d = fa.attention_grad %q, %q, %q, %q, %q, %l seqlens(%c, %c max %m, %m : tensor<?xi32>, tensor<?xi32>) : tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?xf32> -> tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>
  return
}

// -----

func.func @f(%q: tensor<64x64xf16>, %acc: tensor<64x64xf32>, %m: tensor<64xf32>, %c: tensor<?xi32>, %i: index) {
  // expected-error @+1 {{a tile takes no seqlens: its tile position holds its sequence's lengths}}
  %a, %b, %d = fa.online_attention ins(%q, %q, %q : tensor<64x64xf16>, tensor<64x64xf16>, tensor<64x64xf16>) outs(%acc, %m, %m : tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>) tile(%i, %i, %i, %i) seqlens(%c, %c max %i, %i : tensor<?xi32>, tensor<?xi32>) scale = 0.125
  return
}

// -----

func.func @f(%q: tensor<64x64xf8E4M3FN>, %k: tensor<32x64xf8E4M3FN>, %acc: tensor<64x64xf32>, %m: tensor<64xf32>, %d: f32, %i: index) {
  // expected-error @+1 {{FP8 operands need descale(%q_descale, %k_descale), got 1 descale operands}}
  %a, %b, %c = fa.online_attention ins(%q, %k, %k : tensor<64x64xf8E4M3FN>, tensor<32x64xf8E4M3FN>, tensor<32x64xf8E4M3FN>) outs(%acc, %m, %m : tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>) descale(%d : f32) tile(%i, %i, %i, %i) scale = 0.125
  return
}

// -----

func.func @f(%q: tensor<64x64xf8E4M3FN>, %k: tensor<32x64xf8E4M3FN>, %acc: tensor<64x64xf32>, %m: tensor<64xf32>, %d: tensor<1x1xf32>, %i: index) {
  // expected-error @+1 {{q_descale of a tile must be an f32, got 'tensor<1x1xf32>'}}
  %a, %b, %c = fa.online_attention ins(%q, %k, %k : tensor<64x64xf8E4M3FN>, tensor<32x64xf8E4M3FN>, tensor<32x64xf8E4M3FN>) outs(%acc, %m, %m : tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>) descale(%d, %d : tensor<1x1xf32>, tensor<1x1xf32>) tile(%i, %i, %i, %i) scale = 0.125
  return
}

// -----

func.func @f(%q: tensor<1x4x64x64xf8E4M3FN>, %k: tensor<1x2x32x64xf8E4M3FN>, %acc: tensor<1x4x64x64xf32>, %m: tensor<1x4x64xf32>, %d: tensor<1x2xf32>, %e: tensor<1x4xf32>) {
  // expected-error @+1 {{k_descale dim 1 (Hkv) is 4, expected 2 to match key dim 1}}
  %a, %b, %c = fa.online_attention ins(%q, %k, %k : tensor<1x4x64x64xf8E4M3FN>, tensor<1x2x32x64xf8E4M3FN>, tensor<1x2x32x64xf8E4M3FN>) outs(%acc, %m, %m : tensor<1x4x64x64xf32>, tensor<1x4x64xf32>, tensor<1x4x64xf32>) descale(%d, %e : tensor<1x2xf32>, tensor<1x4xf32>) scale = 0.125
  return
}

// -----

func.func @f(%q: tensor<64x64xbf16>, %k: tensor<32x64xbf16>, %acc: tensor<64x64xf32>, %m: tensor<64xf32>, %d: f32, %i: index) {
  // expected-error @+1 {{descale operands are only meaningful for FP8 operands, got 'bf16'}}
  %a, %b, %c = fa.online_attention ins(%q, %k, %k : tensor<64x64xbf16>, tensor<32x64xbf16>, tensor<32x64xbf16>) outs(%acc, %m, %m : tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>) descale(%d, %d : f32, f32) tile(%i, %i, %i, %i) scale = 0.125
  return
}

// -----

func.func @f(%acc: tensor<1x4x64x64xf32>, %m: tensor<1x4x64xf32>, %d: tensor<1x3xf32>) {
  // expected-error @+1 {{heads (H = 4) must be a multiple of the descale's KV heads (Hkv = 3)}}
  %o, %lse = fa.normalize %acc, %m, %m descale(%d : tensor<1x3xf32>) : tensor<1x4x64x64xf32>, tensor<1x4x64xf32>, tensor<1x4x64xf32> -> tensor<1x4x64x64xbf16>, tensor<1x4x64xf32>
  return
}

// -----

func.func @f(%acc: tensor<64x64xf32>, %m: tensor<64xf32>, %d: tensor<1x1xf32>) {
  // expected-error @+1 {{v_descale of a tile must be an f32, got 'tensor<1x1xf32>'}}
  %o, %lse = fa.normalize %acc, %m, %m descale(%d : tensor<1x1xf32>) : tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32> -> tensor<64x64xbf16>, tensor<64xf32>
  return
}

// -----

func.func @f(%x: tensor<1x6x64x64xbf16>) {
  // expected-error @+1 {{heads (H = 6) must be a multiple of the descale's blocks (G = 4)}}
  %a, %d = fa.quantize %x : tensor<1x6x64x64xbf16> -> tensor<1x6x64x64xf8E4M3FN>, tensor<1x4xf32>
  return
}

// -----

func.func @f(%x: tensor<1x4x64x96xbf16>) {
  // expected-error @+1 {{rotate needs a static head dim that is a power of two, got 'tensor<1x4x64x96xbf16>'}}
  %a, %d = fa.quantize %x rotate(seed = 1) : tensor<1x4x64x96xbf16> -> tensor<1x4x64x96xf8E4M3FN>, tensor<1x4xf32>
  return
}

// -----

func.func @f(%x: tensor<2x4x64x64xbf16>) {
  // expected-error @+1 {{descale dim 0 (B) is 1, expected 2 to match input dim 0}}
  %a, %d = fa.quantize %x : tensor<2x4x64x64xbf16> -> tensor<2x4x64x64xf8E4M3FN>, tensor<1x4xf32>
  return
}

// -----

func.func @f(%x: tensor<2x4x64x64xbf16>) {
  // expected-error @+1 {{result #0 must be ranked tensor of f8E4M3FN type values}}
  %a, %d = fa.quantize %x : tensor<2x4x64x64xbf16> -> tensor<2x4x64x64xbf16>, tensor<2x4xf32>
  return
}
