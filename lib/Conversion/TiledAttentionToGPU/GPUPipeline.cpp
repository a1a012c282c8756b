//===- GPUPipeline.cpp - GPU lowering to NVVM, PTX and cubin --------------===//

#include "fa/Conversion/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/CommandLine.h"

#include <mutex>

using namespace mlir;

/// Shared (and local, constant) addresses in 32 bits, as Triton compiles
/// its kernels: a per-lane shared address that a loop keeps takes one
/// register, not two. The mma.sync forward at head dim 128 keeps about 30
/// (its ldmatrix addresses, swizzled per k16 step) and spilled 164 bytes
/// with 64-bit ones, none with these; the WGMMA kernels measured the same
/// either way (H200, 2026-12-02). LLVM takes the choice only from its
/// command-line option, read when the NVPTX target machine is built, so it
/// is set once for the process before any kernel is serialized, unless the
/// command line set it (`fa-compile --nvptx-short-ptr=false` for an A/B).
static void useShortSharedPointers() {
  static std::once_flag once;
  std::call_once(once, [] {
    auto registered = llvm::cl::getRegisteredOptions();
    auto it = registered.find("nvptx-short-ptr");
    if (it != registered.end() && it->second->getNumOccurrences() == 0)
      static_cast<llvm::cl::opt<bool> *>(it->second)->setValue(true);
  });
}

void fa::buildGPULoweringPipeline(OpPassManager &pm,
                                  const GPULoweringOptions &options) {
  GpuNVVMAttachTargetOptions target;
  target.chip = options.chip;
  target.features = options.features;
  target.optLevel = options.optLevel;
  pm.addPass(createGpuNVVMAttachTarget(target));

  OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
  // Kernels written at the GPU tile level first become per-thread code;
  // runtime sizes become kernel arguments beside the bare pointers.
  kernels.addPass(createPassRuntimeSizes());
  ConvertFAGPUToNVVMOptions tiles;
  tiles.exp2OnFmaEvery = options.exp2OnFmaEvery;
  tiles.descriptorsAtUse = options.descriptorsAtUse;
  tiles.matrixStores = options.matrixStores;
  kernels.addPass(createConvertFAGPUToNVVM(tiles));
  kernels.addPass(createConvertNVGPUToNVVMPass());
  kernels.addPass(memref::createExpandStridedMetadataPass());
  kernels.addPass(createLowerAffinePass());
  kernels.addPass(createSCFToControlFlowPass());
  ConvertGpuOpsToNVVMOpsOptions toNVVM;
  toNVVM.useBarePtrCallConv = true;
  kernels.addPass(createConvertGpuOpsToNVVMOps(toNVVM));
  kernels.addPass(createConvertNVVMToLLVMPass());
  kernels.addPass(createCanonicalizerPass());
  kernels.addPass(createCSEPass());
  kernels.addPass(createReconcileUnrealizedCastsPass());
  kernels.addPass(createFinalizeNVVMKernels());

  if (options.format.empty())
    return;
  useShortSharedPointers();
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = options.format;
  pm.addPass(createGpuModuleToBinaryPass(binary));
}

void fa::registerFAConversionPipelines() {
  PassPipelineRegistration<GPULoweringOptions>(
      "fa-gpu-lower-to-binary",
      "gpu.module kernels -> NVVM -> PTX (format=isa) or cubin (format=bin)",
      buildGPULoweringPipeline);
}
