//===- KernelPipeline.cpp - attention op -> GPU kernel passes -------------===//
//
// The passes that take an attention function to its GPU kernels (the GPU
// tile level on sm_90a, mma.sync otherwise), with the schedule choices each
// measured on the H200 (docs/perf/README.md).
//
//===----------------------------------------------------------------------===//

#include "KernelPipeline.h"

#include "fa/Conversion/Passes.h"
#include "fa/Dialect/FAGPU/Transforms/Passes.h"
#include "fa/Transforms/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Transforms/Passes.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::fa;

/// The cp.async rings: double-buffered unless kv-stages says otherwise,
/// with as many stages as the chip's shared memory holds (one, the
/// synchronous copies, where two do not fit).
static fagpu::PipelineSharedCopiesOptions
sharedCopyRings(const AttentionConfig &effective) {
  fagpu::PipelineSharedCopiesOptions ring;
  ring.stages = effective.kvStages ? effective.kvStages : 2;
  ring.maxSharedBytes = maxSharedBytesPerBlock(effective.targetChip());
  return ring;
}

void mlir::fa::buildKernelPipeline(PassManager &pm,
                                   const AttentionConfig &effective,
                                   int64_t rowsPerWarp) {
  pm.addPass(createConvertToOnlineAttention());
  // The direction's own tiling only: the forward's blocks may be multiples
  // of 16 that the backward's tiling refuses.
  // The backward scales dQ and dK once after their sums, not every dS
  // tile (FA3's form).
  if (effective.backward)
    pm.addPass(createTileAttentionGrad({effective.effectiveBlockQ(),
                                        effective.effectiveBlockKV(),
                                        /*scaleGradsOnce=*/true}));
  else
    pm.addPass(createTileAttention({effective.effectiveBlockQ(),
                                    effective.effectiveBlockKV(),
                                    effective.effectiveRescaleThreshold()}));
  // The forward on the GPU tile level: WGMMA on sm_90a, else mma.sync.
  if (effective.usesWgmmaForward()) {
    // FP8: FA3's register permutation (P keeps the accumulator's registers,
    // V's keys permuted to match), which the transposition's ldmatrix /
    // stmatrix lowering yields for free, wherever V is transposed.
    pm.addPass(createConvertTiledAttentionToFAGPU({/*pairFP8Keys=*/true}));
    // Blocks that loop over the tiles where tiles are short.
    fagpu::PersistentGridOptions grid;
    grid.blocks = effective.effectivePersistentBlocks();
    if (grid.blocks > 0 || grid.blocks < -1)
      pm.addNestedPass<gpu::GPUModuleOp>(fagpu::createPersistentGrid(grid));
    // A TMA producer warpgroup feeding the compute warpgroups through
    // two-stage mbarrier rings (FlashAttention 3's split; hd128 N = 8k: 338
    // -> 511 TFLOP/s against cp.async pipelining, docs/perf/README.md).
    fagpu::WarpSpecializeOptions split;
    // Three stages where they fit (fewer otherwise, hd256): the overlap
    // below holds two per iteration. Two in the persistent grid's short
    // tiles: +3-6 % at N = 512 and 1k (hd 64, 128), where a third stage
    // only lengthens each tile's fill (docs/perf/README.md, 2026-12-01
    // eighth).
    split.stages = effective.kvStages ? effective.kvStages
                   : grid.blocks > 0  ? 2
                                      : 3;
    // Two Q buffers in a persistent grid (where they fit beside the
    // rings): the producer loads tile t + 1's Q under tile t's products
    // (H200: +12-17 % at N = 512, hd 64 and 128, docs/perf/README.md).
    split.tileBuffers = effective.qBuffers ? effective.qBuffers : 2;
    // FP8 at head dim 256: one Q buffer, so that the transposed V's ring
    // (fagpu-transpose-in-producer) fits beside the K and V rings.
    if (effective.transposesInProducer() && !effective.qBuffers &&
        std::max(effective.headDim, effective.headDimV) > 128)
      split.tileBuffers = 1;
    // FP8: the producer's transposing warps at 40 registers, not 24 (the
    // compute warpgroups keep 232): at 24 they spilled the permuted V
    // words; at 40 no FP8 kernel spills (H100: +1-6 %, docs/perf/README.md
    // 2026-12-05).
    if (effective.transposesInProducer())
      split.producerRegisters = 40;
    pm.addNestedPass<gpu::GPUModuleOp>(fagpu::createWarpSpecialize(split));
    // FP8: V transposed (WGMMA reads 8-bit operands K-major only) by the
    // producer warpgroup's idle warps, not the compute warpgroups, unless
    // fp8-transpose=consumers (H100: hd128 +17 %, hd256 +8 %,
    // docs/perf/README.md).
    if (effective.transposesInProducer())
      pm.addNestedPass<gpu::GPUModuleOp>(fagpu::createTransposeInProducer());
    // The softmax of block j under P·V of block j - 1 (FA3's
    // intra-warpgroup overlap), up to head dim 128: at 256 (O alone is 128
    // registers a thread) it measured 0.87-0.89x cuDNN against 0.88-0.91x
    // without it.
    if (std::max(effective.headDim, effective.headDimV) <= 128)
      pm.addNestedPass<gpu::GPUModuleOp>(fagpu::createOverlapSoftmax());
    // Two compute warpgroups alternate issuing their products (ping-pong:
    // hd256 0.85 -> 0.88x cuDNN, hd128 unchanged).
    pm.addNestedPass<gpu::GPUModuleOp>(fagpu::createPingPong());
    // With a rescale threshold almost every factor of O's rescale is 1: a
    // warp whose rows all kept their max skips the multiply.
    if (effective.effectiveRescaleThreshold() > 0)
      pm.addNestedPass<gpu::GPUModuleOp>(fagpu::createSkipUnitRescales());
  } else if (effective.usesWgmmaBackward()) {
    ConvertTiledAttentionGradToFAGPUOptions tiles;
    tiles.dqReduction = effective.dqReduction;
    tiles.transposeScores = effective.transposeScores;
    pm.addPass(createConvertTiledAttentionGradToFAGPU(tiles));
    // dq-reduction=bulk: dQ's shared tile swizzled, added through TMA.
    pm.addNestedPass<gpu::GPUModuleOp>(fagpu::createTmaReductions());
    // A TMA producer warpgroup streams Q and dO through mbarrier rings
    // (the compute warpgroups at 240 registers; H200: hd128 +31-38 %, hd64
    // +10-15 %, docs/perf/README.md fourteenth session); else the compute
    // warps prefetch them with cp.async below.
    if (effective.backwardProducer != "off") {
      fagpu::WarpSpecializeOptions split;
      split.stages = effective.kvStages ? effective.kvStages : 2;
      split.handOffReductions = effective.handsOffDq();
      // A deterministic turn passed after the next is taken: +5-8 % with a
      // causal mask, where KV blocks start their Q loops at their diagonal;
      // -6-11 % without one, where every block waits for the one before it
      // to be a Q block further (H200, docs/perf/README.md).
      split.pipelineTurns = effective.causal || effective.window;
      pm.addNestedPass<gpu::GPUModuleOp>(fagpu::createWarpSpecialize(split));
    }
    // Q and dO (the tiles each Q-block iteration streams) prefetched
    // through cp.async rings.
    pm.addNestedPass<gpu::GPUModuleOp>(
        fagpu::createPipelineSharedCopies(sharedCopyRings(effective)));
    // Products issued as early and waited for as late as they allow; dP =
    // dO Vᵀ with S = Q Kᵀ (H200: +2-5 % at hd64, +1-2 % at hd128 with
    // matrix stores, +3-5 % at hd256; docs/perf/README.md).
    fagpu::AsyncProductsOptions products;
    products.hoistStageWaitsOption = true;
    pm.addNestedPass<gpu::GPUModuleOp>(fagpu::createAsyncProducts(products));
    // Store barriers only as wide as their readers need.
    pm.addNestedPass<gpu::GPUModuleOp>(fagpu::createNarrowSharedSyncs());
  } else if (effective.backward) {
    ConvertTiledAttentionGradToFAGPUOptions tiles;
    tiles.mmaSync = true;
    tiles.dqReduction = "atomic";
    pm.addPass(createConvertTiledAttentionGradToFAGPU(tiles));
    // The mma.sync backward (below Hopper, where the WGMMA one does not
    // take the problem, or asked for): Q and dO double-buffered through
    // cp.async (FlashAttention 2's schedule).
    pm.addNestedPass<gpu::GPUModuleOp>(
        fagpu::createPipelineSharedCopies(sharedCopyRings(effective)));
  } else {
    ConvertTiledAttentionToFAGPUOptions tiles;
    tiles.mmaSync = true;
    tiles.rowsPerWarp = rowsPerWarp;
    pm.addPass(createConvertTiledAttentionToFAGPU(tiles));
    // K and V double-buffered through cp.async: the copy of block j + 1 in
    // flight while block j computes (FlashAttention 2's schedule).
    pm.addNestedPass<gpu::GPUModuleOp>(
        fagpu::createPipelineSharedCopies(sharedCopyRings(effective)));
  }
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // The mma.sync forward's running row sums in per-lane parts, added across
  // the lanes once after the KV loops (FlashAttention 2's deferred
  // reduction; after the clean-up, which leaves the sums' update and their
  // zero start in the form the pass matches).
  if (!effective.backward && !effective.usesWgmmaForward())
    pm.addNestedPass<gpu::GPUModuleOp>(fagpu::createDeferRowSums());
  // A persistent kernel's epilogue offsets computed after the KV loop, not
  // held through it (after the clean-up, whose dead ops would pin them).
  if (effective.usesWgmmaForward())
    pm.addNestedPass<gpu::GPUModuleOp>(fagpu::createSinkPastLoops());
}
