//===- E4M3TilesToNVVM.cpp - e4m3 register tiles -> 32-bit words ---------===//
//
// e4m3 register tiles are their bytes four to a 32-bit word (LLVM has no
// 8-bit float; registerVectorType), as WGMMA's 8-bit A operand takes them:
// f32 tiles are rounded two registers at a time into 16-bit pairs
// (cvt.rn.satfinite.e4m3x2), two pairs make a word (one mov.b32 {lo, hi},
// which ptxas folds into the conversions' merge), and layout conversions
// move pairs. As a byte vector, LLVM built every word of P byte by byte
// and NVPTX assembled it again for the MMA: 8 integer instructions a word,
// 256 a KV block of the FP8 forward at head dim 128.
//
//===----------------------------------------------------------------------===//

#include "TileLowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace mlir::fagpu;

namespace {

/// Two f32 registers rounded to e4m3 as one 16-bit pair, `first` in the
/// lower byte (cvt.rn.satfinite.e4m3x2: P in [0, 1] never saturates).
Value roundPair(OpBuilder &b, Location loc, Value first, Value second) {
  // `a` goes to the upper byte, `b` to the lower.
  return NVVM::ConvertF32x2ToF8x2Op::create(
      b, loc, b.getI16Type(), second, first, NVVM::FPRoundingMode::RN,
      NVVM::SaturationMode::SATFINITE, /*relu=*/false,
      b.getType<Float8E4M3FNType>());
}

/// Whether `type` is an e4m3 register tile lowered to words.
bool isE4M3WordTile(const TypeConverter &converter, Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !getLayout(tensor) ||
      !isa<Float8E4M3FNType>(tensor.getElementType()))
    return false;
  auto vector = dyn_cast<VectorType>(converter.convertType(tensor));
  return vector && vector.getElementType().isInteger(32);
}

/// A word tile's 16-bit pairs (register 2 i and 2 i + 1 in pair i).
SmallVector<Value> unpackPairs(OpBuilder &b, Location loc, Value words) {
  auto type = cast<VectorType>(words.getType());
  auto pairs = VectorType::get({2 * type.getNumElements()}, b.getI16Type());
  return unpackVector(b, loc, vector::BitCastOp::create(b, loc, pairs, words));
}

/// Whether each pair of `to` (registers 2 i, 2 i + 1) is a pair of `from`.
bool movesPairs(ArrayRef<int64_t> source) {
  for (size_t reg = 0; reg + 1 < source.size(); reg += 2)
    if (source[reg] % 2 != 0 || source[reg + 1] != source[reg] + 1)
      return false;
  return true;
}

/// Words from pairs `pairs[p[2 i]]` (lower half) and `pairs[p[2 i + 1]]`.
Value packWords(OpBuilder &b, Location loc, VectorType type,
                ArrayRef<Value> pairs, ArrayRef<int64_t> pairOrder) {
  SmallVector<Value> words;
  for (size_t i = 0; i < pairOrder.size(); i += 2)
    words.push_back(
        packPairWord(b, loc, pairs[pairOrder[i]], pairs[pairOrder[i + 1]]));
  return packVector(b, loc, type, words);
}

/// f32 registers rounded to e4m3 two at a time, two pairs to a word.
struct LowerTruncToE4M3 : OpConversionPattern<arith::TruncFOp> {
  LowerTruncToE4M3(TypeConverter &converter, MLIRContext *ctx)
      : OpConversionPattern(converter, ctx, /*benefit=*/2) {}
  LogicalResult
  matchAndRewrite(arith::TruncFOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (!isE4M3WordTile(*getTypeConverter(), op.getType()) ||
        !cast<RankedTensorType>(op.getIn().getType()).getElementType().isF32())
      return rewriter.notifyMatchFailure(op, "not f32 tile -> e4m3 tile");
    Location loc = op.getLoc();
    SmallVector<Value> in = unpackVector(rewriter, loc, adaptor.getIn());
    SmallVector<Value> pairs;
    for (size_t i = 0; i < in.size(); i += 2)
      pairs.push_back(roundPair(rewriter, loc, in[i], in[i + 1]));
    auto order = llvm::to_vector(llvm::seq<int64_t>(0, pairs.size()));
    auto type = cast<VectorType>(getTypeConverter()->convertType(op.getType()));
    rewriter.replaceOp(op, packWords(rewriter, loc, type, pairs, order));
    return success();
  }
};

/// A layout conversion of an e4m3 tile within each thread moves pairs.
struct LowerConvertE4M3Layout : OpConversionPattern<ConvertLayoutOp> {
  LowerConvertE4M3Layout(TypeConverter &converter, MLIRContext *ctx)
      : OpConversionPattern(converter, ctx, /*benefit=*/2) {}
  LogicalResult
  matchAndRewrite(ConvertLayoutOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (!isE4M3WordTile(*getTypeConverter(), op.getType()) ||
        isa<WgmmaA8LayoutAttr>(op.getType().getEncoding()))
      return rewriter.notifyMatchFailure(op, "not an e4m3 in-thread move");
    SmallVector<int64_t> source = sourceRegisters(
        getTileLayout(cast<RankedTensorType>(op.getSource().getType())),
        getTileLayout(op.getType()));
    if (!movesPairs(source))
      return op.emitOpError() << "splits the 16-bit pairs of e4m3 registers";
    Location loc = op.getLoc();
    SmallVector<Value> pairs = unpackPairs(rewriter, loc, adaptor.getSource());
    SmallVector<int64_t> order;
    for (size_t reg = 0; reg < source.size(); reg += 2)
      order.push_back(source[reg] / 2);
    auto type = cast<VectorType>(getTypeConverter()->convertType(op.getType()));
    rewriter.replaceOp(op, packWords(rewriter, loc, type, pairs, order));
    return success();
  }
};

/// 8-bit accumulator tile -> #fagpu.wgmma_a8. In each 32 columns of a row
/// a thread holds the pairs at columns 8 j + 2 t (j = 0..3); the A operand
/// wants columns 4 t .. 4 t + 3 and 16 + 4 t .. 16 + 4 t + 3, i.e. the pair
/// j = t / 2 (resp. 2 + t / 2) of lanes 2 (t % 2) and 2 (t % 2) + 1 of its
/// quad. Each thread packs its pairs j = 0, 1 and j = 2, 3 into two words;
/// each A word is two shuffled words' halves: four shuffles per two words.
struct LowerConvertToWgmmaA8 : OpConversionPattern<ConvertLayoutOp> {
  LowerConvertToWgmmaA8(TypeConverter &converter, MLIRContext *ctx)
      : OpConversionPattern(converter, ctx, /*benefit=*/2) {}
  LogicalResult
  matchAndRewrite(ConvertLayoutOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (!isa<WgmmaA8LayoutAttr>(op.getType().getEncoding()) ||
        !isE4M3WordTile(*getTypeConverter(), op.getType()))
      return rewriter.notifyMatchFailure(op, "not to #fagpu.wgmma_a8");
    Location loc = op.getLoc();
    TileLayout from =
        getTileLayout(cast<RankedTensorType>(op.getSource().getType()));
    TileLayout to = getTileLayout(op.getType());
    DenseMap<std::pair<int64_t, int64_t>, int64_t> fromReg =
        registersByElement(from);
    for (int64_t reg = 0; reg + 1 < from.numRegisters(); reg += 2) {
      TileCoord c = from.ofRegister(reg), next = from.ofRegister(reg + 1);
      if (next.row != c.row || next.col != c.col + 1)
        return rewriter.notifyMatchFailure(op, "not column pairs");
    }
    SmallVector<Value> pairs = unpackPairs(rewriter, loc, adaptor.getSource());
    Type i32 = rewriter.getI32Type();
    auto c32 = [&](int64_t v) {
      return arith::ConstantIntOp::create(rewriter, loc, i32, v).getResult();
    };
    // The pairs of lane 0's elements (row, col .. col + 1) and
    // (row, col + 8 .. col + 9) as one word (the accumulator's registers
    // 2 i, 2 i + 1 are a column pair).
    auto word = [&](int64_t row, int64_t col) {
      return packPairWord(rewriter, loc, pairs[fromReg.lookup({row, col}) / 2],
                          pairs[fromReg.lookup({row, col + 8}) / 2]);
    };
    Value lane = arith::IndexCastUIOp::create(rewriter, loc, i32,
                                              emitLaneId(rewriter, loc));
    Value t = arith::AndIOp::create(rewriter, loc, lane, c32(3));
    Value quad = arith::AndIOp::create(rewriter, loc, lane, c32(~3));
    Value first = arith::AddIOp::create(
        rewriter, loc, quad,
        arith::ShLIOp::create(rewriter, loc,
                              arith::AndIOp::create(rewriter, loc, t, c32(1)),
                              c32(1)));
    Value second = arith::AddIOp::create(rewriter, loc, first, c32(1));
    Value upper = arith::CmpIOp::create(
        rewriter, loc, arith::CmpIPredicate::ne,
        arith::AndIOp::create(rewriter, loc, t, c32(2)), c32(0));
    auto shuffle = [&](Value v, Value from) {
      return gpu::ShuffleOp::create(rewriter, loc, v, from, c32(32),
                                    gpu::ShuffleMode::IDX)
          .getShuffleResult();
    };
    SmallVector<Value> out;
    for (int64_t reg = 0; reg < to.numRegisters(); reg += 4) {
      TileCoord c = to.ofRegister(reg); // lane 0: column 32 k (+ 16)
      int64_t chunk = c.col - c.col % 32;
      Value packed = word(c.row, chunk + (c.col % 32 == 0 ? 0 : 16));
      Value x0 = shuffle(packed, first), x1 = shuffle(packed, second);
      // Lanes t = 0, 1 take the pairs' lower halves, t = 2, 3 the upper.
      Value low = arith::OrIOp::create(
          rewriter, loc, arith::AndIOp::create(rewriter, loc, x0, c32(0xFFFF)),
          arith::ShLIOp::create(rewriter, loc, x1, c32(16)));
      Value high = arith::OrIOp::create(
          rewriter, loc, arith::ShRUIOp::create(rewriter, loc, x0, c32(16)),
          arith::AndIOp::create(rewriter, loc, x1, c32(0xFFFF0000)));
      out.push_back(arith::SelectOp::create(rewriter, loc, upper, high, low));
    }
    auto vectorType =
        cast<VectorType>(getTypeConverter()->convertType(op.getType()));
    rewriter.replaceOp(op, packVector(rewriter, loc, vectorType, out));
    return success();
  }
};

} // namespace

void mlir::fagpu::populateE4M3TilesToNVVMPatterns(TileTypeConverter &converter,
                                                  RewritePatternSet &patterns) {
  patterns.add<LowerTruncToE4M3, LowerConvertE4M3Layout, LowerConvertToWgmmaA8>(
      converter, patterns.getContext());
}
