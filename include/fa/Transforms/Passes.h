//===- Passes.h - FlashMLIR passes ------------------------------*- C++ -*-===//

#ifndef FA_TRANSFORMS_PASSES_H
#define FA_TRANSFORMS_PASSES_H

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"

namespace mlir {
namespace fa {

#define GEN_PASS_DECL
#include "fa/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "fa/Transforms/Passes.h.inc"

/// Block sizes shared by the named pipelines.
struct TilingPipelineOptions
    : public PassPipelineOptions<TilingPipelineOptions> {
  Option<int64_t> blockQ{*this, "block-q",
                         llvm::cl::desc("Query rows per tile (Br)"),
                         llvm::cl::init(64)};
  Option<int64_t> blockKV{*this, "block-kv",
                          llvm::cl::desc("Keys per tile (Bc)"),
                          llvm::cl::init(64)};
  Option<bool> scaleGradsOnce{
      *this, "scale-grads-once",
      llvm::cl::desc("Backward: the softmax scale applied to dQ and dK once, "
                     "not to every dS tile"),
      llvm::cl::init(false)};
  Option<double> rescaleThreshold{
      *this, "rescale-threshold",
      llvm::cl::desc("Forward: raise a row's running max only where a tile's "
                     "scores pass it by more than this (base 2); 0: always"),
      llvm::cl::init(0)};
};

/// fa.attention / fa.attention_grad -> tiled, decomposed tile-sized linalg.
void buildAttentionTilingPipeline(OpPassManager &pm,
                                  const TilingPipelineOptions &options);

/// Tiled tensor IR -> LLVM dialect for execution on the host CPU.
void buildHostLoweringPipeline(OpPassManager &pm);

/// Replaces every tile-level op under `root` (fa.online_attention tiles,
/// fa.normalize, fa.attention_grad_tile) by its tile-sized linalg
/// decomposition: the one definition of the mask and online-softmax math,
/// which the CPU path executes and the GPU tile level lowers. Emits an error
/// and fails on an untiled fa.online_attention.
LogicalResult decomposeAttentionTiles(Operation *root);

/// Registers `fa-tile-and-decompose` and `fa-lower-to-host-llvm`.
void registerFAPipelines();

} // namespace fa
} // namespace mlir

#endif // FA_TRANSFORMS_PASSES_H
