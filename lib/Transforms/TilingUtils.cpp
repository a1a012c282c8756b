//===- TilingUtils.cpp - Helpers shared by the attention tiling passes ----===//

#include "fa/Transforms/TilingUtils.h"

#include "fa/Runtime/Limits.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::fa;

RelativeBand RelativeBand::get(bool causal,
                               std::optional<ArrayRef<int64_t>> window) {
  RelativeBand band;
  if (causal)
    band.upper = 1;
  if (window) {
    int64_t left = (*window)[0], right = (*window)[1];
    if (left >= 0)
      band.lower = -left;
    if (right >= 0)
      band.upper = std::min(band.upper.value_or(right + 1), right + 1);
  }
  return band;
}

MaskBand MaskBand::get(bool causal, std::optional<ArrayRef<int64_t>> window,
                       int64_t seqQ, int64_t seqKV) {
  RelativeBand relative = RelativeBand::get(causal, window);
  int64_t shift = seqKV - seqQ;
  MaskBand band;
  if (relative.lower)
    band.lower = *relative.lower + shift;
  if (relative.upper)
    band.upper = *relative.upper + shift;
  return band;
}

namespace {

/// Small index-arithmetic builder: keeps the range formulas readable.
struct IndexMath {
  OpBuilder &b;
  Location loc;

  Value c(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value add(Value x, int64_t v) {
    return v == 0 ? x : arith::AddIOp::create(b, loc, x, c(v)).getResult();
  }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, loc, x, y); }
  Value max(Value x, Value y) { return arith::MaxSIOp::create(b, loc, x, y); }
  Value min(Value x, Value y) { return arith::MinSIOp::create(b, loc, x, y); }
  Value floorDiv(Value x, int64_t d) {
    return arith::FloorDivSIOp::create(b, loc, x, c(d));
  }
  Value ceilDiv(Value x, int64_t d) {
    return arith::CeilDivSIOp::create(b, loc, x, c(d));
  }
  Value clamp(Value x, Value lo, Value hi) { return min(max(x, lo), hi); }
  Value select(Value cond, Value x, Value y) {
    return arith::SelectOp::create(b, loc, cond, x, y);
  }
  Value lessEq(Value x, Value y) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle, x, y);
  }
};

/// Turns element ranges into block ranges: blocks touching [anyBegin, anyEnd)
/// and, inside them, blocks lying wholly in [fullBegin, fullEnd).
BlockSplit toBlocks(IndexMath &m, Value anyBegin, Value anyEnd, Value fullBegin,
                    Value fullEnd, int64_t block) {
  BlockSplit split;
  split.lo = m.floorDiv(anyBegin, block);
  Value hi = m.max(m.ceilDiv(anyEnd, block), split.lo);
  split.hi = m.select(m.lessEq(anyEnd, anyBegin), split.lo, hi);
  split.fullLo = m.clamp(m.ceilDiv(fullBegin, block), split.lo, split.hi);
  split.fullHi = m.clamp(m.floorDiv(fullEnd, block), split.fullLo, split.hi);
  return split;
}

} // namespace

BlockSplit mlir::fa::emptyUnless(OpBuilder &b, Location loc, Value condition,
                                 const BlockSplit &split) {
  IndexMath m{b, loc};
  BlockSplit result = split;
  for (Value *bound : {&result.fullLo, &result.fullHi, &result.hi})
    *bound = m.select(condition, *bound, split.lo);
  return result;
}

MaskBandValues MaskBandValues::get(OpBuilder &b, Location loc, bool causal,
                                   std::optional<ArrayRef<int64_t>> window,
                                   Value seqQ, Value seqKV) {
  IndexMath m{b, loc};
  RelativeBand relative = RelativeBand::get(causal, window);
  MaskBandValues band;
  if (!relative.lower && !relative.upper)
    return band;
  Value shift = m.sub(seqKV, seqQ);
  if (relative.lower)
    band.lower = m.add(shift, *relative.lower);
  if (relative.upper)
    band.upper = m.add(shift, *relative.upper);
  return band;
}

MaskBandValues MaskBandValues::get(OpBuilder &b, Location loc,
                                   const MaskBand &band) {
  IndexMath m{b, loc};
  MaskBandValues values;
  if (band.lower)
    values.lower = m.c(*band.lower);
  if (band.upper)
    values.upper = m.c(*band.upper);
  return values;
}

BlockSplit mlir::fa::splitKVBlocks(OpBuilder &b, Location loc,
                                   const MaskBandValues &band, Value firstRow,
                                   Value lastRow, Value seqKV,
                                   int64_t blockKV) {
  IndexMath m{b, loc};
  Value zero = m.c(0), end = seqKV;
  // Key j is visible to row i iff i + lower <= j < i + upper.
  auto begin = [&](Value row) {
    return band.lower ? m.max(zero, m.add(row, *band.lower)) : zero;
  };
  auto finish = [&](Value row) {
    return band.upper ? m.min(end, m.add(row, *band.upper)) : end;
  };
  return toBlocks(m, begin(firstRow), finish(lastRow), begin(lastRow),
                  finish(firstRow), blockKV);
}

BlockSplit mlir::fa::splitKVBlocks(OpBuilder &b, Location loc,
                                   const MaskBand &band, Value firstRow,
                                   Value lastRow, int64_t seqKV,
                                   int64_t blockKV) {
  IndexMath m{b, loc};
  return splitKVBlocks(b, loc, MaskBandValues::get(b, loc, band), firstRow,
                       lastRow, m.c(seqKV), blockKV);
}

BlockSplit mlir::fa::splitQBlocks(OpBuilder &b, Location loc,
                                  const MaskBandValues &band, Value firstKey,
                                  Value lastKey, Value keysInBounds, Value seqQ,
                                  int64_t blockQ) {
  IndexMath m{b, loc};
  Value zero = m.c(0), one = m.c(1);
  // Row i sees key j iff j - upper < i <= j - lower.
  auto begin = [&](Value key) {
    return band.upper ? m.max(zero, m.add(m.sub(key, *band.upper), one))
                      : zero;
  };
  auto finish = [&](Value key) {
    return band.lower ? m.min(seqQ, m.add(m.sub(key, *band.lower), one))
                      : seqQ;
  };
  BlockSplit split = toBlocks(m, begin(firstKey), finish(lastKey),
                              begin(lastKey), finish(firstKey), blockQ);
  split.fullHi = m.select(keysInBounds, split.fullHi, split.fullLo);
  return split;
}

BlockSplit mlir::fa::splitQBlocks(OpBuilder &b, Location loc,
                                  const MaskBand &band, Value firstKey,
                                  Value lastKey, Value keysInBounds,
                                  int64_t seqQ, int64_t blockQ) {
  IndexMath m{b, loc};
  Value zero = m.c(0), end = m.c(seqQ);
  // Row i sees key j iff j - upper < i <= j - lower.
  auto begin = [&](Value key) {
    return band.upper ? m.max(zero, m.add(key, 1 - *band.upper)) : zero;
  };
  auto finish = [&](Value key) {
    return band.lower ? m.min(end, m.add(key, 1 - *band.lower)) : end;
  };
  BlockSplit split = toBlocks(m, begin(firstKey), finish(lastKey),
                              begin(lastKey), finish(firstKey), blockQ);
  split.fullHi = m.select(keysInBounds, split.fullHi, split.fullLo);
  return split;
}

void mlir::fa::getRowSlice(OpBuilder &b, Location loc, RankedTensorType full,
                           Value batch, Value head, Value start, Value rows,
                           SmallVectorImpl<OpFoldResult> &offsets,
                           SmallVectorImpl<OpFoldResult> &sizes,
                           SmallVectorImpl<OpFoldResult> &strides) {
  offsets.assign({batch, head, start});
  sizes.assign({b.getIndexAttr(1), b.getIndexAttr(1), rows});
  strides.assign(full.getRank(), b.getIndexAttr(1));
  if (full.getRank() == 4) {
    offsets.push_back(b.getIndexAttr(0));
    sizes.push_back(b.getIndexAttr(full.getDimSize(3)));
  }
}

Value mlir::fa::extractPaddedTile(OpBuilder &b, Location loc, Value source,
                                  Value batch, Value head, Value start,
                                  Value rows, int64_t tileRows,
                                  double padding) {
  auto full = cast<RankedTensorType>(source.getType());
  SmallVector<OpFoldResult> offsets, sizes, strides;
  getRowSlice(b, loc, full, batch, head, start, rows, offsets, sizes, strides);
  SmallVector<int64_t> sliceShape{ShapedType::kDynamic};
  SmallVector<int64_t> tileShape{tileRows};
  if (full.getRank() == 4) {
    sliceShape.push_back(full.getDimSize(3));
    tileShape.push_back(full.getDimSize(3));
  }
  Type elementType = full.getElementType();
  auto sliceType = RankedTensorType::get(sliceShape, elementType);
  Value slice = tensor::ExtractSliceOp::create(b, loc, sliceType, source,
                                               offsets, sizes, strides);
  IndexMath m{b, loc};
  Value padRows = arith::SubIOp::create(b, loc, m.c(tileRows), rows);
  SmallVector<OpFoldResult> low(tileShape.size(), b.getIndexAttr(0));
  SmallVector<OpFoldResult> high(tileShape.size(), b.getIndexAttr(0));
  high[0] = padRows;
  Value fill =
      arith::ConstantOp::create(b, loc, b.getFloatAttr(elementType, padding));
  return tensor::PadOp::create(b, loc,
                               RankedTensorType::get(tileShape, elementType),
                               slice, low, high, fill);
}

Value mlir::fa::extractValidRows(OpBuilder &b, Location loc, Value tile,
                                 Value rows) {
  auto type = cast<RankedTensorType>(tile.getType());
  SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0));
  SmallVector<OpFoldResult> strides(type.getRank(), b.getIndexAttr(1));
  SmallVector<OpFoldResult> sizes{rows};
  SmallVector<int64_t> shape{ShapedType::kDynamic};
  for (int64_t d = 1; d < type.getRank(); ++d) {
    sizes.push_back(b.getIndexAttr(type.getDimSize(d)));
    shape.push_back(type.getDimSize(d));
  }
  return tensor::ExtractSliceOp::create(
      b, loc, RankedTensorType::get(shape, type.getElementType()), tile,
      offsets, sizes, strides);
}

Value mlir::fa::validRows(OpBuilder &b, Location loc, Value start, Value seqLen,
                          int64_t tile) {
  IndexMath m{b, loc};
  return m.min(m.c(tile), m.sub(seqLen, start));
}

Value mlir::fa::validRows(OpBuilder &b, Location loc, Value start,
                          int64_t seqLen, int64_t tile) {
  IndexMath m{b, loc};
  return validRows(b, loc, start, m.c(seqLen), tile);
}

SmallVector<OpFoldResult>
mlir::fa::forwardResultSizes(OpBuilder &b, Location loc, RankedTensorType type,
                             Value query, Value value) {
  SmallVector<OpFoldResult> sizes;
  for (int64_t d = 0; d < type.getRank(); ++d)
    sizes.push_back(
        type.isDynamicDim(d)
            ? OpFoldResult(dimValue(b, loc, d == 3 ? value : query, d))
            : OpFoldResult(b.getIndexAttr(type.getDimSize(d))));
  return sizes;
}

SequenceRows mlir::fa::sequenceRows(OpBuilder &b, Location loc,
                                    Value cuSeqlens, Value index) {
  IndexMath m{b, loc};
  auto offsetAt = [&](Value i) -> Value {
    Value element = tensor::ExtractOp::create(b, loc, cuSeqlens, i);
    return arith::IndexCastOp::create(b, loc, b.getIndexType(), element);
  };
  Value offset = offsetAt(index);
  Value end = offsetAt(m.add(index, 1));
  return {offset, m.sub(end, offset)};
}

Value mlir::fa::dimValue(OpBuilder &b, Location loc, Value tensor,
                         int64_t dim) {
  auto type = cast<RankedTensorType>(tensor.getType());
  if (!type.isDynamicDim(dim))
    return arith::ConstantIndexOp::create(b, loc, type.getDimSize(dim));
  return tensor::DimOp::create(b, loc, tensor, dim);
}

Value mlir::fa::createFilledTensor(OpBuilder &b, Location loc,
                                   ArrayRef<int64_t> shape, Type elementType,
                                   double value) {
  return createFilledTensor(b, loc,
                            getAsIndexOpFoldResult(b.getContext(), shape),
                            elementType, value);
}

Value mlir::fa::createFilledTensor(OpBuilder &b, Location loc,
                                   ArrayRef<OpFoldResult> sizes,
                                   Type elementType, double value) {
  Value empty = tensor::EmptyOp::create(b, loc, sizes, elementType);
  Value fill =
      arith::ConstantOp::create(b, loc, b.getFloatAttr(elementType, value));
  return linalg::FillOp::create(b, loc, fill, empty).getResult(0);
}

LogicalResult mlir::fa::verifyBlockSize(Operation *op, StringRef passName,
                                        StringRef option, int64_t value,
                                        bool multiplesOf16) {
  bool good = value > 0 && (llvm::isPowerOf2_64(value) ||
                            (multiplesOf16 && value % 16 == 0));
  if (!good)
    return op->emitError() << passName << ": option " << option
                           << " must be a positive power of two"
                           << (multiplesOf16 ? " or multiple of 16" : "")
                           << ", got " << value;
  // Tile shapes and shared-memory sizes are products of block sizes.
  if (value > ::fa::rt::kMaxBlockSize)
    return op->emitError() << passName << ": option " << option
                           << " must be at most " << ::fa::rt::kMaxBlockSize
                           << ", got " << value;
  return success();
}
