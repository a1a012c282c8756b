//===- NarrowSharedSyncs.cpp - Fewer and smaller barriers around stores ---===//
//
// fagpu.store_to_shared waits for the block before it writes (the tile's
// old contents may still be read) and publishes to the block after. Two
// facts make that narrower, each proved here from the IR:
//
// - Ownership. With the backward's two warpgroups, P and dS are written in
//   column halves, and dV += Pᵀ dO (dK += dSᵀ Q) reads, in each warpgroup,
//   the half that warpgroup wrote; a bulk reduction of dQ reads band b in
//   warpgroup b. Where every reader of a tile reads only what its own
//   warpgroup wrote (compared element by element through the layouts), the
//   stores publish to the writing warpgroup alone: `sync(warpgroup)`.
// - Separation. Where a block barrier lies between every earlier read of
//   the tile and the store, on every path of the loops around it, the
//   leading wait is redundant: `unread`.
//
// Passes.td has the contract.
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FAGPU/Transforms/Passes.h"

#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/MapVector.h"

namespace mlir {
namespace fagpu {
#define GEN_PASS_DEF_NARROWSHAREDSYNCS
#include "fa/Dialect/FAGPU/Transforms/Passes.h.inc"
} // namespace fagpu
} // namespace mlir

using namespace mlir;
using namespace mlir::fagpu;

namespace {

/// Tiles the analysis enumerates, at most (a kernel's are 64 x 256), and
/// warpgroups (a bit each in a word).
constexpr int64_t kMaxElements = int64_t(1) << 20;
constexpr int64_t kMaxWarpgroups = 32;

/// The warpgroups (a bit each) that hold each element of a [rows x cols]
/// tile, row-major.
struct Ownership {
  int64_t rows = 0, cols = 0;
  SmallVector<uint32_t> owners;

  /// None for a tile too large to enumerate or spread over too many warps.
  static std::optional<Ownership> of(RankedTensorType type) {
    TileLayout layout = getTileLayout(type);
    if (layout.rows() * layout.cols() > kMaxElements ||
        layout.numWarps() > 4 * kMaxWarpgroups ||
        layout.numWarps() * 32 * layout.numRegisters() > 4 * kMaxElements)
      return std::nullopt;
    Ownership o{layout.rows(), layout.cols(), {}};
    o.owners.assign(o.rows * o.cols, 0);
    for (int64_t warp = 0; warp < layout.numWarps(); ++warp)
      for (int64_t lane = 0; lane < 32; ++lane)
        for (int64_t reg = 0; reg < layout.numRegisters(); ++reg) {
          TileCoord c = layout.apply(reg, lane, warp);
          o.owners[c.row * o.cols + c.col] |= 1u << (warp / 4);
        }
    return o;
  }
  /// Whether element (row, col) exists and warpgroup `group` alone holds it.
  bool onlyOf(int64_t row, int64_t col, int64_t group) const {
    return group < kMaxWarpgroups && row < rows && col < cols &&
           owners[row * cols + col] == (1u << group);
  }
};

/// Whether warpgroup g of `mma` reads, of `tile`'s operand, only elements
/// that `writers` says g alone wrote: a warpgroup computes the accumulator
/// elements it holds, from A's rows (Aᵀ's columns) and B's columns (Bᵀ's
/// rows) of those elements.
bool readsOwnParts(MmaOp mma, Value tile, const Ownership &writers) {
  auto acc = cast<RankedTensorType>(mma.getResult().getType());
  Attribute accLayout = getLayout(acc);
  if (!accLayout ||
      (!isWgmmaFamily(accLayout) && !isa<WgmmaAccColsLayoutAttr>(accLayout)))
    return false;
  bool isA = mma.getA() == tile, isB = mma.getB() == tile;
  if (isA == isB)
    return false;
  TileLayout layout = getTileLayout(acc);
  if (layout.numWarps() > 4 * kMaxWarpgroups ||
      layout.numWarps() * 32 * layout.numRegisters() > 4 * kMaxElements)
    return false;
  // The lines (rows of A, columns of Bᵀ ...) each warpgroup reads.
  SmallVector<llvm::BitVector> lines;
  int64_t extent = isA ? layout.rows() : layout.cols();
  for (int64_t warp = 0; warp < layout.numWarps(); ++warp) {
    size_t group = warp / 4;
    if (lines.size() <= group)
      lines.resize(group + 1, llvm::BitVector(extent));
    for (int64_t lane = 0; lane < 32; ++lane)
      for (int64_t reg = 0; reg < layout.numRegisters(); ++reg) {
        TileCoord c = layout.apply(reg, lane, warp);
        lines[group].set(isA ? c.row : c.col);
      }
  }
  // A line of the operand is a row of the stored tile unless the product
  // reads it transposed.
  bool lineIsRow = isA ? !mma.getTransposeA() : mma.getTransposeB();
  int64_t depth = lineIsRow ? writers.cols : writers.rows;
  for (auto [group, read] : llvm::enumerate(lines))
    for (int64_t line : read.set_bits())
      for (int64_t k = 0; k < depth; ++k)
        if (!(lineIsRow ? writers.onlyOf(line, k, group)
                        : writers.onlyOf(k, line, group)))
          return false;
  return true;
}

/// Whether band b of every row `reduce` adds (issued by warpgroup b) was
/// written by warpgroup b alone.
bool readsOwnParts(ReduceToGlobalOp reduce, const Ownership &writers) {
  int64_t bands = reduce.getBands();
  if (bands > kMaxWarpgroups)
    return false;
  int64_t bandCols = reduce.getDest().getType().getDimSize(1) / bands;
  for (int64_t band = 0; band < bands; ++band)
    for (int64_t row = 0; row < writers.rows; ++row)
      for (int64_t col = band * bandCols; col < (band + 1) * bandCols; ++col)
        if (!writers.onlyOf(row, col, band))
          return false;
  return true;
}

/// Whether the stores into `tile` may publish to their own warpgroup: all
/// write with one ownership, and every other use reads own parts only.
bool isWarpgroupLocal(Value tile, ArrayRef<StoreToSharedOp> stores) {
  std::optional<Ownership> writers;
  for (StoreToSharedOp store : stores) {
    std::optional<Ownership> o = Ownership::of(store.getValue().getType());
    if (!o || (writers && writers->owners != o->owners))
      return false;
    writers = std::move(o);
  }
  for (Operation *user : tile.getUsers()) {
    if (auto store = dyn_cast<StoreToSharedOp>(user);
        store && store.getDest() == tile)
      continue;
    if (auto mma = dyn_cast<MmaOp>(user)) {
      if (!readsOwnParts(mma, tile, *writers))
        return false;
      continue;
    }
    auto reduce = dyn_cast<ReduceToGlobalOp>(user);
    if (!reduce || !readsOwnParts(reduce, *writers))
      return false;
  }
  return true;
}

/// Walks backward from a store to `tile` over what runs before it, looking
/// for an earlier read of the tile not separated from it by a block barrier.
class SeparationWalk {
public:
  SeparationWalk(StoreToSharedOp store, Value tile) : store(store), tile(tile) {
    // Both bulk reductions (fagpu-tma-reductions turns reduce_to_global
    // into tma_reduce before this pass) read the tile until the issuing
    // thread's wait_shared_reads: the other threads pass that wait at once,
    // so only a barrier after it frees the tile.
    for (Operation *user : tile.getUsers())
      bulkRead |= isa<ReduceToGlobalOp, TmaReduceOp>(user);
  }

  /// True if every path into the store passes a block barrier after the
  /// last read of the tile.
  bool separated() {
    Block *block = store->getBlock();
    Outcome outcome = walkBefore(store, block);
    while (outcome == Outcome::Open) {
      Operation *parent = block->getParentOp();
      if (isa<gpu::GPUFuncOp>(parent))
        return true; // the kernel's entry: nothing was read before
      if (auto loop = dyn_cast<scf::ForOp>(parent)) {
        // The previous iteration, then the way in.
        if (walkBefore(loop.getBody()->getTerminator(), loop.getBody()) ==
            Outcome::Read)
          return false;
      } else if (!isa<scf::IfOp>(parent)) {
        return false;
      }
      block = parent->getBlock();
      outcome = walkBefore(parent, block);
    }
    return outcome == Outcome::Barrier;
  }

private:
  enum class Outcome { Barrier, Read, Open };

  /// The ops of `block` before `from`, last first.
  Outcome walkBefore(Operation *from, Block *block) {
    for (Operation *op = from->getPrevNode(); op; op = op->getPrevNode()) {
      if (op == store.getOperation())
        return Outcome::Barrier; // round the loop: checked from the store on
      if (isBlockBarrier(op))
        return Outcome::Barrier;
      if (op->getNumRegions() > 0) {
        if (!isa<scf::ForOp, scf::IfOp>(op))
          return Outcome::Read;
        // What runs inside; a loop may run no iteration and an if may
        // take the other branch, so the walk goes on before it either way.
        for (Region &region : op->getRegions())
          for (Block &inner : region)
            if (walkBefore(inner.getTerminator(), &inner) == Outcome::Read)
              return Outcome::Read;
        continue;
      }
      if (readsTile(op))
        return Outcome::Read;
    }
    return Outcome::Open;
  }

  static bool isBlockBarrier(Operation *op) {
    if (auto store = dyn_cast<StoreToSharedOp>(op))
      return store.getSync() == SyncScope::block; // its trailing barrier
    return isa<gpu::BarrierOp, WaitSharedCopiesOp, CopyToSharedOp,
               InitBarriersOp>(op);
  }

  /// Whether `op` reads the tile, or is where an asynchronous read of it
  /// completes (a product's wait; the wait for the bulk reductions).
  bool readsTile(Operation *op) {
    if (auto write = dyn_cast<StoreToSharedOp>(op);
        write && write.getDest() == tile)
      return false;
    if (auto wait = dyn_cast<MmaWaitOp>(op))
      if (auto mma = wait.getPending().getDefiningOp<MmaOp>())
        return mma.getA() == tile || mma.getB() == tile;
    if (isa<WaitSharedReadsOp>(op))
      return bulkRead;
    return llvm::is_contained(op->getOperands(), tile);
  }

  StoreToSharedOp store;
  Value tile;
  bool bulkRead = false;
};

struct NarrowSharedSyncsPass
    : fagpu::impl::NarrowSharedSyncsBase<NarrowSharedSyncsPass> {
  void runOnOperation() override {
    // Stores by tile, each tile a plain allocation (rings are the copy
    // pipelines').
    llvm::MapVector<Value, SmallVector<StoreToSharedOp>> byTile;
    getOperation().walk([&](StoreToSharedOp store) {
      if (store.getDest().getDefiningOp<AllocSharedOp>())
        byTile[store.getDest()].push_back(store);
    });
    for (auto &[tile, stores] : byTile)
      if (isWarpgroupLocal(tile, stores))
        for (StoreToSharedOp store : stores)
          store.setSync(SyncScope::warpgroup);
    // After the scopes: only a block-scope store's trailing barrier
    // separates.
    for (auto &[tile, stores] : byTile)
      for (StoreToSharedOp store : stores)
        if (SeparationWalk(store, tile).separated())
          store.setUnread(true);
  }
};

} // namespace
