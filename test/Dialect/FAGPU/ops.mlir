// RUN: fa-opt %s | fa-opt | FileCheck %s
// RUN: fa-opt %s -mlir-print-op-generic | fa-opt | FileCheck %s

// Every layout, the shared tile type and every op of the GPU tile level
// round-trip in custom and generic form.

#acc = #fagpu.wgmma_acc<warps = 4>
#a = #fagpu.wgmma_a<warps = 4>
#rows = #fagpu.rows<#fagpu.wgmma_acc<warps = 4>>

// CHECK-LABEL: func.func @attention_tile
// CHECK: fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
// CHECK: fagpu.copy_to_shared %{{.*}}[%{{.*}}] limit %{{.*}} into %{{.*}} : memref<256x64xbf16>, !fagpu.smem<64x64xbf16, swizzle = 128>
// CHECK: fagpu.mma %{{.*}}, %{{.*}}, %{{.*}} transpose_b : !fagpu.smem<64x64xbf16, swizzle = 128>, !fagpu.smem<128x64xbf16, swizzle = 128>, tensor<64x128xf32, #fagpu.wgmma_acc<warps = 4>> -> tensor<64x128xf32, #fagpu.wgmma_acc<warps = 4>>
// CHECK: fagpu.tile_coords dim = 1 : tensor<64x128xi32, #fagpu.wgmma_acc<warps = 4>>
// CHECK: fagpu.reduce_rows max %{{.*}} : tensor<64x128xf32, #fagpu.wgmma_acc<warps = 4>> -> tensor<64xf32, #fagpu.rows<#fagpu.wgmma_acc<warps = 4>>>
// CHECK: fagpu.expand_rows %{{.*}} : tensor<64xf32, #fagpu.rows<#fagpu.wgmma_acc<warps = 4>>> -> tensor<64x128xf32, #fagpu.wgmma_acc<warps = 4>>
// CHECK: fagpu.reduce_rows sum
// CHECK: fagpu.convert_layout %{{.*}} : tensor<64x128xbf16, #fagpu.wgmma_acc<warps = 4>> -> tensor<64x128xbf16, #fagpu.wgmma_a<warps = 4>>
// CHECK: fagpu.mma %{{.*}}, %{{.*}}, %{{.*}} : tensor<64x128xbf16, #fagpu.wgmma_a<warps = 4>>, !fagpu.smem<128x64xbf16, swizzle = 128>
// CHECK: fagpu.store_tile %{{.*}}, %{{.*}}[%{{.*}}] limit %{{.*}} : tensor<64x64xf32, #fagpu.wgmma_acc<warps = 4>>, memref<256x64xf32>
func.func @attention_tile(%q: memref<256x64xbf16>, %k: memref<128x64xbf16>,
                          %v: memref<128x64xbf16>, %o: memref<256x64xf32>,
                          %row: index, %nq: index, %nk: index) {
  %qs = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
  %ks = fagpu.alloc_shared : !fagpu.smem<128x64xbf16, swizzle = 128>
  %vs = fagpu.alloc_shared : !fagpu.smem<128x64xbf16, swizzle = 128>
  fagpu.copy_to_shared %q[%row] limit %nq into %qs : memref<256x64xbf16>, !fagpu.smem<64x64xbf16, swizzle = 128>
  %zero = arith.constant dense<0.0> : tensor<64x128xf32, #acc>
  %s = fagpu.mma %qs, %ks, %zero transpose_b : !fagpu.smem<64x64xbf16, swizzle = 128>, !fagpu.smem<128x64xbf16, swizzle = 128>, tensor<64x128xf32, #acc> -> tensor<64x128xf32, #acc>
  %cols = fagpu.tile_coords dim = 1 : tensor<64x128xi32, #acc>
  %m = fagpu.reduce_rows max %s : tensor<64x128xf32, #acc> -> tensor<64xf32, #rows>
  %me = fagpu.expand_rows %m : tensor<64xf32, #rows> -> tensor<64x128xf32, #acc>
  %d = arith.subf %s, %me : tensor<64x128xf32, #acc>
  %p = math.exp2 %d : tensor<64x128xf32, #acc>
  %l = fagpu.reduce_rows sum %p : tensor<64x128xf32, #acc> -> tensor<64xf32, #rows>
  %pb = arith.truncf %p : tensor<64x128xf32, #acc> to tensor<64x128xbf16, #acc>
  %pa = fagpu.convert_layout %pb : tensor<64x128xbf16, #acc> -> tensor<64x128xbf16, #a>
  %o0 = arith.constant dense<0.0> : tensor<64x64xf32, #acc>
  %ov = fagpu.mma %pa, %vs, %o0 : tensor<64x128xbf16, #a>, !fagpu.smem<128x64xbf16, swizzle = 128>, tensor<64x64xf32, #acc> -> tensor<64x64xf32, #acc>
  fagpu.store_tile %ov, %o[%row] limit %nq : tensor<64x64xf32, #acc>, memref<256x64xf32>
  return
}

// K-major B (transpose_b) in any swizzle mode: FP8's V transpose at 192
// keys is stored in 64-byte atoms.
// CHECK-LABEL: func.func @k_major_swizzle64
// CHECK: fagpu.mma %{{.*}}, %{{.*}}, %{{.*}} transpose_b : !fagpu.smem<64x64xbf16, swizzle = 128>, !fagpu.smem<128x64xbf16, swizzle = 64>
func.func @k_major_swizzle64(%a: !fagpu.smem<64x64xbf16, swizzle = 128>, %b: !fagpu.smem<128x64xbf16, swizzle = 64>) {
  %zero = arith.constant dense<0.0> : tensor<64x128xf32, #acc>
  %s = fagpu.mma %a, %b, %zero transpose_b : !fagpu.smem<64x64xbf16, swizzle = 128>, !fagpu.smem<128x64xbf16, swizzle = 64>, tensor<64x128xf32, #acc> -> tensor<64x128xf32, #acc>
  return
}

// An N-major B in 64-byte atoms (head dim 96: 192-byte rows of V for P·V)
// and an A in 64-byte atoms (Q's 192-byte rows for Q Kᵀ).
// CHECK-LABEL: func.func @n_major_swizzle64
// CHECK: fagpu.mma %{{.*}}, %{{.*}}, %{{.*}} : !fagpu.smem<64x128xbf16, swizzle = 128>, !fagpu.smem<128x96xbf16, swizzle = 64>
// CHECK: fagpu.mma %{{.*}}, %{{.*}}, %{{.*}} transpose_b : !fagpu.smem<64x96xbf16, swizzle = 64>, !fagpu.smem<128x96xbf16, swizzle = 64>
func.func @n_major_swizzle64(%p: !fagpu.smem<64x128xbf16, swizzle = 128>, %q: !fagpu.smem<64x96xbf16, swizzle = 64>, %kv: !fagpu.smem<128x96xbf16, swizzle = 64>) {
  %zo = arith.constant dense<0.0> : tensor<64x96xf32, #acc>
  %o = fagpu.mma %p, %kv, %zo : !fagpu.smem<64x128xbf16, swizzle = 128>, !fagpu.smem<128x96xbf16, swizzle = 64>, tensor<64x96xf32, #acc> -> tensor<64x96xf32, #acc>
  %zs = arith.constant dense<0.0> : tensor<64x128xf32, #acc>
  %s = fagpu.mma %q, %kv, %zs transpose_b : !fagpu.smem<64x96xbf16, swizzle = 64>, !fagpu.smem<128x96xbf16, swizzle = 64>, tensor<64x128xf32, #acc> -> tensor<64x128xf32, #acc>
  return
}

// CHECK-LABEL: func.func @mma_sync_layouts
// CHECK-SAME: tensor<64x64xf32, #fagpu.mma_sync_acc<warps = 4>>
// CHECK-SAME: tensor<64x32xbf16, #fagpu.mma_sync_a<warps = 4>>
// CHECK-SAME: tensor<32x64xbf16, #fagpu.mma_sync_b<warps = 4>>
// CHECK-SAME: !fagpu.smem<32x64xbf16, swizzle = 0>
func.func @mma_sync_layouts(%acc: tensor<64x64xf32, #fagpu.mma_sync_acc<warps = 4>>,
                            %a: tensor<64x32xbf16, #fagpu.mma_sync_a<warps = 4>>,
                            %b: tensor<32x64xbf16, #fagpu.mma_sync_b<warps = 4>>,
                            %s: !fagpu.smem<32x64xbf16, swizzle = 0>) {
  return
}

// mbarriers, TMA and the warp-specialized split: every new type and op, with
// the producer region waiting for an empty stage, announcing its bytes and
// loading, the consumers waiting for the bytes and releasing the stage.

// CHECK-LABEL: func.func @warp_specialized
// CHECK-SAME: (%[[MAP:[a-z0-9]+]]: !fagpu.tensor_map<memref<2x4x256x128xbf16>, box = [64, 64]>,
// CHECK-SAME: %[[BATCH:[a-z0-9]+]]: index, %[[HEAD:[a-z0-9]+]]: index, %[[ROW:[a-z0-9]+]]: index, %[[S:[a-z0-9]+]]: index,
// CHECK-SAME: %[[FULL:[a-z0-9]+]]: index, %[[EMPTY:[a-z0-9]+]]: index, %[[PHASE:[a-z0-9]+]]: index, %[[NEXT:[a-z0-9]+]]: index,
// CHECK: %[[RING:.*]] = fagpu.alloc_shared : !fagpu.smem<2x64x128xbf16, swizzle = 128>
// CHECK: %[[B:.*]] = fagpu.alloc_barriers : !fagpu.barriers<4>
// CHECK: fagpu.init_barriers %[[B]] arrivals = [1, 1, 8, 8] : !fagpu.barriers<4>
// CHECK: fagpu.warp_specialize producer(warpgroups = 1, registers = 24) {
// CHECK-NEXT: fagpu.wait_barrier %[[B]][%[[EMPTY]]] phase %[[NEXT]] : !fagpu.barriers<4>
// CHECK-NEXT: fagpu.arrive_expect_bytes %[[B]][%[[FULL]]], 16384 : !fagpu.barriers<4>
// CHECK-NEXT: %[[T:.*]] = fagpu.stage %[[RING]][%[[S]]] : !fagpu.smem<2x64x128xbf16, swizzle = 128> -> !fagpu.smem<64x128xbf16, swizzle = 128>
// CHECK-NEXT: fagpu.tma_load %[[MAP]][%[[BATCH]], %[[HEAD]], %[[ROW]]] into %[[T]], %[[B]][%[[FULL]]] : !fagpu.tensor_map<memref<2x4x256x128xbf16>, box = [64, 64]>, !fagpu.smem<64x128xbf16, swizzle = 128>, !fagpu.barriers<4>
// CHECK-NEXT: } consumers(warpgroups = 2, registers = 240) {
// CHECK-NEXT: fagpu.wait_barrier %[[B]][%[[FULL]]] phase %[[PHASE]] : !fagpu.barriers<4>
// CHECK: fagpu.mma
// CHECK-NEXT: fagpu.arrive_barrier %[[B]][%[[EMPTY]]] : !fagpu.barriers<4>
// CHECK-NEXT: }
// CHECK-NEXT: return
func.func @warp_specialized(%kmap: !fagpu.tensor_map<memref<2x4x256x128xbf16>, box = [64, 64]>,
                            %b: index, %h: index, %row: index, %s: index,
                            %full: index, %empty: index, %phase: index, %next: index,
                            %q: !fagpu.smem<128x128xbf16, swizzle = 128>) {
  %ring = fagpu.alloc_shared : !fagpu.smem<2x64x128xbf16, swizzle = 128>
  %bars = fagpu.alloc_barriers : !fagpu.barriers<4>
  fagpu.init_barriers %bars arrivals = [1, 1, 8, 8] : !fagpu.barriers<4>
  fagpu.warp_specialize producer(warpgroups = 1, registers = 24) {
    fagpu.wait_barrier %bars[%empty] phase %next : !fagpu.barriers<4>
    fagpu.arrive_expect_bytes %bars[%full], 16384 : !fagpu.barriers<4>
    %t = fagpu.stage %ring[%s] : !fagpu.smem<2x64x128xbf16, swizzle = 128> -> !fagpu.smem<64x128xbf16, swizzle = 128>
    fagpu.tma_load %kmap[%b, %h, %row] into %t, %bars[%full] : !fagpu.tensor_map<memref<2x4x256x128xbf16>, box = [64, 64]>, !fagpu.smem<64x128xbf16, swizzle = 128>, !fagpu.barriers<4>
  } consumers(warpgroups = 2, registers = 240) {
    fagpu.wait_barrier %bars[%full] phase %phase : !fagpu.barriers<4>
    %k = fagpu.stage %ring[%s] : !fagpu.smem<2x64x128xbf16, swizzle = 128> -> !fagpu.smem<64x128xbf16, swizzle = 128>
    %z = arith.constant dense<0.0> : tensor<128x64xf32, #fagpu.wgmma_acc<warps = 8>>
    %r = fagpu.mma %q, %k, %z transpose_b : !fagpu.smem<128x128xbf16, swizzle = 128>, !fagpu.smem<64x128xbf16, swizzle = 128>, tensor<128x64xf32, #fagpu.wgmma_acc<warps = 8>> -> tensor<128x64xf32, #fagpu.wgmma_acc<warps = 8>>
    fagpu.arrive_barrier %bars[%empty] : !fagpu.barriers<4>
  }
  return
}

// A region with nothing to do (the producer of a kernel without copies)
// prints as `{ }` and reads back as one empty block.
// CHECK-LABEL: func.func @empty_producer
// CHECK: fagpu.warp_specialize producer(warpgroups = 1, registers = 24) {
// CHECK-NEXT: } consumers(warpgroups = 2, registers = 240) {
// CHECK-NEXT: arith.constant
// CHECK-NEXT: }
func.func @empty_producer() {
  fagpu.warp_specialize producer(warpgroups = 1, registers = 24) {
  } consumers(warpgroups = 2, registers = 240) {
    %c = arith.constant 0 : index
  }
  return
}

// A tensor map over other ranks and element types (2-D f32: 32-column
// boxes; 5-D f16), and one whose batch and rows are known at launch only.
// CHECK-LABEL: func.func @tensor_maps
// CHECK-SAME: !fagpu.tensor_map<memref<1024x32xf32>, box = [256, 32]>
// CHECK-SAME: !fagpu.tensor_map<memref<2x3x4x64x64xf16>, box = [1, 64]>
// CHECK-SAME: !fagpu.barriers<1>
// CHECK-SAME: !fagpu.tensor_map<memref<?x16x?x128xbf16>, box = [128, 64]>
func.func @tensor_maps(%a: !fagpu.tensor_map<memref<1024x32xf32>, box = [256, 32]>,
                       %b: !fagpu.tensor_map<memref<2x3x4x64x64xf16>, box = [1, 64]>,
                       %c: !fagpu.barriers<1>,
                       %d: !fagpu.tensor_map<memref<?x16x?x128xbf16>, box = [128, 64]>) {
  return
}

// Ping-pong: the warpgroup's index, named barriers (sync and arrive), an
// asynchronous WGMMA product read only through fagpu.mma_wait.
// CHECK-LABEL: func.func @pingpong
// CHECK-SAME: (%[[Q:[a-z0-9]+]]: !fagpu.smem<64x64xbf16, swizzle = 128>, %[[K:[a-z0-9]+]]: !fagpu.smem<64x64xbf16, swizzle = 128>, %[[ACC:[a-z0-9]+]]: tensor<64x64xf32, #fagpu.wgmma_acc<warps = 4>>)
// CHECK: %[[WG:.*]] = fagpu.warpgroup_id
// CHECK-NEXT: fagpu.named_barrier_sync %[[WG]], threads = 256
// CHECK-NEXT: %[[P:.*]] = fagpu.mma %[[Q]], %[[K]], %[[ACC]] transpose_b async : !fagpu.smem<64x64xbf16, swizzle = 128>, !fagpu.smem<64x64xbf16, swizzle = 128>, tensor<64x64xf32, #fagpu.wgmma_acc<warps = 4>> -> tensor<64x64xf32, #fagpu.wgmma_acc<warps = 4>>
// CHECK-NEXT: fagpu.named_barrier_arrive %[[WG]], threads = 32
// CHECK-NEXT: %[[R:.*]] = fagpu.mma_wait %[[P]] : tensor<64x64xf32, #fagpu.wgmma_acc<warps = 4>>
// CHECK-NEXT: return %[[R]]
func.func @pingpong(%q: !fagpu.smem<64x64xbf16, swizzle = 128>, %k: !fagpu.smem<64x64xbf16, swizzle = 128>,
                    %acc: tensor<64x64xf32, #acc>) -> tensor<64x64xf32, #acc> {
  %wg = fagpu.warpgroup_id
  fagpu.named_barrier_sync %wg, threads = 256
  %p = fagpu.mma %q, %k, %acc transpose_b async : !fagpu.smem<64x64xbf16, swizzle = 128>, !fagpu.smem<64x64xbf16, swizzle = 128>, tensor<64x64xf32, #acc> -> tensor<64x64xf32, #acc>
  fagpu.named_barrier_arrive %wg, threads = 32
  %r = fagpu.mma_wait %p : tensor<64x64xf32, #acc>
  return %r : tensor<64x64xf32, #acc>
}

// CHECK-LABEL: func.func @wait_leaving_one_in_flight
// CHECK: %[[S:.*]] = fagpu.mma {{.*}} async
// CHECK: fagpu.mma {{.*}} async
// CHECK: fagpu.mma_wait %[[S]] in_flight = 1 :
#acc_in_flight = #fagpu.wgmma_acc<warps = 4>
func.func @wait_leaving_one_in_flight(%a: !fagpu.smem<64x64xbf16, swizzle = 128>, %b: !fagpu.smem<64x64xbf16, swizzle = 128>, %c: tensor<64x64xf32, #acc_in_flight>) -> (tensor<64x64xf32, #acc_in_flight>, tensor<64x64xf32, #acc_in_flight>) {
  %s = fagpu.mma %a, %b, %c transpose_b async : !fagpu.smem<64x64xbf16, swizzle = 128>, !fagpu.smem<64x64xbf16, swizzle = 128>, tensor<64x64xf32, #acc_in_flight> -> tensor<64x64xf32, #acc_in_flight>
  %t = fagpu.mma %a, %b, %c transpose_b async : !fagpu.smem<64x64xbf16, swizzle = 128>, !fagpu.smem<64x64xbf16, swizzle = 128>, tensor<64x64xf32, #acc_in_flight> -> tensor<64x64xf32, #acc_in_flight>
  %ws = fagpu.mma_wait %s in_flight = 1 : tensor<64x64xf32, #acc_in_flight>
  %wt = fagpu.mma_wait %t : tensor<64x64xf32, #acc_in_flight>
  return %ws, %wt : tensor<64x64xf32, #acc_in_flight>, tensor<64x64xf32, #acc_in_flight>
}

// O held back until QKᵀ is issued, rescaled while it runs.
// CHECK-LABEL: func.func @after_issue
// CHECK: %[[S:.*]] = fagpu.mma {{.*}} async
// CHECK-NEXT: %[[HELD:.*]] = fagpu.after_issue %{{.*}}, %[[S]] : tensor<64x64xf32, #fagpu.wgmma_acc<warps = 4>>, tensor<64x64xf32, #fagpu.wgmma_acc<warps = 4>>
// CHECK-NEXT: arith.mulf %[[HELD]], %[[HELD]]
func.func @after_issue(%a: !fagpu.smem<64x64xbf16, swizzle = 128>, %b: !fagpu.smem<64x64xbf16, swizzle = 128>, %c: tensor<64x64xf32, #acc_in_flight>, %o: tensor<64x64xf32, #acc_in_flight>) -> (tensor<64x64xf32, #acc_in_flight>, tensor<64x64xf32, #acc_in_flight>) {
  %s = fagpu.mma %a, %b, %c transpose_b async : !fagpu.smem<64x64xbf16, swizzle = 128>, !fagpu.smem<64x64xbf16, swizzle = 128>, tensor<64x64xf32, #acc_in_flight> -> tensor<64x64xf32, #acc_in_flight>
  %held = fagpu.after_issue %o, %s : tensor<64x64xf32, #acc_in_flight>, tensor<64x64xf32, #acc_in_flight>
  %scaled = arith.mulf %held, %held : tensor<64x64xf32, #acc_in_flight>
  %ws = fagpu.mma_wait %s : tensor<64x64xf32, #acc_in_flight>
  return %scaled, %ws : tensor<64x64xf32, #acc_in_flight>, tensor<64x64xf32, #acc_in_flight>
}

// Sᵀ computed as an accumulator is S in the transposed layout, and back:
// the same registers.
// CHECK-LABEL: func.func @transpose
// CHECK: %[[S:.*]] = fagpu.transpose %{{.*}} : tensor<128x64xf32, #fagpu.wgmma_acc<warps = 8>> -> tensor<64x128xf32, #fagpu.transposed<#fagpu.wgmma_acc<warps = 8>>>
// CHECK-NEXT: %[[B:.*]] = fagpu.transpose %[[S]] : tensor<64x128xf32, #fagpu.transposed<#fagpu.wgmma_acc<warps = 8>>> -> tensor<128x64xf32, #fagpu.wgmma_acc<warps = 8>>
// CHECK: fagpu.expand_rows %{{.*}} : tensor<64xf32, #fagpu.rows<#fagpu.transposed<#fagpu.wgmma_acc<warps = 8>>>> -> tensor<64x128xf32, #fagpu.transposed<#fagpu.wgmma_acc<warps = 8>>>
#acc8 = #fagpu.wgmma_acc<warps = 8>
#accT = #fagpu.transposed<#fagpu.wgmma_acc<warps = 8>>
func.func @transpose(%st: tensor<128x64xf32, #acc8>, %lse: tensor<64xf32, #fagpu.rows<#accT>>)
    -> (tensor<128x64xf32, #acc8>, tensor<64x128xf32, #accT>) {
  %s = fagpu.transpose %st : tensor<128x64xf32, #acc8> -> tensor<64x128xf32, #accT>
  %back = fagpu.transpose %s : tensor<64x128xf32, #accT> -> tensor<128x64xf32, #acc8>
  %l = fagpu.expand_rows %lse : tensor<64xf32, #fagpu.rows<#accT>> -> tensor<64x128xf32, #accT>
  %d = arith.subf %s, %l : tensor<64x128xf32, #accT>
  return %back, %d : tensor<128x64xf32, #acc8>, tensor<64x128xf32, #accT>
}

// The backward's ops: per-row statistics loaded into registers, P written to
// shared memory and read transposed (Pᵀ·dO), dQ summed into memory.

// CHECK-LABEL: func.func @backward_tile
// CHECK: fagpu.load_tile %{{.*}}[%{{.*}}] limit %{{.*}} : memref<256xf32> -> tensor<64xf32, #fagpu.rows<#fagpu.wgmma_acc<warps = 4>>>
// CHECK: fagpu.store_to_shared %{{.*}}, %{{.*}} : tensor<64x64xbf16, #fagpu.wgmma_acc<warps = 4>>, !fagpu.smem<64x64xbf16, swizzle = 128>
// CHECK: fagpu.mma %{{.*}}, %{{.*}}, %{{.*}} transpose_a : !fagpu.smem<64x64xbf16, swizzle = 128>, !fagpu.smem<64x128xbf16, swizzle = 128>, tensor<64x128xf32, #fagpu.wgmma_acc<warps = 4>>
// CHECK: fagpu.store_tile %{{.*}}, %{{.*}}[%{{.*}}] limit %{{.*}} accumulate : tensor<64x128xf32, #fagpu.wgmma_acc<warps = 4>>, memref<256x128xf32>
// CHECK: fagpu.wait_shared_reads
// CHECK: fagpu.store_to_shared %{{.*}}, %{{.*}} sync = warpgroup unread : tensor<64x128xf32, #fagpu.wgmma_acc<warps = 4>>, !fagpu.smem<64x136xf32, swizzle = 0>
// CHECK: fagpu.reduce_to_global %{{.*}}, %{{.*}}[%{{.*}}] limit %{{.*}} bands = 1 : !fagpu.smem<64x136xf32, swizzle = 0>, memref<256x128xf32>
func.func @backward_tile(%lse: memref<256xf32>, %dq: memref<256x128xf32>,
                         %p: tensor<64x64xbf16, #acc>, %row: index, %n: index) {
  %stats = fagpu.load_tile %lse[%row] limit %n : memref<256xf32> -> tensor<64xf32, #rows>
  %ps = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
  %dos = fagpu.alloc_shared : !fagpu.smem<64x128xbf16, swizzle = 128>
  fagpu.store_to_shared %p, %ps : tensor<64x64xbf16, #acc>, !fagpu.smem<64x64xbf16, swizzle = 128>
  %zero = arith.constant dense<0.0> : tensor<64x128xf32, #acc>
  %dv = fagpu.mma %ps, %dos, %zero transpose_a : !fagpu.smem<64x64xbf16, swizzle = 128>, !fagpu.smem<64x128xbf16, swizzle = 128>, tensor<64x128xf32, #acc> -> tensor<64x128xf32, #acc>
  fagpu.store_tile %dv, %dq[%row] limit %n accumulate : tensor<64x128xf32, #acc>, memref<256x128xf32>
  %dqs = fagpu.alloc_shared : !fagpu.smem<64x136xf32, swizzle = 0>
  fagpu.wait_shared_reads
  fagpu.store_to_shared %dv, %dqs sync = warpgroup unread : tensor<64x128xf32, #acc>, !fagpu.smem<64x136xf32, swizzle = 0>
  fagpu.reduce_to_global %dqs, %dq[%row] limit %n bands = 1 : !fagpu.smem<64x136xf32, swizzle = 0>, memref<256x128xf32>
  return
}

// Two warpgroups splitting the columns of a 64-row accumulator (the
// backward's S and dQ) and its per-row values.

// CHECK-LABEL: func.func @column_split
// CHECK: fagpu.mma %{{.*}}, %{{.*}}, %{{.*}} transpose_b : !fagpu.smem<64x128xbf16, swizzle = 128>, !fagpu.smem<128x128xbf16, swizzle = 128>, tensor<64x128xf32, #fagpu.wgmma_acc_cols<warps = 8>>
// CHECK: fagpu.expand_rows %{{.*}} : tensor<64xf32, #fagpu.rows<#fagpu.wgmma_acc_cols<warps = 8>>> -> tensor<64x128xf32, #fagpu.wgmma_acc_cols<warps = 8>>
func.func @column_split(%q: !fagpu.smem<64x128xbf16, swizzle = 128>,
                        %k: !fagpu.smem<128x128xbf16, swizzle = 128>,
                        %lse: tensor<64xf32, #fagpu.rows<#fagpu.wgmma_acc_cols<warps = 8>>>) {
  %zero = arith.constant dense<0.0> : tensor<64x128xf32, #fagpu.wgmma_acc_cols<warps = 8>>
  %s = fagpu.mma %q, %k, %zero transpose_b : !fagpu.smem<64x128xbf16, swizzle = 128>, !fagpu.smem<128x128xbf16, swizzle = 128>, tensor<64x128xf32, #fagpu.wgmma_acc_cols<warps = 8>> -> tensor<64x128xf32, #fagpu.wgmma_acc_cols<warps = 8>>
  %l = fagpu.expand_rows %lse : tensor<64xf32, #fagpu.rows<#fagpu.wgmma_acc_cols<warps = 8>>> -> tensor<64x128xf32, #fagpu.wgmma_acc_cols<warps = 8>>
  return
}

// A reducer region between the producer and the consumers (the producer
// warpgroup's second warp), and the wait for bulk sums to land.
// CHECK-LABEL: func.func @warp_specialized_reducer
// CHECK: fagpu.warp_specialize producer(warpgroups = 1, registers = 24) {
// CHECK-NEXT: fagpu.arrive_expect_bytes
// CHECK-NEXT: } reducer {
// CHECK-NEXT: fagpu.wait_barrier
// CHECK-NEXT: fagpu.wait_global_sums
// CHECK-NEXT: fagpu.arrive_barrier
// CHECK-NEXT: } consumers(warpgroups = 2, registers = 240) {
func.func @warp_specialized_reducer(%i: index, %p: index) {
  %bars = fagpu.alloc_barriers : !fagpu.barriers<2>
  fagpu.warp_specialize producer(warpgroups = 1, registers = 24) {
    fagpu.arrive_expect_bytes %bars[%i], 16384 : !fagpu.barriers<2>
  } reducer {
    fagpu.wait_barrier %bars[%i] phase %p : !fagpu.barriers<2>
    fagpu.wait_global_sums
    fagpu.arrive_barrier %bars[%i] : !fagpu.barriers<2>
  } consumers(warpgroups = 2, registers = 240) {
    fagpu.wait_barrier %bars[%i] phase %p : !fagpu.barriers<2>
  }
  return
}

// CHECK-LABEL: gpu.func @tile_grid
// CHECK: fagpu.tile_grid %{{.*}}, %{{.*}}, %{{.*}}
gpu.module @tiles {
  gpu.func @tile_grid(%x: index, %z: index) kernel {
    %c4 = arith.constant 4 : index
    fagpu.tile_grid %x, %c4, %z
    gpu.return
  }
}
