//===- TilingUtils.h - Helpers shared by the attention tiling passes -------===//
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

/// The set of visible (query i, key j) pairs as a band around the diagonal:
/// j >= i + lower (when set) and j < i + upper (when set), besides the
/// sequence bounds 0 <= i < Nq, 0 <= j < Nk. Derived from causal / window
/// with bottom-right alignment (shift = Nk - Nq).
struct MaskBand {
  std::optional<int64_t> lower;
  std::optional<int64_t> upper;

  static MaskBand get(bool causal, std::optional<ArrayRef<int64_t>> window,
                      int64_t seqQ, int64_t seqKV);
};

/// Blocks [lo, hi) need computing; [fullLo, fullHi) within them need no mask.
struct BlockSplit {
  Value lo, fullLo, fullHi, hi;
};

/// KV blocks of size `blockKV` for the query rows [firstRow, lastRow].
BlockSplit splitKVBlocks(OpBuilder &b, Location loc, const MaskBand &band,
                         Value firstRow, Value lastRow, int64_t seqKV,
                         int64_t blockKV);

/// Q blocks of size `blockQ` for the keys [firstKey, lastKey]; a KV block
/// that runs past the sequence end (`keysInBounds` false) gets no unmasked
/// Q block.
BlockSplit splitQBlocks(OpBuilder &b, Location loc, const MaskBand &band,
                        Value firstKey, Value lastKey, Value keysInBounds,
                        int64_t seqQ, int64_t blockQ);

/// Extracts rows [start, start + min(tileRows, seqLen - start)) of the
/// (batch, head) slice of a rank-4 [B, H, N, X] or rank-3 [B, H, N] tensor as
/// a rank-2 [tileRows, X] / rank-1 [tileRows] tensor, zero-padded at the end.
Value extractPaddedTile(OpBuilder &b, Location loc, Value source, Value batch,
                        Value head, Value start, Value rows, int64_t tileRows);

/// `rows` of `tile` (leading dim), ready to insert into a rank-4/3 tensor.
Value extractValidRows(OpBuilder &b, Location loc, Value tile, Value rows);

/// Offsets/sizes/strides for a [1, 1, rows, X] (or [1, 1, rows]) slice.
void getRowSlice(OpBuilder &b, Location loc, RankedTensorType full,
                 Value batch, Value head, Value start, Value rows,
                 SmallVectorImpl<OpFoldResult> &offsets,
                 SmallVectorImpl<OpFoldResult> &sizes,
                 SmallVectorImpl<OpFoldResult> &strides);

/// min(tile, seqLen - start) as an index value.
Value validRows(OpBuilder &b, Location loc, Value start, int64_t seqLen,
                int64_t tile);

/// A zero-filled f32 tensor of `shape` (tile accumulators).
Value createFilledTensor(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                         Type elementType, double value);

/// Checks a block-size pass option; emits on `op` and fails when invalid.
LogicalResult verifyBlockSize(Operation *op, StringRef passName,
                              StringRef option, int64_t value);

} // namespace fa
} // namespace mlir

#endif // FA_TRANSFORMS_TILINGUTILS_H
