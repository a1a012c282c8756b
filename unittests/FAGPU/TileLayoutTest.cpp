//===- TileLayoutTest.cpp - TileLayout against the PTX ISA tables ---------===//
//
// TileLayout (fa/Dialect/FAGPU/IR/TileLayout.h) says which element of a tile
// each (register, lane, warp) of a block holds; every tensor-core lowering
// trusts it. A wrong lane mapping produces wrong numbers on the GPU only, so
// it is checked here, on the CPU, against things that do not share its code:
//   - the PTX ISA's fragment tables, transcribed below as the ISA states them
//     (its own formulas in groupID / threadID_in_group, or a reading of its
//     figures), never derived from the bases in TileLayout.cpp;
//   - for the wgmma fragments, which the ISA gives as figures only, also
//     CUTLASS's independent encoding of the same figures (CuTe layouts);
//   - literal spot values read off the ISA figures;
//   - the ISA's swizzle tables (5.5.7) for swizzledByteOffset, as a table
//     lookup on the shared-memory address, plus CuTe's Swizzle<B,4,3>;
//   - structural properties (bijection onto the tile, row slices).
// The tiling of several instructions into one tile (register order, warps
// owning contiguous row blocks) is FlashMLIR's own rule from TileLayout.h and
// is written here independently as plain index arithmetic.
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FAGPU/IR/TileLayout.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

using namespace mlir::fagpu;

namespace {

struct RC {
  int64_t row, col;
};

std::string str(const RC &c) {
  std::ostringstream os;
  os << "(" << c.row << ", " << c.col << ")";
  return os.str();
}

//===----------------------------------------------------------------------===//
// PTX ISA 9.7.14.5.8 "Matrix Fragments for mma.m16n8k16 with floating point
// type". The ISA's own definitions, for every fragment below:
//   groupID           = %laneid >> 2
//   threadID_in_group = %laneid % 4
//===----------------------------------------------------------------------===//

int64_t groupID(int64_t laneid) { return laneid >> 2; }
int64_t threadIDInGroup(int64_t laneid) { return laneid % 4; }

// Multiplicand A, .f16 / .bf16 (Figure 79), elements a0..a7 (low to high):
//   row = groupID      for ai where 0 <= i < 2 || 4 <= i < 6
//         groupID + 8  Otherwise
//   col = (threadID_in_group * 2) + (i & 0x1)      for ai where i < 4
//         (threadID_in_group * 2) + (i & 0x1) + 8  for ai where i >= 4
RC isaMmaA(int64_t laneid, int64_t i) {
  int64_t row = ((0 <= i && i < 2) || (4 <= i && i < 6)) ? groupID(laneid)
                                                         : groupID(laneid) + 8;
  int64_t col = i < 4 ? (threadIDInGroup(laneid) * 2) + (i & 0x1)
                      : (threadIDInGroup(laneid) * 2) + (i & 0x1) + 8;
  return {row, col};
}

// Multiplicand B, .f16 / .bf16 (Figure 81), elements b0..b3; B is K x N
// (row = k, col = n):
//   row = (threadID_in_group * 2) + (i & 0x1)      for bi where i < 2
//         (threadID_in_group * 2) + (i & 0x1) + 8  for bi where i >= 2
//   col = groupID
RC isaMmaB(int64_t laneid, int64_t i) {
  int64_t row = i < 2 ? (threadIDInGroup(laneid) * 2) + (i & 0x1)
                      : (threadIDInGroup(laneid) * 2) + (i & 0x1) + 8;
  return {row, groupID(laneid)};
}

// Accumulators C or D, .f32 (Figure 83), elements c0..c3:
//   row = groupID      for ci where i < 2
//         groupID + 8  for ci where i >= 2
//   col = (threadID_in_group * 2) + (i & 0x1)  for ci where i = {0,..,3}
RC isaMmaC(int64_t laneid, int64_t i) {
  int64_t row = i < 2 ? groupID(laneid) : groupID(laneid) + 8;
  return {row, (threadIDInGroup(laneid) * 2) + (i & 0x1)};
}

//===----------------------------------------------------------------------===//
// PTX ISA 9.7.15.5.1.1.1 "Matrix Fragments for wgmma.mma_async.m64nNk16"
// (in 9.7.15.5.1 "Register Fragments and Shared Memory Matrix Layouts"). The
// ISA gives these two layouts as figures only; what the figures show:
//
// Accumulator D, .f32, d0..d(N/2-1) (Figure 149 "WGMMA .m64nNk16 register
// fragment layout for accumulator matrix D"): the 64 x N tile is split in
// four 16-row blocks, rows 0-15 held by T0-T31 (warp 0 of the warpgroup),
// 16-31 by T32-T63, 32-47 by T64-T95, 48-63 by T96-T127. In a warp's block
// and in each 8-column block j (columns 8j .. 8j+7), thread T with
// laneid = T % 32 holds d(4j), d(4j+1) in row groupID, columns
// 8j + threadID_in_group * 2 + {0, 1}, and d(4j+2), d(4j+3) in row
// groupID + 8, the same columns. In the ISA's style:
//   row = 16 * warp_in_warpgroup + groupID      for di where i % 4 < 2
//         16 * warp_in_warpgroup + groupID + 8  otherwise
//   col = (threadID_in_group * 2) + (i & 0x1) + 8 * (i / 4)
//
// Multiplicand A in registers, .f16/.bf16, a0..a7 (Figure 148 "WGMMA
// .m64nNk16 register fragment layout for matrix A"): the same four 16-row
// blocks (warp w of the warpgroup: rows 16w .. 16w+15), each laid out as the
// mma.m16n8k16 A fragment: a0,a1 in row groupID, columns
// threadID_in_group * 2 + {0, 1}; a2,a3 in row groupID + 8; a4,a5 in row
// groupID, columns + 8; a6,a7 in row groupID + 8, columns + 8.
//===----------------------------------------------------------------------===//

RC isaWgmmaD(int64_t warpInWarpgroup, int64_t laneid, int64_t i) {
  int64_t row = 16 * warpInWarpgroup + groupID(laneid) + (i % 4 < 2 ? 0 : 8);
  int64_t col = (threadIDInGroup(laneid) * 2) + (i & 0x1) + 8 * (i / 4);
  return {row, col};
}

RC isaWgmmaA(int64_t warpInWarpgroup, int64_t laneid, int64_t i) {
  int64_t row = 16 * warpInWarpgroup + groupID(laneid) +
                ((i == 2 || i == 3 || i == 6 || i == 7) ? 8 : 0);
  int64_t col = (threadIDInGroup(laneid) * 2) + (i & 0x1) + (i >= 4 ? 8 : 0);
  return {row, col};
}

// CUTLASS's encoding of the same two figures (cute/atom/mma_traits_sm90_gmma
// .hpp, SM90::GMMA), a CuTe (thread, value) -> m + 64 * n layout:
//   CLayout_64xN = Layout<Shape <Shape <  _4,_8, _4>,Shape < _2,_2,Int<N/8>>>,
//                         Stride<Stride<_128,_1,_16>,Stride<_64,_8,   _512>>>
//   ALayout_64x16 = Layout<Shape <Shape <  _4,_8, _4>,Shape < _2,_2,  _2>>,
//                          Stride<Stride<_128,_1,_16>,Stride<_64,_8,_512>>>
// (thread = index in the warpgroup, value = register index; the two have the
// same strides, N/8 = 2 for A's K = 16.)
RC cutlassSm90Gmma(int64_t threadInWarpgroup, int64_t value) {
  int64_t t = threadInWarpgroup, v = value;
  int64_t idx = (t % 4) * 128 + ((t / 4) % 8) * 1 + (t / 32) * 16 +
                (v % 2) * 64 + ((v / 2) % 2) * 8 + (v / 4) * 512;
  return {idx % 64, idx / 64};
}

//===----------------------------------------------------------------------===//
// FlashMLIR's tiling of the instructions into a tile (TileLayout.h), written
// here as plain index arithmetic composed with the ISA tables above.
//===----------------------------------------------------------------------===//

struct Shape {
  int64_t rows, cols, warps;
};

std::string str(const Shape &s) {
  std::ostringstream os;
  os << s.rows << "x" << s.cols << " over " << s.warps << " warp(s)";
  return os.str();
}

// mma.sync C/D: warps own contiguous blocks of rows / warps rows; register
// 4 * (nTile + nTiles * mTile) + i is c_i of n8 tile nTile and m16 tile
// mTile of the warp's rows.
RC expectMmaC(const Shape &s, int64_t reg, int64_t lane, int64_t warp) {
  int64_t nTiles = s.cols / 8, warpRows = s.rows / s.warps;
  int64_t i = reg % 4, tile = reg / 4;
  int64_t nTile = tile % nTiles, mTile = tile / nTiles;
  RC c = isaMmaC(lane, i);
  return {warp * warpRows + 16 * mTile + c.row, 8 * nTile + c.col};
}

// mma.sync A: register 8 * (kStep + kSteps * mTile) + i is a_i of k16 step
// kStep and m16 tile mTile of the warp's rows.
RC expectMmaA(const Shape &s, int64_t reg, int64_t lane, int64_t warp) {
  int64_t kSteps = s.cols / 16, warpRows = s.rows / s.warps;
  int64_t i = reg % 8, step = reg / 8;
  int64_t kStep = step % kSteps, mTile = step / kSteps;
  RC a = isaMmaA(lane, i);
  return {warp * warpRows + 16 * mTile + a.row, 16 * kStep + a.col};
}

// mma.sync B ([K x N] = [rows x cols]): register 4 * (nTile + nTiles * kStep)
// + i is b_i of n8 tile nTile and k16 step kStep; every warp the same.
RC expectMmaB(const Shape &s, int64_t reg, int64_t lane, int64_t /*warp*/) {
  int64_t nTiles = s.cols / 8;
  int64_t i = reg % 4, tile = reg / 4;
  int64_t nTile = tile % nTiles, kStep = tile / nTiles;
  RC b = isaMmaB(lane, i);
  return {16 * kStep + b.row, 8 * nTile + b.col};
}

// wgmma D: warpgroup g = warp / 4 owns rows 64 g .. 64 g + 63 of each m64
// instruction; registers 0 .. N/2 - 1 are d0 .. d(N/2-1) of the first
// instruction, the next N/2 those of the m-repeat, whose rows start
// 64 * warpgroups further down.
RC expectWgmmaD(const Shape &s, int64_t reg, int64_t lane, int64_t warp) {
  int64_t perInstruction = s.cols / 2, warpgroups = s.warps / 4;
  int64_t i = reg % perInstruction, repeat = reg / perInstruction;
  RC d = isaWgmmaD(warp % 4, lane, i);
  return {64 * warpgroups * repeat + 64 * (warp / 4) + d.row, d.col};
}

// wgmma register A: a0..a7 of k16 step 0, then the next k16 steps, then the
// m-repeats (64 * warpgroups rows further down each).
RC expectWgmmaA(const Shape &s, int64_t reg, int64_t lane, int64_t warp) {
  int64_t kSteps = s.cols / 16, warpgroups = s.warps / 4;
  int64_t i = reg % 8, step = reg / 8;
  int64_t kStep = step % kSteps, repeat = step / kSteps;
  RC a = isaWgmmaA(warp % 4, lane, i);
  return {64 * warpgroups * repeat + 64 * (warp / 4) + a.row,
          16 * kStep + a.col};
}

//===----------------------------------------------------------------------===//
// Checking helpers.
//===----------------------------------------------------------------------===//

// Every (reg, lane, warp) of `layout` holds `expected(reg, lane, warp)`.
template <typename Fn>
void expectMatches(const TileLayout &layout, const std::string &what,
                   int64_t numRegisters, int64_t numWarps, Fn expected) {
  EXPECT_EQ(layout.numRegisters(), numRegisters) << what;
  EXPECT_EQ(layout.numWarps(), numWarps) << what;
  if (layout.numRegisters() != numRegisters || layout.numWarps() != numWarps)
    return;
  int64_t failures = 0;
  for (int64_t warp = 0; warp < numWarps; ++warp)
    for (int64_t lane = 0; lane < 32; ++lane)
      for (int64_t reg = 0; reg < numRegisters; ++reg) {
        TileCoord got = layout.apply(reg, lane, warp);
        RC want = expected(reg, lane, warp);
        if (got.row == want.row && got.col == want.col)
          continue;
        if (++failures <= 8)
          ADD_FAILURE() << what << ": warp " << warp << " lane " << lane
                        << " register " << reg << " holds "
                        << str(RC{got.row, got.col}) << ", the ISA says "
                        << str(want);
      }
  EXPECT_EQ(failures, 0) << what << ": (register, lane, warp) triples off";
}

// The map (reg, lane, warp) -> element hits every element of the tile
// exactly once (per warp when `perWarp`, for a tile every warp holds whole).
void expectBijection(const TileLayout &layout, const std::string &what,
                     bool perWarp = false) {
  int64_t rows = layout.rows(), cols = layout.cols();
  int64_t groups = perWarp ? layout.numWarps() : 1;
  for (int64_t group = 0; group < groups; ++group) {
    std::vector<int64_t> hits(rows * cols, 0);
    int64_t outside = 0;
    for (int64_t warp = 0; warp < layout.numWarps(); ++warp) {
      if (perWarp && warp != group)
        continue;
      for (int64_t lane = 0; lane < 32; ++lane)
        for (int64_t reg = 0; reg < layout.numRegisters(); ++reg) {
          TileCoord c = layout.apply(reg, lane, warp);
          if (c.row < 0 || c.row >= rows || c.col < 0 || c.col >= cols) {
            ++outside;
            continue;
          }
          ++hits[c.row * cols + c.col];
        }
    }
    EXPECT_EQ(outside, 0) << what << ": elements outside the tile";
    int64_t wrong = 0;
    for (int64_t e = 0; e < rows * cols; ++e)
      if (hits[e] != 1 && ++wrong <= 4)
        ADD_FAILURE() << what << (perWarp ? " warp " : " ")
                      << (perWarp ? std::to_string(group) : std::string())
                      << ": element " << str(RC{e / cols, e % cols}) << " held "
                      << hits[e] << " times";
    EXPECT_EQ(wrong, 0) << what << ": elements not held exactly once";
  }
}

//===----------------------------------------------------------------------===//
// 1. mma.sync accumulator (C/D).
//===----------------------------------------------------------------------===//

TEST(MmaSyncAccumulator, SingleInstructionMatchesIsaTable) {
  TileLayout layout = TileLayout::mmaSyncAccumulator(16, 8, 1);
  EXPECT_EQ(layout.rows(), 16);
  EXPECT_EQ(layout.cols(), 8);
  expectMatches(
      layout, "m16n8 C", 4, 1,
      [](int64_t reg, int64_t lane, int64_t) { return isaMmaC(lane, reg); });
}

// Literal values read off Figure 83 (MMA .m16n8k16 fragment layout for
// accumulator matrix C/D): T0 {c0,c1} at row 0 cols 0,1; T1 at cols 2,3;
// T4 starts row 1; T0 {c2,c3} at row 8; T31 {c2,c3} at row 15 cols 6,7.
TEST(MmaSyncAccumulator, FigureSpotValues) {
  TileLayout layout = TileLayout::mmaSyncAccumulator(16, 8, 1);
  struct Spot {
    int64_t lane, reg, row, col;
  } spots[] = {{0, 0, 0, 0},  {0, 1, 0, 1},  {1, 0, 0, 2},   {3, 1, 0, 7},
               {4, 0, 1, 0},  {5, 1, 1, 3},  {0, 2, 8, 0},   {0, 3, 8, 1},
               {7, 2, 9, 6},  {28, 0, 7, 0}, {30, 3, 15, 5}, {31, 3, 15, 7},
               {31, 0, 7, 6}, {13, 2, 11, 2}};
  for (const Spot &s : spots) {
    TileCoord c = layout.apply(s.reg, s.lane, 0);
    EXPECT_EQ(c.row, s.row) << "lane " << s.lane << " c" << s.reg;
    EXPECT_EQ(c.col, s.col) << "lane " << s.lane << " c" << s.reg;
  }
}

// Column groups: warp w is row warp w % R of a Shape{rows, cols / columns,
// R} tile placed at column group w / R.
TEST(MmaSyncAccumulator, ColumnGroupsMatchIsaTableComposedWithTiling) {
  // The backward's dQ: 64 rows over 8 warps (4 x 2), D 128 and 64; 32 rows
  // over 8 warps (2 x 4); 64 x 80 over 8 (two groups of 40: a repeat).
  struct Case {
    int64_t rows, cols, warps, columns;
  };
  for (Case k : {Case{64, 128, 8, 2}, Case{64, 64, 8, 2}, Case{32, 128, 8, 4},
                 Case{64, 80, 8, 2}, Case{16, 32, 2, 2}}) {
    TileLayout layout = TileLayout::mmaSyncAccumulatorByColumns(
        k.rows, k.cols, k.warps, k.columns);
    int64_t rowWarps = k.warps / k.columns, groupCols = k.cols / k.columns;
    Shape part{k.rows, groupCols, rowWarps};
    expectMatches(layout,
                  "mma C by columns " + str(Shape{k.rows, k.cols, k.warps}) +
                      " in " + std::to_string(k.columns) + " groups",
                  k.rows * k.cols / (32 * k.warps), k.warps,
                  [&](int64_t reg, int64_t lane, int64_t warp) {
                    RC c = expectMmaC(part, reg, lane, warp % rowWarps);
                    return RC{c.row, warp / rowWarps * groupCols + c.col};
                  });
  }
}

TEST(MmaSyncAccumulator, TiledMatchesIsaTableComposedWithTiling) {
  // 64x64/4: 16 rows a warp, 8 n8 tiles; 128x64/4 and 64x64/2: 32 rows a
  // warp, 2 m16 tiles a warp; 128x128/4; 128x64/8.
  for (Shape s : {Shape{16, 64, 1}, Shape{32, 8, 1}, Shape{64, 64, 4},
                  Shape{128, 64, 4}, Shape{64, 64, 2}, Shape{128, 128, 4},
                  Shape{128, 64, 8}, Shape{64, 16, 1}}) {
    TileLayout layout = TileLayout::mmaSyncAccumulator(s.rows, s.cols, s.warps);
    expectMatches(layout, "mma C " + str(s), s.rows * s.cols / (32 * s.warps),
                  s.warps, [&](int64_t reg, int64_t lane, int64_t warp) {
                    return expectMmaC(s, reg, lane, warp);
                  });
  }
}

// The register order of the header, spelled out for 128x64 on 4 warps:
// 32 rows a warp; registers 0..3 are c0..c3 of (m16 tile 0, n8 tile 0),
// 4..7 of n8 tile 1 (columns 8..15), 32..35 of m16 tile 1 (rows 16..31 of
// the warp), and warp 2 starts at row 64.
TEST(MmaSyncAccumulator, RegisterOrderLiteral) {
  TileLayout layout = TileLayout::mmaSyncAccumulator(128, 64, 4);
  ASSERT_EQ(layout.numRegisters(), 64);
  auto at = [&](int64_t reg, int64_t lane, int64_t warp) {
    TileCoord c = layout.apply(reg, lane, warp);
    return std::make_pair(c.row, c.col);
  };
  EXPECT_EQ(at(0, 0, 0), std::make_pair(int64_t(0), int64_t(0)));
  EXPECT_EQ(at(2, 0, 0), std::make_pair(int64_t(8), int64_t(0)));
  EXPECT_EQ(at(4, 0, 0), std::make_pair(int64_t(0), int64_t(8)));
  EXPECT_EQ(at(5, 1, 0), std::make_pair(int64_t(0), int64_t(11)));
  EXPECT_EQ(at(31, 31, 0), std::make_pair(int64_t(15), int64_t(63)));
  EXPECT_EQ(at(32, 0, 0), std::make_pair(int64_t(16), int64_t(0)));
  EXPECT_EQ(at(34, 4, 0), std::make_pair(int64_t(25), int64_t(0)));
  EXPECT_EQ(at(0, 0, 1), std::make_pair(int64_t(32), int64_t(0)));
  EXPECT_EQ(at(0, 0, 2), std::make_pair(int64_t(64), int64_t(0)));
  EXPECT_EQ(at(63, 31, 3), std::make_pair(int64_t(127), int64_t(63)));
}

//===----------------------------------------------------------------------===//
// 2. mma.sync A and B.
//===----------------------------------------------------------------------===//

TEST(MmaSyncOperandA, SingleInstructionMatchesIsaTable) {
  TileLayout layout = TileLayout::mmaSyncOperandA(16, 16, 1);
  expectMatches(
      layout, "m16k16 A", 8, 1,
      [](int64_t reg, int64_t lane, int64_t) { return isaMmaA(lane, reg); });
}

// Figure 79: T0 {a0,a1} row 0 cols 0,1; {a2,a3} row 8; {a4,a5} row 0 cols
// 8,9; {a6,a7} row 8 cols 8,9; T5 row 1 cols 2,3 / 10,11.
TEST(MmaSyncOperandA, FigureSpotValues) {
  TileLayout layout = TileLayout::mmaSyncOperandA(16, 16, 1);
  struct Spot {
    int64_t lane, reg, row, col;
  } spots[] = {{0, 0, 0, 0},  {0, 1, 0, 1},  {0, 2, 8, 0},    {0, 3, 8, 1},
               {0, 4, 0, 8},  {0, 5, 0, 9},  {0, 6, 8, 8},    {0, 7, 8, 9},
               {5, 0, 1, 2},  {5, 5, 1, 11}, {31, 7, 15, 15}, {31, 4, 7, 14},
               {30, 2, 15, 4}};
  for (const Spot &s : spots) {
    TileCoord c = layout.apply(s.reg, s.lane, 0);
    EXPECT_EQ(c.row, s.row) << "lane " << s.lane << " a" << s.reg;
    EXPECT_EQ(c.col, s.col) << "lane " << s.lane << " a" << s.reg;
  }
}

TEST(MmaSyncOperandA, TiledMatchesIsaTableComposedWithTiling) {
  for (Shape s :
       {Shape{16, 64, 1}, Shape{32, 16, 1}, Shape{64, 16, 4}, Shape{64, 64, 4},
        Shape{128, 64, 4}, Shape{128, 128, 4}, Shape{64, 128, 2}}) {
    TileLayout layout = TileLayout::mmaSyncOperandA(s.rows, s.cols, s.warps);
    expectMatches(layout, "mma A " + str(s), s.rows * s.cols / (32 * s.warps),
                  s.warps, [&](int64_t reg, int64_t lane, int64_t warp) {
                    return expectMmaA(s, reg, lane, warp);
                  });
  }
}

TEST(MmaSyncOperandB, SingleInstructionMatchesIsaTable) {
  TileLayout layout = TileLayout::mmaSyncOperandB(16, 8, 1);
  expectMatches(
      layout, "k16n8 B", 4, 1,
      [](int64_t reg, int64_t lane, int64_t) { return isaMmaB(lane, reg); });
}

// Figure 81: T0 {b0,b1} rows (k) 0,1 of col (n) 0, {b2,b3} rows 8,9; T1
// rows 2,3; T4 col 1; T31 {b2,b3} rows 14,15 of col 7.
TEST(MmaSyncOperandB, FigureSpotValues) {
  TileLayout layout = TileLayout::mmaSyncOperandB(16, 8, 1);
  struct Spot {
    int64_t lane, reg, row, col;
  } spots[] = {{0, 0, 0, 0},   {0, 1, 1, 0},   {0, 2, 8, 0}, {0, 3, 9, 0},
               {1, 0, 2, 0},   {3, 1, 7, 0},   {4, 0, 0, 1}, {6, 2, 12, 1},
               {31, 2, 14, 7}, {31, 3, 15, 7}, {29, 1, 3, 7}};
  for (const Spot &s : spots) {
    TileCoord c = layout.apply(s.reg, s.lane, 0);
    EXPECT_EQ(c.row, s.row) << "lane " << s.lane << " b" << s.reg;
    EXPECT_EQ(c.col, s.col) << "lane " << s.lane << " b" << s.reg;
  }
}

TEST(MmaSyncOperandB, TiledMatchesIsaTableComposedWithTiling) {
  // [K x N]: n8 tiles, then k16 steps; every warp holds the whole tile.
  for (Shape s : {Shape{16, 64, 1}, Shape{32, 8, 1}, Shape{64, 64, 4},
                  Shape{64, 8, 2}, Shape{128, 64, 4}, Shape{64, 128, 8}}) {
    TileLayout layout = TileLayout::mmaSyncOperandB(s.rows, s.cols, s.warps);
    expectMatches(layout, "mma B " + str(s), s.rows * s.cols / 32, s.warps,
                  [&](int64_t reg, int64_t lane, int64_t warp) {
                    return expectMmaB(s, reg, lane, warp);
                  });
  }
}

// ldmatrix.x4 replayed as the PTX ISA describes it (9.7.9.9: lanes 8 i ..
// 8 i + 7 give the addresses of rows 0-7 of matrix i; thread t receives in
// its register i elements (t / 4, 2 (t % 4)) and (t / 4, 2 (t % 4) + 1) of
// matrix i, or with .trans elements (2 (t % 4), t / 4) and (2 (t % 4) + 1,
// t / 4)), a matrix row being the 8 stored elements from where its lane
// points: element h of register i of thread t, in stored coordinates.
RC replayLdmatrix(LdMatrixOperand operand, bool transpose, int64_t thread,
                  int64_t reg, int64_t h) {
  IntegerArith a;
  int64_t matrixRow = transpose ? 2 * (thread % 4) + h : thread / 4;
  int64_t matrixCol = transpose ? thread / 4 : 2 * (thread % 4) + h;
  auto [row, col] = ldmatrixLanePosition(a, operand, 8 * reg + matrixRow);
  return {row, col + matrixCol};
}

// Q [M, K] as stored: register i is a(2 i), a(2 i + 1) of the m16k16 A
// fragment.
TEST(LdMatrixLanePosition, AComesBackAsTheMmaAFragment) {
  for (int64_t t = 0; t < 32; ++t)
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t h = 0; h < 2; ++h) {
        RC got = replayLdmatrix(LdMatrixOperand::A, false, t, i, h);
        RC want = isaMmaA(t, 2 * i + h);
        EXPECT_EQ(got.row, want.row) << "lane " << t << " a" << 2 * i + h;
        EXPECT_EQ(got.col, want.col) << "lane " << t << " a" << 2 * i + h;
      }
}

// dSᵀ [K, M] with .trans: register i is a(2 i), a(2 i + 1) of the m16k16 A
// fragment of its transpose.
TEST(LdMatrixLanePosition, TransposedAComesBackAsTheMmaAFragment) {
  for (int64_t t = 0; t < 32; ++t)
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t h = 0; h < 2; ++h) {
        RC km = replayLdmatrix(LdMatrixOperand::AStoredKM, true, t, i, h);
        RC want = isaMmaA(t, 2 * i + h);
        EXPECT_EQ(km.col, want.row) << "lane " << t << " a" << 2 * i + h;
        EXPECT_EQ(km.row, want.col) << "lane " << t << " a" << 2 * i + h;
      }
}

// Register i is b(2 (i % 2)), b(2 (i % 2) + 1) of n8 tile i / 2. K stored
// [N, K] (rows n) is read as stored; V stored [K, N] (rows k) with .trans.
TEST(LdMatrixLanePosition, BComesBackAsTwoMmaBFragments) {
  for (bool keysAreRows : {true, false})
    for (int64_t t = 0; t < 32; ++t)
      for (int64_t i = 0; i < 4; ++i)
        for (int64_t h = 0; h < 2; ++h) {
          RC got =
              keysAreRows
                  ? replayLdmatrix(LdMatrixOperand::BStoredKN, true, t, i, h)
                  : replayLdmatrix(LdMatrixOperand::BStoredNK, false, t, i, h);
          RC kn = keysAreRows ? got : RC{got.col, got.row};
          RC want = isaMmaB(t, 2 * (i % 2) + h);
          EXPECT_EQ(kn.row, want.row)
              << (keysAreRows ? "[K, N]" : "[N, K]") << " lane " << t
              << " register " << i << "." << h;
          EXPECT_EQ(kn.col, want.col + 8 * (i / 2))
              << (keysAreRows ? "[K, N]" : "[N, K]") << " lane " << t
              << " register " << i << "." << h;
        }
}

//===----------------------------------------------------------------------===//
// 3. wgmma accumulator.
//===----------------------------------------------------------------------===//

TEST(WgmmaAccumulator, M64MatchesIsaFigure) {
  for (int64_t n : {8, 16, 64, 128, 256}) {
    Shape s{64, n, 4};
    TileLayout layout = TileLayout::wgmmaAccumulator(64, n, 4);
    expectMatches(layout, "wgmma D " + str(s), n / 2, 4,
                  [&](int64_t reg, int64_t lane, int64_t warp) {
                    return isaWgmmaD(warp, lane, reg);
                  });
  }
}

TEST(WgmmaAccumulator, M64MatchesCutlassCLayout) {
  for (int64_t n : {8, 64, 128, 256}) {
    TileLayout layout = TileLayout::wgmmaAccumulator(64, n, 4);
    expectMatches(layout, "wgmma D vs CLayout_64x" + std::to_string(n), n / 2,
                  4, [&](int64_t reg, int64_t lane, int64_t warp) {
                    return cutlassSm90Gmma(32 * warp + lane, reg);
                  });
  }
}

// Figure 149: T0 d0,d1 row 0 cols 0,1, d2,d3 row 8, d4..d7 columns 8,9;
// T32 (warp 1) row 16; T127 d(N/2-1) row 63, col N-1.
TEST(WgmmaAccumulator, FigureSpotValues) {
  TileLayout layout = TileLayout::wgmmaAccumulator(64, 64, 4);
  struct Spot {
    int64_t thread, reg, row, col;
  } spots[] = {{0, 0, 0, 0},      {0, 1, 0, 1},     {0, 2, 8, 0},
               {0, 3, 8, 1},      {0, 4, 0, 8},     {0, 7, 8, 9},
               {1, 0, 0, 2},      {4, 0, 1, 0},     {32, 0, 16, 0},
               {33, 6, 24, 10},   {64, 0, 32, 0},   {96, 3, 56, 1},
               {127, 31, 63, 63}, {127, 28, 55, 62}};
  for (const Spot &s : spots) {
    TileCoord c = layout.apply(s.reg, s.thread % 32, s.thread / 32);
    EXPECT_EQ(c.row, s.row) << "T" << s.thread << " d" << s.reg;
    EXPECT_EQ(c.col, s.col) << "T" << s.thread << " d" << s.reg;
  }
}

TEST(WgmmaAccumulator, TwoWarpgroups) {
  // 128 x N on 8 warps: warps 4..7 (the second warpgroup) own rows 64..127.
  for (int64_t n : {8, 64, 128, 256}) {
    Shape s{128, n, 8};
    TileLayout layout = TileLayout::wgmmaAccumulator(128, n, 8);
    expectMatches(layout, "wgmma D " + str(s), n / 2, 8,
                  [&](int64_t reg, int64_t lane, int64_t warp) {
                    return expectWgmmaD(s, reg, lane, warp);
                  });
    TileCoord first = layout.apply(0, 0, 4);
    EXPECT_EQ(first.row, 64) << "warp 4 starts the second warpgroup's rows";
    EXPECT_EQ(first.col, 0);
  }
}

TEST(WgmmaAccumulator, MRepeatOnOneWarpgroup) {
  // 128 x N on 4 warps: registers N/2 .. N - 1 (the second m64 instruction)
  // hold rows 64..127 in the same pattern.
  for (int64_t n : {8, 64, 128, 256}) {
    Shape s{128, n, 4};
    TileLayout layout = TileLayout::wgmmaAccumulator(128, n, 4);
    expectMatches(layout, "wgmma D " + str(s), n, 4,
                  [&](int64_t reg, int64_t lane, int64_t warp) {
                    return expectWgmmaD(s, reg, lane, warp);
                  });
    TileCoord second = layout.apply(n / 2, 0, 0);
    EXPECT_EQ(second.row, 64) << "d0 of the m-repeat";
    EXPECT_EQ(second.col, 0);
  }
  // Two warpgroups and an m-repeat: 256 x 64 on 8 warps.
  Shape s{256, 64, 8};
  expectMatches(TileLayout::wgmmaAccumulator(256, 64, 8), "wgmma D " + str(s),
                64, 8, [&](int64_t reg, int64_t lane, int64_t warp) {
                  return expectWgmmaD(s, reg, lane, warp);
                });
}

TEST(WgmmaAccumulator, WarpgroupsSplitTheColumns) {
  // 64 x N on G warpgroups (the backward's S, dP, dQ): warpgroup g issues
  // m64n(N/G) for columns [g N/G, (g + 1) N/G); within it, the ISA's D
  // fragment of that narrower instruction.
  for (int64_t warps : {8, 16})
    for (int64_t n : {64, 128, 256}) {
      int64_t groups = warps / 4, groupCols = n / groups;
      if (groupCols < 8)
        continue;
      TileLayout layout = TileLayout::wgmmaAccumulatorByColumns(64, n, warps);
      expectMatches(layout,
                    "wgmma D by columns 64x" + std::to_string(n) + " on " +
                        std::to_string(warps) + " warps",
                    groupCols / 2, warps,
                    [&](int64_t reg, int64_t lane, int64_t warp) {
                      RC c = isaWgmmaD(warp % 4, lane, reg);
                      c.col += (warp / 4) * groupCols;
                      return c;
                    });
    }
}

// Tile sizes that are not a power of two times the instruction (FA3's
// 128 x 176 and 128 x 80 score tiles, three m64 repeats) take one register
// repeat; the registers keep the ISA's order: d_i of n8 group i / 4 for
// every N the instruction has (multiples of 8), m-repeats after them.
TEST(WgmmaAccumulator, ColumnsThatAreNotAPowerOfTwo) {
  for (Shape s : {Shape{64, 24, 4}, Shape{64, 80, 4}, Shape{128, 176, 8},
                  Shape{128, 80, 8}, Shape{64, 248, 4}, Shape{128, 48, 4}}) {
    TileLayout layout = TileLayout::wgmmaAccumulator(s.rows, s.cols, s.warps);
    EXPECT_TRUE(layout.hasRegisterRepeat()) << str(s);
    EXPECT_EQ(layout.verify(), "") << str(s);
    expectMatches(layout, "wgmma D " + str(s),
                  s.cols / 2 * (s.rows / (16 * s.warps)), s.warps,
                  [&](int64_t reg, int64_t lane, int64_t warp) {
                    return expectWgmmaD(s, reg, lane, warp);
                  });
    expectBijection(layout, "wgmma D " + str(s));
  }
}

TEST(WgmmaAccumulator, ThreeMRepeats) {
  Shape s{192, 64, 4};
  TileLayout layout = TileLayout::wgmmaAccumulator(192, 64, 4);
  EXPECT_EQ(layout.verify(), "");
  expectMatches(layout, "wgmma D " + str(s), 96, 4,
                [&](int64_t reg, int64_t lane, int64_t warp) {
                  return expectWgmmaD(s, reg, lane, warp);
                });
}

// FA3's 192-row block at head dim 64: three warpgroups, the warp index a
// mixed-radix number (two bits inside the warpgroup, then a digit of 3);
// warpgroup g still owns rows 64 g .. 64 g + 63 of each instruction.
TEST(WgmmaAccumulator, ThreeWarpgroups) {
  for (Shape s : {Shape{192, 128, 12}, Shape{192, 176, 12}, Shape{192, 8, 12},
                  Shape{384, 64, 12}}) {
    TileLayout layout = TileLayout::wgmmaAccumulator(s.rows, s.cols, s.warps);
    EXPECT_EQ(layout.verify(), "") << str(s);
    EXPECT_TRUE(layout.hasWarpRepeat()) << str(s);
    expectMatches(layout, "wgmma D " + str(s), s.rows * s.cols / (32 * 12), 12,
                  [&](int64_t reg, int64_t lane, int64_t warp) {
                    return expectWgmmaD(s, reg, lane, warp);
                  });
    expectBijection(layout, "wgmma D " + str(s));
    EXPECT_EQ(layout.apply(0, 0, 8), (TileCoord{128, 0}))
        << "warp 8 starts the third warpgroup's rows";
    EXPECT_EQ(layout.apply(0, 4, 11), (TileCoord{177, 0}));
  }
}

//===----------------------------------------------------------------------===//
// 4. wgmma register A.
//===----------------------------------------------------------------------===//

TEST(WgmmaOperandA, MatchesIsaFigure) {
  for (Shape s : {Shape{64, 16, 4}, Shape{64, 64, 4}, Shape{128, 64, 8},
                  Shape{128, 32, 4}}) {
    TileLayout layout = TileLayout::wgmmaOperandA(s.rows, s.cols, s.warps);
    expectMatches(layout, "wgmma A " + str(s), s.rows * s.cols / (32 * s.warps),
                  s.warps, [&](int64_t reg, int64_t lane, int64_t warp) {
                    return expectWgmmaA(s, reg, lane, warp);
                  });
  }
}

TEST(WgmmaOperandA, M64K16MatchesCutlassALayout) {
  TileLayout layout = TileLayout::wgmmaOperandA(64, 16, 4);
  expectMatches(layout, "wgmma A vs ALayout_64x16", 8, 4,
                [](int64_t reg, int64_t lane, int64_t warp) {
                  return cutlassSm90Gmma(32 * warp + lane, reg);
                });
}

// Figure 148: T0 a0,a1 row 0 cols 0,1, a2 row 8, a4 col 8; T32 (warp 1) row
// 16; T127 a7 row 63, col 15. For 64 x 64, a8 is a0 of k16 step 1.
TEST(WgmmaOperandA, FigureSpotValues) {
  TileLayout layout = TileLayout::wgmmaOperandA(64, 64, 4);
  struct Spot {
    int64_t thread, reg, row, col;
  } spots[] = {{0, 0, 0, 0},     {0, 1, 0, 1},  {0, 2, 8, 0},
               {0, 4, 0, 8},     {0, 7, 8, 9},  {32, 0, 16, 0},
               {127, 7, 63, 15}, {0, 8, 0, 16}, {5, 13, 1, 27},
               {127, 31, 63, 63}};
  for (const Spot &s : spots) {
    TileCoord c = layout.apply(s.reg, s.thread % 32, s.thread / 32);
    EXPECT_EQ(c.row, s.row) << "T" << s.thread << " a" << s.reg;
    EXPECT_EQ(c.col, s.col) << "T" << s.thread << " a" << s.reg;
  }
}

TEST(WgmmaOperandA, ThreeWarpgroups) {
  for (Shape s :
       {Shape{192, 128, 12}, Shape{192, 176, 12}, Shape{192, 64, 12}}) {
    TileLayout layout = TileLayout::wgmmaOperandA(s.rows, s.cols, s.warps);
    EXPECT_EQ(layout.verify(), "") << str(s);
    expectMatches(layout, "wgmma A " + str(s), s.rows * s.cols / (32 * 12), 12,
                  [&](int64_t reg, int64_t lane, int64_t warp) {
                    return expectWgmmaA(s, reg, lane, warp);
                  });
    expectBijection(layout, "wgmma A " + str(s));
  }
}

TEST(WgmmaOperandA, KThatIsNotAPowerOfTwo) {
  // P of a 176-key (11 k16 steps) or 80-key (5) block for P·V.
  for (Shape s : {Shape{128, 176, 8}, Shape{128, 80, 8}, Shape{64, 48, 4}}) {
    TileLayout layout = TileLayout::wgmmaOperandA(s.rows, s.cols, s.warps);
    EXPECT_EQ(layout.verify(), "") << str(s);
    expectMatches(layout, "wgmma A " + str(s),
                  s.cols / 2 * (s.rows / (16 * s.warps)), s.warps,
                  [&](int64_t reg, int64_t lane, int64_t warp) {
                    return expectWgmmaA(s, reg, lane, warp);
                  });
  }
}

// wgmma .m64nNk32 register A of 8-bit elements (PTX ISA, "Register
// fragments for matrix A", .e4m3/.e5m2): a0..a3 row groupID, columns
// threadID_in_group * 4 + {0..3}; a4..a7 row groupID + 8; a8..a15 the same,
// 16 columns on. Four bytes a register, k32 steps, then m-repeats.
RC isaWgmmaA8(int64_t warpInWarpgroup, int64_t laneid, int64_t i) {
  int64_t row = 16 * warpInWarpgroup + groupID(laneid) + ((i / 4) % 2) * 8;
  int64_t col = threadIDInGroup(laneid) * 4 + i % 4 + (i / 8) * 16;
  return {row, col};
}

RC expectWgmmaA8(const Shape &s, int64_t reg, int64_t lane, int64_t warp) {
  int64_t kSteps = s.cols / 32, warpgroups = s.warps / 4;
  int64_t i = reg % 16, step = reg / 16;
  int64_t kStep = step % kSteps, repeat = step / kSteps;
  RC a = isaWgmmaA8(warp % 4, lane, i);
  return {64 * warpgroups * repeat + 64 * (warp / 4) + a.row,
          32 * kStep + a.col};
}

// FlashAttention 3's permutation of the k index (section 3.3): the
// instruction's position 4 t + 2 h + i (+ 16) reads key 2 t + 8 h + i
// (+ 16), the keys that the accumulator gives lane t (pairs 2 t, 2 t + 1
// every 8 columns).
int64_t pairedKey(int64_t k) {
  int64_t t = (k % 16) / 4, h = (k % 4) / 2, i = k % 2;
  return k - k % 32 + (k % 32) / 16 * 16 + 2 * t + 8 * h + i;
}

TEST(WgmmaOperandA8, MatchesIsaFigure) {
  for (Shape s : {Shape{64, 32, 4}, Shape{128, 128, 8}, Shape{128, 64, 4}}) {
    TileLayout layout = TileLayout::wgmmaOperandA8(s.rows, s.cols, s.warps);
    EXPECT_EQ(layout.verify(), "") << str(s);
    expectMatches(layout, "wgmma A8 " + str(s),
                  s.rows * s.cols / (32 * s.warps), s.warps,
                  [&](int64_t reg, int64_t lane, int64_t warp) {
                    return expectWgmmaA8(s, reg, lane, warp);
                  });
    expectBijection(layout, "wgmma A8 " + str(s));
  }
}

TEST(WgmmaOperandA8Pairs, IsTheIsaFigureWithPairedKeys) {
  for (Shape s : {Shape{64, 32, 4}, Shape{128, 128, 8}, Shape{128, 64, 4}}) {
    TileLayout layout =
        TileLayout::wgmmaOperandA8Pairs(s.rows, s.cols, s.warps);
    EXPECT_EQ(layout.verify(), "") << str(s);
    expectMatches(layout, "wgmma A8 pairs " + str(s),
                  s.rows * s.cols / (32 * s.warps), s.warps,
                  [&](int64_t reg, int64_t lane, int64_t warp) {
                    RC a = expectWgmmaA8(s, reg, lane, warp);
                    return RC{a.row, pairedKey(a.col)};
                  });
    expectBijection(layout, "wgmma A8 pairs " + str(s));
  }
}

// The point of the permutation: each thread holds the same elements as in
// the accumulator, so the conversion is a register permutation (no
// shuffles), which the converter's check (equal lane and warp bases)
// accepts.
TEST(WgmmaOperandA8Pairs, HoldsTheAccumulatorsElementsInEachThread) {
  for (Shape s : {Shape{128, 128, 8}, Shape{64, 64, 4}}) {
    TileLayout acc = TileLayout::wgmmaAccumulator(s.rows, s.cols, s.warps);
    TileLayout pairs = TileLayout::wgmmaOperandA8Pairs(s.rows, s.cols, s.warps);
    TileLayout plain = TileLayout::wgmmaOperandA8(s.rows, s.cols, s.warps);
    EXPECT_TRUE(llvm::equal(acc.laneBases(), pairs.laneBases())) << str(s);
    EXPECT_TRUE(llvm::equal(acc.warpBasesRef(), pairs.warpBasesRef()))
        << str(s);
    EXPECT_FALSE(llvm::equal(acc.laneBases(), plain.laneBases())) << str(s);
    for (int64_t warp = 0; warp < s.warps; ++warp)
      for (int64_t lane = 0; lane < 32; ++lane) {
        std::set<std::pair<int64_t, int64_t>> fromAcc, fromPairs;
        for (int64_t reg = 0; reg < acc.numRegisters(); ++reg) {
          TileCoord c = acc.apply(reg, lane, warp);
          fromAcc.insert({c.row, c.col});
          TileCoord p = pairs.apply(reg, lane, warp);
          fromPairs.insert({p.row, p.col});
        }
        EXPECT_EQ(fromAcc, fromPairs)
            << str(s) << " warp " << warp << " lane " << lane;
      }
  }
}

//===----------------------------------------------------------------------===//
// 5. verify() and bijection.
//===----------------------------------------------------------------------===//

struct Named {
  std::string name;
  TileLayout layout;
  bool replicatedOverWarps;
};

std::vector<Named> tensorCoreLayouts() {
  std::vector<Named> all;
  for (Shape s : {Shape{16, 8, 1}, Shape{64, 64, 4}, Shape{128, 64, 4},
                  Shape{128, 128, 8}})
    all.push_back({"mmaSyncAccumulator " + str(s),
                   TileLayout::mmaSyncAccumulator(s.rows, s.cols, s.warps),
                   false});
  for (Shape s : {Shape{16, 16, 1}, Shape{64, 64, 4}, Shape{128, 64, 4}})
    all.push_back({"mmaSyncOperandA " + str(s),
                   TileLayout::mmaSyncOperandA(s.rows, s.cols, s.warps),
                   false});
  for (Shape s : {Shape{16, 8, 1}, Shape{64, 64, 4}, Shape{128, 64, 8}})
    all.push_back({"mmaSyncOperandB " + str(s),
                   TileLayout::mmaSyncOperandB(s.rows, s.cols, s.warps), true});
  for (Shape s : {Shape{64, 8, 4}, Shape{64, 256, 4}, Shape{128, 128, 8},
                  Shape{128, 64, 4}, Shape{256, 128, 8}})
    all.push_back({"wgmmaAccumulator " + str(s),
                   TileLayout::wgmmaAccumulator(s.rows, s.cols, s.warps),
                   false});
  for (Shape s : {Shape{64, 16, 4}, Shape{64, 64, 4}, Shape{128, 64, 8}})
    all.push_back({"wgmmaOperandA " + str(s),
                   TileLayout::wgmmaOperandA(s.rows, s.cols, s.warps), false});
  return all;
}

TEST(TileLayoutVerify, TensorCoreLayoutsVerifyAndAreBijections) {
  for (const Named &n : tensorCoreLayouts()) {
    EXPECT_EQ(n.layout.verify(), "") << n.name;
    expectBijection(n.layout, n.name, n.replicatedOverWarps);
  }
}

TEST(TileLayoutVerify, OperandBIsReplicatedOverWarps) {
  TileLayout layout = TileLayout::mmaSyncOperandB(64, 64, 4);
  for (int64_t warp = 1; warp < 4; ++warp)
    for (int64_t lane = 0; lane < 32; ++lane)
      for (int64_t reg = 0; reg < layout.numRegisters(); ++reg)
        ASSERT_EQ(layout.apply(reg, lane, warp), layout.apply(reg, lane, 0))
            << "warp " << warp << " lane " << lane << " register " << reg;
}

const std::vector<TileCoord> kGoodLanes = {
    {0, 2}, {0, 4}, {1, 0}, {2, 0}, {4, 0}};

TEST(TileLayoutVerify, HandBuiltGoodLayoutVerifies) {
  TileLayout good(16, 8, {{0, 1}, {8, 0}}, kGoodLanes, {});
  EXPECT_EQ(good.verify(), "");
  expectBijection(good, "hand-built 16x8");
  // Three n8 tiles between the two register bits: registers 0, 1 (row 0,
  // cols 0, 1), then 2..3 cols 8, 9, 4..5 cols 16, 17, then row 8.
  TileLayout repeated(16, 24, {{0, 1}, {8, 0}}, kGoodLanes, {},
                      IndexRepeat{3, {0, 8}, 1});
  EXPECT_EQ(repeated.verify(), "");
  EXPECT_EQ(repeated.numRegisters(), 12);
  EXPECT_EQ(repeated.ofRegister(2), (TileCoord{0, 8}));
  EXPECT_EQ(repeated.ofRegister(5), (TileCoord{0, 17}));
  EXPECT_EQ(repeated.ofRegister(6), (TileCoord{8, 0}));
  expectBijection(repeated, "hand-built 16x24");
  // Three warps of 16 rows each: the warp index is the repeat's digit.
  TileLayout warps(48, 8, {{0, 1}, {8, 0}}, kGoodLanes, {}, {},
                   IndexRepeat{3, {16, 0}, 0});
  EXPECT_EQ(warps.verify(), "");
  EXPECT_EQ(warps.numWarps(), 3);
  EXPECT_EQ(warps.apply(0, 0, 2), (TileCoord{32, 0}));
  expectBijection(warps, "hand-built 48x8 on 3 warps");
}

TEST(TileLayoutVerify, RejectsBrokenLayouts) {
  struct Broken {
    const char *why;
    TileLayout layout;
  } broken[] = {
      {"two equal lane bases",
       TileLayout(16, 8, {{0, 1}, {8, 0}},
                  {{0, 2}, {0, 4}, {1, 0}, {2, 0}, {2, 0}}, {})},
      {"a register basis equal to a lane basis",
       TileLayout(16, 8, {{0, 1}, {1, 0}}, kGoodLanes, {})},
      {"a warp basis equal to a register basis",
       TileLayout(32, 8, {{0, 1}, {8, 0}}, kGoodLanes, {{8, 0}})},
      {"a row basis outside the tile",
       TileLayout(16, 8, {{0, 1}, {16, 0}}, kGoodLanes, {})},
      {"a column basis outside the tile",
       TileLayout(16, 8, {{0, 8}, {8, 0}}, kGoodLanes, {})},
      {"a basis that is not a power of two",
       TileLayout(16, 8, {{0, 1}, {3, 0}}, kGoodLanes, {})},
      {"a basis along both dimensions",
       TileLayout(16, 8, {{1, 1}, {8, 0}},
                  {{0, 2}, {0, 4}, {0, 1}, {2, 0}, {4, 0}}, {})},
      {"bases that do not cover the tile",
       TileLayout(16, 16, {{0, 1}, {8, 0}}, kGoodLanes, {})},
      {"a negative basis",
       TileLayout(16, 8, {{0, 1}, {-8, 0}}, kGoodLanes, {})},
      {"a repeat over a lane's columns",
       TileLayout(16, 24, {{0, 1}, {8, 0}}, kGoodLanes, {},
                  IndexRepeat{3, {0, 4}, 2})},
      {"a repeat past the tile",
       TileLayout(16, 16, {{0, 1}, {8, 0}}, kGoodLanes, {},
                  IndexRepeat{3, {0, 8}, 2})},
      {"a repeat short of the tile",
       TileLayout(16, 32, {{0, 1}, {8, 0}}, kGoodLanes, {},
                  IndexRepeat{3, {0, 8}, 2})},
      {"a repeat along both dimensions",
       TileLayout(48, 24, {{0, 1}, {8, 0}}, kGoodLanes, {},
                  IndexRepeat{3, {16, 8}, 2})},
      {"a repeat above the register bits",
       TileLayout(16, 24, {{0, 1}, {8, 0}}, kGoodLanes, {},
                  IndexRepeat{3, {0, 8}, 3})},
      {"a register repeat that moves nowhere",
       TileLayout(16, 8, {{0, 1}, {8, 0}}, kGoodLanes, {},
                  IndexRepeat{3, {0, 0}, 2})},
      {"a warp repeat over a warp bit's rows",
       TileLayout(96, 8, {{0, 1}, {8, 0}}, kGoodLanes, {{16, 0}}, {},
                  IndexRepeat{3, {16, 0}, 1})},
      {"a warp repeat above the warp bits",
       TileLayout(96, 8, {{0, 1}, {8, 0}}, kGoodLanes, {{16, 0}}, {},
                  IndexRepeat{3, {32, 0}, 2})},
      {"a warp repeat past the tile",
       TileLayout(32, 8, {{0, 1}, {8, 0}}, kGoodLanes, {}, {},
                  IndexRepeat{3, {16, 0}, 0})},
  };
  for (const Broken &b : broken)
    EXPECT_NE(b.layout.verify(), "") << b.why;
}

//===----------------------------------------------------------------------===//
// 6. Row slices of the accumulators.
//===----------------------------------------------------------------------===//

// Registers of one thread in one row, by the ISA: c0,c1 (or c2,c3) of each
// n8 tile: 2 * cols / 8 of them.
void checkRowSlice(const TileLayout &layout, const std::string &what) {
  SCOPED_TRACE(what);
  TileLayout slice = layout.rowSlice();
  EXPECT_EQ(slice.rows(), layout.rows());
  EXPECT_EQ(slice.cols(), 1);
  EXPECT_EQ(slice.numWarps(), layout.numWarps());
  EXPECT_EQ(slice.verify(), "");

  auto groups = layout.registersByRow();
  ASSERT_EQ(int64_t(groups.size()), slice.numRegisters());
  std::vector<int64_t> seen(layout.numRegisters(), 0);
  for (const auto &group : groups) {
    EXPECT_EQ(int64_t(group.size()), 2 * layout.cols() / 8)
        << "registers of a thread in one row";
    for (int64_t reg : group) {
      ASSERT_GE(reg, 0);
      ASSERT_LT(reg, layout.numRegisters());
      ++seen[reg];
    }
  }
  for (int64_t reg = 0; reg < layout.numRegisters(); ++reg)
    EXPECT_EQ(seen[reg], 1) << "register " << reg << " in the groups";

  int64_t failures = 0;
  for (int64_t warp = 0; warp < layout.numWarps(); ++warp)
    for (int64_t lane = 0; lane < 32; ++lane) {
      std::set<int64_t> sliceRows;
      for (int64_t s = 0; s < slice.numRegisters(); ++s) {
        TileCoord named = slice.apply(s, lane, warp);
        EXPECT_EQ(named.col, 0);
        sliceRows.insert(named.row);
        // Lanes of one quad (threadID_in_group 0..3) share their rows.
        for (int64_t other : {lane ^ 1, lane ^ 2, lane ^ 3})
          EXPECT_EQ(slice.apply(s, other, warp).row, named.row);
        for (int64_t reg : groups[s]) {
          int64_t row = layout.apply(reg, lane, warp).row;
          if (row != named.row && ++failures <= 8)
            ADD_FAILURE() << "warp " << warp << " lane " << lane << " register "
                          << reg << " is in row " << row
                          << ", grouped under slice register " << s
                          << " naming row " << named.row;
        }
      }
      EXPECT_EQ(int64_t(sliceRows.size()), slice.numRegisters())
          << "slice registers of one thread name distinct rows";
    }
  EXPECT_EQ(failures, 0);

  // The C/D fragment: lane bits 0 and 1 (threadID_in_group) move along
  // columns, bits 2..4 (groupID) along rows; no warp moves along columns.
  auto laneBitsAlongCols = layout.laneBitsAlongCols();
  std::vector<unsigned> laneBits(laneBitsAlongCols.begin(),
                                 laneBitsAlongCols.end());
  EXPECT_EQ(laneBits, (std::vector<unsigned>{0, 1}));
  EXPECT_TRUE(layout.warpBitsAlongCols().empty());
}

TEST(RowSlice, MmaSyncAccumulator) {
  for (Shape s : {Shape{16, 8, 1}, Shape{64, 64, 4}, Shape{128, 64, 4},
                  Shape{64, 128, 2}})
    checkRowSlice(TileLayout::mmaSyncAccumulator(s.rows, s.cols, s.warps),
                  "mmaSyncAccumulator " + str(s));
}

TEST(RowSlice, WgmmaAccumulator) {
  for (Shape s : {Shape{64, 8, 4}, Shape{64, 128, 4}, Shape{128, 64, 8},
                  Shape{128, 128, 4}, Shape{256, 64, 8}, Shape{128, 176, 8},
                  Shape{128, 80, 8}, Shape{192, 64, 4}, Shape{192, 8, 4},
                  Shape{192, 128, 12}, Shape{192, 176, 12}})
    checkRowSlice(TileLayout::wgmmaAccumulator(s.rows, s.cols, s.warps),
                  "wgmmaAccumulator " + str(s));
}

// Literal grouping for one m16n8 tile: c0,c1 share row groupID, c2,c3 row
// groupID + 8.
TEST(RowSlice, SingleInstructionGroupsLiteral) {
  TileLayout layout = TileLayout::mmaSyncAccumulator(16, 8, 1);
  auto groups = layout.registersByRow();
  ASSERT_EQ(groups.size(), 2u);
  std::vector<std::vector<int64_t>> sets;
  for (const auto &g : groups)
    sets.emplace_back(g.begin(), g.end());
  EXPECT_EQ(sets[0], (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(sets[1], (std::vector<int64_t>{2, 3}));
  TileLayout slice = layout.rowSlice();
  for (int64_t lane = 0; lane < 32; ++lane) {
    EXPECT_EQ(slice.apply(0, lane, 0).row, groupID(lane));
    EXPECT_EQ(slice.apply(1, lane, 0).row, groupID(lane) + 8);
  }
}

//===----------------------------------------------------------------------===//
// 7. Shared-memory swizzle.
//
// PTX ISA 5.5.7 "Swizzling Modes": "The following table, where each element
// (numbered cell) is 16 byte and the starting address is {256, 512, 1024}
// bytes aligned, shows the pattern of the destination data layout" -- one
// table row per 128-byte shared memory line, "... Pattern repeats ...".
// The same pattern in the CUDA C++ Programming Guide's TMA swizzle section:
// smem[y][x] <-> smem[y][((y + offset) % {8, 4, 2}) ^ x] for
// CU_TENSOR_MAP_SWIZZLE_{128B, 64B, 32B}, y a 128-byte row, x a 16-byte
// chunk, offset 0 for an aligned buffer.
//===----------------------------------------------------------------------===//

const int kSwizzle32B[2][8] = {{0, 1, 2, 3, 4, 5, 6, 7},
                               {1, 0, 3, 2, 5, 4, 7, 6}};
const int kSwizzle64B[4][8] = {{0, 1, 2, 3, 4, 5, 6, 7},
                               {1, 0, 3, 2, 5, 4, 7, 6},
                               {2, 3, 0, 1, 6, 7, 4, 5},
                               {3, 2, 1, 0, 7, 6, 5, 4}};
const int kSwizzle128B[8][8] = {
    {0, 1, 2, 3, 4, 5, 6, 7}, {1, 0, 3, 2, 5, 4, 7, 6},
    {2, 3, 0, 1, 6, 7, 4, 5}, {3, 2, 1, 0, 7, 6, 5, 4},
    {4, 5, 6, 7, 0, 1, 2, 3}, {5, 4, 7, 6, 1, 0, 3, 2},
    {6, 7, 4, 5, 2, 3, 0, 1}, {7, 6, 5, 4, 3, 2, 1, 0}};

// Where the ISA tables put element (row, col): TMA writes a box of
// [rows x swizzleBytes] (one column band of the tile; the bands follow each
// other, as TileLayout.h documents) densely from an aligned base, so the
// unswizzled byte is u = band * rows * swizzleBytes + row * swizzleBytes +
// byte-in-band; the 16-byte element u / 16 % 8 of 128-byte line u / 128 is
// stored at the cell p of that line whose table entry is that element.
int64_t isaSwizzledOffset(int64_t row, int64_t col, int64_t elementBytes,
                          int64_t rows, int64_t rowBytes,
                          int64_t swizzleBytes) {
  int64_t byte = col * elementBytes;
  if (swizzleBytes == 0)
    return row * rowBytes + byte;
  int64_t band = byte / swizzleBytes, inBand = byte % swizzleBytes;
  int64_t u = band * rows * swizzleBytes + row * swizzleBytes + inBand;
  int64_t line = u / 128, cell = u % 128 / 16;
  const int *pattern = nullptr;
  switch (swizzleBytes) {
  case 32:
    pattern = kSwizzle32B[line % 2];
    break;
  case 64:
    pattern = kSwizzle64B[line % 4];
    break;
  case 128:
    pattern = kSwizzle128B[line % 8];
    break;
  default:
    return -1;
  }
  for (int64_t p = 0; p < 8; ++p)
    if (pattern[p] == cell)
      return line * 128 + p * 16 + u % 16;
  return -1;
}

// CuTe's Swizzle<B, 4, 3> on the same unswizzled address u: bits [4, 4+B)
// ^= bits [7, 7+B), B = 3, 2, 1 for 128, 64, 32 bytes.
int64_t cuteSwizzledOffset(int64_t row, int64_t col, int64_t elementBytes,
                           int64_t rows, int64_t swizzleBytes) {
  int64_t byte = col * elementBytes;
  int64_t band = byte / swizzleBytes, inBand = byte % swizzleBytes;
  int64_t u = band * rows * swizzleBytes + row * swizzleBytes + inBand;
  int64_t bits = swizzleBytes == 128 ? 3 : swizzleBytes == 64 ? 2 : 1;
  int64_t mask = (int64_t(1) << bits) - 1;
  return u ^ (((u >> 7) & mask) << 4);
}

struct SwizzleCase {
  int64_t elementBytes, rows, rowBytes, swizzleBytes;
};

std::string str(const SwizzleCase &c) {
  std::ostringstream os;
  os << c.rows << " rows of " << c.rowBytes << " B (" << c.elementBytes
     << "-byte elements), swizzle " << c.swizzleBytes;
  return os.str();
}

void checkSwizzle(const SwizzleCase &c) {
  SCOPED_TRACE(str(c));
  int64_t cols = c.rowBytes / c.elementBytes;
  int64_t failures = 0;
  for (int64_t row = 0; row < c.rows; ++row)
    for (int64_t col = 0; col < cols; ++col) {
      int64_t got = swizzledByteOffset(row, col, c.elementBytes, c.rows,
                                       c.rowBytes, c.swizzleBytes);
      int64_t want = isaSwizzledOffset(row, col, c.elementBytes, c.rows,
                                       c.rowBytes, c.swizzleBytes);
      if (got != want && ++failures <= 8)
        ADD_FAILURE() << "element (" << row << ", " << col << ") at byte "
                      << got << ", the ISA table says " << want;
      if (c.swizzleBytes != 0) {
        int64_t cute = cuteSwizzledOffset(row, col, c.elementBytes, c.rows,
                                          c.swizzleBytes);
        if (got != cute && ++failures <= 8)
          ADD_FAILURE() << "element (" << row << ", " << col << ") at byte "
                        << got << ", CuTe's Swizzle says " << cute;
      }
    }
  EXPECT_EQ(failures, 0);

  // A bijection of 16-byte chunks onto [0, rows * rowBytes), each chunk's
  // elements contiguous in it.
  int64_t chunks = c.rows * c.rowBytes / 16, perChunk = 16 / c.elementBytes;
  std::vector<int64_t> hits(chunks, 0);
  for (int64_t row = 0; row < c.rows; ++row)
    for (int64_t chunk = 0; chunk < c.rowBytes / 16; ++chunk) {
      int64_t first = swizzledByteOffset(row, chunk * perChunk, c.elementBytes,
                                         c.rows, c.rowBytes, c.swizzleBytes);
      ASSERT_EQ(first % 16, 0) << "row " << row << " chunk " << chunk;
      ASSERT_GE(first, 0);
      ASSERT_LT(first / 16, chunks) << "row " << row << " chunk " << chunk;
      ++hits[first / 16];
      for (int64_t e = 1; e < perChunk; ++e)
        ASSERT_EQ(swizzledByteOffset(row, chunk * perChunk + e, c.elementBytes,
                                     c.rows, c.rowBytes, c.swizzleBytes),
                  first + e * c.elementBytes)
            << "row " << row << " chunk " << chunk << " element " << e;
    }
  for (int64_t k = 0; k < chunks; ++k)
    EXPECT_EQ(hits[k], 1) << "16-byte chunk " << k << " of shared memory";
}

TEST(SwizzledByteOffset, Swizzle128B) {
  checkSwizzle({2, 64, 128, 128});  // 64 bf16 a row: one 128-byte atom
  checkSwizzle({2, 8, 128, 128});   // one pattern repeat
  checkSwizzle({2, 64, 256, 128});  // 128 bf16 a row: two bands
  checkSwizzle({2, 128, 512, 128}); // 256 bf16 a row: four bands
  checkSwizzle({4, 64, 128, 128});  // 32 f32 a row
  checkSwizzle({1, 16, 128, 128});  // 128 8-bit elements a row
}

TEST(SwizzledByteOffset, Swizzle64B) {
  checkSwizzle({2, 64, 64, 64});  // 32 bf16 a row
  checkSwizzle({2, 64, 128, 64}); // 64 bf16 a row: two bands
  checkSwizzle({4, 32, 64, 64});
}

TEST(SwizzledByteOffset, Swizzle32B) {
  checkSwizzle({2, 32, 32, 32}); // 16 bf16 a row
  checkSwizzle({2, 64, 64, 32}); // 32 bf16 a row: two bands
  checkSwizzle({2, 8, 128, 32}); // four bands
}

TEST(SwizzledByteOffset, NoSwizzleIsRowMajor) {
  for (SwizzleCase c : {SwizzleCase{2, 64, 128, 0}, SwizzleCase{2, 16, 96, 0},
                        SwizzleCase{4, 8, 256, 0}}) {
    checkSwizzle(c);
    for (int64_t row = 0; row < c.rows; ++row)
      for (int64_t col = 0; col < c.rowBytes / c.elementBytes; ++col)
        ASSERT_EQ(
            swizzledByteOffset(row, col, c.elementBytes, c.rows, c.rowBytes, 0),
            row * c.rowBytes + col * c.elementBytes);
  }
}

// Literal values read off the ISA tables, bf16, 64 rows.
TEST(SwizzledByteOffset, TableSpotValues) {
  // 128B, 128-byte rows: row r is line r; row 1 element 0 (chunk 0) sits in
  // cell 1, row 7 chunk 0 in cell 7, row 3 chunk 5 (col 40) in cell 6, row 8
  // repeats row 0.
  EXPECT_EQ(swizzledByteOffset(1, 0, 2, 64, 128, 128), 128 + 16);
  EXPECT_EQ(swizzledByteOffset(7, 0, 2, 64, 128, 128), 7 * 128 + 7 * 16);
  EXPECT_EQ(swizzledByteOffset(3, 40, 2, 64, 128, 128), 3 * 128 + 6 * 16);
  EXPECT_EQ(swizzledByteOffset(8, 9, 2, 64, 128, 128), 8 * 128 + 18);
  // 128B, 256-byte rows: column 64 starts the second band at 64 * 128.
  EXPECT_EQ(swizzledByteOffset(0, 64, 2, 64, 256, 128), 8192);
  EXPECT_EQ(swizzledByteOffset(1, 64, 2, 64, 256, 128), 8192 + 128 + 16);
  // 64B, 64-byte rows: rows 0 and 1 share line 0 (row 1 chunk 0 is cell 4);
  // row 2 chunk 0 is cell 0 of line 1, stored in cell 1; row 3 chunk 0 is
  // cell 4 of line 1, stored in cell 5.
  EXPECT_EQ(swizzledByteOffset(1, 0, 2, 64, 64, 64), 64);
  EXPECT_EQ(swizzledByteOffset(2, 0, 2, 64, 64, 64), 128 + 16);
  EXPECT_EQ(swizzledByteOffset(3, 0, 2, 64, 64, 64), 128 + 80);
  EXPECT_EQ(swizzledByteOffset(7, 8, 2, 64, 64, 64), 3 * 128 + 6 * 16);
  // 32B, 32-byte rows: rows 0..3 are line 0 (unswizzled), rows 4..7 line 1
  // (chunks swapped in pairs).
  EXPECT_EQ(swizzledByteOffset(3, 8, 2, 32, 32, 32), 3 * 32 + 16);
  EXPECT_EQ(swizzledByteOffset(4, 0, 2, 32, 32, 32), 128 + 16);
  EXPECT_EQ(swizzledByteOffset(5, 8, 2, 32, 32, 32), 128 + 32);
}

//===----------------------------------------------------------------------===//
// PTX ISA 9.7.14.5.16 "stmatrix" (and ldmatrix's Figure for .m8n8): each of
// the .x4's four 8 x 8 matrices is held one row-fragment a thread, thread t
// holding the two 16-bit elements of row t / 4 at columns 2 (t % 4) and
// 2 (t % 4) + 1 in its register r_m; threads 8m .. 8m + 7 give the
// addresses of rows 0..7 of matrix m. FlashMLIR's rule (TileLayout.h): r_m
// is the pair of registers g + 2m, g + 2m + 1 of the x4's first register g.
//===----------------------------------------------------------------------===//

void expectMatrixStoresCover(const TileLayout &layout,
                             const std::string &what) {
  std::optional<TileLayout> addresses = layout.matrixRowAddresses();
  ASSERT_TRUE(addresses.has_value()) << what;
  std::set<std::pair<int64_t, int64_t>> written;
  for (int64_t warp = 0; warp < layout.numWarps(); ++warp)
    for (int64_t first = 0; first < layout.numRegisters(); first += 8)
      for (int64_t matrix = 0; matrix < 4; ++matrix)
        for (int64_t t = 0; t < 32; ++t)
          for (int64_t half = 0; half < 2; ++half) {
            TileCoord held = layout.apply(first + 2 * matrix + half, t, warp);
            TileCoord rowStart =
                addresses->apply(first, 8 * matrix + t / 4, warp);
            TileCoord stored{rowStart.row, rowStart.col + 2 * (t % 4) + half};
            ASSERT_EQ(held, stored)
                << what << ": warp " << warp << " register "
                << first + 2 * matrix + half << " lane " << t;
            written.insert({stored.row, stored.col});
          }
  EXPECT_EQ(int64_t(written.size()), layout.rows() * layout.cols()) << what;
}

TEST(MatrixRowAddresses, StmatrixFragmentsOfAccumulators) {
  expectMatrixStoresCover(TileLayout::wgmmaAccumulator(64, 64, 4), "64x64");
  expectMatrixStoresCover(TileLayout::wgmmaAccumulator(128, 128, 8),
                          "128x128 two warpgroups");
  expectMatrixStoresCover(TileLayout::wgmmaAccumulator(64, 256, 4), "64x256");
  expectMatrixStoresCover(TileLayout::wgmmaAccumulatorByColumns(64, 128, 8),
                          "64x128 by columns");
  expectMatrixStoresCover(TileLayout::wgmmaAccumulator(192, 64, 12),
                          "three warpgroups");
  expectMatrixStoresCover(TileLayout::mmaSyncAccumulator(64, 64, 4),
                          "mma.sync 64x64");
  // The A operand's fragment is the same per k16 step (what ldmatrix.x4
  // loads for mma.sync).
  expectMatrixStoresCover(TileLayout::wgmmaOperandA(64, 64, 4), "wgmma A");
}

TEST(MatrixRowAddresses, OtherLayoutsHaveNone) {
  // B fragments: lanes along other dimensions.
  EXPECT_FALSE(TileLayout::mmaSyncOperandB(16, 64, 4).matrixRowAddresses());
  // One n8 step: no register bit 2 to pick a matrix with.
  EXPECT_FALSE(TileLayout::wgmmaAccumulator(64, 8, 4).matrixRowAddresses());
}

} // namespace

// A transposed layout holds element (c, r) where its source holds (r, c), in
// the same register, lane and warp; it verifies, transposes back to the
// source, and its row slice (a value per source column: per query of Sᵀ)
// groups each register once, with the registers of its row.
TEST(Transposed, SwapsEveryElementInPlace) {
  for (Shape s : {Shape{128, 64, 8}, Shape{64, 64, 4}, Shape{128, 128, 8},
                  Shape{128, 80, 8}, Shape{192, 64, 12}}) {
    TileLayout source = TileLayout::wgmmaAccumulator(s.rows, s.cols, s.warps);
    TileLayout t = source.transposed();
    EXPECT_EQ(t.rows(), s.cols) << str(s);
    EXPECT_EQ(t.cols(), s.rows) << str(s);
    EXPECT_EQ(t.verify(), "") << str(s);
    EXPECT_TRUE(t.transposed() == source) << str(s);
    EXPECT_FALSE(t == source) << str(s);
    for (int64_t warp = 0; warp < s.warps; ++warp)
      for (int64_t lane = 0; lane < 32; ++lane)
        for (int64_t reg = 0; reg < source.numRegisters(); ++reg) {
          TileCoord a = source.apply(reg, lane, warp);
          TileCoord b = t.apply(reg, lane, warp);
          ASSERT_EQ(a.row, b.col) << str(s);
          ASSERT_EQ(a.col, b.row) << str(s);
        }
    // Per-row values: each row's registers (a source column's) grouped once.
    TileLayout slice = t.rowSlice();
    EXPECT_EQ(slice.verify(), "") << str(s);
    auto groups = t.registersByRow();
    ASSERT_EQ(int64_t(groups.size()), slice.numRegisters()) << str(s);
    std::vector<int64_t> seen(t.numRegisters(), 0);
    for (auto [i, group] : llvm::enumerate(groups))
      for (int64_t reg : group) {
        ++seen[reg];
        EXPECT_EQ(t.ofRegister(reg).row, slice.ofRegister(i).row) << str(s);
      }
    for (int64_t count : seen)
      EXPECT_EQ(count, 1) << str(s);
  }
}

// Sᵀ = K Qᵀ on two warpgroups (128 keys x 64 queries): a thread of S's
// transposed layout holds 16 queries (the accumulator's columns 2t, 2t + 1,
// 8 + 2t, ...), each in two registers, and the warpgroups hold copies.
TEST(Transposed, QueriesOfTheScoresPerThread) {
  TileLayout s = TileLayout::wgmmaAccumulator(128, 64, 8).transposed();
  TileLayout rows = s.rowSlice();
  EXPECT_EQ(rows.numRegisters(), 16);
  for (int64_t lane : {0, 5, 31}) {
    int64_t t = lane % 4;
    EXPECT_EQ(rows.apply(0, lane, 0).row, 2 * t);
    EXPECT_EQ(rows.apply(1, lane, 0).row, 2 * t + 1);
    EXPECT_EQ(rows.apply(2, lane, 0).row, 8 + 2 * t);
    EXPECT_EQ(rows.apply(0, lane, 4).row, 2 * t) << "warpgroup 1 copies";
  }
}
