//===- FAGPUToNVVM.cpp - GPU tile level -> per-thread NVVM code -----------===//
//
// Register tiles become each thread's registers (a vector in the layout's
// register order; their ops: RegisterTilesToNVVM.cpp); shared tiles are
// placed in the kernel's dynamic shared memory and filled here; register
// tiles go to memory in StoreTileToNVVM.cpp and TileAccessToNVVM.cpp.
// Matrix products: MmaToWGMMA.cpp; barriers and TMA: BarriersToNVVM.cpp.
//
//===----------------------------------------------------------------------===//

#include "fa/Conversion/Passes.h"

#include "TileLowering.h"
#include "fa/Conversion/ApproximateMath.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/Patterns.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/DialectConversion.h"
#include "llvm/ADT/TypeSwitch.h"

namespace mlir {
namespace fa {
#define GEN_PASS_DEF_CONVERTFAGPUTONVVM
#include "fa/Conversion/Passes.h.inc"
} // namespace fa
} // namespace mlir

using namespace mlir;
using namespace mlir::fagpu;

namespace {

constexpr StringLiteral kSharedTilesGlobal = "__fa_shared_tiles";
constexpr StringLiteral kSharedOffsetAttr = "fagpu.shared_offset";

/// alloc_shared and alloc_barriers: the dynamic shared window plus the
/// offset assignSharedOffsets gave them.
template <typename AllocOp>
struct LowerAllocShared : OpConversionPattern<AllocOp> {
  using OpConversionPattern<AllocOp>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(AllocOp op, typename AllocOp::Adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto offset = op->template getAttrOfType<IntegerAttr>(kSharedOffsetAttr);
    if (!offset)
      return rewriter.notifyMatchFailure(op, "not placed");
    Location loc = op.getLoc();
    auto ptrType = LLVM::LLVMPointerType::get(op.getContext(), 3);
    Value base =
        LLVM::AddressOfOp::create(rewriter, loc, ptrType, kSharedTilesGlobal);
    rewriter.replaceOp(
        op, emitSharedAddress(rewriter, loc, base,
                              arith::ConstantIndexOp::create(rewriter, loc,
                                                             offset.getInt())));
    return success();
  }
};

struct LowerStage : OpConversionPattern<StageOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(StageOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value bytes = arith::MulIOp::create(
        rewriter, loc, adaptor.getIndex(),
        arith::ConstantIndexOp::create(
            rewriter, loc, op.getRing().getType().getStageStride()));
    rewriter.replaceOp(
        op, emitSharedAddress(rewriter, loc, adaptor.getRing(), bytes));
    return success();
  }
};

/// A block per tile reads its tile from the block ids: the tile grid's
/// statement (what fagpu-persistent-grid loops over) has nothing to lower.
struct LowerTileGrid : OpConversionPattern<TileGridOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(TileGridOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.eraseOp(op);
    return success();
  }
};

/// Places each function's shared tiles one after another (1024-byte
/// aligned, as swizzled TMA/WGMMA tiles need) and records the total on the
/// kernel as fa.shared_bytes.
static void assignSharedOffsets(gpu::GPUModuleOp module) {
  bool any = false;
  module.walk([&](gpu::GPUFuncOp func) {
    int64_t bytes =
        fagpu::placeSharedTiles(func, [&](Operation *alloc, int64_t offset) {
          alloc->setAttr(kSharedOffsetAttr,
                         IntegerAttr::get(
                             IntegerType::get(func.getContext(), 64), offset));
          any = true;
        });
    if (bytes > 0)
      func->setAttr(
          "fa.shared_bytes",
          IntegerAttr::get(IntegerType::get(func.getContext(), 64), bytes));
  });
  if (!any || module.lookupSymbol(kSharedTilesGlobal))
    return;
  OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
  auto type = LLVM::LLVMArrayType::get(b.getI8Type(), 0);
  LLVM::GlobalOp::create(b, module.getLoc(), type, /*isConstant=*/false,
                         LLVM::Linkage::External, kSharedTilesGlobal,
                         Attribute(), kSharedTileAlignment,
                         /*addrSpace=*/3);
}

/// Tensor-map parameters become the generic pointer their uses were given;
/// the kernel lists them in `fagpu.tensor_map_args`, from which
/// fa-finalize-nvvm-kernels makes them 128-byte by-value grid constants
/// once the function is an NVVM kernel (argument attributes do not survive
/// gpu-to-nvvm): TMA then reads each map from the parameter space, with no
/// copy in global memory per launch.
static void retypeTensorMapArgs(gpu::GPUFuncOp func) {
  MLIRContext *ctx = func.getContext();
  auto pointer = LLVM::LLVMPointerType::get(ctx);
  SmallVector<int64_t> maps;
  for (BlockArgument arg : func.getArguments()) {
    if (!isa<TensorMapType>(arg.getType()))
      continue;
    for (Operation *user : llvm::make_early_inc_range(arg.getUsers()))
      if (auto cast = dyn_cast<UnrealizedConversionCastOp>(user);
          cast && cast->getNumResults() == 1 &&
          cast->getResult(0).getType() == pointer) {
        cast->getResult(0).replaceAllUsesWith(arg);
        cast->erase();
      }
    arg.setType(pointer);
    maps.push_back(arg.getArgNumber());
  }
  if (maps.empty())
    return;
  func->setAttr(fa::kTensorMapArgsAttr, DenseI64ArrayAttr::get(ctx, maps));
  func.setFunctionType(FunctionType::get(ctx, func.getBody().getArgumentTypes(),
                                         func.getResultTypes()));
}

struct ConvertFAGPUToNVVMPass
    : fa::impl::ConvertFAGPUToNVVMBase<ConvertFAGPUToNVVMPass> {
  using ConvertFAGPUToNVVMBase::ConvertFAGPUToNVVMBase;
  void runOnOperation() override {
    gpu::GPUModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    assignSharedOffsets(module);

    TileTypeConverter converter(ctx);
    RewritePatternSet patterns(ctx);
    if (exp2OnFmaEvery < 0)
      return (void)(module.emitError()
                    << "fa-convert-fagpu-to-nvvm: exp2-on-fma-every must "
                       "be 0 or positive, got "
                    << int64_t(exp2OnFmaEvery)),
             signalPassFailure();
    populateRegisterTilesToNVVMPatterns(converter, patterns, exp2OnFmaEvery);
    patterns.add<LowerAllocShared<AllocSharedOp>,
                 LowerAllocShared<AllocBarriersOp>, LowerStage, LowerTileGrid>(
        converter, ctx);
    populateSharedCopiesToNVVMPatterns(converter, patterns);
    populateTileAccessToNVVMPatterns(converter, patterns, matrixStores);
    populateStoreTileToNVVMPatterns(converter, patterns);
    populateMmaToWGMMAPatterns(converter, patterns, descriptorsAtUse);
    populateMmaToMmaSyncPatterns(converter, patterns);
    populateBarriersToNVVMPatterns(converter, patterns);
    populateTurnsToNVVMPatterns(converter, patterns);

    ConversionTarget target(*ctx);
    target.addIllegalDialect<FAGPUDialect>();
    // Lowered after its regions, whose ops ask it for their thread group.
    target.addLegalOp<WarpSpecializeOp>();
    target.markUnknownOpDynamicallyLegal(
        [](Operation *op) { return !hasTileTypes(op); });
    scf::populateSCFStructuralTypeConversionsAndLegality(converter, patterns,
                                                         target);
    markSingleWarpProducers(module);
    if (failed(applyPartialConversion(module, target, std::move(patterns))))
      return signalPassFailure();
    lowerWarpSpecialize(module);
    module.walk(retypeTensorMapArgs);
  }
};

} // namespace
