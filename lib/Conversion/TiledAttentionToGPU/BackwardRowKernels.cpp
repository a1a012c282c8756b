//===- BackwardRowKernels.cpp - The backward's pre and post kernels -------===//
//
// The tiled backward (fa-tile-attention-grad) computes delta = rowsum(dO * O)
// and zeroes dQ's f32 accumulator before its forall, and casts dQ after it.
// Those ops become the two small kernels around the main one, lowered as
// they are: a warp per row (b, h, n) of their [B, Hq, Nq] iteration space,
// its lanes striding over the fourth loop, each linalg op's payload cloned
// per element. So what the IR says (a scale folded into the cast, another
// reduction) is what the kernels do.
//
//===----------------------------------------------------------------------===//

#include "BackwardRowKernels.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::fa;

namespace {

constexpr int64_t kRowsPerBlock = 4; // one warp each

/// The row kernels' index arithmetic, at one location.
struct RowArith {
  OpBuilder &b;
  Location loc;
  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value i32(int64_t v) { return arith::ConstantIntOp::create(b, loc, v, 32); }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value add(Value x, int64_t y) { return add(x, index(y)); }
  Value mul(Value x, int64_t y) {
    return arith::MulIOp::create(b, loc, x, index(y));
  }
  Value cmp(arith::CmpIPredicate pred, Value x, Value y) {
    return arith::CmpIOp::create(b, loc, pred, x, y);
  }
  Value minS(Value x, Value y) { return arith::MinSIOp::create(b, loc, x, y); }
  Value select(Value c, Value x, Value y) {
    return arith::SelectOp::create(b, loc, c, x, y);
  }
};

/// Lowers linalg.fill and linalg.generic ops over (b, h, n[, d]) loops for
/// one row: `batch`, `head`, `row` fixed, `lane` striding over d. Tensors
/// are kernel arguments (memrefs) or splats (a fill's value).
class RowLowering {
public:
  RowLowering(RowArith ix, Value batch, Value head, Value row, Value lane)
      : ix(ix), b(ix.b), batch(batch), head(head), row(row), lane(lane) {}

  void bind(Value tensor, Value memref) { memrefs[tensor] = memref; }
  LogicalResult lower(Operation &op);

private:
  LogicalResult lowerFill(linalg::FillOp fill);
  LogicalResult lowerGeneric(linalg::GenericOp generic);
  LogicalResult lowerParallel(linalg::GenericOp generic, int64_t dim);
  LogicalResult lowerReduction(linalg::GenericOp generic, int64_t dim);

  /// (b, h, n) or, with `d`, (b, h, n, d).
  SmallVector<Value> indices(Value d) {
    SmallVector<Value> at{batch, head, row};
    if (d)
      at.push_back(d);
    return at;
  }
  /// The kernel argument bound to `tensor`, which the payload `access`es.
  FailureOr<Value> memrefOf(Value tensor, Location loc, StringRef access) {
    if (Value memref = memrefs.lookup(tensor))
      return memref;
    return emitError(loc) << access << " a tensor that is not an argument of "
                                       "its row kernel (nor a fill)";
  }
  /// The element of `tensor` at indices(d).
  FailureOr<Value> load(Value tensor, Value d, Location loc);
  LogicalResult store(Value tensor, Value value, Value d, Location loc);
  /// A scalar from outside a payload: a constant, cloned here.
  FailureOr<Value> scalar(Value v, Location loc);
  /// The payload of `generic` on `args`; returns what it yields.
  FailureOr<SmallVector<Value>> clonePayload(linalg::GenericOp generic,
                                             ValueRange args);
  /// `body(d)` for d = lane + 32 i < dim (guarded where d may pass dim).
  LogicalResult forColumns(int64_t dim,
                           function_ref<LogicalResult(Value)> body);
  /// `body()` on lane 0.
  LogicalResult onLaneZero(function_ref<LogicalResult()> body);

  RowArith ix;
  OpBuilder &b;
  Value batch, head, row, lane;
  DenseMap<Value, Value> memrefs, splats;
  /// Row results that no kernel argument holds (delta before dLSE is taken
  /// from it): the row's value, which every lane has.
  DenseMap<Value, Value> rowValues;
};

FailureOr<Value> RowLowering::scalar(Value v, Location loc) {
  if (auto constant = v.getDefiningOp<arith::ConstantOp>())
    return b.clone(*constant)->getResult(0);
  return emitError(loc) << "a row kernel's payload reads constants and its "
                           "operands only";
}

FailureOr<Value> RowLowering::load(Value tensor, Value d, Location loc) {
  if (Value splat = splats.lookup(tensor))
    return splat;
  if (Value value = rowValues.lookup(tensor); value && !d)
    return value;
  FailureOr<Value> memref = memrefOf(tensor, loc, "reads");
  if (failed(memref))
    return failure();
  return memref::LoadOp::create(b, loc, *memref, indices(d)).getResult();
}

LogicalResult RowLowering::store(Value tensor, Value value, Value d,
                                 Location loc) {
  FailureOr<Value> memref = memrefOf(tensor, loc, "writes");
  if (failed(memref))
    return failure();
  memref::StoreOp::create(b, loc, value, *memref, indices(d));
  return success();
}

LogicalResult RowLowering::forColumns(int64_t dim,
                                      function_ref<LogicalResult(Value)> body) {
  for (int64_t d0 = 0; d0 < dim; d0 += 32) {
    Value d = ix.add(lane, d0);
    if (d0 + 32 <= dim) {
      if (failed(body(d)))
        return failure();
      continue;
    }
    auto inRange = scf::IfOp::create(
        b, ix.loc, ix.cmp(arith::CmpIPredicate::slt, d, ix.index(dim)), false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(inRange.thenBlock()->getTerminator());
    if (failed(body(d)))
      return failure();
  }
  return success();
}

LogicalResult RowLowering::onLaneZero(function_ref<LogicalResult()> body) {
  auto first = scf::IfOp::create(
      b, ix.loc, ix.cmp(arith::CmpIPredicate::eq, lane, ix.index(0)), false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(first.thenBlock()->getTerminator());
  return body();
}

FailureOr<SmallVector<Value>>
RowLowering::clonePayload(linalg::GenericOp generic, ValueRange args) {
  Block *body = generic.getBody();
  IRMapping map;
  for (auto [arg, value] : llvm::zip(body->getArguments(), args))
    if (value)
      map.map(arg, value);
  for (Operation &op : body->without_terminator()) {
    if (isa<linalg::IndexOp>(op))
      return op.emitError() << "a row kernel's payload does not read its "
                               "indices";
    for (Value operand : op.getOperands()) {
      if (map.contains(operand) || operand.getParentBlock() == body)
        continue;
      FailureOr<Value> s = scalar(operand, op.getLoc());
      if (failed(s))
        return failure();
      map.map(operand, *s);
    }
    b.clone(op, map);
  }
  SmallVector<Value> yielded;
  for (Value v : body->getTerminator()->getOperands())
    yielded.push_back(map.lookupOrDefault(v));
  return yielded;
}

LogicalResult RowLowering::lowerFill(linalg::FillOp fill) {
  FailureOr<Value> value = scalar(fill.getInputs()[0], fill.getLoc());
  if (failed(value))
    return failure();
  Value result = fill.getResult(0);
  splats[result] = *value;
  if (!memrefs.count(result))
    return success();
  auto type = cast<RankedTensorType>(result.getType());
  if (type.getRank() == 3)
    return onLaneZero(
        [&] { return store(result, *value, Value(), fill.getLoc()); });
  return forColumns(type.getDimSize(3), [&](Value d) {
    return store(result, *value, d, fill.getLoc());
  });
}

LogicalResult RowLowering::lowerParallel(linalg::GenericOp generic,
                                         int64_t dim) {
  Location loc = generic.getLoc();
  auto each = [&](Value d) -> LogicalResult {
    SmallVector<Value> args;
    for (OpOperand &operand : generic->getOpOperands()) {
      BlockArgument arg = generic.getMatchingBlockArgument(&operand);
      if (arg.use_empty()) {
        // An unread output (a tensor.empty destination) has no value.
        args.push_back(Value());
        continue;
      }
      bool full = generic.getMatchingIndexingMap(&operand).getNumResults() ==
                  generic.getNumLoops();
      FailureOr<Value> v = load(operand.get(), full ? d : Value(), loc);
      if (failed(v))
        return failure();
      args.push_back(*v);
    }
    FailureOr<SmallVector<Value>> yielded = clonePayload(generic, args);
    if (failed(yielded))
      return failure();
    for (auto [result, value] : llvm::zip(generic.getResults(), *yielded))
      if (failed(store(result, value, d, loc)))
        return failure();
    return success();
  };
  if (dim == 0)
    return onLaneZero([&] { return each(Value()); });
  return forColumns(dim, each);
}

LogicalResult RowLowering::lowerReduction(linalg::GenericOp generic,
                                          int64_t dim) {
  Location loc = generic.getLoc();
  SmallVector<Operation *> combiners;
  if (generic.getNumDpsInits() != 1 ||
      !matchReduction(generic.getRegionOutputArgs(), 0, combiners) ||
      combiners.size() != 1 || combiners[0]->getNumOperands() != 2)
    return generic.emitError() << "a row kernel reduces one output with one "
                                  "binary combiner";
  Operation *combiner = combiners[0];
  std::optional<TypedAttr> neutral = arith::getNeutralElement(combiner);
  if (!neutral)
    return generic.emitError() << "the row reduction's combiner has no "
                                  "neutral element";
  BlockArgument outArg = generic.getRegionOutputArgs()[0];
  // combine(x, y): the combiner with x for the carried value.
  auto combine = [&](Value x, Value y) {
    IRMapping map;
    for (Value operand : combiner->getOperands())
      map.map(operand, operand == outArg ? x : y);
    return b.clone(*combiner, map)->getResult(0);
  };
  // Each lane folds its columns into a partial, starting from the
  // combiner's neutral element; the warp combines the partials, then the
  // output's initial value.
  Value partial = arith::ConstantOp::create(b, loc, *neutral);
  for (int64_t d0 = 0; d0 < dim; d0 += 32) {
    Value d = ix.add(lane, d0);
    Value inRange;
    if (d0 + 32 > dim) {
      inRange = ix.cmp(arith::CmpIPredicate::slt, d, ix.index(dim));
      d = ix.minS(d, ix.index(dim - 1));
    }
    SmallVector<Value> args;
    for (OpOperand *input : generic.getDpsInputOperands()) {
      bool full = generic.getMatchingIndexingMap(input).getNumResults() ==
                  generic.getNumLoops();
      FailureOr<Value> v = load(input->get(), full ? d : Value(), loc);
      if (failed(v))
        return failure();
      args.push_back(*v);
    }
    args.push_back(partial);
    FailureOr<SmallVector<Value>> next = clonePayload(generic, args);
    if (failed(next))
      return failure();
    partial = inRange ? ix.select(inRange, (*next)[0], partial) : (*next)[0];
  }
  for (int64_t offset : {16, 8, 4, 2, 1}) {
    // Named first: argument evaluation order is the compiler's choice.
    Value distance = ix.i32(offset);
    Value width = ix.i32(32);
    Value other = gpu::ShuffleOp::create(b, loc, partial, distance, width,
                                         gpu::ShuffleMode::XOR)
                      .getShuffleResult();
    partial = combine(partial, other);
  }
  FailureOr<Value> init = load(generic.getDpsInits()[0], Value(), loc);
  if (failed(init))
    return failure();
  Value result = combine(*init, partial);
  if (!memrefs.count(generic.getResult(0))) {
    rowValues[generic.getResult(0)] = result;
    return success();
  }
  return onLaneZero(
      [&] { return store(generic.getResult(0), result, Value(), loc); });
}

LogicalResult RowLowering::lowerGeneric(linalg::GenericOp generic) {
  unsigned loops = generic.getNumLoops();
  auto iterators = generic.getIteratorTypesArray();
  bool parallelRows =
      (loops == 3 || loops == 4) &&
      llvm::all_of(ArrayRef(iterators).take_front(3),
                   [](auto t) { return t == utils::IteratorType::parallel; });
  bool reduction = loops == 4 && iterators[3] == utils::IteratorType::reduction;
  // Every operand is indexed by (b, h, n) or by all the loops.
  AffineMap identity = AffineMap::getMultiDimIdentityMap(loops, b.getContext());
  auto indexedByRows = [&](AffineMap map) {
    return map == identity || (loops == 4 && map == identity.getMajorSubMap(3));
  };
  if (!parallelRows ||
      !llvm::all_of(generic.getIndexingMapsArray(), indexedByRows))
    return generic.emitError()
           << "a row kernel lowers ops over (batch, head, row[, column]) "
              "loops whose operands are indexed by the rows or by all loops";
  int64_t dim = loops == 4 ? generic.getStaticLoopRanges()[3] : 0;
  if (ShapedType::isDynamic(dim))
    return generic.emitError() << "a row kernel needs a static row length";
  if (reduction)
    return lowerReduction(generic, dim);
  return lowerParallel(generic, dim);
}

LogicalResult RowLowering::lower(Operation &op) {
  if (auto fill = dyn_cast<linalg::FillOp>(op))
    return lowerFill(fill);
  if (auto generic = dyn_cast<linalg::GenericOp>(op))
    return lowerGeneric(generic);
  // Destinations and scalars: their users take what they need.
  if (isa<tensor::EmptyOp, arith::ConstantOp>(op))
    return success();
  return op.emitError() << "the backward's row kernels lower linalg.fill "
                           "and linalg.generic ops only";
}

/// Kernel `c.name + suffix` over `arguments` (tensors, in the runtime's
/// order) that lowers `ops` for each row of [B, Hq, Nq].
LogicalResult emitRowKernel(OpBuilder &b, gpu::GPUModuleOp module,
                            const AttentionKernelConfig &c, StringRef suffix,
                            StringRef kind, ArrayRef<Value> arguments,
                            ArrayRef<Operation *> ops) {
  for (Operation *op : ops)
    if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op)) {
      SmallVector<int64_t> ranges = linalgOp.getStaticLoopRanges();
      if (ranges.size() < 3 || ArrayRef(ranges).take_front(3) !=
                                   ArrayRef<int64_t>{c.batch, c.headsQ, c.seqQ})
        return op->emitError() << "a row kernel of the backward runs over "
                                  "the [batch, query heads, query rows] rows";
    }
  SmallVector<Type> types;
  for (Value v : arguments)
    types.push_back(memrefTypeOf(v.getType()));
  Location loc = ops.empty() ? module.getLoc() : ops.front()->getLoc();
  // Rows known at run time (packed sequences): so is the grid's x.
  int64_t rowBlocks = ShapedType::isDynamic(c.seqQ)
                          ? ShapedType::kDynamic
                          : (c.seqQ + kRowsPerBlock - 1) / kRowsPerBlock;
  gpu::GPUFuncOp func = createKernelFunc(
      b, loc, module, (c.name + suffix).str(), types, kind,
      {rowBlocks, c.headsQ, c.batch}, 32 * kRowsPerBlock, /*sharedBytes=*/0, c);
  OpBuilder::InsertionGuard guard(b);
  Block &entry = func.getBody().front();
  b.setInsertionPointToStart(&entry);
  gpu::ReturnOp::create(b, loc);
  b.setInsertionPointToStart(&entry);
  RowArith ix{b, loc};
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value warp = arith::DivUIOp::create(b, loc, tid, ix.index(32));
  Value lane = arith::RemUIOp::create(b, loc, tid, ix.index(32));
  Value row = ix.add(
      ix.mul(gpu::BlockIdOp::create(b, loc, gpu::Dimension::x), kRowsPerBlock),
      warp);
  Value head = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  Value batch = gpu::BlockIdOp::create(b, loc, gpu::Dimension::z);
  Value rows =
      ShapedType::isDynamic(c.seqQ)
          ? memref::DimOp::create(b, loc, entry.getArgument(0), 2).getResult()
          : ix.index(c.seqQ);
  auto inRows = scf::IfOp::create(
      b, loc, ix.cmp(arith::CmpIPredicate::slt, row, rows), false);
  b.setInsertionPoint(inRows.thenBlock()->getTerminator());
  RowLowering lowering(ix, batch, head, row, lane);
  for (auto [tensor, memref] : llvm::zip(arguments, entry.getArguments()))
    lowering.bind(tensor, memref);
  for (Operation *op : ops)
    if (failed(lowering.lower(*op)))
      return failure();
  return success();
}

/// The tensors `ops` read from outside them, in operand order (a tensor
/// read twice is listed twice: each read is its own kernel argument).
SmallVector<Value> readTensors(ArrayRef<Operation *> ops) {
  llvm::SmallPtrSet<Operation *, 8> inside(ops.begin(), ops.end());
  SmallVector<Value> reads;
  for (Operation *op : ops)
    for (Value operand : op->getOperands())
      if (isa<RankedTensorType>(operand.getType()) &&
          !inside.contains(operand.getDefiningOp()))
        reads.push_back(operand);
  return reads;
}

/// The tensors of `ops` (not destinations) that `isUser` uses, in order.
SmallVector<Value> writtenTensors(ArrayRef<Operation *> ops,
                                  function_ref<bool(Operation *)> isUser) {
  SmallVector<Value> writes;
  for (Operation *op : ops) {
    if (isa<tensor::EmptyOp>(op))
      continue;
    for (Value result : op->getResults())
      if (isa<RankedTensorType>(result.getType()) &&
          llvm::any_of(result.getUsers(), isUser))
        writes.push_back(result);
  }
  return writes;
}

/// The ops of `ops` that compute tensors: the sizes of dynamic ones (and
/// the grid's bounds) are the launch's, each row's indices its block's.
SmallVector<Operation *> tensorOps(ArrayRef<Operation *> ops) {
  return llvm::to_vector(llvm::make_filter_range(ops, [](Operation *op) {
    return llvm::any_of(op->getResultTypes(), llvm::IsaPred<RankedTensorType>);
  }));
}

/// Checks that `ops` read `reads` tensors and write `writes` (the
/// runtime's arguments `roles`) and emits their row kernel.
LogicalResult emitRowKernelFor(OpBuilder &b, gpu::GPUModuleOp module,
                               func::FuncOp func,
                               const AttentionKernelConfig &c, StringRef suffix,
                               StringRef kind, ArrayRef<Operation *> ops,
                               SmallVector<Value> reads, ArrayRef<Value> writes,
                               size_t expectedReads, StringRef roles) {
  if (reads.size() != expectedReads ||
      reads.size() + writes.size() !=
          static_cast<size_t>(llvm::count(roles, ',') + 1))
    return func.emitError()
           << "the backward's " << kind << " kernel takes (" << roles
           << "), the runtime's arguments; its ops read " << reads.size()
           << " tensors and write " << writes.size();
  llvm::append_range(reads, writes);
  return emitRowKernel(b, module, c, suffix, kind, reads, ops);
}

} // namespace

LogicalResult mlir::fa::emitBackwardPreKernel(OpBuilder &b,
                                              gpu::GPUModuleOp module,
                                              func::FuncOp func,
                                              scf::ForallOp forall,
                                              const AttentionKernelConfig &c) {
  SmallVector<Operation *> ops;
  for (Operation &op : func.getBody().front()) {
    if (&op == forall.getOperation())
      break;
    ops.push_back(&op);
  }
  ops = tensorOps(ops);
  // What the forall reads: delta and dQ's zeroed accumulator; with the
  // gradient of LSE, delta is less it.
  auto inForall = [&](Operation *user) { return forall->isAncestor(user); };
  SmallVector<Value> reads = readTensors(ops);
  bool gradLse = reads.size() == 3;
  return emitRowKernelFor(
      b, module, func, c, "_pre", "backward_pre", ops, reads,
      writtenTensors(ops, inForall), /*expectedReads=*/gradLse ? 3 : 2,
      gradLse ? "o, do, dlse, delta, dq_acc" : "o, do, delta, dq_acc");
}

LogicalResult mlir::fa::emitBackwardPostKernel(OpBuilder &b,
                                               gpu::GPUModuleOp module,
                                               func::FuncOp func,
                                               scf::ForallOp forall,
                                               const AttentionKernelConfig &c) {
  SmallVector<Operation *> ops;
  for (Operation *op = forall->getNextNode(); op; op = op->getNextNode())
    if (!op->hasTrait<OpTrait::IsTerminator>())
      ops.push_back(op);
  ops = tensorOps(ops);
  // What the function returns: dQ in the element type.
  auto returns = [](Operation *user) {
    return user->hasTrait<OpTrait::IsTerminator>();
  };
  return emitRowKernelFor(b, module, func, c, "_post", "backward_post", ops,
                          readTensors(ops), writtenTensors(ops, returns),
                          /*expectedReads=*/1, "dq_acc, dq");
}
