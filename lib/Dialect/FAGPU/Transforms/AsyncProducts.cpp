//===- AsyncProducts.cpp - Issue products early, wait for them late -------===//
//
// A block of synchronous WGMMA products leaves the tensor cores idle while
// the warps compute between them. Here each product moves up to just after
// what it reads is ready (not past another product: they keep their order),
// becomes asynchronous, and is waited for right before its result is first
// used or a shared tile it reads is written, with the products issued after
// it still in flight. In the backward, dP = dO Vᵀ then runs under the
// exponentials of P, and dV, dK and dQ back to back under the math between
// them. Passes.td has the contract.
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FAGPU/Transforms/Passes.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/SetVector.h"

namespace mlir {
namespace fagpu {
#define GEN_PASS_DEF_ASYNCPRODUCTS
#include "fa/Dialect/FAGPU/Transforms/Passes.h.inc"
} // namespace fagpu
} // namespace mlir

using namespace mlir;
using namespace mlir::fagpu;

namespace {

/// The allocation behind a shared tile value (through fagpu.stage).
Value tileAllocation(Value tile) {
  if (auto stage = tile.getDefiningOp<StageOp>())
    return stage.getRing();
  return tile;
}

/// The shared tiles `mma` reads.
SmallVector<Value, 2> sharedOperands(MmaOp mma) {
  SmallVector<Value, 2> tiles = {tileAllocation(mma.getB())};
  if (isa<SharedTileType>(mma.getA().getType()))
    tiles.push_back(tileAllocation(mma.getA()));
  return tiles;
}

/// The shared tile `op` writes, if it writes exactly one that is known.
Value writtenTile(Operation *op) {
  if (auto store = dyn_cast<StoreToSharedOp>(op))
    return tileAllocation(store.getDest());
  if (auto copy = dyn_cast<CopyToSharedOp>(op))
    return tileAllocation(copy.getDest());
  if (auto copy = dyn_cast<AsyncCopyToSharedOp>(op))
    return tileAllocation(copy.getDest());
  return Value();
}

/// The ops free of memory effects in `mma`'s block that its operands come
/// from (a zero accumulator's splat, a stage view, their index math): they
/// move up with it.
llvm::SetVector<Operation *> pureOperandSlice(MmaOp mma) {
  llvm::SetVector<Operation *> slice;
  SmallVector<Operation *> worklist = {mma.getOperation()};
  while (!worklist.empty()) {
    Operation *op = worklist.pop_back_val();
    for (Value operand : op->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (def && def->getBlock() == mma->getBlock() &&
          isMemoryEffectFree(def) && def->getNumRegions() == 0 &&
          slice.insert(def))
        worklist.push_back(def);
    }
  }
  return slice;
}

/// Whether `mma`, with `slice` (its pureOperandSlice), may be issued before
/// `op`: `op` is in the slice, or defines none of the operands of `mma` and
/// the slice and writes no shared tile `mma` reads; any other effect on
/// memory (barriers, waits for copies) stays a fence.
bool mayIssueBefore(MmaOp mma, const llvm::SetVector<Operation *> &slice,
                    Operation *op) {
  if (slice.contains(op))
    return true;
  if (isa<MmaWaitOp>(op))
    return false;
  auto defines = [&](Operation *user) {
    return llvm::any_of(user->getOperands(),
                        [&](Value v) { return v.getDefiningOp() == op; });
  };
  if (defines(mma) || llvm::any_of(slice, defines))
    return false;
  if (Value tile = writtenTile(op))
    return !llvm::is_contained(sharedOperands(mma), tile);
  return isMemoryEffectFree(op) || isa<LoadTileOp, MmaOp>(op);
}

/// The nearest op at or above `op` that is not free of memory effects (a
/// fence, a write, a load), or null for the block's start.
Operation *anchorOf(Operation *op) {
  while (op && isMemoryEffectFree(op))
    op = op->getPrevNode();
  return op;
}

bool isWgmma(MmaOp mma) {
  return isa<WgmmaAccLayoutAttr, WgmmaAccColsLayoutAttr>(
      mma.getAcc().getType().getEncoding());
}

/// Moves each wait for a ring stage that only products read (a
/// `fagpu.wait_barrier` followed by the `fagpu.stage` views it guards) up
/// to just after the wait before it, with the pure ops it needs, so that
/// the products reading the stage can be issued beside those of the earlier
/// one (the backward's dP = dO Vᵀ beside S = Q Kᵀ: with one wait per ring,
/// dO's stood after P's store). A stage is filled without this thread's
/// help, so waiting for it earlier cannot deadlock, as long as no arrival
/// (which another thread may wait for) lies between the two places. Only in
/// a `fagpu.warp_specialize`'s consumers: there the producer fills every
/// stage, and no barrier the producer takes part in lies between the two.
void hoistStageWaits(Block &block) {
  Operation *parent = block.getParentOp();
  auto split = dyn_cast<WarpSpecializeOp>(parent);
  if (!split)
    split = parent->getParentOfType<WarpSpecializeOp>();
  if (!split || !split.getConsumers().isAncestor(block.getParent()))
    return;
  SmallVector<WaitBarrierOp> waits(block.getOps<WaitBarrierOp>());
  for (WaitBarrierOp wait : waits) {
    SmallVector<Operation *> guarded;
    for (Operation *op = wait->getNextNode(); op && isa<StageOp>(op);
         op = op->getNextNode())
      guarded.push_back(op);
    bool productsOnly =
        !guarded.empty() && llvm::all_of(guarded, [](Operation *stage) {
          return llvm::all_of(stage->getUsers(),
                              [](Operation *u) { return isa<MmaOp>(u); });
        });
    if (!productsOnly)
      continue;
    Operation *target = wait->getPrevNode();
    while (target &&
           !isa<WaitBarrierOp, ArriveBarrierOp, ArriveExpectBytesOp>(target) &&
           target->getNumRegions() == 0)
      target = target->getPrevNode();
    if (!target || !isa<WaitBarrierOp>(target))
      continue;
    // The wait, its views and the pure ops between `target` and the wait
    // that they use, in block order.
    llvm::SetVector<Operation *> moved;
    SmallVector<Operation *> worklist = {wait.getOperation()};
    worklist.append(guarded);
    bool movable = true;
    while (!worklist.empty() && movable) {
      Operation *op = worklist.pop_back_val();
      if (!moved.insert(op))
        continue;
      for (Value operand : op->getOperands()) {
        Operation *def = operand.getDefiningOp();
        if (!def || def->getBlock() != &block || def == target ||
            def->isBeforeInBlock(target))
          continue;
        if (!isMemoryEffectFree(def) || def->getNumRegions() != 0) {
          movable = false;
          break;
        }
        worklist.push_back(def);
      }
    }
    if (!movable)
      continue;
    SmallVector<Operation *> order = moved.takeVector();
    llvm::sort(order, [](Operation *a, Operation *b) {
      return a->isBeforeInBlock(b);
    });
    Operation *last = target;
    for (Operation *op : order) {
      op->moveAfter(last);
      last = op;
    }
  }
}

struct AsyncProductsPass : fagpu::impl::AsyncProductsBase<AsyncProductsPass> {
  using AsyncProductsBase::AsyncProductsBase;

  void runOnOperation() override {
    SmallVector<Block *> blocks;
    getOperation().walk([&](MmaOp mma) {
      if (!mma.getAsync() && isWgmma(mma) &&
          !llvm::is_contained(blocks, mma->getBlock()))
        blocks.push_back(mma->getBlock());
    });
    for (Block *block : blocks) {
      if (hoistStageWaitsOption)
        hoistStageWaits(*block);
      schedule(*block);
    }
  }

  static void schedule(Block &block) {
    // Early issue: each product goes up to the op that holds it back (an
    // operand's definition, a write of a tile it reads, a fence). Products
    // held back by the same memory effect (S and dP by the copies' wait)
    // are issued together after the last of their own holders, in their
    // order.
    SmallVector<MmaOp> products;
    for (MmaOp mma : block.getOps<MmaOp>())
      if (!mma.getAsync() && isWgmma(mma))
        products.push_back(mma);
    struct Issue {
      MmaOp mma;
      Operation *holder;
      llvm::SetVector<Operation *> slice; // pureOperandSlice(mma)
    };
    llvm::MapVector<Operation *, SmallVector<Issue>> groups; // by anchor
    for (MmaOp mma : products) {
      llvm::SetVector<Operation *> slice = pureOperandSlice(mma);
      Operation *holder = mma->getPrevNode();
      while (holder && mayIssueBefore(mma, slice, holder))
        holder = holder->getPrevNode();
      groups[anchorOf(holder)].push_back({mma, holder, std::move(slice)});
    }
    for (auto &[anchor, group] : groups) {
      Operation *last = anchor;
      for (const Issue &issue : group)
        if (!last || (issue.holder && last->isBeforeInBlock(issue.holder)))
          last = issue.holder;
      for (const Issue &issue : group) {
        // The slice's ops below the new place go there first, in order.
        SmallVector<Operation *> below;
        for (Operation *op : issue.slice)
          if (!last || last->isBeforeInBlock(op))
            below.push_back(op);
        llvm::sort(below, [](Operation *a, Operation *b) {
          return a->isBeforeInBlock(b);
        });
        below.push_back(issue.mma);
        for (Operation *op : below) {
          if (last)
            op->moveAfter(last);
          else
            op->moveBefore(&block.front());
          last = op;
        }
      }
    }
    // Late waits: walk the block with the products in flight, oldest first.
    SmallVector<MmaOp> inFlight;
    DenseMap<Operation *, Value> waited; // product -> its mma_wait
    // Releases of ring stages (fagpu.arrive_barrier) held until the
    // products in flight that read staged tiles are waited for anyway: a
    // release is no reason to wait.
    SmallVector<std::pair<Operation *, MmaOp>> heldReleases;
    llvm::SmallPtrSet<Operation *, 4> held;
    auto waitFor = [&](size_t index, Operation *at) {
      SmallVector<Operation *> released;
      for (auto &[release, mma] : heldReleases)
        if (release &&
            llvm::is_contained(ArrayRef(inFlight).take_front(index + 1), mma)) {
          released.push_back(release);
          release = nullptr;
        }
      auto releaseAfterWaits = llvm::make_scope_exit([&] {
        for (Operation *release : released)
          release->moveBefore(at);
      });
      OpBuilder b(at);
      // Products complete in issue order: waiting for one waits for the
      // older ones too.
      for (size_t i = 0; i <= index; ++i) {
        MmaOp mma = inFlight[i];
        int64_t after = static_cast<int64_t>(inFlight.size() - 1 - i);
        auto wait = MmaWaitOp::create(b, mma.getLoc(), mma.getType(),
                                      mma.getResult(), after);
        mma.getResult().replaceAllUsesExcept(wait.getResult(), wait);
        waited[mma] = wait.getResult();
      }
      inFlight.erase(inFlight.begin(), inFlight.begin() + index + 1);
    };
    for (Operation &op : llvm::make_early_inc_range(block)) {
      if (isa<ArriveBarrierOp>(op)) {
        if (held.contains(&op))
          continue;
        MmaOp reader;
        for (MmaOp mma : inFlight)
          if (llvm::any_of(mma->getOperands(),
                           [](Value v) { return v.getDefiningOp<StageOp>(); }))
            reader = mma;
        if (reader) {
          heldReleases.push_back({&op, reader});
          held.insert(&op);
          continue;
        }
      }
      // The newest in-flight product this op needs: one whose result it
      // uses (directly or in a region) or one reading a tile it writes;
      // every one before an op with other effects on memory.
      Value written = writtenTile(&op);
      bool fence = !written && !isMemoryEffectFree(&op) &&
                   !isa<MmaOp, LoadTileOp, StoreTileOp>(op);
      int64_t needed = fence ? static_cast<int64_t>(inFlight.size()) - 1 : -1;
      for (auto [i, mma] : llvm::enumerate(inFlight)) {
        bool uses = llvm::any_of(mma.getResult().getUsers(), [&](Operation *u) {
          return op.isAncestor(u);
        });
        bool clobbers =
            written && llvm::is_contained(sharedOperands(mma), written);
        if (uses || clobbers)
          needed = std::max(needed, static_cast<int64_t>(i));
      }
      if (needed >= 0)
        waitFor(needed, &op);
      auto mma = dyn_cast<MmaOp>(op);
      if (mma && !mma.getAsync() && isWgmma(mma)) {
        mma.setAsync(true);
        inFlight.push_back(mma);
      }
    }
    if (!inFlight.empty())
      waitFor(inFlight.size() - 1, block.getTerminator());
  }
};

} // namespace
