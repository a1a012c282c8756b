//===- TiledAttentionGradToFAGPU.cpp - Tiled backward -> GPU tile level ---===//
//
// Lowers the tiled backward (fa-tile-attention-grad), as it is, onto the GPU
// tile level: the forall's (batch, KV head) and its loop over KV blocks
// become the grid (block ids z, y, x), so each block keeps one KV block's
// dK and dV in registers while it walks the query heads of its group and
// the visible Q blocks (the masked / unmasked / masked loops stay loops).
// The tile math is the decomposition's (decomposeAttentionTiles) carried op
// by op by the TileKernelBuilder: S = QKᵀ and dP = dO Vᵀ from shared tiles,
// dQ = dS K with dS from registers, dV += Pᵀ dO and dK += dSᵀ Q with P and
// dS written to shared memory and read transposed by WGMMA. dQ, which every
// KV block adds to, is the one output read back: each block's part is
// summed in with f32 atomic adds (`fagpu.store_tile accumulate`), or with
// one bulk reduction of a shared tile (`dq-reduction=bulk`).
//
// With `mma-sync` the same carrying gives FlashAttention 2's backward in
// mma.sync layouts (sm_80 and up): 16 keys a warp, S and dP transposed in
// #fagpu.transposed<#fagpu.mma_sync_acc> (TileKernelBuilder's transposed
// scores), dQ = dS K from dSᵀ in shared memory read transposed, dQ added
// with f32 atomics.
//
// The IR around the forall (delta = rowsum(dO ∘ O) before, dQ's cast
// after) becomes the backward's row kernels NAME_pre and NAME_post, the
// ones the mma.sync backward uses; the main kernel takes the same
// arguments (q, k, v, dO, lse, delta, dq_acc, dk, dv), so the runtime runs
// either.
//
//===----------------------------------------------------------------------===//

#include "fa/Conversion/Passes.h"

#include "BackwardRowKernels.h"
#include "InputSlices.h"
#include "KernelConfig.h"
#include "TileKernelBuilder.h"

#include "mlir/IR/Matchers.h"
#include "fa/Dialect/FA/IR/FAOps.h"
#include "fa/Dialect/FAGPU/IR/FAGPU.h"
#include "fa/Transforms/Passes.h"
#include "fa/Transforms/TilingUtils.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Transforms/RegionUtils.h"

namespace mlir {
namespace fa {
#define GEN_PASS_DEF_CONVERTTILEDATTENTIONGRADTOFAGPU
#include "fa/Conversion/Passes.h.inc"
} // namespace fa
} // namespace mlir

using namespace mlir;
using namespace mlir::fa;

namespace {

/// 64 query rows (S, P, dP, dS, dQ) a block; its keys (dK, dV rows) split
/// over one warpgroup (64 keys) or two (128, which then split S's columns).
/// Above head dim 128 two warpgroups share 64 keys, splitting the columns
/// of every tile (dK and dV are 128 registers a thread each way). At head
/// dim 64 a block may take 128 query rows with 128 keys (FA3's hd64
/// tiles): each warpgroup then holds 64 rows of S, dP and dQ and of dK and
/// dV (4 x 32 + 2 x 64 registers a thread).
constexpr int64_t kBlockQ = 64, kWideBlockQ = 128;

int64_t backwardWarps(const AttentionKernelConfig &c) {
  return std::max(c.headDim, c.headDimV) > 128 ? 8 : c.blockKV / 16;
}

/// Why the head dims are not the tile level's (empty when they are): both
/// backwards take multiples of 16 (one k16 step) up to 256.
std::string checkTileHeadDims(const AttentionKernelConfig &c) {
  for (int64_t d : {c.headDim, c.headDimV})
    if (d % 16 != 0 || d > 256)
      return ("head dims must be multiples of 16 up to 256, got " + Twine(d))
          .str();
  return "";
}

/// Why the WGMMA backward cannot take `c` (empty when it can).
std::string checkWgmmaBackwardConfig(const AttentionKernelConfig &c,
                                     bool deterministic) {
  auto fail = [](const Twine &why) { return why.str(); };
  if (!c.elementType.isF16() && !c.elementType.isBF16())
    return fail("operands must be f16 or bf16");
  bool narrow = std::max(c.headDim, c.headDimV) <= 64;
  if (!(c.blockQ == kBlockQ && (c.blockKV == 64 || c.blockKV == 128)) &&
      !(c.blockQ == kWideBlockQ && c.blockKV == 128 && narrow))
    return fail("block-q must be 64 and block-kv 64 or 128 (one or two "
                "warpgroups), or both 128 at head dim 64, got " +
                Twine(c.blockQ) + " and " + Twine(c.blockKV));
  // dK and dV stay in registers with S, dP and dQ.
  if (std::string problem = checkTileHeadDims(c); !problem.empty())
    return problem;
  if (std::max(c.headDim, c.headDimV) > 128 && c.blockKV != 64)
    return fail("head dims above 128 take block-kv 64, got " +
                Twine(c.blockKV));
  // Runtime shapes and packed sequences: the grid is the call's (the
  // longest sequence's KV blocks, heads, batch or sequences).
  if (c.hasRuntimeShapes() && deterministic)
    return fail("a deterministic backward takes one shape, not runtime "
                "shapes or packed sequences (its turn counters are sized at "
                "compile time)");
  return checkGridLimits(c);
}

/// Why the mma.sync backward on the tile level cannot take `c` (empty when
/// it can): each warp owns 16 keys of the block (Sᵀ's rows, dK's and
/// dV's), and 16 query rows of dQ per warp and m16 tile.
std::string checkMmaSyncBackwardConfig(const AttentionKernelConfig &c,
                                       bool deterministic) {
  auto fail = [](const Twine &why) { return why.str(); };
  if (!c.elementType.isF16() && !c.elementType.isBF16())
    return fail("operands must be f16 or bf16");
  if (deterministic)
    return fail("a deterministic backward takes the WGMMA backward (sm_90a)");
  if (std::string problem = checkTileHeadDims(c); !problem.empty())
    return problem;
  if (c.blockKV != 32 && c.blockKV != 64 && c.blockKV != 128)
    return fail("block-kv must be 32, 64 or 128 (16 keys a warp), got " +
                Twine(c.blockKV));
  // dQ's rows split over the warps, in 16-row blocks; where there are
  // fewer blocks than warps, groups of warps split its columns too.
  bool rowsSplit = c.blockQ % c.blockKV == 0 && c.blockQ <= 128;
  bool columnsSplit = c.blockQ % 16 == 0 && c.blockKV % c.blockQ == 0 &&
                      llvm::isPowerOf2_64(c.blockKV / c.blockQ);
  if (!rowsSplit && !columnsSplit)
    return fail("block-q must be a multiple of block-kv up to 128, or "
                "block-kv a power of two times block-q (dQ's rows, then its "
                "columns, split over the warps), got " +
                Twine(c.blockQ) + " and " + Twine(c.blockKV));
  if (columnsSplit && !rowsSplit &&
      c.headDim % (8 * (c.blockKV / c.blockQ)) != 0)
    return fail("head dim " + Twine(c.headDim) + " does not split into " +
                Twine(c.blockKV / c.blockQ) +
                " column groups of 8-column multiples (dQ's columns over the "
                "warps of a " +
                Twine(c.blockKV) + "-key block)");
  return checkGridLimits(c);
}

/// Kernel arguments, in the order of the mma.sync backward's main kernel;
/// a deterministic backward also takes dQ's turn counters.
enum Argument { Q, K, V, DO, Lse, Delta, DqAcc, DK, DV, DqTurns };

/// A deterministic backward's turn for KV block `kvBlock` on the Q block
/// of rows [firstRow, endRow): the blocks that add into it are those of
/// the keys its rows see (splitKVBlocks, the inverse of the Q-block range
/// each KV block walks), taken last first: under a causal mask the block
/// that starts at this Q block (its diagonal) goes first, so no block
/// waits for one that reaches the Q block later in its walk.
Value emitTurn(OpBuilder &b, Location loc, const AttentionKernelConfig &c,
               Value kvBlock, Value firstRow, Value endRow) {
  std::optional<SmallVector<int64_t>> window;
  if (c.window)
    window = SmallVector<int64_t>{c.window->first, c.window->second};
  MaskBand band = MaskBand::get(
      c.causal,
      window ? std::optional<ArrayRef<int64_t>>(*window) : std::nullopt, c.seqQ,
      c.seqKV);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value lastRow = arith::SubIOp::create(b, loc, endRow, one);
  BlockSplit blocks =
      splitKVBlocks(b, loc, band, firstRow, lastRow, c.seqKV, c.blockKV);
  Value last = arith::SubIOp::create(b, loc, blocks.hi, one);
  return arith::SubIOp::create(b, loc, last, kvBlock);
}

/// With transposed scores a thread holds 16 queries' LSE: `S c1 - LSE c2`
/// scales them on their own, and ptxas hoists those products (they need
/// only the loads) above S's WGMMA issue, where the warp then waits for
/// the loads (H200: 14 % of the backward's stall samples at hd128). As
/// `(S (c1 / c2) - LSE) c2` every product needs S and comes after it.
static void scaleRowsWithScores(gpu::GPUFuncOp kernel) {
  auto splatOf = [](Value v) -> std::optional<APFloat> {
    DenseElementsAttr dense;
    if (matchPattern(v, m_Constant(&dense)) && dense.isSplat())
      return dense.getSplatValue<APFloat>();
    return std::nullopt;
  };
  kernel.walk([&](arith::SubFOp sub) {
    auto type = dyn_cast<RankedTensorType>(sub.getType());
    if (!type || !isa_and_nonnull<fagpu::TransposedLayoutAttr>(
                     type.getEncoding()))
      return;
    auto scores = sub.getLhs().getDefiningOp<arith::MulFOp>();
    auto rows = sub.getRhs().getDefiningOp<arith::MulFOp>();
    if (!scores || !rows || !rows.getLhs().getDefiningOp<fagpu::ExpandRowsOp>())
      return;
    std::optional<APFloat> c1 = splatOf(scores.getRhs()),
                           c2 = splatOf(rows.getRhs());
    if (!c1 || !c2 || c2->isZero())
      return;
    OpBuilder b(sub);
    Location loc = sub.getLoc();
    APFloat ratio = *c1;
    ratio.divide(*c2, APFloat::rmNearestTiesToEven);
    auto constant = [&](const APFloat &value) {
      return arith::ConstantOp::create(b, loc, type,
                                       DenseElementsAttr::get(type, value));
    };
    Value prescaled =
        arith::MulFOp::create(b, loc, scores.getLhs(), constant(ratio));
    Value centred =
        arith::SubFOp::create(b, loc, prescaled, rows.getLhs());
    Value scaled = arith::MulFOp::create(b, loc, centred, constant(*c2));
    sub.replaceAllUsesWith(scaled);
    sub.erase();
    if (scores->use_empty())
      scores.erase();
    if (rows->use_empty())
      rows.erase();
  });
}

/// The ops of `func`'s body before `forall` that compute what its body
/// reads from above, and what they read in turn, up to the ops `isInput`
/// (values the kernel gets as arguments).
static SetVector<Operation *>
opsReadInside(func::FuncOp func, scf::ForallOp forall,
              function_ref<bool(Operation *)> isInput) {
  SetVector<Value> above;
  getUsedValuesDefinedAbove(forall.getRegion(), above);
  BackwardSliceOptions options;
  options.filter = [&](Operation *op) {
    return op->getBlock() == &func.getBody().front() && !isInput(op);
  };
  SetVector<Operation *> ops;
  for (Value v : above)
    if (Operation *def = v.getDefiningOp(); def && options.filter(def)) {
      (void)getBackwardSlice(def, &ops, options);
      ops.insert(def);
    }
  return ops;
}

struct ConvertTiledAttentionGradToFAGPUPass
    : fa::impl::ConvertTiledAttentionGradToFAGPUBase<
          ConvertTiledAttentionGradToFAGPUPass> {
  using ConvertTiledAttentionGradToFAGPUBase::
      ConvertTiledAttentionGradToFAGPUBase;

  void runOnOperation() override {
    if (dqReduction != "auto" && dqReduction != "bulk" &&
        dqReduction != "atomic") {
      getOperation().emitError()
          << "fa-convert-tiled-attention-grad-to-fagpu: dq-reduction must be "
             "auto, bulk or atomic, got '"
          << dqReduction << "'";
      return signalPassFailure();
    }
    SmallVector<func::FuncOp> funcs;
    getOperation().walk([&](func::FuncOp func) {
      if (!func.getOps<scf::ForallOp>().empty())
        funcs.push_back(func);
    });
    gpu::GPUModuleOp gpuModule;
    for (func::FuncOp func : funcs)
      if (failed(convert(func, gpuModule)))
        return signalPassFailure();
  }

  LogicalResult convert(func::FuncOp func, gpu::GPUModuleOp &gpuModule) {
    auto foralls = llvm::to_vector(func.getOps<scf::ForallOp>());
    AttentionGradTileOp tileOp;
    func.walk([&](AttentionGradTileOp t) {
      if (!tileOp)
        tileOp = t;
    });
    if (foralls.size() != 1 || !tileOp)
      return func.emitError()
             << "fa-convert-tiled-attention-grad-to-fagpu takes one tiled "
                "attention backward per function (fa-tile-attention-grad)";
    scf::ForallOp forall = foralls.front();
    FailureOr<AttentionKernelConfig> config =
        readKernelConfig(tileOp, func.getSymName());
    if (failed(config))
      return failure();
    // Packed sequences: the q and k tiles' rows start at offsets read from
    // cu_seqlens_q and cu_seqlens_k.
    DenseMap<Operation *, unsigned> slices;
    func.walk([&](AttentionGradTileOp tile) {
      for (auto [role, operand] :
           llvm::enumerate(ValueRange{tile.getQuery(), tile.getKey()}))
        if (tensor::ExtractSliceOp slice = sliceOfTile(operand))
          slices[slice] = role;
    });
    FailureOr<SmallVector<BlockArgument, 2>> sequenceStarts =
        traceSequenceStarts(func, slices,
                            "fa-convert-tiled-attention-grad-to-fagpu");
    if (failed(sequenceStarts))
      return failure();
    config->varlen = !sequenceStarts->empty();
    StringRef kernelName = mmaSync ? "mma.sync backward" : "WGMMA backward";
    std::string problem =
        mmaSync ? checkMmaSyncBackwardConfig(*config, tileOp.getDeterministic())
                : checkWgmmaBackwardConfig(*config, tileOp.getDeterministic());
    if (!problem.empty())
      return tileOp.emitError()
             << "cannot lower to the " << kernelName << ": " << problem;
    // Checked before the kernels are built: an error on the op afterwards
    // prints it half converted. Bulk reductions and transposed scores as
    // an option are the WGMMA kernel's (the mma.sync one always transposes).
    if (mmaSync && (dqReduction == "bulk" || transposeScores))
      return tileOp.emitError()
             << (transposeScores ? "transpose-scores" : "dq-reduction=bulk")
             << " is the WGMMA backward's (mma-sync adds dQ with atomics and "
                "always computes the scores transposed)";
    // Each warp: 16 keys of the block.
    int64_t warps = mmaSync ? config->blockKV / 16 : backwardWarps(*config);
    if (dqReduction == "bulk" &&
        std::max(config->headDim, config->headDimV) > 128)
      return tileOp.emitError()
             << "dq-reduction=bulk takes head dims up to 128 (the f32 staging "
                "tile does not fit shared memory beside the others above)";
    // Sᵀ's rows are the keys: 64 a warpgroup, the WGMMA accumulator's.
    if (transposeScores && config->blockKV != 16 * warps)
      return tileOp.emitError()
             << "transpose-scores needs 64 keys a compute warpgroup, got "
             << config->blockKV << " keys on " << warps / 4
             << " (head dims above 128 split 64-key blocks over two)";
    bool deterministic = tileOp.getDeterministic();
    // The forall's body: slices of its outputs, then the loop over KV
    // blocks, which becomes the grid's x.
    scf::ForOp kvLoop;
    for (Operation &op : forall.getBody()->without_terminator()) {
      if (auto loop = dyn_cast<scf::ForOp>(op)) {
        if (kvLoop)
          return loop.emitError() << "expects one loop over KV blocks";
        kvLoop = loop;
      } else if (kvLoop) {
        return op.emitError() << "expects the loop over KV blocks to end the "
                                 "backward's forall";
      }
    }
    if (!kvLoop || forall.getInductionVars().size() > 2)
      return forall.emitError() << "expects a forall over (batch, KV head) "
                                   "around one loop over KV blocks";
    // The sources of the tile's operands: the function's inputs, and delta
    // (computed before the forall: the pre kernel).
    SmallVector<std::pair<Value, Argument>> inputs = {
        {sourceOfTile(tileOp.getQuery()), Q},
        {sourceOfTile(tileOp.getKey()), K},
        {sourceOfTile(tileOp.getValue()), V},
        {sourceOfTile(tileOp.getGradOutput()), DO},
        {sourceOfTile(tileOp.getLse()), Lse},
        {sourceOfTile(tileOp.getDelta()), Delta}};
    for (auto [source, role] : inputs)
      if (!source)
        return tileOp.emitError()
               << "operand " << role << " is not a tile of the inputs";
    // The decomposition below erases the tile op: its location is kept.
    Location opLoc = tileOp.getLoc();
    if (failed(decomposeAttentionTiles(func)))
      return failure();

    OpBuilder b(func.getContext());
    getOrCreateKernelModule(getOperation(), gpuModule);
    Location loc = func.getLoc();
    const AttentionKernelConfig &c = *config;
    Type t = c.elementType, f32 = b.getF32Type();
    SmallVector<Type> arguments = {
        backwardTensorType(c, c.headsQ, c.seqQ, c.headDim, t),
        backwardTensorType(c, c.headsKV, c.seqKV, c.headDim, t),
        backwardTensorType(c, c.headsKV, c.seqKV, c.headDimV, t),
        backwardTensorType(c, c.headsQ, c.seqQ, c.headDimV, t),
        backwardRowType(c, f32),
        backwardRowType(c, f32),
        backwardTensorType(c, c.headsQ, c.seqQ, c.headDim, f32),
        backwardTensorType(c, c.headsKV, c.seqKV, c.headDim, t),
        backwardTensorType(c, c.headsKV, c.seqKV, c.headDimV, t)};
    // dQ's turn counters: one per (batch, query head, Q block), zero
    // before the launch.
    if (deterministic)
      arguments.push_back(
          MemRefType::get({c.batch, c.headsQ, c.numQBlocks()}, b.getI32Type()));
    // Packed sequences: their offsets (cu_seqlens_q, cu_seqlens_k) follow.
    size_t firstStart = arguments.size();
    for (BlockArgument starts : *sequenceStarts)
      arguments.push_back(memrefTypeOf(starts.getType()));
    // The grid: (KV blocks, KV heads, batch); packed sequences: the longest
    // sequence's KV blocks and the call's sequences.
    int64_t kvBlocks = c.varlen || ShapedType::isDynamic(c.seqKV)
                           ? ShapedType::kDynamic
                           : (c.seqKV + c.blockKV - 1) / c.blockKV;
    int64_t gridZ = c.varlen ? ShapedType::kDynamic : c.batch;
    if (failed(emitBackwardPreKernel(b, gpuModule, func, forall, c)))
      return failure();
    gpu::GPUFuncOp kernel =
        createKernelFunc(b, opLoc, gpuModule, c.name, arguments, "backward",
                         {kvBlocks, c.headsKV, gridZ}, 32 * warps,
                         /*sharedBytes=*/0, c);
    if (failed(emitBackwardPostKernel(b, gpuModule, func, forall, c)))
      return failure();
    Block &entry = kernel.getBody().front();
    b.setInsertionPointToStart(&entry);

    TileKernelBuilder builder(b, warps);
    builder.entry = &entry;
    builder.mmaSync = mmaSync;
    // dQ's staging tile (64 x D f32) fits beside the others up to head dim
    // 128 (192 KiB at 128 with two Q/dO stages). The compiler's choice is
    // the staged tile where it fits: added through TMA from a swizzled tile
    // (fagpu-tma-reductions) it measured 1-3 % faster than the atomic sum
    // on the H200 at head dims 64 and 128 (plain rows: 2-5 % slower; the
    // bank conflicts of their stores; docs/perf/README.md).
    bool wide = std::max(c.headDim, c.headDimV) > 128;
    builder.bulkAccumulate =
        !mmaSync && (dqReduction == "bulk" || (dqReduction == "auto" && !wide));
    // FlashAttention 2's backward computes the scores transposed: a warp's
    // keys are Sᵀ's rows, and Pᵀ, dSᵀ its register A operands.
    builder.transposeScores = transposeScores || mmaSync;
    // The inputs: whole tensors, and where their runtime sizes are read.
    for (auto [source, role] : inputs)
      builder.arguments[source] = builder.inputArguments[source] =
          entry.getArgument(role);
    for (auto [i, starts] : llvm::enumerate(*sequenceStarts))
      builder.inputArguments[starts] = entry.getArgument(firstStart + i);
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    for (auto [i, out] : llvm::enumerate(forall.getRegionIterArgs())) {
      OutputView view;
      view.memref = entry.getArgument(DqAcc + i);
      view.offsets.assign(4, zero);
      // dQ: every KV block adds its part.
      view.accumulate = i == 0;
      builder.outputs[out] = view;
    }
    // Block ids: (KV block, KV head, batch) = (x, y, z).
    auto ivs = forall.getInductionVars();
    builder.map.map(ivs.back(),
                    gpu::BlockIdOp::create(b, loc, gpu::Dimension::y));
    if (ivs.size() == 2)
      builder.map.map(ivs.front(),
                      gpu::BlockIdOp::create(b, loc, gpu::Dimension::z));
    // What the forall's body reads from before it (constants, fills; the
    // sizes of packed sequences), not what only the row kernels or the
    // grid need: delta is the pre kernel's, the forall's bounds the
    // launch's.
    SetVector<Operation *> read =
        opsReadInside(func, forall, [&](Operation *op) {
          return op->getNumResults() == 1 &&
                 op->getResult(0) == inputs.back().first;
        });
    for (Operation &op : func.getBody().front()) {
      if (&op == forall.getOperation())
        break;
      if (read.contains(&op) && failed(builder.convertOp(op)))
        return failure();
    }
    for (Operation &op : forall.getBody()->without_terminator()) {
      if (&op == kvLoop.getOperation())
        break;
      if (failed(builder.convertOp(op)))
        return failure();
    }
    Value kvBlock = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
    // Deterministic: the KV blocks last first, the order of their turns,
    // so that a block only ever waits for blocks launched before it (a
    // block waiting for one not yet resident would wait forever).
    if (deterministic)
      kvBlock = arith::SubIOp::create(
          b, loc, arith::ConstantIndexOp::create(b, loc, kvBlocks - 1),
          kvBlock);
    builder.map.map(kvLoop.getInductionVar(), kvBlock);
    if (deterministic) {
      builder.turnCounters = entry.getArgument(DqTurns);
      builder.turnOf = [&, kvBlock](Value firstRow, Value endRow) {
        return emitTurn(b, loc, c, kvBlock, firstRow, endRow);
      };
      builder.turnRows = c.blockQ;
    }
    for (auto [arg, init] :
         llvm::zip(kvLoop.getRegionIterArgs(), kvLoop.getInitArgs())) {
      auto view = builder.outputs.find(init);
      if (view == builder.outputs.end())
        // By location, as placeKernelSharedTiles: the kernels are half
        // built.
        return emitError(kvLoop.getLoc()) << "the loop over KV blocks "
                                             "carries outputs only";
      builder.outputs[arg] = view->second;
    }
    if (failed(builder.convertBlock(*kvLoop.getBody())))
      return failure();
    if (builder.transposeScores)
      scaleRowsWithScores(kernel);
    // The block's shared memory outlives the bulk reductions' reads.
    if (builder.bulkReductions)
      fagpu::WaitSharedReadsOp::create(b, loc);
    gpu::ReturnOp::create(b, loc);

    if (failed(placeKernelSharedTiles(kernel, opLoc, kernelName)))
      return failure();
    // The launches live in the runtime; the kernels carry their geometry.
    func.erase();
    return success();
  }
};

} // namespace
