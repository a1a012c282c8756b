//===- MetadataText.h - The .meta text of a compiled problem ----*- C++ -*-===//

#ifndef FA_LIB_COMPILER_METADATATEXT_H
#define FA_LIB_COMPILER_METADATATEXT_H

#include "fa/Compiler/Compiler.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "llvm/ADT/StringMap.h"

#include <string>

namespace mlir::fa {

/// `key = value` lines for the runtime (docs/runtime.md), from the kernels'
/// attributes: the problem, then the launch of the main kernel and, for the
/// backward, of its `pre_` (delta, zeroed dq_acc) and `post_` (dq cast)
/// kernels. `kernels` maps `fa.kind` to the kernel. Fails, with an error on
/// the kernel, where a runtime size is not one the runtime can supply.
/// Each kernel with runtime sizes gets their names (fa.runtime_size_names),
/// which the lowering's fa-pass-runtime-sizes follows: one kernel
/// parameter per distinct name, as the `args` lines list them.
FailureOr<std::string>
kernelMetadata(const llvm::StringMap<gpu::GPUFuncOp> &kernels,
               const AttentionConfig &options);

/// The .meta of a quantization's kernels (fa-convert-quantize-to-gpu):
/// kind = quantize, the input's shape and dtype, the rotation's seed, the
/// scale kernel's launch (args x,amax,out,descale) and, as `pre_`, the
/// amax kernel's (args x,amax), which the launcher runs after zeroing amax.
FailureOr<std::string>
quantizeMetadata(const llvm::StringMap<gpu::GPUFuncOp> &kernels,
                 StringRef chip);

} // namespace mlir::fa

#endif // FA_LIB_COMPILER_METADATATEXT_H
