//===- TurnOps.cpp - fagpu.wait_turn and fagpu.pass_turn ------------------===//
//
// The verifiers of the ops that order a section across blocks (the
// deterministic backward's dQ sums).
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FAGPU/IR/FAGPU.h"

using namespace mlir;
using namespace mlir::fagpu;

/// One index per dimension of the counters.
static LogicalResult verifyCounterIndices(Operation *op, Value counters,
                                          ValueRange indices) {
  int64_t rank = cast<MemRefType>(counters.getType()).getRank();
  if (static_cast<int64_t>(indices.size()) != rank)
    return op->emitOpError() << "takes " << rank << " indices into its "
                             << "counters, got " << indices.size();
  return success();
}

LogicalResult WaitTurnOp::verify() {
  return verifyCounterIndices(*this, getCounters(), getIndices());
}

LogicalResult PassTurnOp::verify() {
  return verifyCounterIndices(*this, getCounters(), getIndices());
}
