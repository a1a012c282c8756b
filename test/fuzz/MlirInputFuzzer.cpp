//===- MlirInputFuzzer.cpp - libFuzzer target for fa-compile's .mlir input ===//
//
// Any bytes as the .mlir file given to fa-compile (or to the JIT as source):
// parsed and verified with the compiler's dialects, checked against the
// runtime's limits, and lowered by the fa-level passes to GPU kernels, as
// compileSource() does before LLVM code generation (skipped: EmitKind::MLIR,
// which prints the kernels instead; PTX costs 0.3 s and more per input).
// Never a crash, an abort or a sanitizer report; a kernel that compiles
// comes with metadata the runtime accepts (FrontEndChecks.h).
//
//===----------------------------------------------------------------------===//

#include "FrontEndChecks.h"

#include "llvm/Support/Error.h"

#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef source(reinterpret_cast<const char *>(data), size);
  // fa-compile's defaults (the file's op decides the problem), for sm_90
  // (the WGMMA forward where it applies) or sm_80 (mma.sync): the input's
  // length picks, so mutations reach both lowerings.
  mlir::fa::AttentionConfig options;
  options.chip = size % 2 ? "sm_80" : "sm_90";
  llvm::Expected<mlir::fa::CompiledKernel> kernel = mlir::fa::compileSource(
      source, "input.mlir", options, mlir::fa::EmitKind::MLIR);
  if (!kernel) {
    // Every refusal says why.
    if (llvm::toString(kernel.takeError()).empty())
      std::abort();
    return 0;
  }
  fa::fuzz::checkMetadataParses(*kernel);
  return 0;
}
