//===- RegisterBudget.cpp - setmaxnreg of a warp-specialized block --------===//

#include "RegisterBudget.h"

#include <algorithm>

using namespace mlir;

FailureOr<int64_t> mlir::fagpu::consumerRegisterBudget(Operation *op,
                                                       int64_t producer,
                                                       int64_t consumer,
                                                       int64_t groups) {
  constexpr int64_t kRegisterFile = 65536, kThreads = 128;
  if (consumer == 0)
    consumer = std::min<int64_t>(
        240, (kRegisterFile / kThreads - producer) / groups / 8 * 8);
  if (producer < 24 || consumer > 256 || producer % 8 || consumer % 8 ||
      consumer < 24 ||
      kThreads * (producer + groups * consumer) > kRegisterFile)
    return op->emitError()
           << "fagpu-warp-specialize: setmaxnreg " << producer
           << " (producer) and " << consumer << " (" << groups
           << " compute warpgroups) must be multiples of 8 in [24, 256] "
              "that fit the 64K-register file";
  return consumer;
}
