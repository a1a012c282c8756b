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
  }
};

} // namespace
