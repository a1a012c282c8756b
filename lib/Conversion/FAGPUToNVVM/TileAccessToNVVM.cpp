//===- TileAccessToNVVM.cpp - Register tiles from and to memory -----------===//
//
// fagpu.load_tile: each thread loads, from global rows, the elements its
// registers hold (rows past the limit read as its padding, 0 by default).
// fagpu.store_to_shared: each thread writes its registers into the shared tile,
// two columns a store where the layout keeps them side by side (or, with the
// pass's matrix-stores, four column pairs a stmatrix.x4), then the tile is
// published to the block (or the writing warpgroup) and the async proxy.
// fagpu.reduce_to_global: bulk reductions of shared rows into global ones,
// a row band a thread.
//
//===----------------------------------------------------------------------===//

#include "TileLowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::fagpu;

namespace {

struct LowerLoadTile : OpConversionPattern<LoadTileOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(LoadTileOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getResult().getType());
    TileLayout layout = getTileLayout(type);
    auto origin =
        ThreadTileOrigin::get(rewriter, loc, layout, adaptor.getRow());
    Value rowBase = origin.row, threadCol = origin.col;
    Type element = type.getElementType();
    FloatAttr padding = op.getPaddingAttr();
    Value pad = arith::ConstantOp::create(
        rewriter, loc, element,
        padding ? TypedAttr(rewriter.getFloatAttr(element,
                                                  padding.getValueAsDouble()))
                : rewriter.getZeroAttr(element));
    SmallVector<Value> regs;
    for (int64_t reg = 0; reg < layout.numRegisters(); ++reg) {
      TileCoord c = layout.ofRegister(reg);
      Value row = arith::AddIOp::create(
          rewriter, loc, rowBase,
          arith::ConstantIndexOp::create(rewriter, loc, c.row));
      Value inside = arith::CmpIOp::create(
          rewriter, loc, arith::CmpIPredicate::ult, row, adaptor.getLimit());
      auto ifInside = scf::IfOp::create(rewriter, loc, element, inside,
                                        /*withElseRegion=*/true);
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointToStart(ifInside.thenBlock());
      SmallVector<Value> indices = {row};
      if (type.getRank() == 2)
        indices.push_back(arith::AddIOp::create(
            rewriter, loc, threadCol,
            arith::ConstantIndexOp::create(rewriter, loc, c.col)));
      Value loaded =
          memref::LoadOp::create(rewriter, loc, adaptor.getSource(), indices);
      scf::YieldOp::create(rewriter, loc, loaded);
      rewriter.setInsertionPointToStart(ifInside.elseBlock());
      scf::YieldOp::create(rewriter, loc, pad);
      regs.push_back(ifInside.getResult(0));
    }
    auto vectorType =
        cast<VectorType>(getTypeConverter()->convertType(op.getType()));
    rewriter.replaceOp(op, packVector(rewriter, loc, vectorType, regs));
    return success();
  }
};

/// Stores `regs` (a 16-bit tile of `layout`) with one `stmatrix.x4` per
/// four register pairs, the lanes pointing where `addresses` (the layout's
/// matrixRowAddresses) says. Every 16-byte chunk of a shared tile's row
/// stays whole and aligned (swizzles move whole chunks; rows are 16-byte
/// multiples by the tile type's verifier), as stmatrix's row addresses
/// need.
static void storeMatrices(OpBuilder &b, Location loc, const TileLayout &layout,
                          const TileLayout &addresses, SharedTileType tile,
                          Value base, const ThreadPosition &thread,
                          ArrayRef<Value> regs) {
  auto [laneRow, laneCol] = emitThreadCoords(b, loc, addresses, thread);
  for (int64_t reg = 0; reg < layout.numRegisters(); reg += 8) {
    SmallVector<Value> words;
    for (int64_t matrix = 0; matrix < 4; ++matrix) {
      int64_t at = reg + 2 * matrix;
      words.push_back(packPairWord(b, loc, regs[at], regs[at + 1]));
    }
    TileCoord c = layout.ofRegister(reg);
    Value rowOffset = arith::ConstantIndexOp::create(b, loc, c.row);
    Value row = arith::AddIOp::create(b, loc, laneRow, rowOffset);
    Value colOffset = arith::ConstantIndexOp::create(b, loc, c.col);
    Value col = arith::AddIOp::create(b, loc, laneCol, colOffset);
    Value bytes = emitSharedByteOffset(b, loc, tile, row, col);
    Value address = emitSharedAddress(b, loc, base, bytes);
    NVVM::StMatrixOp::create(
        b, loc, address, words, NVVM::MMALayout::row,
        NVVM::LdStMatrixShapeAttr::get(b.getContext(), 8, 8),
        NVVM::LdStMatrixEltType::B16);
  }
}

struct LowerStoreToShared : OpConversionPattern<StoreToSharedOp> {
  LowerStoreToShared(TypeConverter &converter, MLIRContext *ctx,
                     bool matrixStores)
      : OpConversionPattern(converter, ctx), matrixStores(matrixStores) {}
  LogicalResult
  matchAndRewrite(StoreToSharedOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getValue().getType());
    SharedTileType tile = op.getDest().getType();
    TileLayout layout = getTileLayout(type);
    // Nobody reads the tile's previous contents any more (the products that
    // read it were waited for by every warp before this barrier).
    if (!op.getUnread())
      emitSync(rewriter, loc, op.getSync());
    ThreadPosition thread = ThreadPosition::get(rewriter, loc);
    SmallVector<Value> regs = unpackVector(rewriter, loc, adaptor.getValue());
    // With `matrixStores`, accumulator tiles of 16-bit elements: four
    // register pairs a stmatrix, one address for them (a quarter of the
    // stores and of their address registers).
    std::optional<TileLayout> addresses;
    if (matrixStores && type.getElementType().getIntOrFloatBitWidth() == 16)
      addresses = layout.matrixRowAddresses();
    if (addresses) {
      storeMatrices(rewriter, loc, layout, *addresses, tile, adaptor.getDest(),
                    thread, regs);
      publishSharedWrites(rewriter, loc, op.getSync());
      rewriter.eraseOp(op);
      return success();
    }
    auto [threadRow, threadCol] =
        emitThreadCoords(rewriter, loc, layout, thread);
    // Column pairs go out as one store (4 bytes, or 8 for f32: a 16-byte
    // chunk never splits a pair).
    bool paired = holdsColumnPairs(layout);
    Type element = type.getElementType();
    unsigned elementBytes = element.getIntOrFloatBitWidth() / 8;
    for (int64_t reg = 0; reg < layout.numRegisters(); reg += paired ? 2 : 1) {
      TileCoord c = layout.ofRegister(reg);
      Value row = arith::AddIOp::create(
          rewriter, loc, threadRow,
          arith::ConstantIndexOp::create(rewriter, loc, c.row));
      Value col = arith::AddIOp::create(
          rewriter, loc, threadCol,
          arith::ConstantIndexOp::create(rewriter, loc, c.col));
      Value address = emitSharedAddress(
          rewriter, loc, adaptor.getDest(),
          emitSharedByteOffset(rewriter, loc, tile, row, col));
      Value stored = regs[reg];
      if (paired)
        stored = packVector(rewriter, loc, VectorType::get({2}, element),
                            {regs[reg], regs[reg + 1]});
      LLVM::StoreOp::create(rewriter, loc, stored, address,
                            /*alignment=*/(paired ? 2 : 1) * elementBytes);
    }
    publishSharedWrites(rewriter, loc, op.getSync());
    rewriter.eraseOp(op);
    return success();
  }

  bool matrixStores;
};

/// With pair_keys, on tiles whose sides are multiples of 32 (FlashAttention
/// 3's transposition, section 3.3): a warp at a time takes a unit of 16
/// source rows x 32 source columns. ldmatrix.trans.x4 reads it as four 8 x 8
/// matrices of 16-bit column pairs (m0: rows 0-7, columns 0-15; m1: rows
/// 8-15; m2, m3: the same at columns 16-31); lane t then holds, per matrix,
/// rows 2q and 2q + 1 (q = t % 4) of the pair column j = t / 4. Two byte
/// permutes of (m0, m1) split those pairs into even and odd columns: source
/// rows (2q, 2q + 1, 2q + 8, 2q + 9) of column 2j (and 2j + 1), which is
/// destination row 2j (2j + 1) at columns 4q .. 4q + 3 in pair_keys order.
/// stmatrix.x4 writes the four words as row j of four 8 x 16-byte matrices
/// whose rows are destination rows (2r, 2r + 1, 16 + 2r, 17 + 2r). Per 16
/// bytes a thread: one ldmatrix, four permutes, one stmatrix.
static void emitMatrixTranspose(OpBuilder &b, Location loc,
                                TransposeSharedOp op, Value source,
                                Value dest) {
  SharedTileType sourceType = op.getSource().getType();
  SharedTileType destType = op.getDest().getType();
  // One op a statement: a call's arguments are built in an unspecified
  // order, and the IR must not depend on the host compiler.
  auto index = [&](int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v).getResult();
  };
  auto add = [&](Value x, Value y) {
    return arith::AddIOp::create(b, loc, x, y).getResult();
  };
  auto mul = [&](Value x, int64_t c) {
    Value constant = index(c);
    return arith::MulIOp::create(b, loc, x, constant).getResult();
  };
  auto div = [&](Value x, int64_t c) {
    Value constant = index(c);
    return arith::DivUIOp::create(b, loc, x, constant).getResult();
  };
  auto rem = [&](Value x, int64_t c) {
    Value constant = index(c);
    return arith::RemUIOp::create(b, loc, x, constant).getResult();
  };
  ThreadPosition thread = ThreadPosition::get(b, loc);
  Value warps = div(emitGroupThreads(b, loc), 32);
  // The lane's matrix (i) and row in it (r), for both instructions' row
  // addresses.
  Value matrix = div(thread.lane, 8);
  Value matrixRow = rem(thread.lane, 8);
  Value matrixLow = rem(matrix, 2);
  Value matrixHigh = div(matrix, 2);
  // ldmatrix: source row r + 8 (i % 2), column 16 (i / 2) of the unit.
  Value loadRow = add(matrixRow, mul(matrixLow, 8));
  Value loadCol = mul(matrixHigh, 16);
  // stmatrix: destination row 16 (i / 2) + 2 r + i % 2, column 0 of the
  // unit's 16 destination columns.
  Value storeBand = mul(matrixHigh, 16);
  Value storeRow = add(add(storeBand, mul(matrixRow, 2)), matrixLow);
  int64_t rowUnits = sourceType.getRows() / 16;
  int64_t units = rowUnits * (sourceType.getCols() / 32);
  Value unitCount = index(units);
  // Up to 128 destination rows (V's transpose at head dim 128), two units
  // an iteration, both ldmatrix issued before the first permute: one
  // load's latency hides the other's (a unit's permutes wait for its
  // load). Where a warp's units run out, the second is the first again
  // (the same bytes written twice by the same lanes). FP8 hd128 on the
  // H100: N = 16k +4-6 %, 8k causal +8 %; at head dim 256 it lost 1-3 %
  // (docs/perf/README.md, thirty-second session).
  bool twoUnits = destType.getRows() <= 128;
  Value step = twoUnits ? mul(warps, 2) : warps;
  auto loop = scf::ForOp::create(b, loc, thread.warp, unitCount, step);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Value unit = loop.getInductionVar();
  Type i32 = b.getI32Type();
  auto wordsType = LLVM::LLVMStructType::getLiteral(b.getContext(),
                                                    SmallVector<Type>(4, i32));
  auto shape = NVVM::LdStMatrixShapeAttr::get(b.getContext(), 8, 8);
  struct Unit {
    Value firstRow, firstCol, loaded;
  };
  auto load = [&](Value unit) {
    Value firstRow = mul(rem(unit, rowUnits), 16);
    Value firstCol = mul(div(unit, rowUnits), 32);
    Value loadRowOfTile = add(firstRow, loadRow);
    Value loadColOfTile = add(firstCol, loadCol);
    Value loadAt = emitSharedAddress(
        b, loc, source,
        emitSharedByteOffset(b, loc, sourceType, loadRowOfTile, loadColOfTile));
    Value loaded = NVVM::LdMatrixOp::create(b, loc, wordsType, loadAt, 4,
                                            NVVM::MMALayout::col, shape,
                                            NVVM::LdStMatrixEltType::B16);
    return Unit{firstRow, firstCol, loaded};
  };
  auto store = [&](const Unit &u) {
    SmallVector<Value> pairs;
    for (int64_t m = 0; m < 4; ++m)
      pairs.push_back(LLVM::ExtractValueOp::create(b, loc, u.loaded, m));
    // Bytes 0 and 2 (the even columns) of each word, then 1 and 3, the
    // lower matrix's in the low half.
    Value even = arith::ConstantIntOp::create(b, loc, i32, 0x6420);
    Value odd = arith::ConstantIntOp::create(b, loc, i32, 0x7531);
    SmallVector<Value> words;
    for (int64_t m = 0; m < 4; m += 2)
      for (Value selector : {even, odd})
        words.push_back(NVVM::PermuteOp::create(b, loc, i32, pairs[m],
                                                pairs[m + 1], selector,
                                                NVVM::PermuteMode::DEFAULT));
    Value storeRowOfTile = add(u.firstCol, storeRow);
    Value storeAt = emitSharedAddress(
        b, loc, dest,
        emitSharedByteOffset(b, loc, destType, storeRowOfTile, u.firstRow));
    NVVM::StMatrixOp::create(b, loc, storeAt, words, NVVM::MMALayout::row,
                             shape, NVVM::LdStMatrixEltType::B16);
  };
  Unit first = load(unit);
  if (!twoUnits) {
    store(first);
    return;
  }
  Value next = add(unit, warps);
  Value nextExists =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, next, unitCount);
  Value second = arith::SelectOp::create(b, loc, nextExists, next, unit);
  Unit other = load(second);
  store(first);
  store(other);
}

/// The executing threads split the source into 4 x 4 blocks of bytes: each
/// thread reads a block's four 4-byte row pieces, regroups the bytes by
/// column and writes four 4-byte pieces of the destination's rows. Where
/// the blocks form 32 x 32 squares, the 32 lanes of a warp take a diagonal
/// of one: lane t the block (row (t + s) % 32, column t) of square pass s.
/// Their loads then hit 32 banks (consecutive words of a source row band)
/// and so do their stores (a 128-byte swizzle puts rows 8 apart on the
/// same banks, so lanes down a block column, the plain order, conflict
/// 16-way on one side).
struct LowerTransposeShared : OpConversionPattern<TransposeSharedOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(TransposeSharedOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    SharedTileType source = op.getSource().getType();
    SharedTileType dest = op.getDest().getType();
    // Nobody reads the destination's previous contents any more.
    emitSync(rewriter, loc, SyncScope::block);
    if (op.getPairKeys() && source.getRows() % 32 == 0 &&
        source.getCols() % 32 == 0) {
      emitMatrixTranspose(rewriter, loc, op, adaptor.getSource(),
                          adaptor.getDest());
      publishSharedWrites(rewriter, loc, SyncScope::block);
      rewriter.eraseOp(op);
      return success();
    }
    auto index = [&](int64_t v) {
      return arith::ConstantIndexOp::create(rewriter, loc, v).getResult();
    };
    int64_t blockRows = source.getRows() / 4;
    int64_t blocks = blockRows * (source.getCols() / 4);
    Type i32 = rewriter.getI32Type();
    auto loop =
        scf::ForOp::create(rewriter, loc, emitGroupThreadId(rewriter, loc),
                           index(blocks), emitGroupThreads(rewriter, loc));
    {
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointToStart(loop.getBody());
      Value block = loop.getInductionVar();
      auto rem = [&](Value v, int64_t d) {
        return arith::RemUIOp::create(rewriter, loc, v, index(d)).getResult();
      };
      auto div = [&](Value v, int64_t d) {
        return arith::DivUIOp::create(rewriter, loc, v, index(d)).getResult();
      };
      auto times4 = [&](Value v) {
        return arith::MulIOp::create(rewriter, loc, v, index(4)).getResult();
      };
      Value row0, col0;
      int64_t blockCols = source.getCols() / 4;
      if (blockRows % 32 == 0 && blockCols % 32 == 0) {
        // b = 32 (32 square + s) + t.
        Value t = rem(block, 32), pass = div(block, 32);
        Value s = rem(pass, 32), square = div(pass, 32);
        Value rowBlock = arith::AddIOp::create(
            rewriter, loc,
            arith::MulIOp::create(rewriter, loc, rem(square, blockRows / 32),
                                  index(32)),
            rem(arith::AddIOp::create(rewriter, loc, t, s), 32));
        Value colBlock = arith::AddIOp::create(
            rewriter, loc,
            arith::MulIOp::create(rewriter, loc, div(square, blockRows / 32),
                                  index(32)),
            t);
        row0 = times4(rowBlock);
        col0 = times4(colBlock);
      } else {
        row0 = times4(rem(block, blockRows));
        col0 = times4(div(block, blockRows));
      }
      auto addressOf = [&](SharedTileType tile, Value base, Value row,
                           Value col) {
        return emitSharedAddress(
            rewriter, loc, base,
            emitSharedByteOffset(rewriter, loc, tile, row, col));
      };
      // Destination columns row0 .. row0 + 3 (4-aligned) hold source rows
      // sourceRowOf(row0 + r): consecutive, or with pair_keys the pairs
      // (s, s + 1, s + 8, s + 9) of a 32-row group.
      SmallVector<Value> words;
      for (int64_t r = 0; r < 4; ++r) {
        Value row = arith::AddIOp::create(rewriter, loc, row0, index(r));
        if (op.getPairKeys()) {
          // row0 = 32 c + 16 u + 4 t: source 32 c + 16 u + 2 t + [0, 1, 8, 9].
          Value group = arith::SubIOp::create(
              rewriter, loc, row0,
              arith::RemUIOp::create(rewriter, loc, row0, index(16)));
          Value t = arith::DivUIOp::create(
              rewriter, loc,
              arith::RemUIOp::create(rewriter, loc, row0, index(16)), index(4));
          Value base = arith::AddIOp::create(
              rewriter, loc, group,
              arith::MulIOp::create(rewriter, loc, t, index(2)));
          row = arith::AddIOp::create(
              rewriter, loc, base,
              index(TransposeSharedOp::sourceRowOf(r, /*pairKeys=*/true)));
        }
        words.push_back(LLVM::LoadOp::create(
            rewriter, loc, i32,
            addressOf(source, adaptor.getSource(), row, col0), 4));
      }
      auto c32 = [&](int64_t v) {
        return arith::ConstantIntOp::create(rewriter, loc, i32, v).getResult();
      };
      for (int64_t c = 0; c < 4; ++c) {
        // Byte c of each row piece, row r's at byte r.
        Value out;
        for (int64_t r = 0; r < 4; ++r) {
          Value byte = arith::AndIOp::create(
              rewriter, loc,
              arith::ShRUIOp::create(rewriter, loc, words[r], c32(8 * c)),
              c32(0xFF));
          Value placed = arith::ShLIOp::create(rewriter, loc, byte, c32(8 * r));
          out =
              out ? arith::OrIOp::create(rewriter, loc, out, placed).getResult()
                  : placed;
        }
        Value row = arith::AddIOp::create(rewriter, loc, col0, index(c));
        LLVM::StoreOp::create(rewriter, loc, out,
                              addressOf(dest, adaptor.getDest(), row, row0), 4);
      }
    }
    publishSharedWrites(rewriter, loc, SyncScope::block);
    rewriter.eraseOp(op);
    return success();
  }
};

/// One bulk reduction, the instruction MLIR lacks (its NVVM dialect has the
/// tensor-map form only): `bytes` of f32 at shared `source` added to global
/// `dest`.
static void emitBulkReduction(OpBuilder &b, Location loc, Value dest,
                              Value source, Value size) {
  Value shared = LLVM::PtrToIntOp::create(b, loc, b.getI32Type(), source);
  LLVM::InlineAsmOp::create(
      b, loc, TypeRange{}, ValueRange{dest, shared, size},
      "cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [$0], "
      "[$1], $2;",
      "l,r,r", /*has_side_effects=*/true, /*is_align_stack=*/false,
      LLVM::tailcallkind::TailCallKind::None,
      LLVM::AsmDialectAttr::get(b.getContext(), LLVM::AsmDialect::AD_ATT),
      ArrayAttr());
}

/// Whether consecutive rows of `tile` and of `dest` are back to back: the
/// same row length, no padding in either.
static bool rowsAreContiguous(SharedTileType tile, MemRefType dest) {
  SmallVector<int64_t> strides;
  int64_t offset;
  return succeeded(dest.getStridesAndOffset(strides, offset)) &&
         dest.getDimSize(1) == tile.getCols() && strides[0] == tile.getCols();
}

struct LowerReduceToGlobal : OpConversionPattern<ReduceToGlobalOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ReduceToGlobalOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    SharedTileType tile = op.getTile().getType();
    int64_t bands = op.getBands();
    if (failed(checkBandIssuers(rewriter, op, bands)))
      return failure();
    int64_t bandCols = op.getDest().getType().getDimSize(1) / bands;
    auto c = [&](int64_t v) {
      return arith::ConstantIndexOp::create(rewriter, loc, v);
    };
    if (bands == 1 && rowsAreContiguous(tile, op.getDest().getType())) {
      // Tile and destination rows both back to back: the valid rows are
      // one run of bytes, one reduction by one thread.
      onFirstThreadOfGroup(rewriter, loc, [&] {
        Value rows = arith::MinSIOp::create(
            rewriter, loc, c(tile.getRows()),
            arith::SubIOp::create(rewriter, loc, adaptor.getLimit(),
                                  adaptor.getRow()));
        Value any = arith::CmpIOp::create(
            rewriter, loc, arith::CmpIPredicate::sgt, rows, c(0));
        auto ifAny = scf::IfOp::create(rewriter, loc, any);
        OpBuilder::InsertionGuard guard(rewriter);
        rewriter.setInsertionPointToStart(ifAny.thenBlock());
        Value bytes =
            arith::MulIOp::create(rewriter, loc, rows, c(tile.getRowBytes()));
        Value zero = c(0);
        Value dest = emitGlobalAddress(rewriter, loc, adaptor.getDest(),
                                       ValueRange{adaptor.getRow(), zero});
        Value bytes32 = arith::IndexCastOp::create(
            rewriter, loc, rewriter.getI32Type(), bytes);
        emitBulkReduction(rewriter, loc, dest, adaptor.getTile(), bytes32);
        NVVM::CpAsyncBulkCommitGroupOp::create(rewriter, loc);
      });
      rewriter.eraseOp(op);
      return success();
    }
    // Thread t of warpgroup b issues band b of rows t, t + 128, ...
    Value thread = emitGroupThreadId(rewriter, loc);
    Value warpgroup =
        arith::DivUIOp::create(rewriter, loc, thread, c(kWarpgroupThreads));
    Value inGroup =
        arith::RemUIOp::create(rewriter, loc, thread, c(kWarpgroupThreads));
    Value bandCol =
        arith::MulIOp::create(rewriter, loc, warpgroup, c(bandCols));
    Value issues = arith::CmpIOp::create(
        rewriter, loc, arith::CmpIPredicate::ult, warpgroup, c(bands));
    auto ifIssues = scf::IfOp::create(rewriter, loc, issues);
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToStart(ifIssues.thenBlock());
    for (int64_t first = 0; first < tile.getRows();
         first += kWarpgroupThreads) {
      Value tileRow = arith::AddIOp::create(rewriter, loc, inGroup, c(first));
      Value row =
          arith::AddIOp::create(rewriter, loc, adaptor.getRow(), tileRow);
      Value inTile = arith::CmpIOp::create(
          rewriter, loc, arith::CmpIPredicate::ult, tileRow, c(tile.getRows()));
      Value inDest = arith::CmpIOp::create(
          rewriter, loc, arith::CmpIPredicate::ult, row, adaptor.getLimit());
      auto ifRow = scf::IfOp::create(
          rewriter, loc, arith::AndIOp::create(rewriter, loc, inTile, inDest));
      OpBuilder::InsertionGuard rowGuard(rewriter);
      rewriter.setInsertionPointToStart(ifRow.thenBlock());
      Value dest = emitGlobalAddress(rewriter, loc, adaptor.getDest(),
                                     ValueRange{row, bandCol});
      Value source = emitSharedAddress(
          rewriter, loc, adaptor.getTile(),
          emitSharedByteOffset(rewriter, loc, tile, tileRow, bandCol));
      emitBulkReduction(
          rewriter, loc, dest, source,
          arith::ConstantIntOp::create(rewriter, loc, bandCols * 4, 32));
    }
    NVVM::CpAsyncBulkCommitGroupOp::create(rewriter, loc);
    rewriter.eraseOp(op);
    return success();
  }
};

struct LowerWaitSharedReads : OpConversionPattern<WaitSharedReadsOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(WaitSharedReadsOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    NVVM::CpAsyncBulkWaitGroupOp::create(rewriter, op.getLoc(), op.getPending(),
                                         rewriter.getUnitAttr());
    rewriter.eraseOp(op);
    return success();
  }
};

struct LowerWaitGlobalSums : OpConversionPattern<WaitGlobalSumsOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(WaitGlobalSumsOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    // Without `.read`: the bulk groups' writes, not only their reads.
    NVVM::CpAsyncBulkWaitGroupOp::create(rewriter, op.getLoc(), op.getPending(),
                                         /*read=*/UnitAttr());
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

void mlir::fagpu::populateTileAccessToNVVMPatterns(TileTypeConverter &converter,
                                                   RewritePatternSet &patterns,
                                                   bool matrixStores) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<LowerLoadTile, LowerReduceToGlobal, LowerWaitSharedReads,
               LowerWaitGlobalSums>(converter, ctx);
  patterns.add<LowerStoreToShared>(converter, ctx, matrixStores);
  patterns.add<LowerTransposeShared>(converter, ctx);
}
