// RUN: fa-opt %s -split-input-file -fa-convert-to-online-attention -fa-tile-attention="block-q=32 block-kv=64" | FileCheck %s
// RUN: fa-opt %s -split-input-file -fa-convert-to-online-attention -fa-tile-attention="block-q=64 block-kv=64" -canonicalize -cse | FileCheck %s --check-prefix=FOLD

// Q blocks are a parallel dimension beside batch and head; KV blocks are
// three reduction loops (masked, unmasked, masked); GQA maps query head h to
// KV head h / 4; ragged edges are padded to the tile size.

// CHECK-LABEL: func @gqa_ragged
// CHECK: %[[R:.*]]:2 = scf.forall (%[[B:.*]], %[[H:.*]], %[[QB:.*]]) in (2, 8, 4) shared_outs(%[[O:.*]] = %{{.*}}, %[[LSE:.*]] = %{{.*}}) -> (tensor<2x8x100x16xf16>, tensor<2x8x100xf32>)
// CHECK:   %[[C4:.*]] = arith.constant 4 : index
// CHECK:   %[[KVH:.*]] = arith.divui %[[H]], %[[C4]] : index
// CHECK:   %[[Q:.*]] = tensor.pad %{{.*}} low[0, 0] high[%{{.*}}, 0]
// CHECK:   } : tensor<?x32xf16> to tensor<32x32xf16>
// CHECK:   %[[S1:.*]]:3 = scf.for
// CHECK:     tensor.extract_slice %arg1[%[[B]], %[[KVH]], %{{.*}}, 0]
// CHECK:     fa.online_attention ins(%[[Q]], %{{.*}}, %{{.*}} : tensor<32x32xf16>, tensor<64x32xf16>, tensor<64x16xf16>) outs({{.*}} : tensor<32x16xf32>, tensor<32xf32>, tensor<32xf32>) tile({{.*}}) scale = {{.*}} causal keys_in_bounds{{$}}
// CHECK:   %[[S2:.*]]:3 = scf.for {{.*}} iter_args(%{{.*}} = %[[S1]]#0, %{{.*}} = %[[S1]]#1, %{{.*}} = %[[S1]]#2)
// CHECK:     fa.online_attention {{.*}} causal unmasked
// CHECK:   %[[S3:.*]]:3 = scf.for {{.*}} iter_args(%{{.*}} = %[[S2]]#0, %{{.*}} = %[[S2]]#1, %{{.*}} = %[[S2]]#2)
// CHECK:     fa.online_attention {{.*}} causal keys_in_bounds{{$}}
// CHECK:   %[[OT:.*]], %[[LT:.*]] = fa.normalize %[[S3]]#0, %[[S3]]#1, %[[S3]]#2 : tensor<32x16xf32>, tensor<32xf32>, tensor<32xf32> -> tensor<32x16xf16>, tensor<32xf32>
// CHECK:   scf.forall.in_parallel
// CHECK:     tensor.parallel_insert_slice %{{.*}} into %[[O]][%[[B]], %[[H]], %{{.*}}, 0] [1, 1, %{{.*}}, 16]
// CHECK:     tensor.parallel_insert_slice %{{.*}} into %[[LSE]][%[[B]], %[[H]], %{{.*}}] [1, 1, %{{.*}}]
// CHECK: return %[[R]]#0, %[[R]]#1
func.func @gqa_ragged(%q: tensor<2x8x100x32xf16>, %k: tensor<2x2x300x32xf16>, %v: tensor<2x2x300x16xf16>)
    -> (tensor<2x8x100x16xf16>, tensor<2x8x100xf32>) {
  %o, %lse = fa.attention %q, %k, %v causal
      : tensor<2x8x100x32xf16>, tensor<2x2x300x32xf16>, tensor<2x2x300x16xf16>
      -> tensor<2x8x100x16xf16>, tensor<2x8x100xf32>
  return %o, %lse : tensor<2x8x100x16xf16>, tensor<2x8x100xf32>
}

// -----

// Causal with Nq = 64 < Nk = 256 (bottom-right aligned): the one Q block
// sees KV blocks 0..2 whole (no mask) and masks only the diagonal block;
// 256 keys are whole blocks, so that block masks the band, not the sequence
// end (keys_in_bounds).

// FOLD-LABEL: func @causal_diagonal_only
// FOLD-DAG: %[[C0:.*]] = arith.constant 0 : index
// FOLD-DAG: %[[C3:.*]] = arith.constant 3 : index
// FOLD-DAG: %[[C192:.*]] = arith.constant 192 : index
// FOLD: scf.for %{{.*}} = %[[C0]] to %[[C3]]
// FOLD:   fa.online_attention {{.*}} causal unmasked
// FOLD: fa.online_attention {{.*}} tile(%[[C0]], %[[C192]], %{{.*}}, %{{.*}}) scale = {{.*}} causal keys_in_bounds{{$}}
// FOLD-NOT: fa.online_attention
// FOLD: fa.normalize
func.func @causal_diagonal_only(%q: tensor<1x1x64x32xbf16>, %k: tensor<1x1x256x32xbf16>, %v: tensor<1x1x256x32xbf16>)
    -> tensor<1x1x64x32xbf16> {
  %o, %lse = fa.attention %q, %k, %v causal
      : tensor<1x1x64x32xbf16>, tensor<1x1x256x32xbf16>, tensor<1x1x256x32xbf16>
      -> tensor<1x1x64x32xbf16>, tensor<1x1x64xf32>
  return %o : tensor<1x1x64x32xbf16>
}

// -----

// A local causal window [64, 0] over 512 keys: rows 0..63 see keys 384..511
// only, so KV blocks 0..5 are never visited and blocks 6 and 7 are masked.

// FOLD-LABEL: func @window_skips_blocks
// FOLD-NOT: scf.for
// FOLD: fa.online_attention {{.*}} tile(%{{.*}}, %c384, %{{.*}}, %{{.*}}) scale = {{.*}} causal window [64, 0] keys_in_bounds{{$}}
// FOLD: fa.online_attention {{.*}} tile(%{{.*}}, %c448, %{{.*}}, %{{.*}}) scale = {{.*}} causal window [64, 0] keys_in_bounds{{$}}
// FOLD-NOT: fa.online_attention
func.func @window_skips_blocks(%q: tensor<1x1x64x32xbf16>, %k: tensor<1x1x512x32xbf16>, %v: tensor<1x1x512x32xbf16>)
    -> tensor<1x1x64x32xbf16> {
  %o, %lse = fa.attention %q, %k, %v causal window [64, 0]
      : tensor<1x1x64x32xbf16>, tensor<1x1x512x32xbf16>, tensor<1x1x512x32xbf16>
      -> tensor<1x1x64x32xbf16>, tensor<1x1x64xf32>
  return %o : tensor<1x1x64x32xbf16>
}

// -----

// A window whose right bound passes the diagonal ([16, 8]) over 300 keys, not
// whole blocks: the last valid rows see up to 8 keys past the bottom-right
// diagonal, so the band does not hide the sequence end and the masked tiles
// make no keys_in_bounds promise.

// FOLD-LABEL: func @ragged_window_masks_the_end
// FOLD: fa.online_attention {{.*}} window [16, 8]{{$}}
// FOLD-NOT: keys_in_bounds
func.func @ragged_window_masks_the_end(%q: tensor<1x1x100x32xbf16>, %k: tensor<1x1x300x32xbf16>, %v: tensor<1x1x300x32xbf16>)
    -> tensor<1x1x100x32xbf16> {
  %o, %lse = fa.attention %q, %k, %v window [16, 8]
      : tensor<1x1x100x32xbf16>, tensor<1x1x300x32xbf16>, tensor<1x1x300x32xbf16>
      -> tensor<1x1x100x32xbf16>, tensor<1x1x100xf32>
  return %o : tensor<1x1x100x32xbf16>
}

// -----

// No mask and Nk a multiple of the block: every KV block runs unmasked.

// FOLD-LABEL: func @no_mask
// FOLD: scf.for %{{.*}} = %c0 to %c4
// FOLD:   fa.online_attention {{.*}} unmasked
// FOLD-NOT: fa.online_attention
func.func @no_mask(%q: tensor<1x1x64x32xf32>, %k: tensor<1x1x256x32xf32>, %v: tensor<1x1x256x32xf32>)
    -> tensor<1x1x64x32xf32> {
  %o, %lse = fa.attention %q, %k, %v
      : tensor<1x1x64x32xf32>, tensor<1x1x256x32xf32>, tensor<1x1x256x32xf32>
      -> tensor<1x1x64x32xf32>, tensor<1x1x64xf32>
  return %o : tensor<1x1x64x32xf32>
}

// -----

// Runtime shapes: batch and sequence lengths dynamic. The grid is (B, Hq,
// ceil(Nq / Br)) from Q's sizes; every bound (the tile's valid rows, the
// causal band's shift Nk - Nq, the KV block range) is computed from the
// lengths at run time, and each tile step gets them as its qLen / kvLen.
// The causal band hides the keys past Nk, so the masked tiles do not mask
// the sequence end (keys_in_bounds) whatever the lengths.

// FOLD-LABEL: func @runtime_shapes
// FOLD-DAG: %[[C0:.*]] = arith.constant 0 : index
// FOLD-DAG: %[[C1:.*]] = arith.constant 1 : index
// FOLD-DAG: %[[C2:.*]] = arith.constant 2 : index
// FOLD-DAG: %[[C64:.*]] = arith.constant 64 : index
// FOLD: %[[B:.*]] = tensor.dim %arg0, %[[C0]] : tensor<?x4x?x64xbf16>
// FOLD: %[[NQ:.*]] = tensor.dim %arg0, %[[C2]] : tensor<?x4x?x64xbf16>
// FOLD: %[[QBLOCKS:.*]] = arith.ceildivsi %[[NQ]], %[[C64]] : index
// FOLD: scf.forall (%{{.*}}, %{{.*}}, %[[QB:.*]]) in (%[[B]], 4, %[[QBLOCKS]]) shared_outs({{.*}}) -> (tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>)
// FOLD:   %[[NK:.*]] = tensor.dim %arg1, %[[C2]] : tensor<?x2x?x64xbf16>
// FOLD:   %[[SHIFT:.*]] = arith.subi %[[NK]], %[[NQ]] : index
// FOLD:   %[[UPPER:.*]] = arith.addi %[[SHIFT]], %[[C1]] : index
// FOLD:   %[[QSTART:.*]] = arith.muli %[[QB]], %[[C64]] : index
// FOLD:   %[[LEFT:.*]] = arith.subi %[[NQ]], %[[QSTART]] : index
// FOLD:   arith.minsi %[[LEFT]], %[[C64]] : index
// FOLD:   scf.for
// FOLD:     fa.online_attention {{.*}} tile(%[[QSTART]], %{{.*}}, %[[NQ]], %[[NK]]) scale = 1.250000e-01 causal keys_in_bounds{{$}}
// FOLD:   scf.for
// FOLD:     fa.online_attention {{.*}} causal unmasked
// FOLD:   scf.for
// FOLD:     fa.online_attention {{.*}} causal keys_in_bounds{{$}}
func.func @runtime_shapes(%q: tensor<?x4x?x64xbf16>, %k: tensor<?x2x?x64xbf16>,
                          %v: tensor<?x2x?x64xbf16>)
    -> (tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v causal
      : tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>
      -> tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>
  return %o, %lse : tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>
}

// -----

// FP8: each block reads its (batch, KV head) descales once, before the KV
// loops; every tile step takes q's and k's, the tile's normalize v's.

// FOLD-LABEL: func @fp8
// FOLD: scf.forall (%[[B:.*]], %[[H:.*]], %{{.*}}) in (2, 4, 2)
// FOLD:   %[[KVH:.*]] = arith.divui %[[H]], %{{.*}} : index
// FOLD:   %[[DQ:.*]] = tensor.extract %arg3[%[[B]], %[[KVH]]] : tensor<2x2xf32>
// FOLD:   %[[DK:.*]] = tensor.extract %arg4[%[[B]], %[[KVH]]] : tensor<2x2xf32>
// FOLD:   %[[DV:.*]] = tensor.extract %arg5[%[[B]], %[[KVH]]] : tensor<2x2xf32>
// FOLD:   scf.for
// FOLD:     fa.online_attention {{.*}} descale(%[[DQ]], %[[DK]] : f32, f32) tile(
// FOLD:   fa.normalize %{{.*}}#0, %{{.*}}#1, %{{.*}}#2 descale(%[[DV]] : f32) : tensor<64x128xf32>, tensor<64xf32>, tensor<64xf32> -> tensor<64x128xbf16>, tensor<64xf32>
func.func @fp8(%q: tensor<2x4x128x128xf8E4M3FN>, %k: tensor<2x2x128x128xf8E4M3FN>,
               %v: tensor<2x2x128x128xf8E4M3FN>, %dq: tensor<2x2xf32>,
               %dk: tensor<2x2xf32>, %dv: tensor<2x2xf32>)
    -> (tensor<2x4x128x128xbf16>, tensor<2x4x128xf32>) {
  %o, %lse = fa.attention %q, %k, %v
      descale(%dq, %dk, %dv : tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>)
      : tensor<2x4x128x128xf8E4M3FN>, tensor<2x2x128x128xf8E4M3FN>, tensor<2x2x128x128xf8E4M3FN>
      -> tensor<2x4x128x128xbf16>, tensor<2x4x128xf32>
  return %o, %lse : tensor<2x4x128x128xbf16>, tensor<2x4x128xf32>
}
