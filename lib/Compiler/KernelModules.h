//===- KernelModules.h - Compiles of modules without attention -*- C++ -*-===//

#ifndef FA_LIB_COMPILER_KERNELMODULES_H
#define FA_LIB_COMPILER_KERNELMODULES_H

#include "fa/Compiler/Compiler.h"
#include "fa/Dialect/FA/IR/FAOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <string>

namespace mlir::fa {

/// A module of hand-written GPU-tile-level kernels (a gpu.module, no
/// attention op): lowered as it is; the metadata names each kernel and its
/// dynamic shared memory.
llvm::Expected<CompiledKernel>
compileKernelModule(ModuleOp module, MLIRContext &context,
                    const AttentionConfig &options, EmitKind emit,
                    const std::string &diagnostics);

/// A function of one `fa.quantize` (`quantizations`, the module's): its two
/// kernels (fa-convert-quantize-to-gpu) and their .meta ("kind":
/// "quantize").
llvm::Expected<CompiledKernel>
compileQuantizeModule(ModuleOp module, MLIRContext &context,
                      const AttentionConfig &options, EmitKind emit,
                      const std::string &diagnostics,
                      MutableArrayRef<QuantizeOp> quantizations);

} // namespace mlir::fa

#endif // FA_LIB_COMPILER_KERNELMODULES_H
