//===- SkipUnitRescales.cpp - O's rescale only where a factor is not 1 ----===//
//
// With a rescale threshold (fa.online_attention's rescale_threshold) a row
// keeps its running max until a score passes it by more than the
// threshold, so after the first few KV blocks almost every rescale factor
// 2^(m - m') is exactly 1 and O's rescale (a multiply a register: 128 a
// thread and KV block at head dim 256) changes nothing. This pass guards
// each such multiply by whether some factor of the warp's rows is not 1
// (fagpu.warp_any): a warp whose rows all kept their max skips it, and
// since x * 1 = x the result is the same either way. Passes.td has the
// contract.
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FAGPU/IR/FAGPU.h"
#include "fa/Dialect/FAGPU/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace mlir {
namespace fagpu {
#define GEN_PASS_DEF_SKIPUNITRESCALES
#include "fa/Dialect/FAGPU/Transforms/Passes.h.inc"
} // namespace fagpu
} // namespace mlir

using namespace mlir;
using namespace mlir::fagpu;

namespace {

/// Whether `tile` is a KV loop's accumulator: carried by the loop, or a
/// product's result waited for in it (P·V of the block before, under the
/// softmax overlap).
bool isLoopAccumulator(Value tile) {
  if (tile.getDefiningOp<MmaWaitOp>())
    return true;
  auto arg = dyn_cast<BlockArgument>(tile);
  return arg && isa<scf::ForOp>(arg.getOwner()->getParentOp());
}

/// The row factors of `mul` when it scales a loop's accumulator by rescale
/// factors, 2^x broadcast along the rows; with the index of the operand it
/// scales. The first KV block's rescale (of a zero accumulator, before the
/// KV loop) is left as it is.
std::optional<std::pair<Value, unsigned>> rescaleOf(arith::MulFOp mul) {
  if (!getLayout(mul.getType()))
    return std::nullopt;
  for (unsigned i = 0; i < 2; ++i) {
    auto expand = mul->getOperand(i).getDefiningOp<ExpandRowsOp>();
    if (!expand || !expand.getSource().getDefiningOp<math::Exp2Op>() ||
        !isLoopAccumulator(mul->getOperand(1 - i)))
      continue;
    return std::make_pair(expand.getSource(), 1 - i);
  }
  return std::nullopt;
}

/// Moves the conversions of `ifOp`'s block that come before it and feed
/// only the block's terminator (the loop's next P: truncf, convert_layout)
/// to just before the terminator, past the branch. Else LLVM sinks their
/// last steps (the e4m3 words' packing) into the block after the branch,
/// away from the conversions ptxas fuses them with (one PRMT a word).
void sinkConversionsPastBranch(scf::IfOp ifOp) {
  Block *block = ifOp->getBlock();
  Operation *terminator = block->getTerminator();
  llvm::SmallPtrSet<Operation *, 32> sunk;
  SmallVector<Operation *> before;
  for (Operation &op : *block) {
    if (&op == ifOp.getOperation())
      break;
    before.push_back(&op);
  }
  for (Operation *op : llvm::reverse(before)) {
    if (!isa<arith::TruncFOp, ConvertLayoutOp>(op))
      continue;
    bool feedsOnlyTail = llvm::all_of(op->getUsers(), [&](Operation *user) {
      return user == terminator || sunk.contains(user);
    });
    if (!feedsOnlyTail || op->use_empty())
      continue;
    sunk.insert(op);
  }
  for (Operation *op : before)
    if (sunk.contains(op))
      op->moveBefore(terminator);
}

void guard(arith::MulFOp mul, Value factors, unsigned scaledIndex) {
  OpBuilder b(mul);
  Location loc = mul.getLoc();
  auto factorType = cast<RankedTensorType>(factors.getType());
  Value one = arith::ConstantOp::create(
      b, loc, factorType,
      DenseElementsAttr::get(factorType, b.getF32FloatAttr(1.0f)));
  Value notOne =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, factors, one);
  // Expected false: else LLVM multiplies anyway and selects.
  Value any = WarpAnyOp::create(b, loc, b.getI1Type(), notOne,
                                /*rarely=*/true);
  Value scaled = mul->getOperand(scaledIndex);
  auto ifOp = scf::IfOp::create(b, loc, mul.getType(), any,
                                /*withElseRegion=*/true);
  mul->replaceAllUsesWith(ifOp.getResults());
  mul->moveBefore(&ifOp.getThenRegion().front(),
                  ifOp.getThenRegion().front().end());
  OpBuilder thenBuilder = ifOp.getThenBodyBuilder();
  scf::YieldOp::create(thenBuilder, loc, mul.getResult());
  OpBuilder elseBuilder = ifOp.getElseBodyBuilder();
  scf::YieldOp::create(elseBuilder, loc, scaled);
  sinkConversionsPastBranch(ifOp);
}

struct SkipUnitRescalesPass
    : fagpu::impl::SkipUnitRescalesBase<SkipUnitRescalesPass> {
  void runOnOperation() override {
    SmallVector<std::pair<arith::MulFOp, std::pair<Value, unsigned>>> work;
    getOperation().walk([&](arith::MulFOp mul) {
      if (auto rescale = rescaleOf(mul))
        work.emplace_back(mul, *rescale);
    });
    for (auto [mul, rescale] : work)
      guard(mul, rescale.first, rescale.second);
  }
};

} // namespace
