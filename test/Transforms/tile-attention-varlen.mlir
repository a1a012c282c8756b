// RUN: fa-opt %s -split-input-file -fa-convert-to-online-attention -fa-tile-attention="block-q=64 block-kv=32" -fa-tile-attention-grad="block-q=32 block-kv=64" -canonicalize -cse | FileCheck %s

// Packed sequences: the grid's batch dim is the sequences (B + 1 offsets),
// its Q blocks cover max_seqlen_q; each sequence's first rows and lengths
// come from cu_seqlens. Tiles are cut at the sequence's rows (batch index
// 0), their positions and masks are the sequence's own (the causal band
// hides the keys past the sequence's end: keys_in_bounds), and a Q block
// past the sequence's end visits no KV block.

// CHECK-LABEL: func @varlen_forward
// CHECK-SAME: (%[[Q:.*]]: tensor<1x8x?x64xbf16>, %[[K:.*]]: tensor<1x2x?x64xbf16>, %[[V:.*]]: tensor<1x2x?x64xbf16>, %[[CQ:.*]]: tensor<?xi32>, %[[CK:.*]]: tensor<?xi32>, %[[MQ:.*]]: index, %[[MK:.*]]: index)
// CHECK-DAG: %[[QBLOCKS:.*]] = arith.ceildivsi %[[MQ]], %c64
// CHECK-DAG: %[[OFFSETS:.*]] = tensor.dim %[[CQ]], %c0
// CHECK-DAG: %[[SEQS:.*]] = arith.subi %[[OFFSETS]], %c1
// CHECK: scf.forall (%[[B:.*]], %[[H:.*]], %[[QB:.*]]) in (%[[SEQS]], 8, %[[QBLOCKS]])
// CHECK:   %[[QOFF32:.*]] = tensor.extract %[[CQ]][%[[B]]]
// CHECK:   %[[QOFF:.*]] = arith.index_cast %[[QOFF32]]
// CHECK:   %[[NEXT:.*]] = arith.addi %[[B]], %c1
// CHECK:   %[[QEND32:.*]] = tensor.extract %[[CQ]][%[[NEXT]]]
// CHECK:   %[[QEND:.*]] = arith.index_cast %[[QEND32]]
// CHECK:   %[[NQ:.*]] = arith.subi %[[QEND]], %[[QOFF]]
// CHECK:   tensor.extract %[[CK]][%[[B]]]
// CHECK:   tensor.extract %[[CK]][%[[NEXT]]]
// CHECK:   %[[QSTART:.*]] = arith.muli %[[QB]], %c64
// CHECK:   %[[ROWS:.*]] = arith.maxsi %{{.*}}, %c0
// CHECK:   %[[AT:.*]] = arith.minsi %[[QSTART]], %[[NQ]]
// CHECK:   %[[QROW:.*]] = arith.addi %[[QOFF]], %[[AT]]
// CHECK:   tensor.extract_slice %[[Q]][0, %[[H]], %[[QROW]], 0] [1, 1, %[[ROWS]], 64]
// CHECK:   %[[HAS:.*]] = arith.cmpi sgt, %[[ROWS]], %c0
// CHECK:   arith.select %[[HAS]]
// CHECK:   scf.for
// CHECK:     tensor.extract_slice %[[K]][0, %{{.*}}, %{{.*}}, 0]
// CHECK:     fa.online_attention {{.*}} tile(%[[QSTART]], %{{.*}}, %[[NQ]], %{{.*}}) scale = 1.250000e-01 causal keys_in_bounds{{$}}
// CHECK:   fa.normalize
// CHECK:   scf.forall.in_parallel
// CHECK:     tensor.parallel_insert_slice %{{.*}} into %{{.*}}[0, %[[H]], %[[QROW]], 0] [1, 1, %[[ROWS]], 64]
// CHECK:     tensor.parallel_insert_slice %{{.*}} into %{{.*}}[0, %[[H]], %[[QROW]]] [1, 1, %[[ROWS]]]
func.func @varlen_forward(%q: tensor<1x8x?x64xbf16>, %k: tensor<1x2x?x64xbf16>, %v: tensor<1x2x?x64xbf16>,
                          %cq: tensor<?xi32>, %ck: tensor<?xi32>, %mq: index, %mk: index)
    -> (tensor<1x8x?x64xbf16>, tensor<1x8x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v seqlens(%cq, %ck max %mq, %mk : tensor<?xi32>, tensor<?xi32>) causal
      : tensor<1x8x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>
      -> tensor<1x8x?x64xbf16>, tensor<1x8x?xf32>
  return %o, %lse : tensor<1x8x?x64xbf16>, tensor<1x8x?xf32>
}

// -----

// The backward: a forall iteration owns a sequence's dQ rows of its group's
// heads and its dK/dV rows; its KV blocks cover its own keys. A KV block
// without keys (a GPU grid spans the longest sequence's) visits no Q block,
// and LSE is padded with +inf: rows past the sequence's end get P = 0
// whatever a kernel reads there.

// CHECK-LABEL: func @varlen_backward
// CHECK-SAME: %[[Q:[^:]*]]: tensor<1x8x?x64xbf16>, %[[K:[^:]*]]: tensor<1x2x?x64xbf16>
// CHECK-SAME: %[[CQ:[^:]*]]: tensor<?xi32>, %[[CK:[^:]*]]: tensor<?xi32>
// CHECK: %[[INF:.*]] = arith.constant 0x7F800000 : f32
// CHECK: %[[DQACC:.*]] = linalg.fill {{.*}} -> tensor<1x8x?x64xf32>
// CHECK: scf.forall (%[[B:.*]], %[[KVH:.*]]) in (%{{.*}}, 2) shared_outs(%[[DQ:.*]] = %[[DQACC]], %[[DK:.*]] = %{{.*}}, %[[DV:.*]] = %{{.*}})
// CHECK:   %[[QOFF:.*]] = arith.index_cast
// CHECK:   %[[NQ:.*]] = arith.subi %{{.*}}, %[[QOFF]]
// CHECK:   %[[KOFF:.*]] = arith.index_cast
// CHECK:   %[[NK:.*]] = arith.subi %{{.*}}, %[[KOFF]]
// CHECK:   %[[HEAD0:.*]] = arith.muli %[[KVH]], %c4
// CHECK:   tensor.extract_slice %[[DQ]][0, %[[HEAD0]], %[[QOFF]], 0] [1, 4, %[[NQ]], 64]
// CHECK:   tensor.extract_slice %[[DK]][0, %[[KVH]], %[[KOFF]], 0] [1, 1, %[[NK]], 64]
// CHECK:   %[[KVBLOCKS:.*]] = arith.ceildivsi %[[NK]], %c64
// CHECK:   scf.for %{{.*}} = %c0 to %[[KVBLOCKS]]
// CHECK:     %[[HASKEYS:.*]] = arith.cmpi sgt, %{{.*}}, %c0 : index
// CHECK:     %[[HI:.*]] = arith.select %[[HASKEYS]], %{{.*}}, %[[LO:.*]] : index
// CHECK:     scf.for %{{.*}} = %[[LO]] to %[[HI]]
// CHECK:       tensor.pad %{{.*}} low[0] high[%{{.*}}] {
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:    tensor.yield %[[INF]] : f32
// CHECK:     fa.attention_grad_tile {{.*}} tile(%{{.*}}, %{{.*}}, %[[NQ]], %[[NK]]) scale = 1.250000e-01 causal{{$}}
// CHECK:   scf.forall.in_parallel
// CHECK:     tensor.parallel_insert_slice %{{.*}} into %[[DQ]][0, %[[HEAD0]], %[[QOFF]], 0] [1, 4, %[[NQ]], 64]
func.func @varlen_backward(%q: tensor<1x8x?x64xbf16>, %k: tensor<1x2x?x64xbf16>, %v: tensor<1x2x?x64xbf16>,
                           %o: tensor<1x8x?x64xbf16>, %do: tensor<1x8x?x64xbf16>, %lse: tensor<1x8x?xf32>,
                           %cq: tensor<?xi32>, %ck: tensor<?xi32>, %mq: index, %mk: index)
    -> (tensor<1x8x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>) {
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse
      seqlens(%cq, %ck max %mq, %mk : tensor<?xi32>, tensor<?xi32>) causal
      : tensor<1x8x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>,
        tensor<1x8x?x64xbf16>, tensor<1x8x?x64xbf16>, tensor<1x8x?xf32>
      -> tensor<1x8x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>
  return %dq, %dk, %dv : tensor<1x8x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>
}
