//===- TiledAttentionToGPU.cpp - Tiled backward -> mma.sync kernels -------===//
//
// The mma.sync backward: row kernels lowered from the IR around the forall,
// the main kernel built by the mma.sync emitter (BackwardKernel.cpp). The
// forward, on every chip, goes through the GPU tile level
// (fa-convert-tiled-attention-to-fagpu, mma-sync below Hopper).
//
//===----------------------------------------------------------------------===//

#include "fa/Conversion/Passes.h"

#include "BackwardKernel.h"
#include "BackwardRowKernels.h"
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

/// One backward kernel set to emit per function.
struct KernelJob {
  func::FuncOp func;
  AttentionKernelConfig config;
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
      if (forward && !backward) {
        forward.emitError()
            << "fa-convert-tiled-attention-to-gpu lowers the backward; the "
               "forward lowers through the GPU tile level "
               "(fa-convert-tiled-attention-to-fagpu, mma-sync below Hopper)";
        return WalkResult::interrupt();
      }
      if (foralls.size() != 1 || !backward) {
        func.emitError() << "expects one tiled attention backward per "
                            "function (run fa-tile-attention-grad first)";
        return WalkResult::interrupt();
      }
      FailureOr<AttentionKernelConfig> config =
          readKernelConfig(backward, func.getSymName());
      if (failed(config))
        return WalkResult::interrupt();
      // The mma.sync main kernel is built from the configuration and
      // scales dS itself.
      if (backward.getDeterministic()) {
        backward.emitError()
            << "cannot lower to the mma.sync kernel: it has no "
               "deterministic mode (the WGMMA backward, sm_90a, has)";
        return WalkResult::interrupt();
      }
      if (backward.getUnscaledGrads()) {
        backward.emitError()
            << "cannot lower to the mma.sync kernel: it scales dS itself; "
               "tile without scale-grads-once";
        return WalkResult::interrupt();
      }
      std::string problem = checkStaticShapes(*config);
      if (problem.empty())
        problem = checkBackwardKernelConfig(*config);
      if (!problem.empty()) {
        backward.emitError()
            << "cannot lower to the mma.sync kernel: " << problem;
        return WalkResult::interrupt();
      }
      jobs.push_back({func, *config, foralls.front()});
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
      // The row kernels lower the IR around the forall; the main kernel is
      // the mma.sync emitter's.
      if (failed(emitBackwardPreKernel(b, gpuModule, job.func, job.forall,
                                       job.config)))
        return signalPassFailure();
      emitBackwardMainKernel(b, job.func.getLoc(), gpuModule, job.config);
      if (failed(emitBackwardPostKernel(b, gpuModule, job.func, job.forall,
                                        job.config)))
        return signalPassFailure();
      // The launch lives in the runtime; the kernel carries its geometry.
      job.func.erase();
    }
  }
};

} // namespace
