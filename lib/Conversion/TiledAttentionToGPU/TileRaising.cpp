//===- TileRaising.cpp - Tiled linalg ops raised to GPU tile ops ----------===//
//
// The TileKernelBuilder's linalg.generic cases: contractions become
// fagpu.mma (with transposed scores, their transposes), row reductions
// fagpu.reduce_rows, elementwise bodies the same ops on register tiles in
// their operands' layout.
//
//===----------------------------------------------------------------------===//

#include "TileKernelBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;
using namespace mlir::fa;

LogicalResult TileKernelBuilder::raiseGeneric(linalg::GenericOp generic) {
  auto iterators = generic.getIteratorTypesArray();
  auto isParallel = [](utils::IteratorType t) {
    return t == utils::IteratorType::parallel;
  };
  if (llvm::all_of(iterators, isParallel))
    return raiseElementwise(generic);
  if (iterators.size() == 3 && isParallel(iterators[0]) &&
      isParallel(iterators[1]))
    return raiseContraction(generic);
  if (iterators.size() == 2 && isParallel(iterators[0]))
    return raiseRowReduction(generic);
  return generic.emitError() << "the GPU tile level takes elementwise ops, "
                                "row reductions and contractions";
}

LogicalResult TileKernelBuilder::raiseContraction(linalg::GenericOp generic) {
  Location loc = generic.getLoc();
  MLIRContext *ctx = b.getContext();
  auto dim = [&](unsigned d) { return getAffineDimExpr(d, ctx); };
  auto map2 = [&](unsigned x, unsigned y) {
    return AffineMap::get(3, 0, {dim(x), dim(y)}, ctx);
  };
  SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
  bool transposeA = maps[0] == map2(2, 0);
  if ((!transposeA && maps[0] != map2(0, 2)) || maps[2] != map2(0, 1))
    return generic.emitError() << "the GPU tile level takes C += A B, "
                                  "C += A Bᵀ and C += Aᵀ B contractions";
  bool transposeB = maps[1] == map2(1, 2);
  if (!transposeB && maps[1] != map2(2, 1))
    return generic.emitError() << "unsupported B operand map";
  Value b2 = mapped(generic.getInputs()[1]);
  if (!b2 || !isa<fagpu::SharedTileType>(b2.getType()))
    return generic.emitError() << "the B operand must be a tile of the "
                                  "kernel's inputs (shared memory)";
  Value a = mapped(generic.getInputs()[0]);
  if (!a)
    return generic.emitError() << "no tile for the A operand";
  if (transposeScores && isa<fagpu::SharedTileType>(a.getType()) &&
      transposeB && !transposeA) {
    FailureOr<Value> scores =
        transposedProduct(generic, a, b2, transposeA, transposeB);
    if (failed(scores))
      return failure();
    map.map(generic.getResult(0), *scores);
    return success();
  }
  Type element = cast<fagpu::SharedTileType>(b2.getType()).getElementType();
  // WGMMA reads 8-bit operands K-major only: a [K, N] B (P·V's V) is
  // transposed into a shared tile of its own first.
  if (!transposeB && element.getIntOrFloatBitWidth() == 8) {
    auto bType = cast<fagpu::SharedTileType>(b2.getType());
    // Its rows are the keys: a block of 192 keys takes 64-byte swizzle
    // atoms, one of 224 32-byte ones (WGMMA reads K-major tiles in any
    // swizzle mode).
    auto transposedType =
        operandTileType({bType.getCols(), bType.getRows()}, element);
    Value transposed = sharedTile({b2, transposedType}, loc);
    fagpu::TransposeSharedOp::create(b, loc, b2, transposed, pairFP8Keys);
    b2 = transposed;
    transposeB = true;
  }
  if (auto aTile = dyn_cast<RankedTensorType>(a.getType());
      aTile && isa<fagpu::TransposedLayoutAttr>(aTile.getEncoding())) {
    // Pᵀ, dSᵀ: the transposed accumulator's registers are the accumulator
    // of the transpose, a register A operand as P is for P·V. dS for
    // dQ = dS K: dSᵀ stored as an accumulator, read transposed.
    auto transposedType =
        RankedTensorType::get({aTile.getDimSize(1), aTile.getDimSize(0)},
                              aTile.getElementType(), accumulatorLayout());
    Value t = fagpu::TransposeOp::create(b, loc, transposedType, a);
    if (aTile.getElementType() != element)
      t = arith::TruncFOp::create(b, loc, transposedType.clone(element), t);
    if (transposeA) {
      a = fagpu::ConvertLayoutOp::create(
          b, loc,
          RankedTensorType::get(transposedType.getShape(), element,
                                aLayoutOf(element)),
          t);
    } else {
      Value source = generic.getInputs()[0];
      Value shared = storedTiles.lookup(source);
      if (!shared) {
        auto sharedType = operandTileType(transposedType.getShape(), element);
        shared = sharedTile({Value(), sharedType}, loc);
        fagpu::StoreToSharedOp::create(b, loc, t, shared);
        storedTiles[source] = shared;
      }
      a = shared;
    }
    FailureOr<Value> acc = tile(generic.getOutputs()[0]);
    if (failed(acc))
      return failure();
    Value result = fagpu::MmaOp::create(b, loc, acc->getType(), a, b2, *acc,
                                        transposeB, /*async=*/false,
                                        /*transpose_a=*/!transposeA);
    map.map(generic.getResult(0), result);
    return success();
  }
  if (auto aTile = dyn_cast<RankedTensorType>(a.getType())) {
    // A register operand (P, dS) is rounded to the operands' type, as
    // FlashAttention does, and read in the register-A layout, or (Pᵀ, dSᵀ)
    // through shared memory, where WGMMA reads it transposed.
    auto round = [&]() -> Value {
      if (aTile.getElementType() == element)
        return a;
      return arith::TruncFOp::create(b, loc,
                                     tileType(aTile.getShape(), element), a);
    };
    // Warpgroups that split the columns all read the whole A: it goes
    // through shared memory too.
    if (transposeA || isa<fagpu::WgmmaAccColsLayoutAttr>(aTile.getEncoding())) {
      auto sharedType = operandTileType(aTile.getShape(), element);
      Value source = generic.getInputs()[0];
      Value shared = storedTiles.lookup(source);
      if (!shared) {
        // Two buffers take turns (P, then dS): a product may still read
        // one (dV += Pᵀ dO, when products run asynchronously) while the
        // next operand is written to the other.
        int64_t slot = operandStores++ % 2;
        shared = sharedTile({Value(), sharedType}, loc, slot);
        fagpu::StoreToSharedOp::create(b, loc, round(), shared);
        // What the tile held before is gone.
        for (auto &entry : storedTiles)
          if (entry.second == shared)
            entry.second = Value();
        storedTiles[source] = shared;
      }
      a = shared;
    } else {
      a = fagpu::ConvertLayoutOp::create(
          b, loc,
          RankedTensorType::get(aTile.getShape(), element, aLayoutOf(element)),
          round());
    }
  } else if (transposeA) {
    return generic.emitError() << "the GPU tile level takes Aᵀ from registers";
  }
  FailureOr<Value> acc = tile(generic.getOutputs()[0]);
  if (failed(acc))
    return failure();
  Value result = fagpu::MmaOp::create(b, loc, acc->getType(), a, b2, *acc,
                                      transposeB, /*async=*/false, transposeA);
  map.map(generic.getResult(0), result);
  return success();
}

FailureOr<Value> TileKernelBuilder::transposedProduct(linalg::GenericOp generic,
                                                      Value a, Value b2,
                                                      bool transposeA,
                                                      bool transposeB) {
  Location loc = generic.getLoc();
  Value out = generic.getOutputs()[0];
  auto outType = cast<RankedTensorType>(out.getType());
  auto splat = splats.find(out);
  if (splat == splats.end())
    return generic.emitError()
           << "transposed scores start from a constant accumulator";
  // (A Bᵀ)ᵀ = B Aᵀ: B's tile is the A operand ([N x K], K-major), A's the
  // B operand read as [M x K].
  auto productType =
      RankedTensorType::get({outType.getDimSize(1), outType.getDimSize(0)},
                            outType.getElementType(), accumulatorLayout());
  if (std::string problem =
          cast<fagpu::DistributedLayoutAttr>(productType.getEncoding())
              .checkShape(productType.getShape());
      !problem.empty())
    return generic.emitError() << "transposed scores: " << problem;
  Value zero =
      tensor::SplatOp::create(b, loc, productType, splat->second).getResult();
  Value product = fagpu::MmaOp::create(b, loc, productType, b2, a, zero,
                                       /*transpose_b=*/!transposeA,
                                       /*async=*/false,
                                       /*transpose_a=*/!transposeB);
  return fagpu::TransposeOp::create(b, loc,
                                    tileType(outType.getShape(),
                                             outType.getElementType(),
                                             transposedAccumulator()),
                                    product)
      .getResult();
}

LogicalResult TileKernelBuilder::raiseRowReduction(linalg::GenericOp generic) {
  Operation *combiner =
      generic.getBody()->getTerminator()->getOperand(0).getDefiningOp();
  fagpu::ReductionKind kind;
  if (isa_and_nonnull<arith::MaximumFOp>(combiner))
    kind = fagpu::ReductionKind::max;
  else if (isa_and_nonnull<arith::AddFOp>(combiner))
    kind = fagpu::ReductionKind::sum;
  else
    return generic.emitError() << "row reductions are max or sum";
  FailureOr<Value> source = tile(generic.getInputs()[0]);
  FailureOr<Value> init = tile(generic.getOutputs()[0]);
  if (failed(source) || failed(init))
    return failure();
  Location loc = generic.getLoc();
  Value reduced = fagpu::ReduceRowsOp::create(
      b, loc, init->getType(),
      fagpu::ReductionKindAttr::get(b.getContext(), kind), *source);
  Value result =
      kind == fagpu::ReductionKind::max
          ? arith::MaximumFOp::create(b, loc, *init, reduced).getResult()
          : arith::AddFOp::create(b, loc, *init, reduced).getResult();
  map.map(generic.getResult(0), result);
  return success();
}

LogicalResult TileKernelBuilder::raiseElementwise(linalg::GenericOp generic) {
  Location loc = generic.getLoc();
  ArrayRef<int64_t> space =
      cast<RankedTensorType>(generic.getOutputs()[0].getType()).getShape();
  Block *body = generic.getBody();
  // The iteration space's layout: its tiles' (transposed scores keep
  // theirs through the softmax gradient), else the shape's.
  // (A 2-D layout: per-row values of a 1-D space are in its rows.)
  auto parentOf = [](Attribute encoding) {
    if (auto rows = dyn_cast<fagpu::RowsLayoutAttr>(encoding))
      return rows.getParent();
    return cast<fagpu::DistributedLayoutAttr>(encoding);
  };
  fagpu::DistributedLayoutAttr layout = parentOf(layoutFor(space));
  for (Value operand : generic->getOperands())
    if (Value v = mapped(operand))
      if (auto type = dyn_cast<RankedTensorType>(v.getType());
          type && type.getShape() == space)
        layout = parentOf(type.getEncoding());
  auto spaceType = [&](Type element) {
    return tileType(space, element, layout);
  };
  IRMapping inner;
  for (OpOperand &operand : generic->getOpOperands()) {
    BlockArgument arg = body->getArgument(operand.getOperandNumber());
    if (arg.use_empty())
      continue;
    FailureOr<Value> t = tileIn(operand.get(), layout);
    if (failed(t))
      return failure();
    Value v = *t;
    auto type = cast<RankedTensorType>(v.getType());
    if (type.getRank() < static_cast<int64_t>(space.size()))
      v = fagpu::ExpandRowsOp::create(b, loc, spaceType(type.getElementType()),
                                      v);
    inner.map(arg, v);
  }
  DenseMap<Value, Value> splatted;
  for (Operation &op : body->without_terminator()) {
    if (auto index = dyn_cast<linalg::IndexOp>(op)) {
      inner.map(index.getResult(),
                fagpu::TileCoordsOp::create(b, loc, spaceType(b.getIndexType()),
                                            index.getDim()));
      continue;
    }
    if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
      auto type = spaceType(constant.getType());
      inner.map(
          constant.getResult(),
          arith::ConstantOp::create(
              b, loc, type, SplatElementsAttr::get(type, constant.getValue())));
      continue;
    }
    // Scalars from outside the body hold for every element.
    for (Value operand : op.getOperands()) {
      if (inner.contains(operand))
        continue;
      Value &s = splatted[operand];
      if (!s)
        s = tensor::SplatOp::create(b, loc, spaceType(operand.getType()),
                                    map.lookupOrDefault(operand));
      inner.map(operand, s);
    }
    Operation *clone = b.clone(op, inner);
    for (OpResult result : clone->getResults())
      result.setType(spaceType(result.getType()));
  }
  for (auto [result, yielded] :
       llvm::zip(generic.getResults(), body->getTerminator()->getOperands()))
    map.map(result, inner.lookup(yielded));
  return success();
}
