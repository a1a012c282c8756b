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
#include "mlir/IR/Iterators.h"

using namespace mlir;
using namespace mlir::fagpu;

/// Marks the ops of the producer's side of the hand-off until
/// moveHandoffsToReducer moves them.
static constexpr StringLiteral kHandoffAttr = "fagpu.handoff";

/// What the producer recomputes for a reduction: its coordinates, and its
/// turn's counter indices and turn.
static SmallVector<Value> drainOperands(TmaReduceOp reduce,
                                        std::optional<ReductionTurn> t) {
  SmallVector<Value> values(reduce.getCoords());
  if (t) {
    llvm::append_range(values, t->wait.getIndices());
    values.push_back(t->wait.getTurn());
  }
  return values;
}

void mlir::fagpu::markHandoffOp(Operation *op) {
  op->setAttr(kHandoffAttr, UnitAttr::get(op->getContext()));
}

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
    // A deterministic sum's turn goes with it: waited for before the store,
    // passed after the sums have landed.
    std::optional<ReductionTurn> turn;
    auto waits = llvm::to_vector(loop.getBody()->getOps<WaitTurnOp>());
    auto sums = llvm::to_vector(loop.getBody()->getOps<WaitGlobalSumsOp>());
    auto passes = llvm::to_vector(loop.getBody()->getOps<PassTurnOp>());
    if (!waits.empty() || !sums.empty() || !passes.empty()) {
      if (waits.size() != 1 || sums.size() != 1 || passes.size() != 1 ||
          !waits[0]->isBeforeInBlock(store) ||
          !reduce->isBeforeInBlock(sums[0]) ||
          !sums[0]->isBeforeInBlock(passes[0]) ||
          waits[0].getCounters() != passes[0].getCounters() ||
          waits[0].getIndices() != passes[0].getIndices())
        return std::optional<ReductionHandoff>();
      turn = ReductionTurn{waits[0], sums[0], passes[0]};
    }
    // The producer recomputes the coordinates (and the turn) from the
    // induction variable.
    auto carried = [&](Value v) {
      return llvm::is_contained(loop.getRegionIterArgs(), v);
    };
    SmallVector<Value> recomputed = drainOperands(reduce, turn);
    SetVector<Operation *> slice = sliceInLoop(loop, recomputed);
    if (llvm::any_of(recomputed, carried) ||
        llvm::any_of(slice, [&](Operation *op) {
          return llvm::any_of(op->getOperands(), carried) ||
                 !isMemoryEffectFree(op);
        }))
      return reduce.emitError()
             << "fagpu-warp-specialize hands a reduction to the producer "
                "only if its coordinates and turn are computed from the "
                "induction variable without side effects";
    handoff.stores.push_back(store);
    handoff.reductions.push_back(reduce);
    handoff.turns.push_back(turn);
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
  for (auto [loop, reduce, turn] :
       llvm::zip(loops, handoff.reductions, handoff.turns)) {
    auto outside = [&](Value v) {
      return !loop->isAncestor(v.getParentBlock()->getParentOp());
    };
    SmallVector<Value> recomputed = drainOperands(reduce, turn);
    for (Value v : recomputed)
      if (outside(v))
        share(v);
    for (Operation *op : sliceInLoop(loop, recomputed))
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
  /// Whether ring counter `count` is past `begin` (i1).
  Value after(Value count, Value begin) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, count,
                                 begin);
  }
  Value barrier(int64_t first, Value stage) {
    return arith::AddIOp::create(b, loc, c(first), stage);
  }
  Value view(Value stage) {
    return StageOp::create(b, loc, handoff.staging.getType(), handoff.ring,
                           stage);
  }

  /// Passes `pass`'s turn for iteration `iv` of `loop` (its counter's
  /// indices recomputed from `iv`).
  void passTurn(scf::ForOp loop, PassTurnOp pass, Value iv, IRMapping map) {
    map.map(loop.getInductionVar(), iv);
    for (Operation *op : topologicalSort(sliceInLoop(loop, pass.getIndices())))
      b.clone(*op, map);
    b.clone(*pass, map);
  }

  /// The producer's part for ring counter `count`, iteration `iv` of
  /// `loop`: wait until the stage is full and add it; then give back the
  /// previous count's stage once the copy engine has read it (not this
  /// one's: its reads overlap the producer's next loads). A turn passes
  /// once the sums have landed; with `pipelineTurns` only after the next
  /// reduction is issued: `passesPrevious` says whether iteration `iv` - 1's
  /// still holds its turn (the caller passes the loop's last).
  void drain(size_t index, scf::ForOp loop, Value count, Value iv,
             Value passesPrevious, const IRMapping &outer) {
    IRMapping map = outer;
    TmaReduceOp reduce = handoff.reductions[index];
    std::optional<ReductionTurn> turn = handoff.turns[index];
    Value stage = stageOf(count);
    Value round = roundOf(count);
    WaitBarrierOp::create(b, loc, barriers,
                          barrier(handoff.fullBarrier(0), stage), round);
    Value tile = view(stage);
    map.map(loop.getInductionVar(), iv);
    for (Operation *op :
         topologicalSort(sliceInLoop(loop, drainOperands(reduce, turn))))
      b.clone(*op, map);
    auto mapped = [&](ValueRange values) {
      return llvm::map_to_vector(
          values, [&](Value v) { return map.lookupOrDefault(v); });
    };
    if (turn)
      b.clone(*turn->wait, map);
    // One thread issues every band: the reducer is one warp.
    TmaReduceOp::create(b, loc, reduce.getMap(), mapped(reduce.getCoords()),
                        tile, /*bands=*/1);
    if (turn && !handoff.pipelineTurns) {
      WaitGlobalSumsOp::create(b, loc);
      passTurn(loop, turn->pass, iv, outer);
    } else if (turn) {
      auto previous = scf::IfOp::create(b, loc, passesPrevious);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(previous.thenBlock());
      WaitGlobalSumsOp::create(b, loc, /*pending=*/1);
      passTurn(loop, turn->pass, arith::SubIOp::create(b, loc, iv, c(1)),
               outer);
    }
    // Counts are drained in order from 0, so count - 1 was the last one.
    Value earlier = after(count, c(0));
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
  Value later = h.after(it, countBegin);
  auto previous = scf::IfOp::create(b, loc, later);
  markHandoffOp(previous);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(previous.thenBlock());
    Value one = h.c(1);
    Value count = arith::SubIOp::create(b, loc, it, one);
    Value iv = arith::SubIOp::create(b, loc, produce.getInductionVar(), one);
    h.drain(index, loop, count, iv, h.after(count, countBegin), map);
  }
  // The loop's last iteration's, after it (if it ran).
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointAfter(produce);
  Value end = produce.getResult(0);
  Value ran = h.after(end, countBegin);
  auto last = scf::IfOp::create(b, loc, ran);
  markHandoffOp(last);
  b.setInsertionPointToStart(last.thenBlock());
  Value one = h.c(1);
  Value count = arith::SubIOp::create(b, loc, end, one);
  Value iv = arith::SubIOp::create(b, loc, produce.getUpperBound(), one);
  h.drain(index, loop, count, iv, h.after(count, countBegin), map);
  // The last turn passes once all the loop's sums have landed.
  std::optional<ReductionTurn> turn = handoff.turns[index];
  if (turn && handoff.pipelineTurns) {
    WaitGlobalSumsOp::create(b, loc);
    h.passTurn(loop, turn->pass, iv, map);
  }
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
  if (std::optional<ReductionTurn> turn = handoff.turns[index]) {
    turn->wait.erase();
    turn->sums.erase();
    turn->pass.erase();
  }
  // The compute warps issue no reduction any more: nothing to wait for.
  if (handoff.takesAllReductions)
    for (auto wait : llvm::make_early_inc_range(
             loop.getBody()->getOps<WaitSharedReadsOp>()))
      wait.erase();
}

/// Erases the ops of `block` (and of its nested regions) that nothing uses
/// and that have no effects, until none is left.
static void eraseDeadOps(Block &block) {
  bool erased = true;
  while (erased) {
    erased = false;
    block.walk<WalkOrder::PostOrder, ReverseIterator>([&](Operation *op) {
      if (op->getBlock() && isOpTriviallyDead(op)) {
        op->erase();
        erased = true;
      }
    });
  }
}

void mlir::fagpu::moveHandoffsToReducer(WarpSpecializeOp split) {
  Block &producer = split.getProducer().front();
  Block *reducer = new Block();
  split.getReducer().push_back(reducer);
  OpBuilder b = OpBuilder::atBlockEnd(reducer);
  IRMapping map;
  for (Operation &op : producer)
    b.clone(op, map);
  // The producer: everything but the hand-off.
  SmallVector<Operation *> handoffOps;
  producer.walk([&](Operation *op) {
    if (op->hasAttr(kHandoffAttr))
      handoffOps.push_back(op);
  });
  for (Operation *op : handoffOps)
    op->erase();
  // The reducer: the hand-off, in the producer's loops.
  SmallVector<Operation *> loads;
  reducer->walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (op->hasAttr(kHandoffAttr)) {
      op->removeAttr(kHandoffAttr);
      return WalkResult::skip();
    }
    if (isa<TmaLoadOp, ArriveExpectBytesOp, WaitBarrierOp>(op))
      loads.push_back(op);
    return WalkResult::advance();
  });
  for (Operation *op : loads)
    op->erase();
  eraseDeadOps(producer);
  eraseDeadOps(*reducer);
}
