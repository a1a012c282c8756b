//===- TiledAttentionToGPU.cpp - Tiled attention -> GPU kernels -----------===//

#include "fa/Conversion/Passes.h"

#include "BackwardKernel.h"
#include "BackwardRowKernels.h"
#include "ForwardKernel.h"
#include "fa/Dialect/FA/IR/FAOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir {
namespace fa {
#define GEN_PASS_DEF_CONVERTTILEDATTENTIONTOGPU
#include "fa/Conversion/Passes.h.inc"
} // namespace fa
} // namespace mlir

using namespace mlir;
using namespace mlir::fa;

namespace {

/// One kernel set to emit per function.
struct KernelJob {
  func::FuncOp func;
  AttentionKernelConfig config;
  bool backward;
  scf::ForallOp forall;
};

struct ConvertTiledAttentionToGPUPass
    : fa::impl::ConvertTiledAttentionToGPUBase<ConvertTiledAttentionToGPUPass> {
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
          forward ? readKernelConfig(forward, func.getSymName())
                  : readKernelConfig(backward, func.getSymName());
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
      // The mma.sync main kernel is built from the configuration and
      // scales dS itself.
      if (backward && backward.getDeterministic()) {
        backward.emitError()
            << "cannot lower to the mma.sync kernel: it has no "
               "deterministic mode (the WGMMA backward, sm_90a, has)";
        return WalkResult::interrupt();
      }
      if (backward && backward.getUnscaledGrads()) {
        backward.emitError()
            << "cannot lower to the mma.sync kernel: it scales dS itself; "
               "tile without scale-grads-once";
        return WalkResult::interrupt();
      }
      std::string problem = checkStaticShapes(*config);
      if (problem.empty())
        problem = forward ? checkForwardKernelConfig(*config)
                          : checkBackwardKernelConfig(*config);
      if (!problem.empty()) {
        Operation *at =
            forward ? forward.getOperation() : backward.getOperation();
        at->emitError() << "cannot lower to the mma.sync kernel: " << problem;
        return WalkResult::interrupt();
      }
      jobs.push_back(
          {func, *config, static_cast<bool>(backward), foralls.front()});
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
    auto gpuModule = gpu::GPUModuleOp::create(b, module.getLoc(), "fa_kernels");
    for (KernelJob &job : jobs) {
      if (job.backward) {
        // The row kernels lower the IR around the forall; the main kernel
        // is the mma.sync emitter's.
        if (failed(emitBackwardPreKernel(b, gpuModule, job.func, job.forall,
                                         job.config)))
          return signalPassFailure();
        emitBackwardMainKernel(b, job.func.getLoc(), gpuModule, job.config);
        if (failed(emitBackwardPostKernel(b, gpuModule, job.func, job.forall,
                                          job.config)))
          return signalPassFailure();
      } else {
        emitForwardKernel(b, job.func.getLoc(), gpuModule, job.config);
      }
      // The launch lives in the runtime; the kernel carries its geometry.
      job.func.erase();
    }
  }
};

} // namespace
