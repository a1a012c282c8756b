//===- OverlapSoftmax.cpp - Softmax of block j under P·V of block j-1 -----===//
//
// In a KV loop iteration the tensor cores idle while the warpgroup computes
// the softmax of S_j = Q K_jᵀ. FlashAttention 3 (section 3.2) issues P·V of
// the previous block right after QKᵀ of this one, waits only for S_j, and
// computes the softmax while P_{j-1} V_{j-1} runs. Here that is a software
// pipeline of the loop: P·V moves one iteration later (the loop carries
// P_{j-1} and the rescaled accumulator), the first iteration's QKᵀ and
// softmax are peeled before the loop and the last P·V after it, all under
// `lb < ub` so that an empty loop stays empty. Passes.td has the contract.
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FAGPU/Transforms/Passes.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Analysis/TopologicalSortUtils.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir {
namespace fagpu {
#define GEN_PASS_DEF_OVERLAPSOFTMAX
#include "fa/Dialect/FAGPU/Transforms/Passes.h.inc"
} // namespace fagpu
} // namespace mlir

using namespace mlir;
using namespace mlir::fagpu;

namespace {

/// The parts of a KV loop body the pipeline moves.
struct LoopParts {
  MmaOp scores;            // S = Q Kᵀ (accumulator from outside the loop)
  MmaOp product;           // O' = P V + rescaled O, yielded
  WaitBarrierOp waitV;     // just before the V stage view
  StageOp valueStage;      // V's stage
  ArriveBarrierOp release; // the stage's empty barrier, after P·V
  unsigned accIndex;       // which iter_arg / result is O
  BlockArgument counter;   // the ring counter (the last iter_arg)
  SetVector<Operation *> rescale;    // ops between O's iter_arg and P·V's acc
  SetVector<Value> rescaleInputs;    // what the rescale takes from the body
  bool rescaleBeforeProduct = false; // O scaled before P·V, not after it
  SetVector<Operation *> stageIndex; // what the V wait / view / release
                                     // compute from the counter
};

/// Before P·V the rescale takes its row factors from the iteration before:
/// their broadcasts go with it (they cost no instruction), so that the loop
/// carries per-row values. False where the rescale reads a loop argument
/// besides O (nothing to carry it by).
static bool takeFactorsAlong(scf::ForOp loop, LoopParts &p) {
  BlockArgument acc = loop.getRegionIterArg(p.accIndex);
  for (bool grew = true; grew;) {
    grew = false;
    for (Operation *op : SmallVector<Operation *>(p.rescale.getArrayRef()))
      for (Value v : op->getOperands())
        if (auto expand = v.getDefiningOp<ExpandRowsOp>();
            expand && expand->getBlock() == loop.getBody() &&
            !p.rescale.contains(expand) &&
            llvm::all_of(expand->getUsers(), [&](Operation *user) {
              return p.rescale.contains(user);
            }))
          grew |= p.rescale.insert(expand);
  }
  for (Operation *op : p.rescale)
    for (Value v : op->getOperands()) {
      if (auto arg = dyn_cast<BlockArgument>(v);
          arg && arg != acc && arg.getOwner() == loop.getBody())
        return false;
      if (Operation *def = v.getDefiningOp();
          def && def->getBlock() == loop.getBody() && !p.rescale.contains(def))
        p.rescaleInputs.insert(v);
    }
  return true;
}

std::optional<LoopParts> analyze(scf::ForOp loop, bool rescaleBeforeProduct) {
  SmallVector<MmaOp> mmas(loop.getBody()->getOps<MmaOp>());
  if (mmas.size() != 2 || mmas[0].getAsync() || mmas[1].getAsync())
    return std::nullopt;
  LoopParts p;
  p.scores = mmas[0];
  p.product = mmas[1];
  if (!isa<WgmmaAccLayoutAttr>(
          cast<RankedTensorType>(p.product.getType()).getEncoding()))
    return std::nullopt;
  auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
  auto yielded = llvm::find(yield->getOperands(), p.product.getResult());
  if (yielded == yield->operand_end() || !p.product->hasOneUse())
    return std::nullopt;
  p.accIndex = yielded - yield->operand_begin();
  BlockArgument acc = loop.getRegionIterArg(p.accIndex);
  p.counter = loop.getRegionIterArgs().back();
  p.valueStage = p.product.getB().getDefiningOp<StageOp>();
  if (!p.valueStage || p.valueStage->getBlock() != loop.getBody())
    return std::nullopt;
  // The wait for V's stage: the last one before the view; its release: the
  // first arrival after P·V (fagpu-warp-specialize puts them there).
  for (Operation *op = p.valueStage->getPrevNode(); op && !p.waitV;
       op = op->getPrevNode())
    p.waitV = dyn_cast<WaitBarrierOp>(op);
  for (Operation *op = p.product->getNextNode(); op && !p.release;
       op = op->getNextNode())
    p.release = dyn_cast<ArriveBarrierOp>(op);
  if (!p.waitV || !p.release || p.waitV->isBeforeInBlock(p.scores))
    return std::nullopt;
  // Iteration j holds V_{j-1} and K_j. K_j must be released once S_j is in
  // (an arrival between QKᵀ and V's wait) for two stages to keep the
  // producer a block ahead; with one release per stage after P·V the loop
  // would wait on every copy (hd128, two stages: 549 -> 522 TFLOP/s).
  bool keysReleased = false;
  for (Operation *op = p.scores->getNextNode(); op != p.waitV;
       op = op->getNextNode())
    keysReleased |= isa<ArriveBarrierOp>(op);
  if (!keysReleased)
    return std::nullopt;
  // The rescale: everything between O's iter_arg and P·V's accumulator.
  ForwardSliceOptions forward;
  forward.filter = [&](Operation *op) { return op != p.product; };
  getForwardSlice(acc, &p.rescale, forward);
  for (Operation *op : p.rescale)
    for (Operation *user : op->getUsers())
      if (!p.rescale.contains(user) &&
          !(user == p.product && p.product.getAcc() == op->getResult(0)))
        return std::nullopt;
  if (p.rescale.empty()
          ? p.product.getAcc() != acc
          : !p.rescale.contains(p.product.getAcc().getDefiningOp()))
    return std::nullopt;
  // The V side may depend on the counter only (its stage and phase).
  BackwardSliceOptions backward;
  backward.filter = [&](Operation *op) {
    return op->getBlock() == loop.getBody();
  };
  for (Operation *op : {p.waitV.getOperation(), p.valueStage.getOperation(),
                        p.release.getOperation()})
    for (Value v : op->getOperands())
      if (Operation *def = v.getDefiningOp();
          def && def->getBlock() == loop.getBody()) {
        (void)getBackwardSlice(def, &p.stageIndex, backward);
        p.stageIndex.insert(def);
      }
  for (Operation *op : p.stageIndex)
    for (Value v : op->getOperands())
      if (auto arg = dyn_cast<BlockArgument>(v);
          arg && arg.getOwner() == loop.getBody() && arg != p.counter)
        return std::nullopt;
  if (rescaleBeforeProduct)
    p.rescaleBeforeProduct = takeFactorsAlong(loop, p);
  // Slices stop at block arguments: put them in an order they can be
  // cloned in.
  p.stageIndex = topologicalSort(p.stageIndex);
  p.rescale = topologicalSort(p.rescale);
  return p;
}

struct OverlapSoftmaxPass
    : fagpu::impl::OverlapSoftmaxBase<OverlapSoftmaxPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<scf::ForOp> loops;
    getOperation().walk([&](WarpSpecializeOp split) {
      // A transposition the compute warpgroups do together (a barrier of
      // all of them) stays where it is.
      if (split.getConsumers()
              .walk([](TransposeSharedOp) { return WalkResult::interrupt(); })
              .wasInterrupted())
        return;
      split.getConsumers().walk(
          [&](scf::ForOp loop) { loops.push_back(loop); });
    });
    for (scf::ForOp loop : loops)
      if (std::optional<LoopParts> parts = analyze(loop, rescaleBeforeProduct))
        pipeline(loop, *parts);
  }

  /// Clones the V side (the stage's wait and view, P·V) for ring counter
  /// `counter`, P `p` and accumulator `acc`; returns the product.
  static MmaOp cloneValueSide(OpBuilder &b, LoopParts &parts, Value counter,
                              Value p, Value acc, bool async) {
    IRMapping map;
    map.map(parts.counter, counter);
    for (Operation *op : parts.stageIndex)
      b.clone(*op, map);
    b.clone(*parts.waitV, map);
    b.clone(*parts.valueStage, map);
    map.map(parts.product.getA(), p);
    map.map(parts.product.getAcc(), acc);
    auto product = cast<MmaOp>(b.clone(*parts.product, map));
    product.setAsync(async);
    return product;
  }

  /// Clones the empty-barrier arrival that releases `counter`'s stage.
  static void cloneRelease(OpBuilder &b, LoopParts &parts, Value counter) {
    IRMapping map;
    map.map(parts.counter, counter);
    for (Operation *op : parts.stageIndex)
      b.clone(*op, map);
    b.clone(*parts.release, map);
  }

  /// The body's ops but the V side and the rescale, for induction variable
  /// `iv` and iter_args `args`, into `map`; `onScores` runs after the clone
  /// of QKᵀ (which it may replace in the map).
  static void cloneScoresSide(OpBuilder &b, scf::ForOp loop, LoopParts &parts,
                              Value iv, ValueRange args, IRMapping &map,
                              function_ref<void(MmaOp)> onScores) {
    map.map(loop.getInductionVar(), iv);
    for (auto [arg, value] : llvm::zip(loop.getRegionIterArgs(), args))
      map.map(arg, value);
    for (Operation &op : loop.getBody()->without_terminator()) {
      if (&op == parts.waitV || &op == parts.valueStage ||
          &op == parts.product || &op == parts.release ||
          parts.rescale.contains(&op))
        continue;
      Operation *clone = b.clone(op, map);
      if (&op == parts.scores)
        onScores(cast<MmaOp>(clone));
    }
  }

  /// Clones the rescale of accumulator `acc`; returns P·V's accumulator.
  static Value cloneRescale(OpBuilder &b, LoopParts &parts, Value acc,
                            IRMapping &map) {
    map.map(parts.product->getParentOfType<scf::ForOp>().getRegionIterArg(
                parts.accIndex),
            acc);
    for (Operation *op : parts.rescale)
      b.clone(*op, map);
    return map.lookupOrDefault(parts.product.getAcc());
  }

  /// Clones the rescale of accumulator `acc` by the row factors `inputs`
  /// (parts.rescaleInputs' values of an earlier iteration).
  static Value cloneRescaleBy(OpBuilder &b, LoopParts &parts, Value acc,
                              ValueRange inputs) {
    IRMapping map;
    map.map(parts.rescaleInputs.getArrayRef(), inputs);
    return cloneRescale(b, parts, acc, map);
  }

  /// parts.rescaleInputs' values in `map`.
  static SmallVector<Value> rescaleInputsIn(LoopParts &parts, IRMapping &map) {
    return llvm::map_to_vector(parts.rescaleInputs,
                               [&](Value v) { return map.lookupOrDefault(v); });
  }

  void pipeline(scf::ForOp loop, LoopParts &parts) {
    OpBuilder b(loop);
    Location loc = loop.getLoc();
    auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    Value nonEmpty =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt,
                              loop.getLowerBound(), loop.getUpperBound());
    auto guard = scf::IfOp::create(b, loc, loop.getResultTypes(), nonEmpty,
                                   /*withElse=*/true);
    b.setInsertionPointToStart(guard.elseBlock());
    scf::YieldOp::create(b, loc, loop.getInitArgs());

    // Prologue: iteration lb's scores, softmax and rescale.
    b.setInsertionPointToStart(guard.thenBlock());
    IRMapping first;
    cloneScoresSide(b, loop, parts, loop.getLowerBound(), loop.getInitArgs(),
                    first, [](MmaOp) {});
    // With the rescale before P·V the loop carries O as P·V left it and
    // the row factors that scale it.
    Value acc0 = loop.getInitArgs()[parts.accIndex];
    if (!parts.rescaleBeforeProduct)
      acc0 = cloneRescale(b, parts, acc0, first);
    SmallVector<Value> inits;
    for (auto [i, v] : llvm::enumerate(yield->getOperands()))
      inits.push_back(i == parts.accIndex ? acc0 : first.lookupOrDefault(v));
    inits.push_back(first.lookupOrDefault(parts.product.getA()));
    unsigned carried = inits.size();
    if (parts.rescaleBeforeProduct)
      llvm::append_range(inits, rescaleInputsIn(parts, first));

    // The kernel: iteration j's QKᵀ, then P·V of j - 1, both in flight;
    // wait for S_j only, softmax, then wait for P·V and rescale.
    Value start = arith::AddIOp::create(b, loc, loop.getLowerBound(), one);
    auto steady = scf::ForOp::create(b, loc, start, loop.getUpperBound(),
                                     loop.getStep(), inits);
    {
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(steady.getBody());
      ValueRange args = steady.getRegionIterArgs().take_front(carried);
      ValueRange factors = steady.getRegionIterArgs().drop_front(carried);
      Value accPrev = args[parts.accIndex], pPrev = args.back();
      Value counter = args[args.size() - 2];
      Value counterPrev = arith::SubIOp::create(b, loc, counter, one);
      IRMapping map;
      MmaOp product;
      cloneScoresSide(
          b, loop, parts, steady.getInductionVar(), args.drop_back(), map,
          [&](MmaOp scores) {
            scores.setAsync(true);
            // FA3/FA4's RescaleOBeforeGemm: O scaled by block j - 1's
            // factors while QKᵀ runs, before P·V adds to it.
            Value scaledPrev = accPrev;
            if (parts.rescaleBeforeProduct) {
              Value held = AfterIssueOp::create(b, loc, accPrev.getType(),
                                                accPrev, scores.getResult());
              scaledPrev = cloneRescaleBy(b, parts, held, factors);
            }
            // The rescale's last op defines P·V's accumulator.
            Operation *lastRescale = scaledPrev.getDefiningOp()
                                         ? scaledPrev.getDefiningOp()
                                         : scores.getOperation();
            product = cloneValueSide(b, parts, counterPrev, pPrev, scaledPrev,
                                     /*async=*/true);
            // The V wait and stage go before QKᵀ: nothing waits between
            // the two issues but the rescale.
            SmallVector<Operation *> valueSide;
            for (Operation *op = lastRescale->getNextNode(); op != product;
                 op = op->getNextNode())
              valueSide.push_back(op);
            for (Operation *op : valueSide)
              op->moveBefore(scores);
            auto ready =
                MmaWaitOp::create(b, loc, scores.getType(), scores.getResult(),
                                  /*in_flight=*/uint64_t(1));
            map.map(parts.scores.getResult(), ready.getResult());
          });
      Value o = MmaWaitOp::create(b, loc, product.getType(),
                                  product.getResult(), uint64_t(0));
      cloneRelease(b, parts, counterPrev);
      Value nextAcc =
          parts.rescaleBeforeProduct ? o : cloneRescale(b, parts, o, map);
      SmallVector<Value> next;
      for (auto [i, v] : llvm::enumerate(yield->getOperands()))
        next.push_back(i == parts.accIndex ? nextAcc : map.lookupOrDefault(v));
      next.push_back(map.lookupOrDefault(parts.product.getA()));
      if (parts.rescaleBeforeProduct)
        llvm::append_range(next, rescaleInputsIn(parts, map));
      scf::YieldOp::create(b, loc, next);
    }
    // Epilogue: the last block's P·V.
    ValueRange last = steady.getResults().take_front(carried);
    Value counterLast =
        arith::SubIOp::create(b, loc, last[last.size() - 2], one);
    Value accLast = last[parts.accIndex];
    if (parts.rescaleBeforeProduct)
      accLast = cloneRescaleBy(b, parts, accLast,
                               steady.getResults().drop_front(carried));
    MmaOp product = cloneValueSide(b, parts, counterLast, last.back(), accLast,
                                   /*async=*/false);
    cloneRelease(b, parts, counterLast);
    SmallVector<Value> results(last.drop_back());
    results[parts.accIndex] = product.getResult();
    scf::YieldOp::create(b, loc, results);

    loop.replaceAllUsesWith(guard.getResults());
    loop.erase();
  }
};

} // namespace
