//===- ReduceRowsPatterns.cpp - fagpu.reduce_rows canonicalization -------===//
//
// reduce(x * c) = reduce(x) * c where c is a splat that is positive (or
// NaN): the product by the softmax scale moves from every element to one
// per row (max and sum commute with it), and the elementwise product is
// left to its other users, where it becomes part of an FMA (FlashAttention
// 2/3's x * scale - max). The scale is a constant, or FP8's descaled
// factor, which the decomposition guards to be positive or NaN.
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FAGPU/IR/FAGPU.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::fagpu;

namespace {
/// Whether a constant scale commutes with the row max: positive, finite.
bool isPositiveFinite(const APFloat &x) {
  return !x.isNegative() && !x.isZero() && x.isFinite();
}

/// Whether a scalar is positive or NaN wherever it is defined: positive
/// constants, their products, and the guard `select(x > k, x, NaN)` for a
/// non-negative constant k (FP8's descaled factor, DecomposeAttention).
/// Products keep it (NaN stays NaN; descales whose product overflows to
/// +inf are no more meaningful scaled before the max than after).
bool isPositiveOrNaN(Value v) {
  FloatAttr constant;
  if (matchPattern(v, m_Constant(&constant)))
    return constant.getValue().isNaN() || isPositiveFinite(constant.getValue());
  if (auto product = v.getDefiningOp<arith::MulFOp>())
    return isPositiveOrNaN(product.getLhs()) &&
           isPositiveOrNaN(product.getRhs());
  auto guard = v.getDefiningOp<arith::SelectOp>();
  if (!guard || !isPositiveOrNaN(guard.getFalseValue()))
    return false;
  auto compare = guard.getCondition().getDefiningOp<arith::CmpFOp>();
  if (!compare || compare.getLhs() != guard.getTrueValue())
    return false;
  FloatAttr bound;
  if (!matchPattern(compare.getRhs(), m_Constant(&bound)) ||
      bound.getValue().isNegative() || bound.getValue().isNaN())
    return false;
  using P = arith::CmpFPredicate;
  switch (compare.getPredicate()) {
  case P::OGT:
  case P::UGT:
    return true; // x > k >= 0 (or x NaN: U keeps it, O selects NaN).
  case P::OGE:
  case P::UGE:
    return !bound.getValue().isZero(); // x >= k > 0.
  default:
    return false;
  }
}

/// The row factor of a positive (or NaN) splat factor, for rows of type
/// `rowsType`: a constant splat's element as a constant of the rows, a
/// tensor.splat's scalar splat again; null for any other factor.
Value rowFactorOf(PatternRewriter &rewriter, Location loc, Value factor,
                  RankedTensorType rowsType) {
  DenseElementsAttr constant;
  if (matchPattern(factor, m_Constant(&constant))) {
    if (!constant.isSplat())
      return {};
    APFloat c = constant.getSplatValue<APFloat>();
    if (!isPositiveFinite(c))
      return {};
    return arith::ConstantOp::create(rewriter, loc, rowsType,
                                     DenseElementsAttr::get(rowsType, c));
  }
  auto splat = factor.getDefiningOp<tensor::SplatOp>();
  if (!splat || !isPositiveOrNaN(splat.getInput()))
    return {};
  return tensor::SplatOp::create(rewriter, loc, rowsType, splat.getInput());
}

struct ScaleAfterReduceRows : OpRewritePattern<ReduceRowsOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReduceRowsOp op,
                                PatternRewriter &rewriter) const override {
    auto product = op.getSource().getDefiningOp<arith::MulFOp>();
    if (!product)
      return failure();
    auto rowsType = cast<RankedTensorType>(op.getType());
    for (unsigned side : {0u, 1u}) {
      Value rowFactor = rowFactorOf(rewriter, op.getLoc(),
                                    product->getOperand(side), rowsType);
      if (!rowFactor)
        continue;
      Value reduced =
          ReduceRowsOp::create(rewriter, op.getLoc(), op.getType(),
                               op.getKind(), product->getOperand(1 - side));
      rewriter.replaceOpWithNewOp<arith::MulFOp>(op, reduced, rowFactor);
      return success();
    }
    return failure();
  }
};
} // namespace

void ReduceRowsOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                               MLIRContext *context) {
  patterns.add<ScaleAfterReduceRows>(context);
}
