//===- KernelCopies.cpp - The shared-memory copies of a kernel ------------===//

#include "KernelCopies.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "llvm/ADT/SmallPtrSet.h"

using namespace mlir;
using namespace mlir::fagpu;

/// Whether `size` is dim `dim` of kernel argument `arg`: the constant when
/// static, a memref.dim of it when known at run time only.
static bool isSizeOf(OpFoldResult size, BlockArgument arg, int64_t dim) {
  auto type = cast<MemRefType>(arg.getType());
  if (!type.isDynamicDim(dim))
    return getConstantIntValue(size) == type.getDimSize(dim);
  auto value = dyn_cast<Value>(size);
  auto read = value ? value.getDefiningOp<memref::DimOp>() : nullptr;
  return read && read.getSource() == arg &&
         getConstantIntValue(read.getIndex()) == dim;
}

FailureOr<CopySource> mlir::fagpu::getRowSource(Value rows, Value limit,
                                                Block *body, std::string &why) {
  auto view = rows.getDefiningOp<memref::SubViewOp>();
  auto arg = view ? dyn_cast<BlockArgument>(view.getSource()) : nullptr;
  if (!arg || !isa<gpu::GPUFuncOp>(arg.getOwner()->getParentOp())) {
    why = "reads a subview of a kernel argument";
    return failure();
  }
  auto type = cast<MemRefType>(arg.getType());
  int64_t rank = type.getRank();
  ArrayRef<int64_t> sizes = view.getStaticSizes();
  SmallVector<OpFoldResult> mixedSizes = view.getMixedSizes();
  bool unitOuter =
      llvm::all_of(sizes.drop_back(2), [](int64_t s) { return s == 1; });
  bool wholeRows = isSizeOf(mixedSizes[rank - 2], arg, rank - 2) &&
                   isSizeOf(mixedSizes[rank - 1], arg, rank - 1) &&
                   view.getStaticOffsets()[rank - 2] == 0 &&
                   view.getStaticOffsets()[rank - 1] == 0;
  if (!type.getLayout().isIdentity() || !unitOuter || !wholeRows ||
      llvm::any_of(view.getStaticStrides(), [](int64_t s) { return s != 1; })) {
    why = "reads whole rows of one matrix of a dense kernel argument";
    return failure();
  }
  if (limit && !isSizeOf(limit, arg, rank - 2)) {
    why = "zero-fills past the tensor's end, so its limit must be the row "
          "count " +
          (type.isDynamicDim(rank - 2)
               ? "(memref.dim of the kernel argument, dim " +
                     std::to_string(rank - 2) + ")"
               : std::to_string(type.getDimSize(rank - 2)));
    return failure();
  }
  // A producer computes the coordinates too: then the (batch, head)
  // offsets must be known before the loops. Constants go to the kernel's
  // entry.
  CopySource source{arg, {}};
  Block &entry = arg.getOwner()->getParentOp()->getRegion(0).front();
  SmallVector<OpFoldResult> offsets = view.getMixedOffsets();
  for (OpFoldResult offset : ArrayRef(offsets).drop_back(2)) {
    if (auto value = dyn_cast<Value>(offset)) {
      if (body && value.getParentBlock() != &entry &&
          value.getParentBlock() != body) {
        why = "needs its matrix's offsets computed before the loops";
        return failure();
      }
      source.outer.push_back(value);
      continue;
    }
    OpBuilder b = OpBuilder::atBlockBegin(&entry);
    source.outer.push_back(arith::ConstantIndexOp::create(
        b, view.getLoc(), *getConstantIntValue(offset)));
  }
  return source;
}

FailureOr<CopySource> mlir::fagpu::getCopySource(CopyToSharedOp copy,
                                                 Block &body) {
  std::string why;
  FailureOr<CopySource> source =
      getRowSource(copy.getSource(), copy.getLimit(), &body, why);
  if (failed(source))
    return copy.emitError() << "a TMA copy " << why;
  return source;
}

FailureOr<KernelCopies> mlir::fagpu::collectKernelCopies(gpu::GPUFuncOp kernel,
                                                         Block &onceBlock,
                                                         Block &loopBlock) {
  KernelCopies copies;
  Block &entry = kernel.front();
  WalkResult walk = kernel.walk([&](CopyToSharedOp copy) {
    Operation *parent = copy->getParentOp();
    if (copy->getBlock() == &onceBlock) {
      copies.once.push_back(copy);
      return WalkResult::advance();
    }
    auto loop = dyn_cast<scf::ForOp>(parent);
    if (!loop || loop->getBlock() != &loopBlock) {
      copy.emitError() << "fagpu-warp-specialize takes copies at the "
                          "kernel's top level (its tile loop's body in a "
                          "persistent kernel) or in the loops there (or "
                          "in the loops of one loop there)";
      return WalkResult::interrupt();
    }
    if (copies.loops.empty() || copies.loops.back() != loop)
      copies.loops.push_back(loop);
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  for (auto [i, loop] : llvm::enumerate(copies.loops)) {
    SmallVector<AllocSharedOp> tiles;
    for (CopyToSharedOp copy : loop.getBody()->getOps<CopyToSharedOp>()) {
      auto alloc = copy.getDest().getDefiningOp<AllocSharedOp>();
      if (!alloc || alloc->getBlock() != &entry)
        return copy.emitError() << "the tile must be allocated at the "
                                   "kernel's top level";
      tiles.push_back(alloc);
    }
    if (llvm::SmallPtrSet<Operation *, 4>(tiles.begin(), tiles.end())
            .size() != tiles.size())
      return loop.emitError() << "each copy of a KV loop needs a tile of "
                                 "its own (one ring per tile)";
    if (i == 0)
      copies.looped = tiles;
    else if (tiles != copies.looped)
      return loop.emitError() << "every KV loop must copy the same tiles "
                                 "in the same order";
    std::optional<int64_t> step = getConstantIntValue(loop.getStep());
    if (!step || *step != 1 ||
        loop.getNumResults() != loop.getInitArgs().size())
      return loop.emitError() << "fagpu-warp-specialize takes loops of "
                                 "step 1";
  }
  return copies;
}

SetVector<Operation *> mlir::fagpu::sliceInLoop(scf::ForOp loop,
                                                ValueRange values) {
  SetVector<Operation *> slice;
  BackwardSliceOptions options;
  options.filter = [&](Operation *op) { return loop->isProperAncestor(op); };
  for (Value v : values)
    if (Operation *def = v.getDefiningOp(); def && loop->isProperAncestor(def))
      (void)getBackwardSlice(def, &slice, options), slice.insert(def);
  return slice;
}

scf::ForOp mlir::fagpu::findLoopOfCopyingLoops(Block &block) {
  for (auto outer : block.getOps<scf::ForOp>())
    for (auto inner : outer.getBody()->getOps<scf::ForOp>())
      if (!inner.getBody()->getOps<CopyToSharedOp>().empty())
        return outer;
  return nullptr;
}

Value mlir::fagpu::addTensorMapParameter(gpu::GPUFuncOp kernel,
                                         BlockArgument arg, int64_t rows,
                                         int64_t rowBytes) {
  MLIRContext *ctx = kernel.getContext();
  auto memref = cast<MemRefType>(arg.getType());
  auto type = TensorMapType::get(
      ctx, memref, rows, rowBytes / (memref.getElementTypeBitWidth() / 8));
  unsigned index = kernel.getNumArguments();
  if (failed(kernel.insertArgument(
          index, type,
          DictionaryAttr::get(
              ctx, {NamedAttribute(StringAttr::get(ctx, "fagpu.tensor_map_of"),
                                   IntegerAttr::get(IntegerType::get(ctx, 64),
                                                    arg.getArgNumber()))}),
          kernel.getLoc())))
    return nullptr;
  return kernel.getArgument(index);
}

void mlir::fagpu::consumeRingTiles(
    OpBuilder &b, scf::ForOp loop, ArrayRef<Value> rings, Value barriers,
    int64_t depth, function_ref<Value(int64_t, Value)> fullIndex,
    function_ref<Value(int64_t, Value)> emptyIndex) {
  Location loc = loop.getLoc();
  Block *block = loop.getBody();
  Value it = loop.getRegionIterArgs().back();
  b.setInsertionPointToStart(block);
  Value stage = arith::RemUIOp::create(
      b, loc, it, arith::ConstantIndexOp::create(b, loc, depth));
  Value round = arith::DivUIOp::create(
      b, loc, it, arith::ConstantIndexOp::create(b, loc, depth));
  SmallVector<CopyToSharedOp> loopCopies(block->getOps<CopyToSharedOp>());
  for (auto [t, copy] : llvm::enumerate(loopCopies)) {
    Value tile = copy.getDest();
    // The first and last ops of the body (but the copy) using the tile.
    Operation *firstUse = nullptr, *lastUse = nullptr;
    for (Operation &op : *block) {
      bool uses = false;
      op.walk([&](Operation *nested) {
        uses |= llvm::is_contained(nested->getOperands(), tile);
      });
      if (!uses || &op == copy.getOperation())
        continue;
      if (!firstUse)
        firstUse = &op;
      if (!lastUse || lastUse->isBeforeInBlock(&op))
        lastUse = &op;
    }
    b.setInsertionPoint(firstUse ? firstUse : block->getTerminator());
    WaitBarrierOp::create(b, loc, barriers, fullIndex(t, stage), round);
    Value view =
        StageOp::create(b, loc, copy.getDest().getType(), rings[t], stage);
    tile.replaceUsesWithIf(
        view, [&](OpOperand &use) { return loop->isAncestor(use.getOwner()); });
    copy.erase();
    b.setInsertionPointAfter(lastUse ? lastUse : view.getDefiningOp());
    ArriveBarrierOp::create(b, loc, barriers, emptyIndex(t, stage));
  }
}

bool mlir::fagpu::readsReadOnlyArgument(Operation *op, Block &entry) {
  auto load = dyn_cast<memref::LoadOp>(op);
  auto arg = load ? dyn_cast<BlockArgument>(load.getMemRef()) : nullptr;
  return arg && arg.getOwner() == &entry &&
         llvm::all_of(arg.getUsers(), [](Operation *user) {
           return isa<memref::LoadOp, memref::DimOp>(user);
         });
}
