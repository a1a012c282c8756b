//===- MmaToMmaSync.cpp - fagpu.mma on warp-level mma.sync ----------------===//
//
// An accumulator in the #fagpu.mma_sync_acc layout is a grid of
// mma.sync.m16n8k16 C fragments: each warp owns its rows (m16 tiles) and
// every n8 column tile of them. The product is one mma.sync per (m16 tile,
// n8 tile, k16 step). Where each fragment element sits is asked of the
// layouts (the accumulator's and a register A operand's), never recomputed
// here; the PTX ISA's fragment tables are the layouts' unit tests.
//
// Shared operands are read into fragments with ldmatrix.x4 through the
// tile's own addressing (its swizzle included), each lane pointing where
// ldmatrixLanePosition (TileLayout.h) says: Q ([M, K]) and K ([N, K]) as
// stored, V ([K, N]) and the backward's dSᵀ ([K, M], transpose_a) with
// .trans. An odd last n8 tile is read with .x2.
//
//===----------------------------------------------------------------------===//

#include "TileLowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Matchers.h"

#include <optional>

using namespace mlir;
using namespace mlir::fagpu;

namespace {

constexpr int64_t kFragmentRows = 16; // m16
constexpr int64_t kFragmentCols = 8;  // n8
constexpr int64_t kStepK = 16;        // k16

/// `count` (1, 2 or 4) 8 x 8 matrices of a 16-bit shared tile, lane l
/// pointing at `address`: one 32-bit word each.
SmallVector<Value> loadMatrices(OpBuilder &b, Location loc, Value address,
                                int64_t count, bool transpose) {
  Type i32 = b.getI32Type();
  Type resultType = count == 1
                        ? i32
                        : Type(LLVM::LLVMStructType::getLiteral(
                              b.getContext(), SmallVector<Type>(count, i32)));
  Value loaded = NVVM::LdMatrixOp::create(
      b, loc, resultType, address, count,
      transpose ? NVVM::MMALayout::col : NVVM::MMALayout::row,
      NVVM::LdStMatrixShapeAttr::get(b.getContext(), 8, 8),
      NVVM::LdStMatrixEltType::B16);
  if (count == 1)
    return {loaded};
  SmallVector<Value> words;
  for (int64_t i = 0; i < count; ++i)
    words.push_back(LLVM::ExtractValueOp::create(b, loc, loaded, i));
  return words;
}

/// Every lane's ldmatrix position for `operand` (the same in each warp),
/// shifted by each warp's first index of M (A) or N (B), `warpFirsts`: along
/// the stored tile's columns where that index is (A stored [K, M], B stored
/// [K, N]), else along its rows.
SmallVector<std::pair<int64_t, int64_t>>
ldmatrixStarts(LdMatrixOperand operand, ArrayRef<int64_t> warpFirsts) {
  IntegerArith a;
  bool alongCols = operand == LdMatrixOperand::AStoredKM ||
                   operand == LdMatrixOperand::BStoredKN;
  SmallVector<std::pair<int64_t, int64_t>> starts;
  for (int64_t first : warpFirsts)
    for (int64_t lane = 0; lane < 32; ++lane) {
      auto [row, col] = ldmatrixLanePosition(a, operand, lane);
      starts.push_back(alongCols ? std::pair{row, first + col}
                                 : std::pair{first + row, col});
    }
  return starts;
}

/// A fragment word as mma.sync takes it: f16 pairs as vector<2xf16>, bf16
/// pairs as i32.
Value operandWord(OpBuilder &b, Location loc, Value word, Type element) {
  if (!element.isF16())
    return word;
  Value asVector = vector::BroadcastOp::create(
      b, loc, VectorType::get({1}, b.getI32Type()), word);
  return vector::BitCastOp::create(b, loc, VectorType::get({2}, element),
                                   asVector);
}

struct LowerMmaToMmaSync : OpConversionPattern<MmaOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(MmaOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto accType = cast<RankedTensorType>(op.getAcc().getType());
    // Column groups of warps (#fagpu.mma_sync_acc_cols): warp w takes rows
    // of block w % R and the columns of group w / R.
    int64_t columns = 1;
    if (auto byColumns =
            dyn_cast<MmaSyncAccColsLayoutAttr>(accType.getEncoding()))
      columns = byColumns.getColumns();
    else if (!isa<MmaSyncAccLayoutAttr>(accType.getEncoding()))
      return rewriter.notifyMatchFailure(op, "not an mma.sync accumulator");
    Location loc = op.getLoc();
    IndexArith ix{rewriter, loc};
    TileLayout accLayout = getTileLayout(accType);
    int64_t warps = accLayout.numWarps();
    int64_t rowWarps = warps / columns;
    int64_t warpRows = accType.getDimSize(0) / rowWarps;
    int64_t groupCols = accType.getDimSize(1) / columns;
    int64_t mTiles = warpRows / kFragmentRows;
    int64_t nTiles = groupCols / kFragmentCols;
    // Each warp's first row and first column.
    SmallVector<int64_t> firstRows, firstCols;
    for (int64_t w = 0; w < warps; ++w) {
      firstRows.push_back(w % rowWarps * warpRows);
      firstCols.push_back(w / rowWarps * groupCols);
    }
    SharedTileType bTile = op.getB().getType();
    bool transposeB = op.getTransposeB();
    Type element = bTile.getElementType();
    int64_t kSteps = (transposeB ? bTile.getCols() : bTile.getRows()) / kStepK;

    ThreadPosition thread = ThreadPosition::get(rewriter, loc);
    Value rowWarp = columns == 1 ? thread.warp : ix.rem(thread.warp, rowWarps);

    // The accumulator: lane 0's register of each element (other lanes and
    // warps hold the same registers at their own elements).
    DenseMap<std::pair<int64_t, int64_t>, int64_t> accRegister =
        registersByElement(accLayout);
    SmallVector<Value> acc;
    // A product from zero (S) starts from zero registers, not the zero
    // tile's.
    Value accTile = op.getAcc();
    if (auto splat = accTile.getDefiningOp<tensor::SplatOp>())
      accTile = splat.getInput();
    if (matchPattern(accTile, m_AnyZeroFloat())) {
      Value zero = arith::ConstantOp::create(rewriter, loc,
                                             rewriter.getF32FloatAttr(0.0));
      acc.assign(accLayout.numRegisters(), zero);
    } else {
      acc = unpackVector(rewriter, loc, adaptor.getAcc());
    }

    // A from registers: lane 0's register of each fragment element.
    auto aRegisterTile = dyn_cast<RankedTensorType>(op.getA().getType());
    SmallVector<Value> aRegs;
    DenseMap<std::pair<int64_t, int64_t>, int64_t> aRegister;
    if (aRegisterTile) {
      aRegs = unpackVector(rewriter, loc, adaptor.getA());
      aRegister = registersByElement(getTileLayout(aRegisterTile));
    }
    // A from shared memory: the warp's rows of M (its columns where A is
    // stored [K, M], read with .trans). Each lane's addresses are a few
    // swizzle phases plus constants (ThreadSharedOffsets).
    bool transposeA = op.getTransposeA();
    LdMatrixOperand aOperand =
        transposeA ? LdMatrixOperand::AStoredKM : LdMatrixOperand::A;
    std::optional<ThreadSharedOffsets> aOffsets;
    if (!aRegisterTile) {
      auto [row, col] = ldmatrixLanePosition(ix, aOperand, thread.lane);
      Value warpFirst = ix.mul(rowWarp, warpRows);
      aOffsets.emplace(cast<SharedTileType>(op.getA().getType()),
                       transposeA ? row : ix.add(warpFirst, row),
                       transposeA ? ix.add(warpFirst, col) : col,
                       ldmatrixStarts(aOperand, firstRows));
    }
    // B: every warp of a column group reads the group's columns (all of
    // them without groups).
    LdMatrixOperand bOperand =
        transposeB ? LdMatrixOperand::BStoredNK : LdMatrixOperand::BStoredKN;
    auto [bLaneRow, bLaneCol] = ldmatrixLanePosition(ix, bOperand, thread.lane);
    if (columns > 1) {
      Value groupFirst = ix.mul(ix.div(thread.warp, rowWarps), groupCols);
      if (transposeB)
        bLaneRow = ix.add(groupFirst, bLaneRow);
      else
        bLaneCol = ix.add(groupFirst, bLaneCol);
    }
    ThreadSharedOffsets bOffsets(
        bTile, bLaneRow, bLaneCol,
        ldmatrixStarts(bOperand, columns > 1 ? ArrayRef<int64_t>(firstCols)
                                             : ArrayRef<int64_t>{0}));

    auto resultType = LLVM::LLVMStructType::getLiteral(
        rewriter.getContext(), SmallVector<Type>(4, rewriter.getF32Type()));
    NVVM::MMATypes ptxType =
        element.isF16() ? NVVM::MMATypes::f16 : NVVM::MMATypes::bf16;
    for (int64_t k = 0; k < kSteps; ++k) {
      int64_t k0 = k * kStepK;
      // a0a1, a2a3, a4a5, a6a7 of each m16 tile.
      SmallVector<SmallVector<Value>> aWords;
      for (int64_t mt = 0; mt < mTiles; ++mt) {
        int64_t r0 = mt * kFragmentRows;
        if (aRegisterTile) {
          SmallVector<Value> words;
          for (auto [dr, dc] :
               {std::pair<int64_t, int64_t>{0, 0}, {8, 0}, {0, 8}, {8, 8}}) {
            Value low = aRegs[aRegister.lookup({r0 + dr, k0 + dc})];
            Value high = aRegs[aRegister.lookup({r0 + dr, k0 + dc + 1})];
            words.push_back(packPairWord(rewriter, loc, low, high));
          }
          aWords.push_back(words);
        } else {
          Value address =
              transposeA
                  ? aOffsets->pointer(rewriter, loc, adaptor.getA(), k0, r0)
                  : aOffsets->pointer(rewriter, loc, adaptor.getA(), r0, k0);
          aWords.push_back(loadMatrices(rewriter, loc, address, 4,
                                        /*transpose=*/transposeA));
        }
      }
      // b0, b1 of each n8 tile, two tiles a load.
      SmallVector<SmallVector<Value>> bWords;
      for (int64_t nt = 0; nt < nTiles; nt += 2) {
        int64_t count = nt + 1 < nTiles ? 4 : 2;
        int64_t n0 = nt * kFragmentCols;
        Value address =
            transposeB
                ? bOffsets.pointer(rewriter, loc, adaptor.getB(), n0, k0)
                : bOffsets.pointer(rewriter, loc, adaptor.getB(), k0, n0);
        SmallVector<Value> words = loadMatrices(rewriter, loc, address, count,
                                                /*transpose=*/!transposeB);
        bWords.push_back({words[0], words[1]});
        if (count == 4)
          bWords.push_back({words[2], words[3]});
      }
      for (int64_t mt = 0; mt < mTiles; ++mt) {
        SmallVector<Value> a;
        for (Value word : aWords[mt])
          a.push_back(operandWord(rewriter, loc, word, element));
        for (int64_t nt = 0; nt < nTiles; ++nt) {
          int64_t r0 = mt * kFragmentRows, c0 = nt * kFragmentCols;
          std::array<int64_t, 4> regs = {accRegister.lookup({r0, c0}),
                                         accRegister.lookup({r0, c0 + 1}),
                                         accRegister.lookup({r0 + 8, c0}),
                                         accRegister.lookup({r0 + 8, c0 + 1})};
          SmallVector<Value> c = {acc[regs[0]], acc[regs[1]], acc[regs[2]],
                                  acc[regs[3]]};
          SmallVector<Value> bOperand = {
              operandWord(rewriter, loc, bWords[nt][0], element),
              operandWord(rewriter, loc, bWords[nt][1], element)};
          auto mma = NVVM::MmaOp::create(
              rewriter, loc, resultType, a, bOperand, c,
              ArrayRef<int64_t>{16, 8, 16}, std::nullopt, std::nullopt,
              std::array<NVVM::MMATypes, 2>{ptxType, ptxType},
              std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                             NVVM::MMALayout::col});
          for (int64_t i = 0; i < 4; ++i)
            acc[regs[i]] =
                LLVM::ExtractValueOp::create(rewriter, loc, mma.getResult(), i);
        }
      }
    }
    auto type = cast<VectorType>(getTypeConverter()->convertType(accType));
    rewriter.replaceOp(op, packVector(rewriter, loc, type, acc));
    return success();
  }
};

} // namespace

void mlir::fagpu::populateMmaToMmaSyncPatterns(TileTypeConverter &converter,
                                               RewritePatternSet &patterns) {
  patterns.add<LowerMmaToMmaSync>(converter, patterns.getContext());
}
