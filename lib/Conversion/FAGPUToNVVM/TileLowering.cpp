//===- TileLowering.cpp - Per-thread code for register tiles --------------===//

#include "TileLowering.h"

#include "fa/Conversion/ApproximateMath.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <optional>

using namespace mlir;
using namespace mlir::fagpu;

Type mlir::fagpu::registerElementType(Type element) {
  if (element.isIndex())
    return IntegerType::get(element.getContext(), kIndexRegisterBits);
  // LLVM has no 8-bit float: e4m3 registers are their bytes.
  if (isa<Float8E4M3FNType>(element))
    return IntegerType::get(element.getContext(), 8);
  return element;
}

VectorType mlir::fagpu::registerVectorType(RankedTensorType type) {
  int64_t registers = getTileLayout(type).numRegisters();
  Type element = type.getElementType();
  // e4m3 registers four to a 32-bit word, as WGMMA's A operand takes them:
  // as a byte vector, LLVM built and NVPTX assembled every word byte by
  // byte (E4M3TilesToNVVM.cpp).
  if (isa<Float8E4M3FNType>(element) && registers % 4 == 0)
    return VectorType::get({registers / 4},
                           IntegerType::get(type.getContext(), 32));
  return VectorType::get({registers}, registerElementType(element));
}

bool mlir::fagpu::isTileType(Type type) {
  return isa<SharedTileType>(type) || getLayout(type);
}

TileTypeConverter::TileTypeConverter(MLIRContext *ctx) {
  addConversion([](Type type) { return type; });
  addConversion([](RankedTensorType type) -> Type {
    if (!getLayout(type))
      return type;
    return registerVectorType(type);
  });
  addConversion([ctx](SharedTileType) -> Type {
    return LLVM::LLVMPointerType::get(ctx, /*addressSpace=*/3);
  });
  addConversion([ctx](BarriersType) -> Type {
    return LLVM::LLVMPointerType::get(ctx, /*addressSpace=*/3);
  });
  // A grid-constant parameter, addressed generically (the param space).
  addConversion(
      [ctx](TensorMapType) -> Type { return LLVM::LLVMPointerType::get(ctx); });
  auto cast = [](OpBuilder &b, Type type, ValueRange inputs,
                 Location loc) -> Value {
    return UnrealizedConversionCastOp::create(b, loc, type, inputs)
        .getResult(0);
  };
  addSourceMaterialization(cast);
  addTargetMaterialization(cast);
}

ThreadGroup ThreadGroup::enclosing(OpBuilder &b) {
  for (Region *region = b.getInsertionBlock()->getParent(); region;
       region = region->getParentOp()->getParentRegion()) {
    auto split = dyn_cast<WarpSpecializeOp>(region->getParentOp());
    if (!split)
      continue;
    int64_t producerThreads = 128 * split.getProducerWarpgroups();
    if (region == &split.getProducer())
      return {0, producerThreads};
    if (region == &split.getReducer())
      return {32, 32}; // the producer warpgroup's second warp
    if (region == &split.getTransposer())
      return {32, 96}; // the producer warpgroup's warps 1-3
    return {producerThreads,
            static_cast<int64_t>(128 * split.getConsumerWarpgroups())};
  }
  return {};
}

Value mlir::fagpu::emitGroupThreadId(OpBuilder &b, Location loc) {
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  ThreadGroup group = ThreadGroup::enclosing(b);
  if (group.firstThread == 0)
    return tid;
  return arith::SubIOp::create(
      b, loc, tid, arith::ConstantIndexOp::create(b, loc, group.firstThread));
}

LogicalResult mlir::fagpu::checkBandIssuers(OpBuilder &b, Operation *op,
                                            int64_t bands) {
  int64_t threads = knownGroupThreads(b);
  if (threads && bands > std::max<int64_t>(1, threads / 128))
    return op->emitOpError()
           << bands << " bands need as many warpgroups; the code runs on "
           << threads << " threads";
  return success();
}

void mlir::fagpu::onFirstThreadOfGroup(OpBuilder &b, Location loc,
                                       function_ref<void()> body) {
  // One op per statement: argument evaluation order is unspecified.
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value thread = emitGroupThreadId(b, loc);
  Value first =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, thread, zero);
  auto branch = scf::IfOp::create(b, loc, first);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(branch.thenBlock());
  body();
}

Value mlir::fagpu::emitGroupThreads(OpBuilder &b, Location loc) {
  ThreadGroup group = ThreadGroup::enclosing(b);
  if (group.threads == 0)
    return gpu::BlockDimOp::create(b, loc, gpu::Dimension::x);
  return arith::ConstantIndexOp::create(b, loc, group.threads);
}

int64_t mlir::fagpu::knownGroupThreads(OpBuilder &b) {
  if (int64_t threads = ThreadGroup::enclosing(b).threads)
    return threads;
  Operation *parent = b.getInsertionBlock()->getParentOp();
  auto kernel = isa<gpu::GPUFuncOp>(parent)
                    ? cast<gpu::GPUFuncOp>(parent)
                    : parent->getParentOfType<gpu::GPUFuncOp>();
  if (kernel)
    if (auto block = kernel->getAttrOfType<DenseI64ArrayAttr>("fa.block"))
      return block[0];
  return 0;
}

Value mlir::fagpu::emitLaneId(OpBuilder &b, Location loc) {
  // One op per statement: argument evaluation order is unspecified.
  Value size = arith::ConstantIndexOp::create(b, loc, 32);
  Value thread = emitGroupThreadId(b, loc);
  return arith::RemUIOp::create(b, loc, thread, size);
}

/// The block's warp index, broadcast from lane 0 once at the kernel's entry
/// (where every thread runs) and reused (CUTLASS's canonical_warp_idx_sync):
/// ptxas then knows it is the same in every lane and keeps what derives from
/// it (a warpgroup's WGMMA descriptors, its band of a shared tile) in
/// uniform registers; from tid / 32 it builds them in vector registers and
/// moves each to a uniform one (R2UR) before every wgmma.
static Value emitUniformWarpIndex(OpBuilder &b, Location loc) {
  static constexpr StringLiteral kMarker = "fagpu.uniform_warp_index";
  Operation *parent = b.getInsertionBlock()->getParentOp();
  auto kernel = isa<gpu::GPUFuncOp>(parent)
                    ? cast<gpu::GPUFuncOp>(parent)
                    : parent->getParentOfType<gpu::GPUFuncOp>();
  if (!kernel) {
    Value size = arith::ConstantIndexOp::create(b, loc, 32);
    Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
    return arith::DivUIOp::create(b, loc, tid, size);
  }
  Block &entry = kernel.getBody().front();
  for (Operation &op : entry)
    if (op.hasAttr(kMarker))
      return op.getResult(0);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&entry);
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value size = arith::ConstantIndexOp::create(b, loc, 32);
  Value warp = arith::IndexCastUIOp::create(
      b, loc, b.getI32Type(), arith::DivUIOp::create(b, loc, tid, size));
  Value uniform = gpu::ShuffleOp::create(b, loc, warp, /*offset=*/0,
                                         /*width=*/32, gpu::ShuffleMode::IDX)
                      .getShuffleResult();
  auto index = arith::IndexCastUIOp::create(b, loc, b.getIndexType(), uniform);
  index->setAttr(kMarker, b.getUnitAttr());
  return index;
}

ThreadPosition ThreadPosition::get(OpBuilder &b, Location loc) {
  Value warp = emitUniformWarpIndex(b, loc);
  if (int64_t first = ThreadGroup::enclosing(b).firstThread) {
    Value producerWarps = arith::ConstantIndexOp::create(b, loc, first / 32);
    warp = arith::SubIOp::create(b, loc, warp, producerWarps);
  }
  Value lane = emitLaneId(b, loc);
  return {lane, warp};
}

/// Sum over the bits of `index` of bit * basis coordinate.
static Value sumOfBits(OpBuilder &b, Location loc, Value index,
                       ArrayRef<TileCoord> bases, bool row, Value acc) {
  for (auto [bit, basis] : llvm::enumerate(bases)) {
    int64_t step = row ? basis.row : basis.col;
    if (step == 0)
      continue;
    Value shifted = arith::ShRUIOp::create(
        b, loc, index, arith::ConstantIndexOp::create(b, loc, bit));
    Value one = arith::AndIOp::create(
        b, loc, shifted, arith::ConstantIndexOp::create(b, loc, 1));
    acc = arith::AddIOp::create(
        b, loc, acc,
        arith::MulIOp::create(b, loc, one,
                              arith::ConstantIndexOp::create(b, loc, step)));
  }
  return acc;
}

/// The warp index's bits and its repeat's digit (null without one), as
/// TileLayout::apply splits it: low bits, the digit, then the bits above.
static std::pair<Value, Value> splitWarpIndex(OpBuilder &b, Location loc,
                                              const TileLayout &layout,
                                              Value warp) {
  if (!layout.hasWarpRepeat())
    return {warp, Value()};
  auto c = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); };
  const IndexRepeat &repeat = layout.warpRepeat();
  Value low = arith::AndIOp::create(b, loc, warp,
                                    c((int64_t(1) << repeat.position) - 1));
  Value rest = arith::ShRUIOp::create(b, loc, warp, c(repeat.position));
  Value digit = arith::RemUIOp::create(b, loc, rest, c(repeat.count));
  Value high = arith::ShLIOp::create(
      b, loc, arith::DivUIOp::create(b, loc, rest, c(repeat.count)),
      c(repeat.position));
  return {arith::OrIOp::create(b, loc, low, high), digit};
}

std::pair<Value, Value>
mlir::fagpu::emitThreadCoords(OpBuilder &b, Location loc,
                              const TileLayout &layout,
                              const ThreadPosition &thread) {
  auto c = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); };
  auto [warpBits, digit] = splitWarpIndex(b, loc, layout, thread.warp);
  const IndexRepeat &repeat = layout.warpRepeat();
  std::array<Value, 2> coords;
  for (int dim = 0; dim < 2; ++dim) {
    Value acc =
        sumOfBits(b, loc, thread.lane, layout.laneBases(), dim == 0, c(0));
    acc = sumOfBits(b, loc, warpBits, layout.warpBasesRef(), dim == 0, acc);
    int64_t step = dim == 0 ? repeat.stride.row : repeat.stride.col;
    if (digit && step != 0)
      acc = arith::AddIOp::create(
          b, loc, acc, arith::MulIOp::create(b, loc, digit, c(step)));
    coords[dim] = acc;
  }
  return {coords[0], coords[1]};
}

ThreadTileOrigin ThreadTileOrigin::get(OpBuilder &b, Location loc,
                                       const TileLayout &layout,
                                       Value firstRow) {
  ThreadPosition thread = ThreadPosition::get(b, loc);
  auto [threadRow, threadCol] = emitThreadCoords(b, loc, layout, thread);
  return {thread, arith::AddIOp::create(b, loc, firstRow, threadRow),
          threadCol};
}

bool mlir::fagpu::holdsColumnPairs(const TileLayout &layout) {
  ArrayRef<TileCoord> regs = layout.registerBases();
  if (regs.empty() || regs[0].row != 0 || regs[0].col != 1)
    return false;
  auto even = [](const TileCoord &c) { return c.col % 2 == 0; };
  // Pairs are registers 2i, 2i + 1: a repeat must sit above bit 0.
  const IndexRepeat &repeat = layout.registerRepeat();
  if (layout.hasRegisterRepeat() &&
      (repeat.position == 0 || !even(repeat.stride)))
    return false;
  return llvm::all_of(regs.drop_front(), even) &&
         llvm::all_of(layout.laneBases(), even) &&
         llvm::all_of(layout.warpBasesRef(), even) &&
         even(layout.warpRepeat().stride);
}

Value mlir::fagpu::emitIsFirstCopy(OpBuilder &b, Location loc,
                                   const TileLayout &layout,
                                   const ThreadPosition &thread) {
  auto maskOfZeroBases = [](ArrayRef<TileCoord> bases) {
    int64_t mask = 0;
    for (auto [bit, basis] : llvm::enumerate(bases))
      if (basis.isZero())
        mask |= int64_t(1) << bit;
    return mask;
  };
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value result = arith::ConstantIntOp::create(b, loc, 1, 1);
  auto [warpBits, digit] = splitWarpIndex(b, loc, layout, thread.warp);
  // A repeat that moves nowhere replicates: its first copy is digit 0.
  if (digit && layout.warpRepeat().stride.isZero())
    result =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, digit, zero);
  for (auto [index, mask] :
       {std::make_pair(thread.lane, maskOfZeroBases(layout.laneBases())),
        std::make_pair(warpBits, maskOfZeroBases(layout.warpBasesRef()))}) {
    if (mask == 0)
      continue;
    Value bits = arith::AndIOp::create(
        b, loc, index, arith::ConstantIndexOp::create(b, loc, mask));
    Value isZero =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, bits, zero);
    result = arith::AndIOp::create(b, loc, result, isZero);
  }
  return result;
}

SmallVector<Value> mlir::fagpu::unpackVector(OpBuilder &b, Location loc,
                                             Value vector) {
  auto type = cast<VectorType>(vector.getType());
  SmallVector<Value> scalars;
  for (int64_t i = 0; i < type.getNumElements(); ++i)
    scalars.push_back(vector::ExtractOp::create(b, loc, vector, i));
  return scalars;
}

Value mlir::fagpu::packVector(OpBuilder &b, Location loc, VectorType type,
                              ArrayRef<Value> scalars) {
  return vector::FromElementsOp::create(b, loc, type, scalars);
}

DenseMap<std::pair<int64_t, int64_t>, int64_t>
mlir::fagpu::registersByElement(const TileLayout &layout) {
  DenseMap<std::pair<int64_t, int64_t>, int64_t> byElement;
  for (int64_t reg = 0; reg < layout.numRegisters(); ++reg) {
    TileCoord c = layout.ofRegister(reg);
    byElement[{c.row, c.col}] = reg;
  }
  return byElement;
}

SmallVector<int64_t> mlir::fagpu::sourceRegisters(const TileLayout &from,
                                                  const TileLayout &to) {
  DenseMap<std::pair<int64_t, int64_t>, int64_t> fromReg =
      registersByElement(from);
  SmallVector<int64_t> source;
  for (int64_t reg = 0; reg < to.numRegisters(); ++reg) {
    TileCoord c = to.ofRegister(reg);
    source.push_back(fromReg.lookup({c.row, c.col}));
  }
  return source;
}

Value mlir::fagpu::packPairWord(OpBuilder &b, Location loc, Value low,
                                Value high) {
  auto pairType = VectorType::get({2}, low.getType());
  Value pair = packVector(b, loc, pairType, {low, high});
  auto wordType = VectorType::get({1}, b.getI32Type());
  Value word = vector::BitCastOp::create(b, loc, wordType, pair);
  return vector::ExtractOp::create(b, loc, word, 0);
}

Value mlir::fagpu::emitSharedByteOffset(OpBuilder &b, Location loc,
                                        SharedTileType tile, Value row,
                                        Value col) {
  IndexArith a{b, loc};
  return swizzledByteOffsetIn(a, row, col, tile.getElementBytes(),
                              tile.getRows(), tile.getRowBytes(),
                              tile.getSwizzle());
}

Value ThreadSharedOffsets::pointer(OpBuilder &b, Location loc, Value base,
                                   int64_t dr, int64_t dc) {
  auto offset = [&](int64_t row, int64_t col) {
    return swizzledByteOffset(row, col, tile.getElementBytes(), tile.getRows(),
                              tile.getRowBytes(), tile.getSwizzle());
  };
  // The constant difference from an earlier access at every start, if any.
  auto constantFrom = [&](const Known &from) -> std::optional<int64_t> {
    std::optional<int64_t> delta;
    for (auto [row, col] : starts) {
      int64_t d =
          offset(row + dr, col + dc) - offset(row + from.dr, col + from.dc);
      if (delta && *delta != d)
        return std::nullopt;
      delta = d;
    }
    return delta;
  };
  Value value;
  int64_t constant = 0;
  for (const Known &from : known)
    if (std::optional<int64_t> delta = constantFrom(from)) {
      value = from.offset;
      constant = *delta;
      break;
    }
  if (!value) {
    IndexArith ix{b, loc};
    value = emitSharedByteOffset(b, loc, tile, ix.add(threadRow, dr),
                                 ix.add(threadCol, dc));
    known.push_back({dr, dc, value});
  }
  Value pointer = emitSharedAddress(b, loc, base, value);
  if (constant == 0)
    return pointer;
  // Shared offsets fit 32 bits (228 KB of shared memory at most).
  return LLVM::GEPOp::create(b, loc, pointer.getType(), b.getI8Type(), pointer,
                             ArrayRef<LLVM::GEPArg>{int32_t(constant)});
}

void mlir::fagpu::emitSync(OpBuilder &b, Location loc, SyncScope scope) {
  Value id, threads;
  if (scope == SyncScope::warp) {
    // The warp's lanes only: the writes of all 32 ordered before what lane
    // 0 does next (an mbarrier arrival that releases them).
    Value all = arith::ConstantIntOp::create(b, loc, -1, 32);
    NVVM::SyncWarpOp::create(b, loc, all);
    return;
  }
  if (scope == SyncScope::block) {
    ThreadGroup group = ThreadGroup::enclosing(b);
    if (group.threads == 0) {
      gpu::BarrierOp::create(b, loc);
      return;
    }
    if (group.threads == 32) { // a region of one warp
      emitSync(b, loc, SyncScope::warp);
      return;
    }
    // In a fagpu.warp_specialize region the "block" is the region's
    // threads: the other region never comes to barrier 0. (A transposer
    // takes the producer's: its first warp, alone, never syncs.)
    id = arith::ConstantIntOp::create(b, loc,
                                      group.firstThread < kWarpgroupThreads
                                          ? kProducerSyncBarrier
                                          : kConsumerSyncBarrier,
                                      32);
    threads = arith::ConstantIntOp::create(b, loc, group.threads, 32);
  } else {
    Value thread = emitGroupThreadId(b, loc);
    Value groupSize = arith::ConstantIndexOp::create(b, loc, kWarpgroupThreads);
    Value warpgroup = arith::DivUIOp::create(b, loc, thread, groupSize);
    Value base = arith::ConstantIndexOp::create(b, loc, kWarpgroupSyncBarrier);
    Value index = arith::AddIOp::create(b, loc, warpgroup, base);
    id = arith::IndexCastUIOp::create(b, loc, b.getI32Type(), index);
    threads = arith::ConstantIntOp::create(b, loc, kWarpgroupThreads, 32);
  }
  NVVM::BarrierOp::create(b, loc, TypeRange{}, id, threads,
                          /*reductionOp=*/nullptr,
                          /*reductionPredicate=*/Value());
}

bool mlir::fagpu::targetsSm90OrLater(OpBuilder &b) {
  Block *block = b.getInsertionBlock();
  Operation *parent = block ? block->getParentOp() : nullptr;
  auto module = parent ? dyn_cast<gpu::GPUModuleOp>(parent) : nullptr;
  if (parent && !module)
    module = parent->getParentOfType<gpu::GPUModuleOp>();
  std::optional<ArrayAttr> targets =
      module ? module.getTargets() : std::nullopt;
  if (!targets || !*targets)
    return true;
  for (Attribute target : *targets) {
    auto nvvm = dyn_cast<NVVM::NVVMTargetAttr>(target);
    unsigned version = 0;
    if (nvvm && nvvm.getChip().starts_with("sm_") &&
        !nvvm.getChip().drop_front(3).consumeInteger(10, version))
      return version >= 90;
  }
  return true;
}

void mlir::fagpu::publishSharedWrites(OpBuilder &b, Location loc,
                                      SyncScope scope) {
  if (!targetsSm90OrLater(b)) {
    emitSync(b, loc, scope);
    return;
  }
  NVVM::FenceProxyOp::create(
      b, loc,
      NVVM::ProxyKindAttr::get(b.getContext(), NVVM::ProxyKind::async_shared),
      NVVM::SharedSpaceAttr::get(b.getContext(),
                                 NVVM::SharedSpace::shared_cta));
  emitSync(b, loc, scope);
}

Value mlir::fagpu::emitGlobalAddress(OpBuilder &b, Location loc, Value memref,
                                     ValueRange indices) {
  auto meta = memref::ExtractStridedMetadataOp::create(b, loc, memref);
  Value element = meta.getOffset();
  for (auto [index, stride] : llvm::zip(indices, meta.getStrides()))
    element = arith::AddIOp::create(
        b, loc, element, arith::MulIOp::create(b, loc, index, stride));
  int64_t bytes =
      cast<MemRefType>(memref.getType()).getElementTypeBitWidth() / 8;
  Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
  Value byte = arith::AddIOp::create(
      b, loc, base,
      arith::MulIOp::create(b, loc, element,
                            arith::ConstantIndexOp::create(b, loc, bytes)));
  return arith::IndexCastOp::create(b, loc, b.getI64Type(), byte);
}

Value mlir::fagpu::emitSharedAddress(OpBuilder &b, Location loc, Value base,
                                     Value bytes) {
  Value offset = arith::IndexCastOp::create(b, loc, b.getI32Type(), bytes);
  return LLVM::GEPOp::create(b, loc, base.getType(), b.getI8Type(), base,
                             ValueRange{offset});
}

Value mlir::fa::emitApproximateMath(OpBuilder &b, Location loc,
                                    ApproximateFn fn, Value x) {
  // tanh: the generic intrinsic with afn selects tanh.approx.f32.
  StringRef name = fn == ApproximateFn::Exp2   ? "llvm.nvvm.ex2.approx.ftz.f"
                   : fn == ApproximateFn::Log2 ? "llvm.nvvm.lg2.approx.f"
                                               : "llvm.tanh.f32";
  auto flags = fn == ApproximateFn::Tanh ? LLVM::FastmathFlags::afn
                                         : LLVM::FastmathFlags::none;
  return LLVM::CallIntrinsicOp::create(
             b, loc, TypeRange{b.getF32Type()}, b.getStringAttr(name),
             ValueRange{x}, LLVM::FastmathFlagsAttr::get(b.getContext(), flags))
      .getResult(0);
}

Value mlir::fa::emitExp2OnFma(OpBuilder &b, Location loc, Value x) {
  Type f32 = b.getF32Type(), i32 = b.getI32Type();
  auto constant = [&](double v) -> Value {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  };
  // 2^f on [0, 1] within 8.6e-5 relative: 1 + c1 f + c2 f^2 + c3 f^3,
  // fitted for relative error (Chebyshev nodes, reweighted least squares).
  constexpr double c1 = 0.6951168, c2 = 0.22764495, c3 = 0.07706708;
  // NVVM intrinsic calls, not math or LLVM floor/fma ops: convert-gpu-to-
  // nvvm would turn those into libdevice calls.
  auto intrinsic = [&](StringRef name, ValueRange args) -> Value {
    return LLVM::CallIntrinsicOp::create(
               b, loc, TypeRange{f32}, b.getStringAttr(name), args,
               LLVM::FastmathFlagsAttr::get(b.getContext(),
                                            LLVM::FastmathFlags::none))
        .getResult(0);
  };
  Value clamped = intrinsic("llvm.nvvm.fmax.f", {x, constant(-127.0)});
  Value whole = intrinsic("llvm.nvvm.floor.f", {clamped});
  Value frac = arith::SubFOp::create(b, loc, clamped, whole);
  Value p = intrinsic("llvm.nvvm.fma.rn.f", {constant(c3), frac, constant(c2)});
  p = intrinsic("llvm.nvvm.fma.rn.f", {p, frac, constant(c1)});
  p = intrinsic("llvm.nvvm.fma.rn.f", {p, frac, constant(1.0)});
  // p is in [1, 2): adding j to its exponent field scales it by 2^j.
  Value exponent = arith::FPToSIOp::create(b, loc, i32, whole);
  Value shifted = arith::ShLIOp::create(
      b, loc, exponent,
      arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(23)));
  Value bits = arith::AddIOp::create(
      b, loc, arith::BitcastOp::create(b, loc, i32, p), shifted);
  Value result = arith::BitcastOp::create(b, loc, f32, bits);
  // Below -127 (masked scores: -inf) the value is 0, as ex2.approx.ftz's.
  Value underflow = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, x,
                                          constant(-127.0));
  return arith::SelectOp::create(b, loc, underflow, constant(0.0), result);
}

bool mlir::fagpu::hasTileTypes(Operation *op) {
  return llvm::any_of(op->getOperandTypes(), isTileType) ||
         llvm::any_of(op->getResultTypes(), isTileType);
}
