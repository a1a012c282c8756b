//===- WarpSpecializeOp.cpp - fagpu.warp_specialize's verifier ----------===//
//
// The regions of a warp-specialized block: what each may hold, and the
// registers setmaxnreg may move between them.
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FAGPU/IR/FAGPU.h"

using namespace mlir;
using namespace mlir::fagpu;

LogicalResult WarpSpecializeOp::verify() {
  for (Region *region : getRegions()) {
    // These synchronise the whole block (a barrier in their lowering).
    WalkResult found = region->walk([](Operation *op) {
      return isa<gpu::BarrierOp, CopyToSharedOp, WaitSharedCopiesOp,
                 InitBarriersOp>(op)
                 ? WalkResult::interrupt()
                 : WalkResult::advance();
    });
    if (found.wasInterrupted())
      return emitOpError() << "regions synchronise through mbarriers only: "
                              "a block-wide barrier (gpu.barrier, or the one "
                              "of a synchronous copy, copy wait or barrier "
                              "initialisation) would deadlock";
  }
  if (getProducerRegisters() % 8 || getConsumerRegisters() % 8)
    return emitOpError() << "register counts must be multiples of 8";
  if (hasReducer() && hasTransposer())
    return emitOpError() << "a reducer and a transposer region would share "
                            "the producer's warps";
  if (hasReducer() || hasTransposer()) {
    StringRef helper = hasReducer() ? "reducer" : "transposer";
    if (getProducerWarpgroups() != 1)
      return emitOpError() << "a " << helper
                           << " region runs on the warps of one producer "
                              "warpgroup, not of "
                           << getProducerWarpgroups();
    WalkResult many = getProducer().walk([](Operation *op) {
      return runsOnOneProducerWarp(op) ? WalkResult::advance()
                                       : WalkResult::interrupt();
    });
    if (many.wasInterrupted())
      return emitOpError() << "with a " << helper
                           << " region the producer runs on one warp: it "
                              "may only issue TMA loads and wait on barriers";
  }
  // setmaxnreg moves registers within what the block was launched with:
  // 65536 per SM over its threads, in steps of 8 per thread. Asking for
  // more than that, the warpgroups that raise theirs wait forever (the
  // persistent producer at 32 with two compute warpgroups at 240 hung).
  int64_t pool = getProducerWarpgroups() * getProducerRegisters() +
                 getConsumerWarpgroups() * getConsumerRegisters();
  int64_t threads = getBlockThreads();
  int64_t launched = 65536 / threads / 8 * 8 * threads;
  if (pool * 128 > launched)
    return emitOpError() << "registers of all warpgroups (" << pool * 128
                         << ") exceed the " << launched
                         << " the block is launched with ("
                         << launched / threads << " per thread for " << threads
                         << " threads)";
  return success();
}

bool WarpSpecializeOp::runsOnOneProducerWarp(Operation *op) {
  // scf by name: the dialect library does not link it.
  Dialect *dialect = op->getDialect();
  return isa<TmaLoadOp, ArriveExpectBytesOp, WaitBarrierOp, StageOp>(op) ||
         isa_and_nonnull<arith::ArithDialect>(dialect) ||
         (dialect && dialect->getNamespace() == "scf");
}
