//===- InputSlices.cpp - The tiled forward's inputs, traced --------------===//

#include "InputSlices.h"

#include "fa/Dialect/FA/IR/FAOps.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::fa;

FailureOr<InputSlices> mlir::fa::traceInputSlices(func::FuncOp func) {
  InputSlices inputs;
  inputs.types.resize(kNumInputs);
  WalkResult walk = func.walk([&](OnlineAttentionOp tile) {
    if (!tile.isTile())
      return WalkResult::advance();
    Value operands[kNumInputs] = {tile.getQuery(), tile.getKey(),
                                  tile.getValue()};
    for (auto [role, operand] : llvm::enumerate(operands)) {
      Value v = operand;
      if (auto pad = v.getDefiningOp<tensor::PadOp>())
        v = pad.getSource();
      auto slice = v.getDefiningOp<tensor::ExtractSliceOp>();
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
  return inputs;
}
