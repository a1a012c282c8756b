//===- TiledAttentionToFAGPU.cpp - Tiled attention -> GPU tile level ------===//
//
// Lowers the tiled forward, as it is, onto the GPU tile level: the forall
// becomes the grid, its (batch, head, Q block) the block ids; the padded
// Q/K/V tiles cut from the inputs become shared tiles filled by
// fagpu.copy_to_shared; the KV loops stay loops. The math is the one
// definition of it, the decomposition of the tile ops
// (decomposeAttentionTiles), carried over op by op: each tile-sized
// linalg.generic becomes the same arith/math ops on register tiles whose layout
// is the WGMMA accumulator's (contractions become fagpu.mma, row reductions
// fagpu.reduce_rows, row broadcasts fagpu.expand_rows, linalg.index
// fagpu.tile_coords). Nothing is rebuilt from numbers: the kernel is the IR
// given, with layouts.
//
//===----------------------------------------------------------------------===//

#include "fa/Conversion/Passes.h"

#include "InputSlices.h"
#include "KernelConfig.h"
#include "fa/Dialect/FA/IR/FAOps.h"
#include "fa/Dialect/FAGPU/IR/FAGPU.h"
#include "fa/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"

namespace mlir {
namespace fa {
#define GEN_PASS_DEF_CONVERTTILEDATTENTIONTOFAGPU
#include "fa/Conversion/Passes.h.inc"
} // namespace fa
} // namespace mlir

using namespace mlir;
using namespace mlir::fa;

namespace {

constexpr int64_t kWarpgroupRows = 64;
constexpr int64_t kSwizzleBytes = 128;

/// Why the WGMMA kernel cannot take `c` (empty when it can).
std::string checkWgmmaKernelConfig(const AttentionKernelConfig &c) {
  auto fail = [](const Twine &why) { return why.str(); };
  if (!c.elementType.isF16() && !c.elementType.isBF16())
    return fail("operands must be f16 or bf16");
  if (c.blockQ != 64 && c.blockQ != 128)
    return fail("block-q must be 64 or 128 (one or two warpgroups), got " +
                Twine(c.blockQ));
  if (c.blockKV < 16 || c.blockKV > 256)
    return fail("block-kv must be in [16, 256], got " + Twine(c.blockKV));
  int64_t atom = kSwizzleBytes / (c.elementType.getIntOrFloatBitWidth() / 8);
  for (int64_t d : {c.headDim, c.headDimV})
    if (d % atom != 0 || d > 256)
      return fail("head dims must be multiples of " + Twine(atom) +
                  " up to 256 (128-byte swizzled tiles), got " + Twine(d));
  return checkGridLimits(c);
}

/// Rows [row, limit) of a 2-D (or 1-D) view of a kernel argument.
struct RowSource {
  Value argument; ///< the kernel argument the rows come from
  Value view;
  Value row;
  Value limit;
};

/// Builds one kernel from the tiled forward, op by op.
class TileKernelBuilder {
public:
  TileKernelBuilder(OpBuilder &b, int64_t warps)
      : b(b), accLayout(fagpu::WgmmaAccLayoutAttr::get(b.getContext(), warps)),
        rowsLayout(fagpu::RowsLayoutAttr::get(
            b.getContext(), cast<fagpu::DistributedLayoutAttr>(accLayout))),
        aLayout(fagpu::WgmmaALayoutAttr::get(b.getContext(), warps)) {}

  IRMapping map;
  /// Tensors that are one value everywhere (fills and slices of fills).
  DenseMap<Value, Value> splats;
  /// Kernel arguments (memrefs) standing for the forall's outputs.
  DenseMap<Value, Value> arguments;
  /// The kernel argument each slice of a function argument reads: the one
  /// of the q / k / v operand the slice feeds.
  DenseMap<Operation *, Value> sliceArguments;
  /// A kernel argument for each function argument that is an input: where
  /// its runtime sizes (tensor.dim) are read.
  DenseMap<Value, Value> inputArguments;

  LogicalResult convertOp(Operation &op);
  LogicalResult convertBlock(Block &block) {
    for (Operation &op : block.without_terminator())
      if (failed(convertOp(op)))
        return failure();
    return success();
  }
  /// The register tile standing for `tensor`.
  FailureOr<Value> tile(Value tensor);
  /// Rows [row, row + n) of a [B, H, N, X] / [B, H, N] argument at
  /// (batch, head): a rank-2 / rank-1 view with contiguous rows.
  RowSource rowsOf(Value memref, ArrayRef<OpFoldResult> offsets, Location loc);
  void storeRows(tensor::ParallelInsertSliceOp insert);

private:
  RankedTensorType tileType(ArrayRef<int64_t> shape, Type element) {
    Attribute layout = shape.size() == 2 ? Attribute(accLayout) : rowsLayout;
    return RankedTensorType::get(shape, element, layout);
  }
  LogicalResult raiseGeneric(linalg::GenericOp generic);
  LogicalResult raiseContraction(linalg::GenericOp generic);
  LogicalResult raiseRowReduction(linalg::GenericOp generic);
  LogicalResult raiseElementwise(linalg::GenericOp generic);
  Value mapped(Value v) { return map.lookupOrNull(v); }

  OpBuilder &b;
  fagpu::WgmmaAccLayoutAttr accLayout;
  fagpu::RowsLayoutAttr rowsLayout;
  fagpu::WgmmaALayoutAttr aLayout;
  DenseMap<Value, RowSource> slices;
  /// The shared tile of each (kernel argument, tile type).
  DenseMap<std::pair<Value, Type>, Value> sharedTiles;
  Operation *lastAlloc = nullptr;

public:
  /// The kernel's entry block, where shared tiles are allocated.
  Block *entry = nullptr;
};

FailureOr<Value> TileKernelBuilder::tile(Value tensor) {
  if (Value v = mapped(tensor))
    return v;
  auto type = dyn_cast<RankedTensorType>(tensor.getType());
  auto splat = splats.find(tensor);
  if (!type || splat == splats.end())
    return emitError(tensor.getLoc())
           << "the GPU tile level has no register tile for this value";
  Value value = tensor::SplatOp::create(
      b, tensor.getLoc(), tileType(type.getShape(), type.getElementType()),
      splat->second);
  map.map(tensor, value);
  return value;
}

RowSource TileKernelBuilder::rowsOf(Value memref,
                                    ArrayRef<OpFoldResult> offsets,
                                    Location loc) {
  auto type = cast<MemRefType>(memref.getType());
  int64_t rank = type.getRank();
  SmallVector<OpFoldResult> viewOffsets(offsets.take_front(2));
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1), b.getIndexAttr(1)};
  SmallVector<int64_t> viewShape;
  for (int64_t d = 2; d < rank; ++d) {
    viewOffsets.push_back(b.getIndexAttr(0));
    sizes.push_back(memref::getMixedSize(b, loc, memref, d));
    viewShape.push_back(type.getDimSize(d));
  }
  SmallVector<OpFoldResult> strides(rank, b.getIndexAttr(1));
  // Drop the (batch, head) dims, whatever the sizes of the others: a 1-row
  // sequence must not lose its row dim instead.
  auto [allStrides, offset] = type.getStridesAndOffset();
  auto viewType = MemRefType::get(
      viewShape, type.getElementType(),
      StridedLayoutAttr::get(b.getContext(), ShapedType::kDynamic,
                             ArrayRef<int64_t>(allStrides).drop_front(2)));
  Value view = memref::SubViewOp::create(b, loc, viewType, memref, viewOffsets,
                                         sizes, strides);
  Value row = getValueOrCreateConstantIndexOp(b, loc, offsets[2]);
  Value limit = getValueOrCreateConstantIndexOp(
      b, loc, memref::getMixedSize(b, loc, memref, 2));
  return {memref, view, row, limit};
}

static SmallVector<OpFoldResult> mapFolds(IRMapping &map,
                                          ArrayRef<OpFoldResult> folds) {
  SmallVector<OpFoldResult> result;
  for (OpFoldResult f : folds) {
    if (auto v = dyn_cast<Value>(f))
      result.push_back(map.lookupOrDefault(v));
    else
      result.push_back(f);
  }
  return result;
}

LogicalResult TileKernelBuilder::convertOp(Operation &op) {
  Location loc = op.getLoc();
  auto isTensor = [](Type t) { return isa<TensorType>(t); };
  bool tensors = llvm::any_of(op.getOperandTypes(), isTensor) ||
                 llvm::any_of(op.getResultTypes(), isTensor);

  if (!tensors && op.getNumRegions() == 0 &&
      isa<arith::ArithDialect, math::MathDialect, affine::AffineDialect>(
          op.getDialect())) {
    b.clone(op, map);
    return success();
  }
  if (isa<tensor::EmptyOp>(op))
    return success(); // only ever a destination
  if (auto dim = dyn_cast<tensor::DimOp>(op)) {
    // Runtime shapes: a size of an input is the size of its kernel argument.
    Value memref = inputArguments.lookup(dim.getSource());
    if (!memref)
      return dim.emitError() << "the GPU tile level reads sizes of the "
                                "attention's inputs only";
    map.map(dim.getResult(),
            memref::DimOp::create(b, loc, memref,
                                  map.lookupOrDefault(dim.getIndex())));
    return success();
  }
  if (auto fill = dyn_cast<linalg::FillOp>(op)) {
    splats[fill.getResult(0)] = map.lookupOrDefault(fill.getInputs()[0]);
    return success();
  }
  if (auto slice = dyn_cast<tensor::ExtractSliceOp>(op)) {
    Value source = slice.getSource();
    if (splats.count(source)) {
      splats[slice.getResult()] = splats[source];
      return success();
    }
    Value memref = sliceArguments.lookup(slice);
    if (!memref)
      memref = arguments.lookup(source);
    if (memref) {
      slices[slice.getResult()] =
          rowsOf(memref, mapFolds(map, slice.getMixedOffsets()), loc);
      return success();
    }
    // The valid rows of a result tile: the store is bounded by the rows.
    if (Value v = mapped(source)) {
      map.map(slice.getResult(), v);
      return success();
    }
    return slice.emitError() << "the GPU tile level cannot slice this tensor";
  }
  if (auto pad = dyn_cast<tensor::PadOp>(op)) {
    Value source = pad.getSource();
    if (splats.count(source)) {
      splats[pad.getResult()] = splats[source];
      return success();
    }
    auto it = slices.find(source);
    if (it == slices.end())
      return pad.emitError() << "the GPU tile level pads only tiles cut from "
                                "the kernel's inputs";
    // Rows past the sequence end read as zeros: the pad.
    auto type = pad.getResultType();
    auto tileType = fagpu::SharedTileType::get(
        b.getContext(), type.getShape(), type.getElementType(), kSwizzleBytes);
    // One buffer per input and tile shape for the whole kernel: the masked
    // and unmasked KV loops take turns with it.
    Value &shared = sharedTiles[{it->second.argument, tileType}];
    if (!shared) {
      OpBuilder::InsertionGuard guard(b);
      if (lastAlloc)
        b.setInsertionPointAfter(lastAlloc);
      else
        b.setInsertionPointToStart(entry);
      shared = fagpu::AllocSharedOp::create(b, loc, tileType);
      lastAlloc = shared.getDefiningOp();
    }
    fagpu::CopyToSharedOp::create(b, loc, it->second.view, it->second.row,
                                  it->second.limit, shared);
    map.map(pad.getResult(), shared);
    return success();
  }
  if (auto loop = dyn_cast<scf::ForOp>(op)) {
    SmallVector<Value> inits;
    for (Value init : loop.getInitArgs()) {
      FailureOr<Value> v = tile(init);
      if (failed(v))
        return failure();
      inits.push_back(*v);
    }
    auto newLoop =
        scf::ForOp::create(b, loc, map.lookupOrDefault(loop.getLowerBound()),
                           map.lookupOrDefault(loop.getUpperBound()),
                           map.lookupOrDefault(loop.getStep()), inits);
    map.map(loop.getInductionVar(), newLoop.getInductionVar());
    for (auto [from, to] :
         llvm::zip(loop.getRegionIterArgs(), newLoop.getRegionIterArgs()))
      map.map(from, to);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(newLoop.getBody());
    if (failed(convertBlock(*loop.getBody())))
      return failure();
    SmallVector<Value> yielded;
    for (Value v : loop.getBody()->getTerminator()->getOperands()) {
      FailureOr<Value> t = tile(v);
      if (failed(t))
        return failure();
      yielded.push_back(*t);
    }
    scf::YieldOp::create(b, loc, yielded);
    for (auto [from, to] : llvm::zip(loop.getResults(), newLoop.getResults()))
      map.map(from, to);
    return success();
  }
  if (auto generic = dyn_cast<linalg::GenericOp>(op))
    return raiseGeneric(generic);
  return op.emitError() << "the GPU tile level cannot lower this op";
}

LogicalResult TileKernelBuilder::raiseGeneric(linalg::GenericOp generic) {
  auto iterators = generic.getIteratorTypesArray();
  auto isParallel = [](utils::IteratorType t) {
    return t == utils::IteratorType::parallel;
  };
  if (llvm::all_of(iterators, isParallel))
    return raiseElementwise(generic);
  if (iterators.size() == 3 && isParallel(iterators[0]) &&
      isParallel(iterators[1]))
    return raiseContraction(generic);
  if (iterators.size() == 2 && isParallel(iterators[0]))
    return raiseRowReduction(generic);
  return generic.emitError() << "the GPU tile level takes elementwise ops, "
                                "row reductions and contractions";
}

LogicalResult TileKernelBuilder::raiseContraction(linalg::GenericOp generic) {
  Location loc = generic.getLoc();
  MLIRContext *ctx = b.getContext();
  auto dim = [&](unsigned d) { return getAffineDimExpr(d, ctx); };
  auto map2 = [&](unsigned x, unsigned y) {
    return AffineMap::get(3, 0, {dim(x), dim(y)}, ctx);
  };
  SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
  if (maps[0] != map2(0, 2) || maps[2] != map2(0, 1))
    return generic.emitError() << "the GPU tile level takes C += A B and "
                                  "C += A Bᵀ contractions";
  bool transposeB = maps[1] == map2(1, 2);
  if (!transposeB && maps[1] != map2(2, 1))
    return generic.emitError() << "unsupported B operand map";
  Value b2 = mapped(generic.getInputs()[1]);
  if (!b2 || !isa<fagpu::SharedTileType>(b2.getType()))
    return generic.emitError() << "the B operand must be a tile of the "
                                  "kernel's inputs (shared memory)";
  Value a = mapped(generic.getInputs()[0]);
  if (!a)
    return generic.emitError() << "no tile for the A operand";
  Type element = cast<fagpu::SharedTileType>(b2.getType()).getElementType();
  if (auto aTile = dyn_cast<RankedTensorType>(a.getType())) {
    // A register operand (P) is rounded to the operands' type, as
    // FlashAttention does, and read in the register-A layout.
    if (aTile.getElementType() != element)
      a = arith::TruncFOp::create(b, loc, tileType(aTile.getShape(), element),
                                  a);
    a = fagpu::ConvertLayoutOp::create(
        b, loc, RankedTensorType::get(aTile.getShape(), element, aLayout), a);
  }
  FailureOr<Value> acc = tile(generic.getOutputs()[0]);
  if (failed(acc))
    return failure();
  Value result =
      fagpu::MmaOp::create(b, loc, acc->getType(), a, b2, *acc, transposeB);
  map.map(generic.getResult(0), result);
  return success();
}

LogicalResult TileKernelBuilder::raiseRowReduction(linalg::GenericOp generic) {
  Operation *combiner =
      generic.getBody()->getTerminator()->getOperand(0).getDefiningOp();
  fagpu::ReductionKind kind;
  if (isa_and_nonnull<arith::MaximumFOp>(combiner))
    kind = fagpu::ReductionKind::max;
  else if (isa_and_nonnull<arith::AddFOp>(combiner))
    kind = fagpu::ReductionKind::sum;
  else
    return generic.emitError() << "row reductions are max or sum";
  FailureOr<Value> source = tile(generic.getInputs()[0]);
  FailureOr<Value> init = tile(generic.getOutputs()[0]);
  if (failed(source) || failed(init))
    return failure();
  Location loc = generic.getLoc();
  Value reduced = fagpu::ReduceRowsOp::create(
      b, loc, init->getType(),
      fagpu::ReductionKindAttr::get(b.getContext(), kind), *source);
  Value result =
      kind == fagpu::ReductionKind::max
          ? arith::MaximumFOp::create(b, loc, *init, reduced).getResult()
          : arith::AddFOp::create(b, loc, *init, reduced).getResult();
  map.map(generic.getResult(0), result);
  return success();
}

LogicalResult TileKernelBuilder::raiseElementwise(linalg::GenericOp generic) {
  Location loc = generic.getLoc();
  ArrayRef<int64_t> space =
      cast<RankedTensorType>(generic.getOutputs()[0].getType()).getShape();
  Block *body = generic.getBody();
  IRMapping inner;
  for (OpOperand &operand : generic->getOpOperands()) {
    BlockArgument arg = body->getArgument(operand.getOperandNumber());
    if (arg.use_empty())
      continue;
    FailureOr<Value> t = tile(operand.get());
    if (failed(t))
      return failure();
    Value v = *t;
    auto type = cast<RankedTensorType>(v.getType());
    if (type.getRank() < static_cast<int64_t>(space.size()))
      v = fagpu::ExpandRowsOp::create(
          b, loc, tileType(space, type.getElementType()), v);
    inner.map(arg, v);
  }
  DenseMap<Value, Value> splatted;
  for (Operation &op : body->without_terminator()) {
    if (auto index = dyn_cast<linalg::IndexOp>(op)) {
      inner.map(index.getResult(),
                fagpu::TileCoordsOp::create(
                    b, loc, tileType(space, b.getIndexType()), index.getDim()));
      continue;
    }
    if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
      auto type = tileType(space, constant.getType());
      inner.map(
          constant.getResult(),
          arith::ConstantOp::create(
              b, loc, type, SplatElementsAttr::get(type, constant.getValue())));
      continue;
    }
    // Scalars from outside the body hold for every element.
    for (Value operand : op.getOperands()) {
      if (inner.contains(operand))
        continue;
      Value &s = splatted[operand];
      if (!s)
        s = tensor::SplatOp::create(b, loc, tileType(space, operand.getType()),
                                    map.lookupOrDefault(operand));
      inner.map(operand, s);
    }
    Operation *clone = b.clone(op, inner);
    for (OpResult result : clone->getResults())
      result.setType(tileType(space, result.getType()));
  }
  for (auto [result, yielded] :
       llvm::zip(generic.getResults(), body->getTerminator()->getOperands()))
    map.map(result, inner.lookup(yielded));
  return success();
}

void TileKernelBuilder::storeRows(tensor::ParallelInsertSliceOp insert) {
  Location loc = insert.getLoc();
  Value memref = arguments.lookup(insert.getDest());
  RowSource dest = rowsOf(memref, mapFolds(map, insert.getMixedOffsets()), loc);
  fagpu::StoreTileOp::create(b, loc, map.lookup(insert.getSource()), dest.view,
                             dest.row, dest.limit);
}

struct ConvertTiledAttentionToFAGPUPass
    : fa::impl::ConvertTiledAttentionToFAGPUBase<
          ConvertTiledAttentionToFAGPUPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> funcs;
    module.walk([&](func::FuncOp func) {
      if (!func.getOps<scf::ForallOp>().empty())
        funcs.push_back(func);
    });
    gpu::GPUModuleOp gpuModule;
    for (func::FuncOp func : funcs) {
      if (failed(convert(func, gpuModule)))
        return signalPassFailure();
    }
  }

  LogicalResult convert(func::FuncOp func, gpu::GPUModuleOp &gpuModule) {
    auto foralls = llvm::to_vector(func.getOps<scf::ForallOp>());
    OnlineAttentionOp tileOp;
    bool backward = false;
    func.walk([&](Operation *op) {
      if (auto t = dyn_cast<OnlineAttentionOp>(op); t && t.isTile() && !tileOp)
        tileOp = t;
      backward |= isa<AttentionGradTileOp>(op);
    });
    if (foralls.size() != 1 || !tileOp || backward)
      return func.emitError()
             << "fa-convert-tiled-attention-to-fagpu takes one tiled "
                "attention forward per function (fa-tile-attention); the "
                "backward is on the mma.sync path";
    FailureOr<AttentionKernelConfig> config =
        readKernelConfig(tileOp, func.getSymName());
    if (failed(config))
      return failure();
    config->rowsPerWarp = 16;
    std::string problem = checkWgmmaKernelConfig(*config);
    if (!problem.empty())
      return tileOp.emitError()
             << "cannot lower to the WGMMA kernel: " << problem;
    FailureOr<InputSlices> inputs = traceInputSlices(func);
    if (failed(inputs))
      return failure();
    if (failed(decomposeAttentionTiles(func)))
      return failure();

    scf::ForallOp forall = foralls.front();
    OpBuilder b(func.getContext());
    if (!gpuModule) {
      b.setInsertionPointToEnd(module().getBody());
      module()->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                        b.getUnitAttr());
      gpuModule = gpu::GPUModuleOp::create(b, module().getLoc(), "fa_kernels");
    }
    SmallVector<Type> arguments;
    auto memrefOf = [](Type t) {
      auto tensor = cast<RankedTensorType>(t);
      return MemRefType::get(tensor.getShape(), tensor.getElementType());
    };
    for (Type t : inputs->types)
      arguments.push_back(memrefOf(t));
    for (Type t : forall.getResultTypes())
      arguments.push_back(memrefOf(t));
    int64_t warps = config->blockQ / kWarpgroupRows * 4;
    gpu::GPUFuncOp kernel = createKernelFunc(
        b, func.getLoc(), gpuModule, func.getSymName(), arguments, "forward",
        config->grid(), 32 * warps, /*sharedBytes=*/0, *config);
    Block &entry = kernel.getBody().front();
    b.setInsertionPointToStart(&entry);

    TileKernelBuilder builder(b, warps);
    builder.entry = &entry;
    for (auto [slice, role] : inputs->roles) {
      builder.sliceArguments[slice] = entry.getArgument(role);
      builder.inputArguments[cast<tensor::ExtractSliceOp>(slice).getSource()] =
          entry.getArgument(role);
    }
    for (auto [out, memref] :
         llvm::zip(forall.getRegionIterArgs(),
                   entry.getArguments().drop_front(kNumInputs)))
      builder.arguments[out] = memref;
    // The forall is the grid: (batch, head, Q block) = block (z, y, x), the
    // Q blocks last-first: blocks start in the order of their ids, and under
    // a causal mask the last Q blocks are the longest, so the short ones
    // fill the tail.
    Location loc = func.getLoc();
    auto ivs = forall.getInductionVars();
    builder.map.map(ivs[0], gpu::BlockIdOp::create(b, loc, gpu::Dimension::z));
    builder.map.map(ivs[1], gpu::BlockIdOp::create(b, loc, gpu::Dimension::y));
    // The Q-block count: static, or the grid's x (Nq known at launch).
    Value qBlocks =
        ShapedType::isDynamic(config->grid()[0])
            ? Value(gpu::GridDimOp::create(b, loc, gpu::Dimension::x))
            : Value(
                  arith::ConstantIndexOp::create(b, loc, config->numQBlocks()));
    Value lastQBlock = arith::SubIOp::create(
        b, loc, qBlocks, arith::ConstantIndexOp::create(b, loc, 1));
    builder.map.map(ivs[2],
                    arith::SubIOp::create(
                        b, loc, lastQBlock,
                        gpu::BlockIdOp::create(b, loc, gpu::Dimension::x)));
    for (Operation &op : func.getBody().front()) {
      if (&op == forall.getOperation())
        break;
      if (failed(builder.convertOp(op)))
        return failure();
    }
    if (failed(builder.convertBlock(*forall.getBody())))
      return failure();
    for (Operation &op : forall.getTerminator().getYieldingOps())
      builder.storeRows(cast<tensor::ParallelInsertSliceOp>(op));
    gpu::ReturnOp::create(b, func.getLoc());
    int64_t sharedBytes = fagpu::placeSharedTiles(kernel);
    if (sharedBytes > fagpu::kMaxSharedBytesPerBlock) {
      kernel.erase();
      return tileOp.emitError()
             << "cannot lower to the WGMMA kernel: its tiles need "
             << sharedBytes << " bytes of shared memory, over the "
             << fagpu::kMaxSharedBytesPerBlock
             << " a block can have (smaller block-q or block-kv)";
    }
    kernel->setAttr("fa.shared_bytes", b.getI64IntegerAttr(sharedBytes));
    // The launch lives in the runtime; the kernel carries its geometry.
    func.erase();
    return success();
  }

  ModuleOp module() { return getOperation(); }
};

} // namespace
