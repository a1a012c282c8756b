//===- GPUPipeline.cpp - GPU lowering to NVVM, PTX and cubin --------------===//

#include "fa/Conversion/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

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
