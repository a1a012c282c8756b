//===- KernelPipeline.h - attention op -> GPU kernel passes -----*- C++ -*-===//

#ifndef FA_LIB_COMPILER_KERNELPIPELINE_H
#define FA_LIB_COMPILER_KERNELPIPELINE_H

#include "fa/Compiler/Compiler.h"

#include "mlir/Pass/PassManager.h"

namespace mlir {
namespace fa {

/// Adds to `pm` the passes from an attention function (fa.attention or
/// fa.attention_grad) to its GPU kernels for the problem and choices of
/// `effective`; `rowsPerWarp` is the mma.sync path's.
void buildKernelPipeline(PassManager &pm, const AttentionConfig &effective,
                         int64_t rowsPerWarp);

} // namespace fa
} // namespace mlir

#endif // FA_LIB_COMPILER_KERNELPIPELINE_H
