//===- HostJit.h - Compile and run FlashMLIR modules on host ----*- C++ -*-===//
//
// Test support: takes an MLIR module as text, runs it through
// fa::buildAttentionTilingPipeline and fa::buildHostLoweringPipeline, JIT
// compiles the result with mlir::ExecutionEngine (LLVM -O2, host CPU) and
// hands out the `_mlir_ciface_<name>` entry points of functions that carry
// `llvm.emit_c_interface`. Every failure (parse, pass pipeline, translation,
// JIT, lookup) comes back as an llvm::Error whose message includes the MLIR
// diagnostics; nothing here aborts.
//
//===----------------------------------------------------------------------===//

#ifndef FA_UNITTESTS_EXECUTION_HOSTJIT_H
#define FA_UNITTESTS_EXECUTION_HOSTJIT_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <memory>
#include <string>

namespace mlir {
class ExecutionEngine;
} // namespace mlir

namespace fa::hostjit {

struct CompileOptions {
  /// Block sizes of fa::buildAttentionTilingPipeline (Br, Bc).
  int64_t blockQ = 64;
  int64_t blockKV = 64;
  /// fa-tile-attention-grad's scale-grads-once.
  bool scaleGradsOnce = false;
  /// fa-tile-attention's rescale-threshold (0: the exact running max).
  double rescaleThreshold = 0;
  /// LLVM optimization level of the JIT (IR passes and code generation).
  unsigned optLevel = 2;
};

/// A `_mlir_ciface_<name>` entry point. The C interface of a function whose
/// arguments are all memrefs takes one pointer per argument, each to a
/// StridedMemRefType descriptor (mlir/ExecutionEngine/CRunnerUtils.h).
class CInterfaceFunction {
public:
  CInterfaceFunction() = default;
  CInterfaceFunction(void (*packed)(void **), std::string name)
      : packed(packed), name(std::move(name)) {}

  /// Calls the function; `args[i]` is the i-th C-interface argument (for a
  /// memref argument: a pointer to its StridedMemRefType descriptor).
  void operator()(llvm::ArrayRef<void *> args) const;

  const std::string &getName() const { return name; }

private:
  void (*packed)(void **) = nullptr;
  std::string name;
};

/// A JIT-compiled module; owns the code, so keep it alive while calling.
class HostModule {
public:
  ~HostModule();
  HostModule(const HostModule &) = delete;
  HostModule &operator=(const HostModule &) = delete;

  /// Parses `source`, runs the tiling pipeline with `options`' block sizes,
  /// the host lowering pipeline, and JIT-compiles the LLVM dialect result.
  static llvm::Expected<std::unique_ptr<HostModule>>
  compile(llvm::StringRef source, const CompileOptions &options = {});

  /// Looks up `_mlir_ciface_<name>`: `name` must carry
  /// `llvm.emit_c_interface`.
  llvm::Expected<CInterfaceFunction> lookup(llvm::StringRef name) const;

private:
  explicit HostModule(std::unique_ptr<mlir::ExecutionEngine> engine);
  std::unique_ptr<mlir::ExecutionEngine> engine;
};

/// Runs only the two pipelines and returns the LLVM-dialect module as text
/// (for debugging a failing case).
llvm::Expected<std::string> lowerToLLVMDialect(llvm::StringRef source,
                                               const CompileOptions &options);

} // namespace fa::hostjit

#endif // FA_UNITTESTS_EXECUTION_HOSTJIT_H
