//===- TiledAttentionToGPU.cpp - Tiled attention -> GPU kernels -----------===//

#include "fa/Conversion/Passes.h"

#include "BackwardKernel.h"
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

/// Reads the kernel configuration off a tile op (fa.online_attention tile
/// or fa.attention_grad_tile) inside the forall of a tiling pass.
template <typename TileOp>
FailureOr<AttentionKernelConfig> readConfig(TileOp tile, StringRef name) {
  Value query = sourceOfTile(tile.getQuery());
  Value key = sourceOfTile(tile.getKey());
  Value value = sourceOfTile(tile.getValue());
  if (!query || !key || !value)
    return tile.emitError() << "fa-convert-tiled-attention-to-gpu expects "
                               "attention as tiled by fa-tile-attention or "
                               "fa-tile-attention-grad";
  auto queryType = cast<RankedTensorType>(query.getType());
  ArrayRef<int64_t> q = queryType.getShape();
  ArrayRef<int64_t> k = cast<RankedTensorType>(key.getType()).getShape();
  ArrayRef<int64_t> v = cast<RankedTensorType>(value.getType()).getShape();
  AttentionKernelConfig config;
  config.name = name.str();
  config.elementType = queryType.getElementType();
  config.batch = q[0];
  config.headsQ = q[1];
  config.seqQ = q[2];
  config.headDim = q[3];
  config.headsKV = k[1];
  config.seqKV = k[2];
  config.headDimV = v[3];
  config.blockQ = tile.getQuery().getType().getDimSize(0);
  config.blockKV = tile.getKey().getType().getDimSize(0);
  config.scale = *asDouble(tile.getScale());
  config.causal = tile.getCausal();
  if (std::optional<ArrayRef<int64_t>> window = tile.getWindow())
    config.window = std::make_pair((*window)[0], (*window)[1]);
  config.softcap = asDouble(tile.getSoftcap());
  return config;
}

/// One kernel set to emit per function.
struct KernelJob {
  func::FuncOp func;
  AttentionKernelConfig config;
  bool backward;
};

struct ConvertTiledAttentionToGPUPass
    : fa::impl::ConvertTiledAttentionToGPUBase<
          ConvertTiledAttentionToGPUPass> {
  using ConvertTiledAttentionToGPUBase::ConvertTiledAttentionToGPUBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<KernelJob> jobs;
    WalkResult walk = module.walk([&](func::FuncOp func) {
      SmallVector<scf::ForallOp> foralls;
      func.walk([&](scf::ForallOp forall) { foralls.push_back(forall); });
      if (foralls.empty())
        return WalkResult::advance();
      OnlineAttentionOp forward;
      AttentionGradTileOp backward;
      foralls.front().walk([&](Operation *op) {
        if (auto tile = dyn_cast<OnlineAttentionOp>(op); tile && tile.isTile())
          forward = forward ? forward : tile;
        if (auto tile = dyn_cast<AttentionGradTileOp>(op))
          backward = backward ? backward : tile;
      });
      if (foralls.size() != 1 || (!forward == !backward)) {
        func.emitError() << "expects one tiled attention forward or backward "
                            "per function (run fa-tile-attention or "
                            "fa-tile-attention-grad first)";
        return WalkResult::interrupt();
      }
      FailureOr<AttentionKernelConfig> config =
          forward ? readConfig(forward, func.getSymName())
                  : readConfig(backward, func.getSymName());
      if (failed(config))
        return WalkResult::interrupt();
      if (forward) {
        config->rowsPerWarp =
            rowsPerWarp ? rowsPerWarp
                        : defaultRowsPerWarp(config->blockQ, config->headDim,
                                             config->headDimV);
        if (forward.getQuery().getType().getElementType() !=
            cast<RankedTensorType>(foralls.front().getResult(0).getType())
                .getElementType()) {
          forward.emitError() << "the GPU kernel needs the output element "
                                 "type to match the operands";
          return WalkResult::interrupt();
        }
      }
      std::string problem = forward ? checkForwardKernelConfig(*config)
                                    : checkBackwardKernelConfig(*config);
      if (!problem.empty()) {
        Operation *at = forward ? forward.getOperation()
                                : backward.getOperation();
        at->emitError() << "cannot lower to the mma.sync kernel: " << problem;
        return WalkResult::interrupt();
      }
      jobs.push_back({func, *config, static_cast<bool>(backward)});
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return signalPassFailure();
    if (jobs.empty())
      return;

    OpBuilder b(module.getBodyRegion());
    b.setInsertionPointToEnd(module.getBody());
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                    b.getUnitAttr());
    auto gpuModule =
        gpu::GPUModuleOp::create(b, module.getLoc(), "fa_kernels");
    for (KernelJob &job : jobs) {
      if (job.backward)
        emitBackwardKernels(b, job.func.getLoc(), gpuModule, job.config);
      else
        emitForwardKernel(b, job.func.getLoc(), gpuModule, job.config);
      // The launch lives in the runtime; the kernel carries its geometry.
      job.func.erase();
    }
  }
};

} // namespace
