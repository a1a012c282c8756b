//===- Pipelines.cpp - FlashMLIR named pass pipelines ---------------------===//

#include "fa/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void fa::buildAttentionTilingPipeline(OpPassManager &pm,
                                      const TilingPipelineOptions &options) {
  pm.addPass(createConvertToOnlineAttention());
  pm.addPass(createTileAttention(
      {options.blockQ, options.blockKV, options.rescaleThreshold}));
  pm.addPass(createTileAttentionGrad(
      {options.blockQ, options.blockKV, options.scaleGradsOnce}));
  pm.addPass(createDecomposeAttention());
  pm.addPass(createDecomposeQuantize());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void fa::buildHostLoweringPipeline(OpPassManager &pm) {
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  // Tile steps build fresh tensors each iteration; let loops return them.
  bufferize.allowReturnAllocsFromLoops = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  bufferization::BufferDeallocationPipelineOptions dealloc;
  bufferization::buildBufferDeallocationPipeline(pm, dealloc);
  pm.addPass(createConvertBufferizationToMemRefPass());
  pm.addPass(createConvertLinalgToLoopsPass());
  pm.addPass(createForallToForLoopPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createExpandFP8Conversions());
  arith::ArithExpandOpsPassOptions expand;
  expand.includeBf16 = true;
  pm.addPass(arith::createArithExpandOpsPass(expand));
  pm.addPass(createLowerAffinePass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCanonicalizerPass());
}

void fa::registerFAPipelines() {
  PassPipelineRegistration<TilingPipelineOptions>(
      "fa-tile-and-decompose",
      "fa.attention / fa.attention_grad -> tiled online-softmax IR of "
      "tile-sized linalg ops",
      buildAttentionTilingPipeline);
  PassPipelineRegistration<>(
      "fa-lower-to-host-llvm",
      "Tiled tensor IR -> LLVM dialect for execution on the host CPU",
      buildHostLoweringPipeline);
}
