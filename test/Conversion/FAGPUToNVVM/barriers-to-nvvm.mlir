// RUN: fa-opt %s -split-input-file -pass-pipeline='builtin.module(gpu.module(fa-convert-fagpu-to-nvvm))' | FileCheck %s

// mbarriers, TMA and the warp-specialized split on NVVM.
//
// The barriers are placed after the shared tiles (8 bytes each, here at
// 8192 + 2 x 16384 = 40960); the first thread of the block initialises
// each with its arrival count, then the initialisation is fenced and the
// block synchronises. warp_specialize becomes a branch on the thread id:
// threads below 128 (the producer warpgroup) shrink their registers, the
// others grow theirs. The producer's single-issue ops run on its thread 0:
// the expect-bytes arrival and one cp.async.bulk.tensor per 64-column box
// of the 64 x 128 tile (the second box 64 rows x 128 bytes = 8192 bytes
// further), coordinates innermost first (column, row, head, batch). A wait
// polls the barrier with the phase's parity; the consumers count their
// threads from 128, so their lane (for the per-warp arrival) and their
// layouts' lanes and warps are those of (thread id - 128).

#rows = #fagpu.rows<#fagpu.wgmma_acc<warps = 4>>
gpu.module @m {
  // CHECK-LABEL: gpu.func @split
  // CHECK-SAME: (%{{[a-z0-9]+}}: memref<2x4x256x128xbf16>, %[[MAP:[a-z0-9]+]]: !llvm.ptr, %[[B:[a-z0-9]+]]: index, %[[H:[a-z0-9]+]]: index, %[[ROW:[a-z0-9]+]]: index, %[[I:[a-z0-9]+]]: index, %[[P:[a-z0-9]+]]: index,
  // CHECK-SAME: fa.shared_bytes = 40984 : i64
  // CHECK-SAME: fagpu.tensor_map_args = array<i64: 1>
  // The warp index, broadcast from lane 0 once where every thread runs.
  // CHECK-NEXT: %[[ETID:.*]] = gpu.thread_id x
  // CHECK-NEXT: %[[E32:.*]] = arith.constant 32 : index
  // CHECK-NEXT: %[[EWARP:.*]] = arith.divui %[[ETID]], %[[E32]] : index
  // CHECK-NEXT: %[[EWARP32:.*]] = arith.index_castui %[[EWARP]] : index to i32
  // CHECK: %{{.*}}, %{{.*}} = gpu.shuffle idx %[[EWARP32]]
  // CHECK-NEXT: %[[WARP:.*]] = arith.index_castui %{{.*}} {fagpu.uniform_warp_index} : i32 to index
  // CHECK: %[[RINGOFF:.*]] = arith.constant 8192 : index
  // CHECK-NEXT: %[[RINGOFF32:.*]] = arith.index_cast %[[RINGOFF]] : index to i32
  // CHECK-NEXT: %[[RING:.*]] = llvm.getelementptr %{{.*}}[%[[RINGOFF32]]] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
  // CHECK: %[[BAROFF:.*]] = arith.constant 40960 : index
  // CHECK-NEXT: %[[BAROFF32:.*]] = arith.index_cast %[[BAROFF]] : index to i32
  // CHECK-NEXT: %[[BARS:.*]] = llvm.getelementptr %{{.*}}[%[[BAROFF32]]] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
  //
  // init_barriers: thread 0 initialises barriers 0, 1, 2 at +0, +8, +16.
  // CHECK: %[[TID0:.*]] = gpu.thread_id x
  // CHECK-NEXT: %[[FIRST:.*]] = arith.cmpi eq, %[[TID0]], %{{.*}} : index
  // CHECK-NEXT: scf.if %[[FIRST]] {
  // CHECK-NEXT: %[[A0:.*]] = arith.constant 1 : i32
  // CHECK-NEXT: %[[I0:.*]] = arith.constant 0 : index
  // CHECK-NEXT: %[[S0:.*]] = arith.constant 8 : index
  // CHECK-NEXT: %[[O0:.*]] = arith.muli %[[I0]], %[[S0]] : index
  // CHECK-NEXT: %[[O032:.*]] = arith.index_cast %[[O0]] : index to i32
  // CHECK-NEXT: %[[BAR0:.*]] = llvm.getelementptr %[[BARS]][%[[O032]]]
  // CHECK-NEXT: nvvm.mbarrier.init %[[BAR0]], %[[A0]] : !llvm.ptr<3>, i32
  // CHECK: arith.constant 1 : index
  // CHECK: nvvm.mbarrier.init %{{.*}}, %{{.*}} : !llvm.ptr<3>, i32
  // CHECK-NEXT: %[[A2:.*]] = arith.constant 4 : i32
  // CHECK-NEXT: %[[I2:.*]] = arith.constant 2 : index
  // CHECK-NEXT: %[[S2:.*]] = arith.constant 8 : index
  // CHECK-NEXT: %[[O2:.*]] = arith.muli %[[I2]], %[[S2]] : index
  // CHECK-NEXT: %[[O232:.*]] = arith.index_cast %[[O2]] : index to i32
  // CHECK-NEXT: %[[BAR2:.*]] = llvm.getelementptr %[[BARS]][%[[O232]]]
  // CHECK-NEXT: nvvm.mbarrier.init %[[BAR2]], %[[A2]] : !llvm.ptr<3>, i32
  // CHECK-NEXT: }
  // CHECK-NEXT: nvvm.fence.mbarrier.init
  // CHECK-NEXT: gpu.barrier
  //
  // warp_specialize: the producer warpgroup is threads [0, 128).
  // CHECK-NEXT: %[[TID:.*]] = gpu.thread_id x
  // CHECK-NEXT: %[[C128:.*]] = arith.constant 128 : index
  // CHECK-NEXT: %[[ISPROD:.*]] = arith.cmpi ult, %[[TID]], %[[C128]] : index
  // CHECK-NEXT: scf.if %[[ISPROD]] {
  // CHECK-NEXT: nvvm.setmaxregister decrease 24
  // Its first warp alone loads (TMA loads and waits only): the others
  // would spin on the same barriers.
  // CHECK-NEXT: %[[W32P:.*]] = arith.constant 32 : index
  // CHECK-NEXT: %[[PTID0:.*]] = gpu.thread_id x
  // CHECK-NEXT: %[[FIRSTW:.*]] = arith.cmpi ult, %[[PTID0]], %[[W32P]] : index
  // CHECK-NEXT: scf.if %[[FIRSTW]] {
  //
  // wait_barrier %b[%i] phase %p: parity p % 2 at barrier + 8 i.
  // CHECK-NEXT: %[[TWO:.*]] = arith.constant 2 : index
  // CHECK-NEXT: %[[PAR:.*]] = arith.remui %[[P]], %[[TWO]] : index
  // CHECK-NEXT: %[[TICKS:.*]] = arith.constant 10000000 : i32
  // CHECK-NEXT: %[[PAR32:.*]] = arith.index_castui %[[PAR]] : index to i32
  // CHECK-NEXT: %[[E8:.*]] = arith.constant 8 : index
  // CHECK-NEXT: %[[EOFF:.*]] = arith.muli %[[I]], %[[E8]] : index
  // CHECK-NEXT: %[[EOFF32:.*]] = arith.index_cast %[[EOFF]] : index to i32
  // CHECK-NEXT: %[[EBAR:.*]] = llvm.getelementptr %[[BARS]][%[[EOFF32]]]
  // CHECK-NEXT: nvvm.mbarrier.try_wait.parity %[[EBAR]], %[[PAR32]], %[[TICKS]] : !llvm.ptr<3>, i32, i32
  //
  // arrive_expect_bytes on the producer's thread 0.
  // CHECK-NEXT: %[[Z1:.*]] = arith.constant 0 : index
  // CHECK-NEXT: %[[TID1:.*]] = gpu.thread_id x
  // CHECK-NEXT: %[[ONE1:.*]] = arith.cmpi eq, %[[TID1]], %[[Z1]] : index
  // CHECK-NEXT: scf.if %[[ONE1]] {
  // CHECK-NEXT: %[[BYTES:.*]] = arith.constant 16384 : i32
  // CHECK: %[[FBAR:.*]] = llvm.getelementptr %[[BARS]]
  // CHECK-NEXT: nvvm.mbarrier.arrive.expect_tx %[[FBAR]], %[[BYTES]] : !llvm.ptr<3>, i32
  // CHECK-NEXT: }
  //
  // The stage (16384 bytes apart), then the TMA on thread 0.
  // CHECK-NEXT: %[[STRIDE:.*]] = arith.constant 16384 : index
  // CHECK-NEXT: %[[SOFF:.*]] = arith.muli %[[I]], %[[STRIDE]] : index
  // CHECK-NEXT: %[[SOFF32:.*]] = arith.index_cast %[[SOFF]] : index to i32
  // CHECK-NEXT: %[[STAGE:.*]] = llvm.getelementptr %[[RING]][%[[SOFF32]]]
  // CHECK-NEXT: %[[Z2:.*]] = arith.constant 0 : index
  // CHECK-NEXT: %[[TID2:.*]] = gpu.thread_id x
  // CHECK-NEXT: %[[ONE2:.*]] = arith.cmpi eq, %[[TID2]], %[[Z2]] : index
  // CHECK-NEXT: scf.if %[[ONE2]] {
  // CHECK: %[[TBAR:.*]] = llvm.getelementptr %[[BARS]]
  // CHECK-NEXT: %[[ROW32:.*]] = arith.index_castui %[[ROW]] : index to i32
  // CHECK-NEXT: %[[H32:.*]] = arith.index_castui %[[H]] : index to i32
  // CHECK-NEXT: %[[B32:.*]] = arith.index_castui %[[B]] : index to i32
  // CHECK-NEXT: %[[COL0:.*]] = arith.constant 0 : i32
  // CHECK-NEXT: %[[D0:.*]] = arith.constant 0 : index
  // CHECK-NEXT: %[[D032:.*]] = arith.index_cast %[[D0]] : index to i32
  // CHECK-NEXT: %[[DST0:.*]] = llvm.getelementptr %[[STAGE]][%[[D032]]]
  // CHECK-NEXT: %[[CL0:.*]] = llvm.addrspacecast %[[DST0]] : !llvm.ptr<3> to !llvm.ptr<7>
  // CHECK-NEXT: nvvm.cp.async.bulk.tensor.shared.cluster.global %[[CL0]], %[[MAP]], %[[TBAR]], box[%[[COL0]], %[[ROW32]], %[[H32]], %[[B32]]] : !llvm.ptr<7>, !llvm.ptr
  // CHECK-NEXT: %[[COL1:.*]] = arith.constant 64 : i32
  // CHECK-NEXT: %[[D1:.*]] = arith.constant 8192 : index
  // CHECK-NEXT: %[[D132:.*]] = arith.index_cast %[[D1]] : index to i32
  // CHECK-NEXT: %[[DST1:.*]] = llvm.getelementptr %[[STAGE]][%[[D132]]]
  // CHECK-NEXT: %[[CL1:.*]] = llvm.addrspacecast %[[DST1]] : !llvm.ptr<3> to !llvm.ptr<7>
  // CHECK-NEXT: nvvm.cp.async.bulk.tensor.shared.cluster.global %[[CL1]], %[[MAP]], %[[TBAR]], box[%[[COL1]], %[[ROW32]], %[[H32]], %[[B32]]] : !llvm.ptr<7>, !llvm.ptr
  // CHECK-NEXT: }
  // CHECK-NOT: nvvm.cp.async.bulk.tensor
  //
  // The consumers: registers up, then the same wait.
  // CHECK: } else {
  // CHECK-NEXT: nvvm.setmaxregister increase 240
  // CHECK: nvvm.mbarrier.try_wait.parity
  // The row store's owners: warps from the producer's four on, lanes from
  // thread id - 128.
  // CHECK: %[[PRODW:.*]] = arith.constant 4 : index
  // CHECK-NEXT: arith.subi %[[WARP]], %[[PRODW]] : index
  // CHECK: %[[CTID:.*]] = gpu.thread_id x
  // CHECK-NEXT: %[[OFF:.*]] = arith.constant 128 : index
  // CHECK-NEXT: %[[GTID:.*]] = arith.subi %[[CTID]], %[[OFF]] : index
  // CHECK-NEXT: arith.remui %[[GTID]], %{{.*}} : index
  // CHECK: memref.store
  // CHECK: memref.store
  // arrive_barrier: lane 0 of each consumer warp.
  // CHECK: %[[ATID:.*]] = gpu.thread_id x
  // CHECK-NEXT: %[[AOFF:.*]] = arith.constant 128 : index
  // CHECK-NEXT: %[[AGTID:.*]] = arith.subi %[[ATID]], %[[AOFF]] : index
  // CHECK-NEXT: %[[LANE:.*]] = arith.remui %[[AGTID]], %{{.*}} : index
  // CHECK-NEXT: %[[LANE0:.*]] = arith.cmpi eq, %[[LANE]], %{{.*}} : index
  // CHECK-NEXT: scf.if %[[LANE0]] {
  // CHECK: %[[ABAR:.*]] = llvm.getelementptr %[[BARS]]
  // CHECK-NEXT: nvvm.mbarrier.arrive %[[ABAR]] : !llvm.ptr<3> -> i64
  // CHECK-NEXT: }
  // CHECK-NEXT: }
  // CHECK-NEXT: gpu.return
  // CHECK-NOT: fagpu.
  gpu.func @split(%k: memref<2x4x256x128xbf16>, %map: !fagpu.tensor_map<memref<2x4x256x128xbf16>, box = [64, 64]>,
                  %b: index, %h: index, %row: index, %i: index, %p: index, %x: f32, %dst: memref<64xf32>) kernel {
    %pad = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
    %ring = fagpu.alloc_shared : !fagpu.smem<2x64x128xbf16, swizzle = 128>
    %bars = fagpu.alloc_barriers : !fagpu.barriers<3>
    fagpu.init_barriers %bars arrivals = [1, 1, 4] : !fagpu.barriers<3>
    fagpu.warp_specialize producer(warpgroups = 1, registers = 24) {
      fagpu.wait_barrier %bars[%i] phase %p : !fagpu.barriers<3>
      fagpu.arrive_expect_bytes %bars[%i], 16384 : !fagpu.barriers<3>
      %t = fagpu.stage %ring[%i] : !fagpu.smem<2x64x128xbf16, swizzle = 128> -> !fagpu.smem<64x128xbf16, swizzle = 128>
      fagpu.tma_load %map[%b, %h, %row] into %t, %bars[%i] : !fagpu.tensor_map<memref<2x4x256x128xbf16>, box = [64, 64]>, !fagpu.smem<64x128xbf16, swizzle = 128>, !fagpu.barriers<3>
    } consumers(warpgroups = 1, registers = 240) {
      fagpu.wait_barrier %bars[%i] phase %p : !fagpu.barriers<3>
      %s = tensor.splat %x : tensor<64xf32, #rows>
      fagpu.store_tile %s, %dst[%row] limit %row : tensor<64xf32, #rows>, memref<64xf32>
      fagpu.arrive_barrier %bars[%i] : !fagpu.barriers<3>
    }
    gpu.return
  }
}

// -----

// Group-relative threads with two producer warpgroups: the split is at
// thread 256; a producer warp arrives from its lane 0 of the raw thread id,
// the consumers' single-issue and per-warp ops count from 256, and their
// chunked copies stride by the consumers' 384 threads, not the block's.

gpu.module @m {
  // CHECK-LABEL: gpu.func @groups
  // CHECK: %[[TID:.*]] = gpu.thread_id x
  // CHECK-NEXT: %[[C256:.*]] = arith.constant 256 : index
  // CHECK-NEXT: %[[ISPROD:.*]] = arith.cmpi ult, %[[TID]], %[[C256]] : index
  // CHECK-NEXT: scf.if %[[ISPROD]] {
  // CHECK-NEXT: nvvm.setmaxregister decrease 32
  // CHECK-NEXT: %[[Z:.*]] = arith.constant 0 : index
  // CHECK-NEXT: %[[W:.*]] = arith.constant 32 : index
  // CHECK-NEXT: %[[PTID:.*]] = gpu.thread_id x
  // CHECK-NEXT: %[[PLANE:.*]] = arith.remui %[[PTID]], %[[W]] : index
  // CHECK-NEXT: %[[PL0:.*]] = arith.cmpi eq, %[[PLANE]], %[[Z]] : index
  // CHECK-NEXT: scf.if %[[PL0]] {
  // CHECK: nvvm.mbarrier.arrive
  // CHECK: } else {
  // CHECK-NEXT: nvvm.setmaxregister increase 136
  // CHECK-NEXT: %[[Z2:.*]] = arith.constant 0 : index
  // CHECK-NEXT: %[[CTID:.*]] = gpu.thread_id x
  // CHECK-NEXT: %[[OFF:.*]] = arith.constant 256 : index
  // CHECK-NEXT: %[[GTID:.*]] = arith.subi %[[CTID]], %[[OFF]] : index
  // CHECK-NEXT: %[[FIRST:.*]] = arith.cmpi eq, %[[GTID]], %[[Z2]] : index
  // CHECK-NEXT: scf.if %[[FIRST]] {
  // CHECK-NEXT: %[[BYTES:.*]] = arith.constant 64 : i32
  // CHECK: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %[[BYTES]] : !llvm.ptr<3>, i32
  // CHECK: %[[ATID:.*]] = gpu.thread_id x
  // CHECK-NEXT: %[[AOFF:.*]] = arith.constant 256 : index
  // CHECK-NEXT: arith.subi %[[ATID]], %[[AOFF]] : index
  // CHECK: nvvm.mbarrier.arrive
  // CHECK: %[[CPTID:.*]] = gpu.thread_id x
  // CHECK-NEXT: %[[CPOFF:.*]] = arith.constant 256 : index
  // CHECK-NEXT: %[[START:.*]] = arith.subi %[[CPTID]], %[[CPOFF]] : index
  // CHECK-NEXT: %[[STEP:.*]] = arith.constant 384 : index
  // CHECK-NEXT: %[[END:.*]] = arith.constant 512 : index
  // CHECK-NEXT: scf.for %{{.*}} = %[[START]] to %[[END]] step %[[STEP]] {
  // CHECK: nvvm.cp.async.shared.global
  gpu.func @groups(%i: index, %src: memref<256x64xbf16>, %row: index, %n: index) kernel {
    %t = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
    %bars = fagpu.alloc_barriers : !fagpu.barriers<2>
    fagpu.warp_specialize producer(warpgroups = 2, registers = 32) {
      fagpu.arrive_barrier %bars[%i] : !fagpu.barriers<2>
    } consumers(warpgroups = 3, registers = 136) {
      fagpu.arrive_expect_bytes %bars[%i], 64 : !fagpu.barriers<2>
      fagpu.arrive_barrier %bars[%i] : !fagpu.barriers<2>
      fagpu.async_copy_to_shared %src[%row] limit %n into %t : memref<256x64xbf16>, !fagpu.smem<64x64xbf16, swizzle = 128>
    }
    gpu.return
  }
}

// -----

// Inside the split a block-scope sync is one of the region's threads: a
// named barrier (7 for the consumers, 6 for the producer) counting them,
// never barrier 0, which the other region does not reach. A warpgroup-scope
// sync stays its warpgroup's (8 + the warpgroup within its region).

#acc = #fagpu.wgmma_acc<warps = 8>
#acc4 = #fagpu.wgmma_acc<warps = 4>
gpu.module @m {
  // CHECK-LABEL: gpu.func @region_syncs
  // CHECK: nvvm.setmaxregister decrease 24
  // CHECK: llvm.store
  // CHECK: nvvm.fence.proxy
  // CHECK: %[[PID:.*]] = arith.constant 6 : i32
  // CHECK-NEXT: %[[PTHREADS:.*]] = arith.constant 128 : i32
  // CHECK-NEXT: nvvm.barrier id = %[[PID]] number_of_threads = %[[PTHREADS]]
  // CHECK: nvvm.setmaxregister increase 240
  // CHECK-NOT: gpu.barrier
  // CHECK: %[[CID:.*]] = arith.constant 7 : i32
  // CHECK-NEXT: %[[CTHREADS:.*]] = arith.constant 256 : i32
  // CHECK-NEXT: nvvm.barrier id = %[[CID]] number_of_threads = %[[CTHREADS]]
  // CHECK: llvm.store
  // CHECK: nvvm.fence.proxy
  // CHECK: %[[CID2:.*]] = arith.constant 7 : i32
  // CHECK-NEXT: %[[CTHREADS2:.*]] = arith.constant 256 : i32
  // CHECK-NEXT: nvvm.barrier id = %[[CID2]] number_of_threads = %[[CTHREADS2]]
  // CHECK-NOT: gpu.barrier
  gpu.func @region_syncs(%x: tensor<128x64xf32, #acc>, %y: tensor<64x64xf32, #acc4>) kernel {
    %t = fagpu.alloc_shared : !fagpu.smem<128x64xf32, swizzle = 0>
    %p = fagpu.alloc_shared : !fagpu.smem<64x64xf32, swizzle = 0>
    fagpu.warp_specialize producer(warpgroups = 1, registers = 24) {
      fagpu.store_to_shared %y, %p unread : tensor<64x64xf32, #acc4>, !fagpu.smem<64x64xf32, swizzle = 0>
    } consumers(warpgroups = 2, registers = 240) {
      fagpu.store_to_shared %x, %t : tensor<128x64xf32, #acc>, !fagpu.smem<128x64xf32, swizzle = 0>
    }
    gpu.return
  }
}

// -----

// A tensor map that the kernel only passes on keeps its place in the
// signature as a generic pointer, listed for fa-finalize-nvvm-kernels.

gpu.module @m {
  // CHECK-LABEL: gpu.func @maps
  // CHECK-SAME: (%{{[a-z0-9]+}}: memref<256x64xbf16>, %{{[a-z0-9]+}}: !llvm.ptr, %{{[a-z0-9]+}}: index, %{{[a-z0-9]+}}: !llvm.ptr)
  // CHECK-SAME: fagpu.tensor_map_args = array<i64: 1, 3>
  // CHECK-NOT: unrealized_conversion_cast
  gpu.func @maps(%x: memref<256x64xbf16>, %a: !fagpu.tensor_map<memref<256x64xbf16>, box = [64, 64]>, %n: index,
                 %b: !fagpu.tensor_map<memref<256x64xbf16>, box = [128, 64]>) kernel {
    gpu.return
  }
}

// -----

// A reducer region: the producer warpgroup's first warp loads, its second
// (threads [32, 64), positions counted from 32) runs the reducer. A turn's
// group is that warp: thread 32 spins on the acquire load, then a warp
// sync; thread 32 issues the reduction; wait_global_sums waits for the
// bulk group's writes (no `.read`); the turn passes after a warp sync.

gpu.module @m {
  // CHECK-LABEL: gpu.func @reducer
  // CHECK: nvvm.setmaxregister decrease 24
  // CHECK-NEXT: %[[W32:.*]] = arith.constant 32 : index
  // CHECK-NEXT: %[[PTID:.*]] = gpu.thread_id x
  // CHECK-NEXT: %[[FIRSTW:.*]] = arith.cmpi ult, %[[PTID]], %[[W32]] : index
  // CHECK-NEXT: scf.if %[[FIRSTW]] {
  // CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global
  // CHECK: } else {
  // CHECK-NEXT: %[[W64:.*]] = arith.constant 64 : index
  // CHECK-NEXT: %[[SECONDW:.*]] = arith.cmpi ult, %[[PTID]], %[[W64]] : index
  // CHECK-NEXT: scf.if %[[SECONDW]] {
  // CHECK: nvvm.mbarrier.try_wait.parity
  // CHECK: %[[TTID:.*]] = gpu.thread_id x
  // CHECK-NEXT: %[[T32:.*]] = arith.constant 32 : index
  // CHECK-NEXT: %[[TG:.*]] = arith.subi %[[TTID]], %[[T32]] : index
  // CHECK-NEXT: %[[TFIRST:.*]] = arith.cmpi eq, %[[TG]], %{{.*}} : index
  // CHECK-NEXT: scf.if %[[TFIRST]] {
  // CHECK: scf.while
  // CHECK: llvm.load %{{.*}} atomic syncscope("device") acquire
  // CHECK: nvvm.bar.warp.sync
  // CHECK: nvvm.cp.async.bulk.tensor.reduce
  // CHECK: nvvm.cp.async.bulk.commit.group
  // CHECK-NEXT: }
  // CHECK-NEXT: nvvm.cp.async.bulk.wait_group 0{{$}}
  // CHECK: nvvm.bar.warp.sync
  // CHECK: llvm.inline_asm has_side_effects asm_dialect = att "red.release.gpu.global.add.u32 [$0], 1;"
  // CHECK: nvvm.mbarrier.arrive
  // CHECK: } else {
  // CHECK-NEXT: nvvm.setmaxregister increase 240
  gpu.func @reducer(%map: !fagpu.tensor_map<memref<2x4x256x128xbf16>, box = [64, 64]>,
                    %dmap: !fagpu.tensor_map<memref<2x4x256x64xf32>, box = [64, 32]>,
                    %turns: memref<2x4x4xi32>,
                    %b: index, %h: index, %row: index, %i: index, %p: index, %turn: index) kernel {
    %ring = fagpu.alloc_shared : !fagpu.smem<2x64x128xbf16, swizzle = 128>
    %dq = fagpu.alloc_shared : !fagpu.smem<64x64xf32, swizzle = 128>
    %bars = fagpu.alloc_barriers : !fagpu.barriers<3>
    fagpu.init_barriers %bars arrivals = [1, 8, 1] : !fagpu.barriers<3>
    fagpu.warp_specialize producer(warpgroups = 1, registers = 24) {
      fagpu.arrive_expect_bytes %bars[%i], 16384 : !fagpu.barriers<3>
      %t = fagpu.stage %ring[%i] : !fagpu.smem<2x64x128xbf16, swizzle = 128> -> !fagpu.smem<64x128xbf16, swizzle = 128>
      fagpu.tma_load %map[%b, %h, %row] into %t, %bars[%i] : !fagpu.tensor_map<memref<2x4x256x128xbf16>, box = [64, 64]>, !fagpu.smem<64x128xbf16, swizzle = 128>, !fagpu.barriers<3>
    } reducer {
      fagpu.wait_barrier %bars[%i] phase %p : !fagpu.barriers<3>
      fagpu.wait_turn %turns[%b, %h, %i], %turn : memref<2x4x4xi32>
      fagpu.tma_reduce %dmap[%b, %h, %row] from %dq bands = 1 : !fagpu.tensor_map<memref<2x4x256x64xf32>, box = [64, 32]>, !fagpu.smem<64x64xf32, swizzle = 128>
      fagpu.wait_global_sums
      fagpu.pass_turn %turns[%b, %h, %i] : memref<2x4x4xi32>
      fagpu.arrive_barrier %bars[%i] : !fagpu.barriers<3>
    } consumers(warpgroups = 2, registers = 240) {
      fagpu.wait_barrier %bars[%i] phase %p : !fagpu.barriers<3>
    }
    gpu.return
  }
}

// -----

// A tile of 192-byte rows (head dim 96) in 64-byte swizzle atoms: three
// boxes of one atom (32 columns), each into its band of 64 rows x 64 bytes
// (4 KiB apart).

gpu.module @m {
  // CHECK-LABEL: gpu.func @bands_of_64_bytes
  // CHECK: arith.constant 0 : i32
  // CHECK: %[[B0:.*]] = arith.constant 0 : index
  // CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global
  // CHECK: arith.constant 32 : i32
  // CHECK: arith.constant 4096 : index
  // CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global
  // CHECK: arith.constant 64 : i32
  // CHECK: arith.constant 8192 : index
  // CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global
  // CHECK-NOT: nvvm.cp.async.bulk.tensor
  // CHECK: gpu.return
  gpu.func @bands_of_64_bytes(%map: !fagpu.tensor_map<memref<2x4x256x96xbf16>, box = [64, 32]>,
                              %b: index, %h: index, %row: index, %i: index) kernel {
    %t = fagpu.alloc_shared : !fagpu.smem<64x96xbf16, swizzle = 64>
    %bars = fagpu.alloc_barriers : !fagpu.barriers<1>
    fagpu.tma_load %map[%b, %h, %row] into %t, %bars[%i] : !fagpu.tensor_map<memref<2x4x256x96xbf16>, box = [64, 32]>, !fagpu.smem<64x96xbf16, swizzle = 64>, !fagpu.barriers<1>
    gpu.return
  }
}
