//===- ReductionHandoff.cpp - A staging tile's reductions to the producer -===//
//
// The compute warps of the backward stored dQ into a staging tile, waited
// for the block, issued one TMA reduction and, before the next tile's
// store, waited for the copy engine to have read it. With two stages and a
// full/empty mbarrier pair per stage, they only store and arrive; the
// producer thread, one iteration behind, issues and waits.
//
//===----------------------------------------------------------------------===//

#include "ReductionHandoff.h"

#include "mlir/Analysis/TopologicalSortUtils.h"
#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace mlir::fagpu;

int64_t ReductionHandoff::extraSharedBytes() {
  return (kHandoffStages - 1) * staging.getType().getStageStride() +
         8 * 2 * kHandoffStages;
}

FailureOr<std::optional<ReductionHandoff>>
mlir::fagpu::findReductionHandoff(gpu::GPUFuncOp kernel,
                                  const KernelCopies &copies) {
  if (copies.loops.empty())
    return std::optional<ReductionHandoff>();
  ReductionHandoff handoff;
  for (scf::ForOp loop : copies.loops) {
    SmallVector<TmaReduceOp> reductions(loop.getBody()->getOps<TmaReduceOp>());
    if (reductions.size() != 1)
      return std::optional<ReductionHandoff>();
    TmaReduceOp reduce = reductions.front();
    auto staging = reduce.getTile().getDefiningOp<AllocSharedOp>();
    if (!staging || staging->getBlock() != &kernel.front() ||
        (handoff.staging && staging != handoff.staging))
      return std::optional<ReductionHandoff>();
    handoff.staging = staging;
    StoreToSharedOp store;
    for (auto candidate : loop.getBody()->getOps<StoreToSharedOp>())
      if (candidate.getDest() == staging.getResult()) {
        if (store)
          return std::optional<ReductionHandoff>();
        store = candidate;
      }
    if (!store || !store->isBeforeInBlock(reduce))
      return std::optional<ReductionHandoff>();
    // The producer recomputes the coordinates from the induction variable.
    auto carried = [&](Value v) {
      return llvm::is_contained(loop.getRegionIterArgs(), v);
    };
    SetVector<Operation *> slice = sliceInLoop(loop, reduce.getCoords());
    if (llvm::any_of(reduce.getCoords(), carried) ||
        llvm::any_of(slice, [&](Operation *op) {
          return llvm::any_of(op->getOperands(), carried) ||
                 !isMemoryEffectFree(op);
        }))
      return reduce.emitError()
             << "fagpu-warp-specialize hands a reduction to the producer "
                "only if its coordinates are computed from the induction "
                "variable without side effects";
    handoff.stores.push_back(store);
    handoff.reductions.push_back(reduce);
  }
  for (Operation *user : handoff.staging->getUsers())
    if (!llvm::is_contained(handoff.stores, user) &&
        !llvm::is_contained(handoff.reductions, user))
      return std::optional<ReductionHandoff>();
  int64_t reductions = 0;
  kernel.walk([&](Operation *op) {
    reductions += isa<TmaReduceOp, ReduceToGlobalOp>(op);
  });
  handoff.takesAllReductions =
      reductions == static_cast<int64_t>(handoff.reductions.size());
  return std::optional<ReductionHandoff>(std::move(handoff));
}

void mlir::fagpu::shareHandoffOperands(ReductionHandoff &handoff,
                                       ArrayRef<scf::ForOp> loops,
                                       function_ref<void(Value)> share) {
  for (auto [loop, reduce] : llvm::zip(loops, handoff.reductions)) {
    auto outside = [&](Value v) {
      return !loop->isAncestor(v.getParentBlock()->getParentOp());
    };
    for (Value v : reduce.getCoords())
      if (outside(v))
        share(v);
    for (Operation *op : sliceInLoop(loop, reduce.getCoords()))
      for (Value v : op->getOperands())
        if (outside(v))
          share(v);
  }
}

namespace {

/// Builds the two sides' ops on the staging ring.
struct HandoffBuilder {
  OpBuilder &b;
  ReductionHandoff &handoff;
  Value barriers;
  Location loc;

  Value c(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value stageOf(Value count) {
    return arith::RemUIOp::create(b, loc, count, c(kHandoffStages));
  }
  Value roundOf(Value count) {
    return arith::DivUIOp::create(b, loc, count, c(kHandoffStages));
  }
  Value barrier(int64_t first, Value stage) {
    return arith::AddIOp::create(b, loc, c(first), stage);
  }
  Value view(Value stage) {
    return StageOp::create(b, loc, handoff.staging.getType(), handoff.ring,
                           stage);
  }

  /// The producer's part for ring counter `count`, iteration `iv` of
  /// `loop`: wait until the stage is full and add it; then give back the
  /// previous count's stage once the copy engine has read it (not this
  /// one's: its reads overlap the producer's next loads).
  void drain(size_t index, scf::ForOp loop, Value count, Value iv,
             IRMapping map) {
    TmaReduceOp reduce = handoff.reductions[index];
    Value stage = stageOf(count);
    Value round = roundOf(count);
    WaitBarrierOp::create(b, loc, barriers,
                          barrier(handoff.fullBarrier(0), stage), round);
    Value tile = view(stage);
    map.map(loop.getInductionVar(), iv);
    for (Operation *op :
         topologicalSort(sliceInLoop(loop, reduce.getCoords())))
      b.clone(*op, map);
    SmallVector<Value> coords;
    for (Value v : reduce.getCoords())
      coords.push_back(map.lookupOrDefault(v));
    // One thread issues every band: the producer is one warpgroup.
    TmaReduceOp::create(b, loc, reduce.getMap(), coords, tile, /*bands=*/1);
    // Counts are drained in order from 0, so count - 1 was the last one.
    Value earlier =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, count, c(0));
    auto release = scf::IfOp::create(b, loc, earlier);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(release.thenBlock());
    WaitSharedReadsOp::create(b, loc, /*pending=*/1);
    Value next = arith::AddIOp::create(b, loc, count, c(1));
    Value previousStage = stageOf(next); // (count - 1) % stages, 2 stages
    ArriveBarrierOp::create(b, loc, barriers,
                            barrier(handoff.emptyBarrier(0), previousStage));
  }
};

} // namespace

void mlir::fagpu::emitProducerHandoffs(OpBuilder &b,
                                       ReductionHandoff &handoff,
                                       size_t index, scf::ForOp loop,
                                       scf::ForOp produce, Value countBegin,
                                       const IRMapping &map, Value barriers) {
  Location loc = produce.getLoc();
  HandoffBuilder h{b, handoff, barriers, loc};
  // Iteration j - 1's, after iteration j's loads (none in the first).
  Value it = produce.getRegionIterArg(0);
  Value later = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, it,
                                      countBegin);
  auto previous = scf::IfOp::create(b, loc, later);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(previous.thenBlock());
    Value one = h.c(1);
    Value count = arith::SubIOp::create(b, loc, it, one);
    Value iv = arith::SubIOp::create(b, loc, produce.getInductionVar(), one);
    h.drain(index, loop, count, iv, map);
  }
  // The loop's last iteration's, after it (if it ran).
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointAfter(produce);
  Value end = produce.getResult(0);
  Value ran = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, end,
                                    countBegin);
  auto last = scf::IfOp::create(b, loc, ran);
  b.setInsertionPointToStart(last.thenBlock());
  Value one = h.c(1);
  Value count = arith::SubIOp::create(b, loc, end, one);
  Value iv = arith::SubIOp::create(b, loc, produce.getUpperBound(), one);
  h.drain(index, loop, count, iv, map);
}

void mlir::fagpu::rewriteHandoffConsumer(OpBuilder &b,
                                         ReductionHandoff &handoff,
                                         size_t index, scf::ForOp loop,
                                         Value barriers) {
  StoreToSharedOp store = handoff.stores[index];
  HandoffBuilder h{b, handoff, barriers, store.getLoc()};
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(store);
  Value it = loop.getRegionIterArgs().back();
  Value stage = h.stageOf(it);
  // A fresh barrier's previous phase counts as complete: the first round
  // does not wait.
  Value round = h.roundOf(it);
  Value previous = arith::AddIOp::create(b, store.getLoc(), round, h.c(1));
  WaitBarrierOp::create(b, store.getLoc(), barriers,
                        h.barrier(handoff.emptyBarrier(0), stage), previous);
  store.getDestMutable().assign(h.view(stage));
  store.setSync(SyncScope::warp);
  store.setUnread(true);
  b.setInsertionPointAfter(store);
  ArriveBarrierOp::create(b, store.getLoc(), barriers,
                          h.barrier(handoff.fullBarrier(0), stage));
  handoff.reductions[index].erase();
  // The compute warps issue no reduction any more: nothing to wait for.
  if (handoff.takesAllReductions)
    for (auto wait : llvm::make_early_inc_range(
             loop.getBody()->getOps<WaitSharedReadsOp>()))
      wait.erase();
}
