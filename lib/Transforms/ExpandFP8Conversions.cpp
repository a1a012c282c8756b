//===- ExpandFP8Conversions.cpp - f8E4M3FN extensions as integer ops ------===//
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

struct ExpandFP8ConversionsPass
    : fa::impl::ExpandFP8ConversionsBase<ExpandFP8ConversionsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<ExpandE4M3Extension>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
