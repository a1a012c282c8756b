//===- LowerKernels.cpp - A module's GPU kernels to PTX, cubin, LLVM IR ---===//
//
// The lowering every compile ends with (fa-gpu-lowering's pipeline, then
// the NVVM target's serialization or LLVM IR translation), shared by the
// attention problems, the quantizations and hand-written kernel modules.
//
//===----------------------------------------------------------------------===//

#include "LowerKernels.h"

#include "fa/Conversion/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"

using namespace mlir;
using namespace mlir::fa;

llvm::Error mlir::fa::compileError(const Twine &what, StringRef diagnostics) {
  return llvm::createStringError(
      llvm::inconvertibleErrorCode(),
      (what + (diagnostics.empty() ? "" : ":\n") + diagnostics).str());
}

llvm::Expected<std::string>
mlir::fa::lowerKernels(ModuleOp module, MLIRContext &context,
                       const AttentionConfig &options, EmitKind emit,
                       const std::string &diagnostics) {
  // Every kernel's tiles were placed against Hopper's shared memory; the
  // driver would refuse a larger one at load, far from the input.
  int64_t sharedLimit = maxSharedBytesPerBlock(options.targetChip());
  WalkResult overLimit = module->walk([&](gpu::GPUFuncOp kernel) {
    auto bytes = kernel->getAttrOfType<IntegerAttr>("fa.shared_bytes");
    if (!bytes || bytes.getInt() <= sharedLimit)
      return WalkResult::advance();
    kernel.emitError() << "kernel '" << kernel.getName() << "' needs "
                       << bytes.getInt() << " bytes of shared memory; "
                       << options.targetChip() << " allows " << sharedLimit
                       << " per block (smaller block-q or block-kv)";
    return WalkResult::interrupt();
  });
  if (overLimit.wasInterrupted())
    return compileError("the kernel does not fit the chip", diagnostics);

  std::string payload;
  if (emit == EmitKind::MLIR) {
    llvm::raw_string_ostream os(payload);
    module->print(os);
    return payload;
  }

  PassManager toBinary(&context);
  GPULoweringOptions lowering;
  lowering.chip = options.chip;
  lowering.features = options.features;
  // The backward sums dQ with vector reductions (red.global.add.v2.f32,
  // PTX 8.1's) on sm_90 and later, with one atomic add an element below.
  if (options.backward &&
      llvm::StringRef(options.targetChip()).starts_with("sm_90") &&
      options.features == "+ptx80")
    lowering.features = "+ptx81";
  lowering.exp2OnFmaEvery = options.exp2OnFmaEvery;
  // The backward's K and V stay put across its loop: their descriptors
  // built at each product keep 48 registers free at head dim 128 (0.6 KB
  // of spills otherwise); the forward measured 0-1 % slower with it.
  lowering.descriptorsAtUse = options.backward;
  lowering.matrixStores = options.backward && options.backwardStoresMatrices();
  lowering.format = emit == EmitKind::PTX     ? "isa"
                    : emit == EmitKind::Cubin ? "bin"
                                              : "";
  buildGPULoweringPipeline(toBinary, lowering);
  if (failed(toBinary.run(module)))
    return compileError("lowering the kernel to " + lowering.format + " failed",
                        diagnostics);

  if (emit == EmitKind::LLVM) {
    gpu::GPUModuleOp gpuModule;
    module->walk([&](gpu::GPUModuleOp op) { gpuModule = op; });
    OwningOpRef<ModuleOp> kernels = ModuleOp::create(gpuModule.getLoc());
    OpBuilder b(kernels->getBodyRegion());
    for (Operation &op : gpuModule.getBody()->without_terminator())
      b.clone(op);
    llvm::LLVMContext llvmContext;
    std::unique_ptr<llvm::Module> llvmModule =
        translateModuleToLLVMIR(*kernels, llvmContext, "fa_kernels");
    if (!llvmModule)
      return compileError("translating the kernel to LLVM IR failed",
                          diagnostics);
    llvm::raw_string_ostream os(payload);
    llvmModule->print(os, nullptr);
    return payload;
  }

  gpu::BinaryOp binary;
  module->walk([&](gpu::BinaryOp op) { binary = op; });
  if (!binary || binary.getObjects().empty())
    return compileError("no kernel binary was produced", diagnostics);
  auto object = cast<gpu::ObjectAttr>(binary.getObjects()[0]);
  return object.getObject().getValue().str();
}

llvm::StringMap<gpu::GPUFuncOp> mlir::fa::kernelsByKind(ModuleOp module) {
  llvm::StringMap<gpu::GPUFuncOp> kernels;
  module->walk([&](gpu::GPUFuncOp func) {
    if (auto kind = func->getAttrOfType<StringAttr>("fa.kind"))
      kernels[kind.getValue()] = func;
  });
  return kernels;
}
