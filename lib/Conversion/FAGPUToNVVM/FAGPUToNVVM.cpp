//===- FAGPUToNVVM.cpp - GPU tile level -> per-thread NVVM code -----------===//
//
// Register tiles become each thread's registers (a vector in the layout's
// register order; their ops: RegisterTilesToNVVM.cpp); shared tiles are
// placed in the kernel's dynamic shared memory and filled and stored here.
// Matrix products: MmaToWGMMA.cpp; barriers and TMA: BarriersToNVVM.cpp.
//
//===----------------------------------------------------------------------===//

#include "fa/Conversion/Passes.h"

#include "TileLowering.h"
#include "fa/Conversion/ApproximateMath.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/Patterns.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/DialectConversion.h"
#include "llvm/ADT/TypeSwitch.h"

namespace mlir {
namespace fa {
#define GEN_PASS_DEF_CONVERTFAGPUTONVVM
#include "fa/Conversion/Passes.h.inc"
} // namespace fa
} // namespace mlir

using namespace mlir;
using namespace mlir::fagpu;

namespace {

constexpr StringLiteral kSharedTilesGlobal = "__fa_shared_tiles";
constexpr StringLiteral kSharedOffsetAttr = "fagpu.shared_offset";

/// alloc_shared and alloc_barriers: the dynamic shared window plus the
/// offset assignSharedOffsets gave them.
template <typename AllocOp>
struct LowerAllocShared : OpConversionPattern<AllocOp> {
  using OpConversionPattern<AllocOp>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(AllocOp op, typename AllocOp::Adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto offset = op->template getAttrOfType<IntegerAttr>(kSharedOffsetAttr);
    if (!offset)
      return rewriter.notifyMatchFailure(op, "not placed");
    Location loc = op.getLoc();
    auto ptrType = LLVM::LLVMPointerType::get(op.getContext(), 3);
    Value base =
        LLVM::AddressOfOp::create(rewriter, loc, ptrType, kSharedTilesGlobal);
    rewriter.replaceOp(
        op, emitSharedAddress(rewriter, loc, base,
                              arith::ConstantIndexOp::create(rewriter, loc,
                                                             offset.getInt())));
    return success();
  }
};

/// Calls `body(row, col, sourceRow, inside)` for each 16-byte chunk of
/// `tile` a thread copies from source rows `firstRow` + row (chunks spread
/// over the block's threads, row-major); `inside` is sourceRow < limit.
static void forEachChunk(
    ConversionPatternRewriter &rewriter, Location loc, SharedTileType tile,
    Value firstRow, Value limit,
    function_ref<void(Value row, Value col, Value sourceRow, Value inside)>
        body) {
  int64_t perChunk = 16 / tile.getElementBytes();
  int64_t chunksPerRow = tile.getCols() / perChunk;
  auto c = [&](int64_t v) {
    return arith::ConstantIndexOp::create(rewriter, loc, v);
  };
  Value tid = emitGroupThreadId(rewriter, loc);
  Value threads = emitGroupThreads(rewriter, loc);
  auto loop = scf::ForOp::create(rewriter, loc, tid,
                                 c(tile.getRows() * chunksPerRow), threads);
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointToStart(loop.getBody());
  Value chunk = loop.getInductionVar();
  Value row = arith::DivUIOp::create(rewriter, loc, chunk, c(chunksPerRow));
  // One op per statement: argument evaluation order is unspecified.
  Value chunkElements = c(perChunk);
  Value chunkInRow =
      arith::RemUIOp::create(rewriter, loc, chunk, c(chunksPerRow));
  Value col = arith::MulIOp::create(rewriter, loc, chunkInRow, chunkElements);
  Value sourceRow = arith::AddIOp::create(rewriter, loc, firstRow, row);
  Value inside = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::ult,
                                       sourceRow, limit);
  body(row, col, sourceRow, inside);
}

struct LowerCopyToShared : OpConversionPattern<CopyToSharedOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(CopyToSharedOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    SharedTileType tile = op.getDest().getType();
    auto chunkType =
        VectorType::get({16 / tile.getElementBytes()}, tile.getElementType());
    // Nobody reads the tile's previous contents any more.
    gpu::BarrierOp::create(rewriter, loc);
    forEachChunk(
        rewriter, loc, tile, adaptor.getRow(), adaptor.getLimit(),
        [&](Value row, Value col, Value sourceRow, Value inside) {
          auto ifInside = scf::IfOp::create(rewriter, loc, chunkType, inside,
                                            /*withElseRegion=*/true);
          rewriter.setInsertionPointToStart(ifInside.thenBlock());
          Value loaded = vector::LoadOp::create(rewriter, loc, chunkType,
                                                adaptor.getSource(),
                                                ValueRange{sourceRow, col});
          scf::YieldOp::create(rewriter, loc, loaded);
          rewriter.setInsertionPointToStart(ifInside.elseBlock());
          Value zeros = arith::ConstantOp::create(
              rewriter, loc, chunkType, rewriter.getZeroAttr(chunkType));
          scf::YieldOp::create(rewriter, loc, zeros);
          rewriter.setInsertionPointAfter(ifInside);
          Value address = emitSharedAddress(
              rewriter, loc, adaptor.getDest(),
              emitSharedByteOffset(rewriter, loc, tile, row, col));
          LLVM::StoreOp::create(rewriter, loc, ifInside.getResult(0), address,
                                /*alignment=*/16);
        });
    publishSharedWrites(rewriter, loc);
    rewriter.eraseOp(op);
    return success();
  }
};

struct LowerAsyncCopyToShared : OpConversionPattern<AsyncCopyToSharedOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(AsyncCopyToSharedOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    SharedTileType tile = op.getDest().getType();
    Value source = adaptor.getSource();
    auto c = [&](int64_t v) {
      return arith::ConstantIndexOp::create(rewriter, loc, v);
    };
    forEachChunk(
        rewriter, loc, tile, adaptor.getRow(), adaptor.getLimit(),
        [&](Value row, Value col, Value sourceRow, Value inside) {
          // Rows past the end read nothing (source size 0: zero fill) from a
          // valid address, row 0.
          Value readRow =
              arith::SelectOp::create(rewriter, loc, inside, sourceRow, c(0));
          Value address =
              emitGlobalAddress(rewriter, loc, source, {readRow, col});
          Value globalPtr = LLVM::IntToPtrOp::create(
              rewriter, loc, LLVM::LLVMPointerType::get(op.getContext(), 1),
              address);
          Value sharedPtr = emitSharedAddress(
              rewriter, loc, adaptor.getDest(),
              emitSharedByteOffset(rewriter, loc, tile, row, col));
          Value none = arith::ConstantIntOp::create(rewriter, loc, 0, 32);
          Value all = arith::ConstantIntOp::create(rewriter, loc, 16, 32);
          Value bytes =
              arith::SelectOp::create(rewriter, loc, inside, all, none);
          NVVM::CpAsyncOp::create(rewriter, loc, sharedPtr, globalPtr, 16,
                                  NVVM::LoadCacheModifierKind::CG, bytes);
        });
    rewriter.eraseOp(op);
    return success();
  }
};

struct LowerCommitSharedCopies : OpConversionPattern<CommitSharedCopiesOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(CommitSharedCopiesOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<NVVM::CpAsyncCommitGroupOp>(op);
    return success();
  }
};

struct LowerWaitSharedCopies : OpConversionPattern<WaitSharedCopiesOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(WaitSharedCopiesOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    NVVM::CpAsyncWaitGroupOp::create(rewriter, op.getLoc(), op.getPending());
    publishSharedWrites(rewriter, op.getLoc());
    rewriter.eraseOp(op);
    return success();
  }
};

struct LowerStage : OpConversionPattern<StageOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(StageOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value bytes = arith::MulIOp::create(
        rewriter, loc, adaptor.getIndex(),
        arith::ConstantIndexOp::create(
            rewriter, loc, op.getRing().getType().getStageStride()));
    rewriter.replaceOp(
        op, emitSharedAddress(rewriter, loc, adaptor.getRing(), bytes));
    return success();
  }
};

/// Whether a 2-D tile of `layout` can be stored two adjacent columns at a
/// time: register bit 0 steps one column, every other basis an even number
/// of columns, 16-bit elements and rows an even number of elements apart.
static bool storesPairs(const TileLayout &layout, RankedTensorType type,
                        MemRefType dest, bool allowF32 = false) {
  unsigned bits = type.getElementType().getIntOrFloatBitWidth();
  if (type.getRank() != 2 || (bits != 16 && !(allowF32 && bits == 32)))
    return false;
  ArrayRef<TileCoord> regs = layout.registerBases();
  if (regs.empty() || regs[0].row != 0 || regs[0].col != 1)
    return false;
  auto even = [](const TileCoord &c) { return c.col % 2 == 0; };
  if (!llvm::all_of(regs.drop_front(), even) ||
      !llvm::all_of(layout.laneBases(), even) ||
      !llvm::all_of(layout.warpBasesRef(), even))
    return false;
  SmallVector<int64_t> strides;
  int64_t offset;
  return succeeded(dest.getStridesAndOffset(strides, offset)) &&
         strides.back() == 1 && !ShapedType::isDynamic(strides[0]) &&
         strides[0] % 2 == 0;
}

/// The register bit of `layout` that steps `cols` columns, or -1.
static int registerBitFor(const TileLayout &layout, int64_t cols) {
  for (auto [bit, basis] : llvm::enumerate(layout.registerBases()))
    if (basis.row == 0 && basis.col == cols)
      return bit;
  return -1;
}

/// Register bits (stepping 8 and 16 columns) along which the four lanes
/// that split each 8-column chunk (lane bits 0 and 1 step 2 and 4 columns:
/// the mma.sync / WGMMA accumulator) can trade their pairs so that each
/// holds 8 consecutive 16-bit columns: one 16-byte store for four.
static std::optional<std::pair<int, int>>
quadChunkBits(const TileLayout &layout, RankedTensorType type,
              MemRefType dest) {
  ArrayRef<TileCoord> lanes = layout.laneBases();
  if (!storesPairs(layout, type, dest) || lanes.size() < 2 ||
      lanes[0].row != 0 || lanes[0].col != 2 || lanes[1].row != 0 ||
      lanes[1].col != 4)
    return std::nullopt;
  int bit8 = registerBitFor(layout, 8), bit16 = registerBitFor(layout, 16);
  SmallVector<int64_t> strides;
  int64_t offset;
  if (bit8 < 0 || bit16 < 0 ||
      failed(dest.getStridesAndOffset(strides, offset)) || strides[0] % 8)
    return std::nullopt;
  return std::make_pair(bit8, bit16);
}

/// Transposes each lane quad's 4 x 4 words: after it, slot b of lane l
/// holds what slot l of lane b held (two butterfly steps, one per lane bit).
static void transposeQuad(OpBuilder &b, Location loc, Value lane,
                          MutableArrayRef<Value> words) {
  for (unsigned bit : {0u, 1u}) {
    Value mask = arith::ConstantIndexOp::create(b, loc, 1u << bit);
    // One op a statement: C++ leaves the order of arguments unspecified.
    Value bitOfLane = arith::AndIOp::create(b, loc, lane, mask);
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value high = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne,
                                       bitOfLane, zero);
    for (unsigned low = 0; low < 4; ++low) {
      if (low & (1u << bit))
        continue;
      Value &keepLow = words[low], &keepHigh = words[low | (1u << bit)];
      // A lane with the bit clear sends its high slot, takes the partner's
      // low one there; a lane with it set the other way round.
      Value send = arith::SelectOp::create(b, loc, high, keepLow, keepHigh);
      Value got = gpu::ShuffleOp::create(b, loc, send, 1u << bit, 32,
                                         gpu::ShuffleMode::XOR)
                      .getShuffleResult();
      Value newHigh = arith::SelectOp::create(b, loc, high, keepHigh, got);
      keepLow = arith::SelectOp::create(b, loc, high, got, keepLow);
      keepHigh = newHigh;
    }
  }
}

/// dest[indices] += a, dest[indices + 1] += b in one vector reduction, the
/// one instruction for it (MLIR's reductions are scalar).
static void emitPairReduction(OpBuilder &b, Location loc, Value dest,
                              ValueRange indices, Value first, Value second) {
  Value address = emitGlobalAddress(b, loc, dest, indices);
  LLVM::InlineAsmOp::create(
      b, loc, TypeRange{}, ValueRange{address, first, second},
      "red.global.add.v2.f32 [$0], {$1, $2};", "l,f,f",
      /*has_side_effects=*/true, /*is_align_stack=*/false,
      LLVM::tailcallkind::TailCallKind::None,
      LLVM::AsmDialectAttr::get(b.getContext(), LLVM::AsmDialect::AD_ATT),
      ArrayAttr());
}

struct LowerStoreTile : OpConversionPattern<StoreTileOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(StoreTileOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getValue().getType());
    TileLayout layout = getTileLayout(type);
    auto origin =
        ThreadTileOrigin::get(rewriter, loc, layout, adaptor.getRow());
    const ThreadPosition &thread = origin.thread;
    Value rowBase = origin.row, threadCol = origin.col;
    Value owner = emitIsFirstCopy(rewriter, loc, layout, thread);
    SmallVector<Value> regs = unpackVector(rewriter, loc, adaptor.getValue());
    bool accumulate = op.getAccumulate();
    // Registers 2i and 2i + 1 side by side in a row, at an even column for
    // every thread, go out as one 2-element store (the runtime's tensors
    // are 16-byte aligned with even row strides).
    auto bits = accumulate
                    ? std::nullopt
                    : quadChunkBits(layout, type, op.getDest().getType());
    if (bits) {
      storeQuadChunks(rewriter, loc, op, adaptor, layout, thread, owner,
                      rowBase, threadCol, regs, *bits);
      rewriter.eraseOp(op);
      return success();
    }
    // f32 sums: registers 2i and 2i + 1 side by side go out as one vector
    // reduction (red.global.add.v2.f32, 8-byte aligned as above).
    bool paired = storesPairs(layout, type, op.getDest().getType(),
                              /*allowF32=*/accumulate);
    Type element = type.getElementType();
    int64_t elementBytes = element.getIntOrFloatBitWidth() / 8;
    for (int64_t reg = 0; reg < layout.numRegisters(); reg += paired ? 2 : 1) {
      TileCoord c = layout.ofRegister(reg);
      Value row = arith::AddIOp::create(
          rewriter, loc, rowBase,
          arith::ConstantIndexOp::create(rewriter, loc, c.row));
      Value inside = arith::CmpIOp::create(
          rewriter, loc, arith::CmpIPredicate::ult, row, adaptor.getLimit());
      Value store = arith::AndIOp::create(rewriter, loc, inside, owner);
      auto ifStore = scf::IfOp::create(rewriter, loc, store);
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointToStart(ifStore.thenBlock());
      SmallVector<Value> indices = {row};
      if (type.getRank() == 2)
        indices.push_back(arith::AddIOp::create(
            rewriter, loc, threadCol,
            arith::ConstantIndexOp::create(rewriter, loc, c.col)));
      if (paired && accumulate) {
        emitPairReduction(rewriter, loc, adaptor.getDest(), indices, regs[reg],
                          regs[reg + 1]);
        continue;
      }
      if (paired) {
        Value pair = packVector(rewriter, loc, VectorType::get({2}, element),
                                {regs[reg], regs[reg + 1]});
        vector::StoreOp::create(rewriter, loc, pair, adaptor.getDest(), indices,
                                /*nontemporal=*/false,
                                llvm::MaybeAlign(2 * elementBytes));
        continue;
      }
      if (accumulate) {
        memref::AtomicRMWOp::create(rewriter, loc, arith::AtomicRMWKind::addf,
                                    regs[reg], adaptor.getDest(), indices);
        continue;
      }
      memref::StoreOp::create(rewriter, loc, regs[reg], adaptor.getDest(),
                              indices);
    }
    rewriter.eraseOp(op);
    return success();
  }

  /// Each group of 4 chunks of a row: the quad's pairs transposed, then one
  /// 8-element store a lane (lane l of the quad: chunk l of the group).
  static void storeQuadChunks(OpBuilder &b, Location loc, StoreTileOp op,
                              OpAdaptor adaptor, const TileLayout &layout,
                              const ThreadPosition &thread, Value owner,
                              Value rowBase, Value threadCol,
                              ArrayRef<Value> regs, std::pair<int, int> bits) {
    Type element = op.getValue().getType().getElementType();
    auto pairType = VectorType::get({2}, element);
    auto wordType = VectorType::get({1}, b.getI32Type());
    Value quadLane = arith::AndIOp::create(
        b, loc, thread.lane, arith::ConstantIndexOp::create(b, loc, 3));
    // This lane's chunk in the group instead of its 2-column slice of each.
    Value pairCol = arith::MulIOp::create(
        b, loc, quadLane, arith::ConstantIndexOp::create(b, loc, 2));
    Value chunkStart = arith::MulIOp::create(
        b, loc, quadLane, arith::ConstantIndexOp::create(b, loc, 8));
    Value chunkCol = arith::AddIOp::create(
        b, loc, arith::SubIOp::create(b, loc, threadCol, pairCol), chunkStart);
    int64_t step8 = int64_t(1) << bits.first, step16 = int64_t(1)
                                                       << bits.second;
    for (int64_t reg = 0; reg < layout.numRegisters(); ++reg) {
      if ((reg & 1) || (reg & step8) || (reg & step16))
        continue;
      SmallVector<Value> words;
      for (int64_t slot = 0; slot < 4; ++slot) {
        int64_t at = reg + (slot & 1 ? step8 : 0) + (slot & 2 ? step16 : 0);
        Value pair = packVector(b, loc, pairType, {regs[at], regs[at + 1]});
        words.push_back(vector::ExtractOp::create(
            b, loc, vector::BitCastOp::create(b, loc, wordType, pair), 0));
      }
      transposeQuad(b, loc, quadLane, words);
      TileCoord c = layout.ofRegister(reg);
      Value row = arith::AddIOp::create(
          b, loc, rowBase, arith::ConstantIndexOp::create(b, loc, c.row));
      Value store = arith::AndIOp::create(
          b, loc,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, row,
                                adaptor.getLimit()),
          owner);
      auto ifStore = scf::IfOp::create(b, loc, store);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(ifStore.thenBlock());
      Value col = arith::AddIOp::create(
          b, loc, chunkCol, arith::ConstantIndexOp::create(b, loc, c.col));
      Value packed = vector::BitCastOp::create(
          b, loc, VectorType::get({8}, element),
          vector::FromElementsOp::create(
              b, loc, VectorType::get({4}, b.getI32Type()), words));
      vector::StoreOp::create(
          b, loc, packed, adaptor.getDest(), ValueRange{row, col},
          /*nontemporal=*/false,
          llvm::MaybeAlign(8 * element.getIntOrFloatBitWidth() / 8));
    }
  }
};

/// Places each function's shared tiles one after another (1024-byte
/// aligned, as swizzled TMA/WGMMA tiles need) and records the total on the
/// kernel as fa.shared_bytes.
static void assignSharedOffsets(gpu::GPUModuleOp module) {
  bool any = false;
  module.walk([&](gpu::GPUFuncOp func) {
    int64_t bytes =
        fagpu::placeSharedTiles(func, [&](Operation *alloc, int64_t offset) {
          alloc->setAttr(kSharedOffsetAttr,
                         IntegerAttr::get(
                             IntegerType::get(func.getContext(), 64), offset));
          any = true;
        });
    if (bytes > 0)
      func->setAttr(
          "fa.shared_bytes",
          IntegerAttr::get(IntegerType::get(func.getContext(), 64), bytes));
  });
  if (!any || module.lookupSymbol(kSharedTilesGlobal))
    return;
  OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
  auto type = LLVM::LLVMArrayType::get(b.getI8Type(), 0);
  LLVM::GlobalOp::create(b, module.getLoc(), type, /*isConstant=*/false,
                         LLVM::Linkage::External, kSharedTilesGlobal,
                         Attribute(), kSharedTileAlignment,
                         /*addrSpace=*/3);
}

/// Tensor-map parameters become the generic pointer their uses were given;
/// the kernel lists them in `fagpu.tensor_map_args`, from which
/// fa-finalize-nvvm-kernels makes them 128-byte by-value grid constants
/// once the function is an NVVM kernel (argument attributes do not survive
/// gpu-to-nvvm): TMA then reads each map from the parameter space, with no
/// copy in global memory per launch.
static void retypeTensorMapArgs(gpu::GPUFuncOp func) {
  MLIRContext *ctx = func.getContext();
  auto pointer = LLVM::LLVMPointerType::get(ctx);
  SmallVector<int64_t> maps;
  for (BlockArgument arg : func.getArguments()) {
    if (!isa<TensorMapType>(arg.getType()))
      continue;
    for (Operation *user : llvm::make_early_inc_range(arg.getUsers()))
      if (auto cast = dyn_cast<UnrealizedConversionCastOp>(user);
          cast && cast->getNumResults() == 1 &&
          cast->getResult(0).getType() == pointer) {
        cast->getResult(0).replaceAllUsesWith(arg);
        cast->erase();
      }
    arg.setType(pointer);
    maps.push_back(arg.getArgNumber());
  }
  if (maps.empty())
    return;
  func->setAttr(fa::kTensorMapArgsAttr, DenseI64ArrayAttr::get(ctx, maps));
  func.setFunctionType(FunctionType::get(ctx, func.getBody().getArgumentTypes(),
                                         func.getResultTypes()));
}

struct ConvertFAGPUToNVVMPass
    : fa::impl::ConvertFAGPUToNVVMBase<ConvertFAGPUToNVVMPass> {
  using ConvertFAGPUToNVVMBase::ConvertFAGPUToNVVMBase;
  void runOnOperation() override {
    gpu::GPUModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    assignSharedOffsets(module);

    TileTypeConverter converter(ctx);
    RewritePatternSet patterns(ctx);
    if (exp2OnFmaEvery < 0)
      return (void)(module.emitError()
                    << "fa-convert-fagpu-to-nvvm: exp2-on-fma-every must "
                       "be 0 or positive, got "
                    << int64_t(exp2OnFmaEvery)),
             signalPassFailure();
    populateRegisterTilesToNVVMPatterns(converter, patterns, exp2OnFmaEvery);
    patterns
        .add<LowerAllocShared<AllocSharedOp>, LowerAllocShared<AllocBarriersOp>,
             LowerCopyToShared, LowerAsyncCopyToShared, LowerCommitSharedCopies,
             LowerWaitSharedCopies, LowerStage, LowerStoreTile>(converter, ctx);
    populateTileAccessToNVVMPatterns(converter, patterns);
    populateMmaToWGMMAPatterns(converter, patterns, descriptorsAtUse);
    populateBarriersToNVVMPatterns(converter, patterns);

    ConversionTarget target(*ctx);
    target.addIllegalDialect<FAGPUDialect>();
    // Lowered after its regions, whose ops ask it for their thread group.
    target.addLegalOp<WarpSpecializeOp>();
    target.markUnknownOpDynamicallyLegal(
        [](Operation *op) { return !hasTileTypes(op); });
    scf::populateSCFStructuralTypeConversionsAndLegality(converter, patterns,
                                                         target);
    if (failed(applyPartialConversion(module, target, std::move(patterns))))
      return signalPassFailure();
    lowerWarpSpecialize(module);
    module.walk(retypeTensorMapArgs);
  }
};

} // namespace
