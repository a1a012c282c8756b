//===- TileAccessToNVVM.cpp - Register tiles from and to memory -----------===//
//
// fagpu.load_tile: each thread loads, from global rows, the elements its
// registers hold (rows past the limit read as 0). fagpu.store_to_shared:
// each thread writes its registers into the swizzled shared tile, two
// 16-bit columns a store where the layout keeps them side by side, then the
// tile is published to the block and the tensor cores' async proxy.
//
//===----------------------------------------------------------------------===//

#include "TileLowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
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
    Value zero = arith::ConstantOp::create(rewriter, loc, element,
                                           rewriter.getZeroAttr(element));
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
      scf::YieldOp::create(rewriter, loc, zero);
      regs.push_back(ifInside.getResult(0));
    }
    auto vectorType =
        cast<VectorType>(getTypeConverter()->convertType(op.getType()));
    rewriter.replaceOp(op, packVector(rewriter, loc, vectorType, regs));
    return success();
  }
};

struct LowerStoreToShared : OpConversionPattern<StoreToSharedOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(StoreToSharedOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getValue().getType());
    SharedTileType tile = op.getDest().getType();
    TileLayout layout = getTileLayout(type);
    // Nobody reads the tile's previous contents any more (the products that
    // read it were waited for by every warp before this barrier).
    gpu::BarrierOp::create(rewriter, loc);
    ThreadPosition thread = ThreadPosition::get(rewriter, loc);
    auto [threadRow, threadCol] =
        emitThreadCoords(rewriter, loc, layout, thread);
    SmallVector<Value> regs = unpackVector(rewriter, loc, adaptor.getValue());
    // Column pairs go out as one 4-byte store (a 16-byte chunk never splits
    // a pair).
    bool paired = holdsColumnPairs(layout);
    Type element = type.getElementType();
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
                            /*alignment=*/paired ? 4 : 2);
    }
    publishSharedWrites(rewriter, loc);
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

void mlir::fagpu::populateTileAccessToNVVMPatterns(
    TileTypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<LowerLoadTile, LowerStoreToShared>(converter,
                                                  patterns.getContext());
}
