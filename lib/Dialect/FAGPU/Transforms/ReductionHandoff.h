//===- ReductionHandoff.h - dQ reductions to the producer ----*- C++ -*-===//
//
// fagpu-warp-specialize's `hand-off-reductions`: the copying loops store a
// tile (the backward's dQ) into a staging tile and add it into global
// memory through TMA; here the staging tile becomes a two-stage ring that
// the compute warps fill and the producer drains, so that the compute warps
// neither issue the reductions nor wait for the copy engine's reads.
//
//===----------------------------------------------------------------------===//

#ifndef FA_LIB_DIALECT_FAGPU_TRANSFORMS_REDUCTIONHANDOFF_H
#define FA_LIB_DIALECT_FAGPU_TRANSFORMS_REDUCTIONHANDOFF_H

#include "KernelCopies.h"

#include "mlir/IR/IRMapping.h"

#include <optional>

namespace mlir {
namespace fagpu {

/// Stages of the staging tile's ring: the compute warps fill one while the
/// producer drains the other.
constexpr int64_t kHandoffStages = 2;

/// A deterministic reduction's turn: the wait before its store, the wait
/// for its sums and the pass after it (fagpu.wait_turn, ...).
struct ReductionTurn {
  WaitTurnOp wait;
  WaitGlobalSumsOp sums;
  PassTurnOp pass;
};

/// What the hand-off moves, one store and one reduction (and its turn, if
/// the sums are deterministic) per copying loop.
struct ReductionHandoff {
  AllocSharedOp staging;
  SmallVector<StoreToSharedOp> stores;
  SmallVector<TmaReduceOp> reductions;
  SmallVector<std::optional<ReductionTurn>> turns;
  /// Whether a turn passes only after the next one is taken
  /// (fagpu-warp-specialize's `pipeline-turns`).
  bool pipelineTurns = false;
  /// Whether these are all the kernel's reductions (the compute warps then
  /// have no copy-engine reads to wait for).
  bool takesAllReductions = false;
  /// Filled in by the split: the ring, and the first of its barriers
  /// ([full: stage s][empty: stage s]).
  Value ring;
  int64_t firstBarrier = 0;

  /// Shared bytes the ring adds to the staging tile's own, and barriers.
  int64_t extraSharedBytes();
  int64_t fullBarrier(int64_t stage) const { return firstBarrier + stage; }
  int64_t emptyBarrier(int64_t stage) const {
    return firstBarrier + kHandoffStages + stage;
  }
};

/// The staging tile whose store and TMA reduction every loop of `copies`
/// makes once per iteration (in its body, the store first), and that
/// nothing else uses; none if there is no such tile. An error on a loop
/// whose reduction's coordinates hang on values the loop carries (the
/// producer recomputes them from the induction variable).
FailureOr<std::optional<ReductionHandoff>>
findReductionHandoff(gpu::GPUFuncOp kernel, const KernelCopies &copies);

/// Values the producer needs from before the loops to recompute the
/// reductions' coordinates: `share` is called on each.
void shareHandoffOperands(ReductionHandoff &handoff,
                          ArrayRef<scf::ForOp> loops,
                          function_ref<void(Value)> share);

/// In the producer's copy `produce` of copying loop `index` (`loop`),
/// after the loads: the reduction of the previous iteration (ring counter
/// `it` - 1), if any; and after `produce`, that of its last iteration.
/// `countBegin` is the counter `produce` starts from, `map` the producer's
/// values for the loops' operands (the induction variable excluded).
void emitProducerHandoffs(OpBuilder &b, ReductionHandoff &handoff,
                          size_t index, scf::ForOp loop, scf::ForOp produce,
                          Value countBegin, const IRMapping &map,
                          Value barriers);

/// The compute side of loop `index` (`loop`, carrying the ring counter as
/// its last iteration argument): each store waits for its stage to be
/// empty, writes it and tells the producer; the reduction, its turn and the
/// waits for the copy engine leave the loop.
void rewriteHandoffConsumer(OpBuilder &b, ReductionHandoff &handoff,
                            size_t index, scf::ForOp loop, Value barriers);

/// Moves what emitProducerHandoffs added to `split`'s producer region into
/// its reducer region (the producer warpgroup's second warp, FA3's dQ
/// writer): the producer keeps the loads, the reducer the same loops with
/// the reductions only, so that waiting for a tile or a turn never delays a
/// load.
void moveHandoffsToReducer(WarpSpecializeOp split);

/// Marks `op` as a part of the hand-off's producer side.
void markHandoffOp(Operation *op);

} // namespace fagpu
} // namespace mlir

#endif // FA_LIB_DIALECT_FAGPU_TRANSFORMS_REDUCTIONHANDOFF_H
