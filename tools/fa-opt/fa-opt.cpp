//===- fa-opt.cpp - FlashMLIR optimizer driver ----------------------------===//
//
// mlir-opt with the `fa` dialect, FlashMLIR's passes and named pipelines, and
// every upstream dialect and pass.
//
//===----------------------------------------------------------------------===//

#include "fa/Conversion/Passes.h"
#include "fa/Dialect/FA/IR/FADialect.h"
#include "fa/Dialect/FAGPU/IR/FAGPU.h"
#include "fa/Dialect/FAGPU/Transforms/Passes.h"
#include "fa/Transforms/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  mlir::fa::registerFAPasses();
  mlir::fagpu::registerFAGPUTransformsPasses();
  mlir::fa::registerFAConversionPasses();
  mlir::fa::registerFAConversionPipelines();
  mlir::fa::registerFAPipelines();

  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  // gpu-module-to-binary translates kernels to LLVM IR in-process.
  mlir::registerAllToLLVMIRTranslations(registry);
  registry.insert<mlir::fa::FADialect, mlir::fagpu::FAGPUDialect>();

  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "FlashMLIR optimizer driver\n", registry));
}
