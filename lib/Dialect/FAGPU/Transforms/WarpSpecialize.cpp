//===- WarpSpecialize.cpp - TMA producer, compute consumers ---------------===//
//
// FlashAttention 3's block: a producer warpgroup streams K/V tiles with TMA
// into rings of shared buffers guarded by mbarrier pairs (full: the bytes
// landed; empty: every consumer warp is done with the stage), while the
// warpgroups that computed before keep computing, now without block-wide
// barriers. The producer's loops are the consumers' KV loops reduced to the
// loads. (Passes.td has the full contract.)
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FAGPU/Transforms/Passes.h"

#include "KernelCopies.h"
#include "ReductionHandoff.h"
#include "RegisterBudget.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Analysis/TopologicalSortUtils.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir {
namespace fagpu {
#define GEN_PASS_DEF_WARPSPECIALIZE
#include "fa/Dialect/FAGPU/Transforms/Passes.h.inc"
} // namespace fagpu
} // namespace mlir

using namespace mlir;
using namespace mlir::fagpu;

namespace {

struct WarpSpecializePass
    : fagpu::impl::WarpSpecializeBase<WarpSpecializePass> {
  using WarpSpecializeBase::WarpSpecializeBase;

  void runOnOperation() override {
    if (stages < 2) {
      getOperation().emitError() << "fagpu-warp-specialize needs at least 2 "
                                    "stages, got "
                                 << stages.getValue();
      return signalPassFailure();
    }
    if (tileBuffers < 1 || tileBuffers > kMaxTileBuffers) {
      getOperation().emitError()
          << "fagpu-warp-specialize takes 1 to " << kMaxTileBuffers
          << " tile buffers, got " << tileBuffers.getValue();
      return signalPassFailure();
    }
    SmallVector<gpu::GPUFuncOp> kernels(
        getOperation().getOps<gpu::GPUFuncOp>());
    for (gpu::GPUFuncOp kernel : kernels)
      if (failed(specialize(kernel)))
        return signalPassFailure();
  }

  LogicalResult specialize(gpu::GPUFuncOp kernel) {
    // A persistent kernel (fagpu-persistent-grid) loops over its tiles: the
    // tile loop's body plays the kernel's body, once per tile.
    Block &entry = kernel.front();
    scf::ForOp tileLoop;
    for (auto loop : entry.getOps<scf::ForOp>())
      if (loop->hasAttr("fagpu.tiles"))
        tileLoop = loop;
    Block *body = tileLoop ? tileLoop.getBody() : &entry;
    // The backward's query-head loop (GQA) runs its Q loops once per head:
    // the producer runs it too, its copies once per kernel (K, V) or in the
    // Q loops.
    scf::ForOp groupLoop = tileLoop ? nullptr : findLoopOfCopyingLoops(entry);
    scf::ForOp outer = tileLoop ? tileLoop : groupLoop;
    Block *loopBlock = outer ? outer.getBody() : &entry;
    FailureOr<KernelCopies> found =
        collectKernelCopies(kernel, *body, *loopBlock);
    if (failed(found))
      return failure();
    KernelCopies &copies = *found;
    if (copies.once.empty() && copies.loops.empty())
      return success();
    auto blockAttr = kernel->getAttrOfType<DenseI64ArrayAttr>("fa.block");
    if (!blockAttr || blockAttr.size() != 3 || blockAttr[0] % 128 != 0 ||
        blockAttr[1] != 1 || blockAttr[2] != 1)
      return kernel.emitError() << "fagpu-warp-specialize needs fa.block = "
                                   "[128 * warpgroups, 1, 1]";
    int64_t consumerGroups = blockAttr[0] / 128;
    FailureOr<int64_t> consumerRegs = consumerRegisterBudget(
        kernel, producerRegisters, consumerRegisters, consumerGroups);
    if (failed(consumerRegs))
      return failure();
    MLIRContext *ctx = kernel.getContext();
    Location loc = kernel.getLoc();

    // dQ's reductions issued by the producer (a persistent kernel has
    // none).
    std::optional<ReductionHandoff> handoff;
    if (handOffReductions && !tileLoop) {
      auto found = findReductionHandoff(kernel, copies);
      if (failed(found))
        return failure();
      handoff = std::move(*found);
      if (handoff)
        handoff->pipelineTurns = pipelineTurns;
    }
    int64_t handoffBytes = handoff ? handoff->extraSharedBytes() : 0;

    // Stages: as many as fit, up to the option.
    int64_t ringBytes = 0;
    for (AllocSharedOp tile : copies.looped)
      ringBytes += tile.getType().getStageStride();
    // Shared bytes with `depth` stages: tiles, rings and the barriers
    // ([once copies][full: tile x stage][empty: tile x stage][once copies'
    // empty, persistent kernels], 8 bytes each).
    int64_t tileBytes = placeSharedTiles(kernel);
    int64_t numOnceCopies = copies.once.size();
    int64_t onceBarriers = numOnceCopies * (tileLoop ? 2 : 1);
    auto bytesWith = [&](int64_t depth) {
      return tileBytes + handoffBytes + (depth - 1) * ringBytes +
             8 * (onceBarriers +
                  2 * static_cast<int64_t>(copies.looped.size()) * depth);
    };
    // The hand-off only where two stages of the loops' rings fit beside it.
    if (handoff && bytesWith(2) > maxSharedBytes) {
      handoff.reset();
      handoffBytes = 0;
    }
    int64_t depth =
        copies.loops.empty()
            ? 1
            : deepestRingThatFits(
                  stages, bytesWith(0),
                  ringBytes + 16 * static_cast<int64_t>(copies.looped.size()),
                  maxSharedBytes);
    if (!copies.loops.empty() && bytesWith(depth) > maxSharedBytes)
      return kernel.emitError()
             << "fagpu-warp-specialize: rings of 2 stages need "
             << bytesWith(depth) << " bytes of shared memory, over "
             << maxSharedBytes.getValue();
    // In a persistent kernel each tile copied once per tile (Q) gets
    // `tile-buffers` buffers where they fit beside the rings, so that the
    // producer loads tile t + 1's while tile t still computes on its own (at
    // N = 512 the compute warps waited for Q a tenth of their time; two
    // buffers gained 12-17 % there on the H200).
    int64_t onceDepth = 1;
    if (tileLoop && llvm::all_of(copies.once, [&](CopyToSharedOp copy) {
          auto alloc = copy.getDest().getDefiningOp<AllocSharedOp>();
          return alloc && alloc->getBlock() == &entry;
        })) {
      int64_t onceBytes = 0;
      for (CopyToSharedOp copy : copies.once)
        onceBytes += copy.getDest().getType().getStageStride() + 16;
      for (int64_t d = tileBuffers; d > 1 && onceDepth == 1; --d)
        if (bytesWith(depth) + (d - 1) * onceBytes <= maxSharedBytes)
          onceDepth = d;
    }

    // Tensor maps: one parameter per (argument, box rows); a box row is
    // a swizzle span of the tiles.
    DenseMap<std::pair<Value, int64_t>, Value> maps;
    auto mapOf = [&](const CopySource &source, SharedTileType tile) -> Value {
      Value &map = maps[{source.arg, tile.getRows()}];
      if (map)
        return map;
      map = addTensorMapParameter(kernel, source.arg, tile.getRows(),
                                  tile.getSwizzle());
      return map;
    };
    // Sources of the copies before the loops, then of each loop's copies.
    auto sourcesOf = [&](auto &&copyOps,
                         Block &where) -> FailureOr<SmallVector<CopySource>> {
      SmallVector<CopySource> sources;
      for (CopyToSharedOp copy : copyOps) {
        FailureOr<CopySource> source = getCopySource(copy, where);
        if (failed(source))
          return failure();
        sources.push_back(*source);
      }
      return sources;
    };
    FailureOr<SmallVector<CopySource>> onceSources =
        sourcesOf(copies.once, *body);
    if (failed(onceSources))
      return failure();
    SmallVector<SmallVector<CopySource>> loopSources;
    for (scf::ForOp loop : copies.loops) {
      auto sources =
          sourcesOf(loop.getBody()->getOps<CopyToSharedOp>(), *loopBlock);
      if (failed(sources))
        return failure();
      loopSources.push_back(*sources);
    }

    // Barriers: [once copies][full: tile c, stage s][empty: tile c, stage s],
    // and in a persistent kernel [once copies' empty]: the next tile's copy
    // waits until every consumer warp is done with the tile. Each ring tile
    // is released after its own last use (K after QKᵀ, V after P·V), so the
    // producer loads K_{j+1} while P·V_{j-1} still reads V.
    // A once copy's barriers are one per buffer (i * onceDepth + buffer).
    int64_t numOnce = copies.once.size() * onceDepth,
            numTiles = copies.looped.size();
    int64_t fullBase = numOnce, emptyBase = numOnce + numTiles * depth;
    int64_t onceEmptyBase =
        copies.loops.empty() ? numOnce : emptyBase + numTiles * depth;
    int64_t numBarriers = onceEmptyBase + (tileLoop ? numOnce : 0);
    SmallVector<int64_t> arrivals(numBarriers, 1);
    for (int64_t i = emptyBase; i < numBarriers; ++i)
      arrivals[i] = 4 * consumerGroups;
    // The hand-off's [full: a compute warp each][empty: the reducer warp].
    if (handoff) {
      handoff->firstBarrier = numBarriers;
      numBarriers += 2 * kHandoffStages;
      arrivals.append(kHandoffStages, 4 * consumerGroups);
      arrivals.append(kHandoffStages, 1);
    }

    // Ops the producer needs from before the loops stay before the split
    // (those of the outer loop's body: the producer's copy of it clones
    // them).
    SetVector<Operation *> shared;
    BackwardSliceOptions topLevel;
    auto beforeLoops = [&](Operation *op) {
      return op->getBlock() == loopBlock || op->getBlock() == &entry;
    };
    topLevel.filter = beforeLoops;
    topLevel.omitBlockArguments = true; // the outer loop's are its own
    auto share = [&](Value v) {
      if (Operation *def = v.getDefiningOp(); def && beforeLoops(def)) {
        (void)getBackwardSlice(def, &shared, topLevel);
        shared.insert(def);
      }
    };
    if (groupLoop) {
      share(groupLoop.getLowerBound());
      share(groupLoop.getUpperBound());
      share(groupLoop.getStep());
    }
    for (CopyToSharedOp copy : copies.once)
      share(copy.getRow());
    for (CopySource &s : *onceSources)
      for (Value v : s.outer)
        share(v);
    for (SmallVector<CopySource> &sources : loopSources)
      for (CopySource &s : sources)
        for (Value v : s.outer)
          share(v);
    for (scf::ForOp loop : copies.loops) {
      share(loop.getLowerBound());
      share(loop.getUpperBound());
      share(loop.getStep());
      for (CopyToSharedOp copy : loop.getBody()->getOps<CopyToSharedOp>()) {
        Value row = copy.getRow();
        SetVector<Operation *> inLoop = sliceInLoop(loop, row);
        // The producer recomputes the row from the induction variable; a
        // value the loop carries exists on the consumers' side only.
        auto carried = [&](Value v) {
          return llvm::is_contained(loop.getRegionIterArgs(), v);
        };
        if (carried(row) || llvm::any_of(inLoop, [&](Operation *op) {
              return llvm::any_of(op->getOperands(), carried);
            }))
          return copy.emitError() << "fagpu-warp-specialize needs copy rows "
                                     "computed from the induction variable, "
                                     "not from values the loop carries";
        for (Operation *op : inLoop)
          for (Value v : op->getOperands())
            if (!loop->isAncestor(v.getParentBlock()->getParentOp()))
              share(v);
        if (!loop->isAncestor(row.getParentBlock()->getParentOp()))
          share(row);
      }
    }
    if (handoff)
      shareHandoffOperands(*handoff, copies.loops, share);
    // Reads of arguments the kernel only reads may stay before the split.
    for (Operation *op : shared)
      if (!isMemoryEffectFree(op) && !readsReadOnlyArgument(op, entry))
        return op->emitError() << "fagpu-warp-specialize: the loads depend "
                                  "on an op with side effects";

    // Rings, barriers and the split, at the end of the kernel.
    IRRewriter b(ctx);
    b.setInsertionPoint(entry.getTerminator());
    SmallVector<Value> rings;
    for (AllocSharedOp tile : copies.looped) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(tile);
      rings.push_back(AllocSharedOp::create(b, tile.getLoc(),
                                            tile.getType().getRingType(depth)));
    }
    if (handoff) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(handoff->staging);
      handoff->ring = AllocSharedOp::create(
          b, handoff->staging.getLoc(),
          handoff->staging.getType().getRingType(kHandoffStages));
    }
    SmallVector<Value> onceRings;
    if (onceDepth > 1)
      for (CopyToSharedOp copy : copies.once) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(copy.getDest().getDefiningOp());
        onceRings.push_back(AllocSharedOp::create(
            b, copy.getLoc(), copy.getDest().getType().getRingType(onceDepth)));
      }
    Value barriers =
        AllocBarriersOp::create(b, loc, BarriersType::get(ctx, numBarriers));
    InitBarriersOp::create(b, loc, barriers, arrivals);
    auto split = WarpSpecializeOp::create(b, loc, /*producer_warpgroups=*/1,
                                          producerRegisters.getValue(),
                                          consumerGroups, *consumerRegs);
    Block *producer = b.createBlock(&split.getProducer());
    Block *consumers = b.createBlock(&split.getConsumers());

    // Everything else runs on the consumers, in its order; in a persistent
    // kernel that is the tile loop (the producer gets its own).
    for (Operation &op : llvm::make_early_inc_range(
             llvm::make_range(entry.begin(), Block::iterator(split)))) {
      if (shared.contains(&op) ||
          isa<AllocSharedOp, AllocBarriersOp, InitBarriersOp>(op) ||
          (tileLoop && &op != tileLoop.getOperation()))
        continue;
      op.moveBefore(consumers, consumers->end());
    }

    auto c = [&](int64_t v) {
      return arith::ConstantIndexOp::create(b, loc, v);
    };
    auto fullIndex = [&](int64_t tile, Value stage) {
      return arith::AddIOp::create(b, loc, c(fullBase + tile * depth), stage);
    };
    auto emptyIndex = [&](int64_t tile, Value stage) {
      return arith::AddIOp::create(b, loc, c(emptyBase + tile * depth), stage);
    };
    // Once copy i's buffer for a tile round, and the round of its barriers.
    auto onceBuffer = [&](Value tileRound) -> std::pair<Value, Value> {
      if (onceDepth == 1)
        return {Value(), tileRound};
      return {arith::RemUIOp::create(b, loc, tileRound, c(onceDepth)),
              arith::DivUIOp::create(b, loc, tileRound, c(onceDepth))};
    };
    auto onceIndex = [&](int64_t base, int64_t i, Value buffer) -> Value {
      if (!buffer)
        return c(base + i);
      return arith::AddIOp::create(b, loc, c(base + i * onceDepth), buffer);
    };
    // Per-tile values the producer copies (persistent kernels only).
    IRMapping tileMap;
    auto coordsOf = [&](const CopySource &source, Value row,
                        const IRMapping &map) {
      SmallVector<Value> coords;
      for (Value v : source.outer)
        coords.push_back(map.lookupOrDefault(v));
      coords.push_back(map.lookupOrDefault(row));
      return coords;
    };

    // Producer: the once copies, then the loops' loads; in a persistent
    // kernel, for each tile of its own tile loop, which carries the ring
    // counter and the tile round (the once barriers' phase); in a kernel
    // with a loop of copying loops, the once copies and then that loop,
    // carrying the ring counter.
    b.setInsertionPointToStart(producer);
    Value count = c(0), tileRound;
    auto issueOnceCopies = [&] {
      for (auto [i, copy] : llvm::enumerate(copies.once)) {
        SharedTileType tile = copy.getDest().getType();
        auto [buffer, round] = onceBuffer(tileRound);
        if (tileLoop) { // a fresh barrier's previous phase counts as complete
          Value phase = arith::AddIOp::create(b, loc, round, c(1));
          WaitBarrierOp::create(b, loc, barriers,
                                onceIndex(onceEmptyBase, i, buffer), phase);
        }
        Value full = onceIndex(0, i, buffer);
        ArriveExpectBytesOp::create(b, loc, barriers, full,
                                    tile.getRows() * tile.getRowBytes());
        Value dest = buffer
                         ? StageOp::create(b, loc, tile, onceRings[i], buffer)
                               .getResult()
                         : copy.getDest();
        TmaLoadOp::create(b, loc, mapOf((*onceSources)[i], tile),
                          coordsOf((*onceSources)[i], copy.getRow(), tileMap),
                          dest, barriers, full);
      }
    };
    if (!tileLoop)
      issueOnceCopies();
    if (outer) {
      SmallVector<Value> inits{count};
      if (tileLoop)
        inits.push_back(count);
      auto produceOuter =
          scf::ForOp::create(b, outer.getLoc(), outer.getLowerBound(),
                             outer.getUpperBound(), outer.getStep(), inits);
      b.setInsertionPointToStart(produceOuter.getBody());
      tileMap.map(outer.getInductionVar(), produceOuter.getInductionVar());
      for (Operation &op : *loopBlock)
        if (shared.contains(&op))
          b.clone(op, tileMap);
      count = produceOuter.getRegionIterArg(0);
      if (tileLoop)
        tileRound = produceOuter.getRegionIterArg(1);
    }
    if (tileLoop)
      issueOnceCopies();
    for (auto [index, forOp] : llvm::enumerate(copies.loops)) {
      scf::ForOp loop = forOp; // captured below: not a structured binding
      ArrayRef<CopySource> sources = loopSources[index];
      auto produce = scf::ForOp::create(
          b, loop.getLoc(), tileMap.lookupOrDefault(loop.getLowerBound()),
          tileMap.lookupOrDefault(loop.getUpperBound()),
          tileMap.lookupOrDefault(loop.getStep()), ValueRange{count});
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(produce.getBody());
      Value it = produce.getRegionIterArg(0);
      Value stage = arith::RemUIOp::create(b, loc, it, c(depth));
      Value round = arith::DivUIOp::create(b, loc, it, c(depth));
      // A fresh barrier's "previous" phase counts as complete: the first
      // round does not wait.
      Value previous = arith::AddIOp::create(b, loc, round, c(1));
      SmallVector<CopyToSharedOp> loopCopies(
          loop.getBody()->getOps<CopyToSharedOp>());
      SmallVector<Value> rows;
      for (CopyToSharedOp copy : loopCopies)
        rows.push_back(copy.getRow());
      SetVector<Operation *> slice = sliceInLoop(loop, rows);
      IRMapping map = tileMap;
      map.map(loop.getInductionVar(), produce.getInductionVar());
      for (Operation *op : topologicalSort(slice))
        b.clone(*op, map);
      for (auto [t, copy] : llvm::enumerate(loopCopies)) {
        SharedTileType tile = copy.getDest().getType();
        WaitBarrierOp::create(b, loc, barriers, emptyIndex(t, stage), previous);
        Value full = fullIndex(t, stage);
        ArriveExpectBytesOp::create(b, loc, barriers, full,
                                    tile.getRows() * tile.getRowBytes());
        Value dest = StageOp::create(b, loc, tile, rings[t], stage);
        TmaLoadOp::create(b, loc, mapOf(sources[t], tile),
                          coordsOf(sources[t], copy.getRow(), map), dest,
                          barriers, full);
      }
      if (handoff)
        emitProducerHandoffs(b, *handoff, index, loop, produce, count, tileMap,
                             barriers);
      scf::YieldOp::create(b, loc,
                           ValueRange{arith::AddIOp::create(b, loc, it, c(1))});
      count = produce.getResult(0);
    }
    if (tileLoop)
      scf::YieldOp::create(
          b, loc,
          ValueRange{count, arith::AddIOp::create(b, loc, tileRound, c(1))});
    else if (groupLoop)
      scf::YieldOp::create(b, loc, ValueRange{count});

    // The kernel ends after the copy engine has read the last stage. The
    // reductions then move to a warp of their own.
    if (handoff) {
      b.setInsertionPointToEnd(producer);
      markHandoffOp(WaitSharedReadsOp::create(b, loc));
      moveHandoffsToReducer(split);
    }

    // Consumers: in a persistent kernel the tile loop carries the ring
    // counter and the round too (the counter's yield is set below).
    b.setInsertionPoint(consumers, consumers->begin());
    count = c(0);
    tileRound = count;
    if (tileLoop) {
      b.setInsertionPoint(tileLoop);
      FailureOr<LoopLikeOpInterface> grown =
          tileLoop.replaceWithAdditionalYields(
              b, ValueRange{count, count},
              /*replaceInitOperandUsesInLoop=*/false,
              [&](OpBuilder &yb, Location yl, ArrayRef<BlockArgument> args) {
                return SmallVector<Value>{
                    args[0], arith::AddIOp::create(
                                 yb, yl, args[1],
                                 arith::ConstantIndexOp::create(yb, yl, 1))};
              });
      if (failed(grown))
        return tileLoop.emitError() << "cannot carry the ring counter";
      tileLoop = cast<scf::ForOp>(grown->getOperation());
      body = tileLoop.getBody();
      count = tileLoop.getRegionIterArgs().drop_back().back();
      tileRound = tileLoop.getRegionIterArgs().back();
    } else if (groupLoop) {
      b.setInsertionPoint(groupLoop);
      FailureOr<LoopLikeOpInterface> grown =
          groupLoop.replaceWithAdditionalYields(
              b, ValueRange{count}, /*replaceInitOperandUsesInLoop=*/false,
              [&](OpBuilder &, Location, ArrayRef<BlockArgument> args) {
                return SmallVector<Value>{args[0]};
              });
      if (failed(grown))
        return groupLoop.emitError() << "cannot carry the ring counter";
      groupLoop = cast<scf::ForOp>(grown->getOperation());
      count = groupLoop.getRegionIterArgs().back();
    }
    // Wait for the once copies where they were; in a persistent kernel,
    // release each tile after its last use in the tile's body.
    for (auto [i, copy] : llvm::enumerate(copies.once)) {
      Operation *lastUse = nullptr;
      for (Operation &op : *body) {
        bool uses = false;
        op.walk([&](Operation *nested) {
          uses |= llvm::is_contained(nested->getOperands(), copy.getDest());
        });
        if (uses && &op != copy.getOperation())
          lastUse = &op;
      }
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(copy);
      auto [buffer, round] = onceBuffer(tileRound);
      WaitBarrierOp::create(b, loc, barriers, onceIndex(0, i, buffer), round);
      if (buffer) {
        Value tile = copy.getDest();
        Value view =
            StageOp::create(b, loc, tile.getType(), onceRings[i], buffer);
        tile.replaceUsesWithIf(view, [&](OpOperand &use) {
          return use.getOwner() != copy.getOperation() &&
                 tileLoop->isAncestor(use.getOwner());
        });
      }
      if (tileLoop && lastUse) {
        b.setInsertionPointAfter(lastUse);
        ArriveBarrierOp::create(b, loc, barriers,
                                onceIndex(onceEmptyBase, i, buffer));
      }
      Value tile = copy.getDest();
      copy.erase();
      if (buffer) {
        if (!tile.use_empty())
          return tile.getDefiningOp()->emitError()
                 << "a tile copied once per tile is used outside the tile "
                    "loop";
        tile.getDefiningOp()->erase();
      }
    }
    // Each loop carries the ring counter on from the previous one.
    for (auto [index, loop] : llvm::enumerate(copies.loops)) {
      b.setInsertionPoint(loop);
      Value init = count;
      FailureOr<LoopLikeOpInterface> grown = loop.replaceWithAdditionalYields(
          b, ValueRange{init}, /*replaceInitOperandUsesInLoop=*/false,
          [&](OpBuilder &yb, Location yl, ArrayRef<BlockArgument> args) {
            return SmallVector<Value>{arith::AddIOp::create(
                yb, yl, args[0], arith::ConstantIndexOp::create(yb, yl, 1))};
          });
      if (failed(grown))
        return loop.emitError() << "cannot carry the ring counter";
      loop = cast<scf::ForOp>(grown->getOperation());
      consumeRingTiles(b, loop, rings, barriers, depth, fullIndex, emptyIndex);
      if (handoff)
        rewriteHandoffConsumer(b, *handoff, index, loop, barriers);
      count = loop.getResults().back();
    }
    if (tileLoop)
      tileLoop.getBody()->getTerminator()->setOperand(
          tileLoop.getNumRegionIterArgs() - 2, count);
    else if (groupLoop)
      groupLoop.getBody()->getTerminator()->setOperand(
          groupLoop.getNumRegionIterArgs() - 1, count);

    SmallVector<AllocSharedOp> replaced(copies.looped);
    if (handoff)
      replaced.push_back(handoff->staging); // by its ring
    for (AllocSharedOp tile : replaced) {
      if (!tile->use_empty())
        return tile.emitError() << "a ring tile is used outside its loops";
      tile.erase();
    }
    int64_t threads = split.getBlockThreads();
    kernel->setAttr("fa.block", DenseI64ArrayAttr::get(ctx, {threads, 1, 1}));
    kernel.setKnownBlockSizeAttr(
        DenseI32ArrayAttr::get(ctx, {int32_t(threads), 1, 1}));
    // ptxas honours setmaxnreg only where it knows the register count at
    // the kernel's entry: one block per SM (.minnctapersm 1, beside the
    // block size's .maxntid) pins it. Without it ptxas dropped both
    // setmaxnreg of the hd64 backward (C7508): flat 168 registers, spills.
    kernel->setAttr("nvvm.minctasm",
                    IntegerAttr::get(IntegerType::get(ctx, 32), 1));
    if (kernel->hasAttr("fa.shared_bytes"))
      kernel->setAttr("fa.shared_bytes",
                      IntegerAttr::get(IntegerType::get(ctx, 64),
                                       placeSharedTiles(kernel)));
    return success();
  }
};

} // namespace
