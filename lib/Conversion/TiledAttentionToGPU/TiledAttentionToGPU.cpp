//===- TiledAttentionToGPU.cpp - Tiled attention -> GPU kernels -----------===//

#include "fa/Conversion/Passes.h"

#include "ForwardKernel.h"
#include "fa/Dialect/FA/IR/FAOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace mlir {
namespace fa {
#define GEN_PASS_DEF_CONVERTTILEDATTENTIONTOGPU
#include "fa/Conversion/Passes.h.inc"
} // namespace fa
} // namespace mlir

using namespace mlir;
using namespace mlir::fa;

namespace {

/// The whole tensor a tile was cut from (through tensor.pad and
/// tensor.extract_slice), or null.
Value sourceOfTile(Value tile) {
  if (auto pad = tile.getDefiningOp<tensor::PadOp>())
    tile = pad.getSource();
  if (auto slice = tile.getDefiningOp<tensor::ExtractSliceOp>())
    return slice.getSource();
  return nullptr;
}

/// Reads the kernel configuration off a tiled forward: the forall made by
/// fa-tile-attention and the tile ops in it.
FailureOr<ForwardKernelConfig> readForwardConfig(scf::ForallOp forall,
                                                 OnlineAttentionOp tile,
                                                 StringRef name,
                                                 int64_t rowsPerWarp) {
  Value query = sourceOfTile(tile.getQuery());
  Value key = sourceOfTile(tile.getKey());
  Value value = sourceOfTile(tile.getValue());
  if (!query || !key || !value || forall.getNumResults() != 2)
    return tile.emitError() << "fa-convert-tiled-attention-to-gpu expects the "
                               "forward as tiled by fa-tile-attention";
  ArrayRef<int64_t> q = cast<RankedTensorType>(query.getType()).getShape();
  ArrayRef<int64_t> k = cast<RankedTensorType>(key.getType()).getShape();
  ArrayRef<int64_t> v = cast<RankedTensorType>(value.getType()).getShape();
  auto output = cast<RankedTensorType>(forall.getResult(0).getType());
  ForwardKernelConfig config;
  config.name = name.str();
  config.elementType = output.getElementType();
  config.batch = q[0];
  config.headsQ = q[1];
  config.seqQ = q[2];
  config.headDim = q[3];
  config.headsKV = k[1];
  config.seqKV = k[2];
  config.headDimV = v[3];
  config.blockQ = tile.getQuery().getType().getDimSize(0);
  config.blockKV = tile.getKey().getType().getDimSize(0);
  config.rowsPerWarp =
      rowsPerWarp ? rowsPerWarp
                  : defaultRowsPerWarp(config.blockQ, config.headDim,
                                       config.headDimV);
  config.scale = *asDouble(tile.getScale());
  config.causal = tile.getCausal();
  if (std::optional<ArrayRef<int64_t>> window = tile.getWindow())
    config.window = std::make_pair((*window)[0], (*window)[1]);
  config.softcap = asDouble(tile.getSoftcap());
  if (cast<RankedTensorType>(query.getType()).getElementType() !=
      config.elementType)
    return tile.emitError() << "the GPU kernel needs the output element type "
                               "to match the operands";
  std::string problem = checkForwardKernelConfig(config);
  if (!problem.empty())
    return tile.emitError() << "cannot lower to the mma.sync kernel: "
                            << problem;
  return config;
}

struct ConvertTiledAttentionToGPUPass
    : fa::impl::ConvertTiledAttentionToGPUBase<
          ConvertTiledAttentionToGPUPass> {
  using ConvertTiledAttentionToGPUBase::ConvertTiledAttentionToGPUBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<std::pair<func::FuncOp, ForwardKernelConfig>> kernels;
    WalkResult walk = module.walk([&](func::FuncOp func) {
      if (func.walk([](AttentionGradOp) { return WalkResult::interrupt(); })
              .wasInterrupted() ||
          func.walk([](AttentionGradTileOp) {
                return WalkResult::interrupt();
              }).wasInterrupted()) {
        func.emitError() << "the GPU lowering of the backward is not "
                            "implemented yet";
        return WalkResult::interrupt();
      }
      SmallVector<scf::ForallOp> foralls;
      func.walk([&](scf::ForallOp forall) { foralls.push_back(forall); });
      if (foralls.empty())
        return WalkResult::advance();
      OnlineAttentionOp tile;
      foralls.front().walk([&](OnlineAttentionOp op) {
        if (!tile && op.isTile())
          tile = op;
      });
      if (foralls.size() != 1 || !tile) {
        func.emitError() << "expects one tiled attention forward per "
                            "function (run fa-tile-attention first)";
        return WalkResult::interrupt();
      }
      FailureOr<ForwardKernelConfig> config =
          readForwardConfig(foralls.front(), tile, func.getSymName(),
                            rowsPerWarp);
      if (failed(config))
        return WalkResult::interrupt();
      kernels.emplace_back(func, *config);
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return signalPassFailure();
    if (kernels.empty())
      return;

    OpBuilder b(module.getBodyRegion());
    b.setInsertionPointToEnd(module.getBody());
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                    b.getUnitAttr());
    auto gpuModule =
        gpu::GPUModuleOp::create(b, module.getLoc(), "fa_kernels");
    for (auto &[func, config] : kernels) {
      emitForwardKernel(b, func.getLoc(), gpuModule, config);
      // The launch lives in the runtime; the kernel carries its geometry.
      func.erase();
    }
  }
};

} // namespace
