//===- BackwardKernel.h - Attention backward as mma.sync kernels -*- C++ -*-===//

#ifndef FA_LIB_CONVERSION_BACKWARDKERNEL_H
#define FA_LIB_CONVERSION_BACKWARDKERNEL_H

#include "KernelConfig.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Builders.h"

namespace mlir {
namespace fa {

/// Checks the limits of the backward kernels; empty string when supported.
/// blockKV keys per thread block, 16 per warp; blockQ query rows per step.
std::string checkBackwardKernelConfig(const AttentionKernelConfig &config);

/// Emits the three backward kernels into `module`:
///   NAME_pre  (o, do, delta, dq_acc):  delta = rowsum(dO * O), dq_acc = 0
///   NAME      (q, k, v, do, lse, delta, dq_acc, dk, dv): one block per
///             (KV block, KV head, batch); dK, dV in registers; dQ by
///             f32 atomic adds into dq_acc
///   NAME_post (dq_acc, dq): dq = cast(dq_acc)
/// each with its launch attributes (fa.kind, fa.grid, fa.block, ...).
void emitBackwardKernels(OpBuilder &b, Location loc, gpu::GPUModuleOp module,
                         const AttentionKernelConfig &config);

} // namespace fa
} // namespace mlir

#endif // FA_LIB_CONVERSION_BACKWARDKERNEL_H
