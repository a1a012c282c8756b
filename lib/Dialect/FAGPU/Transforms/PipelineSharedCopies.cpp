//===- PipelineSharedCopies.cpp - Prefetch a loop's shared tiles ----------===//
//
// A loop that copies its tiles into shared memory and then computes on them
// waits for every copy. Here the tiles become rings of up to `stages`
// buffers (as many as fit) and the copies of iteration i + stages - 1 are in
// flight while iteration i computes (FlashAttention 2's K/V double buffering,
// on asynchronous copies; TMA + mbarrier is the next step of the same pass).
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FAGPU/Transforms/Passes.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Analysis/TopologicalSortUtils.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir {
namespace fagpu {
#define GEN_PASS_DEF_PIPELINESHAREDCOPIES
#include "fa/Dialect/FAGPU/Transforms/Passes.h.inc"
} // namespace fagpu
} // namespace mlir

using namespace mlir;
using namespace mlir::fagpu;

namespace {

/// The ring that replaced each single-buffered tile, and its stage 0.
struct Ring {
  Value ring, stage0;
};

struct PipelineSharedCopiesPass
    : fagpu::impl::PipelineSharedCopiesBase<PipelineSharedCopiesPass> {
  using PipelineSharedCopiesBase::PipelineSharedCopiesBase;

  DenseMap<Value, Ring> rings; // keyed by the original alloc's result

  void runOnOperation() override {
    if (stages < 2) {
      getOperation().emitError() << "fagpu-pipeline-shared-copies needs at "
                                    "least 2 stages, got "
                                 << stages.getValue();
      return signalPassFailure();
    }
    SmallVector<std::pair<scf::ForOp, int64_t>> loops;
    // A warp-specialized kernel's producer loads its tiles; its compute
    // loops still get their row loads one iteration ahead.
    SmallVector<scf::ForOp> loadLoops;
    getOperation().walk([&](scf::ForOp loop) {
      if (loop.getBody()->getOps<CopyToSharedOp>().empty() &&
          !loop.getBody()->getOps<LoadTileOp>().empty() &&
          loop->getParentOfType<WarpSpecializeOp>())
        loadLoops.push_back(loop);
    });
    for (scf::ForOp loop : loadLoops)
      prefetchLoads(loop);
    getOperation().walk([&](gpu::GPUFuncOp kernel) {
      SmallVector<scf::ForOp> kernelLoops;
      int64_t ringBytes = 0; // bytes one more stage of every ring adds
      llvm::SmallPtrSet<Operation *, 4> tiles;
      kernel.walk([&](scf::ForOp loop) {
        if (loop.getBody()->getOps<CopyToSharedOp>().empty())
          return;
        kernelLoops.push_back(loop);
        for (CopyToSharedOp copy : loop.getBody()->getOps<CopyToSharedOp>())
          if (auto alloc = copy.getDest().getDefiningOp<AllocSharedOp>();
              alloc && tiles.insert(alloc).second)
            ringBytes += alloc.getType().getStageStride();
      });
      if (kernelLoops.empty())
        return;
      // As many stages as fit, up to the option; a kernel where two do not
      // fit keeps its synchronous copies.
      int64_t base = placeSharedTiles(kernel);
      int64_t fit = deepestRingThatFits(stages, base - ringBytes, ringBytes,
                                        maxSharedBytes);
      if (base + ringBytes > maxSharedBytes) {
        kernel.emitRemark()
            << "not pipelined: 2 stages need " << base + ringBytes
            << " bytes of shared memory, over " << maxSharedBytes.getValue();
        return;
      }
      for (scf::ForOp loop : kernelLoops)
        loops.push_back({loop, fit});
    });
    for (auto [loop, fit] : loops)
      if (failed(pipeline(loop, fit)))
        return signalPassFailure();
    // The launch attribute follows the kernel's shared tiles.
    getOperation().walk([](gpu::GPUFuncOp kernel) {
      if (kernel->hasAttr("fa.shared_bytes"))
        kernel->setAttr(
            "fa.shared_bytes",
            IntegerAttr::get(IntegerType::get(kernel.getContext(), 64),
                             placeSharedTiles(kernel)));
    });
  }

  /// The ring of `depth` stages standing for `alloc`'s tile, made on first
  /// use.
  Ring ringOf(AllocSharedOp alloc, int64_t depth) {
    Ring &ring = rings[alloc.getResult()];
    if (ring.ring)
      return ring;
    OpBuilder b(alloc);
    SharedTileType tile = alloc.getType();
    ring.ring =
        AllocSharedOp::create(b, alloc.getLoc(), tile.getRingType(depth));
    ring.stage0 =
        StageOp::create(b, alloc.getLoc(), tile, ring.ring,
                        arith::ConstantIndexOp::create(b, alloc.getLoc(), 0));
    alloc.getResult().replaceAllUsesWith(ring.stage0);
    alloc.erase();
    return ring;
  }

  /// Clones what the operands of `ops` compute inside `loop`'s body, for
  /// iteration `iter`; the mapping gives the clones.
  static IRMapping cloneOperandsFor(OpBuilder &b, scf::ForOp loop,
                                    ArrayRef<Operation *> ops, Value iter) {
    SetVector<Operation *> slice;
    BackwardSliceOptions options;
    options.filter = [&](Operation *op) {
      return loop.getBody() == op->getBlock();
    };
    for (Operation *user : ops)
      for (Value operand : user->getOperands())
        if (Operation *def = operand.getDefiningOp();
            def && def->getBlock() == loop.getBody()) {
          (void)getBackwardSlice(def, &slice, options);
          slice.insert(def);
        }
    IRMapping map;
    map.map(loop.getInductionVar(), iter);
    for (Operation *op : topologicalSort(slice))
      b.clone(*op, map);
    return map;
  }

  /// The loop's register loads (per-row statistics) one iteration ahead:
  /// iteration i's rows are loaded at the top of iteration i - 1 (before
  /// the loop for the first) and carried, so that their latency hides
  /// under a whole iteration. Rows past the end read nothing.
  /// Loads of more registers a thread than this stay in their iteration:
  /// the per-column statistics of transposed scores (16 a thread, LSE and
  /// delta) carried across the loop made ptxas spill 350 B at hd128.
  static constexpr int64_t kMaxPrefetchRegisters = 4;

  static void prefetchLoads(scf::ForOp loop) {
    SmallVector<LoadTileOp> loads;
    for (LoadTileOp load : loop.getBody()->getOps<LoadTileOp>())
      if (getTileLayout(cast<RankedTensorType>(load.getType()))
              .numRegisters() <= kMaxPrefetchRegisters)
        loads.push_back(load);
    if (loads.empty())
      return;
    SmallVector<Operation *> ops(loads.begin(), loads.end());
    auto loadAll = [&](OpBuilder &b, Value iter) {
      IRMapping map = cloneOperandsFor(b, loop, ops, iter);
      SmallVector<Value> values;
      for (LoadTileOp load : loads)
        values.push_back(b.clone(*load, map)->getResult(0));
      return values;
    };
    OpBuilder b(loop);
    SmallVector<Value> first = loadAll(b, loop.getLowerBound());
    b.setInsertionPointToStart(loop.getBody());
    Value next = arith::AddIOp::create(
        b, loop.getLoc(), loop.getInductionVar(),
        arith::ConstantIndexOp::create(b, loop.getLoc(), 1));
    SmallVector<Value> ahead = loadAll(b, next);
    IRRewriter rewriter(loop.getContext());
    int64_t carried = loop.getNumRegionIterArgs();
    auto newLoop = cast<scf::ForOp>(*loop.replaceWithAdditionalYields(
        rewriter, first, /*replaceInitOperandUsesInLoop=*/false,
        [&](OpBuilder &, Location, ArrayRef<BlockArgument>) { return ahead; }));
    for (auto [i, load] : llvm::enumerate(loads)) {
      load.getResult().replaceAllUsesWith(
          newLoop.getRegionIterArgs()[carried + i]);
      load.erase();
    }
  }

  /// Issues `copies` for iteration `iter` into `stage` of their rings, when
  /// `iter` < the loop's upper bound; then commits a group.
  void issue(OpBuilder &b, scf::ForOp loop, ArrayRef<CopyToSharedOp> copies,
             ArrayRef<Ring> copyRings, Value iter, Value stage) {
    Location loc = loop.getLoc();
    Value inRange = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt,
                                          iter, loop.getUpperBound());
    auto ifInRange = scf::IfOp::create(b, loc, inRange);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(ifInRange.thenBlock());
      SmallVector<Operation *> ops(copies.begin(), copies.end());
      IRMapping map = cloneOperandsFor(b, loop, ops, iter);
      for (auto [constCopy, ring] : llvm::zip(copies, copyRings)) {
        CopyToSharedOp copy = constCopy;
        Value dest =
            StageOp::create(b, loc, copy.getDest().getType(), ring.ring, stage);
        AsyncCopyToSharedOp::create(b, loc,
                                    map.lookupOrDefault(copy.getSource()),
                                    map.lookupOrDefault(copy.getRow()),
                                    map.lookupOrDefault(copy.getLimit()), dest);
      }
    }
    CommitSharedCopiesOp::create(b, loc);
  }

  LogicalResult pipeline(scf::ForOp loop, int64_t depth) {
    Location loc = loop.getLoc();
    std::optional<int64_t> step = getConstantIntValue(loop.getStep());
    if (!step || *step != 1)
      return loop.emitError() << "fagpu-pipeline-shared-copies takes loops "
                                 "of step 1";
    SmallVector<CopyToSharedOp> copies(
        loop.getBody()->getOps<CopyToSharedOp>());
    SmallVector<Ring> copyRings;
    for (CopyToSharedOp copy : copies) {
      Value dest = copy.getDest();
      auto alloc = dest.getDefiningOp<AllocSharedOp>();
      if (auto stage = dest.getDefiningOp<StageOp>()) {
        auto it = llvm::find_if(
            rings, [&](auto &entry) { return entry.second.stage0 == dest; });
        if (it == rings.end())
          return copy.emitError() << "copies into a stage the pass did not "
                                     "make";
        copyRings.push_back(it->second);
        continue;
      }
      if (!alloc || loop->isAncestor(alloc))
        return copy.emitError() << "pipelining needs the tile allocated "
                                   "outside the loop";
      copyRings.push_back(ringOf(alloc, depth));
    }

    OpBuilder b(loop);
    auto c = [&](int64_t v) {
      return arith::ConstantIndexOp::create(b, loc, v);
    };
    // Prologue: iterations lb .. lb + depth - 2.
    Value lb = loop.getLowerBound();
    for (int64_t k = 0; k + 1 < depth; ++k) {
      // One op per statement: argument evaluation order is unspecified.
      Value stage = c(k);
      Value iteration = arith::AddIOp::create(b, loc, lb, c(k));
      issue(b, loop, copies, copyRings, iteration, stage);
    }

    // Iteration i computes on stage (i - lb) % depth and prefetches
    // i + depth - 1 into the stage iteration i - 1 read.
    b.setInsertionPointToStart(loop.getBody());
    Value relative = arith::SubIOp::create(b, loc, loop.getInductionVar(), lb);
    Value current = arith::RemUIOp::create(b, loc, relative, c(depth));
    Value ahead = arith::AddIOp::create(b, loc, relative, c(depth - 1));
    auto prefetch = [&]() {
      Value stage = arith::RemUIOp::create(b, loc, ahead, c(depth));
      Value iteration = arith::AddIOp::create(b, loc, lb, ahead);
      issue(b, loop, copies, copyRings, iteration, stage);
    };
    if (depth == 2) {
      // Two stages: the prefetch goes out before the wait, and a barrier at
      // the end keeps it from overwriting a stage someone still reads.
      prefetch();
      WaitSharedCopiesOp::create(b, loc, depth - 1);
    } else {
      // Three or more: the wait's barrier also ends every thread's reads of
      // iteration i - 1, so the prefetch after it needs no barrier of its
      // own.
      WaitSharedCopiesOp::create(b, loc, depth - 2);
      prefetch();
    }
    for (Ring ring : copyRings) {
      Value view =
          StageOp::create(b, loc, ring.stage0.getType(), ring.ring, current);
      ring.stage0.replaceUsesWithIf(view, [&](OpOperand &use) {
        return loop->isAncestor(use.getOwner());
      });
    }
    for (CopyToSharedOp copy : copies)
      copy.erase();
    if (depth == 2) {
      b.setInsertionPoint(loop.getBody()->getTerminator());
      gpu::BarrierOp::create(b, loc);
    } else {
      // The next loop's prologue refills stages the last iteration read.
      b.setInsertionPointAfter(loop);
      gpu::BarrierOp::create(b, loc);
    }
    prefetchLoads(loop);
    return success();
  }
};

} // namespace
