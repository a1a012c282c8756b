//===- BarriersToNVVM.cpp - mbarriers, TMA, warp specialization -----------===//
//
// The producer/consumer protocol of the Hopper kernels: mbarrier arrays in
// shared memory, TMA copies whose bytes complete on them, and the split of
// the block into warpgroups that resize their registers. Single-issue ops
// (TMA, expect-bytes arrivals) run on the first thread of the executing
// group; a warp's arrival on lane 0.
//
//===----------------------------------------------------------------------===//

#include "TileLowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::fagpu;

namespace {

Value indexConst(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

Value i32Of(OpBuilder &b, Location loc, Value index) {
  return arith::IndexCastUIOp::create(b, loc, b.getI32Type(), index);
}

/// The address of barrier `index` of an array at `base`.
Value barrierAddress(OpBuilder &b, Location loc, Value base, Value index) {
  return emitSharedAddress(
      b, loc, base,
      arith::MulIOp::create(b, loc, index, indexConst(b, loc, 8)));
}

struct LowerInitBarriers : OpConversionPattern<InitBarriersOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(InitBarriersOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    onFirstThreadOfGroup(rewriter, loc, [&] {
      for (auto [i, arrivals] : llvm::enumerate(op.getArrivals())) {
        // One op per statement: argument evaluation order is unspecified.
        Value count = arith::ConstantIntOp::create(rewriter, loc, arrivals, 32);
        Value address = barrierAddress(rewriter, loc, adaptor.getBarriers(),
                                       indexConst(rewriter, loc, i));
        NVVM::MBarrierInitOp::create(rewriter, loc, address, count,
                                     /*predicate=*/Value());
      }
    });
    // The initialisation must be visible to the async proxy (TMA's
    // complete_tx) and to every thread before anyone uses the barriers.
    NVVM::FenceMbarrierInitOp::create(rewriter, loc);
    gpu::BarrierOp::create(rewriter, loc);
    rewriter.eraseOp(op);
    return success();
  }
};

struct LowerArriveExpectBytes : OpConversionPattern<ArriveExpectBytesOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ArriveExpectBytesOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    onFirstThreadOfGroup(rewriter, loc, [&] {
      Value bytes =
          arith::ConstantIntOp::create(rewriter, loc, op.getBytes(), 32);
      Value address = barrierAddress(rewriter, loc, adaptor.getBarriers(),
                                     adaptor.getIndex());
      NVVM::MBarrierArriveExpectTxOp::create(
          rewriter, loc, /*res=*/Type(), address, bytes,
          NVVM::MemScopeKind::CTA, /*relaxed=*/false, /*predicate=*/Value());
    });
    rewriter.eraseOp(op);
    return success();
  }
};

struct LowerTmaLoad : OpConversionPattern<TmaLoadOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(TmaLoadOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    TensorMapType map = op.getMap().getType();
    SharedTileType tile = op.getTile().getType();
    onFirstThreadOfGroup(rewriter, loc, [&] {
      Value barrier = barrierAddress(rewriter, loc, adaptor.getBarriers(),
                                     adaptor.getIndex());
      // Coordinates innermost first: column, row, then the outer dims.
      SmallVector<Value> coords = {Value()};
      for (Value c : llvm::reverse(adaptor.getCoords()))
        coords.push_back(i32Of(rewriter, loc, c));
      // One box per column band of a swizzle span, each band [rows x span]
      // of the tile (swizzledByteOffset's band order).
      int64_t bandBytes = tile.getRows() * tile.getSwizzle();
      for (int64_t band = 0; band * map.getBoxCols() < tile.getCols(); ++band) {
        coords[0] = arith::ConstantIntOp::create(rewriter, loc,
                                                 band * map.getBoxCols(), 32);
        // The block's own shared memory, addressed as shared::cluster
        // (what the instruction takes without a cluster launch, too).
        Value dest = LLVM::AddrSpaceCastOp::create(
            rewriter, loc,
            LLVM::LLVMPointerType::get(
                rewriter.getContext(),
                static_cast<unsigned>(NVVM::NVVMMemorySpace::SharedCluster)),
            emitSharedAddress(rewriter, loc, adaptor.getTile(),
                              indexConst(rewriter, loc, band * bandBytes)));
        NVVM::CpAsyncBulkTensorGlobalToSharedClusterOp::create(
            rewriter, loc, dest, adaptor.getMap(), coords, barrier,
            /*im2colOffsets=*/ValueRange(), /*multicastMask=*/Value(),
            /*l2CacheHint=*/Value(), NVVM::TMALoadMode::TILE,
            /*isCTAOnly=*/false, /*group=*/nullptr, /*predicate=*/Value());
      }
    });
    rewriter.eraseOp(op);
    return success();
  }
};

struct LowerTmaReduce : OpConversionPattern<TmaReduceOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(TmaReduceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    TensorMapType map = op.getMap().getType();
    SharedTileType tile = op.getTile().getType();
    int64_t bands = op.getBands();
    if (failed(checkBandIssuers(rewriter, op, bands)))
      return failure();
    // The first thread of warpgroup g issues band g's boxes.
    Value thread = emitGroupThreadId(rewriter, loc);
    Value inGroup = arith::RemUIOp::create(rewriter, loc, thread,
                                           indexConst(rewriter, loc, 128));
    Value warpgroup = arith::DivUIOp::create(rewriter, loc, thread,
                                             indexConst(rewriter, loc, 128));
    Value first = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::eq,
                                        inGroup, indexConst(rewriter, loc, 0));
    Value inBands =
        arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::ult,
                              warpgroup, indexConst(rewriter, loc, bands));
    auto issues = scf::IfOp::create(
        rewriter, loc, arith::AndIOp::create(rewriter, loc, first, inBands));
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToStart(issues.thenBlock());
    // Coordinates innermost first: column, row, then the outer dims.
    SmallVector<Value> coords = {Value()};
    for (Value c : llvm::reverse(adaptor.getCoords()))
      coords.push_back(i32Of(rewriter, loc, c));
    // Box k is [rows x span] at k * rows * span (swizzledByteOffset's band
    // order), columns k * boxCols.
    int64_t boxesPerBand = tile.getCols() / map.getBoxCols() / bands;
    Value firstBox = arith::MulIOp::create(
        rewriter, loc, warpgroup, indexConst(rewriter, loc, boxesPerBand));
    for (int64_t k = 0; k < boxesPerBand; ++k) {
      Value box = arith::AddIOp::create(rewriter, loc, firstBox,
                                        indexConst(rewriter, loc, k));
      coords[0] = i32Of(
          rewriter, loc,
          arith::MulIOp::create(rewriter, loc, box,
                                indexConst(rewriter, loc, map.getBoxCols())));
      Value source = emitSharedAddress(
          rewriter, loc, adaptor.getTile(),
          arith::MulIOp::create(
              rewriter, loc, box,
              indexConst(rewriter, loc, tile.getRows() * tile.getSwizzle())));
      NVVM::CpAsyncBulkTensorReduceOp::create(
          rewriter, loc, adaptor.getMap(), source, NVVM::TMAReduxKind::ADD,
          NVVM::TMAStoreMode::TILE, coords, /*l2CacheHint=*/Value());
    }
    NVVM::CpAsyncBulkCommitGroupOp::create(rewriter, loc);
    rewriter.eraseOp(op);
    return success();
  }
};

struct LowerWaitBarrier : OpConversionPattern<WaitBarrierOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(WaitBarrierOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value parity = arith::RemUIOp::create(rewriter, loc, adaptor.getPhase(),
                                          indexConst(rewriter, loc, 2));
    // The suspend-time hint CUTLASS uses (ns); the op loops until done.
    Value ticks = arith::ConstantIntOp::create(rewriter, loc, 0x989680, 32);
    Value parity32 = i32Of(rewriter, loc, parity);
    Value address = barrierAddress(rewriter, loc, adaptor.getBarriers(),
                                   adaptor.getIndex());
    NVVM::MBarrierTryWaitParityOp::create(rewriter, loc, address, parity32,
                                          ticks);
    rewriter.eraseOp(op);
    return success();
  }
};

struct LowerArriveBarrier : OpConversionPattern<ArriveBarrierOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ArriveBarrierOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value zero = indexConst(rewriter, loc, 0);
    Value lane = emitLaneId(rewriter, loc);
    Value laneZero = arith::CmpIOp::create(
        rewriter, loc, arith::CmpIPredicate::eq, lane, zero);
    auto branch = scf::IfOp::create(rewriter, loc, laneZero);
    {
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointToStart(branch.thenBlock());
      NVVM::MBarrierArriveOp::create(rewriter, loc, rewriter.getI64Type(),
                                     barrierAddress(rewriter, loc,
                                                    adaptor.getBarriers(),
                                                    adaptor.getIndex()),
                                     /*count=*/Value());
    }
    rewriter.eraseOp(op);
    return success();
  }
};

struct LowerWarpgroupId : OpConversionPattern<WarpgroupIdOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(WarpgroupIdOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value warpgroupThreads = indexConst(rewriter, loc, 128);
    Value thread = emitGroupThreadId(rewriter, loc);
    rewriter.replaceOpWithNewOp<arith::DivUIOp>(op, thread, warpgroupThreads);
    return success();
  }
};

struct LowerNamedBarrierSync : OpConversionPattern<NamedBarrierSyncOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(NamedBarrierSyncOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value threads =
        arith::ConstantIntOp::create(rewriter, loc, op.getThreads(), 32);
    Value id = i32Of(rewriter, loc, adaptor.getId());
    NVVM::BarrierOp::create(rewriter, loc, TypeRange{}, id, threads,
                            /*reductionOp=*/nullptr,
                            /*reductionPredicate=*/Value());
    rewriter.eraseOp(op);
    return success();
  }
};

struct LowerNamedBarrierArrive : OpConversionPattern<NamedBarrierArriveOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(NamedBarrierArriveOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value threads =
        arith::ConstantIntOp::create(rewriter, loc, op.getThreads(), 32);
    Value id = i32Of(rewriter, loc, adaptor.getId());
    NVVM::BarrierArriveOp::create(rewriter, loc, id, threads);
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

void mlir::fagpu::populateBarriersToNVVMPatterns(TileTypeConverter &converter,
                                                 RewritePatternSet &patterns) {
  patterns
      .add<LowerInitBarriers, LowerArriveExpectBytes, LowerTmaLoad,
           LowerTmaReduce, LowerWaitBarrier, LowerArriveBarrier,
           LowerWarpgroupId, LowerNamedBarrierSync, LowerNamedBarrierArrive>(
          converter, patterns.getContext());
}

static constexpr StringLiteral kFirstWarpProduces = "fagpu.first_warp_produces";

void mlir::fagpu::markSingleWarpProducers(Operation *root) {
  root->walk([&](WarpSpecializeOp op) {
    // TMA loads, their byte counts and the waits before them: one thread
    // issues, any number may wait, so one warp does it all.
    WalkResult walk = op.getProducer().walk([](Operation *inner) {
      return WarpSpecializeOp::runsOnOneProducerWarp(inner)
                 ? WalkResult::advance()
                 : WalkResult::interrupt();
    });
    // (The verifier holds a producer beside a reducer or a transposer to
    // this.)
    if (op.hasReducer() || op.hasTransposer() ||
        (!walk.wasInterrupted() && op.getProducerWarpgroups() == 1))
      op->setAttr(kFirstWarpProduces, UnitAttr::get(op.getContext()));
  });
}

void mlir::fagpu::lowerWarpSpecialize(Operation *root) {
  SmallVector<WarpSpecializeOp> splits;
  root->walk([&](WarpSpecializeOp op) { splits.push_back(op); });
  for (WarpSpecializeOp op : splits) {
    OpBuilder b(op);
    Location loc = op.getLoc();
    Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
    Value isProducer = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::ult, tid,
        indexConst(b, loc, 128 * op.getProducerWarpgroups()));
    auto branch = scf::IfOp::create(b, loc, isProducer, /*withElse=*/true);
    auto fill = [&](Block *dest, Region &source, int64_t registers,
                    NVVM::SetMaxRegisterAction action) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(dest);
      NVVM::SetMaxRegisterOp::create(b, loc, registers, action);
      dest->getOperations().splice(std::prev(dest->end()),
                                   source.front().getOperations());
    };
    fill(branch.thenBlock(), op.getProducer(), op.getProducerRegisters(),
         NVVM::SetMaxRegisterAction::decrease);
    // The producer's other warps go straight to the end: waiting beside the
    // first, they would spin on the same barriers and take issue slots
    // from the compute warps of their schedulers (FA3 and FA4 leave them
    // idle too).
    if (op->hasAttr(kFirstWarpProduces)) {
      Block *then = branch.thenBlock();
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointAfter(&then->front()); // setmaxnreg
      // One op per statement: argument evaluation order is unspecified.
      Value warpSize = indexConst(b, loc, 32);
      Value producerTid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
      Value firstWarp = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                              producerTid, warpSize);
      auto only = scf::IfOp::create(b, loc, firstWarp,
                                    /*withElseRegion=*/op.hasReducer() ||
                                        op.hasTransposer());
      Block *body = only.thenBlock();
      body->getOperations().splice(
          std::prev(body->end()), then->getOperations(),
          std::next(only->getIterator()), std::prev(then->end()));
      // The reducer on the second warp.
      if (op.hasReducer()) {
        b.setInsertionPointToStart(only.elseBlock());
        Value secondWarp =
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                  producerTid, indexConst(b, loc, 64));
        auto reducer = scf::IfOp::create(b, loc, secondWarp);
        Block *reducerBody = reducer.thenBlock();
        reducerBody->getOperations().splice(
            std::prev(reducerBody->end()),
            op.getReducer().front().getOperations());
      }
      // The transposer on warps 1-3.
      if (op.hasTransposer()) {
        Block *transposer = only.elseBlock();
        transposer->getOperations().splice(
            std::prev(transposer->end()),
            op.getTransposer().front().getOperations());
      }
    }
    fill(branch.elseBlock(), op.getConsumers(), op.getConsumerRegisters(),
         NVVM::SetMaxRegisterAction::increase);
    op.erase();
  }
}
