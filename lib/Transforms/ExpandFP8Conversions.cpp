//===- ExpandFP8Conversions.cpp - f8E4M3FN conversions as integer ops -----===//
//
// e4m3 (FN: no infinities) is s.eeee.mmm with bias 7: a normal value is
// (-1)^s 2^(e-7) 1.m, e = 0 holds the subnormals m 2^-9, and e = 15, m = 7
// is NaN. A normal value's f32 bits are the same fields moved into place
// with the exponent rebiased by 127 - 7; a subnormal is m (0..7) times
// 2^-9, exact in f32.
//
//===----------------------------------------------------------------------===//

#include "fa/Transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir {
namespace fa {
#define GEN_PASS_DEF_EXPANDFP8CONVERSIONS
#include "fa/Transforms/Passes.h.inc"
} // namespace fa
} // namespace mlir

using namespace mlir;

namespace {

/// `type` (a scalar or a vector) with `element` as its element type.
Type withElement(Type type, Type element) {
  if (auto shaped = dyn_cast<VectorType>(type))
    return shaped.clone(element);
  return element;
}

struct ExpandE4M3Extension : OpRewritePattern<arith::ExtFOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(arith::ExtFOp op,
                                PatternRewriter &rewriter) const override {
    Type source = op.getIn().getType();
    if (!isa<Float8E4M3FNType>(getElementTypeOrSelf(source)))
      return rewriter.notifyMatchFailure(op, "not an e4m3 extension");
    if (!isa<VectorType>(source) && !source.isIntOrFloat())
      return rewriter.notifyMatchFailure(op, "scalars and vectors only");
    Location loc = op.getLoc();
    Type i8 = withElement(source, rewriter.getI8Type());
    Type i32 = withElement(source, rewriter.getI32Type());
    Type f32 = withElement(source, rewriter.getF32Type());
    // A constant of `type`: a splat where it is a vector.
    auto constant = [&](Type type, TypedAttr scalar) -> Value {
      TypedAttr attr = scalar;
      if (auto vector = dyn_cast<VectorType>(type))
        attr = SplatElementsAttr::get(vector, scalar);
      return arith::ConstantOp::create(rewriter, loc, attr);
    };
    auto int32 = [&](int64_t v) {
      return constant(i32, rewriter.getI32IntegerAttr(v));
    };
    auto float32 = [&](float v) {
      return constant(f32, rewriter.getF32FloatAttr(v));
    };
    Value byte = arith::BitcastOp::create(rewriter, loc, i8, op.getIn());
    Value bits = arith::ExtUIOp::create(rewriter, loc, i32, byte);
    Value sign = arith::ShLIOp::create(
        rewriter, loc,
        arith::ShRUIOp::create(rewriter, loc, bits, int32(7)).getResult(),
        int32(31));
    Value magnitude = arith::AndIOp::create(rewriter, loc, bits, int32(0x7F));
    Value exponent = arith::ShRUIOp::create(rewriter, loc, magnitude, int32(3));
    Value mantissa = arith::AndIOp::create(rewriter, loc, bits, int32(7));

    // Normal: the fields shifted into f32's, the exponent rebiased.
    Value normalBits = arith::AddIOp::create(
        rewriter, loc,
        arith::ShLIOp::create(rewriter, loc, magnitude, int32(20)).getResult(),
        int32((127 - 7) << 23));
    Value signedNormal =
        arith::OrIOp::create(rewriter, loc, normalBits, sign).getResult();
    Value normal = arith::BitcastOp::create(rewriter, loc, f32, signedNormal);
    // Subnormal: m * 2^-9, then the sign.
    Value subnormalMagnitude = arith::MulFOp::create(
        rewriter, loc,
        arith::UIToFPOp::create(rewriter, loc, f32, mantissa).getResult(),
        float32(1.0f / 512.0f));
    Value subnormalBits =
        arith::BitcastOp::create(rewriter, loc, i32, subnormalMagnitude);
    Value subnormal = arith::BitcastOp::create(
        rewriter, loc, f32,
        arith::OrIOp::create(rewriter, loc, subnormalBits, sign).getResult());
    Value nan = arith::BitcastOp::create(
        rewriter, loc, f32,
        arith::OrIOp::create(rewriter, loc, int32(0x7FC00000), sign)
            .getResult());

    Value isSubnormal = arith::CmpIOp::create(
        rewriter, loc, arith::CmpIPredicate::eq, exponent, int32(0));
    Value isNan = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::eq,
                                        magnitude, int32(0x7F));
    Value finite =
        arith::SelectOp::create(rewriter, loc, isSubnormal, subnormal, normal);
    Value value = arith::SelectOp::create(rewriter, loc, isNan, nan, finite);

    Type result = getElementTypeOrSelf(op.getType());
    if (result.isF32())
      rewriter.replaceOp(op, value);
    else if (result.getIntOrFloatBitWidth() < 32)
      rewriter.replaceOpWithNewOp<arith::TruncFOp>(op, op.getType(), value);
    else
      rewriter.replaceOpWithNewOp<arith::ExtFOp>(op, op.getType(), value);
    return success();
  }
};

/// f32 -> e4m3 bits, rounded to nearest even. The magnitude's f32 bits: at
/// or above 2^-6 (e4m3's smallest normal) the mantissa is rounded to 3 bits
/// by integer addition (a carry moves into the exponent, as it should) and
/// the exponent rebiased; below, m = round(|x| 2^9) is the subnormal's
/// mantissa (8 is the smallest normal's encoding). Past 0x7E (448) and for
/// NaN: 0x7F.
struct ExpandE4M3Truncation : OpRewritePattern<arith::TruncFOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(arith::TruncFOp op,
                                PatternRewriter &rewriter) const override {
    Type result = op.getType();
    if (!isa<Float8E4M3FNType>(getElementTypeOrSelf(result)))
      return rewriter.notifyMatchFailure(op, "not an e4m3 truncation");
    if (!isa<VectorType>(result) && !result.isIntOrFloat())
      return rewriter.notifyMatchFailure(op, "scalars and vectors only");
    Location loc = op.getLoc();
    Type i8 = withElement(result, rewriter.getI8Type());
    Type i32 = withElement(result, rewriter.getI32Type());
    Type f32 = withElement(result, rewriter.getF32Type());
    auto constant = [&](Type type, TypedAttr scalar) -> Value {
      TypedAttr attr = scalar;
      if (auto vector = dyn_cast<VectorType>(type))
        attr = SplatElementsAttr::get(vector, scalar);
      return arith::ConstantOp::create(rewriter, loc, attr);
    };
    auto int32 = [&](int64_t v) {
      return constant(i32, rewriter.getI32IntegerAttr(v));
    };
    auto float32 = [&](float v) {
      return constant(f32, rewriter.getF32FloatAttr(v));
    };
    Value in = op.getIn();
    if (!getElementTypeOrSelf(in).isF32())
      in = arith::ExtFOp::create(rewriter, loc, f32, in);
    Value bits = arith::BitcastOp::create(rewriter, loc, i32, in);
    Value sign = arith::AndIOp::create(
        rewriter, loc,
        arith::ShRUIOp::create(rewriter, loc, bits, int32(24)).getResult(),
        int32(0x80));
    Value magnitude =
        arith::AndIOp::create(rewriter, loc, bits, int32(0x7FFFFFFF));

    // Normal: round the 23-bit mantissa to 3 bits, nearest even.
    Value odd = arith::AndIOp::create(
        rewriter, loc,
        arith::ShRUIOp::create(rewriter, loc, magnitude, int32(20)).getResult(),
        int32(1));
    Value rounded = arith::AddIOp::create(
        rewriter, loc,
        arith::AddIOp::create(rewriter, loc, magnitude, int32(0x7FFFF))
            .getResult(),
        odd);
    Value normal = arith::ShRUIOp::create(
        rewriter, loc,
        arith::SubIOp::create(rewriter, loc, rounded, int32((127 - 7) << 23))
            .getResult(),
        int32(20));
    // Subnormal: |x| 2^9 rounded to an integer, nearest even (adding 2^23
    // leaves no fraction bits in f32).
    Value absolute = arith::BitcastOp::create(rewriter, loc, f32, magnitude);
    Value shifted = arith::SubFOp::create(
        rewriter, loc,
        arith::AddFOp::create(
            rewriter, loc,
            arith::MulFOp::create(rewriter, loc, absolute, float32(512.0f))
                .getResult(),
            float32(8388608.0f))
            .getResult(),
        float32(8388608.0f));
    Value subnormal = arith::FPToUIOp::create(rewriter, loc, i32, shifted);

    Value isSubnormal =
        arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::ult,
                              magnitude, int32(0x3C800000)); // 2^-6
    Value code =
        arith::SelectOp::create(rewriter, loc, isSubnormal, subnormal, normal);
    // NaN inputs (above +inf's bits) and values rounding past 448 (the
    // rebiased code would exceed 0x7E; inf and huge values too).
    Value tooLarge = arith::CmpIOp::create(
        rewriter, loc, arith::CmpIPredicate::ugt, magnitude,
        int32(0x43E80000)); // 464: 448 or the NaN code beyond
    Value capped =
        arith::SelectOp::create(rewriter, loc, tooLarge, int32(0x7F), code);
    Value byte = arith::TruncIOp::create(
        rewriter, loc, i8,
        arith::OrIOp::create(rewriter, loc, capped, sign).getResult());
    rewriter.replaceOpWithNewOp<arith::BitcastOp>(op, result, byte);
    return success();
  }
};

struct ExpandFP8ConversionsPass
    : fa::impl::ExpandFP8ConversionsBase<ExpandFP8ConversionsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<ExpandE4M3Extension, ExpandE4M3Truncation>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
