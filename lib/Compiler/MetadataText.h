//===- MetadataText.h - The .meta text of a compiled problem ----*- C++ -*-===//

#ifndef FA_LIB_COMPILER_METADATATEXT_H
#define FA_LIB_COMPILER_METADATATEXT_H

#include "fa/Compiler/Compiler.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "llvm/ADT/StringMap.h"

#include <nlohmann/json.hpp>

#include <string>

namespace mlir::fa {

/// A .meta file's JSON object; its keys stay in the order written.
using MetadataJson = nlohmann::ordered_json;

/// `meta` as .meta text: one key per line (an array of scalars on its
/// key's line), two spaces of indent per level.
std::string metadataText(const MetadataJson &meta);

/// The .meta JSON for the runtime (docs/runtime.md), from the kernels'
/// attributes: the problem, then the launch of the main kernel and, for the
/// backward, of its "pre" (delta, zeroed dq_acc) and "post" (dq cast)
/// kernels. `kernels` maps `fa.kind` to the kernel. Fails, with an error on
/// the kernel, where a runtime size is not one the runtime can supply.
/// Each kernel with runtime sizes gets their names (fa.runtime_size_names),
/// which the lowering's fa-pass-runtime-sizes follows: one kernel
/// parameter per distinct name, as the `args` arrays list them.
FailureOr<std::string>
kernelMetadata(const llvm::StringMap<gpu::GPUFuncOp> &kernels,
               const AttentionConfig &options);

/// The .meta of a quantization's kernels (fa-convert-quantize-to-gpu):
/// "kind": "quantize", the input's shape and dtype, the rotation's seed, the
/// scale kernel's launch (args x,amax,out,descale) and, as "pre", the amax
/// kernel's (args x,amax), which the launcher runs after zeroing amax.
FailureOr<std::string>
quantizeMetadata(const llvm::StringMap<gpu::GPUFuncOp> &kernels,
                 StringRef chip);

} // namespace mlir::fa

#endif // FA_LIB_COMPILER_METADATATEXT_H
