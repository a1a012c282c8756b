//===- TileLayout.cpp - Where each element of a GPU tile lives ------------===//

#include "fa/Dialect/FAGPU/IR/TileLayout.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVectorExtras.h"
#include "llvm/Support/MathExtras.h"

#include <cassert>
#include <set>
#include <tuple>
#include <utility>

using namespace mlir::fagpu;
using llvm::ArrayRef;
using llvm::SmallVector;

TileLayout::TileLayout(int64_t rows, int64_t cols, ArrayRef<TileCoord> regBases,
                       ArrayRef<TileCoord> laneBases,
                       ArrayRef<TileCoord> warpBases, IndexRepeat repeat,
                       IndexRepeat warpRepeat)
    : numRows(rows), numCols(cols), regBases(regBases), lnBases(laneBases),
      warpBases(warpBases), repeat(repeat), warpDigit(warpRepeat) {
  assert(laneBases.size() == kLaneBits && "a basis per lane bit");
}

// Digits are disjoint (verify), so the element is the sum of their
// contributions.
static TileCoord combine(TileCoord acc, ArrayRef<TileCoord> bases,
                         int64_t index) {
  for (auto [bit, basis] : llvm::enumerate(bases)) {
    if ((index >> bit) & 1) {
      acc.row += basis.row;
      acc.col += basis.col;
    }
  }
  return acc;
}

// An index in mixed radix: the bits below the repeat, the repeat's digit,
// then the bits above it. Returns (the bits, the digit).
static std::pair<int64_t, int64_t> splitIndex(int64_t index,
                                              const IndexRepeat &repeat) {
  int64_t low = index & ((int64_t(1) << repeat.position) - 1);
  int64_t rest = index >> repeat.position;
  return {low | (rest / repeat.count) << repeat.position, rest % repeat.count};
}

std::pair<int64_t, int64_t> TileLayout::splitRegister(int64_t reg) const {
  return splitIndex(reg, repeat);
}

int64_t TileLayout::joinRegister(int64_t bits, int64_t digit) const {
  int64_t low = bits & ((int64_t(1) << repeat.position) - 1);
  int64_t high = bits >> repeat.position;
  return low | (high * repeat.count + digit) << repeat.position;
}

static TileCoord addDigit(TileCoord c, const IndexRepeat &repeat,
                          int64_t digit) {
  return {c.row + digit * repeat.stride.row, c.col + digit * repeat.stride.col};
}

TileCoord TileLayout::apply(int64_t reg, int64_t lane, int64_t warp) const {
  auto [bits, digit] = splitRegister(reg);
  TileCoord c = addDigit(combine({}, regBases, bits), repeat, digit);
  c = combine(c, lnBases, lane);
  auto [warpBits, warpDigitValue] = splitIndex(warp, warpDigit);
  return addDigit(combine(c, warpBases, warpBits), warpDigit, warpDigitValue);
}

std::string TileLayout::verify() const {
  if (numRows <= 0 || numCols <= 0)
    return "tile sizes must be positive";
  // Per dimension, (stride, count) of every digit that moves along it.
  SmallVector<std::pair<int64_t, int64_t>> digits[2];
  for (ArrayRef<TileCoord> bases :
       {ArrayRef<TileCoord>(regBases), ArrayRef<TileCoord>(lnBases),
        ArrayRef<TileCoord>(warpBases)}) {
    for (TileCoord basis : bases) {
      if (basis.isZero())
        continue; // replicated along this bit
      if ((basis.row != 0) == (basis.col != 0) || basis.row < 0 ||
          basis.col < 0)
        return "a basis must move along one dimension, forward";
      digits[basis.row != 0 ? 0 : 1].push_back(
          {basis.row != 0 ? basis.row : basis.col, 2});
    }
  }
  // A warp repeat along no dimension replicates (a row slice of warpgroups
  // that split columns); else a repeat is one more digit of its dimension.
  for (auto [r, bits, what] :
       {std::make_tuple(&repeat, regBases.size(), "register"),
        std::make_tuple(&warpDigit, warpBases.size(), "warp")}) {
    if (r->count < 1 || r->position > bits)
      return std::string("a ") + what +
             " repeat has a positive count, among the " + what + " bits";
    TileCoord s = r->stride;
    if (r->count == 1 || (r == &warpDigit && s.isZero()))
      continue;
    if ((s.row != 0) == (s.col != 0) || s.row < 0 || s.col < 0)
      return std::string("a ") + what +
             " repeat must move along one dimension, forward";
    digits[s.row != 0 ? 0 : 1].push_back(
        {s.row != 0 ? s.row : s.col, r->count});
  }
  for (int dim = 0; dim < 2; ++dim) {
    llvm::sort(digits[dim]);
    int64_t covered = 1; // elements the digits below count through
    for (auto [stride, count] : digits[dim]) {
      if (stride < covered)
        return "two digits move to the same element";
      if (stride > covered)
        return "the digits do not cover the tile";
      if (covered > (dim == 0 ? numRows : numCols) / count)
        return "a digit moves outside the tile";
      covered *= count;
    }
    if (covered != (dim == 0 ? numRows : numCols))
      return "the digits do not cover the tile";
  }
  return "";
}

SmallVector<unsigned> TileLayout::laneBitsAlongCols() const {
  SmallVector<unsigned> bits;
  for (auto [bit, basis] : llvm::enumerate(lnBases))
    if (basis.col != 0)
      bits.push_back(bit);
  return bits;
}

SmallVector<unsigned> TileLayout::replicatedLaneBits() const {
  SmallVector<unsigned> bits;
  for (auto [bit, basis] : llvm::enumerate(lnBases))
    if (basis.row == 0 && basis.col == 0)
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

bool TileLayout::warpsSplitColumns() const {
  return !warpBitsAlongCols().empty() ||
         (hasWarpRepeat() && warpDigit.stride.col != 0);
}

static TileCoord rowPart(TileCoord c) { return {c.row, 0}; }

std::optional<TileLayout> TileLayout::matrixRowAddresses() const {
  const TileCoord fragmentLanes[] = {{0, 2}, {0, 4}, {1, 0}, {2, 0}, {4, 0}};
  if (!llvm::equal(lnBases, fragmentLanes) || regBases.size() < 3 ||
      regBases[0] != TileCoord{0, 1})
    return std::nullopt;
  // Bits 1 and 2 pick a lane's matrix: a repeat digit below them would
  // move them.
  if (repeat.count > 1 && repeat.position < 3)
    return std::nullopt;
  auto wholeChunks = [](const TileCoord &c) { return c.col % 8 == 0; };
  if (!llvm::all_of(llvm::drop_begin(regBases), wholeChunks) ||
      !llvm::all_of(warpBases, wholeChunks) || !wholeChunks(repeat.stride) ||
      !wholeChunks(warpDigit.stride))
    return std::nullopt;
  const TileCoord addressLanes[] = {
      {1, 0}, {2, 0}, {4, 0}, regBases[1], regBases[2]};
  return TileLayout(numRows, numCols, regBases, addressLanes, warpBases, repeat,
                    warpDigit);
}

TileLayout TileLayout::rowSlice() const {
  SmallVector<TileCoord> regs, lanes, warps;
  IndexRepeat rowRepeat;
  for (auto [bit, basis] : llvm::enumerate(regBases)) {
    if (bit == repeat.position && repeat.stride.row != 0)
      rowRepeat = {repeat.count, rowPart(repeat.stride), unsigned(regs.size())};
    if (basis.row != 0)
      regs.push_back(rowPart(basis));
  }
  if (repeat.position == regBases.size() && repeat.stride.row != 0)
    rowRepeat = {repeat.count, rowPart(repeat.stride), unsigned(regs.size())};
  for (TileCoord basis : lnBases)
    lanes.push_back(rowPart(basis));
  for (TileCoord basis : warpBases)
    warps.push_back(rowPart(basis));
  IndexRepeat warpRows = warpDigit;
  warpRows.stride = rowPart(warpRows.stride);
  return TileLayout(numRows, 1, regs, lanes, warps, rowRepeat, warpRows);
}

SmallVector<SmallVector<int64_t>> TileLayout::registersByRow() const {
  // Register r of the slice has r's row bits (in order) and, where the
  // repeat moves along rows, r's repeat digit; column digits are free.
  TileLayout slice = rowSlice();
  SmallVector<SmallVector<int64_t>> groups(slice.numRegisters());
  for (int64_t reg = 0; reg < numRegisters(); ++reg) {
    auto [bits, digit] = splitRegister(reg);
    int64_t sliceBits = 0, sliceBit = 0;
    for (auto [bit, basis] : llvm::enumerate(regBases))
      if (basis.row != 0)
        sliceBits |= ((bits >> bit) & 1) << sliceBit++;
    int64_t sliceDigit = slice.hasRegisterRepeat() ? digit : 0;
    groups[slice.joinRegister(sliceBits, sliceDigit)].push_back(reg);
  }
  return groups;
}

TileLayout TileLayout::transposed() const {
  auto swap = [](TileCoord c) { return TileCoord{c.col, c.row}; };
  auto swapAll = [&](ArrayRef<TileCoord> bases) {
    return llvm::map_to_vector(bases, swap);
  };
  IndexRepeat regRepeat = repeat, warpRepeat = warpDigit;
  regRepeat.stride = swap(repeat.stride);
  warpRepeat.stride = swap(warpDigit.stride);
  return TileLayout(numCols, numRows, swapAll(regBases), swapAll(lnBases),
                    swapAll(warpBases), regRepeat, warpRepeat);
}

bool TileLayout::operator==(const TileLayout &o) const {
  auto same = [](ArrayRef<TileCoord> a, ArrayRef<TileCoord> b) {
    return a.size() == b.size() && llvm::equal(a, b);
  };
  return numRows == o.numRows && numCols == o.numCols &&
         same(regBases, o.regBases) && same(lnBases, o.lnBases) &&
         same(warpBases, o.warpBases) && repeat == o.repeat &&
         warpDigit == o.warpDigit;
}

// Bases that step along one dimension by powers of two from `from` up to
// (not including) `to`.
static void appendSteps(SmallVector<TileCoord> &bases, bool alongRows,
                        int64_t from, int64_t to) {
  for (int64_t step = from; step < to; step *= 2)
    bases.push_back(alongRows ? TileCoord{step, 0} : TileCoord{0, step});
}

// Register or warp digits along one dimension from `from` up to `to` (a
// multiple of it): bits while the ratio left is even, then the index's
// repeat for an odd rest (a 176-column tile: bit 8, then 11 x 16; twelve
// warps: rows 16 and 32, then 3 x 64).
static void appendDigits(SmallVector<TileCoord> &bases, IndexRepeat &repeat,
                         bool alongRows, int64_t from, int64_t to) {
  int64_t step = from;
  for (; step < to && (to / step) % 2 == 0; step *= 2)
    bases.push_back(alongRows ? TileCoord{step, 0} : TileCoord{0, step});
  if (step >= to)
    return;
  assert(repeat.count == 1 && "one repeat an index");
  repeat = {to / step, alongRows ? TileCoord{step, 0} : TileCoord{0, step},
            unsigned(bases.size())};
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
  return mmaSyncAccumulatorByColumns(rows, cols, warps, /*columns=*/1);
}

TileLayout TileLayout::mmaSyncAccumulatorByColumns(int64_t rows, int64_t cols,
                                                   int64_t warps,
                                                   int64_t columns) {
  assert(columns > 0 && warps % columns == 0 && cols % columns == 0 &&
         "column groups split the warps and the columns evenly");
  // One group: the warps split the rows alone (mmaSyncAccumulator).
  int64_t rowWarps = warps / columns;
  int64_t warpRows = rowsPerWarp(rows, rowWarps);
  int64_t groupCols = cols / columns;
  SmallVector<TileCoord> regs = {{0, 1}, {8, 0}};
  IndexRepeat repeat;
  appendDigits(regs, repeat, /*alongRows=*/false, 8, groupCols);
  appendDigits(regs, repeat, /*alongRows=*/true, 16, warpRows);
  // The low warp bits step the rows, the high ones the column groups.
  SmallVector<TileCoord> warpBases;
  appendSteps(warpBases, /*alongRows=*/true, warpRows, rows);
  appendSteps(warpBases, /*alongRows=*/false, groupCols, cols);
  return TileLayout(rows, cols, regs, fragmentLanes(), warpBases, repeat);
}

TileLayout TileLayout::mmaSyncOperandA(int64_t rows, int64_t cols,
                                       int64_t warps) {
  int64_t warpRows = rowsPerWarp(rows, warps);
  SmallVector<TileCoord> regs = {{0, 1}, {8, 0}, {0, 8}};
  IndexRepeat repeat;
  appendDigits(regs, repeat, /*alongRows=*/false, 16, cols);
  appendDigits(regs, repeat, /*alongRows=*/true, 16, warpRows);
  SmallVector<TileCoord> warpBases;
  appendSteps(warpBases, /*alongRows=*/true, warpRows, rows);
  return TileLayout(rows, cols, regs, fragmentLanes(), warpBases, repeat);
}

TileLayout TileLayout::mmaSyncOperandB(int64_t rows, int64_t cols,
                                       int64_t warps) {
  // (k, n): b0b1 = (2t, 2t+1; g), b2b3 = (2t+8, 2t+9; g).
  SmallVector<TileCoord> regs = {{1, 0}, {8, 0}};
  IndexRepeat repeat;
  appendDigits(regs, repeat, /*alongRows=*/false, 8, cols);
  appendDigits(regs, repeat, /*alongRows=*/true, 16, rows);
  SmallVector<TileCoord> lanes = {{2, 0}, {4, 0}, {0, 1}, {0, 2}, {0, 4}};
  SmallVector<TileCoord> warpBases(llvm::Log2_64(warps), TileCoord{});
  return TileLayout(rows, cols, regs, lanes, warpBases, repeat);
}

TileLayout TileLayout::wgmmaAccumulator(int64_t rows, int64_t cols,
                                        int64_t warps) {
  assert(warps % 4 == 0 && "whole warpgroups");
  // Warp w of a warpgroup owns rows 16 w; warpgroups own 64-row blocks; a
  // taller tile repeats the m64 instruction (registers after the columns).
  SmallVector<TileCoord> regs = {{0, 1}, {8, 0}};
  IndexRepeat repeat;
  appendDigits(regs, repeat, /*alongRows=*/false, 8, cols);
  appendDigits(regs, repeat, /*alongRows=*/true, 16 * warps, rows);
  SmallVector<TileCoord> warpBases;
  IndexRepeat warpRepeat;
  appendDigits(warpBases, warpRepeat, /*alongRows=*/true, 16, 16 * warps);
  return TileLayout(rows, cols, regs, fragmentLanes(), warpBases, repeat,
                    warpRepeat);
}

TileLayout TileLayout::wgmmaAccumulatorByColumns(int64_t rows, int64_t cols,
                                                 int64_t warps) {
  assert(warps % 4 == 0 && llvm::isPowerOf2_64(warps) && rows == 64 &&
         "a power of two of warpgroups, 64 rows");
  int64_t groupCols = cols / (warps / 4);
  SmallVector<TileCoord> regs = {{0, 1}, {8, 0}};
  IndexRepeat repeat;
  appendDigits(regs, repeat, /*alongRows=*/false, 8, groupCols);
  SmallVector<TileCoord> warpBases;
  appendSteps(warpBases, /*alongRows=*/true, 16, 64);
  appendSteps(warpBases, /*alongRows=*/false, groupCols, cols);
  return TileLayout(rows, cols, regs, fragmentLanes(), warpBases, repeat);
}

TileLayout TileLayout::wgmmaOperandA(int64_t rows, int64_t cols,
                                     int64_t warps) {
  assert(warps % 4 == 0 && "whole warpgroups");
  SmallVector<TileCoord> regs = {{0, 1}, {8, 0}, {0, 8}};
  IndexRepeat repeat;
  appendDigits(regs, repeat, /*alongRows=*/false, 16, cols);
  appendDigits(regs, repeat, /*alongRows=*/true, 16 * warps, rows);
  SmallVector<TileCoord> warpBases;
  IndexRepeat warpRepeat;
  appendDigits(warpBases, warpRepeat, /*alongRows=*/true, 16, 16 * warps);
  return TileLayout(rows, cols, regs, fragmentLanes(), warpBases, repeat,
                    warpRepeat);
}

/// An 8-bit WGMMA A operand: `regs` the four register bits of a k32 step
/// (the k32 steps and m-repeats after them), `lanes` the lane bits, warps
/// over rows.
static TileLayout wgmmaOperandA8Of(int64_t rows, int64_t cols, int64_t warps,
                                   SmallVector<TileCoord> regs,
                                   const SmallVector<TileCoord> &lanes) {
  assert(warps % 4 == 0 && "whole warpgroups");
  IndexRepeat repeat;
  appendDigits(regs, repeat, /*alongRows=*/false, 32, cols);
  appendDigits(regs, repeat, /*alongRows=*/true, 16 * warps, rows);
  SmallVector<TileCoord> warpBases;
  IndexRepeat warpRepeat;
  appendDigits(warpBases, warpRepeat, /*alongRows=*/true, 16, 16 * warps);
  return TileLayout(rows, cols, regs, lanes, warpBases, repeat, warpRepeat);
}

TileLayout TileLayout::wgmmaOperandA8(int64_t rows, int64_t cols,
                                      int64_t warps) {
  return wgmmaOperandA8Of(rows, cols, warps, {{0, 1}, {0, 2}, {8, 0}, {0, 16}},
                          {{0, 4}, {0, 8}, {1, 0}, {2, 0}, {4, 0}});
}

TileLayout TileLayout::wgmmaOperandA8Pairs(int64_t rows, int64_t cols,
                                           int64_t warps) {
  return wgmmaOperandA8Of(rows, cols, warps, {{0, 1}, {0, 8}, {8, 0}, {0, 16}},
                          fragmentLanes());
}

int64_t mlir::fagpu::swizzledByteOffset(int64_t row, int64_t col,
                                        int64_t elementBytes, int64_t rows,
                                        int64_t rowBytes,
                                        int64_t swizzleBytes) {
  IntegerArith a;
  return swizzledByteOffsetIn(a, row, col, elementBytes, rows, rowBytes,
                              swizzleBytes);
}
