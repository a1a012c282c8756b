//===- PingPong.cpp - Warpgroups take turns on the tensor cores -----------===//
//
// Two compute warpgroups that run the same loop contend for the tensor
// cores and, left alone, drift into issuing their products together and
// then computing their softmax together, leaving the tensor cores idle.
// Ordering each product as a turn passed around the warpgroups through
// named barriers overlaps one warpgroup's softmax with the others' products
// (FlashAttention 3, section 3.1). Passes.td has the contract.
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FAGPU/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir {
namespace fagpu {
#define GEN_PASS_DEF_PINGPONG
#include "fa/Dialect/FAGPU/Transforms/Passes.h.inc"
} // namespace fagpu
} // namespace mlir

using namespace mlir;
using namespace mlir::fagpu;

namespace {

/// Whether two asynchronous products make one turn: only the computation
/// that fagpu-overlap-softmax{rescale-before-product} runs under the first
/// (ordered after its issue by fagpu.after_issue, then pure ops) stands
/// between them.
bool issuedTogether(MmaOp first, MmaOp second) {
  if (first->getBlock() != second->getBlock())
    return false;
  for (Operation *op = first->getNextNode(); op != second;
       op = op->getNextNode())
    if (!op || !(isa<AfterIssueOp>(op) || isPure(op)))
      return false;
  return true;
}

/// A named barrier joins the warpgroup that waits and the one that arrives.
constexpr int64_t kTurnThreads = 256;

struct PingPongPass : fagpu::impl::PingPongBase<PingPongPass> {
  void runOnOperation() override {
    getOperation().walk([](WarpSpecializeOp split) {
      // A transposition that the compute warpgroups do together (a barrier
      // of all of them) inside one's turn would never be reached by the
      // other: no turns then.
      bool transposesTogether =
          split.getConsumers()
              .walk([](TransposeSharedOp) { return WalkResult::interrupt(); })
              .wasInterrupted();
      if (split.getConsumerWarpgroups() >= 2 && !transposesTogether)
        takeTurns(split);
    });
  }

  static void takeTurns(WarpSpecializeOp split) {
    Block &consumers = split.getConsumers().front();
    SmallVector<MmaOp> products;
    Operation *lastLoop = nullptr; // the last top-level op with a product
    consumers.walk([&](MmaOp mma) {
      products.push_back(mma);
      Operation *top = consumers.findAncestorOpInBlock(*mma);
      if (!lastLoop || lastLoop->isBeforeInBlock(top))
        lastLoop = top;
    });
    if (products.empty())
      return;
    int64_t groups = split.getConsumerWarpgroups();
    Location loc = split.getLoc();
    OpBuilder b = OpBuilder::atBlockBegin(&consumers);
    auto c = [&](int64_t v) {
      return arith::ConstantIndexOp::create(b, loc, v);
    };
    // Barrier 0 is the block's; warpgroup w's turn is barrier 1 + w.
    Value group = WarpgroupIdOp::create(b, loc, b.getIndexType());
    Value mine = arith::AddIOp::create(b, loc, group, c(1));
    // One op per statement (argument evaluation order is unspecified), in
    // the order gcc's right-to-left evaluation gave.
    Value one = c(1);
    Value count = c(groups);
    Value after = arith::AddIOp::create(b, loc, group, c(1));
    Value next = arith::AddIOp::create(
        b, loc, arith::RemUIOp::create(b, loc, after, count), one);
    auto onGroup = [&](int64_t which, auto body) {
      Value is = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, group,
                                       c(which));
      auto branch = scf::IfOp::create(b, loc, is);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(branch.thenBlock());
      body();
    };
    onGroup(groups - 1,
            [&] { NamedBarrierArriveOp::create(b, loc, c(1), kTurnThreads); });
    // A turn is the issue of a product, or of adjacent asynchronous ones
    // (QKᵀ of block j with P·V of block j - 1): they run while the next
    // warpgroup issues its own. A product that was synchronous becomes
    // asynchronous, waited for after the hand-off.
    for (size_t i = 0; i < products.size();) {
      MmaOp first = products[i], last = first;
      while (last.getAsync() && i + 1 < products.size() &&
             products[i + 1].getAsync() &&
             issuedTogether(last, products[i + 1]))
        last = products[++i];
      ++i;
      b.setInsertionPoint(first);
      NamedBarrierSyncOp::create(b, loc, mine, kTurnThreads);
      b.setInsertionPointAfter(last);
      NamedBarrierArriveOp::create(b, loc, next, kTurnThreads);
      if (first.getAsync())
        continue;
      first.setAsync(true);
      Value ready = MmaWaitOp::create(b, loc, first.getType(),
                                      first.getResult(), uint64_t(0));
      first.getResult().replaceAllUsesExcept(ready, ready.getDefiningOp());
    }
    b.setInsertionPointAfter(lastLoop);
    onGroup(0, [&] { NamedBarrierSyncOp::create(b, loc, c(1), kTurnThreads); });
  }
};

} // namespace
