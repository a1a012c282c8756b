//===- BackwardKernel.cpp - Attention backward as mma.sync kernels --------===//
//
// FA2's backward. One thread block per (KV block, KV head, batch); warp w
// owns keys [16 w, 16 w + 16) of the block, so every product is computed
// transposed, with keys as the mma M dimension:
//
//   Sᵀ = K Qᵀ,  Pᵀ = 2^(Sᵀ s log2 e - LSE log2 e),  dPᵀ = V dOᵀ,
//   dSᵀ = Pᵀ ∘ (dPᵀ - delta) s (1 - tanh²),
//   dV += Pᵀ dO,  dK += dSᵀ Q        (Pᵀ, dSᵀ reused from registers)
//   dQ += dS K                      (dSᵀ through shared memory; f32 atomics)
//
// K and V stay in shared memory for the whole block; the block walks the
// query heads of its KV head's group and the visible Q blocks (masked /
// unmasked / masked, from the tiled IR's band). Q, dO, LSE and delta are
// fetched one Q block ahead: into the other of two shared stages while this
// block computes when both fit (FA2's double buffer), else into the one stage
// once its last reader is past (overlapping the dQ phase).
//
//===----------------------------------------------------------------------===//

#include "BackwardKernel.h"
#include "BackwardRowKernels.h"

#include "FragmentBuilder.h"
#include "fa/Transforms/TilingUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/Support/FormatVariadic.h"

#include <limits>

using namespace mlir;
using namespace mlir::fa;

namespace {

constexpr double kLog2E = 1.4426950408889634;

/// dK and dV accumulators of the warp's 16 keys: [D / 8] and [Dv / 8] C
/// fragments, flattened for loop-carrying.
struct GradState {
  SmallVector<CFragment> dk, dv;

  SmallVector<Value> flatten() const {
    SmallVector<Value> values;
    for (const auto *list : {&dk, &dv})
      for (const CFragment &frag : *list)
        values.append(frag.begin(), frag.end());
    return values;
  }
  static GradState unflatten(ValueRange values, int64_t dkTiles,
                             int64_t dvTiles) {
    GradState state;
    unsigned i = 0;
    for (int64_t t = 0; t < dkTiles; ++t, i += 4)
      state.dk.push_back({values[i], values[i + 1], values[i + 2],
                          values[i + 3]});
    for (int64_t t = 0; t < dvTiles; ++t, i += 4)
      state.dv.push_back({values[i], values[i + 1], values[i + 2],
                          values[i + 3]});
    return state;
  }
};

int64_t bwdWarps(const AttentionKernelConfig &c) { return c.blockKV / 16; }
int64_t bwdThreads(const AttentionKernelConfig &c) { return bwdWarps(c) * 32; }

constexpr int64_t kMaxSharedBytes = fagpu::kMaxSharedBytesPerBlock;

int64_t bwdSharedBytes(const AttentionKernelConfig &c, int64_t stages) {
  int64_t halves = c.blockKV * c.rowPitch(c.headDim) +          // K
                   c.blockKV * c.rowPitch(c.headDimV) +         // V
                   stages * c.blockQ * c.rowPitch(c.headDim) +  // Q
                   stages * c.blockQ * c.rowPitch(c.headDimV) + // dO
                   c.blockKV * c.rowPitch(c.blockQ);            // dSᵀ
  return 2 * halves + 4 * 2 * stages * c.blockQ;                // LSE, delta
}

/// Stages of the per-Q-block tiles: two when they fit in shared memory.
int64_t bwdStages(const AttentionKernelConfig &c) {
  return bwdSharedBytes(c, 2) <= kMaxSharedBytes ? 2 : 1;
}

int64_t bwdSharedBytes(const AttentionKernelConfig &c) {
  return bwdSharedBytes(c, bwdStages(c));
}

/// How the dQ = dS K phase shares the Q block's 16-row tiles among the
/// warps: each warp takes `rowTilesPerWarp` row tiles over all columns, or,
/// with fewer row tiles than warps, one row tile and 1 / `colSplit` of the
/// columns.
struct DQSplit {
  int64_t rowTilesPerWarp = 1, colSplit = 1;
};
std::optional<DQSplit> dqSplit(const AttentionKernelConfig &c) {
  int64_t rowTiles = c.blockQ / 16, warps = bwdWarps(c);
  if (c.blockQ % 16 != 0 || rowTiles == 0)
    return std::nullopt;
  if (rowTiles % warps == 0)
    return DQSplit{rowTiles / warps, 1};
  int64_t colSplit = warps / rowTiles;
  if (warps % rowTiles == 0 && (c.headDim / 8) % (2 * colSplit) == 0)
    return DQSplit{1, colSplit};
  return std::nullopt;
}

/// One visit of the block's walk: query head `head` (`g`-th of the KV head's
/// group), Q block `qb`, whose tiles sit at row `stageRow` of the staged
/// shared tiles; and the visit after it (`hasNext`), to be fetched into row
/// `nextStageRow`.
struct QVisit {
  Value g, head, qb, stageRow;
  Value hasNext, nextHead, nextQStart, nextStageRow;
};

/// A thread's share of one Q block's LSE (times log2 e; +inf past Nq, so
/// that P = 0) and delta (0 past Nq), held in registers until stored.
struct RowStats {
  SmallVector<Value> lse, delta;
};

class BackwardKernelEmitter {
public:
  explicit BackwardKernelEmitter(const AttentionKernelConfig &config)
      : c(config) {
    std::optional<ArrayRef<int64_t>> window;
    if (c.window)
      window = ArrayRef<int64_t>(windowStorage);
    band = MaskBand::get(c.causal, window, c.seqQ, c.seqKV);
  }

  void emitMain(OpBuilder &b, Location loc, gpu::GPUModuleOp module);

private:
  QVisit visit(FragmentBuilder &fb, Value g, Value qb);
  /// cp.async of the Q and dO rows of (head, Q block at qStart) into the
  /// stage at `stageRow`.
  void fetchQBlock(FragmentBuilder &fb, Value head, Value qStart,
                   Value stageRow);
  RowStats loadRowStats(FragmentBuilder &fb, Value head, Value qStart);
  void storeRowStats(FragmentBuilder &fb, const RowStats &stats,
                     Value stageRow);
  /// Issues the next visit's fetch; returns its row statistics.
  RowStats prefetch(FragmentBuilder &fb, const QVisit &at);
  GradState emitQBlock(FragmentBuilder &fb, const QVisit &at, bool masked,
                       const GradState &state);
  void emitDQ(FragmentBuilder &fb, Value head, Value qStart);
  GradState emitQLoop(OpBuilder &b, Location loc, Value from, Value to, Value g,
                      bool masked, const GradState &state);

  const AttentionKernelConfig &c;
  std::array<int64_t, 2> windowStorage =
      c.window ? std::array<int64_t, 2>{c.window->first, c.window->second}
               : std::array<int64_t, 2>{-1, -1};
  MaskBand band;

  // Values of the main kernel body.
  Value q, k, v, dO, lse, delta, dqAcc, dk, dv;
  Value qbLo, qbHi; ///< The visible Q blocks [qbLo, qbHi) of every head.
  Value batch, kvHead, kStart, tid, warp, lane, group, quadLane, warpKey;
  Value kShared, vShared, qShared, doShared, dsShared, lseShared,
      deltaShared;
};

QVisit BackwardKernelEmitter::visit(FragmentBuilder &fb, Value g, Value qb) {
  OpBuilder &b = fb.builder();
  Location loc = fb.location();
  int64_t groupSize = c.headsQ / c.headsKV;
  QVisit at;
  at.g = g;
  at.qb = qb;
  Value groupStart = fb.mul(kvHead, groupSize);
  at.head = fb.add(groupStart, g);
  // Visits so far (all heads walk the same Q blocks): its parity picks the
  // stage.
  Value span = arith::SubIOp::create(b, loc, qbHi, qbLo);
  Value headVisits = arith::MulIOp::create(b, loc, g, span);
  Value headVisit = arith::SubIOp::create(b, loc, qb, qbLo);
  Value count = fb.add(headVisits, headVisit);
  at.stageRow = fb.index(0);
  at.nextStageRow = at.stageRow;
  if (bwdStages(c) == 2) {
    at.stageRow = fb.mul(fb.remU(count, 2), c.blockQ);
    at.nextStageRow =
        arith::SubIOp::create(b, loc, fb.index(c.blockQ), at.stageRow);
  }
  Value nextQb = fb.add(qb, 1);
  Value wrap =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, nextQb, qbHi);
  Value nextG = fb.select(wrap, fb.add(g, 1), g);
  at.hasNext = fb.cmp(static_cast<int>(arith::CmpIPredicate::slt), nextG,
                      fb.index(groupSize));
  at.nextHead = fb.add(groupStart, fb.minS(nextG, fb.index(groupSize - 1)));
  at.nextQStart = fb.mul(fb.select(wrap, qbLo, nextQb), c.blockQ);
  return at;
}

void BackwardKernelEmitter::fetchQBlock(FragmentBuilder &fb, Value head,
                                        Value qStart, Value stageRow) {
  fb.copyRowsAsync(q, ValueRange{batch, head}, qStart, c.seqQ, c.blockQ,
                   c.headDim, qShared, tid, bwdThreads(c), stageRow);
  fb.copyRowsAsync(dO, ValueRange{batch, head}, qStart, c.seqQ, c.blockQ,
                   c.headDimV, doShared, tid, bwdThreads(c), stageRow);
}

RowStats BackwardKernelEmitter::loadRowStats(FragmentBuilder &fb, Value head,
                                             Value qStart) {
  OpBuilder &b = fb.builder();
  Location loc = fb.location();
  RowStats stats;
  for (int64_t r0 = 0; r0 < c.blockQ; r0 += bwdThreads(c)) {
    // Threads past the block load a valid row too; storeRowStats skips them.
    Value local = fb.minS(fb.add(tid, r0), fb.index(c.blockQ - 1));
    Value row = fb.add(qStart, local);
    Value valid = fb.cmp(static_cast<int>(arith::CmpIPredicate::slt), row,
                         fb.index(c.seqQ));
    Value safeRow = fb.minS(row, fb.index(c.seqQ - 1));
    Value l = memref::LoadOp::create(b, loc, lse,
                                     ValueRange{batch, head, safeRow});
    l = arith::MulFOp::create(b, loc, l, fb.f32(kLog2E));
    stats.lse.push_back(
        fb.select(valid, l, fb.f32(std::numeric_limits<float>::infinity())));
    Value dlt = memref::LoadOp::create(b, loc, delta,
                                       ValueRange{batch, head, safeRow});
    stats.delta.push_back(fb.select(valid, dlt, fb.f32(0.0)));
  }
  return stats;
}

void BackwardKernelEmitter::storeRowStats(FragmentBuilder &fb,
                                          const RowStats &stats,
                                          Value stageRow) {
  OpBuilder &b = fb.builder();
  Location loc = fb.location();
  for (size_t i = 0; i < stats.lse.size(); ++i) {
    Value local = fb.add(tid, static_cast<int64_t>(i) * bwdThreads(c));
    auto ifLocal =
        scf::IfOp::create(b, loc,
                          fb.cmp(static_cast<int>(arith::CmpIPredicate::slt),
                                 local, fb.index(c.blockQ)),
                          false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(ifLocal.thenBlock()->getTerminator());
    Value at = fb.add(stageRow, local);
    memref::StoreOp::create(b, loc, stats.lse[i], lseShared, ValueRange{at});
    memref::StoreOp::create(b, loc, stats.delta[i], deltaShared,
                            ValueRange{at});
  }
}

RowStats BackwardKernelEmitter::prefetch(FragmentBuilder &fb,
                                         const QVisit &at) {
  OpBuilder &b = fb.builder();
  auto ifNext = scf::IfOp::create(b, fb.location(), at.hasNext, false);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(ifNext.thenBlock()->getTerminator());
    fetchQBlock(fb, at.nextHead, at.nextQStart, at.nextStageRow);
  }
  // Plain loads: nothing waits on them until storeRowStats at the end.
  return loadRowStats(fb, at.nextHead, at.nextQStart);
}

GradState BackwardKernelEmitter::emitQBlock(FragmentBuilder &fb,
                                            const QVisit &at, bool masked,
                                            const GradState &state) {
  OpBuilder &b = fb.builder();
  Location loc = fb.location();
  Value qStart = fb.mul(at.qb, c.blockQ);
  Value stage = at.stageRow;
  auto staged = [&](int64_t row) { return fb.add(stage, row); };

  // This visit's tiles have landed, and every warp is done with the previous
  // visit's (so its stage and dSᵀ may be overwritten).
  fb.waitAsyncCopies();
  RowStats next;
  if (bwdStages(c) == 2)
    next = prefetch(fb, at);

  int64_t qTiles = c.blockQ / 8;
  Value zero = fb.f32(0.0);
  SmallVector<CFragment> s(qTiles, CFragment{zero, zero, zero, zero});
  SmallVector<CFragment> dp = s;
  // Sᵀ = K Qᵀ and dPᵀ = V dOᵀ for the warp's 16 keys.
  for (int64_t kk = 0; kk < c.headDim / 16; ++kk) {
    std::array<Value, 4> a = fb.loadA(kShared, lane, warpKey, fb.index(16 * kk));
    for (int64_t jn = 0; jn < qTiles; jn += 2) {
      auto pair = fb.loadBPairFromNMajor(qShared, lane, staged(8 * jn),
                                         fb.index(16 * kk));
      for (int64_t h = 0; h < 2; ++h)
        s[jn + h] = fb.mma(a, pair[h], s[jn + h]);
    }
  }
  for (int64_t kk = 0; kk < c.headDimV / 16; ++kk) {
    std::array<Value, 4> a = fb.loadA(vShared, lane, warpKey, fb.index(16 * kk));
    for (int64_t jn = 0; jn < qTiles; jn += 2) {
      auto pair = fb.loadBPairFromNMajor(doShared, lane, staged(8 * jn),
                                         fb.index(16 * kk));
      for (int64_t h = 0; h < 2; ++h)
        dp[jn + h] = fb.mma(a, pair[h], dp[jn + h]);
    }
  }

  // Pᵀ and dSᵀ element by element; element e of tile jn sits at key
  // warpKey + g + 8 (e / 2) and query 8 jn + 2 t + e % 2 of the block.
  SmallVector<CFragment> p = s, ds = s;
  Value colBase = fb.mul(quadLane, 2);
  for (int64_t jn = 0; jn < qTiles; ++jn)
    for (int64_t e = 0; e < 4; ++e) {
      Value localQ = fb.add(colBase, 8 * jn + e % 2);
      Value x = s[jn][e], factor = fb.f32(c.scale);
      if (c.softcap) {
        Value t = fb.tanh(
            arith::MulFOp::create(b, loc, x, fb.f32(c.scale / *c.softcap)));
        x = arith::MulFOp::create(b, loc, t, fb.f32(*c.softcap * kLog2E));
        factor = arith::MulFOp::create(
            b, loc, factor,
            arith::SubFOp::create(b, loc, fb.f32(1.0),
                                  arith::MulFOp::create(b, loc, t, t)));
      } else {
        x = arith::MulFOp::create(b, loc, x, fb.f32(c.scale * kLog2E));
      }
      Value stagedQ = fb.add(stage, localQ);
      Value l = memref::LoadOp::create(b, loc, lseShared, ValueRange{stagedQ});
      Value prob = fb.exp2(arith::SubFOp::create(b, loc, x, l));
      if (masked) {
        Value key = fb.add(fb.add(kStart, warpKey), fb.add(group, 8 * (e / 2)));
        prob = fb.select(fb.visible(fb.add(qStart, localQ), key, band,
                                    c.seqKV),
                         prob, zero);
      }
      p[jn][e] = prob;
      Value dlt =
          memref::LoadOp::create(b, loc, deltaShared, ValueRange{stagedQ});
      Value grad = arith::MulFOp::create(
          b, loc, prob, arith::SubFOp::create(b, loc, dp[jn][e], dlt));
      ds[jn][e] = arith::MulFOp::create(b, loc, grad, factor);
    }

  // dV += Pᵀ dO and dK += dSᵀ Q, A operands straight from registers.
  GradState nextState = state;
  for (int64_t kk = 0; kk < c.blockQ / 16; ++kk) {
    std::array<Value, 4> aP = fb.packA(p[2 * kk], p[2 * kk + 1]);
    std::array<Value, 4> aDS = fb.packA(ds[2 * kk], ds[2 * kk + 1]);
    for (int64_t dn = 0; dn < c.headDimV / 8; dn += 2) {
      auto pair = fb.loadBPairFromKMajor(doShared, lane, staged(16 * kk),
                                         fb.index(8 * dn));
      for (int64_t h = 0; h < 2; ++h)
        nextState.dv[dn + h] = fb.mma(aP, pair[h], nextState.dv[dn + h]);
    }
    for (int64_t dn = 0; dn < c.headDim / 8; dn += 2) {
      auto pair = fb.loadBPairFromKMajor(qShared, lane, staged(16 * kk),
                                         fb.index(8 * dn));
      for (int64_t h = 0; h < 2; ++h)
        nextState.dk[dn + h] = fb.mma(aDS, pair[h], nextState.dk[dn + h]);
    }
  }

  // dSᵀ to shared memory, for dQ.
  for (int64_t jn = 0; jn < qTiles; ++jn)
    for (int64_t e = 0; e < 4; ++e) {
      Value keyRow = fb.add(warpKey, fb.add(group, 8 * (e / 2)));
      Value col = fb.add(colBase, 8 * jn + e % 2);
      memref::StoreOp::create(
          b, loc, arith::TruncFOp::create(b, loc, c.elementType, ds[jn][e]),
          dsShared, ValueRange{keyRow, col});
    }
  // Past this barrier no warp reads this visit's Q, dO, LSE or delta.
  gpu::BarrierOp::create(b, loc);
  if (bwdStages(c) == 1)
    next = prefetch(fb, at);
  emitDQ(fb, at.head, qStart);
  storeRowStats(fb, next, at.nextStageRow);
  return nextState;
}

void BackwardKernelEmitter::emitDQ(FragmentBuilder &fb, Value head,
                                   Value qStart) {
  OpBuilder &b = fb.builder();
  Location loc = fb.location();
  Type f32 = b.getF32Type();
  DQSplit split = *dqSplit(c);
  int64_t warps = bwdWarps(c), dTiles = c.headDim / 8 / split.colSplit;
  Value rowWarp = warp, colOffset = fb.index(0);
  if (split.colSplit > 1) {
    int64_t rowTiles = c.blockQ / 16;
    rowWarp = fb.remU(warp, rowTiles);
    colOffset = fb.mul(fb.divU(warp, rowTiles), 8 * dTiles);
  }
  Value colBase = fb.add(colOffset, fb.mul(quadLane, 2));
  Value zero = fb.f32(0.0);
  for (int64_t r = 0; r < split.rowTilesPerWarp; ++r) {
    Value m0 = fb.mul(fb.add(rowWarp, r * warps), 16);
    SmallVector<CFragment> acc(dTiles, CFragment{zero, zero, zero, zero});
    for (int64_t kk = 0; kk < c.blockKV / 16; ++kk) {
      std::array<Value, 4> a =
          fb.loadAFromKMajor(dsShared, lane, fb.index(16 * kk), m0);
      for (int64_t dn = 0; dn < dTiles; dn += 2) {
        auto pair = fb.loadBPairFromKMajor(kShared, lane, fb.index(16 * kk),
                                           fb.add(colOffset, 8 * dn));
        for (int64_t h = 0; h < 2; ++h)
          acc[dn + h] = fb.mma(a, pair[h], acc[dn + h]);
      }
    }
    for (int64_t half = 0; half < 2; ++half) {
      Value row = fb.add(fb.add(qStart, m0), fb.add(group, 8 * half));
      auto ifRow = scf::IfOp::create(
          b, loc,
          fb.cmp(static_cast<int>(arith::CmpIPredicate::slt), row,
                 fb.index(c.seqQ)),
          false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(ifRow.thenBlock()->getTerminator());
      for (int64_t dn = 0; dn < dTiles; ++dn)
        for (int64_t e = 2 * half; e < 2 * half + 2; ++e)
          memref::AtomicRMWOp::create(
              b, loc, f32, arith::AtomicRMWKind::addf, acc[dn][e], dqAcc,
              ValueRange{batch, head, row, fb.add(colBase, 8 * dn + e % 2)});
    }
  }
}

GradState BackwardKernelEmitter::emitQLoop(OpBuilder &b, Location loc,
                                           Value from, Value to, Value g,
                                           bool masked,
                                           const GradState &state) {
  int64_t dkTiles = c.headDim / 8, dvTiles = c.headDimV / 8;
  auto loop = scf::ForOp::create(
      b, loc, from, to, arith::ConstantIndexOp::create(b, loc, 1),
      state.flatten(),
      [&](OpBuilder &nb, Location nl, Value qb, ValueRange iterArgs) {
        FragmentBuilder fb(nb, nl, c.elementType);
        GradState next =
            emitQBlock(fb, visit(fb, g, qb), masked,
                       GradState::unflatten(iterArgs, dkTiles, dvTiles));
        scf::YieldOp::create(nb, nl, next.flatten());
      });
  return GradState::unflatten(loop.getResults(), dkTiles, dvTiles);
}

void BackwardKernelEmitter::emitMain(OpBuilder &b, Location loc,
                                     gpu::GPUModuleOp module) {
  Type t = c.elementType, f32 = b.getF32Type();
  int64_t numKVBlocks = (c.seqKV + c.blockKV - 1) / c.blockKV;
  gpu::GPUFuncOp func = createKernelFunc(
      b, loc, module, c.name,
      {backwardTensorType(c, c.headsQ, c.seqQ, c.headDim, t),
       backwardTensorType(c, c.headsKV, c.seqKV, c.headDim, t),
       backwardTensorType(c, c.headsKV, c.seqKV, c.headDimV, t),
       backwardTensorType(c, c.headsQ, c.seqQ, c.headDimV, t),
       backwardRowType(c, f32), backwardRowType(c, f32),
       backwardTensorType(c, c.headsQ, c.seqQ, c.headDim, f32),
       backwardTensorType(c, c.headsKV, c.seqKV, c.headDim, t),
       backwardTensorType(c, c.headsKV, c.seqKV, c.headDimV, t)},
      "backward", {numKVBlocks, c.headsKV, c.batch}, bwdThreads(c),
      bwdSharedBytes(c), c);
  OpBuilder::InsertionGuard guard(b);
  Block &entry = func.getBody().front();
  b.setInsertionPointToStart(&entry);
  q = entry.getArgument(0);
  k = entry.getArgument(1);
  v = entry.getArgument(2);
  dO = entry.getArgument(3);
  lse = entry.getArgument(4);
  delta = entry.getArgument(5);
  dqAcc = entry.getArgument(6);
  dk = entry.getArgument(7);
  dv = entry.getArgument(8);
  FragmentBuilder fb(b, loc, t);

  Value kBlock = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  kvHead = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  batch = gpu::BlockIdOp::create(b, loc, gpu::Dimension::z);
  ThreadCoords coords = fb.threadCoords();
  tid = coords.tid;
  warp = coords.warp;
  lane = coords.lane;
  group = coords.group;
  quadLane = coords.quadLane;
  warpKey = fb.mul(warp, 16);
  kStart = fb.mul(kBlock, c.blockKV);

  SharedArena shared(fb);
  auto tile = [&](int64_t rows, int64_t cols) {
    return shared.take({rows, c.rowPitch(cols)}, t);
  };
  kShared = tile(c.blockKV, c.headDim);
  vShared = tile(c.blockKV, c.headDimV);
  int64_t stages = bwdStages(c);
  qShared = tile(stages * c.blockQ, c.headDim);
  doShared = tile(stages * c.blockQ, c.headDimV);
  dsShared = tile(c.blockKV, c.blockQ);
  lseShared = shared.take({stages * c.blockQ}, f32);
  deltaShared = shared.take({stages * c.blockQ}, f32);
  assert(shared.bytes() == bwdSharedBytes(c) && "shared layout out of sync");

  // K and V stay resident; the first Q block's wait covers them.
  fb.copyRowsAsync(k, ValueRange{batch, kvHead}, kStart, c.seqKV, c.blockKV,
                   c.headDim, kShared, tid, bwdThreads(c));
  fb.copyRowsAsync(v, ValueRange{batch, kvHead}, kStart, c.seqKV, c.blockKV,
                   c.headDimV, vShared, tid, bwdThreads(c));

  Value lastKey =
      fb.add(fb.minS(fb.add(kStart, c.blockKV), fb.index(c.seqKV)), -1);
  Value inBounds =
      fb.cmp(static_cast<int>(arith::CmpIPredicate::sle),
             fb.add(kStart, c.blockKV), fb.index(c.seqKV));
  BlockSplit split = splitQBlocks(b, loc, band, kStart, lastKey, inBounds,
                                  c.seqQ, c.blockQ);
  qbLo = split.lo;
  qbHi = split.hi;
  int64_t groupSize = c.headsQ / c.headsKV;
  // The first visit's tiles, into stage 0 (harmless if there is none: rows
  // past Nq are zero-filled and clamped).
  Value firstHead = fb.mul(kvHead, groupSize);
  Value firstQStart = fb.mul(qbLo, c.blockQ);
  fetchQBlock(fb, firstHead, firstQStart, fb.index(0));
  storeRowStats(fb, loadRowStats(fb, firstHead, firstQStart), fb.index(0));

  Value zero = fb.f32(0.0);
  GradState state;
  state.dk.assign(c.headDim / 8, CFragment{zero, zero, zero, zero});
  state.dv.assign(c.headDimV / 8, CFragment{zero, zero, zero, zero});
  auto heads = scf::ForOp::create(
      b, loc, fb.index(0), fb.index(groupSize), fb.index(1), state.flatten(),
      [&](OpBuilder &nb, Location nl, Value g, ValueRange iterArgs) {
        GradState s = GradState::unflatten(iterArgs, c.headDim / 8,
                                           c.headDimV / 8);
        s = emitQLoop(nb, nl, split.lo, split.fullLo, g, true, s);
        s = emitQLoop(nb, nl, split.fullLo, split.fullHi, g, false, s);
        s = emitQLoop(nb, nl, split.fullHi, split.hi, g, true, s);
        scf::YieldOp::create(nb, nl, s.flatten());
      });
  state = GradState::unflatten(heads.getResults(), c.headDim / 8,
                               c.headDimV / 8);
  // With no visible Q block the prologue's copies are still in flight.
  NVVM::CpAsyncWaitGroupOp::create(b, loc, b.getI32IntegerAttr(0));

  // dK and dV of the warp's keys, cast to the element type.
  Value colBase = fb.mul(quadLane, 2);
  for (int64_t half = 0; half < 2; ++half) {
    Value key = fb.add(fb.add(kStart, warpKey), fb.add(group, 8 * half));
    auto ifKey = scf::IfOp::create(
        b, loc,
        fb.cmp(static_cast<int>(arith::CmpIPredicate::slt), key,
               fb.index(c.seqKV)),
        false);
    OpBuilder::InsertionGuard inner(b);
    b.setInsertionPoint(ifKey.thenBlock()->getTerminator());
    for (auto [frags, dest] : {std::pair{&state.dk, dk},
                               std::pair{&state.dv, dv}})
      for (int64_t dn = 0; dn < static_cast<int64_t>(frags->size()); ++dn)
        for (int64_t e = 2 * half; e < 2 * half + 2; ++e)
          memref::StoreOp::create(
              b, loc, arith::TruncFOp::create(b, loc, t, (*frags)[dn][e]),
              dest,
              ValueRange{batch, kvHead, key, fb.add(colBase, 8 * dn + e % 2)});
  }
  gpu::ReturnOp::create(b, loc);
}

} // namespace

std::string mlir::fa::checkBackwardKernelConfig(const AttentionKernelConfig &c) {
  if (std::string grid = checkGridLimits(c); !grid.empty())
    return grid;
  if (!c.elementType.isF16() && !c.elementType.isBF16())
    return "the mma.sync kernels take f16 or bf16 operands";
  if (c.blockKV % 16 != 0 || c.blockKV < 16 || c.blockKV > 256)
    return llvm::formatv("block-kv of the backward must be a multiple of 16 "
                         "keys (one warp each) in [16, 256], got {0}",
                         c.blockKV);
  if (c.headDim % 16 != 0 || c.headDimV % 16 != 0)
    return llvm::formatv("head dims must be multiples of 16, got D = {0}, "
                         "Dv = {1}",
                         c.headDim, c.headDimV);
  if (!dqSplit(c))
    return llvm::formatv(
        "block-q of the backward must split into 16-row dQ tiles that the "
        "{0} warps share evenly: a multiple of {1} rows, or {1} / n rows "
        "with n dividing D / 16 = {2}; got {3}",
        bwdWarps(c), 16 * bwdWarps(c), c.headDim / 16, c.blockQ);
  if (bwdSharedBytes(c) > kMaxSharedBytes)
    return llvm::formatv("tiles need {0} bytes of shared memory, over the "
                         "227 KiB a block can have",
                         bwdSharedBytes(c));
  return "";
}

void mlir::fa::emitBackwardMainKernel(OpBuilder &b, Location loc,
                                      gpu::GPUModuleOp module,
                                      const AttentionKernelConfig &config) {
  BackwardKernelEmitter(config).emitMain(b, loc, module);
}
