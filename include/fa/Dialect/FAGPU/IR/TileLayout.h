//===- TileLayout.h - Where each element of a GPU tile lives ---*- C++ -*-===//
//
// A tile held in registers is spread over the threads of a block: each
// thread holds some of its elements in registers. A TileLayout is that
// mapping, the "layout function" of a layout attribute: (register, lane,
// warp) -> (row, col) of the tile.
//
// Every layout a tensor core uses (mma.sync A/B/C fragments, the WGMMA
// accumulator and register-A operand) is linear over GF(2) in the bits of the
// three indices: each bit contributes a fixed (row, col) offset, its basis,
// and the element of an index is the XOR of the bases of its set bits. The
// bases of one layout are distinct powers of two (or zero, for a bit along
// which the same element is replicated), so XOR is plain addition and the
// element splits into a static part (from the register index, known when
// the kernel is generated) and a dynamic part (from lane and warp, computed
// once in the kernel). Lowerings ask the layout; none recomputes lane
// arithmetic of its own.
//
// A tile dimension that is not a power of two (a 176-key block: 11 steps of
// 16 columns) takes one more register digit, a repeat: `count` registers
// `stride` apart, at some position among the register bits. The element is
// then the sum of every digit's contribution (for single bits the same as
// XOR), and a layout is well formed when, per dimension, its digits form a
// mixed-radix number system that counts through the tile exactly once.
//
//===----------------------------------------------------------------------===//

#ifndef FA_DIALECT_FAGPU_IR_TILELAYOUT_H
#define FA_DIALECT_FAGPU_IR_TILELAYOUT_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

namespace mlir {
namespace fagpu {

/// An element of a 2-D tile (a 1-D tile uses col = 0).
struct TileCoord {
  int64_t row = 0, col = 0;
  bool operator==(const TileCoord &o) const {
    return row == o.row && col == o.col;
  }
  bool operator!=(const TileCoord &o) const { return !(*this == o); }
  bool isZero() const { return row == 0 && col == 0; }
};

/// A digit of another radix than two in a register or warp index: `count`
/// values `stride` apart, between bits `position - 1` and `position` of
/// that index (count 1: none). Registers: a 176-key tile's 11 column steps;
/// warps: three warpgroups stacked along rows (count 3, 64 rows apart).
struct IndexRepeat {
  int64_t count = 1;
  TileCoord stride;
  unsigned position = 0;
  /// The same digit (any two count-1 repeats are: there is none).
  bool operator==(const IndexRepeat &o) const {
    return count == o.count &&
           (count == 1 || (stride == o.stride && position == o.position));
  }
  bool operator!=(const IndexRepeat &o) const { return !(*this == o); }
};

class TileLayout {
public:
  static constexpr int64_t kLaneBits = 5; // 32 lanes per warp

  /// `laneBases` has kLaneBits entries; `regBases` the register bits,
  /// `warpBases` the warp bits; `repeat` and `warpRepeat` optional digits
  /// of count > 2 in the register and the warp index.
  TileLayout(int64_t rows, int64_t cols, llvm::ArrayRef<TileCoord> regBases,
             llvm::ArrayRef<TileCoord> laneBases,
             llvm::ArrayRef<TileCoord> warpBases, IndexRepeat repeat = {},
             IndexRepeat warpRepeat = {});

  int64_t rows() const { return numRows; }
  int64_t cols() const { return numCols; }
  int64_t numRegisters() const {
    return (int64_t(1) << regBases.size()) * repeat.count;
  }
  int64_t numWarps() const {
    return (int64_t(1) << warpBases.size()) * warpDigit.count;
  }
  /// The register bits. Bit b of this list is bit b of the register index
  /// only below the repeat's position: code that does bit arithmetic on
  /// register indices asks hasRegisterRepeat() first.
  llvm::ArrayRef<TileCoord> registerBases() const { return regBases; }
  const IndexRepeat &registerRepeat() const { return repeat; }
  bool hasRegisterRepeat() const { return repeat.count > 1; }
  llvm::ArrayRef<TileCoord> laneBases() const { return lnBases; }
  /// The warp bits; as registerBases(), bit b of the warp index only below
  /// the warp repeat's position.
  llvm::ArrayRef<TileCoord> warpBasesRef() const { return warpBases; }
  const IndexRepeat &warpRepeat() const { return warpDigit; }
  bool hasWarpRepeat() const { return warpDigit.count > 1; }

  /// The element that register `reg` of lane `lane` of warp `warp` holds.
  TileCoord apply(int64_t reg, int64_t lane, int64_t warp) const;
  /// The static part: the element of register `reg` of lane 0 of warp 0.
  TileCoord ofRegister(int64_t reg) const { return apply(reg, 0, 0); }

  /// Empty when the digits are well formed: every non-zero basis along one
  /// dimension, and per dimension the digits a mixed-radix system (sorted by
  /// stride, each stride the product of the counts below it) whose counts
  /// multiply to the tile's size: every element of the tile held by exactly
  /// one (register, lane, warp) up to replication along zero bases. Else
  /// why not.
  std::string verify() const;

  /// Lane bits that move along columns only: the lanes a row reduction
  /// combines (shuffle xor 1 << bit).
  llvm::SmallVector<unsigned> laneBitsAlongCols() const;
  /// Lane bits that move no element: the lanes hold copies (in a per-row
  /// layout, the lanes that split its parent's rows; per-lane parts of row
  /// sums are added over them).
  llvm::SmallVector<unsigned> replicatedLaneBits() const;
  /// Warp bits that move along columns (a row reduction would have to cross
  /// warps through shared memory).
  llvm::SmallVector<unsigned> warpBitsAlongCols() const;
  /// Whether any warp digit (a bit or the repeat) moves along columns.
  bool warpsSplitColumns() const;

  /// The layout of per-row values (a row reduction's result, a row max or
  /// sum) that goes with this one: columns dropped, registers that differ
  /// only in columns merged, lanes and warps along columns replicated.
  /// rows() x 1.
  TileLayout rowSlice() const;
  /// For each register of rowSlice(), the registers of this layout that
  /// hold elements of the same row (for the same lane and warp).
  llvm::SmallVector<llvm::SmallVector<int64_t>> registersByRow() const;

  /// Where the lanes point for `stmatrix` (or `ldmatrix`) `.m8n8.x4` on a
  /// 16-bit tile of this layout, or std::nullopt where the layout is not
  /// one they move. The instructions move a warp's four 8 x 8 matrices,
  /// lane l holding the pair at row l / 4, columns 2 (l % 4) of each (the
  /// mma / WGMMA accumulator fragment: register bit 0 steps a column, lane
  /// bits 0-4 columns 2, 4 and rows 1, 2, 4), and lane l giving the address
  /// of row l % 8 of matrix l / 8. Matrix m is the pair of register bits 1
  /// and 2 equal to m's bits; the other register digits select one x4
  /// among the tile's, so every basis must step whole 8-column chunks. The
  /// layout returned maps (register of the x4's first pair, lane, warp) to
  /// the first element of the row that the lane addresses.
  std::optional<TileLayout> matrixRowAddresses() const;

  /// The layout of the transposed tile, [cols x rows]: each register,
  /// lane and warp holds element (col, row) where this one holds (row,
  /// col). No data moves: a tile and its transpose share their registers.
  TileLayout transposed() const;

  bool operator==(const TileLayout &o) const;
  bool operator!=(const TileLayout &o) const { return !(*this == o); }

  // The tensor-core layouts. Warps split the rows in equal contiguous
  // blocks; `rows` and `cols` must be multiples of the instruction shape.
  // A size whose ratio to the instruction shape is not a power of two
  // becomes the register repeat: at most one dimension may have one. The
  // WGMMA layouts take any number of whole warpgroups (three: the warp
  // repeat); the mma.sync ones a power of two of warps.

  /// mma.sync.m16n8k16 C/D fragments (f32 accumulators) tiling
  /// [rows x cols]: registers c0..c3 of the first n8 tile, then the next n8
  /// tiles, then the next m16 tiles of the warp's rows.
  static TileLayout mmaSyncAccumulator(int64_t rows, int64_t cols,
                                       int64_t warps);
  /// mmaSyncAccumulator's fragments with `columns` groups of warps
  /// splitting the columns: warp w holds rows [(w % R) H, ...) of columns
  /// [(w / R) C, ...) (R = warps / columns, H = rows / R, C = cols /
  /// columns).
  static TileLayout mmaSyncAccumulatorByColumns(int64_t rows, int64_t cols,
                                                int64_t warps, int64_t columns);
  /// mma.sync.m16n8k16 A fragments (16-bit elements a0..a7 per k16 step)
  /// tiling [rows x cols]: a0..a7 of k16 step 0, then the next k16 steps,
  /// then the next m16 tiles.
  static TileLayout mmaSyncOperandA(int64_t rows, int64_t cols, int64_t warps);
  /// mma.sync.m16n8k16 B fragments (b0..b3 per n8 x k16 step) tiling
  /// [rows = k x cols = n]; every warp holds the whole tile.
  static TileLayout mmaSyncOperandB(int64_t rows, int64_t cols, int64_t warps);
  /// wgmma.m64nNk16 D fragments (f32): per warpgroup 64 rows, warp w of a
  /// warpgroup rows 16 w .. 16 w + 15, d[i] at row 8 * (i / 2 % 2) + g and
  /// column 8 * (i / 4) + 2 t + i % 2 (g = lane / 4, t = lane % 4). `warps`
  /// is a multiple of 4; rows = 64 * warps / 4 * m-repeats.
  static TileLayout wgmmaAccumulator(int64_t rows, int64_t cols, int64_t warps);
  /// The same fragments with the warpgroups splitting the columns of one
  /// 64-row tile (warpgroup g: columns [g cols / G, (g + 1) cols / G)).
  static TileLayout wgmmaAccumulatorByColumns(int64_t rows, int64_t cols,
                                              int64_t warps);
  /// wgmma.m64nNk16 register A operand (16-bit elements): per warp the
  /// mma.sync A fragment of its 16 rows, k16 steps in the registers.
  static TileLayout wgmmaOperandA(int64_t rows, int64_t cols, int64_t warps);
  /// wgmma.m64nNk32 register A operand of 8-bit elements: per warp and k32
  /// step, register bits 0-1 four adjacent columns (4 t + i), bit 2 row + 8,
  /// bit 3 column + 16; lanes 4 columns (t) and rows (g).
  static TileLayout wgmmaOperandA8(int64_t rows, int64_t cols, int64_t warps);
  /// wgmmaOperandA8 with the k index permuted within each 32 columns so
  /// that a thread holds the accumulator's columns: register bit 0 column
  /// + 1, bit 1 column + 8, bit 2 row + 8, bit 3 column + 16; lanes as the
  /// accumulator's (columns 2 t, rows g). Instruction position 4 t + 2 h +
  /// i (+ 16) then holds column 2 t + 8 h + i (+ 16).
  static TileLayout wgmmaOperandA8Pairs(int64_t rows, int64_t cols,
                                        int64_t warps);

private:
  /// (the index of the register bits, the repeat's digit) of register `reg`.
  std::pair<int64_t, int64_t> splitRegister(int64_t reg) const;
  /// The register of register-bit index `bits` and repeat digit `digit`
  /// (splitRegister's inverse).
  int64_t joinRegister(int64_t bits, int64_t digit) const;

  int64_t numRows, numCols;
  llvm::SmallVector<TileCoord> regBases, lnBases, warpBases;
  IndexRepeat repeat, warpDigit;
};

/// Byte offset of element (row, col) of a row-major shared tile whose rows
/// are `rowBytes` long, stored in `swizzleBytes`-byte swizzled atoms as TMA
/// (CU_TENSOR_MAP_SWIZZLE_{32,64,128}B) writes them and a WGMMA descriptor
/// with the same swizzle mode reads them: a row is split into atoms of
/// `swizzleBytes` bytes, the atoms of one column band are stored one after
/// another ([rows x swizzleBytes] each), and inside an atom the 16-byte chunk
/// c of row r sits at chunk c ^ (r / (128 / swizzleBytes) % (swizzleBytes /
/// 16)). swizzleBytes = 0 means no swizzle (plain row-major).
///
/// Written once over an integer domain `A` (A::Int with add, mul, div, rem,
/// xorOp by constants or values) so that the compiler's constant offsets and
/// the offsets a kernel computes are the same function.
template <typename A>
typename A::Int swizzledByteOffsetIn(A &a, typename A::Int row,
                                     typename A::Int col, int64_t elementBytes,
                                     int64_t rows, int64_t rowBytes,
                                     int64_t swizzleBytes) {
  auto byte = a.mul(col, elementBytes);
  if (swizzleBytes == 0)
    return a.add(a.mul(row, rowBytes), byte);
  auto atom = a.div(byte, swizzleBytes); // which column band
  auto inAtom = a.rem(byte, swizzleBytes);
  auto chunk = a.div(inAtom, 16);
  auto phase = a.rem(a.div(row, 128 / swizzleBytes), swizzleBytes / 16);
  auto band = a.add(a.mul(atom, rows * swizzleBytes), a.mul(row, swizzleBytes));
  return a.add(band,
               a.add(a.mul(a.xorOp(chunk, phase), 16), a.rem(inAtom, 16)));
}

/// The integer domain of the functions below on plain integers.
struct IntegerArith {
  using Int = int64_t;
  Int add(Int x, Int y) { return x + y; }
  Int mul(Int x, Int y) { return x * y; }
  Int div(Int x, Int y) { return x / y; }
  Int rem(Int x, Int y) { return x % y; }
  Int xorOp(Int x, Int y) { return x ^ y; }
};

/// The operands mma.sync.m16n8k16 reads from shared memory with
/// ldmatrix.x4 (four 8 x 8 matrices of 16-bit elements; lanes 8 i .. 8 i + 7
/// point at the eight rows of matrix i): A [M, K] stored in rows of K (Q of
/// QKᵀ); B [K, N] stored as [N, K], rows of K (K of QKᵀ); B [K, N] stored as
/// is, rows of N, read with .trans (V of P·V).
/// How an mma.sync operand is stored in its shared tile: A as [M, K] (Q)
/// or as [K, M] (dSᵀ, read with .trans for dQ = dS K); B as [N, K] (K for
/// Q Kᵀ) or as [K, N] (V, read with .trans).
enum class LdMatrixOperand { A, AStoredKM, BStoredNK, BStoredKN };

/// The stored (row, col) that lane `lane` points ldmatrix.x4 at, from the
/// first row and column of one k16 step of `operand`, such that the four
/// matrices come back as the mma.sync fragment's 32-bit registers in order:
/// A a0a1, a2a3, a4a5, a6a7 of one m16 tile; B b0b1, b2b3 of one n8 tile,
/// then of the next. (.x2 reads the first two with lanes 0-15's.) Written
/// once over an integer domain (as swizzledByteOffsetIn) for the lowering
/// and for the tests that replay ldmatrix against the PTX ISA's fragments.
template <typename A>
std::pair<typename A::Int, typename A::Int>
ldmatrixLanePosition(A &a, LdMatrixOperand operand, typename A::Int lane) {
  // B stored [N, K]: matrix i has the n rows of tile i / 2, k half i % 2.
  // A stored [K, M] (.trans): matrix i has the k rows of half i / 2, m
  // half i % 2 — the same positions with the roles of rows and columns
  // swapped.
  if (operand == LdMatrixOperand::BStoredNK ||
      operand == LdMatrixOperand::AStoredKM)
    return {a.add(a.rem(lane, 8), a.mul(a.div(lane, 16), 8)),
            a.mul(a.rem(a.div(lane, 8), 2), 8)};
  // A: matrix i rows 8 (i % 2), k half i / 2; B stored [K, N]: k half
  // i % 2, n tile i / 2.
  return {a.rem(lane, 16), a.mul(a.div(lane, 16), 8)};
}

/// swizzledByteOffsetIn on plain integers.
int64_t swizzledByteOffset(int64_t row, int64_t col, int64_t elementBytes,
                           int64_t rows, int64_t rowBytes,
                           int64_t swizzleBytes);

} // namespace fagpu
} // namespace mlir

#endif // FA_DIALECT_FAGPU_IR_TILELAYOUT_H
