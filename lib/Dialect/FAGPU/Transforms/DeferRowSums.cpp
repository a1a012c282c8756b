//===- DeferRowSums.cpp - Running row sums kept in per-lane parts ---------===//
//
// The online softmax's running row sum l' = alpha * l + rowsum(P) needs
// the lanes that split a row to exchange their sums (two shuffles a row at
// the mma.sync layouts) at every KV block, although only the sum after the
// last block is read. Scaling each lane's part by alpha scales the sum, so
// the loop can carry the parts (fagpu.accumulate_rows) and add them across
// the lanes once after it (fagpu.complete_rows), as FlashAttention 2 does.
// Passes.td has the contract.
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FAGPU/IR/FAGPU.h"
#include "fa/Dialect/FAGPU/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Matchers.h"

namespace mlir {
namespace fagpu {
#define GEN_PASS_DEF_DEFERROWSUMS
#include "fa/Dialect/FAGPU/Transforms/Passes.h.inc"
} // namespace fagpu
} // namespace mlir

using namespace mlir;
using namespace mlir::fagpu;

namespace {

/// A loop-carried row sum's update l' = alpha * l + reduce_rows sum (P).
struct RowSumUpdate {
  arith::AddFOp add;
  arith::MulFOp scale;
  ReduceRowsOp sum;
  Value alpha;
};

RowsLayoutAttr wholeRows(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  auto rows =
      tensor ? dyn_cast_or_null<RowsLayoutAttr>(tensor.getEncoding()) : nullptr;
  return rows && !rows.getPartial() ? rows : nullptr;
}

/// The update of iteration argument `arg` if the loop yields it as above
/// and nothing else reads `arg` or the update's parts.
std::optional<RowSumUpdate> updateOf(BlockArgument arg, Value yielded) {
  auto add = yielded.getDefiningOp<arith::AddFOp>();
  if (!add || !arg.hasOneUse())
    return std::nullopt;
  for (unsigned i = 0; i < 2; ++i) {
    auto sum = add->getOperand(i).getDefiningOp<ReduceRowsOp>();
    auto scale = add->getOperand(1 - i).getDefiningOp<arith::MulFOp>();
    if (!sum || sum.getKind() != ReductionKind::sum || !scale ||
        !sum->hasOneUse() || !scale->hasOneUse())
      continue;
    for (unsigned j = 0; j < 2; ++j)
      if (scale->getOperand(j) == arg)
        return RowSumUpdate{add, scale, sum, scale->getOperand(1 - j)};
  }
  return std::nullopt;
}

/// The parts the sums start from: zero, or an earlier loop's parts.
Value partsOfInit(OpBuilder &b, Value init, RankedTensorType parts) {
  if (auto complete = init.getDefiningOp<CompleteRowsOp>())
    return complete.getSource();
  if (!matchPattern(init, m_AnyZeroFloat()))
    return nullptr;
  return arith::ConstantOp::create(b, init.getLoc(), parts,
                                   b.getZeroAttr(parts));
}

/// Rewrites loop's row sums at `index` to parts; false where they are not
/// a running row sum that starts from zero or from parts.
bool deferRowSums(scf::ForOp loop, unsigned index) {
  Value init = loop.getInitArgs()[index];
  RowsLayoutAttr rows = wholeRows(init.getType());
  if (!rows)
    return false;
  BlockArgument arg = loop.getRegionIterArgs()[index];
  auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
  std::optional<RowSumUpdate> update = updateOf(arg, yield->getOperand(index));
  if (!update)
    return false;
  auto whole = cast<RankedTensorType>(init.getType());
  auto parts = RankedTensorType::get(whole.getShape(), whole.getElementType(),
                                     RowsLayoutAttr::get(loop.getContext(),
                                                         rows.getParent(),
                                                         /*partial=*/true));
  OpBuilder b(loop);
  Value partsInit = partsOfInit(b, init, parts);
  if (!partsInit)
    return false;

  loop.getInitArgsMutable()[index].assign(partsInit);
  arg.setType(parts);
  b.setInsertionPoint(update->add);
  Value next = AccumulateRowsOp::create(b, update->add.getLoc(), parts, arg,
                                        update->alpha, update->sum.getSource());
  update->add.replaceAllUsesWith(next);
  update->add.erase();
  update->scale.erase();
  update->sum.erase();

  OpResult result = loop->getResult(index);
  result.setType(parts);
  b.setInsertionPointAfter(loop);
  auto complete = CompleteRowsOp::create(b, loop.getLoc(), whole, result);
  result.replaceAllUsesExcept(complete.getResult(), complete);
  if (auto earlier = init.getDefiningOp<CompleteRowsOp>();
      earlier && earlier->use_empty())
    earlier.erase();
  return true;
}

struct DeferRowSumsPass : fagpu::impl::DeferRowSumsBase<DeferRowSumsPass> {
  void runOnOperation() override {
    // Loops in program order: a loop whose sums start from an earlier
    // loop's finds that loop's parts.
    SmallVector<scf::ForOp> loops;
    getOperation()->walk<WalkOrder::PreOrder>(
        [&](scf::ForOp loop) { loops.push_back(loop); });
    for (scf::ForOp loop : loops)
      for (unsigned i = 0; i < loop.getNumRegionIterArgs(); ++i)
        deferRowSums(loop, i);
  }
};

} // namespace
