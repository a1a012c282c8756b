//===- SharedCopiesToNVVM.cpp - Global rows into shared tiles -------------===//
//
// fagpu.copy_to_shared (loads and stores; the block waits for them) and
// fagpu.async_copy_to_shared (cp.async, zero fill past the limit), with
// their commit and wait. A tile's 16-byte chunks are spread over the
// group's threads row-major.
//
// Where the IR gives the group's size, each thread's chunks are unrolled:
// they keep the thread's column and step down the rows, so a chunk's shared
// offset is a constant away from an earlier chunk's whose swizzle phase is
// the same (the layout function decides which, not an assumption here),
// and its global address a multiple of the row stride away from the first
// chunk's. Nothing per chunk is left for LLVM to keep in a register across
// the kernel's loop: the mma.sync forward's K and V copies, a loop of
// swizzle arithmetic per 16 bytes before, become 16 cp.async a KV block
// from two addresses.
//
//===----------------------------------------------------------------------===//

#include "TileLowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::fagpu;

namespace {

/// One 16-byte chunk a thread copies.
struct Chunk {
  Value inside;        // its source row is below the limit (i1)
  Value readAddress;   // its global address where inside, else row 0's (i64)
  Value sharedPointer; // where it goes in the tile
};

/// Calls `body` for each chunk of the tile at `dest` a thread copies from
/// the source rows `firstRow` + row; a chunk is inside where that row is
/// below `limit`.
void forEachChunk(ConversionPatternRewriter &rewriter, Location loc,
                  SharedTileType tile, Value dest, Value sourceMemref,
                  Value firstRow, Value limit,
                  function_ref<void(const Chunk &)> body) {
  int64_t perChunk = 16 / tile.getElementBytes();
  int64_t chunksPerRow = tile.getCols() / perChunk;
  int64_t chunks = tile.getRows() * chunksPerRow;
  IndexArith ix{rewriter, loc};
  auto c = [&](int64_t v) {
    return arith::ConstantIndexOp::create(rewriter, loc, v);
  };
  Value zero = c(0);
  // Whether source row firstRow + row is below the limit.
  auto insideOf = [&](Value row) {
    return arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::ult,
                                 ix.add(firstRow, row), limit);
  };

  Value tid = emitGroupThreadId(rewriter, loc);
  int64_t threads = knownGroupThreads(rewriter);
  if (!threads || threads % chunksPerRow != 0 || chunks % threads != 0) {
    // Named first: argument evaluation order is the compiler's choice, and
    // the IR's order should not be.
    Value step = emitGroupThreads(rewriter, loc);
    Value end = c(chunks);
    auto loop = scf::ForOp::create(rewriter, loc, tid, end, step);
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToStart(loop.getBody());
    Value chunk = loop.getInductionVar();
    Value row = ix.div(chunk, chunksPerRow);
    Value col = ix.mul(ix.rem(chunk, chunksPerRow), perChunk);
    Value inside = insideOf(row);
    Value readRow = arith::SelectOp::create(rewriter, loc, inside,
                                            ix.add(firstRow, row), zero);
    body({inside,
          emitGlobalAddress(rewriter, loc, sourceMemref, {readRow, col}),
          emitSharedAddress(
              rewriter, loc, dest,
              emitSharedByteOffset(rewriter, loc, tile, row, col))});
    return;
  }

  // Unrolled: the thread's chunks are rows i * rowStep below its first.
  int64_t rowStep = threads / chunksPerRow;
  SmallVector<std::pair<int64_t, int64_t>> starts;
  for (int64_t t = 0; t < threads; ++t)
    starts.push_back({t / chunksPerRow, t % chunksPerRow * perChunk});
  Value threadRow = ix.div(tid, chunksPerRow);
  Value col = ix.mul(ix.rem(tid, chunksPerRow), perChunk);
  ThreadSharedOffsets offsets(tile, threadRow, col, starts);
  Value firstAddress = emitGlobalAddress(rewriter, loc, sourceMemref,
                                         {ix.add(firstRow, threadRow), col});
  auto meta =
      memref::ExtractStridedMetadataOp::create(rewriter, loc, sourceMemref);
  int64_t elementBytes =
      cast<MemRefType>(sourceMemref.getType()).getElementTypeBitWidth() / 8;
  Value rowStepBytes = arith::IndexCastOp::create(
      rewriter, loc, rewriter.getI64Type(),
      ix.mul(meta.getStrides()[0], rowStep * elementBytes));
  Value rowZeroAddress =
      emitGlobalAddress(rewriter, loc, sourceMemref, {zero, col});
  for (int64_t i = 0; i < chunks / threads; ++i) {
    Value inside = insideOf(ix.add(threadRow, i * rowStep));
    Value address = firstAddress;
    if (i > 0)
      address = arith::AddIOp::create(
          rewriter, loc, firstAddress,
          arith::MulIOp::create(
              rewriter, loc, rowStepBytes,
              arith::ConstantIntOp::create(rewriter, loc, i, 64)));
    body({inside,
          arith::SelectOp::create(rewriter, loc, inside, address,
                                  rowZeroAddress),
          offsets.pointer(rewriter, loc, dest, i * rowStep, 0)});
  }
}

Value globalPointer(OpBuilder &b, Location loc, Value address) {
  return LLVM::IntToPtrOp::create(
      b, loc, LLVM::LLVMPointerType::get(b.getContext(), 1), address);
}

struct LowerCopyToShared : OpConversionPattern<CopyToSharedOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(CopyToSharedOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    SharedTileType tile = op.getDest().getType();
    auto chunkType =
        VectorType::get({16 / tile.getElementBytes()}, tile.getElementType());
    // Nobody reads the tile's previous contents any more.
    gpu::BarrierOp::create(rewriter, loc);
    forEachChunk(rewriter, loc, tile, adaptor.getDest(), adaptor.getSource(),
                 adaptor.getRow(), adaptor.getLimit(), [&](const Chunk &chunk) {
                   auto ifInside =
                       scf::IfOp::create(rewriter, loc, chunkType, chunk.inside,
                                         /*withElseRegion=*/true);
                   rewriter.setInsertionPointToStart(ifInside.thenBlock());
                   Value loaded = LLVM::LoadOp::create(
                       rewriter, loc, chunkType,
                       globalPointer(rewriter, loc, chunk.readAddress),
                       /*alignment=*/16);
                   scf::YieldOp::create(rewriter, loc, loaded);
                   rewriter.setInsertionPointToStart(ifInside.elseBlock());
                   Value zeros = arith::ConstantOp::create(
                       rewriter, loc, chunkType,
                       rewriter.getZeroAttr(chunkType));
                   scf::YieldOp::create(rewriter, loc, zeros);
                   rewriter.setInsertionPointAfter(ifInside);
                   LLVM::StoreOp::create(rewriter, loc, ifInside.getResult(0),
                                         chunk.sharedPointer,
                                         /*alignment=*/16);
                 });
    publishSharedWrites(rewriter, loc);
    rewriter.eraseOp(op);
    return success();
  }
};

struct LowerAsyncCopyToShared : OpConversionPattern<AsyncCopyToSharedOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(AsyncCopyToSharedOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    SharedTileType tile = op.getDest().getType();
    forEachChunk(
        rewriter, loc, tile, adaptor.getDest(), adaptor.getSource(),
        adaptor.getRow(), adaptor.getLimit(), [&](const Chunk &chunk) {
          // Rows past the end read nothing (source size 0: zero fill), from
          // a valid address (row 0's).
          Value none = arith::ConstantIntOp::create(rewriter, loc, 0, 32);
          Value all = arith::ConstantIntOp::create(rewriter, loc, 16, 32);
          Value bytes =
              arith::SelectOp::create(rewriter, loc, chunk.inside, all, none);
          NVVM::CpAsyncOp::create(
              rewriter, loc, chunk.sharedPointer,
              globalPointer(rewriter, loc, chunk.readAddress), 16,
              NVVM::LoadCacheModifierKind::CG, bytes);
        });
    rewriter.eraseOp(op);
    return success();
  }
};

struct LowerCommitSharedCopies : OpConversionPattern<CommitSharedCopiesOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(CommitSharedCopiesOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<NVVM::CpAsyncCommitGroupOp>(op);
    return success();
  }
};

struct LowerWaitSharedCopies : OpConversionPattern<WaitSharedCopiesOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(WaitSharedCopiesOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    NVVM::CpAsyncWaitGroupOp::create(rewriter, op.getLoc(), op.getPending());
    publishSharedWrites(rewriter, op.getLoc());
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

void mlir::fagpu::populateSharedCopiesToNVVMPatterns(
    TileTypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<LowerCopyToShared, LowerAsyncCopyToShared,
               LowerCommitSharedCopies, LowerWaitSharedCopies>(
      converter, patterns.getContext());
}
