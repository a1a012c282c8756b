//===- TileKernelBuilder.cpp - Tiled attention ops onto GPU tiles --------===//

#include "TileKernelBuilder.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace mlir::fa;

TileKernelBuilder::TileKernelBuilder(OpBuilder &b, int64_t warps)
    : b(b), warps(warps) {}

fagpu::DistributedLayoutAttr TileKernelBuilder::aLayoutOf(Type element) {
  if (mmaSync)
    return fagpu::MmaSyncALayoutAttr::get(b.getContext(), warps);
  if (element.getIntOrFloatBitWidth() == 8 && pairFP8Keys)
    return fagpu::WgmmaA8PairsLayoutAttr::get(b.getContext(), warps);
  if (element.getIntOrFloatBitWidth() == 8)
    return fagpu::WgmmaA8LayoutAttr::get(b.getContext(), warps);
  return fagpu::WgmmaALayoutAttr::get(b.getContext(), warps);
}

fagpu::DistributedLayoutAttr
TileKernelBuilder::layoutFor(ArrayRef<int64_t> shape) {
  MLIRContext *ctx = b.getContext();
  int64_t rows = shape[0];
  auto tile = [&]() -> fagpu::DistributedLayoutAttr {
    if (!mmaSync && rows % (16 * warps) != 0 && rows == 64 && warps > 4)
      return cast<fagpu::DistributedLayoutAttr>(
          fagpu::WgmmaAccColsLayoutAttr::get(ctx, warps));
    // Fewer 16-row blocks than warps (the backward's dQ, 64 query rows
    // beside 128 keys): groups of warps split the columns.
    if (mmaSync && shape.size() == 2 && rows < 16 * warps && rows % 16 == 0)
      return cast<fagpu::DistributedLayoutAttr>(
          fagpu::MmaSyncAccColsLayoutAttr::get(ctx, warps, 16 * warps / rows));
    return accumulatorLayout();
  }();
  if (shape.size() == 2)
    return tile;
  // With transposed scores the per-row values (LSE, delta) are per column
  // of the accumulator.
  if (transposeScores)
    tile = transposedAccumulator();
  return cast<fagpu::DistributedLayoutAttr>(
      fagpu::RowsLayoutAttr::get(ctx, tile));
}

fagpu::DistributedLayoutAttr TileKernelBuilder::accumulatorLayout() {
  MLIRContext *ctx = b.getContext();
  if (mmaSync)
    return cast<fagpu::DistributedLayoutAttr>(
        fagpu::MmaSyncAccLayoutAttr::get(ctx, warps));
  return cast<fagpu::DistributedLayoutAttr>(
      fagpu::WgmmaAccLayoutAttr::get(ctx, warps));
}

fagpu::DistributedLayoutAttr TileKernelBuilder::transposedAccumulator() {
  return cast<fagpu::DistributedLayoutAttr>(
      fagpu::TransposedLayoutAttr::get(b.getContext(), accumulatorLayout()));
}

RankedTensorType
TileKernelBuilder::tileType(ArrayRef<int64_t> shape, Type element,
                            fagpu::DistributedLayoutAttr tile) {
  if (shape.size() == 2)
    return RankedTensorType::get(shape, element, tile);
  return RankedTensorType::get(
      shape, element, fagpu::RowsLayoutAttr::get(b.getContext(), tile));
}

FailureOr<Value>
TileKernelBuilder::tileIn(Value tensor, fagpu::DistributedLayoutAttr layout) {
  if (Value v = mapped(tensor))
    return v;
  auto type = dyn_cast<RankedTensorType>(tensor.getType());
  auto splat = splats.find(tensor);
  if (!type || splat == splats.end())
    return tile(tensor);
  return tensor::SplatOp::create(
             b, tensor.getLoc(),
             tileType(type.getShape(), type.getElementType(), layout),
             splat->second)
      .getResult();
}

FailureOr<Value> TileKernelBuilder::tile(Value tensor) {
  if (Value v = mapped(tensor))
    return v;
  auto type = dyn_cast<RankedTensorType>(tensor.getType());
  auto splat = splats.find(tensor);
  if (!type || splat == splats.end())
    return emitError(tensor.getLoc())
           << "the GPU tile level has no register tile for this value";
  Value value = tensor::SplatOp::create(
      b, tensor.getLoc(), tileType(type.getShape(), type.getElementType()),
      splat->second);
  map.map(tensor, value);
  return value;
}

RowSource TileKernelBuilder::rowsOf(Value memref,
                                    ArrayRef<OpFoldResult> offsets,
                                    Location loc) {
  auto type = cast<MemRefType>(memref.getType());
  int64_t rank = type.getRank();
  SmallVector<OpFoldResult> viewOffsets(offsets.take_front(2));
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1), b.getIndexAttr(1)};
  SmallVector<int64_t> viewShape;
  for (int64_t d = 2; d < rank; ++d) {
    viewOffsets.push_back(b.getIndexAttr(0));
    sizes.push_back(memref::getMixedSize(b, loc, memref, d));
    viewShape.push_back(type.getDimSize(d));
  }
  SmallVector<OpFoldResult> strides(rank, b.getIndexAttr(1));
  // Drop the (batch, head) dims, whatever the sizes of the others: a 1-row
  // sequence must not lose its row dim instead.
  auto [allStrides, offset] = type.getStridesAndOffset();
  auto viewType = MemRefType::get(
      viewShape, type.getElementType(),
      StridedLayoutAttr::get(b.getContext(), ShapedType::kDynamic,
                             ArrayRef<int64_t>(allStrides).drop_front(2)));
  Value view = memref::SubViewOp::create(b, loc, viewType, memref, viewOffsets,
                                         sizes, strides);
  Value row = getValueOrCreateConstantIndexOp(b, loc, offsets[2]);
  Value limit = getValueOrCreateConstantIndexOp(
      b, loc, memref::getMixedSize(b, loc, memref, 2));
  return {memref, view, row, limit};
}

static SmallVector<OpFoldResult> mapFolds(IRMapping &map,
                                          ArrayRef<OpFoldResult> folds) {
  SmallVector<OpFoldResult> result;
  for (OpFoldResult f : folds) {
    if (auto v = dyn_cast<Value>(f))
      result.push_back(map.lookupOrDefault(v));
    else
      result.push_back(f);
  }
  return result;
}

LogicalResult TileKernelBuilder::convertOp(Operation &op) {
  Location loc = op.getLoc();
  auto isTensor = [](Type t) { return isa<TensorType>(t); };
  bool tensors = llvm::any_of(op.getOperandTypes(), isTensor) ||
                 llvm::any_of(op.getResultTypes(), isTensor);

  if (!tensors && op.getNumRegions() == 0 &&
      isa<arith::ArithDialect, math::MathDialect, affine::AffineDialect>(
          op.getDialect())) {
    b.clone(op, map);
    return success();
  }
  if (isa<tensor::EmptyOp>(op))
    return success(); // only ever a destination
  if (auto dim = dyn_cast<tensor::DimOp>(op)) {
    // Runtime shapes: a size of an input is the size of its kernel argument.
    Value memref = inputArguments.lookup(dim.getSource());
    if (!memref)
      return dim.emitError() << "the GPU tile level reads sizes of the "
                                "attention's inputs only";
    map.map(dim.getResult(),
            memref::DimOp::create(b, loc, memref,
                                  map.lookupOrDefault(dim.getIndex())));
    return success();
  }
  if (auto extract = dyn_cast<tensor::ExtractOp>(op)) {
    // Packed sequences: an offset read from cu_seqlens.
    Value memref = inputArguments.lookup(extract.getTensor());
    if (!memref)
      return extract.emitError() << "the GPU tile level reads elements of "
                                    "the attention's inputs only";
    SmallVector<Value> indices;
    for (Value index : extract.getIndices())
      indices.push_back(map.lookupOrDefault(index));
    map.map(extract.getResult(),
            memref::LoadOp::create(b, loc, memref, indices));
    return success();
  }
  if (auto fill = dyn_cast<linalg::FillOp>(op)) {
    splats[fill.getResult(0)] = map.lookupOrDefault(fill.getInputs()[0]);
    return success();
  }
  if (auto slice = dyn_cast<tensor::ExtractSliceOp>(op))
    return convertSlice(slice);
  if (auto insert = dyn_cast<tensor::InsertSliceOp>(op))
    return convertInsert(insert);
  if (auto pad = dyn_cast<tensor::PadOp>(op))
    return convertPad(pad);
  if (auto loop = dyn_cast<scf::ForOp>(op))
    return convertLoop(loop);
  if (auto generic = dyn_cast<linalg::GenericOp>(op))
    return raiseGeneric(generic);
  return op.emitError() << "the GPU tile level cannot lower this op";
}

/// `base` + `delta` per dim, where `delta` covers the trailing dims (a
/// rank-reducing slice keeps the last ones).
static SmallVector<OpFoldResult> addOffsets(OpBuilder &b, Location loc,
                                            ArrayRef<OpFoldResult> base,
                                            ArrayRef<OpFoldResult> delta) {
  SmallVector<OpFoldResult> sum(base);
  size_t first = base.size() - delta.size();
  for (auto [i, d] : llvm::enumerate(delta)) {
    OpFoldResult &s = sum[first + i];
    if (isConstantIntValue(d, 0))
      continue;
    if (isConstantIntValue(s, 0)) {
      s = d;
      continue;
    }
    Value lhs = getValueOrCreateConstantIndexOp(b, loc, s);
    Value rhs = getValueOrCreateConstantIndexOp(b, loc, d);
    s = arith::AddIOp::create(b, loc, lhs, rhs).getResult();
  }
  return sum;
}

LogicalResult TileKernelBuilder::convertSlice(tensor::ExtractSliceOp slice) {
  Location loc = slice.getLoc();
  Value source = slice.getSource();
  if (splats.count(source)) {
    splats[slice.getResult()] = splats[source];
    return success();
  }
  auto output = outputs.find(source);
  if (output != outputs.end()) {
    OutputView view = output->second;
    view.offsets = addOffsets(b, loc, view.offsets,
                              mapFolds(map, slice.getMixedOffsets()));
    outputs[slice.getResult()] = view;
    return success();
  }
  Value memref = sliceArguments.lookup(slice);
  if (!memref)
    memref = arguments.lookup(source);
  if (memref) {
    slices[slice.getResult()] =
        rowsOf(memref, mapFolds(map, slice.getMixedOffsets()), loc);
    return success();
  }
  // The valid rows of a result tile: the store is bounded by the rows.
  if (Value v = mapped(source)) {
    map.map(slice.getResult(), v);
    return success();
  }
  return slice.emitError() << "the GPU tile level cannot slice this tensor";
}

LogicalResult TileKernelBuilder::convertInsert(tensor::InsertSliceOp insert) {
  Location loc = insert.getLoc();
  auto output = outputs.find(insert.getDest());
  if (output == outputs.end())
    return insert.emitError() << "the GPU tile level inserts tiles only "
                                 "into the kernel's outputs";
  OutputView view = output->second;
  FailureOr<Value> value = tile(insert.getSource());
  if (failed(value))
    return failure();
  SmallVector<OpFoldResult> offsets =
      addOffsets(b, loc, view.offsets, mapFolds(map, insert.getMixedOffsets()));
  RowSource dest = rowsOf(view.memref, offsets, loc);
  // Rows [row, row + the slice's rows): a tile's padding is not stored.
  SmallVector<OpFoldResult> sizes = mapFolds(map, insert.getMixedSizes());
  int64_t rank = cast<MemRefType>(view.memref.getType()).getRank();
  size_t rowDim = 2 - (rank - sizes.size());
  Value limit = arith::AddIOp::create(
      b, loc, dest.row, getValueOrCreateConstantIndexOp(b, loc, sizes[rowDim]));
  // A deterministic sum waits for the blocks before it in turn order.
  SmallVector<Value> counter;
  if (view.accumulate && turnCounters) {
    Value rows = arith::ConstantIndexOp::create(b, loc, turnRows);
    Value batch = getValueOrCreateConstantIndexOp(b, loc, offsets[0]);
    Value head = getValueOrCreateConstantIndexOp(b, loc, offsets[1]);
    Value rowBlock = arith::DivUIOp::create(b, loc, dest.row, rows);
    counter = {batch, head, rowBlock};
    Value turn = turnOf(dest.row, limit);
    fagpu::WaitTurnOp::create(b, loc, turnCounters, counter, turn);
  }
  if (view.accumulate && bulkAccumulate)
    reduceThroughShared(*value, dest.view, dest.row, limit, loc);
  else
    fagpu::StoreTileOp::create(b, loc, *value, dest.view, dest.row, limit,
                               view.accumulate);
  if (!counter.empty()) {
    // A bulk reduction's sums land after its issue: the next block's turn
    // comes once they have.
    if (view.accumulate && bulkAccumulate)
      fagpu::WaitGlobalSumsOp::create(b, loc);
    fagpu::PassTurnOp::create(b, loc, turnCounters, counter);
  }
  outputs[insert.getResult()] = view;
  return success();
}

void TileKernelBuilder::reduceThroughShared(Value value, Value dest, Value row,
                                            Value limit, Location loc) {
  auto type = cast<RankedTensorType>(value.getType());
  // Unpadded: the tile's rows are the destination's, back to back, so one
  // bulk reduction adds them all (a reduction per row and warpgroup band
  // of a padded, bank-conflict-free tile measured 20-25 % slower on the
  // H200: the issue of 64 to 128 reductions a tile).
  auto stagingType = fagpu::SharedTileType::get(
      b.getContext(), type.getShape(), type.getElementType(), /*swizzle=*/0);
  Value staging = sharedTile({Value(), stagingType}, loc);
  // The previous tile's reductions must have read it first.
  fagpu::WaitSharedReadsOp::create(b, loc);
  fagpu::StoreToSharedOp::create(b, loc, value, staging);
  fagpu::ReduceToGlobalOp::create(b, loc, staging, dest, row, limit,
                                  /*bands=*/1);
  bulkReductions = true;
}

Value TileKernelBuilder::sharedTile(std::pair<Value, Type> key, Location loc,
                                    int64_t slot) {
  Value &shared = sharedTiles[{key.first, key.second, slot}];
  if (!shared) {
    OpBuilder::InsertionGuard guard(b);
    if (lastAlloc)
      b.setInsertionPointAfter(lastAlloc);
    else
      b.setInsertionPointToStart(entry);
    shared = fagpu::AllocSharedOp::create(
        b, loc, cast<fagpu::SharedTileType>(key.second));
    lastAlloc = shared.getDefiningOp();
  }
  return shared;
}

LogicalResult TileKernelBuilder::convertPad(tensor::PadOp pad) {
  Location loc = pad.getLoc();
  Value source = pad.getSource();
  auto type = pad.getResultType();
  if (splats.count(source)) {
    splats[pad.getResult()] = splats[source];
    return success();
  }
  if (auto output = outputs.find(source); output != outputs.end()) {
    if (!output->second.accumulate)
      return pad.emitError() << "the GPU tile level reads back only outputs "
                                "that it accumulates into";
    // A tile that is summed into: this block adds its part, from zero.
    Value zero =
        arith::ConstantOp::create(b, loc, b.getZeroAttr(type.getElementType()));
    map.map(
        pad.getResult(),
        tensor::SplatOp::create(
            b, loc, tileType(type.getShape(), type.getElementType()), zero));
    return success();
  }
  auto it = slices.find(source);
  if (it == slices.end())
    return pad.emitError() << "the GPU tile level pads only tiles cut from "
                              "the kernel's inputs";
  const RowSource &rows = it->second;
  // Rows past the sequence end read as zeros: the pad.
  if (type.getRank() == 1) {
    // Per-row statistics (LSE, delta) go to the registers of their rows,
    // rows past the limit the pad's value (the backward's LSE: +inf).
    // The slice's rows end the loads (a packed sequence's last Q block
    // must not read the next sequence's LSE), not the tensor's.
    Value limit = rows.limit;
    if (auto slice = source.getDefiningOp<tensor::ExtractSliceOp>()) {
      OpFoldResult sliceRows = mapFolds(map, slice.getMixedSizes()).back();
      limit = arith::AddIOp::create(
          b, loc, rows.row, getValueOrCreateConstantIndexOp(b, loc, sliceRows));
    }
    FloatAttr padding, value;
    if (Value fill = pad.getConstantPaddingValue();
        fill && matchPattern(fill, m_Constant(&value)) &&
        !value.getValue().isZero())
      padding = b.getF64FloatAttr(value.getValueAsDouble());
    map.map(pad.getResult(),
            fagpu::LoadTileOp::create(
                b, loc, tileType(type.getShape(), type.getElementType()),
                rows.view, rows.row, limit, padding));
    return success();
  }
  auto tileType = operandTileType(type.getShape(), type.getElementType());
  // One buffer per input and tile shape for the whole kernel: the masked
  // and unmasked KV loops take turns with it.
  Value shared = sharedTile({rows.argument, tileType}, loc);
  fagpu::CopyToSharedOp::create(b, loc, rows.view, rows.row, rows.limit,
                                shared);
  map.map(pad.getResult(), shared);
  return success();
}

LogicalResult TileKernelBuilder::convertLoop(scf::ForOp loop) {
  Location loc = loop.getLoc();
  // Values carrying output views are not loop values on the GPU: the
  // stores into them happen in place.
  SmallVector<Value> inits;
  SmallVector<int64_t> carried; // old iter arg index -> new one, or -1
  for (Value init : loop.getInitArgs()) {
    if (outputs.count(init)) {
      carried.push_back(-1);
      continue;
    }
    FailureOr<Value> v = tile(init);
    if (failed(v))
      return failure();
    carried.push_back(inits.size());
    inits.push_back(*v);
  }
  auto newLoop =
      scf::ForOp::create(b, loc, map.lookupOrDefault(loop.getLowerBound()),
                         map.lookupOrDefault(loop.getUpperBound()),
                         map.lookupOrDefault(loop.getStep()), inits);
  map.map(loop.getInductionVar(), newLoop.getInductionVar());
  for (auto [i, from] : llvm::enumerate(loop.getRegionIterArgs())) {
    if (carried[i] < 0)
      outputs[from] = outputs[loop.getInitArgs()[i]];
    else
      map.map(from, newLoop.getRegionIterArgs()[carried[i]]);
  }
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(newLoop.getBody());
    if (failed(convertBlock(*loop.getBody())))
      return failure();
    SmallVector<Value> yielded;
    for (auto [i, v] :
         llvm::enumerate(loop.getBody()->getTerminator()->getOperands())) {
      if (carried[i] < 0)
        continue;
      FailureOr<Value> t = tile(v);
      if (failed(t))
        return failure();
      yielded.push_back(*t);
    }
    scf::YieldOp::create(b, loc, yielded);
  }
  for (auto [i, result] : llvm::enumerate(loop.getResults())) {
    if (carried[i] < 0)
      outputs[result] = outputs[loop.getInitArgs()[i]];
    else
      map.map(result, newLoop.getResult(carried[i]));
  }
  return success();
}

void TileKernelBuilder::storeRows(tensor::ParallelInsertSliceOp insert) {
  Location loc = insert.getLoc();
  Value memref = arguments.lookup(insert.getDest());
  RowSource dest = rowsOf(memref, mapFolds(map, insert.getMixedOffsets()), loc);
  // The insert's rows, not the tensor's: a packed sequence's last block
  // must not store into the next sequence's rows.
  SmallVector<OpFoldResult> sizes = mapFolds(map, insert.getMixedSizes());
  Value limit = arith::AddIOp::create(
      b, loc, dest.row, getValueOrCreateConstantIndexOp(b, loc, sizes[2]));
  fagpu::StoreTileOp::create(b, loc, map.lookup(insert.getSource()), dest.view,
                             dest.row, limit);
}
