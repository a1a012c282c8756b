//===- TileAttention.cpp - Tile the online-softmax forward ----------------===//
//
// fa.online_attention + fa.normalize on whole tensors become
//
//   scf.forall (b, h, qb) in (B, Hq, ceil(Nq / Br)) {
//     Q, acc, max, sum tiles (zero-padded past Nq)
//     scf.for kb in [lo, fullLo)     { fa.online_attention tile, masked }
//     scf.for kb in [fullLo, fullHi) { fa.online_attention tile, unmasked }
//     scf.for kb in [fullHi, hi)     { fa.online_attention tile, masked }
//
// Masked tiles are `keys_in_bounds` (only the causal / window band masks
// them) where the KV length is static and a multiple of the block, or where
// the band's upper edge hides the keys past the sequence end (causal).
//     fa.normalize tile; insert the valid rows of O and LSE
//   }
//
// KV blocks outside [lo, hi) are hidden by the causal / window mask from
// every row of the Q block and are never visited.
//
// Varlen (packed sequences): b is the sequence, the grid's Q blocks cover
// max_seqlen_q, and each sequence's lengths and first rows come from
// cu_seqlens; tiles are cut at those rows, masks and tile positions are the
// sequence's own. A Q block past its sequence's end has no rows and visits
// no KV block.
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FA/IR/FAOps.h"
#include "fa/Transforms/Passes.h"

#include "fa/Transforms/TilingUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

#include <cmath>

namespace mlir {
namespace fa {
#define GEN_PASS_DEF_TILEATTENTION
#include "fa/Transforms/Passes.h.inc"
} // namespace fa
} // namespace mlir

using namespace mlir;
using namespace mlir::fa;

namespace {

/// The whole-tensor online op feeding `norm`, or null when `norm` does not
/// normalize exactly the three results of one.
OnlineAttentionOp getProducer(NormalizeOp norm) {
  auto online = norm.getAcc().getDefiningOp<OnlineAttentionOp>();
  if (!online || online.isTile() || norm.getAcc() != online.getResultAcc() ||
      norm.getMax() != online.getResultMax() ||
      norm.getSum() != online.getResultSum())
    return nullptr;
  return online;
}

class ForwardTiler {
public:
  ForwardTiler(RewriterBase &rewriter, OnlineAttentionOp online,
               NormalizeOp norm, int64_t blockQ, int64_t blockKV,
               FloatAttr rescaleThreshold)
      : rewriter(rewriter), online(online), norm(norm), blockQ(blockQ),
        blockKV(blockKV), rescaleThreshold(rescaleThreshold) {
    headsQ = online.getQuery().getType().getDimSize(1);
    headsKV = online.getKey().getType().getDimSize(1);
  }

  void rewrite();

private:
  /// Emits `scf.for kb in [from, to)` of tile steps; returns the new state.
  SmallVector<Value> emitKVLoop(Location loc, Value from, Value to, bool masked,
                                ValueRange state, Value kvHead, Value qTile,
                                Value qStart);
  /// Binds `seqQ`, `seqKV`, the rows' offsets and the batch index of the
  /// tensors for forall batch index `b`.
  void bindSequence(Location loc, Value b);

  RewriterBase &rewriter;
  OnlineAttentionOp online;
  NormalizeOp norm;
  int64_t blockQ, blockKV;
  // The tile steps' rescale_threshold; null for the exact running max.
  FloatAttr rescaleThreshold;
  int64_t headsQ, headsKV;
  // Sequence lengths: constants, or tensor.dim of the operands where the
  // shapes are dynamic (known at run time only).
  Value seqQ, seqKV;
  // Where the sequence's rows start in the tensors (0 unless varlen), and
  // the tensors' batch index (0 for packed sequences).
  Value qOffset, kvOffset, batch;
  // Every KV block is whole (a static KV length that is a multiple of the
  // block): the masked blocks mask the band only, not the sequence end.
  bool keysInBounds = false;
  MaskBandValues band;
  // FP8: the block's (batch, KV head) factors of the scores and of O.
  SmallVector<Value> scoreDescales;
  Value valueDescale;
};

void ForwardTiler::bindSequence(Location loc, Value b) {
  Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
  if (!online.isVarlen()) {
    seqQ = dimValue(rewriter, loc, online.getQuery(), 2);
    seqKV = dimValue(rewriter, loc, online.getKey(), 2);
    qOffset = kvOffset = zero;
    batch = b;
    return;
  }
  SequenceRows q = sequenceRows(rewriter, loc, online.getCuSeqlensQ(), b);
  SequenceRows kv = sequenceRows(rewriter, loc, online.getCuSeqlensK(), b);
  qOffset = q.offset;
  seqQ = q.length;
  kvOffset = kv.offset;
  seqKV = kv.length;
  batch = zero;
}

SmallVector<Value> ForwardTiler::emitKVLoop(Location loc, Value from, Value to,
                                            bool masked, ValueRange state,
                                            Value kvHead, Value qTile,
                                            Value qStart) {
  Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
  auto loop = scf::ForOp::create(
      rewriter, loc, from, to, one, state,
      [&](OpBuilder &builder, Location loc, Value kb, ValueRange iterArgs) {
        Value kStart = arith::MulIOp::create(
            builder, loc, kb,
            arith::ConstantIndexOp::create(builder, loc, blockKV));
        Value cols = validRows(builder, loc, kStart, seqKV, blockKV);
        Value kRow = arith::AddIOp::create(builder, loc, kvOffset, kStart);
        Value kTile = extractPaddedTile(builder, loc, online.getKey(), batch,
                                        kvHead, kRow, cols, blockKV);
        Value vTile = extractPaddedTile(builder, loc, online.getValue(), batch,
                                        kvHead, kRow, cols, blockKV);
        Value qLen = seqQ, kvLen = seqKV;
        auto step = OnlineAttentionOp::create(
            builder, loc, iterArgs[0].getType(), iterArgs[1].getType(),
            iterArgs[2].getType(), qTile, kTile, vTile, iterArgs[0],
            iterArgs[1], iterArgs[2], scoreDescales,
            ValueRange{qStart, kStart, qLen, kvLen},
            /*cu_seqlens_q=*/Value(), /*cu_seqlens_k=*/Value(),
            /*max_seqlen_q=*/Value(), /*max_seqlen_k=*/Value(),
            online.getScaleAttr(), online.getCausalAttr(),
            online.getWindowAttr(), online.getSoftcapAttr(),
            masked ? nullptr : builder.getUnitAttr(),
            masked && keysInBounds ? builder.getUnitAttr() : nullptr,
            rescaleThreshold);
        scf::YieldOp::create(builder, loc, step.getResults());
      });
  return loop.getResults();
}

void ForwardTiler::rewrite() {
  Location loc = norm.getLoc();
  rewriter.setInsertionPoint(norm);
  auto outType = norm.getOutput().getType();
  auto lseType = norm.getLse().getType();
  Value query = online.getQuery();
  Value outInit = tensor::EmptyOp::create(
      rewriter, loc,
      forwardResultSizes(rewriter, loc, outType, query, online.getValue()),
      outType.getElementType());
  Value lseInit = tensor::EmptyOp::create(
      rewriter, loc,
      forwardResultSizes(rewriter, loc, lseType, query, online.getValue()),
      lseType.getElementType());
  // The grid's Q-block count: static when Nq is, else ceil(Nq / Br) at run
  // time; for packed sequences ceil(max_seqlen_q / Br).
  OpFoldResult numQBlocks;
  Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
  if (online.isVarlen()) {
    numQBlocks = arith::CeilDivSIOp::create(
                     rewriter, loc, online.getMaxSeqlenQ(),
                     arith::ConstantIndexOp::create(rewriter, loc, blockQ))
                     .getResult();
  } else if (auto q = online.getQuery().getType(); !q.isDynamicDim(2)) {
    numQBlocks =
        rewriter.getIndexAttr(llvm::divideCeil(q.getDimSize(2), blockQ));
  } else {
    numQBlocks = arith::CeilDivSIOp::create(
                     rewriter, loc, dimValue(rewriter, loc, query, 2),
                     arith::ConstantIndexOp::create(rewriter, loc, blockQ))
                     .getResult();
  }
  OpFoldResult batchSize =
      online.getQuery().getType().isDynamicDim(0)
          ? OpFoldResult(dimValue(rewriter, loc, query, 0))
          : OpFoldResult(rewriter.getIndexAttr(
                online.getQuery().getType().getDimSize(0)));
  if (online.isVarlen())
    batchSize = arith::SubIOp::create(
                    rewriter, loc,
                    dimValue(rewriter, loc, online.getCuSeqlensQ(), 0), one)
                    .getResult();
  auto forall = scf::ForallOp::create(
      rewriter, loc,
      ArrayRef<OpFoldResult>{batchSize, rewriter.getIndexAttr(headsQ),
                             numQBlocks},
      ValueRange{outInit, lseInit}, std::nullopt);

  rewriter.setInsertionPointToStart(forall.getBody());
  SmallVector<Value> ivs = forall.getInductionVars();
  Value head = ivs[1], qb = ivs[2];
  bindSequence(loc, ivs[0]);
  auto keyType = online.getKey().getType();
  // Whole KV blocks, or a band whose upper edge ends at the last key for the
  // last valid row (row i < Nq sees keys j < i + (Nk - Nq) + upper <= Nk
  // where upper <= 1: causal, or a window's right bound 0), so that keys at
  // or past Nk are hidden from every valid row by the band alone.
  std::optional<int64_t> upper =
      RelativeBand::get(online.getCausal(), online.getWindow()).upper;
  keysInBounds = (!online.isVarlen() && !keyType.isDynamicDim(2) &&
                  keyType.getDimSize(2) % blockKV == 0) ||
                 (upper && *upper <= 1);
  band = MaskBandValues::get(rewriter, loc, online.getCausal(),
                             online.getWindow(), seqQ, seqKV);
  Value qStart = arith::MulIOp::create(
      rewriter, loc, qb, arith::ConstantIndexOp::create(rewriter, loc, blockQ));
  Value rows = validRows(rewriter, loc, qStart, seqQ, blockQ);
  // A packed sequence shorter than max_seqlen_q leaves Q blocks without
  // rows; their (empty) slices sit at the sequence's end.
  Value qRow = qStart;
  if (online.isVarlen()) {
    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
    rows = arith::MaxSIOp::create(rewriter, loc, rows, zero);
    qRow = arith::AddIOp::create(
        rewriter, loc, qOffset,
        arith::MinSIOp::create(rewriter, loc, qStart, seqQ));
  }
  Value kvHead = arith::DivUIOp::create(
      rewriter, loc, head,
      arith::ConstantIndexOp::create(rewriter, loc, headsQ / headsKV));
  // FP8 descales: one factor per (batch, KV head), read once per block.
  auto descaleOf = [&](Value descales) {
    return tensor::ExtractOp::create(rewriter, loc, descales,
                                     ValueRange{batch, kvHead})
        .getResult();
  };
  for (Value descales : online.getDescales())
    scoreDescales.push_back(descaleOf(descales));
  if (Value descales = norm.getDescale())
    valueDescale = descaleOf(descales);
  auto tileOf = [&](Value full) {
    return extractPaddedTile(rewriter, loc, full, batch, head, qRow, rows,
                             blockQ);
  };
  Value qTile = tileOf(online.getQuery());
  SmallVector<Value> state{tileOf(online.getAcc()), tileOf(online.getMax()),
                           tileOf(online.getSum())};

  Value rowsEnd = arith::AddIOp::create(rewriter, loc, qStart, rows);
  Value lastRow = arith::SubIOp::create(rewriter, loc, rowsEnd, one);
  BlockSplit split =
      splitKVBlocks(rewriter, loc, band, qStart, lastRow, seqKV, blockKV);
  if (online.isVarlen()) {
    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value hasRows = arith::CmpIOp::create(
        rewriter, loc, arith::CmpIPredicate::sgt, rows, zero);
    split = emptyUnless(rewriter, loc, hasRows, split);
  }
  state = emitKVLoop(loc, split.lo, split.fullLo, /*masked=*/true, state,
                     kvHead, qTile, qStart);
  state = emitKVLoop(loc, split.fullLo, split.fullHi, /*masked=*/false, state,
                     kvHead, qTile, qStart);
  state = emitKVLoop(loc, split.fullHi, split.hi, /*masked=*/true, state,
                     kvHead, qTile, qStart);

  auto tileOut = RankedTensorType::get({blockQ, outType.getDimSize(3)},
                                       outType.getElementType());
  auto tileLse = RankedTensorType::get({blockQ}, lseType.getElementType());
  auto normTile = NormalizeOp::create(rewriter, loc, tileOut, tileLse, state[0],
                                      state[1], state[2], valueDescale);
  Value outRows = extractValidRows(rewriter, loc, normTile.getOutput(), rows);
  Value lseRows = extractValidRows(rewriter, loc, normTile.getLse(), rows);

  rewriter.setInsertionPointToStart(forall.getTerminator().getBody());
  ArrayRef<BlockArgument> sharedOuts = forall.getRegionIterArgs();
  SmallVector<Value> tiles{outRows, lseRows};
  for (auto [tile, dest] : llvm::zip(tiles, sharedOuts)) {
    SmallVector<OpFoldResult> offsets, sizes, strides;
    getRowSlice(rewriter, loc, cast<RankedTensorType>(dest.getType()), batch,
                head, qRow, rows, offsets, sizes, strides);
    tensor::ParallelInsertSliceOp::create(rewriter, loc, tile, dest, offsets,
                                          sizes, strides);
  }
  rewriter.replaceOp(norm, forall.getResults());
  rewriter.eraseOp(online);
}

struct TileAttentionPass : fa::impl::TileAttentionBase<TileAttentionPass> {
  using TileAttentionBase::TileAttentionBase;

  void runOnOperation() override {
    Operation *root = getOperation();
    if (failed(verifyBlockSize(root, getArgument(), "block-q", blockQ,
                               /*multiplesOf16=*/true)) ||
        failed(verifyBlockSize(root, getArgument(), "block-kv", blockKV,
                               /*multiplesOf16=*/true)))
      return signalPassFailure();

    // Shortest text (9, -1), not the stream's 9.000000e+00.
    SmallString<16> thresholdText;
    APFloat(rescaleThreshold).toString(thresholdText);
    if (!std::isfinite(rescaleThreshold) || rescaleThreshold < 0) {
      root->emitError() << getArgument()
                        << ": rescale-threshold must be finite and at least "
                           "0, got "
                        << thresholdText;
      return signalPassFailure();
    }
    FloatAttr threshold;
    if (rescaleThreshold > 0)
      threshold =
          FloatAttr::get(Float32Type::get(&getContext()), rescaleThreshold);

    SmallVector<std::pair<OnlineAttentionOp, NormalizeOp>> work;
    WalkResult walk = root->walk([&](OnlineAttentionOp online) {
      if (online.isTile())
        return WalkResult::advance();
      NormalizeOp norm;
      if (online.getResultAcc().hasOneUse())
        norm = dyn_cast<NormalizeOp>(*online.getResultAcc().user_begin());
      if (!norm || getProducer(norm) != online ||
          !online.getResultMax().hasOneUse() ||
          !online.getResultSum().hasOneUse()) {
        online.emitError() << "fa-tile-attention expects the results of a "
                              "whole-tensor fa.online_attention to feed one "
                              "fa.normalize and nothing else";
        return WalkResult::interrupt();
      }
      // Batch and sequence lengths may be dynamic; heads and head dims
      // shape the tiles.
      for (Value operand :
           {online.getQuery(), online.getKey(), online.getValue()}) {
        auto type = cast<RankedTensorType>(operand.getType());
        if (type.isDynamicDim(1) || type.isDynamicDim(3)) {
          online.emitError() << "fa-tile-attention needs static head counts "
                                "and head dims, got "
                             << type;
          return WalkResult::interrupt();
        }
      }
      // P = 2^(s - m') reaches 2^threshold; P·V takes it in V's type.
      auto element =
          dyn_cast<FloatType>(online.getValue().getType().getElementType());
      if (threshold && element &&
          std::exp2(rescaleThreshold) >
              APFloat::getLargest(element.getFloatSemantics())
                  .convertToDouble()) {
        online.emitError() << getArgument() << ": rescale-threshold "
                           << thresholdText << " lets P reach 2^"
                           << thresholdText << ", past the largest " << element;
        return WalkResult::interrupt();
      }
      work.emplace_back(online, norm);
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return signalPassFailure();

    IRRewriter rewriter(&getContext());
    for (auto [online, norm] : work)
      ForwardTiler(rewriter, online, norm, blockQ, blockKV, threshold)
          .rewrite();
  }
};

} // namespace
