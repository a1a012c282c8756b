//===- TileCoordsToNVVM.cpp - tile coordinates and their compares ---------===//
//
// A register's coordinate in its tile is the thread's part (register 0's
// coordinate, from the lane and warp) plus the register's static offset
// (the layout's): fagpu.tile_coords lowers to exactly that sum. A mask
// compares such coordinates, or their differences (j - i, the diagonal),
// against bounds; compared as they are, each element would need its own
// coordinate in a register, live across the KV loop (64 of them for a
// 128 x 128 score tile). Moving the thread's part to the other side instead,
//
//   base + offset[r] < bound   <=>   offset[r] < bound - base,
//
// leaves one compare of an immediate a register, against one bound per
// thread (per row when the bound is per row), as FlashAttention 3 writes
// its masks. Index tiles are 32-bit (kIndexRegisterBits) and the masks'
// bounds are clamped to the tile (fa-decompose-attention), so the
// subtraction does not wrap.
//
// When the bound and every scalar in the coordinates are constants (a
// sequence end that falls inside a block at a static length: 8192 keys in
// 176-key blocks leave 96 in the last), most registers' compares have the
// same outcome on every thread: those become constants, decided here over
// the layout's threads, and only the rest stay compares. Left to LLVM, the
// per-thread bound is loop-invariant and gets hoisted out of a persistent
// kernel's tile loop, where it stays live (and spills) through the KV loop.
//
//===----------------------------------------------------------------------===//

#include "TileLowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace mlir::fagpu;

namespace {

/// Whether `v` (an index tile of the unconverted IR) is tile_coords, or a
/// sum or difference of such tiles and splats of scalars.
bool isCoordinateForm(Value v, int depth = 0) {
  if (depth > 8)
    return false;
  Operation *def = v.getDefiningOp();
  if (isa_and_nonnull<TileCoordsOp>(def))
    return true;
  if (!isa_and_nonnull<arith::AddIOp, arith::SubIOp>(def))
    return false;
  int coordinates = 0;
  for (Value operand : def->getOperands()) {
    if (isCoordinateForm(operand, depth + 1))
      ++coordinates;
    else if (!operand.getDefiningOp<tensor::SplatOp>())
      return false;
  }
  return coordinates > 0;
}

/// The registers' offsets of a value isCoordinateForm accepts (its static
/// part: the layout's register offsets, summed as the value sums them).
SmallVector<int64_t> registerOffsets(Value v, int64_t registers) {
  Operation *def = v.getDefiningOp();
  if (isa<tensor::SplatOp>(def))
    return SmallVector<int64_t>(registers, 0);
  if (auto coords = dyn_cast<TileCoordsOp>(def)) {
    TileLayout layout = getTileLayout(coords.getType());
    SmallVector<int64_t> offsets;
    for (int64_t reg = 0; reg < registers; ++reg) {
      TileCoord c = layout.ofRegister(reg);
      offsets.push_back(coords.getDim() == 0 ? c.row : c.col);
    }
    return offsets;
  }
  SmallVector<int64_t> lhs = registerOffsets(def->getOperand(0), registers);
  SmallVector<int64_t> rhs = registerOffsets(def->getOperand(1), registers);
  bool add = isa<arith::AddIOp>(def);
  for (auto [x, y] : llvm::zip(lhs, rhs))
    x = add ? x + y : x - y;
  return lhs;
}

/// Emits the thread's part of a value isCoordinateForm accepts (the scalar
/// arithmetic of its bases), a scalar of type `element`.
Value emitThreadPart(OpBuilder &b, Location loc, Value v, Type element) {
  Operation *def = v.getDefiningOp();
  if (auto splat = dyn_cast<tensor::SplatOp>(def)) {
    Value scalar = splat.getInput();
    if (scalar.getType() != element)
      scalar = arith::IndexCastOp::create(b, loc, element, scalar);
    return scalar;
  }
  if (auto coords = dyn_cast<TileCoordsOp>(def)) {
    auto [row, col] = emitThreadCoords(b, loc, getTileLayout(coords.getType()),
                                       ThreadPosition::get(b, loc));
    return arith::IndexCastOp::create(b, loc, element,
                                      coords.getDim() == 0 ? row : col);
  }
  Value lhs = emitThreadPart(b, loc, def->getOperand(0), element);
  Value rhs = emitThreadPart(b, loc, def->getOperand(1), element);
  if (isa<arith::AddIOp>(def))
    return arith::AddIOp::create(b, loc, lhs, rhs);
  return arith::SubIOp::create(b, loc, lhs, rhs);
}

/// The thread's part of a value isCoordinateForm accepts, for the thread
/// at (lane, warp), when every scalar in it is a constant.
std::optional<int64_t> constantThreadPart(Value v, int64_t lane, int64_t warp) {
  Operation *def = v.getDefiningOp();
  if (auto splat = dyn_cast<tensor::SplatOp>(def)) {
    APInt value;
    if (!matchPattern(splat.getInput(), m_ConstantInt(&value)))
      return std::nullopt;
    return value.getSExtValue();
  }
  if (auto coords = dyn_cast<TileCoordsOp>(def)) {
    TileCoord c = getTileLayout(coords.getType()).apply(0, lane, warp);
    return coords.getDim() == 0 ? c.row : c.col;
  }
  std::optional<int64_t> lhs =
      constantThreadPart(def->getOperand(0), lane, warp);
  std::optional<int64_t> rhs =
      constantThreadPart(def->getOperand(1), lane, warp);
  if (!lhs || !rhs)
    return std::nullopt;
  return isa<arith::AddIOp>(def) ? *lhs + *rhs : *lhs - *rhs;
}

/// Per register, the compare's outcome where it is the same on every
/// thread of `layout` (nullopt where it differs, or where the coordinates
/// hold a runtime scalar); empty when `bound` is not a constant splat.
SmallVector<std::optional<bool>>
decideOnEveryThread(arith::CmpIOp op, const TileLayout &layout,
                    ArrayRef<int64_t> offsets) {
  SplatElementsAttr bound;
  if (!matchPattern(op.getRhs(), m_Constant(&bound)) ||
      !bound.getElementType().isIntOrIndex())
    return {};
  int64_t limit = bound.getSplatValue<APInt>().getSExtValue();
  SmallVector<int64_t> threadParts;
  for (int64_t warp = 0; warp < layout.numWarps(); ++warp) {
    for (int64_t lane = 0; lane < (1 << TileLayout::kLaneBits); ++lane) {
      std::optional<int64_t> part = constantThreadPart(op.getLhs(), lane, warp);
      if (!part)
        return {};
      threadParts.push_back(*part);
    }
  }
  SmallVector<std::optional<bool>> decided;
  for (int64_t offset : offsets) {
    std::optional<bool> outcome;
    for (int64_t part : threadParts) {
      bool holds = arith::applyCmpPredicate(
          op.getPredicate(), APInt(64, offset + part, /*isSigned=*/true),
          APInt(64, limit, /*isSigned=*/true));
      if (outcome && *outcome != holds) {
        outcome = std::nullopt;
        break;
      }
      outcome = holds;
    }
    decided.push_back(outcome);
  }
  return decided;
}

VectorType registersOf(const TypeConverter &converter, Type tile) {
  return cast<VectorType>(converter.convertType(tile));
}

Value offsetConstant(OpBuilder &b, Location loc, VectorType type,
                     ArrayRef<int64_t> offsets) {
  SmallVector<APInt> values;
  for (int64_t offset : offsets)
    values.push_back(APInt(type.getElementTypeBitWidth(), offset,
                           /*isSigned=*/true));
  return arith::ConstantOp::create(b, loc, type,
                                   DenseElementsAttr::get(type, values));
}

struct LowerTileCoords : OpConversionPattern<TileCoordsOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(TileCoordsOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    VectorType type = registersOf(*getTypeConverter(), op.getType());
    Value base =
        emitThreadPart(rewriter, loc, op.getResult(), type.getElementType());
    Value splat = vector::BroadcastOp::create(rewriter, loc, type, base);
    rewriter.replaceOpWithNewOp<arith::AddIOp>(
        op, splat,
        offsetConstant(rewriter, loc, type,
                       registerOffsets(op.getResult(), type.getNumElements())));
    return success();
  }
};

/// `coordinates <pred> bound` as `offsets <pred> bound - base`.
struct LowerCoordinateCompare : OpConversionPattern<arith::CmpIOp> {
  LowerCoordinateCompare(TypeConverter &converter, MLIRContext *ctx)
      : OpConversionPattern(converter, ctx, /*benefit=*/2) {}
  LogicalResult
  matchAndRewrite(arith::CmpIOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto tile = dyn_cast<RankedTensorType>(op.getLhs().getType());
    if (!tile || !getLayout(tile) || !isCoordinateForm(op.getLhs()))
      return rewriter.notifyMatchFailure(op, "not a coordinate compare");
    // Moving the thread's part across keeps signed orders and equality (the
    // values are small: no wrap); an unsigned order would not survive it.
    using Pred = arith::CmpIPredicate;
    Pred pred = op.getPredicate();
    if (pred == Pred::ult || pred == Pred::ule || pred == Pred::ugt ||
        pred == Pred::uge)
      return rewriter.notifyMatchFailure(op, "unsigned order");
    Location loc = op.getLoc();
    VectorType type = registersOf(*getTypeConverter(), tile);
    SmallVector<int64_t> offsets =
        registerOffsets(op.getLhs(), type.getNumElements());
    SmallVector<std::optional<bool>> decided =
        decideOnEveryThread(op, getTileLayout(tile), offsets);
    auto maskType = VectorType::get(type.getShape(), rewriter.getI1Type());
    auto constantMask = [&](auto bit) {
      SmallVector<bool> bits;
      for (const std::optional<bool> &outcome : decided)
        bits.push_back(bit(outcome));
      return arith::ConstantOp::create(rewriter, loc, maskType,
                                       DenseElementsAttr::get(maskType, bits));
    };
    bool allDecided =
        !decided.empty() && llvm::all_of(decided, [](auto d) { return !!d; });
    if (allDecided) {
      rewriter.replaceOp(op, constantMask([](auto d) { return *d; }));
      return success();
    }
    Value base =
        emitThreadPart(rewriter, loc, op.getLhs(), type.getElementType());
    Value bound = arith::SubIOp::create(
        rewriter, loc, adaptor.getRhs(),
        vector::BroadcastOp::create(rewriter, loc, type, base));
    Value compare = arith::CmpIOp::create(
        rewriter, loc, op.getPredicate(),
        offsetConstant(rewriter, loc, type, offsets), bound);
    if (llvm::none_of(decided, [](auto d) { return !!d; })) {
      rewriter.replaceOp(op, compare);
      return success();
    }
    // One constant per statement: argument evaluation order is unspecified,
    // and the IR (and its lit test) must not depend on the host compiler.
    Value known = constantMask([](auto d) { return !!d; });
    Value outcome = constantMask([](auto d) { return d.value_or(false); });
    rewriter.replaceOpWithNewOp<arith::SelectOp>(op, known, outcome, compare);
    return success();
  }
};

} // namespace

void mlir::fagpu::populateTileCoordsToNVVMPatterns(
    TileTypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<LowerTileCoords, LowerCoordinateCompare>(converter,
                                                        patterns.getContext());
}
