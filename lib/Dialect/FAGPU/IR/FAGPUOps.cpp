//===- FAGPUOps.cpp - Ops of the GPU tile level ---------------------------===//

#include "fa/Dialect/FAGPU/IR/FAGPU.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/PatternMatch.h"

#include "llvm/Support/CheckedArithmetic.h"

#include <algorithm>
#include <optional>

using namespace mlir;
using namespace mlir::fagpu;

#define GET_OP_CLASSES
#include "fa/Dialect/FAGPU/IR/FAGPUOps.cpp.inc"

/// A register tile of `what`: a ranked tensor whose layout takes its shape.
static LogicalResult verifyRegisterTile(Operation *op, Type type,
                                        StringRef what) {
  DistributedLayoutAttr layout = getLayout(type);
  if (!layout)
    return op->emitOpError() << what << " must be a tensor with a "
                             << "#fagpu register layout, got " << type;
  std::string problem =
      layout.checkShape(cast<RankedTensorType>(type).getShape());
  if (!problem.empty())
    return op->emitOpError() << what << ": " << problem;
  return success();
}

/// Row-major with unit stride along the last dimension (row slices of a
/// larger tensor qualify).
static bool hasContiguousRows(MemRefType type) {
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)))
    return false;
  return strides.back() == 1;
}

static bool is16BitFloat(Type type) { return type.isF16() || type.isBF16(); }

/// Checks of both copies from global rows into a shared tile.
static LogicalResult verifyRowCopy(Operation *op, MemRefType source,
                                   SharedTileType dest) {
  auto emitOpError = [&]() { return op->emitOpError(); };
  if (dest.getStages() != 1)
    return emitOpError() << "copies into one stage of a ring (fagpu.stage)";
  if (source.getRank() != 2)
    return emitOpError() << "source must be a 2-D memref, got " << source;
  if (source.getElementType() != dest.getElementType())
    return emitOpError() << "source element type " << source.getElementType()
                         << " differs from the tile's "
                         << dest.getElementType();
  if (!source.isDynamicDim(1) && source.getDimSize(1) != dest.getCols())
    return emitOpError() << "source rows have " << source.getDimSize(1)
                         << " elements, the tile " << dest.getCols();
  if (!hasContiguousRows(source))
    return emitOpError() << "source rows must be contiguous (unit inner "
                            "stride)";
  return success();
}

LogicalResult CopyToSharedOp::verify() {
  return verifyRowCopy(*this, cast<MemRefType>(getSource().getType()),
                       getDest().getType());
}

LogicalResult AsyncCopyToSharedOp::verify() {
  return verifyRowCopy(*this, cast<MemRefType>(getSource().getType()),
                       getDest().getType());
}

LogicalResult StageOp::verify() {
  SharedTileType ring = getRing().getType();
  if (ring.getStages() == 1 && ring.getShape().size() != 3)
    return emitOpError() << "takes a 3-D ring of stages, got " << ring;
  if (getResult().getType() != ring.getStageType())
    return emitOpError() << "a stage of " << ring << " is "
                         << ring.getStageType() << ", got "
                         << getResult().getType();
  return success();
}

LogicalResult MmaOp::verify() {
  if (failed(verifyRegisterTile(*this, getAcc().getType(), "accumulator")))
    return failure();
  auto acc = cast<RankedTensorType>(getAcc().getType());
  if (acc != getResult().getType())
    return emitOpError() << "result type " << getResult().getType()
                         << " differs from the accumulator's " << acc;
  Attribute accLayout = acc.getEncoding();
  bool byColumns = isa<WgmmaAccColsLayoutAttr>(accLayout);
  bool wgmma = byColumns || isa<WgmmaAccLayoutAttr>(accLayout);
  // Warps that split the accumulator's columns (either family) all read
  // the whole A.
  bool warpsSplitColumns =
      byColumns || isa<MmaSyncAccColsLayoutAttr>(accLayout);
  if (!wgmma && !isa<MmaSyncAccLayoutAttr, MmaSyncAccColsLayoutAttr>(accLayout))
    return emitOpError() << "the accumulator layout must be #fagpu.wgmma_acc, "
                            "#fagpu.wgmma_acc_cols, #fagpu.mma_sync_acc or "
                            "#fagpu.mma_sync_acc_cols, got "
                         << accLayout;
  if (getAsync() && !wgmma)
    return emitOpError() << "only WGMMA products can be asynchronous";
  // fagpu.after_issue takes it as an anchor, without reading it.
  if (getAsync() && llvm::any_of(getResult().getUses(), [](OpOperand &use) {
        auto after = dyn_cast<AfterIssueOp>(use.getOwner());
        return !isa<MmaWaitOp>(use.getOwner()) &&
               !(after && use.get() == after.getIssued() &&
                 after.getSource() != use.get());
      }))
    return emitOpError() << "an asynchronous product is read only through "
                            "fagpu.mma_wait";
  if (!acc.getElementType().isF32())
    return emitOpError() << "accumulates in f32, got " << acc.getElementType();
  int64_t m = acc.getDimSize(0), n = acc.getDimSize(1);
  int64_t warps = getLayout(acc).getWarps();

  SharedTileType b = getB().getType();
  if (b.getStages() != 1)
    return emitOpError() << "reads one stage of a ring (fagpu.stage)";
  int64_t k = getTransposeB() ? b.getCols() : b.getRows();
  int64_t bn = getTransposeB() ? b.getRows() : b.getCols();
  if (bn != n)
    return emitOpError() << "B has " << bn << " columns (N), the "
                         << "accumulator " << n;
  if (k % 16 != 0)
    return emitOpError() << "K must be a multiple of 16, got " << k;

  Type element = b.getElementType();
  if (auto aTile = dyn_cast<SharedTileType>(getA().getType())) {
    if (aTile.getStages() != 1)
      return emitOpError() << "reads one stage of a ring (fagpu.stage)";
    int64_t am = getTransposeA() ? aTile.getCols() : aTile.getRows();
    int64_t ak = getTransposeA() ? aTile.getRows() : aTile.getCols();
    if (am != m || ak != k)
      return emitOpError() << "A is " << aTile.getRows() << "x"
                           << aTile.getCols() << ", expected "
                           << (getTransposeA() ? k : m) << "x"
                           << (getTransposeA() ? m : k);
    // WGMMA reads a transposed A in whole 64-column atoms, one per
    // warpgroup (mma.sync's ldmatrix.trans takes each warp's rows of M).
    if (getTransposeA() && wgmma && !byColumns && m != 16 * warps)
      return emitOpError() << "a transposed A has one 64-row block of M per "
                              "warpgroup: M must be "
                           << 16 * warps << ", got " << m;
    if (aTile.getElementType() != element)
      return emitOpError() << "A and B element types differ";
  } else {
    if (getTransposeA())
      return emitOpError() << "transpose_a reads A from a shared tile";
    if (warpsSplitColumns)
      return emitOpError() << "warps that split the accumulator's columns "
                              "all read A: it must be a shared tile";
    if (failed(verifyRegisterTile(*this, getA().getType(), "A")))
      return failure();
    auto aTensor = cast<RankedTensorType>(getA().getType());
    Attribute aLayout = aTensor.getEncoding();
    bool eightBit = aTensor.getElementType().getIntOrFloatBitWidth() == 8;
    bool wgmmaA = eightBit
                      ? isa<WgmmaA8LayoutAttr, WgmmaA8PairsLayoutAttr>(aLayout)
                      : isa<WgmmaALayoutAttr>(aLayout);
    if (wgmma ? !wgmmaA : !isa<MmaSyncALayoutAttr>(aLayout))
      return emitOpError() << "a register A operand must have the "
                           << (!wgmma     ? "#fagpu.mma_sync_a"
                               : eightBit ? "#fagpu.wgmma_a8"
                                          : "#fagpu.wgmma_a")
                           << " layout of the accumulator's family, got "
                           << aLayout;
    if (getLayout(aTensor).getWarps() != warps)
      return emitOpError() << "A and the accumulator are spread over "
                              "different warps";
    if (aTensor.getDimSize(0) != m || aTensor.getDimSize(1) != k)
      return emitOpError() << "A is " << aTensor.getDimSize(0) << "x"
                           << aTensor.getDimSize(1) << ", expected " << m << "x"
                           << k;
    if (aTensor.getElementType() != element)
      return emitOpError() << "A and B element types differ";
  }
  if (isa<Float8E4M3FNType>(element)) {
    // WGMMA takes 8-bit operands K-major only, 32 of K an instruction.
    if (!wgmma)
      return emitOpError() << "f8E4M3FN operands need a WGMMA accumulator";
    if (!getTransposeB() || getTransposeA())
      return emitOpError() << "f8E4M3FN operands must be K-major: B as [N, "
                              "K] (transpose_b), A not transposed";
    if (k % 32 != 0)
      return emitOpError() << "f8E4M3FN products take K in multiples of 32, "
                              "got "
                           << k;
  } else if (!is16BitFloat(element)) {
    return emitOpError() << "operands must be f16, bf16 or f8E4M3FN, got "
                         << element;
  }
  if (byColumns && (n / (warps / 4)) % 8 != 0)
    return emitOpError() << "each warpgroup's columns must be a multiple of 8";
  if (wgmma) {
    if (n > 256)
      return emitOpError() << "a WGMMA accumulator has at most 256 columns, "
                              "got "
                           << n;
    // Descriptors address 16-byte core matrices along K and whole swizzle
    // atoms along M / N (the lowering splits N where a warpgroup's columns
    // would start inside one), in any swizzle mode.
    if (b.getSwizzle() == 0)
      return emitOpError() << "WGMMA reads B through a swizzled tile, got "
                              "swizzle = 0";
    if (auto aTile = dyn_cast<SharedTileType>(getA().getType());
        aTile && aTile.getSwizzle() == 0)
      return emitOpError() << "WGMMA reads A through a swizzled tile, got "
                              "swizzle = 0";
  }
  return success();
}

static RowsLayoutAttr rowsOf(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor ? dyn_cast_or_null<RowsLayoutAttr>(tensor.getEncoding())
                : RowsLayoutAttr();
}

/// `rows` is the per-row tile of the 2-D tile `tile`, holding whole rows
/// or (`partial`) per-lane parts of them.
static LogicalResult verifyRowsOf(Operation *op, RankedTensorType rows,
                                  RankedTensorType tile, bool partial = false) {
  RowsLayoutAttr layout = rowsOf(rows);
  if (!layout || layout.getParent() != tile.getEncoding() ||
      layout.getPartial() != partial)
    return op->emitOpError()
           << "the per-row tile must have the layout #fagpu.rows<"
           << tile.getEncoding() << (partial ? ", partial = true" : "")
           << ">, got " << rows.getEncoding();
  if (rows.getDimSize(0) != tile.getDimSize(0))
    return op->emitOpError() << "the per-row tile has " << rows.getDimSize(0)
                             << " rows, the tile " << tile.getDimSize(0);
  if (rows.getElementType() != tile.getElementType())
    return op->emitOpError() << "element types differ";
  return success();
}

LogicalResult ReduceRowsOp::verify() {
  auto source = cast<RankedTensorType>(getSource().getType());
  auto result = cast<RankedTensorType>(getResult().getType());
  if (failed(verifyRegisterTile(*this, source, "source")) ||
      failed(verifyRegisterTile(*this, result, "result")))
    return failure();
  if (source.getRank() != 2)
    return emitOpError() << "reduces the rows of a 2-D tile";
  if (!source.getElementType().isF32())
    return emitOpError() << "reduces f32 tiles, got "
                         << source.getElementType();
  if (getTileLayout(source).warpsSplitColumns())
    return emitOpError() << "the rows are split over warps: a row reduction "
                            "would need shared memory";
  return verifyRowsOf(*this, result, source);
}

LogicalResult AccumulateRowsOp::verify() {
  auto source = cast<RankedTensorType>(getSource().getType());
  if (failed(verifyRegisterTile(*this, source, "source")))
    return failure();
  if (source.getRank() != 2)
    return emitOpError() << "sums the rows of a 2-D tile";
  if (!source.getElementType().isF32())
    return emitOpError() << "sums f32 tiles, got " << source.getElementType();
  if (failed(verifyRowsOf(*this, cast<RankedTensorType>(getScale().getType()),
                          source)))
    return failure();
  return verifyRowsOf(*this, cast<RankedTensorType>(getResult().getType()),
                      source, /*partial=*/true);
}

LogicalResult CompleteRowsOp::verify() {
  RowsLayoutAttr parts = rowsOf(getSource().getType());
  RowsLayoutAttr whole = rowsOf(getResult().getType());
  if (!parts || !parts.getPartial())
    return emitOpError()
           << "adds up per-lane parts (#fagpu.rows<..., partial "
              "= true>), got "
           << cast<RankedTensorType>(getSource().getType()).getEncoding();
  if (!whole || whole.getPartial() || whole.getParent() != parts.getParent())
    return emitOpError() << "the result must hold whole rows of the same "
                            "layout, #fagpu.rows<"
                         << parts.getParent() << ">";
  auto source = cast<RankedTensorType>(getSource().getType());
  auto result = cast<RankedTensorType>(getResult().getType());
  if (source.getShape() != result.getShape() ||
      source.getElementType() != result.getElementType())
    return emitOpError() << "shapes or element types differ";
  return success();
}

LogicalResult ExpandRowsOp::verify() {
  auto source = cast<RankedTensorType>(getSource().getType());
  auto result = cast<RankedTensorType>(getResult().getType());
  if (failed(verifyRegisterTile(*this, source, "source")) ||
      failed(verifyRegisterTile(*this, result, "result")))
    return failure();
  if (result.getRank() != 2)
    return emitOpError() << "expands into a 2-D tile";
  return verifyRowsOf(*this, source, result);
}

LogicalResult WarpAnyOp::verify() {
  auto predicate = cast<RankedTensorType>(getPredicate().getType());
  if (failed(verifyRegisterTile(*this, predicate, "predicate")))
    return failure();
  if (!predicate.getElementType().isInteger(1))
    return emitOpError() << "takes an i1 tile, got "
                         << predicate.getElementType();
  return success();
}

LogicalResult TileGridOp::verify() {
  auto kernel = (*this)->getParentOfType<gpu::GPUFuncOp>();
  if (!kernel || !kernel.isKernel())
    return emitOpError() << "states a kernel's tiles: it must be in a "
                            "gpu.func kernel";
  TileGridOp first;
  kernel.walk([&](TileGridOp grid) {
    first = grid;
    return WalkResult::interrupt();
  });
  if (first != *this)
    return emitOpError() << "must be the only fagpu.tile_grid of its kernel";
  return success();
}

LogicalResult TileCoordsOp::verify() {
  auto result = cast<RankedTensorType>(getResult().getType());
  if (failed(verifyRegisterTile(*this, result, "result")))
    return failure();
  if (!result.getElementType().isInteger(32) &&
      !result.getElementType().isIndex())
    return emitOpError() << "coordinates are i32 or index, got "
                         << result.getElementType();
  if (static_cast<int64_t>(getDim()) >= result.getRank())
    return emitOpError() << "dim " << getDim() << " of a rank-"
                         << result.getRank() << " tile";
  return success();
}

LogicalResult TransposeOp::verify() {
  auto source = cast<RankedTensorType>(getSource().getType());
  auto result = cast<RankedTensorType>(getResult().getType());
  if (failed(verifyRegisterTile(*this, source, "source")) ||
      failed(verifyRegisterTile(*this, result, "result")))
    return failure();
  if (source.getRank() != 2 || result.getRank() != 2 ||
      source.getDimSize(0) != result.getDimSize(1) ||
      source.getDimSize(1) != result.getDimSize(0))
    return emitOpError() << "the result's shape must be the source's "
                            "transposed, got "
                         << source << " -> " << result;
  if (source.getElementType() != result.getElementType())
    return emitOpError() << "changes the element type";
  if (getTileLayout(result) != getTileLayout(source).transposed())
    return emitOpError() << "the result's layout must be the transpose of "
                            "the source's (#fagpu.transposed<L> of L or "
                            "the reverse)";
  return success();
}

LogicalResult ConvertLayoutOp::verify() {
  auto source = cast<RankedTensorType>(getSource().getType());
  auto result = cast<RankedTensorType>(getResult().getType());
  if (failed(verifyRegisterTile(*this, source, "source")) ||
      failed(verifyRegisterTile(*this, result, "result")))
    return failure();
  if (source.getShape() != result.getShape())
    return emitOpError() << "changes the shape";
  TileLayout from = getTileLayout(source), to = getTileLayout(result);
  // 8-bit P for P·V: the accumulator's column pairs regrouped into the A
  // operand's column quadruples, within each quad of lanes.
  if (isa<WgmmaAccLayoutAttr>(source.getEncoding()) &&
      isa<WgmmaA8LayoutAttr>(result.getEncoding())) {
    if (source.getElementType().getIntOrFloatBitWidth() != 8)
      return emitOpError() << "converts to #fagpu.wgmma_a8 from 8-bit "
                              "elements only, got "
                           << source.getElementType();
    if (getLayout(source).getWarps() != getLayout(result).getWarps())
      return emitOpError() << "the layouts are spread over different warps";
    return success();
  }
  if (!llvm::equal(from.laneBases(), to.laneBases()) ||
      !llvm::equal(from.warpBasesRef(), to.warpBasesRef()) ||
      from.warpRepeat() != to.warpRepeat())
    return emitOpError() << "the layouts place elements in different "
                            "threads; only register permutations are "
                            "supported";
  return success();
}

/// Checks of a register tile moved to (`what` = "stores into") or from
/// ("loads from") rows of a global memref.
static LogicalResult verifyGlobalRows(Operation *op, RankedTensorType tile,
                                      MemRefType memory, StringRef what,
                                      StringRef rows) {
  if (failed(verifyRegisterTile(op, tile, "the tile")))
    return failure();
  if (memory.getRank() != tile.getRank())
    return op->emitOpError() << "a rank-" << tile.getRank() << " tile " << what
                             << " a memref of the same rank";
  if (memory.getElementType() != tile.getElementType())
    return op->emitOpError() << "element types differ";
  if (tile.getRank() == 2 && !memory.isDynamicDim(1) &&
      memory.getDimSize(1) != tile.getDimSize(1))
    return op->emitOpError() << rows << " rows have " << memory.getDimSize(1)
                             << " elements, the tile " << tile.getDimSize(1);
  if (!hasContiguousRows(memory))
    return op->emitOpError() << rows << " rows must be contiguous (unit "
                             << "inner stride)";
  return success();
}

LogicalResult StoreTileOp::verify() {
  auto value = cast<RankedTensorType>(getValue().getType());
  if (failed(verifyGlobalRows(*this, value, getDest().getType(), "stores into",
                              "destination")))
    return failure();
  if (getAccumulate() && !value.getElementType().isF32())
    return emitOpError() << "accumulates f32 tiles only, got "
                         << value.getElementType();
  return success();
}

LogicalResult LoadTileOp::verify() {
  return verifyGlobalRows(*this, getResult().getType(), getSource().getType(),
                          "loads from", "source");
}

LogicalResult StoreToSharedOp::verify() {
  auto value = cast<RankedTensorType>(getValue().getType());
  if (failed(verifyRegisterTile(*this, value, "value")))
    return failure();
  SharedTileType dest = getDest().getType();
  if (dest.getStages() != 1)
    return emitOpError() << "writes one stage of a ring (fagpu.stage)";
  // The shared tile's rows may be wider than the value's (padding).
  if (value.getRank() != 2 || value.getDimSize(0) != dest.getRows() ||
      value.getDimSize(1) > dest.getCols())
    return emitOpError() << "the tile is " << value << ", the shared tile "
                         << dest.getRows() << "x" << dest.getCols();
  if (value.getElementType() != dest.getElementType())
    return emitOpError() << "element types differ";
  if (!is16BitFloat(value.getElementType()) && !value.getElementType().isF32())
    return emitOpError() << "writes f16, bf16 or f32 tiles, got "
                         << value.getElementType();
  return success();
}

LogicalResult TransposeSharedOp::verify() {
  SharedTileType source = getSource().getType(), dest = getDest().getType();
  if (source.getStages() != 1 || dest.getStages() != 1)
    return emitOpError() << "reads and writes one stage of a ring "
                            "(fagpu.stage)";
  if (source.getElementType() != dest.getElementType())
    return emitOpError() << "element types differ";
  if (source.getElementType().getIntOrFloatBitWidth() != 8)
    return emitOpError() << "transposes 8-bit tiles, got "
                         << source.getElementType();
  if (source.getRows() != dest.getCols() || source.getCols() != dest.getRows())
    return emitOpError() << "a " << source.getRows() << "x" << source.getCols()
                         << " tile's transpose is " << source.getCols() << "x"
                         << source.getRows() << ", got " << dest.getRows()
                         << "x" << dest.getCols();
  if (source.getRows() % 4 != 0 || source.getCols() % 4 != 0)
    return emitOpError() << "transposes tiles of 4 x 4 blocks";
  if (getPairKeys() && source.getRows() % 32 != 0)
    return emitOpError() << "pair_keys permutes rows within groups of 32, "
                            "got "
                         << source.getRows() << " rows";
  return success();
}

LogicalResult ReduceToGlobalOp::verify() {
  SharedTileType tile = getTile().getType();
  if (tile.getStages() != 1)
    return emitOpError() << "reads one stage of a ring (fagpu.stage)";
  if (!tile.getElementType().isF32() || tile.getSwizzle() != 0)
    return emitOpError() << "adds an f32 tile of plain rows (swizzle = 0), "
                            "got "
                         << tile;
  MemRefType dest = getDest().getType();
  if (dest.getRank() != 2 || !dest.getElementType().isF32())
    return emitOpError() << "adds into a 2-D f32 memref, got " << dest;
  int64_t cols = dest.getDimSize(1);
  if (ShapedType::isDynamic(cols) || cols > tile.getCols())
    return emitOpError() << "the destination has " << cols
                         << " columns, the tile " << tile.getCols();
  int64_t bands = getBands();
  if (cols % bands != 0 || (cols / bands * 4) % 16 != 0)
    return emitOpError() << bands << " bands of " << cols
                         << " columns are not each a multiple of 16 bytes "
                            "(the bulk reduction's unit)";
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(dest.getStridesAndOffset(strides, offset)) || strides[1] != 1 ||
      (!ShapedType::isDynamic(strides[0]) && strides[0] % 4 != 0))
    return emitOpError() << "the destination's rows must be contiguous and "
                            "16-byte aligned, got "
                         << dest;
  return success();
}

int64_t
mlir::fagpu::placeSharedTiles(Operation *kernel,
                              function_ref<void(Operation *, int64_t)> place) {
  int64_t offset = 0;
  kernel->walk([&](AllocSharedOp alloc) {
    if (place)
      place(alloc, offset);
    offset +=
        llvm::alignTo(alloc.getType().getSizeInBytes(), kSharedTileAlignment);
  });
  // mbarriers after the tiles: 8-byte aligned, which every tile end is.
  kernel->walk([&](AllocBarriersOp alloc) {
    if (place)
      place(alloc, offset);
    offset += alloc.getType().getSizeInBytes();
  });
  return offset;
}

int64_t mlir::fagpu::deepestRingThatFits(int64_t wanted, int64_t fixedBytes,
                                         int64_t bytesPerStage,
                                         int64_t maxBytes) {
  if (wanted <= 2 || bytesPerStage <= 0)
    return wanted;
  // fixedBytes is a size (>= 0): only a very negative maxBytes overflows.
  std::optional<int64_t> room = llvm::checkedSub(maxBytes, fixedBytes);
  if (!room)
    return 2;
  return std::clamp<int64_t>(*room / bytesPerStage, 2, wanted);
}

LogicalResult AfterIssueOp::verify() {
  auto mma = getIssued().getDefiningOp<MmaOp>();
  if (!mma || !mma.getAsync())
    return emitOpError() << "orders after the issue of an `fagpu.mma async`";
  return success();
}

LogicalResult MmaWaitOp::verify() {
  auto mma = getPending().getDefiningOp<MmaOp>();
  if (!mma || !mma.getAsync())
    return emitOpError() << "waits for the result of an `fagpu.mma async`";
  if (getInFlight() > 0) {
    // Later products left running must have been issued after `pending`'s
    // and before the wait, in this block.
    if (mma->getBlock() != (*this)->getBlock())
      return emitOpError() << "in_flight needs the product in this block";
    int64_t later = 0;
    for (Operation *op = mma->getNextNode(); op && op != *this;
         op = op->getNextNode())
      if (auto other = dyn_cast<MmaOp>(op); other && other.getAsync())
        ++later;
    if (later < static_cast<int64_t>(getInFlight()))
      return emitOpError() << "leaves " << getInFlight()
                           << " later products in flight, but " << later
                           << " were issued after it";
  }
  return success();
}
