//===- TransposeInProducer.cpp - Transpositions on the producer's warps ---===//
//
// WGMMA reads 8-bit operands K-major only, so the FP8 forward transposes
// each V tile in shared memory. Done by the compute warpgroups, it costs
// them a barrier of both before and after every P·V and keeps their loop
// from overlapping anything; the producer warpgroup's warps 1-3, idle
// beside the one that issues TMA, do it off their path instead
// (FlashAttention 3, section 3.3). Passes.td has the contract.
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FAGPU/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/RegionUtils.h"

namespace mlir {
namespace fagpu {
#define GEN_PASS_DEF_TRANSPOSEINPRODUCER
#include "fa/Dialect/FAGPU/Transforms/Passes.h.inc"
} // namespace fagpu
} // namespace mlir

using namespace mlir;
using namespace mlir::fagpu;

namespace {

/// Warps of the transposer region (the producer warpgroup's warps 1-3).
constexpr int64_t kTransposerWarps = 3;

/// Marks the producer's load of the transposed ring in the clone.
constexpr StringLiteral kSourceLoadAttr = "fagpu.transposed_source_load";

/// `base` when `index` is `stage + base` (or `stage` itself): the first
/// barrier of a per-stage array.
std::optional<int64_t> barrierBase(Value index, Value stage) {
  if (index == stage)
    return 0;
  auto add = index.getDefiningOp<arith::AddIOp>();
  if (!add)
    return std::nullopt;
  for (auto [a, b] : {std::pair(add.getLhs(), add.getRhs()),
                      std::pair(add.getRhs(), add.getLhs())})
    if (a == stage)
      if (auto c = b.getDefiningOp<arith::ConstantIndexOp>())
        return c.value();
  return std::nullopt;
}

Value addIndex(OpBuilder &b, Location loc, Value v, int64_t c) {
  return arith::AddIOp::create(b, loc, v,
                               arith::ConstantIndexOp::create(b, loc, c));
}

/// The op of type `OpTy` nearest before (or after) `op` in its block.
template <typename OpTy> OpTy nearestBefore(Operation *op) {
  for (Operation *it = op->getPrevNode(); it; it = it->getPrevNode())
    if (auto found = dyn_cast<OpTy>(it))
      return found;
  return nullptr;
}
template <typename OpTy> OpTy nearestAfter(Operation *op) {
  for (Operation *it = op->getNextNode(); it; it = it->getNextNode())
    if (auto found = dyn_cast<OpTy>(it))
      return found;
  return nullptr;
}

/// One consumer transposition of a loaded stage (a KV loop each).
struct Site {
  TransposeSharedOp transpose;
  StageOp source;          // the consumers' view of the loaded stage
  WaitBarrierOp fullWait;  // the loaded stage is full
  ArriveBarrierOp release; // the loaded stage is read
  MmaOp reader;            // the product that reads the tile
};

/// The consumers' transpositions of one ring into one tile of theirs, and
/// the barriers that guard the ring.
struct Transposition {
  AllocSharedOp dest;
  Value ring;
  SmallVector<Site> sites;
  AllocBarriersOp barriers;
  InitBarriersOp init;
  int64_t emptyBase = 0; // the ring's "empty" barriers
  int64_t loads = 0;     // the producer's loads into the ring
  bool pairKeys = false; // the transpositions' key order
};

FailureOr<Site> matchSite(TransposeSharedOp transpose, int64_t &emptyBase) {
  Site site;
  site.transpose = transpose;
  site.source = transpose.getSource().getDefiningOp<StageOp>();
  if (!site.source)
    return failure();
  site.fullWait = nearestBefore<WaitBarrierOp>(transpose);
  site.release = nearestAfter<ArriveBarrierOp>(transpose);
  if (!site.fullWait || !site.release)
    return failure();
  Value index = site.source.getIndex();
  std::optional<int64_t> base = barrierBase(site.release.getIndex(), index);
  if (!base || !barrierBase(site.fullWait.getIndex(), index))
    return failure();
  emptyBase = *base;
  // The product that reads the tile, after the transposition in its block.
  for (Operation *op = transpose->getNextNode(); op; op = op->getNextNode())
    if (auto mma = dyn_cast<MmaOp>(op))
      if (llvm::is_contained(mma->getOperands(), transpose.getDest())) {
        site.reader = mma;
        break;
      }
  if (!site.reader)
    return failure();
  return site;
}

FailureOr<Transposition> match(WarpSpecializeOp split) {
  Transposition t;
  SmallVector<TransposeSharedOp> transposes;
  split.getConsumers().walk(
      [&](TransposeSharedOp op) { transposes.push_back(op); });
  if (transposes.empty())
    return failure();
  for (TransposeSharedOp transpose : transposes) {
    int64_t emptyBase = 0;
    FailureOr<Site> site = matchSite(transpose, emptyBase);
    if (failed(site))
      return failure();
    auto dest = transpose.getDest().getDefiningOp<AllocSharedOp>();
    Value ring = site->source.getRing();
    if (!dest || dest.getType().getStages() != 1 ||
        (t.dest &&
         (dest != t.dest || ring != t.ring || emptyBase != t.emptyBase)))
      return failure();
    if (t.dest && transpose.getPairKeys() != t.pairKeys)
      return failure();
    t.dest = dest;
    t.ring = ring;
    t.emptyBase = emptyBase;
    t.pairKeys = transpose.getPairKeys();
    t.sites.push_back(*site);
  }
  // Nothing but the transpositions and their products reads the tile.
  for (Operation *user : t.dest->getUsers())
    if (!llvm::any_of(t.sites, [&](const Site &s) {
          return user == s.transpose || user == s.reader;
        }))
      return failure();
  split.getProducer().walk([&](TmaLoadOp load) {
    if (auto stage = load.getTile().getDefiningOp<StageOp>())
      if (stage.getRing() == t.ring)
        ++t.loads;
  });
  t.barriers =
      t.sites.front().fullWait.getBarriers().getDefiningOp<AllocBarriersOp>();
  if (!t.loads || !t.barriers)
    return failure();
  for (Operation *user : t.barriers->getUsers())
    if (auto init = dyn_cast<InitBarriersOp>(user))
      t.init = init;
  if (!t.init)
    return failure();
  return t;
}

/// The transposer region: the producer's loops, each load of the source
/// ring replaced by the wait-transpose-release-announce sequence, the
/// other loads dropped.
void buildTransposer(WarpSpecializeOp split, Transposition &t, Value ring,
                     int64_t fullBase, int64_t ownEmptyBase) {
  auto markLoads = [&](bool mark) {
    split.getProducer().walk([&](TmaLoadOp load) {
      auto stage = load.getTile().getDefiningOp<StageOp>();
      if (!stage || stage.getRing() != t.ring)
        return;
      if (mark)
        load->setAttr(kSourceLoadAttr, UnitAttr::get(split.getContext()));
      else
        load->removeAttr(kSourceLoadAttr);
    });
  };
  markLoads(true);
  IRMapping mapping;
  split.getProducer().cloneInto(&split.getTransposer(), mapping);
  markLoads(false);
  Block &body = split.getTransposer().front();

  // Each load as the producer issues it: wait for the stage to be empty,
  // announce the bytes, load.
  struct Load {
    WaitBarrierOp emptyWait;
    ArriveExpectBytesOp expect;
    TmaLoadOp load;
  };
  SmallVector<Load> loads;
  body.walk([&](ArriveExpectBytesOp expect) {
    loads.push_back({nearestBefore<WaitBarrierOp>(expect), expect,
                     nearestAfter<TmaLoadOp>(expect)});
  });
  for (Load &l : loads) {
    if (!l.load || !l.load->hasAttr(kSourceLoadAttr)) {
      // Not transposed: nothing of it stays.
      for (Operation *op : {l.load.getOperation(), l.expect.getOperation(),
                            l.emptyWait.getOperation()})
        if (op)
          op->erase();
      continue;
    }
    // The transposer waits for its own stage with the producer's phase,
    // then for the loaded one to be full (the next phase's parity).
    auto stage = l.load.getTile().getDefiningOp<StageOp>();
    OpBuilder b(l.load);
    Location loc = l.load.getLoc();
    Value index = stage.getIndex();
    Value phase = l.emptyWait.getPhase();
    b.setInsertionPoint(l.emptyWait);
    l.emptyWait.getIndexMutable().assign(addIndex(b, loc, index, ownEmptyBase));
    b.setInsertionPoint(l.load);
    WaitBarrierOp::create(b, loc, l.load.getBarriers(), l.load.getIndex(),
                          addIndex(b, loc, phase, 1));
    Value own = StageOp::create(b, loc, t.dest.getType(), ring, index);
    TransposeSharedOp::create(b, loc, stage, own, t.pairKeys);
    ArriveBarrierOp::create(b, loc, l.load.getBarriers(),
                            addIndex(b, loc, index, t.emptyBase));
    ArriveBarrierOp::create(b, loc, l.load.getBarriers(),
                            addIndex(b, loc, index, fullBase));
    l.load->erase();
    l.expect->erase();
  }
}

void moveTransposition(WarpSpecializeOp split, Transposition &t) {
  MLIRContext *ctx = split.getContext();
  int64_t stages = cast<SharedTileType>(t.ring.getType()).getStages();
  auto barriersType = t.barriers.getType();
  int64_t fullBase = barriersType.getCount();
  int64_t ownEmptyBase = fullBase + stages;
  int64_t consumerWarps = 4 * split.getConsumerWarpgroups();

  // The tile becomes a ring; two barriers per stage.
  OpBuilder b(t.dest);
  Value ring = AllocSharedOp::create(b, t.dest.getLoc(),
                                     t.dest.getType().getRingType(stages));
  t.barriers.getResult().setType(BarriersType::get(ctx, ownEmptyBase + stages));
  SmallVector<int64_t> arrivals(t.init.getArrivals());
  for (int64_t s = 0; s < stages; ++s)
    arrivals[t.emptyBase + s] = kTransposerWarps;
  arrivals.append(stages, kTransposerWarps);
  arrivals.append(stages, consumerWarps);
  t.init.setArrivals(arrivals);

  buildTransposer(split, t, ring, fullBase, ownEmptyBase);

  // Consumers: wait for the transposed stage, read it, release it.
  for (Site &site : t.sites) {
    Value index = site.source.getIndex();
    b.setInsertionPoint(site.fullWait);
    site.fullWait.getIndexMutable().assign(
        addIndex(b, site.fullWait.getLoc(), index, fullBase));
    Location loc = site.reader.getLoc();
    b.setInsertionPoint(site.reader);
    Value own = StageOp::create(b, loc, t.dest.getType(), ring, index);
    site.reader->replaceUsesOfWith(t.dest, own);
    b.setInsertionPointAfter(site.reader);
    ArriveBarrierOp::create(b, loc, site.release.getBarriers(),
                            addIndex(b, loc, index, ownEmptyBase));
    site.release->erase();
    site.transpose->erase();
  }
  t.dest->erase();
}

struct TransposeInProducerPass
    : fagpu::impl::TransposeInProducerBase<TransposeInProducerPass> {
  void runOnOperation() override {
    getOperation().walk([&](WarpSpecializeOp split) {
      if (split.getProducerWarpgroups() != 1 || split.hasReducer() ||
          split.hasTransposer())
        return;
      FailureOr<Transposition> t = match(split);
      if (failed(t))
        return;
      // The tile's further stages and their barriers must fit beside the
      // rest (the kernel's pipeline gives up a Q buffer where they would
      // not); else the compute warpgroups keep transposing.
      auto kernel = split->getParentOfType<gpu::GPUFuncOp>();
      int64_t stages = cast<SharedTileType>(t->ring.getType()).getStages();
      int64_t extra = t->dest.getType().getRingType(stages).getSizeInBytes() -
                      t->dest.getType().getSizeInBytes() + 2 * stages * 8 +
                      kSharedTileAlignment;
      if (!kernel || placeSharedTiles(kernel) + extra > kMaxSharedBytesPerBlock)
        return;
      moveTransposition(split, *t);
      if (kernel->hasAttr("fa.shared_bytes"))
        kernel->setAttr(
            "fa.shared_bytes",
            IntegerAttr::get(IntegerType::get(kernel.getContext(), 64),
                             placeSharedTiles(kernel)));
      IRRewriter rewriter(split.getContext());
      (void)runRegionDCE(rewriter, split.getTransposer());
    });
  }
};

} // namespace
