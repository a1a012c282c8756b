//===- RegisterBudget.h - setmaxnreg of a warp-specialized block -*- C++ -*-===//
//
// A warp-specialized block shares the SM's 64K-register file between its
// producer warpgroup and its compute warpgroups (setmaxnreg moves registers
// between them at run time): the compute warpgroups get what is left.
//
//===----------------------------------------------------------------------===//

#ifndef FA_LIB_DIALECT_FAGPU_TRANSFORMS_REGISTERBUDGET_H
#define FA_LIB_DIALECT_FAGPU_TRANSFORMS_REGISTERBUDGET_H

#include "mlir/IR/Operation.h"
#include "mlir/Support/LLVM.h"

namespace mlir {
namespace fagpu {

/// The compute warpgroups' setmaxnreg beside a producer warpgroup at
/// `producer`: `consumer` when non-zero, else what the register file leaves
/// them, at most 240 (FA3: two warpgroups 240, three 160). A budget that
/// is not multiples of 8 in [24, 256] or does not fit the register file is
/// an error on `op`.
FailureOr<int64_t> consumerRegisterBudget(Operation *op, int64_t producer,
                                          int64_t consumer, int64_t groups);

} // namespace fagpu
} // namespace mlir

#endif // FA_LIB_DIALECT_FAGPU_TRANSFORMS_REGISTERBUDGET_H
