//===- ConvertToOnlineAttention.cpp - fa.attention -> online form ---------===//

#include "fa/Dialect/FA/IR/FAOps.h"
#include "fa/Transforms/Passes.h"

#include "fa/Transforms/TilingUtils.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <limits>

namespace mlir {
namespace fa {
#define GEN_PASS_DEF_CONVERTTOONLINEATTENTION
#include "fa/Transforms/Passes.h.inc"
} // namespace fa
} // namespace mlir

using namespace mlir;
using namespace mlir::fa;

namespace {

struct AttentionToOnline : OpRewritePattern<AttentionOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AttentionOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    SmallVector<OpFoldResult> outSizes = forwardResultSizes(
        rewriter, loc, op.getOutput().getType(), op.getQuery(), op.getValue());
    SmallVector<OpFoldResult> rowSizes = forwardResultSizes(
        rewriter, loc, op.getLse().getType(), op.getQuery(), op.getValue());

    // FP8: q's and k's descales scale the scores, v's the output.
    size_t scoreDescales = op.getDescales().empty() ? 0 : 2;
    Value valueDescale =
        op.getDescales().empty() ? Value() : op.getDescales()[2];
    Type f32 = rewriter.getF32Type();
    Value acc = createFilledTensor(rewriter, loc, outSizes, f32, 0.0);
    Value max = createFilledTensor(rewriter, loc, rowSizes, f32,
                                   -std::numeric_limits<double>::infinity());
    Value sum = createFilledTensor(rewriter, loc, rowSizes, f32, 0.0);
    auto online = OnlineAttentionOp::create(
        rewriter, loc, acc.getType(), max.getType(), sum.getType(),
        op.getQuery(), op.getKey(), op.getValue(), acc, max, sum,
        op.getDescales().take_front(scoreDescales),
        /*tile_position=*/ValueRange{}, op.getCuSeqlensQ(), op.getCuSeqlensK(),
        op.getMaxSeqlenQ(), op.getMaxSeqlenK(),
        rewriter.getF64FloatAttr(op.getEffectiveScale()), op.getCausalAttr(),
        op.getWindowAttr(), op.getSoftcapAttr(), /*unmasked=*/nullptr,
        /*keys_in_bounds=*/nullptr, /*rescale_threshold=*/nullptr);
    rewriter.replaceOpWithNewOp<NormalizeOp>(
        op, op.getOutput().getType(), op.getLse().getType(),
        online.getResultAcc(), online.getResultMax(), online.getResultSum(),
        valueDescale);
    return success();
  }
};

struct ConvertToOnlineAttentionPass
    : fa::impl::ConvertToOnlineAttentionBase<ConvertToOnlineAttentionPass> {
  void runOnOperation() override {
    Operation *root = getOperation();
    RewritePatternSet patterns(&getContext());
    patterns.add<AttentionToOnline>(&getContext());
    if (failed(applyPatternsGreedily(root, std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
