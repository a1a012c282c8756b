//===- QuantizeToGPU.cpp - fa.quantize -> two GPU kernels -----------------===//
//
// A function whose body is one `fa.quantize` becomes two kernels over the
// rows of its [B, H, N, D] input: NAME_amax (each block's largest |y| into an
// i32 workspace, by atomic max on the bits of non-negative floats, which
// order as integers; so are all its maxima) and NAME (y * 448 / amax rounded to
// e4m3 with saturation, and the descale amax / 448). A warp takes a row, each
// lane D / 32 contiguous elements. The rotation y = x diag(signs) Hd / sqrt(D)
// is the Walsh-Hadamard butterfly on those registers: log2(D / 32) stages
// inside a lane, five across lanes by shuffles; each kernel computes it
// (recomputing is cheaper than a round trip of y through memory). The
// signs come from QuantizeOp::hadamardSign and the bounds from the op's
// constants, as in fa-decompose-quantize: one definition of the op.
//
//===----------------------------------------------------------------------===//

#include "fa/Conversion/Passes.h"
#include "fa/Dialect/FA/IR/FAOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include "llvm/Support/MathExtras.h"

#include <climits>
#include <cmath>

namespace mlir {
namespace fa {
#define GEN_PASS_DEF_CONVERTQUANTIZETOGPU
#include "fa/Conversion/Passes.h.inc"
} // namespace fa
} // namespace mlir

using namespace mlir;
using namespace mlir::fa;

namespace {

constexpr int64_t kWarpsPerBlock = 4;
constexpr int64_t kRowsPerWarp = 16;
constexpr int64_t kLanes = 32;

/// What the kernels are built for: the op's shape and rotation.
struct QuantizeShape {
  int64_t batch, heads, groups, rows, headDim;
  Type element;
  std::optional<int64_t> seed;
  int64_t perLane() const { return headDim / kLanes; }
  int64_t headsPerGroup() const { return heads / groups; }
  /// Rows of one (batch, group) block: its heads' rows, contiguous.
  int64_t blockRows() const { return headsPerGroup() * rows; }
};

/// The alignment of a lane's share of a row, `bytes` long at a multiple of
/// `bytes` in a row that starts at least that aligned: the largest power of
/// two dividing it (a head dim of 192 gives a lane 6 values, 12 bytes of
/// bf16: 4-byte aligned).
llvm::MaybeAlign laneShareAlignment(int64_t bytes) {
  return llvm::MaybeAlign(bytes & -bytes);
}

/// Builds one kernel's code: index arithmetic, a row's values and the
/// rotation.
class QuantizeKernelBuilder {
public:
  QuantizeKernelBuilder(OpBuilder &b, Location loc, const QuantizeShape &s)
      : b(b), loc(loc), s(s) {}

  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value i32(int64_t v) {
    return arith::ConstantIntOp::create(b, loc, b.getI32Type(), v);
  }
  Value f32(double v) {
    return arith::ConstantOp::create(b, loc,
                                     b.getF32FloatAttr(static_cast<float>(v)));
  }

  /// Thread coordinates: lane, warp, and the block's (x, group, batch).
  void readCoordinates() {
    Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
    lane = arith::RemUIOp::create(b, loc, tid, index(kLanes));
    warp = arith::DivUIOp::create(b, loc, tid, index(kLanes));
    laneI32 = arith::IndexCastOp::create(b, loc, b.getI32Type(), lane);
    blockX = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
    group = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
    batch = gpu::BlockIdOp::create(b, loc, gpu::Dimension::z);
  }

  /// Row `k` of this warp within its (batch, group) block.
  Value blockRow(Value k) {
    // Operands are built one statement each: the order of a call's
    // arguments is unspecified, and the IR's order must not depend on the
    // host compiler.
    Value warps = index(kWarpsPerBlock);
    Value blockWarp = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, blockX, warps), warp);
    Value rowsPerWarp = index(kRowsPerWarp);
    Value first = arith::MulIOp::create(b, loc, blockWarp, rowsPerWarp);
    return arith::AddIOp::create(b, loc, first, k);
  }

  /// [b, h, n, lane * D/32] of block row `row`.
  SmallVector<Value> rowStart(Value row) {
    Value groupHead =
        arith::MulIOp::create(b, loc, group, index(s.headsPerGroup()));
    Value headInGroup = arith::DivUIOp::create(b, loc, row, index(s.rows));
    Value head = arith::AddIOp::create(b, loc, groupHead, headInGroup);
    Value n = arith::RemUIOp::create(b, loc, row, index(s.rows));
    Value column = arith::MulIOp::create(b, loc, lane, index(s.perLane()));
    return {batch, head, n, column};
  }

  /// This lane's D/32 values of the row at `at`, as f32, rotated if asked.
  SmallVector<Value> loadRow(Value input, ArrayRef<Value> at) {
    int64_t e = s.perLane();
    auto vectorType = VectorType::get({e}, s.element);
    int64_t bytes = e * s.element.getIntOrFloatBitWidth() / 8;
    Value loaded = vector::LoadOp::create(b, loc, vectorType, input, at,
                                          /*nontemporal=*/false,
                                          laneShareAlignment(bytes));
    SmallVector<Value> values;
    for (int64_t t = 0; t < e; ++t) {
      Value x = vector::ExtractOp::create(b, loc, loaded, t);
      if (!x.getType().isF32())
        x = arith::ExtFOp::create(b, loc, b.getF32Type(), x);
      values.push_back(x);
    }
    if (s.seed)
      rotate(values);
    return values;
  }

  /// The bits of |y|: non-negative floats order as their bits (as
  /// unsigned integers), so maxima are integer maxima.
  Value magnitudeBits(Value y) {
    Value bits = arith::BitcastOp::create(b, loc, b.getI32Type(), y);
    return arith::AndIOp::create(b, loc, bits, i32(0x7fffffff));
  }

  /// The value of the lane whose index differs from this one's by `offset`
  /// (an xor).
  Value shuffleXor(Value v, int64_t offset) {
    Value mask = i32(offset);
    Value width = i32(kLanes);
    return gpu::ShuffleOp::create(b, loc, v, mask, width, gpu::ShuffleMode::XOR)
        .getShuffleResult();
  }

  /// The largest of `bits` and the other lanes' (a butterfly of maxima).
  Value warpMax(Value bits) {
    for (int64_t offset = kLanes / 2; offset > 0; offset /= 2) {
      Value other = shuffleXor(bits, offset);
      bits = arith::MaxUIOp::create(b, loc, bits, other);
    }
    return bits;
  }

  Value lane, warp, laneI32, blockX, group, batch;

private:
  /// values[t] is element i = lane * E + t: the signs, then H over the bits
  /// of t (inside the lane) and of lane (shuffles), then 1 / sqrt(D).
  void rotate(SmallVector<Value> &values) {
    int64_t e = s.perLane();
    Type i32Type = b.getI32Type();
    // Sign of element lane * E + t: bit `lane` of mask t flips the float's
    // sign bit.
    for (int64_t t = 0; t < e; ++t) {
      uint32_t mask = 0;
      for (int64_t l = 0; l < kLanes; ++l)
        if (QuantizeOp::hadamardSign(*s.seed, l * e + t) < 0)
          mask |= 1u << l;
      if (mask == 0)
        continue;
      Value shifted = arith::ShRUIOp::create(
          b, loc, i32(static_cast<int32_t>(mask)), laneI32);
      Value bit = arith::AndIOp::create(b, loc, shifted, i32(1));
      Value signBit = arith::ShLIOp::create(b, loc, bit, i32(31));
      Value bits = arith::BitcastOp::create(b, loc, i32Type, values[t]);
      values[t] = arith::BitcastOp::create(
          b, loc, b.getF32Type(), arith::XOrIOp::create(b, loc, bits, signBit));
    }
    // Hd[i][j] = (-1)^popcount(i & j): one butterfly per bit of i,
    // y_low = a + b, y_high = a - b.
    for (int64_t stride = 1; stride < e; stride *= 2)
      for (int64_t t = 0; t < e; ++t) {
        if (t & stride)
          continue;
        Value low = values[t], high = values[t + stride];
        values[t] = arith::AddFOp::create(b, loc, low, high);
        values[t + stride] = arith::SubFOp::create(b, loc, low, high);
      }
    for (int64_t laneBit = 1; laneBit < kLanes; laneBit *= 2) {
      Value laneHasBit = arith::AndIOp::create(b, loc, laneI32, i32(laneBit));
      Value high = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne,
                                         laneHasBit, i32(0));
      for (Value &v : values) {
        Value other = shuffleXor(v, laneBit);
        // The lane with the bit clear holds a (y = a + b), the other b
        // (y = a - b, a being the partner's).
        Value sum = arith::AddFOp::create(b, loc, v, other);
        Value difference = arith::SubFOp::create(b, loc, other, v);
        v = arith::SelectOp::create(b, loc, high, difference, sum);
      }
    }
    Value norm = f32(1.0 / std::sqrt(static_cast<double>(s.headDim)));
    for (Value &v : values)
      v = arith::MulFOp::create(b, loc, v, norm);
  }

  OpBuilder &b;
  Location loc;
  const QuantizeShape &s;
};

gpu::GPUFuncOp createKernel(OpBuilder &b, Location loc, gpu::GPUModuleOp module,
                            StringRef name, StringRef kind, TypeRange arguments,
                            const QuantizeShape &s) {
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToEnd(module.getBody());
  auto func =
      gpu::GPUFuncOp::create(b, loc, name, b.getFunctionType(arguments, {}));
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  int64_t threads = kWarpsPerBlock * kLanes;
  func.setKnownBlockSizeAttr(
      b.getDenseI32ArrayAttr({static_cast<int32_t>(threads), 1, 1}));
  int64_t rowsPerBlock = kWarpsPerBlock * kRowsPerWarp;
  func->setAttr("fa.kind", b.getStringAttr(kind));
  func->setAttr(
      "fa.grid",
      b.getDenseI64ArrayAttr({(s.blockRows() + rowsPerBlock - 1) / rowsPerBlock,
                              s.groups, s.batch}));
  func->setAttr("fa.block", b.getDenseI64ArrayAttr({threads, 1, 1}));
  func->setAttr("fa.shared_bytes", b.getI64IntegerAttr(0));
  Block &entry = func.getBody().front();
  b.setInsertionPointToStart(&entry);
  gpu::ReturnOp::create(b, loc);
  return func;
}

/// `body(k, carried)` for this warp's rows k inside its block, the carried
/// value through the loop (rows past the block leave it).
Value forEachRow(OpBuilder &b, Location loc, QuantizeKernelBuilder &kb,
                 const QuantizeShape &s, Value init,
                 function_ref<Value(Value row, Value carried)> body) {
  Value lower = kb.index(0);
  Value upper = kb.index(kRowsPerWarp);
  Value step = kb.index(1);
  auto loop = scf::ForOp::create(b, loc, lower, upper, step, ValueRange{init});
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Value carried = loop.getRegionIterArgs()[0];
  Value row = kb.blockRow(loop.getInductionVar());
  Value inBlock = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, row,
                                        kb.index(s.blockRows()));
  // Warp-uniform: the rotation's shuffles see every lane.
  auto ifRow = scf::IfOp::create(b, loc, init.getType(), inBlock,
                                 /*withElseRegion=*/true);
  b.setInsertionPointToStart(ifRow.thenBlock());
  scf::YieldOp::create(b, loc, body(row, carried));
  b.setInsertionPointToStart(ifRow.elseBlock());
  scf::YieldOp::create(b, loc, carried);
  b.setInsertionPointToEnd(loop.getBody());
  scf::YieldOp::create(b, loc, ifRow.getResult(0));
  return loop.getResult(0);
}

/// NAME_amax(x, amax): amax[b, g] = max(amax[b, g], |y| of the block's rows).
void buildAmaxKernel(OpBuilder &b, Location loc, gpu::GPUFuncOp func,
                     const QuantizeShape &s) {
  b.setInsertionPointToStart(&func.getBody().front());
  QuantizeKernelBuilder kb(b, loc, s);
  kb.readCoordinates();
  Value input = func.getArgument(0), amax = func.getArgument(1);
  Value largest =
      forEachRow(b, loc, kb, s, kb.i32(0), [&](Value row, Value carried) {
        for (Value y : kb.loadRow(input, kb.rowStart(row)))
          carried =
              arith::MaxUIOp::create(b, loc, carried, kb.magnitudeBits(y));
        return carried;
      });
  largest = kb.warpMax(largest);
  Value laneZero = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                         kb.lane, kb.index(0));
  auto ifLaneZero = scf::IfOp::create(b, loc, laneZero, false);
  b.setInsertionPoint(ifLaneZero.thenBlock()->getTerminator());
  memref::AtomicRMWOp::create(b, loc, arith::AtomicRMWKind::maxs, largest, amax,
                              ValueRange{kb.batch, kb.group});
}

/// NAME(x, amax, output, descale): output = e4m3(clamp(y * 448 / amax)),
/// descale[b, g] = amax / 448 (by the block's first thread of x = 0).
void buildScaleKernel(OpBuilder &b, Location loc, gpu::GPUFuncOp func,
                      const QuantizeShape &s) {
  b.setInsertionPointToStart(&func.getBody().front());
  QuantizeKernelBuilder kb(b, loc, s);
  kb.readCoordinates();
  Value input = func.getArgument(0), amaxBits = func.getArgument(1);
  Value output = func.getArgument(2), descale = func.getArgument(3);
  Value floor = kb.f32(QuantizeOp::kMinAmax);
  Value bits =
      memref::LoadOp::create(b, loc, amaxBits, ValueRange{kb.batch, kb.group});
  Value amax = arith::MaximumFOp::create(
      b, loc, arith::BitcastOp::create(b, loc, b.getF32Type(), bits), floor);
  Value largest = kb.f32(QuantizeOp::kE4M3Max);
  Value lowest = kb.f32(-QuantizeOp::kE4M3Max);
  Value scale = arith::DivFOp::create(b, loc, largest, amax);
  int64_t e = s.perLane();
  Type i8 = b.getI8Type(), i16 = b.getI16Type();
  forEachRow(b, loc, kb, s, kb.f32(0.0), [&](Value row, Value carried) {
    SmallVector<Value> at = kb.rowStart(row);
    SmallVector<Value> y = kb.loadRow(input, at);
    SmallVector<Value> clamped;
    for (Value v : y)
      clamped.push_back(arith::MinimumFOp::create(
          b, loc,
          arith::MaximumFOp::create(
              b, loc, arith::MulFOp::create(b, loc, v, scale), lowest),
          largest));
    // cvt.rn.satfinite.e4m3x2: `a` the upper byte, `b` the lower.
    Value bytes = arith::ConstantOp::create(
        b, loc,
        DenseElementsAttr::get(VectorType::get({e}, i8),
                               b.getIntegerAttr(i8, 0)));
    for (int64_t t = 0; t < e; t += 2) {
      Value pair = NVVM::ConvertF32x2ToF8x2Op::create(
          b, loc, i16, clamped[t + 1], clamped[t], NVVM::FPRoundingMode::RN,
          NVVM::SaturationMode::SATFINITE, /*relu=*/false,
          b.getType<Float8E4M3FNType>());
      Value lowByte = arith::TruncIOp::create(b, loc, i8, pair);
      Value highByte = arith::TruncIOp::create(
          b, loc, i8,
          arith::ShRUIOp::create(b, loc, pair,
                                 arith::ConstantIntOp::create(b, loc, i16, 8)));
      bytes = vector::InsertOp::create(b, loc, lowByte, bytes, t);
      bytes = vector::InsertOp::create(b, loc, highByte, bytes, t + 1);
    }
    vector::StoreOp::create(b, loc, bytes, output, at, /*nontemporal=*/false,
                            laneShareAlignment(e));
    return carried;
  });
  Value zero = kb.index(0);
  Value firstBlock =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, kb.blockX, zero);
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value firstThread =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid, zero);
  Value first = arith::AndIOp::create(b, loc, firstBlock, firstThread);
  auto ifFirst = scf::IfOp::create(b, loc, first, false);
  b.setInsertionPoint(ifFirst.thenBlock()->getTerminator());
  memref::StoreOp::create(b, loc, arith::DivFOp::create(b, loc, amax, largest),
                          descale, ValueRange{kb.batch, kb.group});
}

/// The op's shape, or an error saying what the GPU kernels take.
FailureOr<QuantizeShape> quantizeShape(QuantizeOp op) {
  auto type = cast<RankedTensorType>(op.getInput().getType());
  auto descale = cast<RankedTensorType>(op.getDescale().getType());
  if (!type.hasStaticShape() || !descale.hasStaticShape())
    return op.emitError() << "the GPU quantization is built for static "
                             "shapes; got "
                          << type << " and " << descale;
  QuantizeShape s{type.getDimSize(0),    type.getDimSize(1),
                  descale.getDimSize(1), type.getDimSize(2),
                  type.getDimSize(3),    type.getElementType(),
                  op.getRotationSeed()};
  if (s.headDim % 64 != 0 || s.headDim > 256)
    return op.emitError() << "the GPU quantization takes head dims of 64 to "
                             "256 in steps of 64 (a lane's share of a row "
                             "in pairs); got "
                          << s.headDim;
  // The runtime indexes a tensor with 32 bits (fa/Runtime/Limits.h).
  int64_t elements = 1;
  for (int64_t dim : type.getShape())
    if (llvm::MulOverflow(elements, dim, elements) || elements > INT32_MAX)
      return op.emitError() << "the GPU quantization takes at most 2^31 - 1 "
                               "elements; got "
                            << type;
  if (s.batch > 65535 || s.groups > 65535)
    return op.emitError() << "the GPU quantization's grid has at most 65535 "
                             "batches and groups";
  return s;
}

struct ConvertQuantizeToGPUPass
    : fa::impl::ConvertQuantizeToGPUBase<ConvertQuantizeToGPUPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<std::pair<func::FuncOp, QuantizeOp>> jobs;
    WalkResult walked = module.walk([&](QuantizeOp op) {
      auto func = dyn_cast<func::FuncOp>(op->getParentOp());
      if (!func || !func.getBody().hasOneBlock() ||
          llvm::range_size(func.getBody().front()) != 2 ||
          func.getNumArguments() != 1 || op.getInput() != func.getArgument(0)) {
        op.emitError() << "a GPU quantization is a function of one "
                          "argument whose body is the fa.quantize of it";
        return WalkResult::interrupt();
      }
      jobs.push_back({func, op});
      return WalkResult::advance();
    });
    if (walked.wasInterrupted())
      return signalPassFailure();
    if (jobs.empty())
      return;

    OpBuilder b(module.getContext());
    gpu::GPUModuleOp kernels;
    for (auto &op : module.getBody()->getOperations())
      if (auto existing = dyn_cast<gpu::GPUModuleOp>(op))
        kernels = existing;
    if (!kernels) {
      b.setInsertionPointToEnd(module.getBody());
      module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                      b.getUnitAttr());
      kernels = gpu::GPUModuleOp::create(b, module.getLoc(), "fa_kernels");
    }
    for (auto [func, op] : jobs) {
      FailureOr<QuantizeShape> shape = quantizeShape(op);
      if (failed(shape))
        return signalPassFailure();
      Location loc = op.getLoc();
      auto memref = [](Type type, Type element) {
        return MemRefType::get(cast<ShapedType>(type).getShape(), element);
      };
      Type input = memref(op.getInput().getType(), shape->element);
      Type amax = memref(op.getDescale().getType(), b.getI32Type());
      Type output = memref(op.getOutput().getType(), b.getI8Type());
      Type descale = memref(op.getDescale().getType(), b.getF32Type());
      std::string name = func.getSymName().str();
      gpu::GPUFuncOp amaxKernel =
          createKernel(b, loc, kernels, name + "_amax", "quantize_amax",
                       {input, amax}, *shape);
      buildAmaxKernel(b, loc, amaxKernel, *shape);
      gpu::GPUFuncOp scaleKernel =
          createKernel(b, loc, kernels, name, "quantize",
                       {input, amax, output, descale}, *shape);
      buildScaleKernel(b, loc, scaleKernel, *shape);
      if (shape->seed)
        scaleKernel->setAttr("fa.rotation_seed",
                             b.getI64IntegerAttr(*shape->seed));
      // The kernels carry what a launcher needs; the host function goes,
      // as the attention conversions' do.
      func.erase();
    }
  }
};

} // namespace
