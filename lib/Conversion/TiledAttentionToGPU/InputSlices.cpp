//===- InputSlices.cpp - The tiled forward's inputs, traced --------------===//

#include "InputSlices.h"

#include "KernelConfig.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/SetVector.h"

#include "fa/Dialect/FA/IR/FAOps.h"


using namespace mlir;
using namespace mlir::fa;

/// The function arguments that rows of the slices of input `role` are
/// loaded from (tensor.extract), in a stable order.
static SetVector<BlockArgument>
rowSources(func::FuncOp func, const DenseMap<Operation *, unsigned> &roles,
           unsigned role) {
  SetVector<Operation *> slice;
  for (auto [op, r] : roles) {
    if (r != role)
      continue;
    BackwardSliceOptions options;
    options.inclusive = false;
    // Loop and block indices are not where a sequence starts.
    options.omitBlockArguments = true;
    for (Value offset : cast<tensor::ExtractSliceOp>(op).getOffsets())
      (void)getBackwardSlice(offset, &slice, options);
  }
  SetVector<BlockArgument> sources;
  for (Operation *op : slice)
    if (auto extract = dyn_cast<tensor::ExtractOp>(op))
      if (auto arg = dyn_cast<BlockArgument>(extract.getTensor());
          arg && arg.getOwner() == &func.front())
        sources.insert(arg);
  return sources;
}

FailureOr<SmallVector<BlockArgument, 2>>
mlir::fa::traceSequenceStarts(func::FuncOp func,
                              const DenseMap<Operation *, unsigned> &roles,
                              StringRef pass) {
  SetVector<BlockArgument> query = rowSources(func, roles, 0);
  SetVector<BlockArgument> key = rowSources(func, roles, 1);
  if (query.empty() && key.empty())
    return SmallVector<BlockArgument, 2>();
  if (query.size() != 1 || key.size() != 1)
    return func.emitError()
           << pass
           << ": the rows of q and k must each start at offsets read from one "
              "argument (cu_seqlens); found "
           << query.size() << " and " << key.size();
  return SmallVector<BlockArgument, 2>{query.front(), key.front()};
}

FailureOr<InputSlices> mlir::fa::traceInputSlices(func::FuncOp func) {
  InputSlices inputs;
  inputs.types.resize(kNumInputs);
  WalkResult walk = func.walk([&](OnlineAttentionOp tile) {
    if (!tile.isTile())
      return WalkResult::advance();
    Value operands[kNumInputs] = {tile.getQuery(), tile.getKey(),
                                  tile.getValue()};
    for (auto [role, operand] : llvm::enumerate(operands)) {
      tensor::ExtractSliceOp slice = sliceOfTile(operand);
      auto arg = slice ? dyn_cast<BlockArgument>(slice.getSource()) : nullptr;
      if (!arg || arg.getOwner() != &func.front()) {
        tile.emitError() << "fa-convert-tiled-attention-to-fagpu: operand #"
                         << role
                         << " is not a slice of the function's arguments";
        return WalkResult::interrupt();
      }
      inputs.roles[slice] = role;
      inputs.types[role] = arg.getType();
    }
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  FailureOr<SmallVector<BlockArgument, 2>> starts = traceSequenceStarts(
      func, inputs.roles, "fa-convert-tiled-attention-to-fagpu");
  if (failed(starts))
    return failure();
  inputs.sequenceStarts = std::move(*starts);
  return inputs;
}
