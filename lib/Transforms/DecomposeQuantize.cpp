//===- DecomposeQuantize.cpp - fa.quantize -> linalg ----------------------===//
//
// The quantization's portable form. Every step runs in the [B, G, R, N, D]
// space of its blocks (R = H / G heads a block), so that a block's amax is
// a plain reduction over (R, N, D) and its scale a projection to (B, G).
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FA/IR/FAOps.h"
#include "fa/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>

namespace mlir {
namespace fa {
#define GEN_PASS_DEF_DECOMPOSEQUANTIZE
#include "fa/Transforms/Passes.h.inc"
} // namespace fa
} // namespace mlir

using namespace mlir;
using namespace mlir::fa;

namespace {

using utils::IteratorType;

/// diag(signs) Hd / sqrt(D) as a constant [D, D] f32 tensor.
Value rotationMatrix(OpBuilder &b, Location loc, int64_t d, int64_t seed) {
  SmallVector<float> values(d * d);
  double norm = 1.0 / std::sqrt(static_cast<double>(d));
  for (int64_t i = 0; i < d; ++i) {
    double sign = QuantizeOp::hadamardSign(seed, i) * norm;
    for (int64_t j = 0; j < d; ++j)
      values[i * d + j] = static_cast<float>(
          llvm::popcount(static_cast<uint64_t>(i & j)) % 2 ? -sign : sign);
  }
  auto type = RankedTensorType::get({d, d}, b.getF32Type());
  return arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(type, ArrayRef<float>(values)));
}

/// An empty tensor shaped like `like` (dynamic sizes from it) of `element`.
Value emptyLike(OpBuilder &b, Location loc, Value like, Type element) {
  return tensor::EmptyOp::create(b, loc, tensor::getMixedSizes(b, loc, like),
                                 element);
}

struct DecomposeQuantizeOp : OpRewritePattern<QuantizeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(QuantizeOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto inputType = op.getInput().getType();
    int64_t heads = inputType.getDimSize(1), d = inputType.getDimSize(3);
    int64_t groups = op.getDescale().getType().getDimSize(1);
    if (ShapedType::isDynamic(heads) || ShapedType::isDynamic(groups) ||
        ShapedType::isDynamic(d))
      return rewriter.notifyMatchFailure(op, "dynamic heads or head dim");
    MLIRContext *ctx = rewriter.getContext();
    Type f32 = rewriter.getF32Type();

    // [B, H, N, D] -> [B, G, R, N, D]: the blocks as their own dims.
    Value input = tensor::ExpandShapeOp::create(
        rewriter, loc,
        RankedTensorType::get({inputType.getDimSize(0), groups, heads / groups,
                               inputType.getDimSize(2), d},
                              inputType.getElementType()),
        op.getInput(), SmallVector<ReassociationIndices>{{0}, {1, 2}, {3}, {4}},
        SmallVector<OpFoldResult>{
            tensor::getMixedSize(rewriter, loc, op.getInput(), 0),
            rewriter.getIndexAttr(groups),
            rewriter.getIndexAttr(heads / groups),
            tensor::getMixedSize(rewriter, loc, op.getInput(), 2),
            rewriter.getIndexAttr(d)});
    auto identity5 = AffineMap::getMultiDimIdentityMap(5, ctx);
    auto parallel5 = SmallVector<IteratorType>(5, IteratorType::parallel);
    Value values = emptyLike(rewriter, loc, input, f32);

    // y: f32 values, rotated along D where asked.
    Value y;
    if (std::optional<int64_t> seed = op.getRotationSeed()) {
      Value zero = arith::ConstantOp::create(rewriter, loc,
                                             rewriter.getF32FloatAttr(0.0f));
      Value init =
          linalg::FillOp::create(rewriter, loc, zero, values).getResult(0);
      // (b, g, r, n, j, i): y[.., j] += x[.., i] R[i, j].
      auto dims = [&](ArrayRef<unsigned> positions) {
        SmallVector<AffineExpr> exprs;
        for (unsigned p : positions)
          exprs.push_back(rewriter.getAffineDimExpr(p));
        return AffineMap::get(6, 0, exprs, ctx);
      };
      SmallVector<IteratorType> iterators(5, IteratorType::parallel);
      iterators.push_back(IteratorType::reduction);
      y = linalg::GenericOp::create(
              rewriter, loc, values.getType(),
              ValueRange{input, rotationMatrix(rewriter, loc, d, *seed)}, init,
              SmallVector<AffineMap>{dims({0, 1, 2, 3, 5}), dims({5, 4}),
                                     dims({0, 1, 2, 3, 4})},
              iterators,
              [&](OpBuilder &b, Location l, ValueRange args) {
                Value x = args[0];
                if (!x.getType().isF32())
                  x = arith::ExtFOp::create(b, l, f32, x);
                Value product = arith::MulFOp::create(b, l, x, args[1]);
                linalg::YieldOp::create(
                    b, l,
                    arith::AddFOp::create(b, l, args[2], product).getResult());
              })
              .getResult(0);
    } else {
      y = linalg::GenericOp::create(
              rewriter, loc, values.getType(), input, values,
              SmallVector<AffineMap>{identity5, identity5}, parallel5,
              [&](OpBuilder &b, Location l, ValueRange args) {
                Value x = args[0];
                if (!x.getType().isF32())
                  x = arith::ExtFOp::create(b, l, f32, x);
                linalg::YieldOp::create(b, l, x);
              })
              .getResult(0);
    }

    // amax per block (b, g), at least kMinAmax.
    auto blockMap = AffineMap::get(
        5, 0, {rewriter.getAffineDimExpr(0), rewriter.getAffineDimExpr(1)},
        ctx);
    Value floor = arith::ConstantOp::create(
        rewriter, loc,
        rewriter.getF32FloatAttr(static_cast<float>(QuantizeOp::kMinAmax)));
    Value blocks = tensor::EmptyOp::create(
        rewriter, loc,
        SmallVector<OpFoldResult>{
            tensor::getMixedSize(rewriter, loc, op.getInput(), 0),
            rewriter.getIndexAttr(groups)},
        f32);
    Value amaxInit =
        linalg::FillOp::create(rewriter, loc, floor, blocks).getResult(0);
    SmallVector<IteratorType> reduceIterators{
        IteratorType::parallel, IteratorType::parallel, IteratorType::reduction,
        IteratorType::reduction, IteratorType::reduction};
    Value amax =
        linalg::GenericOp::create(
            rewriter, loc, amaxInit.getType(), y, amaxInit,
            SmallVector<AffineMap>{identity5, blockMap}, reduceIterators,
            [&](OpBuilder &b, Location l, ValueRange args) {
              Value magnitude = math::AbsFOp::create(b, l, args[0]);
              linalg::YieldOp::create(
                  b, l,
                  arith::MaximumFOp::create(b, l, args[1], magnitude)
                      .getResult());
            })
            .getResult(0);

    Value largest = arith::ConstantOp::create(
        rewriter, loc,
        rewriter.getF32FloatAttr(static_cast<float>(QuantizeOp::kE4M3Max)));
    Value lowest = arith::ConstantOp::create(
        rewriter, loc,
        rewriter.getF32FloatAttr(-static_cast<float>(QuantizeOp::kE4M3Max)));
    auto identity2 = AffineMap::getMultiDimIdentityMap(2, ctx);
    Value descale =
        linalg::GenericOp::create(
            rewriter, loc, amax.getType(), amax,
            emptyLike(rewriter, loc, amax, f32),
            SmallVector<AffineMap>{identity2, identity2},
            SmallVector<IteratorType>(2, IteratorType::parallel),
            [&](OpBuilder &b, Location l, ValueRange args) {
              linalg::YieldOp::create(
                  b, l,
                  arith::DivFOp::create(b, l, args[0], largest).getResult());
            })
            .getResult(0);

    // e4m3(clamp(y * 448 / amax)).
    Type e4m3 = op.getOutput().getType().getElementType();
    Value quantized =
        linalg::GenericOp::create(
            rewriter, loc,
            RankedTensorType::get(
                cast<RankedTensorType>(y.getType()).getShape(), e4m3),
            ValueRange{y, amax}, emptyLike(rewriter, loc, y, e4m3),
            SmallVector<AffineMap>{identity5, blockMap, identity5}, parallel5,
            [&](OpBuilder &b, Location l, ValueRange args) {
              Value scale = arith::DivFOp::create(b, l, largest, args[1]);
              Value scaled = arith::MulFOp::create(b, l, args[0], scale);
              Value clamped = arith::MinimumFOp::create(
                  b, l,
                  arith::MaximumFOp::create(b, l, scaled, lowest).getResult(),
                  largest);
              linalg::YieldOp::create(
                  b, l,
                  arith::TruncFOp::create(b, l, e4m3, clamped).getResult());
            })
            .getResult(0);
    Value output = tensor::CollapseShapeOp::create(
        rewriter, loc, op.getOutput().getType(), quantized,
        SmallVector<ReassociationIndices>{{0}, {1, 2}, {3}, {4}});
    Value descaleOut = descale;
    if (descaleOut.getType() != op.getDescale().getType())
      descaleOut = tensor::CastOp::create(rewriter, loc,
                                          op.getDescale().getType(), descale);
    rewriter.replaceOp(op, {output, descaleOut});
    return success();
  }
};

struct DecomposeQuantizePass
    : fa::impl::DecomposeQuantizeBase<DecomposeQuantizePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<DecomposeQuantizeOp>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
    // A quantization left over had dynamic heads or head dim.
    WalkResult left = getOperation()->walk([](QuantizeOp op) {
      op.emitError() << "cannot decompose fa.quantize with dynamic heads, "
                        "blocks or head dim";
      return WalkResult::interrupt();
    });
    if (left.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
