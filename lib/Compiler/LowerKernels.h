//===- LowerKernels.h - A module's GPU kernels to PTX, cubin, LLVM IR -*- C++
//-*-===//

#ifndef FA_LIB_COMPILER_LOWERKERNELS_H
#define FA_LIB_COMPILER_LOWERKERNELS_H

#include "fa/Compiler/Compiler.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"

#include <string>

namespace mlir::fa {

/// A compile's failure: `what`, then the collected diagnostics.
llvm::Error compileError(const Twine &what, StringRef diagnostics);

/// Lowers the module's gpu.module (attention kernels from the GPU
/// conversion, or kernels written at the fagpu tile level) to what `emit`
/// asks for: MLIR text, LLVM IR, PTX or a cubin.
llvm::Expected<std::string> lowerKernels(ModuleOp module, MLIRContext &context,
                                         const AttentionConfig &options,
                                         EmitKind emit,
                                         const std::string &diagnostics);

/// The kernels a compile made, by their `fa.kind` (forward, backward,
/// backward_pre, quantize, ...).
llvm::StringMap<gpu::GPUFuncOp> kernelsByKind(ModuleOp module);

} // namespace mlir::fa

#endif // FA_LIB_COMPILER_LOWERKERNELS_H
