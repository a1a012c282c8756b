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

/// Emits the backward's main mma.sync kernel into `module`:
///   NAME (q, k, v, do, lse, delta, dq_acc, dk, dv): one block per
///        (KV block, KV head, batch); dK, dV in registers; dQ by f32
///        atomic adds into dq_acc
/// with its launch attributes (fa.kind, fa.grid, fa.block, ...). The row
/// kernels around it (NAME_pre, NAME_post) are BackwardRowKernels.h's.
void emitBackwardMainKernel(OpBuilder &b, Location loc, gpu::GPUModuleOp module,
                            const AttentionKernelConfig &config);

} // namespace fa
} // namespace mlir

#endif // FA_LIB_CONVERSION_BACKWARDKERNEL_H
