//===- TiledAttentionToFAGPU.cpp - Tiled attention -> GPU tile level ------===//
//
// Lowers the tiled forward, as it is, onto the GPU tile level: the forall
// becomes the grid, its (batch, head, Q block) the block ids; the padded
// Q/K/V tiles cut from the inputs become shared tiles filled by
// fagpu.copy_to_shared; the KV loops stay loops. The math is the one
// definition of it, the decomposition of the tile ops
// (decomposeAttentionTiles), carried over op by op: each tile-sized
// linalg.generic becomes the same arith/math ops on register tiles whose layout
// is the WGMMA accumulator's, or with mma-sync the mma.sync accumulator's
// (contractions become fagpu.mma, row reductions
// fagpu.reduce_rows, row broadcasts fagpu.expand_rows, linalg.index
// fagpu.tile_coords). Nothing is rebuilt from numbers: the kernel is the IR
// given, with layouts.
//
//===----------------------------------------------------------------------===//

#include "fa/Conversion/Passes.h"

#include "InputSlices.h"
#include "KernelConfig.h"
#include "TileKernelBuilder.h"
#include "fa/Dialect/FA/IR/FAOps.h"
#include "fa/Dialect/FAGPU/IR/FAGPU.h"
#include "fa/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"

namespace mlir {
namespace fa {
#define GEN_PASS_DEF_CONVERTTILEDATTENTIONTOFAGPU
#include "fa/Conversion/Passes.h.inc"
} // namespace fa
} // namespace mlir

using namespace mlir;
using namespace mlir::fa;

namespace {

constexpr int64_t kWarpgroupRows = 64;

/// Why the WGMMA kernel cannot take `c` (empty when it can).
std::string checkWgmmaKernelConfig(const AttentionKernelConfig &c) {
  auto fail = [](const Twine &why) { return why.str(); };
  if (!c.elementType.isF16() && !c.elementType.isBF16() &&
      !isa<Float8E4M3FNType>(c.elementType))
    return fail("operands must be f16, bf16 or f8E4M3FN");
  if (c.blockQ != 64 && c.blockQ != 128 && c.blockQ != 192)
    return fail("block-q must be 64, 128 or 192 (one to three warpgroups), "
                "got " +
                Twine(c.blockQ));
  // Three warpgroups get 160 registers each (fagpu-warp-specialize): an
  // m64n256 accumulator alone is 128 of them, and ptxas refuses the kernel.
  if (c.blockQ == 192 && std::max(c.headDim, c.headDimV) > 128)
    return fail("block-q 192 (three warpgroups of 160 registers) takes head "
                "dims up to 128, got " +
                Twine(std::max(c.headDim, c.headDimV)));
  if (c.blockKV < 16 || c.blockKV > 256)
    return fail("block-kv must be in [16, 256], got " + Twine(c.blockKV));
  // FP8: V's transpose has the keys along its swizzled rows (32-byte
  // swizzle atoms at least), and its transposition takes 32 keys a unit.
  if (isa<Float8E4M3FNType>(c.elementType) && c.blockKV % 32 != 0)
    return fail("FP8 takes block-kv in multiples of 32 (V's transpose holds "
                "the keys in swizzled rows of 32-byte atoms), got " +
                Twine(c.blockKV));
  // Q, K, V tiles' rows in 32-byte swizzle atoms at least (head dim 80:
  // 160-byte rows); FP8 keeps 128-byte rows (its V transposition's units).
  int64_t atomBytes = isa<Float8E4M3FNType>(c.elementType) ? 128 : 32;
  int64_t atom = atomBytes / (c.elementType.getIntOrFloatBitWidth() / 8);
  for (int64_t d : {c.headDim, c.headDimV})
    if (d % atom != 0 || d > 256)
      return fail("head dims must be multiples of " + Twine(atom) +
                  " up to 256 (" + Twine(atomBytes) +
                  "-byte swizzle atoms), got " + Twine(d));
  return checkGridLimits(c);
}

/// Why the mma.sync kernel cannot take `c` (empty when it can): warps of
/// 16 or 32 query rows, products of m16n8k16 steps.
std::string checkMmaSyncTileConfig(const AttentionKernelConfig &c) {
  auto fail = [](const Twine &why) { return why.str(); };
  if (!c.elementType.isF16() && !c.elementType.isBF16())
    return fail("operands must be f16 or bf16");
  if (c.rowsPerWarp != 16 && c.rowsPerWarp != 32)
    return fail("rows per warp must be 16 or 32, got " + Twine(c.rowsPerWarp));
  if (c.blockQ % c.rowsPerWarp != 0 || c.warps() > 16 ||
      !llvm::isPowerOf2_64(c.warps()))
    return fail("block-q must be " + Twine(c.rowsPerWarp) +
                " rows per warp times a power of two of warps, at most 16, "
                "got " +
                Twine(c.blockQ));
  if (c.blockKV < 16 || c.blockKV > 256 || c.blockKV % 16 != 0)
    return fail("block-kv must be a multiple of 16 in [16, 256], got " +
                Twine(c.blockKV));
  for (int64_t d : {c.headDim, c.headDimV})
    if (d % 16 != 0 || d > 256)
      return fail("head dims must be multiples of 16 up to 256, got " +
                  Twine(d));
  return checkGridLimits(c);
}

/// The function arguments that the tile ops' descales are read from (q's,
/// k's, then v's: the kernel's last arguments), each by a tensor.extract.
FailureOr<SmallVector<BlockArgument>> traceDescales(func::FuncOp func) {
  SmallVector<Value> reads;
  bool seen = false;
  WalkResult walk = func.walk([&](Operation *op) {
    if (auto online = dyn_cast<OnlineAttentionOp>(op); online && !seen) {
      seen = true;
      llvm::append_range(reads, online.getDescales());
    } else if (auto norm = dyn_cast<NormalizeOp>(op);
               norm && norm.getDescale()) {
      reads.push_back(norm.getDescale());
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  (void)walk;
  SmallVector<BlockArgument> arguments;
  for (Value read : reads) {
    auto extract = read.getDefiningOp<tensor::ExtractOp>();
    auto argument =
        extract ? dyn_cast<BlockArgument>(extract.getTensor()) : nullptr;
    if (!argument || argument.getOwner() != &func.getBody().front())
      return func.emitError()
             << "the GPU tile level reads FP8 descales from function "
                "arguments only";
    arguments.push_back(argument);
  }
  return arguments;
}

struct ConvertTiledAttentionToFAGPUPass
    : fa::impl::ConvertTiledAttentionToFAGPUBase<
          ConvertTiledAttentionToFAGPUPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> funcs;
    module.walk([&](func::FuncOp func) {
      if (!func.getOps<scf::ForallOp>().empty())
        funcs.push_back(func);
    });
    gpu::GPUModuleOp gpuModule;
    for (func::FuncOp func : funcs) {
      if (failed(convert(func, gpuModule)))
        return signalPassFailure();
    }
  }

  LogicalResult convert(func::FuncOp func, gpu::GPUModuleOp &gpuModule) {
    auto foralls = llvm::to_vector(func.getOps<scf::ForallOp>());
    OnlineAttentionOp tileOp;
    bool backward = false;
    func.walk([&](Operation *op) {
      if (auto t = dyn_cast<OnlineAttentionOp>(op); t && t.isTile() && !tileOp)
        tileOp = t;
      backward |= isa<AttentionGradTileOp>(op);
    });
    if (foralls.size() != 1 || !tileOp || backward)
      return func.emitError()
             << "fa-convert-tiled-attention-to-fagpu takes one tiled "
                "attention forward per function (fa-tile-attention); the "
                "backward is on the mma.sync path";
    FailureOr<AttentionKernelConfig> config =
        readKernelConfig(tileOp, func.getSymName());
    if (failed(config))
      return failure();
    config->rowsPerWarp =
        !mmaSync      ? 16
        : rowsPerWarp ? rowsPerWarp.getValue()
                      : defaultRowsPerWarp(config->blockQ, config->headDim,
                                           config->headDimV);
    std::string problem = mmaSync ? checkMmaSyncTileConfig(*config)
                                  : checkWgmmaKernelConfig(*config);
    StringRef kernelName = mmaSync ? "mma.sync kernel" : "WGMMA kernel";
    if (!problem.empty())
      return tileOp.emitError()
             << "cannot lower to the " << kernelName << ": " << problem;
    FailureOr<InputSlices> inputs = traceInputSlices(func);
    if (failed(inputs))
      return failure();
    config->varlen = !inputs->sequenceStarts.empty();
    // FP8: the descale arguments (q's, k's, v's), read once per block.
    FailureOr<SmallVector<BlockArgument>> descales = traceDescales(func);
    if (failed(descales))
      return failure();
    // The decomposition below erases the tile op: its location is kept.
    Location opLoc = tileOp.getLoc();
    if (failed(decomposeAttentionTiles(func)))
      return failure();

    scf::ForallOp forall = foralls.front();
    OpBuilder b(func.getContext());
    getOrCreateKernelModule(getOperation(), gpuModule);
    SmallVector<Type> arguments;
    for (Type t : inputs->types)
      arguments.push_back(memrefTypeOf(t));
    for (Type t : forall.getResultTypes())
      arguments.push_back(memrefTypeOf(t));
    // Packed sequences: their offsets (cu_seqlens_q, cu_seqlens_k) follow.
    for (BlockArgument starts : inputs->sequenceStarts)
      arguments.push_back(memrefTypeOf(starts.getType()));
    for (BlockArgument descale : *descales)
      arguments.push_back(memrefTypeOf(descale.getType()));
    int64_t warps =
        mmaSync ? config->warps() : config->blockQ / kWarpgroupRows * 4;
    gpu::GPUFuncOp kernel = createKernelFunc(
        b, forall.getLoc(), gpuModule, func.getSymName(), arguments, "forward",
        config->grid(), 32 * warps, /*sharedBytes=*/0, *config);
    Block &entry = kernel.getBody().front();
    b.setInsertionPointToStart(&entry);

    TileKernelBuilder builder(b, warps);
    builder.pairFP8Keys = pairFP8Keys;
    builder.mmaSync = mmaSync;
    builder.entry = &entry;
    for (auto [slice, role] : inputs->roles) {
      builder.sliceArguments[slice] = entry.getArgument(role);
      builder.inputArguments[cast<tensor::ExtractSliceOp>(slice).getSource()] =
          entry.getArgument(role);
    }
    for (auto [out, memref] :
         llvm::zip(forall.getRegionIterArgs(),
                   entry.getArguments().drop_front(kNumInputs)))
      builder.arguments[out] = memref;
    for (auto [i, starts] : llvm::enumerate(inputs->sequenceStarts))
      builder.inputArguments[starts] = entry.getArgument(
          kNumInputs + forall.getNumResults() + i);
    for (auto [i, descale] : llvm::enumerate(*descales))
      builder.inputArguments[descale] =
          entry.getArgument(kNumInputs + forall.getNumResults() +
                            inputs->sequenceStarts.size() + i);
    // The forall is the grid: (batch, head, Q block) = block (z, y, x), the
    // Q blocks last-first: blocks start in the order of their ids, and under
    // a causal mask the last Q blocks are the longest, so the short ones
    // fill the tail.
    Location loc = func.getLoc();
    auto ivs = forall.getInductionVars();
    // With runtime shapes (not packed sequences, whose grid follows the
    // longest sequence, an argument the kernel does not take) the kernel
    // computes the forall's extents from its own sizes and states them
    // (fagpu.tile_grid), so that fagpu-persistent-grid can loop over them;
    // elsewhere the grid's sizes are the launch's (block ids stand for the
    // forall's indices) and what only bounds the forall stays on the host.
    bool statesTileGrid =
        ShapedType::isDynamic(config->grid()[0]) && !config->varlen;
    for (Operation &op : func.getBody().front()) {
      if (&op == forall.getOperation())
        break;
      if (!statesTileGrid && op.getNumResults() > 0 &&
          llvm::all_of(op.getUsers(),
                       [&](Operation *user) { return user == forall; }) &&
          llvm::none_of(forall.getOutputs(),
                        [&](Value out) { return out.getDefiningOp() == &op; }))
        continue;
      if (failed(builder.convertOp(op)))
        return failure();
    }
    SmallVector<Value> extents;
    if (statesTileGrid) {
      for (OpFoldResult bound : forall.getMixedUpperBound()) {
        if (auto value = dyn_cast<Value>(bound))
          bound = builder.map.lookupOrDefault(value);
        extents.push_back(getValueOrCreateConstantIndexOp(b, loc, bound));
      }
      // (batch, head, Q block) is block (z, y, x).
      fagpu::TileGridOp::create(b, loc, extents[2], extents[1], extents[0]);
    }
    builder.map.map(ivs[0], gpu::BlockIdOp::create(b, loc, gpu::Dimension::z));
    builder.map.map(ivs[1], gpu::BlockIdOp::create(b, loc, gpu::Dimension::y));
    // The Q-block count: static, the stated tile grid's x, or the launch
    // grid's x (packed sequences).
    Value qBlocks =
        !ShapedType::isDynamic(config->grid()[0])
            ? Value(
                  arith::ConstantIndexOp::create(b, loc, config->numQBlocks()))
        : statesTileGrid
            ? extents[2]
            : Value(gpu::GridDimOp::create(b, loc, gpu::Dimension::x));
    Value lastQBlock = arith::SubIOp::create(
        b, loc, qBlocks, arith::ConstantIndexOp::create(b, loc, 1));
    builder.map.map(ivs[2],
                    arith::SubIOp::create(
                        b, loc, lastQBlock,
                        gpu::BlockIdOp::create(b, loc, gpu::Dimension::x)));
    if (failed(builder.convertBlock(*forall.getBody())))
      return failure();
    for (Operation &op : forall.getTerminator().getYieldingOps())
      builder.storeRows(cast<tensor::ParallelInsertSliceOp>(op));
    gpu::ReturnOp::create(b, func.getLoc());
    if (failed(placeKernelSharedTiles(
            kernel, opLoc, kernelName,
            " a block can have (smaller block-q or block-kv)")))
      return failure();
    // The launch lives in the runtime; the kernel carries its geometry.
    func.erase();
    return success();
  }
};

} // namespace
