//===- ForwardKernel.h - Attention forward as an mma.sync kernel -*- C++ -*-===//

#ifndef FA_LIB_CONVERSION_FORWARDKERNEL_H
#define FA_LIB_CONVERSION_FORWARDKERNEL_H

#include "KernelConfig.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Builders.h"

namespace mlir {
namespace fa {

/// FA2's shape choice: 32 rows per warp for blockQ >= 128 and head dims up to
/// 128, else 16.
int64_t defaultRowsPerWarp(int64_t blockQ, int64_t headDim, int64_t headDimV);

/// Checks the limits of the forward kernel; empty string when supported.
std::string checkForwardKernelConfig(const AttentionKernelConfig &config);

/// Emits the kernel into `module` and returns it, with the launch
/// attributes (fa.grid, fa.block, fa.shared_bytes, ...) set.
gpu::GPUFuncOp emitForwardKernel(OpBuilder &b, Location loc,
                                 gpu::GPUModuleOp module,
                                 const AttentionKernelConfig &config);

} // namespace fa
} // namespace mlir

#endif // FA_LIB_CONVERSION_FORWARDKERNEL_H
