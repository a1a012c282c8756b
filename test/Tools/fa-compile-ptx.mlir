// REQUIRES: ptxas
// RUN: fa-compile %s --chip=sm_89 -o %t && FileCheck %s --check-prefix=PTX < %t.ptx
// RUN: FileCheck %s --check-prefix=META < %t.meta
// RUN: %ptxas -arch=sm_90a %t.ptx -o %t.sm90a.cubin
// RUN: fa-compile %s --chip=sm_80 -o %t.80 && %ptxas -arch=sm_80 %t.80.ptx -o %t.sm80.cubin
// RUN: fa-compile %s --chip=sm_89 --emit=cubin -o %t.bin && test -s %t.bin.cubin && FileCheck %s --check-prefix=META < %t.bin.meta

// The portable tensor-core kernel (the GPU tile level in mma.sync layouts):
// cp.async staging, ldmatrix fragments, mma.sync m16n8k16, quad shuffles;
// PTX assembles for sm_80 and sm_90a.

// PTX: .target sm_89
// PTX: .extern .shared .align 1024 .b8 __fa_shared_tiles[];
// PTX: .visible .entry gqa_causal(
// PTX: cp.async.cg.shared.global
// PTX: cp.async.commit_group
// PTX: cp.async.wait_group
// PTX: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// PTX: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// PTX: shfl.sync.bfly.b32
// PTX-NOT: __nv_
// PTX: ex2.approx.ftz.f32
// PTX: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16

// META: "kind": "forward"
// META-NEXT: "chip": "sm_89"
// META-NEXT: "dtype": "bf16"
// META-NEXT: "batch": 2
// META-NEXT: "heads_q": 8
// META-NEXT: "heads_kv": 2
// META-NEXT: "seq_q": 77
// META-NEXT: "seq_kv": 300
// META-NEXT: "head_dim": 64
// META-NEXT: "head_dim_v": 64
// META-NEXT: "scale": 0.125
// META-NEXT: "causal": true
// META-NEXT: "window_left": -1
// META-NEXT: "window_right": -1
// META-NEXT: "softcap": 0.0
// META-NEXT: "block_q": 128
// META-NEXT: "block_kv": 64
// META-NEXT: "rows_per_warp": 32
// META-NEXT: "entry": "gqa_causal"
// META-NEXT: "grid": [1, 8, 2]
// META-NEXT: "block": [128, 1, 1]
// META-NEXT: "shared_bytes": 49152
// META-NEXT: "args": ["q", "k", "v", "o", "lse"
// META-NEXT: "compiler": "flashmlir-
func.func @gqa_causal(%q: tensor<2x8x77x64xbf16>, %k: tensor<2x2x300x64xbf16>, %v: tensor<2x2x300x64xbf16>)
    -> (tensor<2x8x77x64xbf16>, tensor<2x8x77xf32>) {
  %o, %lse = fa.attention %q, %k, %v causal
      : tensor<2x8x77x64xbf16>, tensor<2x2x300x64xbf16>, tensor<2x2x300x64xbf16>
      -> tensor<2x8x77x64xbf16>, tensor<2x8x77xf32>
  return %o, %lse : tensor<2x8x77x64xbf16>, tensor<2x8x77xf32>
}
