//===- PersistentGrid.cpp - Blocks that loop over the kernel's tiles ------===//
//
// With a block per tile, every tile pays the block's launch, its barrier
// set-up and the fill of its copy pipeline, and nothing overlaps a tile's
// epilogue: at N = 512 (four KV blocks per tile) that is a third of the
// time. A fixed grid whose blocks loop over the tiles pays it once per SM
// and lets the producer load tile t + 1 while the compute warpgroups finish
// tile t. Passes.td has the contract.
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FAGPU/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/SetVector.h"

namespace mlir {
namespace fagpu {
#define GEN_PASS_DEF_PERSISTENTGRID
#include "fa/Dialect/FAGPU/Transforms/Passes.h.inc"
} // namespace fagpu
} // namespace mlir

using namespace mlir;
using namespace mlir::fagpu;

namespace {

struct PersistentGridPass
    : fagpu::impl::PersistentGridBase<PersistentGridPass> {
  using PersistentGridBase::PersistentGridBase;

  void runOnOperation() override {
    if (blocks < 1) {
      getOperation().emitError()
          << "fagpu-persistent-grid needs at least one block, got "
          << blocks.getValue();
      return signalPassFailure();
    }
    for (gpu::GPUFuncOp kernel : getOperation().getOps<gpu::GPUFuncOp>())
      if (kernel.isKernel() && failed(loopOverTiles(kernel)))
        return signalPassFailure();
  }

  LogicalResult loopOverTiles(gpu::GPUFuncOp kernel) {
    auto grid = kernel->getAttrOfType<DenseI64ArrayAttr>("fa.grid");
    if (!grid || grid.size() != 3 ||
        llvm::any_of(grid.asArrayRef(), [](int64_t n) {
          return n < 1 && !ShapedType::isDynamic(n);
        }))
      return kernel.emitError()
             << "fagpu-persistent-grid needs fa.grid = [X, Y, Z] (the block "
                "per tile)";
    if (kernel.getBody().getBlocks().size() != 1)
      return kernel.emitError()
             << "fagpu-persistent-grid takes kernels of one block";
    Block &entry = kernel.front();
    TileGridOp tileGrid;
    kernel.walk([&](TileGridOp grid) { tileGrid = grid; });
    if (tileGrid && tileGrid->getBlock() != &entry)
      return tileGrid.emitError()
             << "fagpu-persistent-grid needs the tile grid stated at the "
                "kernel's entry";
    bool dynamic = llvm::any_of(grid.asArrayRef(), ShapedType::isDynamic);
    if (dynamic && !tileGrid)
      return kernel.emitError()
             << "fagpu-persistent-grid: with runtime shapes (a dynamic "
                "fa.grid) the kernel must state its tiles (fagpu.tile_grid)";
    // What computes the tile grid stays before the loop: it may read the
    // kernel's arguments, not its block ids.
    llvm::SetVector<Operation *> extentOps;
    if (tileGrid) {
      SmallVector<Value> pending(tileGrid->getOperands());
      while (!pending.empty()) {
        Operation *def = pending.pop_back_val().getDefiningOp();
        if (!def || !extentOps.insert(def))
          continue;
        if (def->getBlock() != &entry || def->getNumRegions() ||
            isa<gpu::BlockIdOp>(def))
          return tileGrid.emitError()
                 << "fagpu-persistent-grid: the tile grid must be computed "
                    "at the kernel's entry from its arguments";
        llvm::append_range(pending, def->getOperands());
      }
    }
    SmallVector<gpu::BlockIdOp> ids;
    WalkResult walk = kernel.walk([&](Operation *op) {
      if (isa<gpu::GridDimOp>(op) ||
          (isa<scf::ForOp>(op) && op->hasAttr("fagpu.tiles"))) {
        op->emitError() << "fagpu-persistent-grid: the kernel already "
                           "depends on its grid size";
        return WalkResult::interrupt();
      }
      if (auto id = dyn_cast<gpu::BlockIdOp>(op)) {
        if (op->getBlock() != &entry) {
          op->emitError() << "fagpu-persistent-grid needs the block ids "
                             "read at the kernel's entry";
          return WalkResult::interrupt();
        }
        ids.push_back(id);
      }
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return failure();

    // The loop's body: everything but the shared allocations and constants,
    // which stay at the entry for every tile.
    SmallVector<Operation *> perTile;
    for (Operation &op : entry.without_terminator())
      if (!isa<AllocSharedOp, AllocBarriersOp, TileGridOp>(op) &&
          !op.hasTrait<OpTrait::ConstantLike>() && !extentOps.contains(&op))
        perTile.push_back(&op);
    if (perTile.empty())
      return success();

    Location loc = kernel.getLoc();
    OpBuilder b = OpBuilder::atBlockTerminator(&entry);
    auto c = [&](int64_t v) {
      return arith::ConstantIndexOp::create(b, loc, v);
    };
    Value zero = c(0), one = c(1);
    // The tile grid: fa.grid's constants, or the kernel's statement of it.
    Value cx, cy, two, numTiles;
    if (dynamic) {
      cx = tileGrid.getX();
      cy = tileGrid.getY();
      two = c(2);
      Value xy = arith::MulIOp::create(b, loc, cx, cy);
      numTiles = arith::MulIOp::create(b, loc, xy, tileGrid.getZ());
    } else {
      cx = c(grid[0]);
      cy = c(grid[1]);
      two = grid[0] == 2 ? cx : c(2);
    }
    // Rounds of one tile per block; odd rounds run backwards, so that a
    // block with a long tile in one round gets a short one in the next. A
    // causal mask makes the last Q blocks the longest, and in forward order
    // a grid that divides the Q blocks (132 blocks, 4 Q blocks a head at
    // N = 512) would give each block the same Q block every round.
    Value block = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
    Value blocksInGrid = gpu::GridDimOp::create(b, loc, gpu::Dimension::x);
    Value mirrored = arith::SubIOp::create(
        b, loc, arith::SubIOp::create(b, loc, blocksInGrid, one), block);
    if (!dynamic)
      numTiles = c(grid[0] * grid[1] * grid[2]);
    Value fullRounds = arith::DivUIOp::create(b, loc, numTiles, blocksInGrid);
    Value leftOver = arith::RemUIOp::create(b, loc, numTiles, blocksInGrid);
    auto slotIn = [&](Value round) {
      Value odd = arith::CmpIOp::create(
          b, loc, arith::CmpIPredicate::ne,
          arith::RemUIOp::create(b, loc, round, two), zero);
      return arith::SelectOp::create(b, loc, odd, mirrored, block);
    };
    Value inLastRound = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                              slotIn(fullRounds), leftOver);
    Value rounds = arith::AddIOp::create(
        b, loc, fullRounds,
        arith::SelectOp::create(b, loc, inLastRound, one, zero));
    auto loop = scf::ForOp::create(b, loc, zero, rounds, one);
    loop->setAttr("fagpu.tiles", b.getUnitAttr());
    for (Operation *op : perTile)
      op->moveBefore(loop.getBody()->getTerminator());

    b.setInsertionPointToStart(loop.getBody());
    Value round = loop.getInductionVar();
    // One op a statement: argument order is unspecified in C++.
    Value roundStart = arith::MulIOp::create(b, loc, round, blocksInGrid);
    Value t = arith::AddIOp::create(b, loc, roundStart, slotIn(round));
    Value column = arith::RemUIOp::create(b, loc, t, cx);
    Value byX = arith::DivUIOp::create(b, loc, t, cx);
    Value tile[3] = {column, arith::RemUIOp::create(b, loc, byX, cy),
                     arith::DivUIOp::create(b, loc, byX, cy)};
    for (gpu::BlockIdOp id : ids) {
      id.replaceAllUsesWith(tile[static_cast<unsigned>(id.getDimension())]);
      id.erase();
    }
    if (tileGrid)
      tileGrid.erase();
    // The launch: at most `blocks` blocks along x. With runtime shapes the
    // runtime takes min(blocks, tiles) for each call, from fa.grid (the
    // tiles, as before) and fa.persistent_blocks.
    if (dynamic) {
      kernel->setAttr("fa.persistent_blocks",
                      b.getI64IntegerAttr(blocks.getValue()));
      return success();
    }
    int64_t tiles = grid[0] * grid[1] * grid[2];
    kernel->setAttr("fa.grid",
                    b.getDenseI64ArrayAttr(
                        {std::min<int64_t>(tiles, blocks.getValue()), 1, 1}));
    return success();
  }
};

} // namespace
