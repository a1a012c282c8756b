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
//===----------------------------------------------------------------------===//

#include "TileLowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace mlir::fagpu;

namespace {

/// A register tile of coordinates: register r holds base + offsets[r].
struct CoordinateForm {
  Value base; // a scalar of the registers' element type
  SmallVector<int64_t> offsets;
};

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

/// Emits the thread's part of a value isCoordinateForm accepts (the scalar
/// arithmetic of its bases) and collects its registers' offsets.
CoordinateForm emitCoordinateForm(OpBuilder &b, Location loc, Value v,
                                  Type element, int64_t registers) {
  Operation *def = v.getDefiningOp();
  if (auto splat = dyn_cast<tensor::SplatOp>(def)) {
    Value scalar = splat.getInput();
    if (scalar.getType() != element)
      scalar = arith::IndexCastOp::create(b, loc, element, scalar);
    return {scalar, SmallVector<int64_t>(registers, 0)};
  }
  if (auto coords = dyn_cast<TileCoordsOp>(def)) {
    TileLayout layout = getTileLayout(coords.getType());
    bool rows = coords.getDim() == 0;
    auto [row, col] =
        emitThreadCoords(b, loc, layout, ThreadPosition::get(b, loc));
    CoordinateForm form{
        arith::IndexCastOp::create(b, loc, element, rows ? row : col), {}};
    for (int64_t reg = 0; reg < registers; ++reg) {
      TileCoord c = layout.ofRegister(reg);
      form.offsets.push_back(rows ? c.row : c.col);
    }
    return form;
  }
  CoordinateForm lhs =
      emitCoordinateForm(b, loc, def->getOperand(0), element, registers);
  CoordinateForm rhs =
      emitCoordinateForm(b, loc, def->getOperand(1), element, registers);
  bool add = isa<arith::AddIOp>(def);
  CoordinateForm form;
  form.base =
      add ? arith::AddIOp::create(b, loc, lhs.base, rhs.base).getResult()
          : arith::SubIOp::create(b, loc, lhs.base, rhs.base).getResult();
  for (auto [x, y] : llvm::zip(lhs.offsets, rhs.offsets))
    form.offsets.push_back(add ? x + y : x - y);
  return form;
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
    CoordinateForm form =
        emitCoordinateForm(rewriter, loc, op.getResult(),
                           type.getElementType(), type.getNumElements());
    Value splat = vector::BroadcastOp::create(rewriter, loc, type, form.base);
    rewriter.replaceOpWithNewOp<arith::AddIOp>(
        op, splat, offsetConstant(rewriter, loc, type, form.offsets));
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
    CoordinateForm form =
        emitCoordinateForm(rewriter, loc, op.getLhs(), type.getElementType(),
                           type.getNumElements());
    Value bound = arith::SubIOp::create(
        rewriter, loc, adaptor.getRhs(),
        vector::BroadcastOp::create(rewriter, loc, type, form.base));
    rewriter.replaceOpWithNewOp<arith::CmpIOp>(
        op, op.getPredicate(),
        offsetConstant(rewriter, loc, type, form.offsets), bound);
    return success();
  }
};

} // namespace

void mlir::fagpu::populateTileCoordsToNVVMPatterns(
    TileTypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<LowerTileCoords, LowerCoordinateCompare>(converter,
                                                        patterns.getContext());
}
