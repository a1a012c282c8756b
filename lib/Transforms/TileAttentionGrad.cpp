//===- TileAttentionGrad.cpp - Tile the attention backward ----------------===//
//
// fa.attention_grad becomes
//
//   delta = rowsum(dO * O) [- dLSE, with grad_lse]          [B, Hq, Nq] f32
//   scf.forall (b, hkv) in (B, Hkv) {
//     scf.for kb over KV blocks {                 (dQ slab carried in f32)
//       dK, dV tile accumulators = 0
//       scf.for g over the query heads of the group {
//         three scf.for over the visible Q blocks (masked, unmasked,
//         masked): fa.attention_grad_tile; add the dQ tile into the slab
//       }
//       cast and insert the dK, dV tiles
//     }
//   }
//   dQ = cast(dQ accumulator)
//
// Each forall iteration owns the dQ rows of its group's query heads and the
// dK/dV rows of its KV head, so iterations never write the same element.
// Varlen (packed sequences): b is the sequence; its rows, lengths and masks
// come from cu_seqlens, and its slabs are its own rows. A
// GPU lowering that also spreads KV blocks across thread blocks turns the
// dQ slab update into atomic adds.
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FA/IR/FAOps.h"
#include "fa/Transforms/Passes.h"

#include "fa/Transforms/TilingUtils.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

#include <limits>

namespace mlir {
namespace fa {
#define GEN_PASS_DEF_TILEATTENTIONGRAD
#include "fa/Transforms/Passes.h.inc"
} // namespace fa
} // namespace mlir

using namespace mlir;
using namespace mlir::fa;

namespace {

/// Elementwise copy of `src`, times `scale` where given, into a new tensor
/// of element type `elt`.
Value castElements(OpBuilder &b, Location loc, Value src, Type elt,
                   std::optional<double> scale) {
  auto type = cast<RankedTensorType>(src.getType());
  if (type.getElementType() == elt && !scale)
    return src;
  Value init =
      tensor::EmptyOp::create(b, loc, tensor::getMixedSizes(b, loc, src), elt);
  SmallVector<AffineMap> maps(2, b.getMultiDimIdentityMap(type.getRank()));
  SmallVector<utils::IteratorType> iterators(type.getRank(),
                                             utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             b, loc, init.getType(), ValueRange{src}, ValueRange{init}, maps,
             iterators,
             [&](OpBuilder &nb, Location nl, ValueRange args) {
               Value x = args[0];
               if (scale)
                 x = arith::MulFOp::create(
                     nb, nl, x,
                     arith::ConstantOp::create(
                         nb, nl, nb.getFloatAttr(x.getType(), *scale)));
               if (x.getType() != elt)
                 x = arith::TruncFOp::create(nb, nl, elt, x);
               linalg::YieldOp::create(nb, nl, x);
             })
      .getResult(0);
}

/// rows[b, h, i] - sub[b, h, i] (f32 [B, H, N] tensors): delta less the
/// gradient of LSE, whose share of dS is P * dLSE (dLSE/dS = P).
Value subtractRows(OpBuilder &b, Location loc, Value rows, Value sub) {
  Value init = tensor::EmptyOp::create(
      b, loc, tensor::getMixedSizes(b, loc, rows), b.getF32Type());
  AffineMap identity = b.getMultiDimIdentityMap(3);
  return linalg::GenericOp::create(
             b, loc, init.getType(), ValueRange{rows, sub}, ValueRange{init},
             ArrayRef<AffineMap>{identity, identity, identity},
             SmallVector<utils::IteratorType>(3, utils::IteratorType::parallel),
             [&](OpBuilder &nb, Location nl, ValueRange args) {
               linalg::YieldOp::create(
                   nb, nl,
                   arith::SubFOp::create(nb, nl, args[0], args[1]).getResult());
             })
      .getResult(0);
}

/// delta[b, h, i] = sum_d O[b, h, i, d] * dO[b, h, i, d], in f32. O is read
/// first: the GPU's pre kernel takes its arguments in this order.
Value computeDelta(OpBuilder &b, Location loc, Value out, Value gradOut) {
  SmallVector<OpFoldResult> rowSizes = tensor::getMixedSizes(b, loc, out);
  rowSizes.pop_back();
  Value init = createFilledTensor(b, loc, rowSizes, b.getF32Type(), 0.0);
  MLIRContext *ctx = b.getContext();
  AffineMap full = AffineMap::getMultiDimIdentityMap(4, ctx);
  AffineMap rows =
      AffineMap::get(4, 0,
                     {getAffineDimExpr(0, ctx), getAffineDimExpr(1, ctx),
                      getAffineDimExpr(2, ctx)},
                     ctx);
  auto toF32 = [](OpBuilder &nb, Location nl, Value v) -> Value {
    if (v.getType().isF32())
      return v;
    return arith::ExtFOp::create(nb, nl, nb.getF32Type(), v);
  };
  return linalg::GenericOp::create(
             b, loc, init.getType(), ValueRange{out, gradOut}, ValueRange{init},
             ArrayRef<AffineMap>{full, full, rows},
             ArrayRef<utils::IteratorType>{
                 utils::IteratorType::parallel, utils::IteratorType::parallel,
                 utils::IteratorType::parallel, utils::IteratorType::reduction},
             [&](OpBuilder &nb, Location nl, ValueRange args) {
               Value product = arith::MulFOp::create(
                   nb, nl, toF32(nb, nl, args[0]), toF32(nb, nl, args[1]));
               linalg::YieldOp::create(
                   nb, nl,
                   arith::AddFOp::create(nb, nl, args[2], product).getResult());
             })
      .getResult(0);
}

class BackwardTiler {
public:
  BackwardTiler(RewriterBase &rewriter, AttentionGradOp op, int64_t blockQ,
                int64_t blockKV, bool scaleGradsOnce)
      : rewriter(rewriter), op(op), blockQ(blockQ), blockKV(blockKV),
        scaleGradsOnce(scaleGradsOnce), varlen(op.isVarlen()) {
    ArrayRef<int64_t> q = op.getQuery().getType().getShape();
    ArrayRef<int64_t> k = op.getKey().getType().getShape();
    batch = q[0];
    headsQ = q[1];
    seqQ = q[2];
    headsKV = k[1];
    seqKV = k[2];
    group = headsQ / headsKV;
    lengthsAtRunTime =
        varlen || ShapedType::isDynamic(seqQ) || ShapedType::isDynamic(seqKV);
    if (!lengthsAtRunTime)
      band = MaskBand::get(op.getCausal(), op.getWindow(), seqQ, seqKV);
  }

  void rewrite();

private:
  Value c(OpBuilder &b, Location loc, int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v);
  }

  /// The Q-block loop [from, to) for query head `head` against one KV tile;
  /// state = (dQ slab [1, G, Nq, D], dK tile, dV tile).
  SmallVector<Value> emitQLoop(Location loc, Value from, Value to, bool masked,
                               ValueRange state, Value b, Value head, Value g,
                               Value kTile, Value vTile, Value kStart);
  /// Binds the tensors' batch index for forall batch index `b` and, for
  /// packed sequences, the sequence's lengths and rows (from cu_seqlens).
  void bindSequence(OpBuilder &b, Location loc, Value batchIndex);

  RewriterBase &rewriter;
  AttentionGradOp op;
  int64_t blockQ, blockKV;
  /// dS without the softmax scale; dQ and dK multiplied by it once.
  bool scaleGradsOnce;
  /// What the casts of dQ and dK multiply by (with scaleGradsOnce).
  std::optional<double> gradScale() {
    if (!scaleGradsOnce)
      return std::nullopt;
    return op.getEffectiveScale();
  }
  int64_t batch, headsQ, seqQ, headsKV, seqKV, group;
  MaskBand band;
  Value delta;
  /// Packed sequences (the op's seqlens).
  bool varlen;
  /// The sequence lengths are values (packed sequences, or runtime shapes:
  /// dynamic Nq / Nk); the tiles, bands and block ranges read them.
  bool lengthsAtRunTime;
  // The tensors' batch index (0 for packed sequences) and, for packed
  // sequences, the current one's lengths, first rows and band.
  Value seqQValue, seqKVValue, qOffset, kvOffset, batchIndex;
  MaskBandValues bandValues;
};

void BackwardTiler::bindSequence(OpBuilder &b, Location loc, Value index) {
  if (!varlen) {
    batchIndex = index;
    if (!lengthsAtRunTime)
      return; // the static lengths serve
    // Runtime shapes: every sequence is the tensors' whole length.
    seqQValue = dimValue(b, loc, op.getQuery(), 2);
    seqKVValue = dimValue(b, loc, op.getKey(), 2);
    bandValues = MaskBandValues::get(b, loc, op.getCausal(), op.getWindow(),
                                     seqQValue, seqKVValue);
    return;
  }
  SequenceRows q = sequenceRows(b, loc, op.getCuSeqlensQ(), index);
  SequenceRows kv = sequenceRows(b, loc, op.getCuSeqlensK(), index);
  seqQValue = q.length;
  seqKVValue = kv.length;
  qOffset = q.offset;
  kvOffset = kv.offset;
  batchIndex = c(b, loc, 0);
  bandValues = MaskBandValues::get(b, loc, op.getCausal(), op.getWindow(),
                                   seqQValue, seqKVValue);
}

SmallVector<Value> BackwardTiler::emitQLoop(Location loc, Value from, Value to,
                                            bool masked, ValueRange state,
                                            Value b, Value head, Value g,
                                            Value kTile, Value vTile,
                                            Value kStart) {
  auto loop = scf::ForOp::create(
      rewriter, loc, from, to, c(rewriter, loc, 1), state,
      [&](OpBuilder &nb, Location nl, Value qb, ValueRange iter) {
        Value qStart = arith::MulIOp::create(nb, nl, qb, c(nb, nl, blockQ));
        Value rows = lengthsAtRunTime
                         ? validRows(nb, nl, qStart, seqQValue, blockQ)
                         : validRows(nb, nl, qStart, seqQ, blockQ);
        // The inputs' rows of the sequence's; the dQ slab is the sequence's.
        Value qRow = varlen ? arith::AddIOp::create(nb, nl, qOffset, qStart)
                            : qStart;
        auto tileOf = [&](Value full, Value bIdx, Value hIdx, Value start,
                          double padding = 0.0) {
          return extractPaddedTile(nb, nl, full, bIdx, hIdx, start, rows,
                                   blockQ, padding);
        };
        Value zero = c(nb, nl, 0);
        Value dqTile = tileOf(iter[0], zero, g, qStart);
        // One statement each: argument evaluation order is unspecified, and
        // the IR (its op order) must not depend on the host compiler.
        Value qTile = tileOf(op.getQuery(), b, head, qRow);
        Value doTile = tileOf(op.getGradOutput(), b, head, qRow);
        // Rows past the sequence's end have P = exp(S - inf) = 0 whatever
        // their queries hold: a GPU kernel reads a packed sequence's last
        // Q block from the next sequence's rows.
        Value lseTile = tileOf(op.getLse(), b, head, qRow,
                               std::numeric_limits<double>::infinity());
        Value deltaTile = tileOf(delta, b, head, qRow);
        Value qLen = lengthsAtRunTime ? seqQValue : c(nb, nl, seqQ);
        Value kvLen = lengthsAtRunTime ? seqKVValue : c(nb, nl, seqKV);
        auto step = AttentionGradTileOp::create(
            nb, nl, dqTile.getType(), iter[1].getType(), iter[2].getType(),
            qTile, kTile, vTile, doTile, lseTile, deltaTile, dqTile, iter[1],
            iter[2], qStart, kStart, qLen, kvLen,
            op.getScale() ? op.getScaleAttr()
                          : nb.getF64FloatAttr(op.getEffectiveScale()),
            op.getCausalAttr(), op.getWindowAttr(), op.getSoftcapAttr(),
            masked ? nullptr : nb.getUnitAttr(),
            scaleGradsOnce ? nb.getUnitAttr() : nullptr,
            op.getDeterministicAttr());
        Value dqRows =
            extractValidRows(nb, nl, step.getResultGradQuery(), rows);
        SmallVector<OpFoldResult> offsets, sizes, strides;
        getRowSlice(nb, nl, cast<RankedTensorType>(iter[0].getType()), zero, g,
                    qStart, rows, offsets, sizes, strides);
        Value slab = tensor::InsertSliceOp::create(nb, nl, dqRows, iter[0],
                                                   offsets, sizes, strides);
        scf::YieldOp::create(nb, nl,
                             ValueRange{slab, step.getResultGradKey(),
                                        step.getResultGradValue()});
      });
  return loop.getResults();
}

void BackwardTiler::rewrite() {
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  Type f32 = rewriter.getF32Type();
  auto qType = op.getQuery().getType();
  int64_t headDim = qType.getDimSize(3);
  int64_t headDimV = op.getValue().getType().getDimSize(3);
  Type elt = qType.getElementType();

  delta = computeDelta(rewriter, loc, op.getOutput(), op.getGradOutput());
  if (Value gradLse = op.getGradLse())
    delta = subtractRows(rewriter, loc, delta, gradLse);
  Value dqAcc = createFilledTensor(
      rewriter, loc, tensor::getMixedSizes(rewriter, loc, op.getQuery()), f32,
      0.0);
  Value dkInit = tensor::EmptyOp::create(
      rewriter, loc, tensor::getMixedSizes(rewriter, loc, op.getKey()), elt);
  Value dvInit = tensor::EmptyOp::create(
      rewriter, loc, tensor::getMixedSizes(rewriter, loc, op.getValue()), elt);
  OpFoldResult numBatches = rewriter.getIndexAttr(batch);
  if (ShapedType::isDynamic(batch))
    numBatches = dimValue(rewriter, loc, op.getQuery(), 0);
  if (varlen)
    numBatches = arith::SubIOp::create(
                     rewriter, loc,
                     dimValue(rewriter, loc, op.getCuSeqlensQ(), 0),
                     c(rewriter, loc, 1))
                     .getResult();
  auto forall = scf::ForallOp::create(
      rewriter, loc,
      ArrayRef<OpFoldResult>{numBatches, rewriter.getIndexAttr(headsKV)},
      ValueRange{dqAcc, dkInit, dvInit}, std::nullopt);

  rewriter.setInsertionPointToStart(forall.getBody());
  SmallVector<Value> ivs = forall.getInductionVars();
  Value kvHead = ivs[1];
  bindSequence(rewriter, loc, ivs[0]);
  Value b = batchIndex;
  ArrayRef<BlockArgument> shared = forall.getRegionIterArgs();
  Value firstHead =
      arith::MulIOp::create(rewriter, loc, kvHead, c(rewriter, loc, group));
  // Per-iteration slabs: dQ rows of the group's heads, dK/dV of the KV head
  // (of the sequence's rows where packed).
  auto slabOf = [&](Value full, Value head, int64_t heads) {
    auto type = cast<RankedTensorType>(full.getType());
    bool keys = full != shared[0];
    OpFoldResult rows = rewriter.getIndexAttr(type.getDimSize(2));
    OpFoldResult firstRow = rewriter.getIndexAttr(0);
    if (lengthsAtRunTime)
      rows = keys ? seqKVValue : seqQValue;
    if (varlen) {
      firstRow = keys ? kvOffset : qOffset;
    }
    SmallVector<OpFoldResult> offsets{b, head, firstRow,
                                      rewriter.getIndexAttr(0)};
    SmallVector<OpFoldResult> sizes{rewriter.getIndexAttr(1),
                                    rewriter.getIndexAttr(heads), rows,
                                    rewriter.getIndexAttr(type.getDimSize(3))};
    SmallVector<OpFoldResult> strides(4, rewriter.getIndexAttr(1));
    return std::make_tuple(offsets, sizes, strides);
  };
  auto extractSlab = [&](Value full, Value head, int64_t heads) -> Value {
    auto [offsets, sizes, strides] = slabOf(full, head, heads);
    return tensor::ExtractSliceOp::create(rewriter, loc, full, offsets, sizes,
                                          strides);
  };
  SmallVector<Value> slabs{extractSlab(shared[0], firstHead, group),
                           extractSlab(shared[1], kvHead, 1),
                           extractSlab(shared[2], kvHead, 1)};

  Value numKVBlocks =
      lengthsAtRunTime ? arith::CeilDivSIOp::create(rewriter, loc, seqKVValue,
                                                    c(rewriter, loc, blockKV))
                             .getResult()
                       : c(rewriter, loc, llvm::divideCeil(seqKV, blockKV));
  auto kvLoop = scf::ForOp::create(
      rewriter, loc, c(rewriter, loc, 0), numKVBlocks,
      c(rewriter, loc, 1), slabs,
      [&](OpBuilder &nb, Location nl, Value kb, ValueRange iter) {
        OpBuilder::InsertionGuard guard(rewriter);
        rewriter.setInsertionPoint(nb.getInsertionBlock(),
                                   nb.getInsertionPoint());
        Value kStart =
            arith::MulIOp::create(rewriter, nl, kb, c(rewriter, nl, blockKV));
        Value cols = lengthsAtRunTime
                         ? validRows(rewriter, nl, kStart, seqKVValue, blockKV)
                         : validRows(rewriter, nl, kStart, seqKV, blockKV);
        // The block's first row in the dK/dV slab and in the inputs. A GPU
        // grid spans the longest sequence's KV blocks: a shorter one's
        // blocks past its keys are empty slices at its end.
        Value slabRow = kStart, kRow = kStart;
        if (varlen) {
          cols = arith::MaxSIOp::create(rewriter, nl, cols, c(rewriter, nl, 0));
          slabRow = arith::MinSIOp::create(rewriter, nl, kStart, seqKVValue);
          kRow = arith::AddIOp::create(rewriter, nl, kvOffset, slabRow);
        }
        Value kTile = extractPaddedTile(rewriter, nl, op.getKey(), b, kvHead,
                                        kRow, cols, blockKV);
        Value vTile = extractPaddedTile(rewriter, nl, op.getValue(), b, kvHead,
                                        kRow, cols, blockKV);
        Value lastKey = arith::SubIOp::create(
            rewriter, nl, arith::AddIOp::create(rewriter, nl, kStart, cols),
            c(rewriter, nl, 1));
        Value inBounds =
            arith::CmpIOp::create(rewriter, nl, arith::CmpIPredicate::eq, cols,
                                  c(rewriter, nl, blockKV));
        BlockSplit split =
            lengthsAtRunTime
                ? splitQBlocks(rewriter, nl, bandValues, kStart, lastKey,
                               inBounds, seqQValue, blockQ)
                : splitQBlocks(rewriter, nl, band, kStart, lastKey, inBounds,
                               seqQ, blockQ);
        // A KV block past its sequence's keys visits no Q block: a GPU
        // grid spans the longest sequence's KV blocks.
        if (varlen)
          split = emptyUnless(rewriter, nl,
                              arith::CmpIOp::create(rewriter, nl,
                                                    arith::CmpIPredicate::sgt,
                                                    cols, c(rewriter, nl, 0)),
                              split);
        SmallVector<Value> accs{
            createFilledTensor(rewriter, nl, {blockKV, headDim}, f32, 0.0),
            createFilledTensor(rewriter, nl, {blockKV, headDimV}, f32, 0.0)};

        auto groupLoop = scf::ForOp::create(
            rewriter, nl, c(rewriter, nl, 0), c(rewriter, nl, group),
            c(rewriter, nl, 1), ValueRange{iter[0], accs[0], accs[1]},
            [&](OpBuilder &gb, Location gl, Value g, ValueRange state) {
              OpBuilder::InsertionGuard inner(rewriter);
              rewriter.setInsertionPoint(gb.getInsertionBlock(),
                                         gb.getInsertionPoint());
              Value head = arith::AddIOp::create(rewriter, gl, firstHead, g);
              SmallVector<Value> s(state);
              s = emitQLoop(gl, split.lo, split.fullLo, true, s, b, head, g,
                            kTile, vTile, kStart);
              s = emitQLoop(gl, split.fullLo, split.fullHi, false, s, b, head,
                            g, kTile, vTile, kStart);
              s = emitQLoop(gl, split.fullHi, split.hi, true, s, b, head, g,
                            kTile, vTile, kStart);
              scf::YieldOp::create(rewriter, gl, s);
            });

        SmallVector<Value> results{groupLoop.getResult(0)};
        // dK (times the scale left out of dS), then dV.
        SmallVector<std::optional<double>> scales{gradScale(), std::nullopt};
        for (auto [acc, slab, scale] :
             llvm::zip(groupLoop.getResults().drop_front(), iter.drop_front(),
                       scales)) {
          Value rows = extractValidRows(
              rewriter, nl, castElements(rewriter, nl, acc, elt, scale), cols);
          SmallVector<OpFoldResult> offsets, sizes, strides;
          getRowSlice(rewriter, nl, cast<RankedTensorType>(slab.getType()),
                      c(rewriter, nl, 0), c(rewriter, nl, 0), slabRow, cols,
                      offsets, sizes, strides);
          results.push_back(tensor::InsertSliceOp::create(
              rewriter, nl, rows, slab, offsets, sizes, strides));
        }
        scf::YieldOp::create(rewriter, nl, results);
      });

  rewriter.setInsertionPointToStart(forall.getTerminator().getBody());
  SmallVector<Value> slabHeads{firstHead, kvHead, kvHead};
  SmallVector<int64_t> slabHeadCounts{group, 1, 1};
  for (auto [result, dest, head, heads] :
       llvm::zip(kvLoop.getResults(), shared, slabHeads, slabHeadCounts)) {
    auto [offsets, sizes, strides] = slabOf(dest, head, heads);
    tensor::ParallelInsertSliceOp::create(rewriter, loc, result, dest, offsets,
                                          sizes, strides);
  }

  rewriter.setInsertionPointAfter(forall);
  Value dq = castElements(rewriter, loc, forall.getResult(0), elt, gradScale());
  rewriter.replaceOp(op,
                     ValueRange{dq, forall.getResult(1), forall.getResult(2)});
}

struct TileAttentionGradPass
    : fa::impl::TileAttentionGradBase<TileAttentionGradPass> {
  using TileAttentionGradBase::TileAttentionGradBase;

  void runOnOperation() override {
    Operation *root = getOperation();
    SmallVector<AttentionGradOp> work;
    WalkResult walk = root->walk([&](AttentionGradOp op) {
      // The blocks are checked where there is a backward to tile: a
      // pipeline that tiles both directions (fa-tile-and-decompose) runs
      // a forward-only module with the forward's blocks, which may be
      // multiples of 16 that the backward refuses.
      if (work.empty() &&
          (failed(verifyBlockSize(op, getArgument(), "block-q", blockQ)) ||
           failed(verifyBlockSize(op, getArgument(), "block-kv", blockKV))))
        return WalkResult::interrupt();
      // The batch and the sequence lengths may be runtime sizes (packed
      // sequences: N, and their offsets); heads and head dims are static.
      for (Value v : op->getOperands()) {
        auto type = dyn_cast<RankedTensorType>(v.getType());
        if (!type || (op.isVarlen() && type.getRank() == 1))
          continue;
        for (int64_t d = 0; d < type.getRank(); ++d)
          if (type.isDynamicDim(d) && d != 2 && (op.isVarlen() || d != 0)) {
            op.emitError() << "fa-tile-attention-grad needs static heads and "
                              "head dims"
                           << (op.isVarlen() ? " and a batch of 1 for packed "
                                               "sequences"
                                             : "");
            return WalkResult::interrupt();
          }
      }
      work.push_back(op);
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return signalPassFailure();
    IRRewriter rewriter(&getContext());
    for (AttentionGradOp op : work)
      BackwardTiler(rewriter, op, blockQ, blockKV, scaleGradsOnce).rewrite();
  }
};

} // namespace
