//===- RegisterTilesToNVVM.cpp - register tiles -> per-thread vectors -----===//
//
// Register tiles become each thread's registers (a vector in the layout's
// register order); every op asks the tile's TileLayout where its elements
// are. Elementwise arith/math run on those vectors unchanged; row reductions
// combine a thread's registers of a row, then shuffle across the lanes that
// split the row; layout conversions within a thread are register shuffles.
//
//===----------------------------------------------------------------------===//

#include "TileLowering.h"
#include "fa/Conversion/ApproximateMath.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/DialectConversion.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::fagpu;

namespace {

/// The approximation a math op on tiles lowers to, per element.
static std::optional<fa::ApproximateFn> approximationOf(Operation *op) {
  return TypeSwitch<Operation *, std::optional<fa::ApproximateFn>>(op)
      .Case([](math::Exp2Op) { return fa::ApproximateFn::Exp2; })
      .Case([](math::Log2Op) { return fa::ApproximateFn::Log2; })
      .Case([](math::TanhOp) { return fa::ApproximateFn::Tanh; })
      .Default([](Operation *) { return std::nullopt; });
}

/// arith and math ops on register tiles run unchanged on the registers.
struct ElementwiseOnTiles : ConversionPattern {
  ElementwiseOnTiles(TypeConverter &converter, MLIRContext *ctx,
                     int64_t exp2OnFmaEvery)
      : ConversionPattern(converter, MatchAnyOpTypeTag(), 1, ctx),
        exp2OnFmaEvery(exp2OnFmaEvery) {}

  /// Every this many exponentials of a thread's registers one runs on the
  /// FMA pipe (0: none).
  int64_t exp2OnFmaEvery;

  LogicalResult
  matchAndRewrite(Operation *op, ArrayRef<Value> operands,
                  ConversionPatternRewriter &rewriter) const override {
    // Unregistered ops (fa-opt --allow-unregistered-dialect) have none.
    Dialect *dialect = op->getDialect();
    if (!dialect || !isa<arith::ArithDialect, math::MathDialect>(dialect) ||
        !hasTileTypes(op))
      return failure();
    Location loc = op->getLoc();
    if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
      auto dense = dyn_cast<SplatElementsAttr>(constant.getValue());
      if (!dense)
        return rewriter.notifyMatchFailure(op, "only splat tile constants");
      auto type =
          cast<VectorType>(getTypeConverter()->convertType(constant.getType()));
      Attribute value = dense.getSplatValue<Attribute>();
      if (auto integer = dyn_cast<IntegerAttr>(value);
          integer && integer.getType().isIndex())
        value = IntegerAttr::get(
            type.getElementType(),
            integer.getValue().sextOrTrunc(type.getElementTypeBitWidth()));
      rewriter.replaceOpWithNewOp<arith::ConstantOp>(
          op, type, SplatElementsAttr::get(type, value));
      return success();
    }
    if (approximationOf(op)) {
      if (!getElementTypeOrSelf(op->getResult(0).getType()).isF32())
        return rewriter.notifyMatchFailure(op, "f32 approximations only");
      auto type = cast<VectorType>(operands[0].getType());
      SmallVector<Value> results;
      fa::ApproximateFn fn = *approximationOf(op);
      for (auto [i, x] :
           llvm::enumerate(unpackVector(rewriter, loc, operands[0])))
        results.push_back(fn == fa::ApproximateFn::Exp2 && exp2OnFmaEvery > 0 &&
                                  int64_t(i) % exp2OnFmaEvery ==
                                      exp2OnFmaEvery - 1
                              ? fa::emitExp2OnFma(rewriter, loc, x)
                              : fa::emitApproximateMath(rewriter, loc, fn, x));
      rewriter.replaceOp(op, packVector(rewriter, loc, type, results));
      return success();
    }
    FailureOr<Operation *> converted =
        convertOpResultTypes(op, operands, *getTypeConverter(), rewriter);
    if (failed(converted))
      return failure();
    // Tile math may contract a multiply and an add into one FMA (the
    // softmax's x * scale - max is one FFMA per element, as in FA2/FA3).
    if (auto fastMath = dyn_cast<arith::ArithFastMathInterface>(*converted)) {
      arith::FastMathFlagsAttr flags = fastMath.getFastMathFlagsAttr();
      (*converted)
          ->setAttr(
              fastMath.getFastMathAttrName(),
              arith::FastMathFlagsAttr::get(
                  rewriter.getContext(),
                  (flags ? flags.getValue() : arith::FastMathFlags::none) |
                      arith::FastMathFlags::contract));
    }
    rewriter.replaceOp(op, (*converted)->getResults());
    return success();
  }
};

/// A scalar broadcast to every element: each register holds it.
struct LowerSplat : OpConversionPattern<tensor::SplatOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(tensor::SplatOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (!getLayout(op.getType()))
      return failure();
    auto type = cast<VectorType>(getTypeConverter()->convertType(op.getType()));
    Value input = adaptor.getInput();
    if (input.getType() != type.getElementType())
      input = arith::IndexCastOp::create(rewriter, op.getLoc(),
                                         type.getElementType(), input);
    rewriter.replaceOpWithNewOp<vector::BroadcastOp>(op, type, input);
    return success();
  }
};

static Value combine(OpBuilder &b, Location loc, ReductionKind kind, Value x,
                     Value y) {
  if (kind == ReductionKind::max)
    return arith::MaximumFOp::create(b, loc, x, y);
  return arith::AddFOp::create(b, loc, x, y);
}

struct LowerReduceRows : OpConversionPattern<ReduceRowsOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ReduceRowsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    TileLayout layout =
        getTileLayout(cast<RankedTensorType>(op.getSource().getType()));
    SmallVector<Value> regs = unpackVector(rewriter, loc, adaptor.getSource());
    SmallVector<Value> rows;
    for (ArrayRef<int64_t> group : layout.registersByRow()) {
      // One chain per row: a pairwise tree (log2 deep) measured 1-2 % slower
      // on the H200 (hd128 N = 8k 588 against 599 TFLOP/s, same run).
      Value acc = regs[group.front()];
      for (int64_t reg : group.drop_front())
        acc = combine(rewriter, loc, op.getKind(), acc, regs[reg]);
      // Lanes that split the row: a butterfly leaves the result in each.
      for (unsigned bit : layout.laneBitsAlongCols()) {
        Value other = gpu::ShuffleOp::create(rewriter, loc, acc, 1u << bit, 32,
                                             gpu::ShuffleMode::XOR)
                          .getShuffleResult();
        acc = combine(rewriter, loc, op.getKind(), acc, other);
      }
      rows.push_back(acc);
    }
    auto type = cast<VectorType>(
        getTypeConverter()->convertType(op.getResult().getType()));
    rewriter.replaceOp(op, packVector(rewriter, loc, type, rows));
    return success();
  }
};

struct LowerExpandRows : OpConversionPattern<ExpandRowsOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ExpandRowsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    TileLayout layout = getTileLayout(op.getType());
    SmallVector<int64_t> mask(layout.numRegisters());
    for (auto [row, group] : llvm::enumerate(layout.registersByRow()))
      for (int64_t reg : group)
        mask[reg] = row;
    rewriter.replaceOpWithNewOp<vector::ShuffleOp>(op, adaptor.getSource(),
                                                   adaptor.getSource(), mask);
    return success();
  }
};

struct LowerConvertLayout : OpConversionPattern<ConvertLayoutOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ConvertLayoutOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    TileLayout from =
        getTileLayout(cast<RankedTensorType>(op.getSource().getType()));
    TileLayout to = getTileLayout(op.getType());
    // Same lane and warp bases (verified): register r of `to` is the
    // register of `from` at the same element of lane 0, warp 0.
    DenseMap<std::pair<int64_t, int64_t>, int64_t> fromReg;
    for (int64_t reg = 0; reg < from.numRegisters(); ++reg) {
      TileCoord c = from.ofRegister(reg);
      fromReg[{c.row, c.col}] = reg;
    }
    SmallVector<int64_t> mask;
    for (int64_t reg = 0; reg < to.numRegisters(); ++reg) {
      TileCoord c = to.ofRegister(reg);
      mask.push_back(fromReg.lookup({c.row, c.col}));
    }
    rewriter.replaceOpWithNewOp<vector::ShuffleOp>(op, adaptor.getSource(),
                                                   adaptor.getSource(), mask);
    return success();
  }
};

/// f32 registers rounded to e4m3 two at a time (cvt.rn.satfinite.e4m3x2:
/// P in [0, 1] never saturates), into their bytes.
struct LowerTruncToE4M3 : OpConversionPattern<arith::TruncFOp> {
  LowerTruncToE4M3(TypeConverter &converter, MLIRContext *ctx)
      : OpConversionPattern(converter, ctx, /*benefit=*/2) {}
  LogicalResult
  matchAndRewrite(arith::TruncFOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = dyn_cast<RankedTensorType>(op.getType());
    if (!type || !getLayout(type) ||
        !isa<Float8E4M3FNType>(type.getElementType()) ||
        !cast<RankedTensorType>(op.getIn().getType()).getElementType().isF32())
      return rewriter.notifyMatchFailure(op, "not f32 tile -> e4m3 tile");
    Location loc = op.getLoc();
    SmallVector<Value> in = unpackVector(rewriter, loc, adaptor.getIn());
    if (in.size() % 2 != 0)
      return rewriter.notifyMatchFailure(op, "an odd register count");
    Type i8 = rewriter.getI8Type(), i16 = rewriter.getI16Type();
    SmallVector<Value> bytes;
    for (size_t i = 0; i < in.size(); i += 2) {
      // `a` goes to the upper byte, `b` to the lower: register i first.
      Value pair = NVVM::ConvertF32x2ToF8x2Op::create(
          rewriter, loc, i16, in[i + 1], in[i], NVVM::FPRoundingMode::RN,
          NVVM::SaturationMode::SATFINITE, /*relu=*/false,
          rewriter.getType<Float8E4M3FNType>());
      bytes.push_back(arith::TruncIOp::create(rewriter, loc, i8, pair));
      bytes.push_back(arith::TruncIOp::create(
          rewriter, loc, i8,
          arith::ShRUIOp::create(
              rewriter, loc, pair,
              arith::ConstantIntOp::create(rewriter, loc, i16, 8))));
    }
    auto vectorType =
        cast<VectorType>(getTypeConverter()->convertType(op.getType()));
    rewriter.replaceOp(op, packVector(rewriter, loc, vectorType, bytes));
    return success();
  }
};

/// 8-bit accumulator tile -> #fagpu.wgmma_a8. In each 32 columns of a row
/// a thread holds the pairs at columns 8 j + 2 t (j = 0..3); the A operand
/// wants columns 4 t .. 4 t + 3 and 16 + 4 t .. 16 + 4 t + 3, i.e. the pair
/// j = t / 2 (resp. 2 + t / 2) of lanes 2 (t % 2) and 2 (t % 2) + 1 of its
/// quad. Each thread packs its pairs j = 0, 1 and j = 2, 3 into two words;
/// each A word is two shuffled words' halves: four shuffles per two words.
struct LowerConvertToWgmmaA8 : OpConversionPattern<ConvertLayoutOp> {
  LowerConvertToWgmmaA8(TypeConverter &converter, MLIRContext *ctx)
      : OpConversionPattern(converter, ctx, /*benefit=*/2) {}
  LogicalResult
  matchAndRewrite(ConvertLayoutOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (!isa<WgmmaA8LayoutAttr>(op.getType().getEncoding()))
      return rewriter.notifyMatchFailure(op, "not to #fagpu.wgmma_a8");
    Location loc = op.getLoc();
    TileLayout from =
        getTileLayout(cast<RankedTensorType>(op.getSource().getType()));
    TileLayout to = getTileLayout(op.getType());
    DenseMap<std::pair<int64_t, int64_t>, int64_t> fromReg;
    for (int64_t reg = 0; reg < from.numRegisters(); ++reg) {
      TileCoord c = from.ofRegister(reg);
      fromReg[{c.row, c.col}] = reg;
    }
    SmallVector<Value> regs = unpackVector(rewriter, loc, adaptor.getSource());
    Type i32 = rewriter.getI32Type();
    auto c32 = [&](int64_t v) {
      return arith::ConstantIntOp::create(rewriter, loc, i32, v).getResult();
    };
    // Four bytes (registers of lane 0's elements (row, col .. col + 1) and
    // (row, col + 8 .. col + 9)) as one word.
    auto word = [&](int64_t row, int64_t col) {
      Value w;
      int64_t k = 0;
      for (int64_t c : {col, col + 1, col + 8, col + 9}) {
        Value byte = arith::ExtUIOp::create(rewriter, loc, i32,
                                            regs[fromReg.lookup({row, c})]);
        Value placed = arith::ShLIOp::create(rewriter, loc, byte, c32(8 * k++));
        w = w ? arith::OrIOp::create(rewriter, loc, w, placed).getResult()
              : placed;
      }
      return w;
    };
    Value lane = arith::IndexCastUIOp::create(rewriter, loc, i32,
                                              emitLaneId(rewriter, loc));
    Value t = arith::AndIOp::create(rewriter, loc, lane, c32(3));
    Value quad = arith::AndIOp::create(rewriter, loc, lane, c32(~3));
    Value first = arith::AddIOp::create(
        rewriter, loc, quad,
        arith::ShLIOp::create(rewriter, loc,
                              arith::AndIOp::create(rewriter, loc, t, c32(1)),
                              c32(1)));
    Value second = arith::AddIOp::create(rewriter, loc, first, c32(1));
    Value upper = arith::CmpIOp::create(
        rewriter, loc, arith::CmpIPredicate::ne,
        arith::AndIOp::create(rewriter, loc, t, c32(2)), c32(0));
    auto shuffle = [&](Value v, Value from) {
      return gpu::ShuffleOp::create(rewriter, loc, v, from, c32(32),
                                    gpu::ShuffleMode::IDX)
          .getShuffleResult();
    };
    SmallVector<Value> out(to.numRegisters());
    for (int64_t reg = 0; reg < to.numRegisters(); reg += 4) {
      TileCoord c = to.ofRegister(reg); // lane 0: column 32 k (+ 16)
      int64_t chunk = c.col - c.col % 32;
      Value packed = word(c.row, chunk + (c.col % 32 == 0 ? 0 : 16));
      Value x0 = shuffle(packed, first), x1 = shuffle(packed, second);
      // Lanes t = 0, 1 take the pairs' lower halves, t = 2, 3 the upper.
      Value low = arith::OrIOp::create(
          rewriter, loc, arith::AndIOp::create(rewriter, loc, x0, c32(0xFFFF)),
          arith::ShLIOp::create(rewriter, loc, x1, c32(16)));
      Value high = arith::OrIOp::create(
          rewriter, loc, arith::ShRUIOp::create(rewriter, loc, x0, c32(16)),
          arith::AndIOp::create(rewriter, loc, x1, c32(0xFFFF0000)));
      Value w = arith::SelectOp::create(rewriter, loc, upper, high, low);
      for (int64_t i = 0; i < 4; ++i)
        out[reg + i] = arith::TruncIOp::create(
            rewriter, loc, rewriter.getI8Type(),
            arith::ShRUIOp::create(rewriter, loc, w, c32(8 * i)));
    }
    auto vectorType =
        cast<VectorType>(getTypeConverter()->convertType(op.getType()));
    rewriter.replaceOp(op, packVector(rewriter, loc, vectorType, out));
    return success();
  }
};

/// Nothing moves: the transpose's registers are the source's (verified).
struct LowerTranspose : OpConversionPattern<TransposeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(TransposeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, adaptor.getSource());
    return success();
  }
};

} // namespace

void mlir::fagpu::populateRegisterTilesToNVVMPatterns(
    TileTypeConverter &converter, RewritePatternSet &patterns,
    int64_t exp2OnFmaEvery) {
  patterns.add<ElementwiseOnTiles>(converter, patterns.getContext(),
                                   exp2OnFmaEvery);
  patterns.add<LowerSplat, LowerReduceRows, LowerExpandRows, LowerConvertLayout,
               LowerTranspose, LowerTruncToE4M3, LowerConvertToWgmmaA8>(
      converter, patterns.getContext());
  populateTileCoordsToNVVMPatterns(converter, patterns);
}
