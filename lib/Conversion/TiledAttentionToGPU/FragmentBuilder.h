//===- FragmentBuilder.h - Warp-level mma.sync fragment helpers -*- C++ -*-===//
//
// The register layout of mma.sync.m16n8k16 (PTX ISA, "Matrix fragments for
// mma.m16n8k16"): with lane = 4 g + t,
//   A (16 x 16): a0a1 = (g, 2t..2t+1), a2a3 = (g+8, 2t..), a4a5 = (g, 2t+8..),
//                a6a7 = (g+8, 2t+8..)                    -> 4 packed registers
//   B (16 x 8):  b0b1 = (k 2t..2t+1, n g), b2b3 = (k 2t+8.., n g) -> 2 registers
//   C (16 x 8):  c0c1 = (g, 2t..2t+1), c2c3 = (g+8, 2t..)  -> 4 f32
// Everything that knows this layout lives here, so that a WGMMA path can
// replace it without touching the softmax code that consumes C fragments.
//
//===----------------------------------------------------------------------===//

#ifndef FA_LIB_CONVERSION_FRAGMENTBUILDER_H
#define FA_LIB_CONVERSION_FRAGMENTBUILDER_H

#include "fa/Transforms/TilingUtils.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Value.h"

#include <array>

namespace mlir {
namespace fa {

/// Four f32 accumulators of one 16 x 8 C tile, in c0..c3 order.
using CFragment = std::array<Value, 4>;

/// Coordinates of a thread in a 1-D block: lane = 4 group + quadLane.
struct ThreadCoords {
  Value tid, warp, lane, group, quadLane;
};

/// Emits scalar and warp-level GPU ops with one builder and location.
class FragmentBuilder {
public:
  FragmentBuilder(OpBuilder &b, Location loc, Type elementType)
      : b(b), loc(loc), elementType(elementType) {}

  OpBuilder &builder() { return b; }
  Location location() { return loc; }
  Type element() { return elementType; }

  /// Thread, warp, lane and mma fragment coordinates of this thread.
  ThreadCoords threadCoords();

  // Scalars.
  Value index(int64_t v);
  Value i32(int64_t v);
  Value f32(double v);
  Value add(Value x, Value y);
  Value add(Value x, int64_t y) { return add(x, index(y)); }
  Value mul(Value x, int64_t y);
  Value divU(Value x, int64_t y);
  Value remU(Value x, int64_t y);
  Value minS(Value x, Value y);
  Value cmp(int pred, Value x, Value y); ///< arith::CmpIPredicate
  Value select(Value c, Value x, Value y);

  // Hardware approximations (ex2/lg2/tanh.approx.f32); no libdevice needed.
  Value exp2(Value x);
  Value log2(Value x);
  Value tanh(Value x);

  /// cp.async of rows [rowStart, rowStart + rows) x `cols` of the `prefix`
  /// (batch, head) slice of the global `src` into the row-major shared
  /// `dst`, 16 bytes per copy spread over `threads` threads (this one is
  /// `tid`), committed as one group; rows at or past `seqLen` are
  /// zero-filled. `dstRow0` (optional) offsets the destination rows, e.g.
  /// into one stage of a multi-buffered tile.
  void copyRowsAsync(Value src, ValueRange prefix, Value rowStart,
                     int64_t seqLen, int64_t rows, int64_t cols, Value dst,
                     Value tid, int64_t threads, Value dstRow0 = {});
  /// Waits for every committed copy, then a block barrier.
  void waitAsyncCopies();
  /// i1: key `col` is in [0, seqKV) and inside `band` for query `row`.
  Value visible(Value row, Value col, const MaskBand &band, int64_t seqKV);

  /// Sum of `v` over the 32 lanes of the warp (butterfly).
  Value warpReduceSum(Value v);

  /// Reduces `v` over the 4 lanes of a quad (lanes sharing g) with
  /// `combine` (true: max, false: add).
  Value quadReduce(Value v, bool max);

  /// The A operand of rows (m) [m0, m0 + 16) and k = [k0, k0 + 16) from a
  /// shared tile stored k-major (dS stored as dSᵀ), with ldmatrix.x4.trans.
  std::array<Value, 4> loadAFromKMajor(Value smem, Value lane, Value k0,
                                       Value m0);
  /// ldmatrix of 4 8x8 tiles as the A operand of rows [row0, row0 + 16) and
  /// columns [col0, col0 + 16) of a shared row-major tile.
  std::array<Value, 4> loadA(Value smem, Value lane, Value row0, Value col0);
  /// Two B operands (n tiles [n0, n0 + 8) and [n0 + 8, n0 + 16)) for
  /// k = [k0, k0 + 16) from a shared tile stored n-major (K for QKᵀ), with one
  /// ldmatrix.x4.
  std::array<std::array<Value, 2>, 2> loadBPairFromNMajor(Value smem,
                                                          Value lane, Value n0,
                                                          Value k0);
  /// Two B operands (n tiles [n0, n0 + 8) and [n0 + 8, n0 + 16)) for
  /// k = [k0, k0 + 16) from a shared tile stored k-major (V for P·V), with
  /// one ldmatrix.x4.trans.
  std::array<std::array<Value, 2>, 2> loadBPairFromKMajor(Value smem,
                                                          Value lane, Value k0,
                                                          Value n0);
  /// A operand of P·V from two C fragments of probabilities (keys 16 j ..
  /// 16 j + 7 and 16 j + 8 .. 16 j + 15), converted to the element type.
  std::array<Value, 4> packA(const CFragment &lo, const CFragment &hi);
  /// D = A B + C on mma.sync.m16n8k16 with f32 accumulation.
  CFragment mma(const std::array<Value, 4> &a, const std::array<Value, 2> &bb,
                const CFragment &c);

private:
  /// The register the mma op wants for two packed 16-bit values.
  Value packPair(Value pair);
  std::array<Value, 4> unpackLdMatrix(Value result, unsigned count);

  OpBuilder &b;
  Location loc;
  Type elementType;
};

/// Carves consecutive typed views out of a kernel's dynamic shared memory.
class SharedArena {
public:
  explicit SharedArena(FragmentBuilder &fb);
  /// The next `shape` x `elementType` view (identity layout).
  Value take(ArrayRef<int64_t> shape, Type elementType);
  int64_t bytes() const { return offset; }

private:
  FragmentBuilder &fb;
  Value raw;
  int64_t offset = 0;
};

} // namespace fa
} // namespace mlir

#endif // FA_LIB_CONVERSION_FRAGMENTBUILDER_H
