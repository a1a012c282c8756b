//===- TileLayout.cpp - Where each element of a GPU tile lives ------------===//

#include "fa/Dialect/FAGPU/IR/TileLayout.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"

#include <cassert>
#include <set>
#include <utility>

using namespace mlir::fagpu;
using llvm::ArrayRef;
using llvm::SmallVector;

TileLayout::TileLayout(int64_t rows, int64_t cols, ArrayRef<TileCoord> regBases,
                       ArrayRef<TileCoord> laneBases,
                       ArrayRef<TileCoord> warpBases)
    : numRows(rows), numCols(cols), regBases(regBases), lnBases(laneBases),
      warpBases(warpBases) {
  assert(laneBases.size() == kLaneBits && "a basis per lane bit");
}

static TileCoord combine(TileCoord acc, ArrayRef<TileCoord> bases,
                         int64_t index) {
  for (auto [bit, basis] : llvm::enumerate(bases)) {
    if ((index >> bit) & 1) {
      acc.row ^= basis.row;
      acc.col ^= basis.col;
    }
  }
  return acc;
}

TileCoord TileLayout::apply(int64_t reg, int64_t lane, int64_t warp) const {
  TileCoord c = combine({}, regBases, reg);
  c = combine(c, lnBases, lane);
  return combine(c, warpBases, warp);
}

std::string TileLayout::verify() const {
  if (numRows <= 0 || numCols <= 0 || !llvm::isPowerOf2_64(numRows) ||
      !llvm::isPowerOf2_64(numCols))
    return "tile sizes must be powers of two";
  std::set<std::pair<int64_t, int64_t>> seen;
  int64_t nonZero = 0;
  for (ArrayRef<TileCoord> bases :
       {ArrayRef<TileCoord>(regBases), ArrayRef<TileCoord>(lnBases),
        ArrayRef<TileCoord>(warpBases)}) {
    for (TileCoord basis : bases) {
      if (basis.isZero())
        continue;
      ++nonZero;
      bool rowBit = basis.row != 0 && basis.col == 0 &&
                    llvm::isPowerOf2_64(basis.row) && basis.row < numRows;
      bool colBit = basis.col != 0 && basis.row == 0 &&
                    llvm::isPowerOf2_64(basis.col) && basis.col < numCols;
      if (!rowBit && !colBit)
        return "a basis must be a power of two along one dimension, inside "
               "the tile";
      if (!seen.insert({basis.row, basis.col}).second)
        return "two bases move to the same element";
    }
  }
  // Distinct single-bit bases inside the tile cover it exactly when there
  // are log2(rows * cols) of them.
  if (int64_t(1) << nonZero != numRows * numCols)
    return "the bases do not cover the tile";
  return "";
}

SmallVector<unsigned> TileLayout::laneBitsAlongCols() const {
  SmallVector<unsigned> bits;
  for (auto [bit, basis] : llvm::enumerate(lnBases))
    if (basis.col != 0)
      bits.push_back(bit);
  return bits;
}

SmallVector<unsigned> TileLayout::warpBitsAlongCols() const {
  SmallVector<unsigned> bits;
  for (auto [bit, basis] : llvm::enumerate(warpBases))
    if (basis.col != 0)
      bits.push_back(bit);
  return bits;
}

static TileCoord rowPart(TileCoord c) { return {c.row, 0}; }

TileLayout TileLayout::rowSlice() const {
  SmallVector<TileCoord> regs, lanes, warps;
  for (TileCoord basis : regBases)
    if (basis.row != 0)
      regs.push_back(rowPart(basis));
  for (TileCoord basis : lnBases)
    lanes.push_back(rowPart(basis));
  for (TileCoord basis : warpBases)
    warps.push_back(rowPart(basis));
  return TileLayout(numRows, 1, regs, lanes, warps);
}

SmallVector<SmallVector<int64_t>> TileLayout::registersByRow() const {
  // Register r of the slice keeps the row bits of r; the column bits of a
  // register of this layout are free.
  SmallVector<unsigned> rowBits, colBits;
  for (auto [bit, basis] : llvm::enumerate(regBases))
    (basis.row != 0 ? rowBits : colBits).push_back(bit);
  SmallVector<SmallVector<int64_t>> groups(int64_t(1) << rowBits.size());
  for (int64_t reg = 0; reg < numRegisters(); ++reg) {
    int64_t slice = 0;
    for (auto [i, bit] : llvm::enumerate(rowBits))
      slice |= ((reg >> bit) & 1) << i;
    groups[slice].push_back(reg);
  }
  return groups;
}

bool TileLayout::operator==(const TileLayout &o) const {
  auto same = [](ArrayRef<TileCoord> a, ArrayRef<TileCoord> b) {
    return a.size() == b.size() && llvm::equal(a, b);
  };
  return numRows == o.numRows && numCols == o.numCols &&
         same(regBases, o.regBases) && same(lnBases, o.lnBases) &&
         same(warpBases, o.warpBases);
}

// Bases that step along one dimension by powers of two from `from` up to
// (not including) `to`.
static void appendSteps(SmallVector<TileCoord> &bases, bool alongRows,
                        int64_t from, int64_t to) {
  for (int64_t step = from; step < to; step *= 2)
    bases.push_back(alongRows ? TileCoord{step, 0} : TileCoord{0, step});
}

static int64_t rowsPerWarp(int64_t rows, int64_t warps) {
  assert(warps > 0 && rows % warps == 0 && "warps split the rows evenly");
  return rows / warps;
}

// The 16 x 8 C fragment of one warp: lane = 4 g + t holds (g, 2t), (g, 2t+1),
// (g+8, 2t), (g+8, 2t+1); the A fragment adds k 8..15 as a third register
// bit. Lanes: bits 0-1 are t (columns 2, 4), bits 2-4 are g (rows 1, 2, 4).
static SmallVector<TileCoord> fragmentLanes() {
  return {{0, 2}, {0, 4}, {1, 0}, {2, 0}, {4, 0}};
}

TileLayout TileLayout::mmaSyncAccumulator(int64_t rows, int64_t cols,
                                          int64_t warps) {
  int64_t warpRows = rowsPerWarp(rows, warps);
  SmallVector<TileCoord> regs = {{0, 1}, {8, 0}};
  appendSteps(regs, /*alongRows=*/false, 8, cols);
  appendSteps(regs, /*alongRows=*/true, 16, warpRows);
  SmallVector<TileCoord> warpBases;
  appendSteps(warpBases, /*alongRows=*/true, warpRows, rows);
  return TileLayout(rows, cols, regs, fragmentLanes(), warpBases);
}

TileLayout TileLayout::mmaSyncOperandA(int64_t rows, int64_t cols,
                                       int64_t warps) {
  int64_t warpRows = rowsPerWarp(rows, warps);
  SmallVector<TileCoord> regs = {{0, 1}, {8, 0}, {0, 8}};
  appendSteps(regs, /*alongRows=*/false, 16, cols);
  appendSteps(regs, /*alongRows=*/true, 16, warpRows);
  SmallVector<TileCoord> warpBases;
  appendSteps(warpBases, /*alongRows=*/true, warpRows, rows);
  return TileLayout(rows, cols, regs, fragmentLanes(), warpBases);
}

TileLayout TileLayout::mmaSyncOperandB(int64_t rows, int64_t cols,
                                       int64_t warps) {
  // (k, n): b0b1 = (2t, 2t+1; g), b2b3 = (2t+8, 2t+9; g).
  SmallVector<TileCoord> regs = {{1, 0}, {8, 0}};
  appendSteps(regs, /*alongRows=*/false, 8, cols);
  appendSteps(regs, /*alongRows=*/true, 16, rows);
  SmallVector<TileCoord> lanes = {{2, 0}, {4, 0}, {0, 1}, {0, 2}, {0, 4}};
  SmallVector<TileCoord> warpBases(llvm::Log2_64(warps), TileCoord{});
  return TileLayout(rows, cols, regs, lanes, warpBases);
}

TileLayout TileLayout::wgmmaAccumulator(int64_t rows, int64_t cols,
                                        int64_t warps) {
  assert(warps % 4 == 0 && "whole warpgroups");
  // Warp w of a warpgroup owns rows 16 w; warpgroups own 64-row blocks; a
  // taller tile repeats the m64 instruction (registers after the columns).
  SmallVector<TileCoord> regs = {{0, 1}, {8, 0}};
  appendSteps(regs, /*alongRows=*/false, 8, cols);
  appendSteps(regs, /*alongRows=*/true, 16 * warps, rows);
  SmallVector<TileCoord> warpBases;
  appendSteps(warpBases, /*alongRows=*/true, 16, 16 * warps);
  return TileLayout(rows, cols, regs, fragmentLanes(), warpBases);
}

TileLayout TileLayout::wgmmaAccumulatorByColumns(int64_t rows, int64_t cols,
                                                 int64_t warps) {
  assert(warps % 4 == 0 && rows == 64 && "whole warpgroups, 64 rows");
  int64_t groupCols = cols / (warps / 4);
  SmallVector<TileCoord> regs = {{0, 1}, {8, 0}};
  appendSteps(regs, /*alongRows=*/false, 8, groupCols);
  SmallVector<TileCoord> warpBases;
  appendSteps(warpBases, /*alongRows=*/true, 16, 64);
  appendSteps(warpBases, /*alongRows=*/false, groupCols, cols);
  return TileLayout(rows, cols, regs, fragmentLanes(), warpBases);
}

TileLayout TileLayout::wgmmaOperandA(int64_t rows, int64_t cols,
                                     int64_t warps) {
  assert(warps % 4 == 0 && "whole warpgroups");
  SmallVector<TileCoord> regs = {{0, 1}, {8, 0}, {0, 8}};
  appendSteps(regs, /*alongRows=*/false, 16, cols);
  appendSteps(regs, /*alongRows=*/true, 16 * warps, rows);
  SmallVector<TileCoord> warpBases;
  appendSteps(warpBases, /*alongRows=*/true, 16, 16 * warps);
  return TileLayout(rows, cols, regs, fragmentLanes(), warpBases);
}

namespace {
struct IntegerArith {
  using Int = int64_t;
  Int add(Int x, Int y) { return x + y; }
  Int mul(Int x, Int y) { return x * y; }
  Int div(Int x, Int y) { return x / y; }
  Int rem(Int x, Int y) { return x % y; }
  Int xorOp(Int x, Int y) { return x ^ y; }
};
} // namespace

int64_t mlir::fagpu::swizzledByteOffset(int64_t row, int64_t col,
                                        int64_t elementBytes, int64_t rows,
                                        int64_t rowBytes,
                                        int64_t swizzleBytes) {
  IntegerArith a;
  return swizzledByteOffsetIn(a, row, col, elementBytes, rows, rowBytes,
                              swizzleBytes);
}
