//===- BarrierOps.cpp - mbarriers, TMA transfers, named barriers ---------===//
//
// The verifiers of the ops that move tiles by TMA and synchronise on
// mbarriers and named barriers (the warp-specialized kernels' rings).
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FAGPU/IR/FAGPU.h"

using namespace mlir;
using namespace mlir::fagpu;

LogicalResult InitBarriersOp::verify() {
  int64_t count = getBarriers().getType().getCount();
  if (static_cast<int64_t>(getArrivals().size()) != count)
    return emitOpError() << "has " << getArrivals().size()
                         << " arrival counts for " << count << " barriers";
  for (int64_t arrivals : getArrivals())
    if (arrivals < 1 || arrivals >= (1 << 20))
      return emitOpError() << "arrival counts must be in [1, 2^20), got "
                           << arrivals;
  return success();
}

/// What a TMA transfer of `tile` through `map` at `coords` needs, either
/// way: one coordinate per dim but the column, one stage, and the swizzle
/// the map writes and reads (a box row is one swizzle span).
static LogicalResult verifyTmaTransfer(Operation *op, TensorMapType map,
                                       SharedTileType tile, size_t coords) {
  int64_t rank = map.getTensor().getRank();
  if (static_cast<int64_t>(coords) != rank - 1)
    return op->emitOpError() << "takes " << rank - 1
                             << " coordinates (all but the column) for a rank-"
                             << rank << " tensor, got " << coords;
  if (tile.getStages() != 1)
    return op->emitOpError() << "takes one stage of a ring (fagpu.stage)";
  int64_t boxRowBytes = map.getBoxCols() * tile.getElementBytes();
  if (tile.getSwizzle() != boxRowBytes)
    return op->emitOpError()
           << "needs a tile in the map's swizzle (" << boxRowBytes
           << "-byte box rows), got swizzle = " << tile.getSwizzle();
  return success();
}

LogicalResult TmaLoadOp::verify() {
  TensorMapType map = getMap().getType();
  SharedTileType tile = getTile().getType();
  int64_t rank = map.getTensor().getRank();
  if (failed(verifyTmaTransfer(*this, map, tile, getCoords().size())))
    return failure();
  if (tile.getElementType() != map.getTensor().getElementType())
    return emitOpError() << "tile element type " << tile.getElementType()
                         << " differs from the tensor's "
                         << map.getTensor().getElementType();
  if (tile.getRows() != map.getBoxRows() ||
      tile.getCols() % map.getBoxCols() != 0)
    return emitOpError() << "tile " << tile.getRows() << "x" << tile.getCols()
                         << " is not a row of " << map.getBoxRows() << "x"
                         << map.getBoxCols() << " boxes";
  if (tile.getCols() != map.getTensor().getDimSize(rank - 1))
    return emitOpError() << "tile has " << tile.getCols()
                         << " columns, the tensor's rows "
                         << map.getTensor().getDimSize(rank - 1);
  return success();
}

LogicalResult TmaReduceOp::verify() {
  TensorMapType map = getMap().getType();
  SharedTileType tile = getTile().getType();
  int64_t rank = map.getTensor().getRank();
  if (failed(verifyTmaTransfer(*this, map, tile, getCoords().size())))
    return failure();
  if (!tile.getElementType().isF32() ||
      !map.getTensor().getElementType().isF32())
    return emitOpError() << "adds an f32 tile into an f32 tensor, got "
                         << tile.getElementType() << " into "
                         << map.getTensor().getElementType();
  if (tile.getRows() != map.getBoxRows() ||
      tile.getCols() != map.getTensor().getDimSize(rank - 1))
    return emitOpError() << "tile " << tile.getRows() << "x" << tile.getCols()
                         << " is not one row of " << map.getBoxRows() << "x"
                         << map.getBoxCols() << " boxes across the tensor's "
                         << map.getTensor().getDimSize(rank - 1) << " columns";
  int64_t bands = getBands();
  if (tile.getCols() % (bands * map.getBoxCols()) != 0)
    return emitOpError() << bands << " bands of " << tile.getCols()
                         << " columns are not each whole boxes of "
                         << map.getBoxCols();
  return success();
}

/// Named barriers count whole warps.
static LogicalResult verifyNamedBarrier(Operation *op, int64_t threads) {
  if (threads % 32 != 0)
    return op->emitOpError() << "counts whole warps: threads must be a "
                                "multiple of 32, got "
                             << threads;
  return success();
}

LogicalResult NamedBarrierSyncOp::verify() {
  return verifyNamedBarrier(*this, getThreads());
}

LogicalResult NamedBarrierArriveOp::verify() {
  return verifyNamedBarrier(*this, getThreads());
}
