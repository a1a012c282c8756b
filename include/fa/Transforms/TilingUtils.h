//===- TilingUtils.h - Helpers shared by the attention tiling passes
//-------===//
//
// Block ranges under causal/window masks and padded tile extraction, written
// once for the forward (KV blocks per Q block) and the backward (Q blocks per
// KV block).
//
//===----------------------------------------------------------------------===//

#ifndef FA_TRANSFORMS_TILINGUTILS_H
#define FA_TRANSFORMS_TILINGUTILS_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Support/LLVM.h"

#include <optional>

namespace mlir {
namespace fa {

/// What causal / window mean, once: key j is visible to query i iff
/// j >= i + shift + lower (when set) and j < i + shift + upper (when set),
/// with bottom-right alignment: shift = Nk - Nq.
struct RelativeBand {
  std::optional<int64_t> lower;
  std::optional<int64_t> upper;

  static RelativeBand get(bool causal, std::optional<ArrayRef<int64_t>> window);
};

/// The set of visible (query i, key j) pairs as a band around the diagonal:
/// j >= i + lower (when set) and j < i + upper (when set), besides the
/// sequence bounds 0 <= i < Nq, 0 <= j < Nk. RelativeBand shifted by the
/// static Nk - Nq.
struct MaskBand {
  std::optional<int64_t> lower;
  std::optional<int64_t> upper;

  static MaskBand get(bool causal, std::optional<ArrayRef<int64_t>> window,
                      int64_t seqQ, int64_t seqKV);
};

/// A MaskBand whose bounds are index values: the sequence lengths may be
/// known only at run time (dynamic shapes).
struct MaskBandValues {
  std::optional<Value> lower;
  std::optional<Value> upper;

  static MaskBandValues get(OpBuilder &b, Location loc, bool causal,
                            std::optional<ArrayRef<int64_t>> window, Value seqQ,
                            Value seqKV);
  static MaskBandValues get(OpBuilder &b, Location loc, const MaskBand &band);
};

/// Blocks [lo, hi) need computing; [fullLo, fullHi) within them need no mask.
struct BlockSplit {
  Value lo, fullLo, fullHi, hi;
};

/// `split` where `condition` holds, else no block at all.
BlockSplit emptyUnless(OpBuilder &b, Location loc, Value condition,
                       const BlockSplit &split);

/// KV blocks of size `blockKV` for the query rows [firstRow, lastRow].
BlockSplit splitKVBlocks(OpBuilder &b, Location loc, const MaskBandValues &band,
                         Value firstRow, Value lastRow, Value seqKV,
                         int64_t blockKV);
BlockSplit splitKVBlocks(OpBuilder &b, Location loc, const MaskBand &band,
                         Value firstRow, Value lastRow, int64_t seqKV,
                         int64_t blockKV);

/// Q blocks of size `blockQ` for the keys [firstKey, lastKey]; a KV block
/// that runs past the sequence end (`keysInBounds` false) gets no unmasked
/// Q block.
BlockSplit splitQBlocks(OpBuilder &b, Location loc, const MaskBand &band,
                        Value firstKey, Value lastKey, Value keysInBounds,
                        int64_t seqQ, int64_t blockQ);
BlockSplit splitQBlocks(OpBuilder &b, Location loc, const MaskBandValues &band,
                        Value firstKey, Value lastKey, Value keysInBounds,
                        Value seqQ, int64_t blockQ);

/// Extracts rows [start, start + min(tileRows, seqLen - start)) of the
/// (batch, head) slice of a rank-4 [B, H, N, X] or rank-3 [B, H, N] tensor as
/// a rank-2 [tileRows, X] / rank-1 [tileRows] tensor, padded at the end
/// with `padding` (zeros; the backward's LSE takes +inf, so that padded
/// rows have P = 0 whatever their queries hold).
Value extractPaddedTile(OpBuilder &b, Location loc, Value source, Value batch,
                        Value head, Value start, Value rows, int64_t tileRows,
                        double padding = 0.0);

/// `rows` of `tile` (leading dim), ready to insert into a rank-4/3 tensor.
Value extractValidRows(OpBuilder &b, Location loc, Value tile, Value rows);

/// Offsets/sizes/strides for a [1, 1, rows, X] (or [1, 1, rows]) slice.
void getRowSlice(OpBuilder &b, Location loc, RankedTensorType full, Value batch,
                 Value head, Value start, Value rows,
                 SmallVectorImpl<OpFoldResult> &offsets,
                 SmallVectorImpl<OpFoldResult> &sizes,
                 SmallVectorImpl<OpFoldResult> &strides);

/// min(tile, seqLen - start) as an index value.
Value validRows(OpBuilder &b, Location loc, Value start, Value seqLen,
                int64_t tile);
Value validRows(OpBuilder &b, Location loc, Value start, int64_t seqLen,
                int64_t tile);

/// Where packed sequence `index` starts and how long it is, from its B + 1
/// running offsets `cuSeqlens` (1-D i32; the varlen operands).
struct SequenceRows {
  Value offset, length;
};
SequenceRows sequenceRows(OpBuilder &b, Location loc, Value cuSeqlens,
                          Value index);

/// Size `dim` of a ranked tensor as an index value: a constant when static,
/// tensor.dim when dynamic.
Value dimValue(OpBuilder &b, Location loc, Value tensor, int64_t dim);

/// The sizes of a forward result of `type` (O [B, Hq, Nq, Dv], LSE or a
/// row statistic [B, Hq, Nq]): static sizes as attributes, dynamic ones read
/// from `query` [B, Hq, Nq, D] (Dv from `value`).
SmallVector<OpFoldResult> forwardResultSizes(OpBuilder &b, Location loc,
                                             RankedTensorType type, Value query,
                                             Value value);

/// A tensor of `shape` filled with `value` (tile accumulators).
Value createFilledTensor(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                         Type elementType, double value);
Value createFilledTensor(OpBuilder &b, Location loc,
                         ArrayRef<OpFoldResult> sizes, Type elementType,
                         double value);

/// Checks a block-size pass option; emits on `op` and fails when invalid.
/// Powers of two, and with `multiplesOf16` also multiples of 16 (the
/// forward's 176- and 80-key blocks: its tiles take one register repeat).
LogicalResult verifyBlockSize(Operation *op, StringRef passName,
                              StringRef option, int64_t value,
                              bool multiplesOf16 = false);

} // namespace fa
} // namespace mlir

#endif // FA_TRANSFORMS_TILINGUTILS_H
