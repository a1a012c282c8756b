//===- SinkPastLoops.cpp - Values computed where a loop no longer holds them ===//
//
// A persistent kernel computes each tile's coordinates at the top of its
// tile loop; the output offsets among them are used only by the epilogue,
// after the KV loop, so they stay live through it. In a block per tile
// they are block ids that ptxas re-reads from special registers anywhere,
// but here they come from the round counter and take registers the KV
// loop needs (hd128, 176-key blocks: a spill in the loop, -8 % against the
// block-per-tile kernel on the H200). Moving each such pure op to just
// before its first use, past the loops between, ends those live ranges.
// Passes.td has the contract.
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FAGPU/Transforms/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir {
namespace fagpu {
#define GEN_PASS_DEF_SINKPASTLOOPS
#include "fa/Dialect/FAGPU/Transforms/Passes.h.inc"
} // namespace fagpu
} // namespace mlir

using namespace mlir;
using namespace mlir::fagpu;

namespace {

/// The op of `block` that holds `user` (itself or an ancestor).
Operation *ancestorIn(Block &block, Operation *user) {
  return block.findAncestorOpInBlock(*user);
}

/// Where `op` can move: just before the first op of its block that uses
/// it, when a loop lies between the two; null otherwise.
Operation *sinkTarget(Operation &op) {
  if (op.getNumResults() == 0 || op.getNumRegions() != 0 ||
      !isMemoryEffectFree(&op) || op.hasTrait<OpTrait::ConstantLike>())
    return nullptr;
  Block &block = *op.getBlock();
  Operation *first = nullptr;
  for (Operation *user : op.getUsers()) {
    Operation *holder = ancestorIn(block, user);
    if (!holder)
      return nullptr; // used in another block: leave it
    if (!first || holder->isBeforeInBlock(first))
      first = holder;
  }
  if (!first)
    return nullptr;
  for (Operation *it = op.getNextNode(); it != first; it = it->getNextNode())
    if (isa<LoopLikeOpInterface>(it))
      return first;
  return nullptr;
}

/// Sinks in every block under `root`, last ops first, so that an op whose
/// users have just moved follows them.
void sinkIn(Operation *root) {
  root->walk([](Block *block) {
    SmallVector<Operation *> ops;
    for (Operation &op : *block)
      ops.push_back(&op);
    for (Operation *op : llvm::reverse(ops))
      if (Operation *target = sinkTarget(*op))
        op->moveBefore(target);
  });
}

struct SinkPastLoopsPass
    : fagpu::impl::SinkPastLoopsBase<SinkPastLoopsPass> {
  void runOnOperation() override {
    for (gpu::GPUFuncOp kernel : getOperation().getOps<gpu::GPUFuncOp>())
      sinkIn(kernel);
  }
};

} // namespace
