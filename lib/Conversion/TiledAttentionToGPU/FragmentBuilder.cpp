//===- FragmentBuilder.cpp - Warp-level mma.sync fragment helpers ---------===//

#include "FragmentBuilder.h"

#include "fa/Conversion/ApproximateMath.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::fa;

ThreadCoords FragmentBuilder::threadCoords() {
  ThreadCoords t;
  t.tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  t.warp = divU(t.tid, 32);
  t.lane = remU(t.tid, 32);
  t.group = divU(t.lane, 4);
  t.quadLane = remU(t.lane, 4);
  return t;
}

SharedArena::SharedArena(FragmentBuilder &fb) : fb(fb) {
  OpBuilder &b = fb.builder();
  auto space =
      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  raw = gpu::DynamicSharedMemoryOp::create(
      b, fb.location(),
      MemRefType::get({ShapedType::kDynamic}, b.getI8Type(),
                      MemRefLayoutAttrInterface(), space));
}

Value SharedArena::take(ArrayRef<int64_t> shape, Type elementType) {
  OpBuilder &b = fb.builder();
  auto type = MemRefType::get(shape, elementType, MemRefLayoutAttrInterface(),
                              cast<MemRefType>(raw.getType()).getMemorySpace());
  Value view = memref::ViewOp::create(b, fb.location(), type, raw,
                                      fb.index(offset), ValueRange{});
  int64_t elements = 1;
  for (int64_t dim : shape)
    elements *= dim;
  offset += elements * elementType.getIntOrFloatBitWidth() / 8;
  return view;
}

Value FragmentBuilder::index(int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}
Value FragmentBuilder::i32(int64_t v) {
  return arith::ConstantIntOp::create(b, loc, v, 32);
}
Value FragmentBuilder::f32(double v) {
  return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
}
Value FragmentBuilder::add(Value x, Value y) {
  return arith::AddIOp::create(b, loc, x, y);
}
Value FragmentBuilder::mul(Value x, int64_t y) {
  return arith::MulIOp::create(b, loc, x, index(y));
}
Value FragmentBuilder::divU(Value x, int64_t y) {
  return arith::DivUIOp::create(b, loc, x, index(y));
}
Value FragmentBuilder::remU(Value x, int64_t y) {
  return arith::RemUIOp::create(b, loc, x, index(y));
}
Value FragmentBuilder::minS(Value x, Value y) {
  return arith::MinSIOp::create(b, loc, x, y);
}
Value FragmentBuilder::cmp(int pred, Value x, Value y) {
  return arith::CmpIOp::create(b, loc, static_cast<arith::CmpIPredicate>(pred),
                               x, y);
}
Value FragmentBuilder::select(Value c, Value x, Value y) {
  return arith::SelectOp::create(b, loc, c, x, y);
}

Value FragmentBuilder::exp2(Value x) {
  return emitApproximateMath(b, loc, ApproximateFn::Exp2, x);
}
Value FragmentBuilder::log2(Value x) {
  return emitApproximateMath(b, loc, ApproximateFn::Log2, x);
}
Value FragmentBuilder::tanh(Value x) {
  return emitApproximateMath(b, loc, ApproximateFn::Tanh, x);
}

void FragmentBuilder::copyRowsAsync(Value src, ValueRange prefix,
                                    Value rowStart, int64_t seqLen,
                                    int64_t rows, int64_t cols, Value dst,
                                    Value tid, int64_t threads, Value dstRow0) {
  const int64_t chunk = 8; // 16 bytes of 16-bit elements
  int64_t chunksPerRow = cols / chunk;
  int64_t chunks = rows * chunksPerRow;
  auto tokenType = nvgpu::DeviceAsyncTokenType::get(b.getContext());
  for (int64_t i = 0; i * threads < chunks; ++i) {
    Value linear = add(tid, i * threads);
    // A last round that not every thread has a chunk in.
    OpBuilder::InsertionGuard guard(b);
    if ((i + 1) * threads > chunks) {
      auto ifChunk =
          scf::IfOp::create(b, loc,
                            cmp(static_cast<int>(arith::CmpIPredicate::slt),
                                linear, index(chunks)),
                            false);
      b.setInsertionPoint(ifChunk.thenBlock()->getTerminator());
    }
    Value row = divU(linear, chunksPerRow);
    Value col = mul(remU(linear, chunksPerRow), chunk);
    Value globalRow = add(rowStart, row);
    Value inBounds = cmp(static_cast<int>(arith::CmpIPredicate::slt),
                         globalRow, index(seqLen));
    // Past the end: copy zero bytes (zero-fill) from a clamped, valid row.
    Value srcRow = minS(globalRow, index(seqLen - 1));
    Value srcElements = select(inBounds, index(chunk), index(0));
    SmallVector<Value> srcIndices(prefix);
    srcIndices.append({srcRow, col});
    Value dstRow = dstRow0 ? add(dstRow0, row) : row;
    nvgpu::DeviceAsyncCopyOp::create(
        b, loc, tokenType, dst, ValueRange{dstRow, col}, src, srcIndices,
        b.getIndexAttr(chunk), srcElements, b.getUnitAttr());
  }
  NVVM::CpAsyncCommitGroupOp::create(b, loc);
}

void FragmentBuilder::waitAsyncCopies() {
  NVVM::CpAsyncWaitGroupOp::create(b, loc, b.getI32IntegerAttr(0));
  gpu::BarrierOp::create(b, loc);
}

Value FragmentBuilder::visible(Value row, Value col, const MaskBand &band,
                               int64_t seqKV) {
  auto slt = static_cast<int>(arith::CmpIPredicate::slt);
  auto sge = static_cast<int>(arith::CmpIPredicate::sge);
  Value ok = cmp(slt, col, index(seqKV));
  if (band.lower)
    ok = arith::AndIOp::create(b, loc, ok, cmp(sge, col, add(row, *band.lower)));
  if (band.upper)
    ok = arith::AndIOp::create(b, loc, ok, cmp(slt, col, add(row, *band.upper)));
  return ok;
}

Value FragmentBuilder::warpReduceSum(Value v) {
  for (int64_t offset : {16, 8, 4, 2, 1}) {
    Value other = gpu::ShuffleOp::create(b, loc, v, i32(offset), i32(32),
                                         gpu::ShuffleMode::XOR)
                      .getShuffleResult();
    v = arith::AddFOp::create(b, loc, v, other);
  }
  return v;
}

Value FragmentBuilder::quadReduce(Value v, bool max) {
  for (int64_t offset : {1, 2}) {
    Value other = gpu::ShuffleOp::create(b, loc, v, i32(offset), i32(32),
                                         gpu::ShuffleMode::XOR)
                      .getShuffleResult();
    v = max ? arith::MaximumFOp::create(b, loc, v, other).getResult()
            : arith::AddFOp::create(b, loc, v, other).getResult();
  }
  return v;
}

Value FragmentBuilder::packPair(Value pair) {
  // f16 mma takes vector<2xf16>; bf16 mma takes the pair as an i32.
  if (elementType.isF16())
    return pair;
  Value asInt = vector::BitCastOp::create(
      b, loc, VectorType::get({1}, b.getI32Type()), pair);
  return vector::ExtractOp::create(b, loc, asInt, ArrayRef<int64_t>{0});
}

std::array<Value, 4> FragmentBuilder::unpackLdMatrix(Value result,
                                                     unsigned count) {
  std::array<Value, 4> regs;
  for (unsigned i = 0; i < count; ++i)
    regs[i] = packPair(vector::ExtractOp::create(
        b, loc, result, ArrayRef<int64_t>{static_cast<int64_t>(i)}));
  return regs;
}

std::array<Value, 4> FragmentBuilder::loadAFromKMajor(Value smem, Value lane,
                                                      Value k0, Value m0) {
  // Matrix i of ldmatrix.x4 must come back as a0a1, a2a3, a4a5, a6a7:
  // (m 0-7, k 0-7), (m 8-15, k 0-7), (m 0-7, k 8-15), (m 8-15, k 8-15). In
  // k-major storage that is rows k0 + 8 (i / 2), columns m0 + 8 (i % 2).
  Value row = add(add(k0, remU(lane, 8)), mul(divU(lane, 16), 8));
  Value col = add(m0, mul(remU(divU(lane, 8), 2), 8));
  auto type = VectorType::get({4, 2}, elementType);
  Value result = nvgpu::LdMatrixOp::create(b, loc, type, smem,
                                           ValueRange{row, col},
                                           /*transpose=*/true,
                                           /*numTiles=*/4);
  return unpackLdMatrix(result, 4);
}

std::array<Value, 4> FragmentBuilder::loadA(Value smem, Value lane, Value row0,
                                            Value col0) {
  // Lanes 0-15 address rows 0-15 of the left 8 columns, lanes 16-31 the
  // right 8 columns: matrices come back as a0a1, a2a3, a4a5, a6a7.
  Value row = add(row0, remU(lane, 16));
  Value col = add(col0, mul(divU(lane, 16), 8));
  auto type = VectorType::get({4, 2}, elementType);
  Value result = nvgpu::LdMatrixOp::create(b, loc, type, smem,
                                           ValueRange{row, col},
                                           /*transpose=*/false,
                                           /*numTiles=*/4);
  return unpackLdMatrix(result, 4);
}

std::array<std::array<Value, 2>, 2>
FragmentBuilder::loadBPairFromNMajor(Value smem, Value lane, Value n0,
                                     Value k0) {
  // Lanes 8i..8i+7 address matrix i: n rows of tile (i / 2), k half (i % 2).
  Value row = add(add(n0, remU(lane, 8)), mul(divU(lane, 16), 8));
  Value col = add(k0, mul(remU(divU(lane, 8), 2), 8));
  auto type = VectorType::get({4, 2}, elementType);
  Value result = nvgpu::LdMatrixOp::create(b, loc, type, smem,
                                           ValueRange{row, col},
                                           /*transpose=*/false,
                                           /*numTiles=*/4);
  std::array<Value, 4> regs = unpackLdMatrix(result, 4);
  return {{{regs[0], regs[1]}, {regs[2], regs[3]}}};
}

std::array<std::array<Value, 2>, 2>
FragmentBuilder::loadBPairFromKMajor(Value smem, Value lane, Value k0,
                                     Value n0) {
  // Lanes 8i..8i+7 address matrix i: k rows (i % 2) half, n tile (i / 2);
  // .trans hands each thread (k 2t..2t+1, n g).
  Value row = add(k0, remU(lane, 16));
  Value col = add(n0, mul(divU(lane, 16), 8));
  auto type = VectorType::get({4, 2}, elementType);
  Value result = nvgpu::LdMatrixOp::create(b, loc, type, smem,
                                           ValueRange{row, col},
                                           /*transpose=*/true,
                                           /*numTiles=*/4);
  std::array<Value, 4> regs = unpackLdMatrix(result, 4);
  return {{{regs[0], regs[1]}, {regs[2], regs[3]}}};
}

std::array<Value, 4> FragmentBuilder::packA(const CFragment &lo,
                                            const CFragment &hi) {
  auto pair = [&](Value x, Value y) {
    Value xs = arith::TruncFOp::create(b, loc, elementType, x);
    Value ys = arith::TruncFOp::create(b, loc, elementType, y);
    return packPair(vector::FromElementsOp::create(
        b, loc, VectorType::get({2}, elementType), ValueRange{xs, ys}));
  };
  return {pair(lo[0], lo[1]), pair(lo[2], lo[3]), pair(hi[0], hi[1]),
          pair(hi[2], hi[3])};
}

CFragment FragmentBuilder::mma(const std::array<Value, 4> &a,
                               const std::array<Value, 2> &bb,
                               const CFragment &c) {
  Type f32 = b.getF32Type();
  auto resultType = LLVM::LLVMStructType::getLiteral(
      b.getContext(), SmallVector<Type>(4, f32));
  NVVM::MMATypes ptxType =
      elementType.isF16() ? NVVM::MMATypes::f16 : NVVM::MMATypes::bf16;
  auto op = NVVM::MmaOp::create(
      b, loc, resultType, ValueRange(a), ValueRange(bb), ValueRange(c),
      ArrayRef<int64_t>{16, 8, 16}, std::nullopt, std::nullopt,
      std::array<NVVM::MMATypes, 2>{ptxType, ptxType},
      std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                     NVVM::MMALayout::col});
  CFragment d;
  for (int64_t i = 0; i < 4; ++i)
    d[i] = LLVM::ExtractValueOp::create(b, loc, op.getResult(), i);
  return d;
}
