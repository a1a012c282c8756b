//===- TurnsToNVVM.cpp - Sections that blocks run in a fixed order --------===//
//
// fagpu.wait_turn: the group's first thread spins on an acquire load (GPU
// scope) of the counter until it holds the turn, then the group syncs;
// fagpu.pass_turn: the group syncs, then its first thread adds 1 to the
// counter with release semantics (GPU scope, red.release.gpu). The release is
// cumulative: what the group's threads wrote before the sync is visible to
// whoever acquires the new count.
//
//===----------------------------------------------------------------------===//

#include "TileLowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::fagpu;

namespace {

/// GPU scope ("device" in LLVM's NVPTX sync scopes).
constexpr StringLiteral kGpuScope = "device";

/// The counter as a global pointer.
Value counterPointer(OpBuilder &b, Location loc, Value counters,
                     ValueRange indices) {
  Value address = emitGlobalAddress(b, loc, counters, indices);
  auto global = LLVM::LLVMPointerType::get(b.getContext(), /*addressSpace=*/1);
  return LLVM::IntToPtrOp::create(b, loc, global, address);
}

struct LowerWaitTurn : OpConversionPattern<WaitTurnOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(WaitTurnOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value turn = arith::IndexCastOp::create(
        rewriter, loc, rewriter.getI32Type(), adaptor.getTurn());
    onFirstThreadOfGroup(rewriter, loc, [&] {
      Value pointer = counterPointer(rewriter, loc, adaptor.getCounters(),
                                     adaptor.getIndices());
      auto spin =
          scf::WhileOp::create(rewriter, loc, TypeRange{}, ValueRange{});
      Block *before = rewriter.createBlock(&spin.getBefore());
      rewriter.setInsertionPointToStart(before);
      Value count = LLVM::LoadOp::create(
          rewriter, loc, rewriter.getI32Type(), pointer, /*alignment=*/4,
          /*isVolatile=*/false, /*isNonTemporal=*/false,
          /*isInvariant=*/false, /*isInvariantGroup=*/false,
          LLVM::AtomicOrdering::acquire, kGpuScope);
      Value waiting = arith::CmpIOp::create(
          rewriter, loc, arith::CmpIPredicate::ne, count, turn);
      scf::ConditionOp::create(rewriter, loc, waiting, ValueRange{});
      Block *after = rewriter.createBlock(&spin.getAfter());
      rewriter.setInsertionPointToStart(after);
      scf::YieldOp::create(rewriter, loc);
    });
    emitSync(rewriter, loc, SyncScope::block);
    rewriter.eraseOp(op);
    return success();
  }
};

struct LowerPassTurn : OpConversionPattern<PassTurnOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(PassTurnOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    emitSync(rewriter, loc, SyncScope::block);
    // One instruction: LLVM 22's NVPTX drops the ordering of an
    // `atomicrmw ... release` (it emits a relaxed atom.global.add).
    onFirstThreadOfGroup(rewriter, loc, [&] {
      Value address = emitGlobalAddress(rewriter, loc, adaptor.getCounters(),
                                        adaptor.getIndices());
      LLVM::InlineAsmOp::create(
          rewriter, loc, TypeRange{}, ValueRange{address},
          "red.release.gpu.global.add.u32 [$0], 1;", "l",
          /*has_side_effects=*/true, /*is_align_stack=*/false,
          LLVM::tailcallkind::TailCallKind::None,
          LLVM::AsmDialectAttr::get(rewriter.getContext(),
                                    LLVM::AsmDialect::AD_ATT),
          ArrayAttr());
    });
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

void mlir::fagpu::populateTurnsToNVVMPatterns(TileTypeConverter &converter,
                                              RewritePatternSet &patterns) {
  patterns.add<LowerWaitTurn, LowerPassTurn>(converter, patterns.getContext());
}
