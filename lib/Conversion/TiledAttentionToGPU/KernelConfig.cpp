//===- KernelConfig.cpp - What an attention kernel is built for -----------===//

#include "KernelConfig.h"

using namespace mlir;
using namespace mlir::fa;

std::string mlir::fa::checkGridLimits(const AttentionKernelConfig &c) {
  const int64_t maxGridYZ = 65535;
  if (c.headsQ > maxGridYZ || c.batch > maxGridYZ)
    return "heads and batch index grid dimensions y and z, at most 65535 "
           "each; got " +
           std::to_string(c.headsQ) + " heads, batch " +
           std::to_string(c.batch);
  return "";
}

Attribute mlir::fa::workgroupSpace(MLIRContext *ctx) {
  return gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
}

gpu::GPUModuleOp mlir::fa::getOrCreateKernelModule(ModuleOp module,
                                                   gpu::GPUModuleOp &kernels) {
  if (kernels)
    return kernels;
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                  b.getUnitAttr());
  kernels = gpu::GPUModuleOp::create(b, module.getLoc(), "fa_kernels");
  return kernels;
}

LogicalResult mlir::fa::placeKernelSharedTiles(gpu::GPUFuncOp kernel,
                                               Location at, StringRef what,
                                               StringRef hint) {
  int64_t sharedBytes = fagpu::placeSharedTiles(kernel);
  if (sharedBytes > fagpu::kMaxSharedBytesPerBlock) {
    kernel.erase();
    return emitError(at) << "cannot lower to the " << what
                         << ": its tiles need " << sharedBytes
                         << " bytes of shared memory, over the "
                         << fagpu::kMaxSharedBytesPerBlock << hint;
  }
  kernel->setAttr(
      "fa.shared_bytes",
      IntegerAttr::get(IntegerType::get(kernel.getContext(), 64), sharedBytes));
  return success();
}

gpu::GPUFuncOp mlir::fa::createKernelFunc(
    OpBuilder &b, Location loc, gpu::GPUModuleOp module, StringRef name,
    TypeRange arguments, StringRef kind, ArrayRef<int64_t> grid,
    int64_t threads, int64_t sharedBytes, const AttentionKernelConfig &c) {
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToEnd(module.getBody());
  auto func =
      gpu::GPUFuncOp::create(b, loc, name, b.getFunctionType(arguments, {}));
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  func.setKnownBlockSizeAttr(
      b.getDenseI32ArrayAttr({static_cast<int32_t>(threads), 1, 1}));
  func->setAttr("fa.kind", b.getStringAttr(kind));
  func->setAttr("fa.grid", b.getDenseI64ArrayAttr(grid));
  func->setAttr("fa.block", b.getDenseI64ArrayAttr({threads, 1, 1}));
  func->setAttr("fa.shared_bytes", b.getI64IntegerAttr(sharedBytes));
  func->setAttr("fa.block_q", b.getI64IntegerAttr(c.blockQ));
  func->setAttr("fa.block_kv", b.getI64IntegerAttr(c.blockKV));
  func->setAttr("fa.rows_per_warp", b.getI64IntegerAttr(c.rowsPerWarp));
  func->setAttr("fa.scale", b.getF64FloatAttr(c.scale));
  if (c.causal)
    func->setAttr("fa.causal", b.getUnitAttr());
  if (c.window)
    func->setAttr("fa.window",
                  b.getDenseI64ArrayAttr({c.window->first, c.window->second}));
  if (c.softcap)
    func->setAttr("fa.softcap", b.getF64FloatAttr(*c.softcap));
  return func;
}

int64_t mlir::fa::defaultRowsPerWarp(int64_t blockQ, int64_t headDim,
                                     int64_t headDimV) {
  return blockQ >= 128 && std::max(headDim, headDimV) <= 128 ? 32 : 16;
}
