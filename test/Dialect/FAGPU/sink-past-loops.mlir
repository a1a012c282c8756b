// RUN: fa-opt %s -split-input-file -pass-pipeline='builtin.module(gpu.module(fagpu-sink-past-loops))' | FileCheck %s

// A tile's output offset (row * 128) and the head it stores to are used
// only after the KV loop: both move past it, the row's operands with them;
// the Q block index also feeds the loop and stays.

gpu.module @m {
  // CHECK-LABEL: gpu.func @epilogue_offsets
  // CHECK: %[[T:.*]] = arith.addi %[[ROUND:.*]], %{{.*}} : index
  // CHECK-NEXT: %[[QBLOCK:.*]] = arith.remui %[[T]], %{{.*}} : index
  // CHECK-NEXT: scf.for
  // CHECK: }
  // CHECK-NEXT: %[[LAST:.*]] = arith.subi %{{.*}}, %[[QBLOCK]] : index
  // CHECK-NEXT: %[[ROW:.*]] = arith.muli %[[LAST]], %{{.*}} : index
  // CHECK-NEXT: %[[HEAD:.*]] = arith.divui %[[T]], %{{.*}} : index
  // CHECK-NEXT: memref.store %{{.*}}, %{{.*}}[%[[HEAD]], %[[ROW]]]
  gpu.func @epilogue_offsets(%out: memref<16x8192xf32>, %round: index,
                             %block: index) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c63 = arith.constant 63 : index
    %c64 = arith.constant 64 : index
    %c128 = arith.constant 128 : index
    %zero = arith.constant 0.0 : f32
    %t = arith.addi %round, %block : index
    %qblock = arith.remui %t, %c64 : index
    %head = arith.divui %t, %c64 : index
    %last = arith.subi %c63, %qblock : index
    %row = arith.muli %last, %c128 : index
    %sum = scf.for %j = %c0 to %qblock step %c1 iter_args(%acc = %zero) -> f32 {
      %next = arith.addf %acc, %acc : f32
      scf.yield %next : f32
    }
    memref.store %sum, %out[%head, %row] : memref<16x8192xf32>
    gpu.return
  }
}

// -----

// Nothing moves without a loop between an op and its use, nor an op used
// inside the loop, nor one with side effects.

gpu.module @m {
  // CHECK-LABEL: gpu.func @stays
  // CHECK: %[[A:.*]] = arith.addi
  // CHECK-NEXT: %[[B:.*]] = arith.muli
  // CHECK-NEXT: %[[V:.*]] = memref.load
  // CHECK-NEXT: memref.store %{{.*}}, %{{.*}}[%[[A]]]
  // CHECK-NEXT: scf.for
  gpu.func @stays(%buf: memref<64xf32>, %x: index) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %a = arith.addi %x, %c1 : index
    %b = arith.muli %x, %x : index
    %v = memref.load %buf[%x] : memref<64xf32>
    memref.store %v, %buf[%a] : memref<64xf32>
    scf.for %j = %c0 to %b step %c1 {
      scf.yield
    }
    memref.store %v, %buf[%c0] : memref<64xf32>
    gpu.return
  }
}
