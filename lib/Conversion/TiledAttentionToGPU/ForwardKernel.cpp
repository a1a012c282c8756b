//===- ForwardKernel.cpp - Attention forward as an mma.sync kernel --------===//
//
// One thread block per (Q block, query head, batch); warp w owns query rows
// [R w, R w + R) of the block, R = 16 or 32 (FA2's split-Q: no cross-warp
// reductions; with R = 32 every K/V fragment a warp loads feeds two m16
// tiles). Per KV block, software-pipelined on one K and one V buffer:
//
//   wait K(kb); issue V(kb)      S = Q K(kb)ᵀ on mma.sync; online softmax
//   wait V(kb); issue K(kb + 1)  O += P V(kb), P reused from registers
//
// so each copy overlaps the other GEMM. The accumulator, row max and
// per-thread partial row sums are loop-carried; the quad reduction of the
// sum is deferred to the epilogue.
//
//===----------------------------------------------------------------------===//

#include "ForwardKernel.h"

#include "FragmentBuilder.h"
#include "fa/Transforms/TilingUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::fa;

namespace {

constexpr double kLog2E = 1.4426950408889634;
constexpr double kLn2 = 0.6931471805599453;

/// Per-thread state carried across KV blocks, for each of the warp's m16
/// tiles: output accumulator fragments, then the row max and partial row sum
/// of rows g and g + 8.
struct SoftmaxState {
  SmallVector<SmallVector<CFragment>> acc; // [m][dn]
  SmallVector<std::array<Value, 2>> max, sum; // [m][row half]

  SmallVector<Value> flatten() const {
    SmallVector<Value> values;
    for (const auto &tile : acc)
      for (const CFragment &frag : tile)
        values.append(frag.begin(), frag.end());
    for (const auto &pair : max)
      values.append(pair.begin(), pair.end());
    for (const auto &pair : sum)
      values.append(pair.begin(), pair.end());
    return values;
  }
  static SoftmaxState unflatten(ValueRange values, int64_t mTiles,
                                int64_t accTiles) {
    SoftmaxState state;
    unsigned i = 0;
    state.acc.resize(mTiles);
    for (int64_t m = 0; m < mTiles; ++m)
      for (int64_t d = 0; d < accTiles; ++d, i += 4)
        state.acc[m].push_back(
            {values[i], values[i + 1], values[i + 2], values[i + 3]});
    for (int64_t m = 0; m < mTiles; ++m, i += 2)
      state.max.push_back({values[i], values[i + 1]});
    for (int64_t m = 0; m < mTiles; ++m, i += 2)
      state.sum.push_back({values[i], values[i + 1]});
    return state;
  }
};

class ForwardKernelEmitter {
public:
  ForwardKernelEmitter(const AttentionKernelConfig &config) : c(config) {
    band = MaskBand::get(c.causal,
                         c.window ? std::optional<ArrayRef<int64_t>>(
                                        ArrayRef<int64_t>(windowStorage))
                                  : std::nullopt,
                         c.seqQ, c.seqKV);
  }

  gpu::GPUFuncOp emit(OpBuilder &b, Location loc, gpu::GPUModuleOp module);

private:
  /// cp.async of rows [rowStart, rowStart + rows) x `cols` of the (batch,
  /// head) slice of `src` into shared `dst`, committed as one group; rows at
  /// or past `seqLen` are zero-filled.
  void copyTile(FragmentBuilder &fb, Value src, Value head, Value rowStart,
                int64_t seqLen, int64_t rows, int64_t cols, Value dst);

  /// One KV block: returns the updated state.
  SoftmaxState emitKVBlock(FragmentBuilder &fb, Value kb, bool masked,
                           const SoftmaxState &state);
  /// scf.for kb in [from, to) of KV blocks.
  SoftmaxState emitKVLoop(OpBuilder &b, Location loc, Value from, Value to,
                          bool masked, const SoftmaxState &state);
  void emitEpilogue(FragmentBuilder &fb, const SoftmaxState &state);

  const AttentionKernelConfig &c;
  std::array<int64_t, 2> windowStorage =
      c.window ? std::array<int64_t, 2>{c.window->first, c.window->second}
               : std::array<int64_t, 2>{-1, -1};
  MaskBand band;

  // Values of the kernel body.
  Value q, k, v, o, lse;
  Value batch, head, kvHead, qStart, kvEnd, tid, warp, lane, group, quadLane;
  Value warpRow; ///< first row of the warp within the Q block
  Value qShared, kShared, vShared;
};

void ForwardKernelEmitter::copyTile(FragmentBuilder &fb, Value src,
                                    Value headIdx, Value rowStart,
                                    int64_t seqLen, int64_t rows, int64_t cols,
                                    Value dst) {
  fb.copyRowsAsync(src, ValueRange{batch, headIdx}, rowStart, seqLen, rows,
                   cols, dst, tid, c.threads());
}

SoftmaxState ForwardKernelEmitter::emitKVBlock(FragmentBuilder &fb, Value kb,
                                               bool masked,
                                               const SoftmaxState &state) {
  OpBuilder &b = fb.builder();
  Location loc = fb.location();
  Value kStart = fb.mul(kb, c.blockKV);
  int64_t mTiles = c.mTiles();

  // K(kb) has landed (issued by the previous block or the prologue); V(kb)
  // streams in while QKᵀ and the softmax run.
  fb.waitAsyncCopies();
  copyTile(fb, v, kvHead, kStart, c.seqKV, c.blockKV, c.headDimV, vShared);

  // S = Q Kᵀ for the warp's rows; each K fragment pair feeds every m tile.
  int64_t scoreTiles = c.blockKV / 8;
  Value zero = fb.f32(0.0);
  SmallVector<SmallVector<CFragment>> scores(
      mTiles, SmallVector<CFragment>(scoreTiles,
                                     CFragment{zero, zero, zero, zero}));
  for (int64_t kk = 0; kk < c.headDim / 16; ++kk) {
    SmallVector<std::array<Value, 4>> a;
    for (int64_t m = 0; m < mTiles; ++m)
      a.push_back(fb.loadA(qShared, lane, fb.add(warpRow, 16 * m),
                           fb.index(16 * kk)));
    for (int64_t j = 0; j < scoreTiles; j += 2) {
      auto pair = fb.loadBPairFromNMajor(kShared, lane, fb.index(8 * j),
                                         fb.index(16 * kk));
      for (int64_t m = 0; m < mTiles; ++m)
        for (int64_t h = 0; h < 2; ++h)
          scores[m][j + h] = fb.mma(a[m], pair[h], scores[m][j + h]);
    }
  }

  // Scores in base 2, soft-capped and masked.
  const float negInf = -std::numeric_limits<float>::infinity();
  Value minusInf = fb.f32(negInf);
  Value colBase = fb.add(kStart, fb.mul(quadLane, 2));
  auto slt = static_cast<int>(arith::CmpIPredicate::slt);
  for (int64_t m = 0; m < mTiles; ++m) {
    std::array<Value, 2> rows;
    for (int64_t r = 0; r < 2; ++r)
      rows[r] = fb.add(fb.add(qStart, warpRow), fb.add(group, 16 * m + 8 * r));
    for (int64_t j = 0; j < scoreTiles; ++j) {
      for (int64_t e = 0; e < 4; ++e) {
        Value x = scores[m][j][e];
        if (c.softcap) {
          Value t = fb.tanh(
              arith::MulFOp::create(b, loc, x, fb.f32(c.scale / *c.softcap)));
          x = arith::MulFOp::create(b, loc, t, fb.f32(*c.softcap * kLog2E));
        } else {
          x = arith::MulFOp::create(b, loc, x, fb.f32(c.scale * kLog2E));
        }
        if (masked)
          x = fb.select(fb.visible(rows[e / 2],
                                   fb.add(colBase, 8 * j + e % 2), band,
                                   c.seqKV),
                        x, minusInf);
        scores[m][j][e] = x;
      }
    }
  }

  // Online softmax on rows g (r = 0) and g + 8 (r = 1) of each m tile.
  SoftmaxState next = state;
  for (int64_t m = 0; m < mTiles; ++m) {
    std::array<Value, 2> safeMax, alpha;
    for (int64_t r = 0; r < 2; ++r) {
      Value rowMax = minusInf;
      for (int64_t j = 0; j < scoreTiles; ++j)
        for (int64_t e = 2 * r; e < 2 * r + 2; ++e)
          rowMax = arith::MaximumFOp::create(b, loc, rowMax, scores[m][j][e]);
      rowMax = fb.quadReduce(rowMax, /*max=*/true);
      Value newMax =
          arith::MaximumFOp::create(b, loc, state.max[m][r], rowMax);
      // A row that has seen no key keeps -inf; exponentiate against 0.
      Value empty = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                          newMax, minusInf);
      safeMax[r] = fb.select(empty, zero, newMax);
      alpha[r] = fb.exp2(
          arith::SubFOp::create(b, loc, state.max[m][r], safeMax[r]));
      next.max[m][r] = newMax;
    }
    std::array<Value, 2> partialSum = {zero, zero};
    for (int64_t j = 0; j < scoreTiles; ++j)
      for (int64_t e = 0; e < 4; ++e) {
        Value p = fb.exp2(
            arith::SubFOp::create(b, loc, scores[m][j][e], safeMax[e / 2]));
        scores[m][j][e] = p;
        partialSum[e / 2] =
            arith::AddFOp::create(b, loc, partialSum[e / 2], p);
      }
    for (int64_t r = 0; r < 2; ++r)
      next.sum[m][r] = arith::AddFOp::create(
          b, loc, arith::MulFOp::create(b, loc, alpha[r], state.sum[m][r]),
          partialSum[r]);
    for (CFragment &frag : next.acc[m])
      for (int64_t e = 0; e < 4; ++e)
        frag[e] = arith::MulFOp::create(b, loc, frag[e], alpha[e / 2]);
  }

  // V(kb) has landed and every warp is done with K(kb): prefetch K(kb + 1)
  // under the P·V GEMM.
  fb.waitAsyncCopies();
  Value nextKb = fb.add(kb, 1);
  auto ifMore = scf::IfOp::create(
      b, loc, fb.cmp(slt, nextKb, kvEnd), /*withElseRegion=*/false);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(ifMore.thenBlock()->getTerminator());
    copyTile(fb, k, kvHead, fb.mul(nextKb, c.blockKV), c.seqKV, c.blockKV,
             c.headDim, kShared);
  }

  // O += P V, P straight from registers; each V fragment pair feeds every m.
  for (int64_t kk = 0; kk < c.blockKV / 16; ++kk) {
    SmallVector<std::array<Value, 4>> a;
    for (int64_t m = 0; m < mTiles; ++m)
      a.push_back(fb.packA(scores[m][2 * kk], scores[m][2 * kk + 1]));
    for (int64_t dn = 0; dn < c.headDimV / 8; dn += 2) {
      auto pair = fb.loadBPairFromKMajor(vShared, lane, fb.index(16 * kk),
                                         fb.index(8 * dn));
      for (int64_t m = 0; m < mTiles; ++m)
        for (int64_t h = 0; h < 2; ++h)
          next.acc[m][dn + h] = fb.mma(a[m], pair[h], next.acc[m][dn + h]);
    }
  }
  return next;
}

SoftmaxState ForwardKernelEmitter::emitKVLoop(OpBuilder &b, Location loc,
                                              Value from, Value to,
                                              bool masked,
                                              const SoftmaxState &state) {
  int64_t accTiles = c.headDimV / 8;
  auto loop = scf::ForOp::create(
      b, loc, from, to, arith::ConstantIndexOp::create(b, loc, 1),
      state.flatten(),
      [&](OpBuilder &nb, Location nl, Value kb, ValueRange iterArgs) {
        FragmentBuilder fb(nb, nl, c.elementType);
        SoftmaxState next =
            emitKVBlock(fb, kb, masked,
                        SoftmaxState::unflatten(iterArgs, c.mTiles(), accTiles));
        scf::YieldOp::create(nb, nl, next.flatten());
      });
  return SoftmaxState::unflatten(loop.getResults(), c.mTiles(), accTiles);
}

void ForwardKernelEmitter::emitEpilogue(FragmentBuilder &fb,
                                        const SoftmaxState &state) {
  OpBuilder &b = fb.builder();
  Location loc = fb.location();
  Value zero = fb.f32(0.0);
  Value colBase = fb.mul(quadLane, 2);
  for (int64_t m = 0; m < c.mTiles(); ++m) {
    for (int64_t r = 0; r < 2; ++r) {
      Value sum = fb.quadReduce(state.sum[m][r], /*max=*/false);
      Value empty = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                          sum, zero);
      Value inverse = fb.select(
          empty, zero,
          arith::DivFOp::create(b, loc, fb.f32(1.0), sum).getResult());
      Value row =
          fb.add(fb.add(qStart, warpRow), fb.add(group, 16 * m + 8 * r));
      Value inRange = fb.cmp(static_cast<int>(arith::CmpIPredicate::slt), row,
                             fb.index(c.seqQ));
      auto ifRow = scf::IfOp::create(b, loc, inRange, /*withElseRegion=*/false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(ifRow.thenBlock()->getTerminator());
      for (int64_t dn = 0; dn < c.headDimV / 8; ++dn)
        for (int64_t e = 2 * r; e < 2 * r + 2; ++e) {
          Value value =
              arith::MulFOp::create(b, loc, state.acc[m][dn][e], inverse);
          value = arith::TruncFOp::create(b, loc, c.elementType, value);
          Value col = fb.add(colBase, 8 * dn + e % 2);
          memref::StoreOp::create(b, loc, value, o,
                                  ValueRange{batch, head, row, col});
        }
      // One lane per quad writes the row's log-sum-exp (natural log).
      Value firstLane = fb.cmp(static_cast<int>(arith::CmpIPredicate::eq),
                               quadLane, fb.index(0));
      auto ifLane = scf::IfOp::create(b, loc, firstLane, false);
      b.setInsertionPoint(ifLane.thenBlock()->getTerminator());
      Value value = arith::MulFOp::create(
          b, loc, arith::AddFOp::create(b, loc, state.max[m][r], fb.log2(sum)),
          fb.f32(kLn2));
      value = fb.select(empty, fb.f32(-std::numeric_limits<float>::infinity()),
                        value);
      memref::StoreOp::create(b, loc, value, lse,
                              ValueRange{batch, head, row});
    }
  }
}

gpu::GPUFuncOp ForwardKernelEmitter::emit(OpBuilder &b, Location loc,
                                          gpu::GPUModuleOp module) {
  Type t = c.elementType, f32 = b.getF32Type();
  auto qType = MemRefType::get({c.batch, c.headsQ, c.seqQ, c.headDim}, t);
  auto kType = MemRefType::get({c.batch, c.headsKV, c.seqKV, c.headDim}, t);
  auto vType = MemRefType::get({c.batch, c.headsKV, c.seqKV, c.headDimV}, t);
  auto oType = MemRefType::get({c.batch, c.headsQ, c.seqQ, c.headDimV}, t);
  auto lseType = MemRefType::get({c.batch, c.headsQ, c.seqQ}, f32);
  gpu::GPUFuncOp func = createKernelFunc(
      b, loc, module, c.name, {qType, kType, vType, oType, lseType}, "forward",
      {c.numQBlocks(), c.headsQ, c.batch}, c.threads(), c.sharedBytes(), c);
  OpBuilder::InsertionGuard guard(b);
  Block &entry = func.getBody().front();
  b.setInsertionPointToStart(&entry);
  q = entry.getArgument(0);
  k = entry.getArgument(1);
  v = entry.getArgument(2);
  o = entry.getArgument(3);
  lse = entry.getArgument(4);
  FragmentBuilder fb(b, loc, t);

  Value qBlock = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  head = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  batch = gpu::BlockIdOp::create(b, loc, gpu::Dimension::z);
  ThreadCoords coords = fb.threadCoords();
  tid = coords.tid;
  warp = coords.warp;
  lane = coords.lane;
  group = coords.group;
  quadLane = coords.quadLane;
  warpRow = fb.mul(warp, c.rowsPerWarp);
  kvHead = fb.divU(head, c.headsQ / c.headsKV);
  qStart = fb.mul(qBlock, c.blockQ);

  // Shared memory: Q tile, then K and V tiles, rows padded.
  SharedArena shared(fb);
  qShared = shared.take({c.blockQ, c.rowPitch(c.headDim)}, t);
  kShared = shared.take({c.blockKV, c.rowPitch(c.headDim)}, t);
  vShared = shared.take({c.blockKV, c.rowPitch(c.headDimV)}, t);
  assert(shared.bytes() == c.sharedBytes() && "shared layout out of sync");

  Value lastRow =
      fb.add(fb.minS(fb.add(qStart, c.blockQ), fb.index(c.seqQ)), -1);
  BlockSplit split =
      splitKVBlocks(b, loc, band, qStart, lastRow, c.seqKV, c.blockKV);
  kvEnd = split.hi;

  // Prologue: Q and the first K tile.
  copyTile(fb, q, head, qStart, c.seqQ, c.blockQ, c.headDim, qShared);
  auto ifAny = scf::IfOp::create(
      b, loc,
      fb.cmp(static_cast<int>(arith::CmpIPredicate::slt), split.lo, kvEnd),
      /*withElseRegion=*/false);
  {
    OpBuilder::InsertionGuard inner(b);
    b.setInsertionPoint(ifAny.thenBlock()->getTerminator());
    copyTile(fb, k, kvHead, fb.mul(split.lo, c.blockKV), c.seqKV, c.blockKV,
             c.headDim, kShared);
  }

  Value zero = fb.f32(0.0);
  Value minusInf = fb.f32(-std::numeric_limits<float>::infinity());
  SoftmaxState state;
  state.acc.assign(c.mTiles(), SmallVector<CFragment>(
                                   c.headDimV / 8,
                                   CFragment{zero, zero, zero, zero}));
  state.max.assign(c.mTiles(), {minusInf, minusInf});
  state.sum.assign(c.mTiles(), {zero, zero});
  state = emitKVLoop(b, loc, split.lo, split.fullLo, true, state);
  state = emitKVLoop(b, loc, split.fullLo, split.fullHi, false, state);
  state = emitKVLoop(b, loc, split.fullHi, split.hi, true, state);
  emitEpilogue(fb, state);
  gpu::ReturnOp::create(b, loc);
  return func;
}

} // namespace

int64_t AttentionKernelConfig::sharedBytes() const {
  return 2 * (blockQ * rowPitch(headDim) + blockKV * rowPitch(headDim) +
              blockKV * rowPitch(headDimV));
}

std::string mlir::fa::checkForwardKernelConfig(const AttentionKernelConfig &c) {
  if (std::string grid = checkGridLimits(c); !grid.empty())
    return grid;
  if (!c.elementType.isF16() && !c.elementType.isBF16())
    return "the mma.sync kernel takes f16 or bf16 operands";
  if (c.rowsPerWarp != 16 && c.rowsPerWarp != 32)
    return llvm::formatv("rows per warp must be 16 or 32, got {0}",
                         c.rowsPerWarp);
  if (c.blockQ % c.rowsPerWarp != 0 || c.blockQ < 16 || c.warps() > 16 ||
      !llvm::isPowerOf2_64(c.warps()))
    return llvm::formatv("block-q must be {0} rows per warp times a power "
                         "of two of warps, at most 16, got {1}",
                         c.rowsPerWarp, c.blockQ);
  if (c.blockKV < 16 || !llvm::isPowerOf2_64(c.blockKV))
    return llvm::formatv("block-kv must be a power of two, at least 16, got "
                         "{0}",
                         c.blockKV);
  if (c.headDim % 16 != 0 || c.headDimV % 16 != 0)
    return llvm::formatv("head dims must be multiples of 16, got D = {0}, "
                         "Dv = {1}",
                         c.headDim, c.headDimV);
  if (c.sharedBytes() > fagpu::kMaxSharedBytesPerBlock)
    return llvm::formatv("tiles need {0} bytes of shared memory, over the "
                         "227 KiB a block can have",
                         c.sharedBytes());
  return "";
}

gpu::GPUFuncOp mlir::fa::emitForwardKernel(OpBuilder &b, Location loc,
                                           gpu::GPUModuleOp module,
                                           const AttentionKernelConfig &config) {
  return ForwardKernelEmitter(config).emit(b, loc, module);
}
