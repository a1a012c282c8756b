//===- ForwardKernel.h - Attention forward as an mma.sync kernel -*- C++ -*-===//

#ifndef FA_LIB_CONVERSION_FORWARDKERNEL_H
#define FA_LIB_CONVERSION_FORWARDKERNEL_H

#include "KernelConfig.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Builders.h"

namespace mlir {
namespace fa {

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
