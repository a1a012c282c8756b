//===- FinalizeNVVMKernels.cpp - Fix-ups before PTX generation ------------===//

#include "fa/Conversion/Passes.h"

namespace mlir {
namespace fa {
#define GEN_PASS_DEF_FINALIZENVVMKERNELS
#include "fa/Conversion/Passes.h.inc"
} // namespace fa
} // namespace mlir

using namespace mlir;

namespace {

struct FinalizeNVVMKernelsPass
    : fa::impl::FinalizeNVVMKernelsBase<FinalizeNVVMKernelsPass> {
  void runOnOperation() override {
    // Zero-sized shared-memory globals are the dynamic shared window.
    getOperation().walk([](LLVM::GlobalOp global) {
      auto array = dyn_cast<LLVM::LLVMArrayType>(global.getGlobalType());
      bool isShared = global.getAddrSpace() ==
                      static_cast<unsigned>(NVVM::NVVMMemorySpace::Shared);
      if (isShared && array && array.getNumElements() == 0)
        global.setLinkage(LLVM::Linkage::External);
    });
    // TMA descriptors: 128-byte parameters passed by value, read where
    // they are (the parameter space) as grid constants.
    getOperation().walk([](LLVM::LLVMFuncOp func) {
      auto maps =
          func->getAttrOfType<DenseI64ArrayAttr>(fa::kTensorMapArgsAttr);
      if (!maps || !func->hasAttr(NVVM::NVVMDialect::getKernelFuncAttrName()))
        return;
      MLIRContext *ctx = func.getContext();
      for (int64_t i : maps.asArrayRef()) {
        func.setArgAttr(i, LLVM::LLVMDialect::getByValAttrName(),
                        TypeAttr::get(LLVM::LLVMArrayType::get(
                            IntegerType::get(ctx, 8), 128)));
        func.setArgAttr(i, LLVM::LLVMDialect::getAlignAttrName(),
                        IntegerAttr::get(IntegerType::get(ctx, 64), 64));
        func.setArgAttr(i, NVVM::NVVMDialect::getGridConstantAttrName(),
                        UnitAttr::get(ctx));
      }
      func->removeAttr(fa::kTensorMapArgsAttr);
    });
  }
};

} // namespace
