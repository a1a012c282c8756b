//===- StoreTileToNVVM.cpp - Register tiles stored to global rows ---------===//
//
// fagpu.store_tile: each element is written once, by the first of the
// threads holding it, as wide as the layout allows: two adjacent 16-bit
// columns a store, or eight after a lane-quad transpose (16 bytes a lane);
// sums (`accumulate`, f32) two or four columns a vector reduction on
// sm_90 and later, an atomic add an element below.
//
//===----------------------------------------------------------------------===//

#include "TileLowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::fagpu;

namespace {

/// Whether a 2-D tile of `layout` can be stored two adjacent columns at a
/// time: the layout holds column pairs, 16-bit elements (or f32 sums) and
/// rows an even number of elements apart.
static bool storesPairs(const TileLayout &layout, RankedTensorType type,
                        MemRefType dest, bool allowF32 = false) {
  unsigned bits = type.getElementType().getIntOrFloatBitWidth();
  if (type.getRank() != 2 || (bits != 16 && !(allowF32 && bits == 32)))
    return false;
  if (!holdsColumnPairs(layout))
    return false;
  SmallVector<int64_t> strides;
  int64_t offset;
  return succeeded(dest.getStridesAndOffset(strides, offset)) &&
         strides.back() == 1 && !ShapedType::isDynamic(strides[0]) &&
         strides[0] % 2 == 0;
}

/// The bit of `layout`'s register index that steps `cols` columns, or -1
/// (also for a basis at or above a register repeat: its index bit moves).
static int registerBitFor(const TileLayout &layout, int64_t cols) {
  for (auto [bit, basis] : llvm::enumerate(layout.registerBases()))
    if (basis.row == 0 && basis.col == cols)
      return layout.hasRegisterRepeat() &&
                     bit >= layout.registerRepeat().position
                 ? -1
                 : int(bit);
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

/// dest[indices + k] += values[k] (2 or 4 values) in one vector reduction,
/// the one instruction for it (MLIR's reductions are scalar).
static void emitVectorReduction(OpBuilder &b, Location loc, Value dest,
                                ValueRange indices, ArrayRef<Value> values) {
  SmallVector<Value> operands = {emitGlobalAddress(b, loc, dest, indices)};
  llvm::append_range(operands, values);
  std::string ptx =
      "red.global.add.v" + std::to_string(values.size()) + ".f32 [$0], {";
  std::string constraints = "l";
  for (size_t k = 1; k <= values.size(); ++k) {
    ptx += (k > 1 ? ", $" : "$") + std::to_string(k);
    constraints += ",f";
  }
  LLVM::InlineAsmOp::create(
      b, loc, TypeRange{}, operands, ptx + "};", constraints,
      /*has_side_effects=*/true, /*is_align_stack=*/false,
      LLVM::tailcallkind::TailCallKind::None,
      LLVM::AsmDialectAttr::get(b.getContext(), LLVM::AsmDialect::AD_ATT),
      ArrayAttr());
}

/// The register bit stepping 8 columns along which the two lanes sharing
/// 4 adjacent columns of an f32 accumulator (lane bit 0 steps 2 columns)
/// can trade pairs so that each holds 4 consecutive columns: one 16-byte
/// reduction for two. -1 where the layout or the rows do not allow it.
static int quadReductionBit(const TileLayout &layout, RankedTensorType type,
                            MemRefType dest) {
  ArrayRef<TileCoord> lanes = layout.laneBases();
  if (!type.getElementType().isF32() ||
      !storesPairs(layout, type, dest, /*allowF32=*/true) || lanes.size() < 2 ||
      lanes[0].row != 0 || lanes[0].col != 2 || lanes[1].row != 0 ||
      lanes[1].col != 4)
    return -1;
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(dest.getStridesAndOffset(strides, offset)) || strides[0] % 4)
    return -1;
  return registerBitFor(layout, 8);
}

/// Row `rowBase + offset` of the destination; the builder is left inside an
/// scf.if that runs where the row is below `limit` and `owner` holds.
static Value enterOwnedRow(OpBuilder &b, Location loc, Value rowBase,
                           int64_t offset, Value limit, Value owner) {
  Value row = arith::AddIOp::create(
      b, loc, rowBase, arith::ConstantIndexOp::create(b, loc, offset));
  Value store = arith::AndIOp::create(
      b, loc,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, row, limit),
      owner);
  auto ifStore = scf::IfOp::create(b, loc, store);
  b.setInsertionPointToStart(ifStore.thenBlock());
  return row;
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
    // Vector reductions (red.global.add.v2/v4.f32) are sm_90's; below, one
    // atomic add an element.
    bool vectorSums = accumulate && targetsSm90OrLater(rewriter);
    if (int bit8 = vectorSums
                       ? quadReductionBit(layout, type, op.getDest().getType())
                       : -1;
        bit8 >= 0) {
      reduceQuads(rewriter, loc, adaptor, layout, origin, owner, regs, bit8);
      rewriter.eraseOp(op);
      return success();
    }
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
    bool paired = (!accumulate || vectorSums) &&
                  storesPairs(layout, type, op.getDest().getType(),
                              /*allowF32=*/accumulate);
    Type element = type.getElementType();
    int64_t elementBytes = element.getIntOrFloatBitWidth() / 8;
    for (int64_t reg = 0; reg < layout.numRegisters(); reg += paired ? 2 : 1) {
      TileCoord c = layout.ofRegister(reg);
      OpBuilder::InsertionGuard guard(rewriter);
      Value row = enterOwnedRow(rewriter, loc, rowBase, c.row,
                                adaptor.getLimit(), owner);
      SmallVector<Value> indices = {row};
      if (type.getRank() == 2)
        indices.push_back(arith::AddIOp::create(
            rewriter, loc, threadCol,
            arith::ConstantIndexOp::create(rewriter, loc, c.col)));
      if (paired && accumulate) {
        emitVectorReduction(rewriter, loc, adaptor.getDest(), indices,
                            {regs[reg], regs[reg + 1]});
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

  /// Pairs of 8-column groups: the even lane of each lane pair takes the
  /// odd one's pair of the first group, the odd lane the even one's pair of
  /// the second, so that each adds 4 consecutive columns at once.
  static void reduceQuads(OpBuilder &b, Location loc, OpAdaptor adaptor,
                          const TileLayout &layout,
                          const ThreadTileOrigin &origin, Value owner,
                          ArrayRef<Value> regs, int bit8) {
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value six = arith::ConstantIndexOp::create(b, loc, 6);
    Value laneBit = arith::AndIOp::create(b, loc, origin.thread.lane, one);
    Value odd =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, laneBit, zero);
    // The odd lane's quad starts 2 columns left of its pair, 8 right.
    Value oddShift = arith::SelectOp::create(b, loc, odd, six, zero);
    Value quadCol = arith::AddIOp::create(b, loc, origin.col, oddShift);
    int64_t step8 = int64_t(1) << bit8;
    for (int64_t reg = 0; reg < layout.numRegisters(); ++reg) {
      if ((reg & 1) || (reg & step8))
        continue;
      Value a[2] = {regs[reg], regs[reg + 1]};
      Value c[2] = {regs[reg + step8], regs[reg + step8 + 1]};
      Value got[2];
      for (int i = 0; i < 2; ++i) {
        Value send = arith::SelectOp::create(b, loc, odd, a[i], c[i]);
        got[i] =
            gpu::ShuffleOp::create(b, loc, send, 1, 32, gpu::ShuffleMode::XOR)
                .getShuffleResult();
      }
      SmallVector<Value> quad = {
          arith::SelectOp::create(b, loc, odd, got[0], a[0]),
          arith::SelectOp::create(b, loc, odd, got[1], a[1]),
          arith::SelectOp::create(b, loc, odd, c[0], got[0]),
          arith::SelectOp::create(b, loc, odd, c[1], got[1])};
      TileCoord coord = layout.ofRegister(reg);
      OpBuilder::InsertionGuard guard(b);
      Value row = enterOwnedRow(b, loc, origin.row, coord.row,
                                adaptor.getLimit(), owner);
      Value col = arith::AddIOp::create(
          b, loc, quadCol, arith::ConstantIndexOp::create(b, loc, coord.col));
      emitVectorReduction(b, loc, adaptor.getDest(), {row, col}, quad);
    }
  }

  /// Each group of 4 chunks of a row: the quad's pairs transposed, then one
  /// 8-element store a lane (lane l of the quad: chunk l of the group).
  static void storeQuadChunks(OpBuilder &b, Location loc, StoreTileOp op,
                              OpAdaptor adaptor, const TileLayout &layout,
                              const ThreadPosition &thread, Value owner,
                              Value rowBase, Value threadCol,
                              ArrayRef<Value> regs, std::pair<int, int> bits) {
    Type element = op.getValue().getType().getElementType();
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
        words.push_back(packPairWord(b, loc, regs[at], regs[at + 1]));
      }
      transposeQuad(b, loc, quadLane, words);
      TileCoord c = layout.ofRegister(reg);
      OpBuilder::InsertionGuard guard(b);
      Value row =
          enterOwnedRow(b, loc, rowBase, c.row, adaptor.getLimit(), owner);
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

} // namespace

void mlir::fagpu::populateStoreTileToNVVMPatterns(TileTypeConverter &converter,
                                                  RewritePatternSet &patterns) {
  patterns.add<LowerStoreTile>(converter, patterns.getContext());
}
