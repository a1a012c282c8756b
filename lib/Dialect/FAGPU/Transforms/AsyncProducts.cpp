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

/// Whether `mma` may be issued before `op`: `op` defines none of its
/// operands and writes no shared tile it reads; any other effect on memory
/// (barriers, waits for copies) stays a fence.
bool mayIssueBefore(MmaOp mma, Operation *op) {
  if (isa<MmaWaitOp>(op))
    return false;
  for (Value operand : mma->getOperands())
    if (operand.getDefiningOp() == op)
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

struct AsyncProductsPass : fagpu::impl::AsyncProductsBase<AsyncProductsPass> {
  void runOnOperation() override {
    SmallVector<Block *> blocks;
    getOperation().walk([&](MmaOp mma) {
      if (!mma.getAsync() && isWgmma(mma) &&
          !llvm::is_contained(blocks, mma->getBlock()))
        blocks.push_back(mma->getBlock());
    });
    for (Block *block : blocks)
      schedule(*block);
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
    llvm::MapVector<Operation *, SmallVector<std::pair<MmaOp, Operation *>>>
        groups; // anchor -> (product, its holder)
    for (MmaOp mma : products) {
      Operation *holder = mma->getPrevNode();
      while (holder && mayIssueBefore(mma, holder))
        holder = holder->getPrevNode();
      groups[anchorOf(holder)].push_back({mma, holder});
    }
    for (auto &[anchor, group] : groups) {
      Operation *last = anchor;
      for (auto [mma, holder] : group)
        if (!last || (holder && last->isBeforeInBlock(holder)))
          last = holder;
      for (auto [mma, holder] : group) {
        if (last)
          mma->moveAfter(last);
        else
          mma->moveBefore(&block.front());
        last = mma;
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
