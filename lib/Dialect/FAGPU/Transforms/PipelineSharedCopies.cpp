//===- PipelineSharedCopies.cpp - Prefetch a loop's shared tiles ----------===//
//
// A loop that copies its tiles into shared memory and then computes on them
// waits for every copy. Here the tiles become rings of `stages` buffers and
// the copies of iteration i + stages - 1 are in flight while iteration i
// computes (FlashAttention 2's K/V double buffering, on asynchronous copies;
// TMA + mbarrier is the next step of the same pass).
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FAGPU/Transforms/Passes.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Analysis/TopologicalSortUtils.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/IRMapping.h"

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
    SmallVector<scf::ForOp> loops;
    getOperation().walk([&](gpu::GPUFuncOp kernel) {
      SmallVector<scf::ForOp> kernelLoops;
      int64_t extra = 0; // bytes the rings add
      llvm::SmallPtrSet<Operation *, 4> tiles;
      kernel.walk([&](scf::ForOp loop) {
        if (loop.getBody()->getOps<CopyToSharedOp>().empty())
          return;
        kernelLoops.push_back(loop);
        for (CopyToSharedOp copy : loop.getBody()->getOps<CopyToSharedOp>())
          if (auto alloc = copy.getDest().getDefiningOp<AllocSharedOp>();
              alloc && tiles.insert(alloc).second)
            extra += (stages - 1) * alloc.getType().getStageStride();
      });
      // A kernel whose rings would not fit keeps its synchronous copies.
      int64_t bytes = placeSharedTiles(kernel) + extra;
      if (bytes > maxSharedBytes) {
        kernel.emitRemark()
            << "not pipelined: " << stages.getValue() << " stages need "
            << bytes << " bytes of shared memory, over "
            << maxSharedBytes.getValue();
        return;
      }
      loops.append(kernelLoops);
    });
    for (scf::ForOp loop : loops)
      if (failed(pipeline(loop)))
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

  /// The ring standing for `alloc`'s tile, made on first use.
  Ring ringOf(AllocSharedOp alloc) {
    Ring &ring = rings[alloc.getResult()];
    if (ring.ring)
      return ring;
    OpBuilder b(alloc);
    SharedTileType tile = alloc.getType();
    auto ringType = SharedTileType::get(
        b.getContext(), {stages, tile.getRows(), tile.getCols()},
        tile.getElementType(), tile.getSwizzle());
    ring.ring = AllocSharedOp::create(b, alloc.getLoc(), ringType);
    ring.stage0 =
        StageOp::create(b, alloc.getLoc(), tile, ring.ring,
                        arith::ConstantIndexOp::create(b, alloc.getLoc(), 0));
    alloc.getResult().replaceAllUsesWith(ring.stage0);
    alloc.erase();
    return ring;
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
      // The copies' operands, recomputed for `iter`.
      SetVector<Operation *> slice;
      BackwardSliceOptions options;
      options.filter = [&](Operation *op) {
        return loop.getBody() == op->getBlock();
      };
      for (CopyToSharedOp copy : copies)
        for (Value operand : copy->getOperands())
          if (Operation *def = operand.getDefiningOp();
              def && def->getBlock() == loop.getBody()) {
            (void)getBackwardSlice(def, &slice, options);
            slice.insert(def);
          }
      IRMapping map;
      map.map(loop.getInductionVar(), iter);
      for (Operation *op : topologicalSort(slice))
        b.clone(*op, map);
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

  LogicalResult pipeline(scf::ForOp loop) {
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
      copyRings.push_back(ringOf(alloc));
    }

    OpBuilder b(loop);
    auto c = [&](int64_t v) {
      return arith::ConstantIndexOp::create(b, loc, v);
    };
    // Prologue: iterations lb .. lb + stages - 2.
    Value lb = loop.getLowerBound();
    for (int64_t k = 0; k + 1 < stages; ++k)
      issue(b, loop, copies, copyRings, arith::AddIOp::create(b, loc, lb, c(k)),
            c(k));

    // Iteration i: prefetch i + stages - 1, wait for i, compute on its stage.
    b.setInsertionPointToStart(loop.getBody());
    Value relative = arith::SubIOp::create(b, loc, loop.getInductionVar(), lb);
    Value current = arith::RemUIOp::create(b, loc, relative, c(stages));
    Value ahead = arith::AddIOp::create(b, loc, relative, c(stages - 1));
    issue(b, loop, copies, copyRings, arith::AddIOp::create(b, loc, lb, ahead),
          arith::RemUIOp::create(b, loc, ahead, c(stages)));
    WaitSharedCopiesOp::create(b, loc, stages - 1);
    for (Ring ring : copyRings) {
      Value view =
          StageOp::create(b, loc, ring.stage0.getType(), ring.ring, current);
      ring.stage0.replaceUsesWithIf(view, [&](OpOperand &use) {
        return loop->isAncestor(use.getOwner());
      });
    }
    for (CopyToSharedOp copy : copies)
      copy.erase();
    // Nobody may still read a stage when the next iteration refills it.
    b.setInsertionPoint(loop.getBody()->getTerminator());
    gpu::BarrierOp::create(b, loc);
    return success();
  }
};

} // namespace
