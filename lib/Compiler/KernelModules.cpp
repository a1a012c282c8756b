//===- KernelModules.cpp - Compiles of modules without attention ----------===//
//
// What fa-compile does with an input that holds no attention problem: a
// module of kernels written at the GPU tile level, or a quantization.
//
//===----------------------------------------------------------------------===//

#include "KernelModules.h"

#include "LowerKernels.h"
#include "MetadataText.h"

#include "fa/Conversion/Passes.h"
#include "fa/Dialect/FAGPU/IR/FAGPU.h"
#include "fa/Dialect/FAGPU/Transforms/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::fa;

llvm::Expected<CompiledKernel>
mlir::fa::compileKernelModule(ModuleOp module, MLIRContext &context,
                              const AttentionConfig &options, EmitKind emit,
                              const std::string &diagnostics) {
  CompiledKernel result;
  MetadataJson meta;
  meta["kind"] = "kernel_module";
  meta["chip"] = options.chip;
  MetadataJson &kernels = meta["kernels"] = MetadataJson::object();
  module->walk([&](gpu::GPUFuncOp func) {
    if (!func.isKernel())
      return;
    int64_t sharedBytes = fagpu::placeSharedTiles(func);
    kernels[func.getName().str()]["shared_bytes"] = sharedBytes;
  });
  result.metadata = metadataText(meta);
  llvm::Expected<std::string> payload =
      lowerKernels(module, context, options, emit, diagnostics);
  if (!payload)
    return payload.takeError();
  result.payload = std::move(*payload);
  return result;
}

llvm::Expected<CompiledKernel>
mlir::fa::compileQuantizeModule(ModuleOp module, MLIRContext &context,
                                const AttentionConfig &options, EmitKind emit,
                                const std::string &diagnostics,
                                MutableArrayRef<QuantizeOp> quantizations) {
  if (quantizations.size() > 1) {
    quantizations[1].emitError()
        << "fa-compile compiles one quantization per input; found "
        << quantizations.size();
    return compileError("compiling to a GPU kernel failed", diagnostics);
  }
  // cvt.rn.satfinite.e4m3x2 is sm_89's: sm_80, 86 and 87 lack it (the
  // runtime refuses their .meta, so the compile must too). checkChip took
  // "sm_" and two digits (and maybe "a").
  unsigned version = 0;
  if (StringRef(options.chip)
          .drop_front(3)
          .take_front(2)
          .getAsInteger(10, version) ||
      version < 89) {
    quantizations[0].emitError()
        << "e4m3 conversion needs sm_89 or later; the chip is " << options.chip;
    return compileError("compiling to a GPU kernel failed", diagnostics);
  }
  PassManager toKernels(&context);
  toKernels.addPass(createConvertQuantizeToGPU());
  toKernels.addPass(createCanonicalizerPass());
  toKernels.addPass(createCSEPass());
  if (failed(toKernels.run(module)))
    return compileError("compiling to a GPU kernel failed", diagnostics);
  llvm::StringMap<gpu::GPUFuncOp> kernels = kernelsByKind(module);
  FailureOr<std::string> metadata = quantizeMetadata(kernels, options.chip);
  if (failed(metadata))
    return compileError("describing the kernel failed", diagnostics);
  CompiledKernel result;
  result.metadata = std::move(*metadata);
  // LLVM selects the e4m3 conversion on sm_89 from PTX 8.1 (sm_90: 7.8).
  AttentionConfig target = options;
  if (target.chip == "sm_89" && target.features == "+ptx80")
    target.features = "+ptx81";
  llvm::Expected<std::string> payload =
      lowerKernels(module, context, target, emit, diagnostics);
  if (!payload)
    return payload.takeError();
  result.payload = std::move(*payload);
  return result;
}
