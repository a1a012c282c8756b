//===- TmaReductions.cpp - dQ's bulk reductions through TMA ---------------===//
//
// The backward's `dq-reduction=bulk` stages each dQ tile in a plain f32
// shared tile and adds it with one bulk reduction (rows back to back, the
// same byte order as dq_acc). A warp's store of a register pair then puts
// its eight rows in the same banks: the H200 profile put 150k of 834k stall
// samples on those stores (hd128, N = 8k). Here the staging tile takes the
// 128-byte swizzle, which spreads the rows over the banks, and the
// reduction goes through a tensor map of the destination, whose copy
// engine undoes the swizzle (`cp.reduce.async.bulk.tensor`), one box of 32
// columns at a time. Where the limit is not provably the tensor's end (a
// runtime length read from another argument, a packed sequence's end), the
// staged rows past it are zeroed first, so that adding the whole box is
// exact. Passes.td has the contract.
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FAGPU/Transforms/Passes.h"

#include "KernelCopies.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "llvm/ADT/MapVector.h"

namespace mlir {
namespace fagpu {
#define GEN_PASS_DEF_TMAREDUCTIONS
#include "fa/Dialect/FAGPU/Transforms/Passes.h.inc"
} // namespace fagpu
} // namespace mlir

using namespace mlir;
using namespace mlir::fagpu;

namespace {

constexpr int64_t kSwizzleBytes = 128;

/// The row count of `arg`'s matrices as a value in the kernel: the
/// constant, or memref.dim of the argument.
bool isRowCount(Value end, BlockArgument arg, int64_t dim) {
  auto type = cast<MemRefType>(arg.getType());
  if (!type.isDynamicDim(dim))
    return getConstantIntValue(end) == type.getDimSize(dim);
  auto read = end.getDefiningOp<memref::DimOp>();
  return read && read.getSource() == arg &&
         getConstantIntValue(read.getIndex()) == dim;
}

/// Whether `limit` is min(row + rows, the row count): `row + rows`, or
/// `row + min(count - row, rows)` as the tiling cuts a tile at the tensor's
/// end. TMA drops the box rows past the tensor's end, so it then adds
/// exactly rows [row, limit) (a valid limit never passes the row count).
bool isTileToTheEnd(Value limit, Value row, int64_t rows, BlockArgument arg,
                    int64_t dim) {
  auto add = limit.getDefiningOp<arith::AddIOp>();
  if (!add || (add.getLhs() != row && add.getRhs() != row))
    return false;
  Value size = add.getLhs() == row ? add.getRhs() : add.getLhs();
  auto isRows = [&](Value v) { return getConstantIntValue(v) == rows; };
  if (isRows(size))
    return true;
  auto min = size.getDefiningOp<arith::MinSIOp>();
  if (!min)
    return false;
  for (auto [left, tileRows] : {std::pair(min.getLhs(), min.getRhs()),
                                std::pair(min.getRhs(), min.getLhs())}) {
    auto sub = left.getDefiningOp<arith::SubIOp>();
    if (isRows(tileRows) && sub && sub.getRhs() == row &&
        isRowCount(sub.getLhs(), arg, dim))
      return true;
  }
  return false;
}

struct TmaReductionsPass : fagpu::impl::TmaReductionsBase<TmaReductionsPass> {
  void runOnOperation() override {
    for (gpu::GPUFuncOp kernel : getOperation().getOps<gpu::GPUFuncOp>())
      if (failed(rewrite(kernel)))
        return signalPassFailure();
  }

  /// A TMA destination: the argument, its outer coordinates, and the store
  /// of the value whose rows past the limit must be zeroed first (none
  /// where the limit is the tensor's end).
  struct Destination {
    CopySource source;
    StoreToSharedOp zeroPastLimit;
  };

  /// Where `op` adds through TMA, if it can.
  std::optional<Destination> tmaDestination(ReduceToGlobalOp op) {
    SharedTileType tile = op.getTile().getType();
    MemRefType dest = op.getDest().getType();
    if (tile.getRows() > 256 || dest.getDimSize(1) != tile.getCols() ||
        (tile.getCols() * 4) % kSwizzleBytes != 0)
      return std::nullopt;
    std::string why;
    FailureOr<CopySource> source =
        getRowSource(op.getDest(), /*limit=*/Value(), nullptr, why);
    if (failed(source))
      return std::nullopt;
    int64_t rowDim = cast<MemRefType>(source->arg.getType()).getRank() - 2;
    if (isTileToTheEnd(op.getLimit(), op.getRow(), tile.getRows(), source->arg,
                       rowDim))
      return Destination{*source, nullptr};
    // Zeros added past the limit leave the sums alone only if nothing but
    // these reductions writes the argument in this kernel; they are put in
    // the value the tile was last stored from, in this block.
    StoreToSharedOp store = lastStoreTo(op);
    if (!store || !onlyReducedInto(source->arg))
      return std::nullopt;
    return Destination{*source, store};
  }

  /// The `fagpu.store_to_shared` of `op`'s tile before `op` in its block.
  static StoreToSharedOp lastStoreTo(ReduceToGlobalOp op) {
    for (Operation *prev = op->getPrevNode(); prev; prev = prev->getPrevNode())
      if (auto store = dyn_cast<StoreToSharedOp>(prev);
          store && store.getDest() == op.getTile())
        return store;
    return nullptr;
  }

  /// Whether every use of `arg` (through subviews and size reads) is the
  /// destination of a `fagpu.reduce_to_global`.
  static bool onlyReducedInto(Value arg) {
    return llvm::all_of(arg.getUsers(), [](Operation *user) {
      if (isa<memref::DimOp>(user))
        return true;
      if (auto view = dyn_cast<memref::SubViewOp>(user))
        return onlyReducedInto(view.getResult());
      return isa<ReduceToGlobalOp>(user);
    });
  }

  /// Zeroes the rows of the value `store` writes at and past `op`'s limit,
  /// in registers before the store.
  static void zeroPastLimit(ReduceToGlobalOp op, StoreToSharedOp store) {
    OpBuilder b(store);
    Location loc = op.getLoc();
    Value value = store.getValue();
    auto type = cast<RankedTensorType>(value.getType());
    auto like = [&](Type element) {
      return RankedTensorType::get(type.getShape(), element,
                                   type.getEncoding());
    };
    Value rows = TileCoordsOp::create(b, loc, like(b.getIndexType()),
                                      /*dim=*/uint64_t(0));
    Value valid = arith::SubIOp::create(b, loc, op.getLimit(), op.getRow());
    Value bound =
        tensor::SplatOp::create(b, loc, like(b.getIndexType()), valid);
    Value inside =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, rows, bound);
    Value zero = arith::ConstantOp::create(
        b, loc, type,
        SplatElementsAttr::get(type, b.getZeroAttr(type.getElementType())));
    Value masked = arith::SelectOp::create(b, loc, inside, value, zero);
    store.getValueMutable().assign(masked);
  }

  LogicalResult rewrite(gpu::GPUFuncOp kernel) {
    // Per staging tile, all its reductions or none: the tile has one type.
    llvm::MapVector<Operation *, SmallVector<ReduceToGlobalOp>> byTile;
    kernel.walk([&](ReduceToGlobalOp op) {
      if (auto alloc = op.getTile().getDefiningOp<AllocSharedOp>())
        byTile[alloc].push_back(op);
    });
    DenseMap<std::pair<Value, int64_t>, Value> maps;
    for (auto &[alloc, reductions] : byTile) {
      if (llvm::any_of(alloc->getUsers(), [](Operation *user) {
            return !isa<StoreToSharedOp, ReduceToGlobalOp>(user);
          }))
        continue;
      SmallVector<Destination> destinations;
      for (ReduceToGlobalOp op : reductions)
        if (std::optional<Destination> destination = tmaDestination(op))
          destinations.push_back(*destination);
      if (destinations.size() != reductions.size())
        continue;
      auto tile = cast<SharedTileType>(alloc->getResult(0).getType());
      alloc->getResult(0).setType(
          SharedTileType::get(tile.getContext(), tile.getShape(),
                              tile.getElementType(), kSwizzleBytes));
      for (auto [op, destination] : llvm::zip(reductions, destinations)) {
        const CopySource &source = destination.source;
        if (destination.zeroPastLimit)
          zeroPastLimit(op, destination.zeroPastLimit);
        Value map = mapOf(kernel, source.arg, tile.getRows(), maps);
        if (!map)
          return failure();
        OpBuilder b(op);
        SmallVector<Value> coords(source.outer);
        coords.push_back(op.getRow());
        TmaReduceOp::create(b, op.getLoc(), map, coords, op.getTile(),
                            op.getBands());
        op.erase();
      }
    }
    return success();
  }

  /// The tensor-map parameter of `arg` with boxes of `rows` x 128 bytes.
  Value mapOf(gpu::GPUFuncOp kernel, BlockArgument arg, int64_t rows,
              DenseMap<std::pair<Value, int64_t>, Value> &maps) {
    Value &map = maps[{arg, rows}];
    if (!map)
      map = addTensorMapParameter(kernel, arg, rows, kSwizzleBytes);
    return map;
  }
};

} // namespace
