//===- AttentionConfig.cpp - What a config compiles to --------------------===//
//
// The config side of the compiler: the chips it targets, the forward variant
// and block sizes a problem gets, the cache key, and the fa.attention text a
// config stands for.
//
//===----------------------------------------------------------------------===//

#include "fa/Compiler/Compiler.h"

#include "fa/Dialect/FAGPU/IR/FAGPU.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::fa;

llvm::ArrayRef<llvm::StringRef> mlir::fa::supportedChips() {
  static const llvm::StringRef chips[] = {"sm_80", "sm_86", "sm_87",
                                          "sm_89", "sm_90", "sm_90a"};
  return chips;
}

llvm::Error mlir::fa::checkChip(llvm::StringRef chip) {
  if (llvm::is_contained(supportedChips(), chip))
    return llvm::Error::success();
  return llvm::createStringError(
      llvm::inconvertibleErrorCode(),
      llvm::formatv("unsupported chip '{0}': FlashMLIR compiles for {1} "
                    "(PTX 8.0: mma.sync + cp.async kernels; WGMMA on sm_90a)",
                    chip, llvm::join(supportedChips(), ", "))
          .str());
}

int64_t mlir::fa::maxSharedBytesPerBlock(llvm::StringRef chip) {
  if (chip == "sm_86" || chip == "sm_89")
    return 99 * 1024;
  if (chip == "sm_80" || chip == "sm_87")
    return 163 * 1024;
  return fagpu::kMaxSharedBytesPerBlock;
}

bool mlir::fa::isValidEntryName(llvm::StringRef name) {
  auto isStart = [](char c) { return llvm::isAlpha(c) || c == '_'; };
  return !name.empty() && isStart(name.front()) &&
         llvm::all_of(name.drop_front(),
                      [&](char c) { return isStart(c) || llvm::isDigit(c); });
}

/// The WGMMA forward's blocks, measured on the H200 (docs/perf/README.md):
/// two compute warpgroups of 64 rows (before warp specialization one
/// warpgroup won at head dim 64; with it, 128 x 128 reads 379 against 279
/// TFLOP/s) and 128 keys per block (64 at head dim 256) while the S and O
/// accumulators fit the registers.
///
/// At head dim 64 (Dv = D), FlashAttention 3's 192 x 128 block, three
/// compute warpgroups of 160 registers (tenth session: non-causal +2 % at
/// N = 512, +6-9 % from 1k to 16k, beating 128 x 192; causal +3 % at 4k and
/// +10-11 % at 8k-16k, but -25 % at 512 and 1k, where a 192-row block's
/// diagonal is most of its work). Since the masks compare each register's
/// static offset against a per-thread bound (eleventh session) causal took
/// it from 2k keys (+2 % there); with two Q buffers and the persistent grid
/// up to 16 KV blocks a tile (twelfth session) 128 rows win again at 2k
/// (+7 %) and 4k (+2 %), so causal takes 192 from 8k (+9 % there).
/// Windows and softcaps keep 128 rows (unmeasured, and a window's mask
/// spills at 192). Runtime shapes (persistent, the call's lengths) take 192
/// rows with and without a causal mask (H100, forty-second session, against
/// 128 rows: 2k +12 %, causal +3 %; 8k +15 %, causal +1 %; within 0-5 % of
/// the kernels built for the shape).
///
/// Long problems without a mask band (not causal, no window, no softcap,
/// Dv = D, N >= 4k) at head dims 128 and 256 take FlashAttention 3's wider
/// KV blocks, a register repeat in the score tiles: 176 keys at 128, 80 at
/// 256 (N = 8k: +2-4 %, +2 %); at hd128 N = 2k, 1k they lose 1-3 %. With
/// the cheaper masks causal hd256 takes 80 keys too from 4k (+1.5-2 %);
/// causal hd128 at 176 keys still loses (1-10 %). hd256 without a mask
/// takes 80 keys from 1k (+1.5 % at 1k, +2 % at 2k; twelfth session).
static constexpr int64_t kWideBlockMinKeys = 4096;
/// hd128 without a mask band runs the persistent grid with 128-key blocks
/// up to 8k keys instead (H200, twelfth session: 4k 614 against 575
/// TFLOP/s at 176 keys a block per tile, 8k 621 against 583; with 176 keys
/// the persistent grid lost 4-5 %: LLVM hoists the ragged last block's
/// bound out of the tile loop and ptxas spills). 16k is not measured.
static constexpr int64_t kUnmaskedPersistentMaxKeys = 8192;
static constexpr int64_t kWideHeadsUnmaskedWideBlockMinKeys = 1024;
static constexpr int64_t kThreeWarpgroupsMinCausalKeys = 8192;
/// Packed sequences (no persistent grid, the lengths the call's) at head dim
/// 64 take 192 x 128 with or without a causal mask, and at head dim 256 the
/// 80-key blocks (H200, twenty-third session, 16k tokens as 8 x 2048 and as
/// mixed lengths: hd64 +15-18 % without a mask, causal +3-6 % equal and
/// +13 % mixed; hd256 +1-3 %, causal +0-9 %; docs/perf/README.md).
static bool varlenWideBlocks(const AttentionConfig &c) {
  return c.varlen && !c.backward && !c.window && !c.softcap &&
         c.headDim == c.headDimV;
}

/// Whether some keys of a row are masked by a band (causal, a window) or
/// the score is capped: the problems that keep narrower blocks.
static bool hasMaskBand(const AttentionConfig &c) {
  return c.causal || c.window || c.softcap;
}

static std::pair<int64_t, int64_t>
wgmmaDefaultBlocks(const AttentionConfig &c) {
  // FP8: half the bytes of a 16-bit tile, so 128 keys fit at head dim 256
  // too, beside V's transpose.
  if (c.isFP8())
    return {128, 128};
  bool band = hasMaskBand(c);
  if (c.headDim == 64 && c.headDimV == 64 && !c.window && !c.softcap &&
      (!c.causal || c.runtimeShapes ||
       c.seqKV >= kThreeWarpgroupsMinCausalKeys))
    return {192, 128};
  if (varlenWideBlocks(c) && (c.headDim == 64 || c.headDim == 256))
    return {c.headDim == 64 ? 192 : 128, c.headDim == 64 ? 128 : 80};
  bool onlyCausal = !c.window && !c.softcap;
  if (!c.runtimeShapes && c.headDim == c.headDimV) {
    if (c.headDim == 128 && !band && c.seqKV > kUnmaskedPersistentMaxKeys)
      return {128, 176};
    int64_t minKeys =
        band ? kWideBlockMinKeys : kWideHeadsUnmaskedWideBlockMinKeys;
    if (c.headDim == 256 && onlyCausal && c.seqKV >= minKeys)
      return {128, 80};
  }
  return {128, c.wideHeads() ? 64 : 128};
}

/// Why the WGMMA forward cannot take this problem; empty when it can.
static std::string wgmmaForwardLimits(const AttentionConfig &c) {
  if (c.backward)
    return "the backward is on mma.sync";
  if (c.runtimeShapes && c.chip != "sm_90a" && c.chip != "sm_90")
    return "runtime shapes on " + c.chip;
  if (c.dtype != "bf16" && c.dtype != "f16" && !c.isFP8())
    return "dtype " + c.dtype;
  if (c.isFP8() && c.varlen)
    return "FP8 with packed sequences";
  // Positive first: the byte count below multiplies the head dims, and a
  // config's may be anything (a dynamic dim, a C++ caller's -2^62).
  // (FP8 rows of 128-byte swizzled tiles: multiples of 128 elements;
  // 16-bit rows in 32-byte swizzle atoms at least: multiples of 16.)
  int64_t dimQuantum = c.isFP8() ? 128 : 16;
  for (int64_t d : {c.headDim, c.headDimV})
    if (d <= 0 || d % dimQuantum != 0 || d > 256)
      return "head dim " + std::to_string(d) + " (the WGMMA kernel takes " +
             (c.isFP8() ? "128 or 256 in FP8" : "multiples of 16 up to 256") +
             ")";
  // Q, K and V tiles, 16-bit, single-buffered: what the kernel needs at
  // least (fa-convert-tiled-attention-to-fagpu has the final word).
  if (c.blockQ && c.blockQ != 64 && c.blockQ != 128 && c.blockQ != 192)
    return "block-q " + std::to_string(c.blockQ) +
           " (the WGMMA kernel takes 64, 128 or 192: one to three "
           "warpgroups)";
  // As checkWgmmaKernelConfig (TiledAttentionToFAGPU.cpp) will: a block
  // the WGMMA kernel cannot take falls back to mma.sync instead of failing.
  if (c.blockQ == 192 && std::max(c.headDim, c.headDimV) > 128)
    return "block-q 192 at head dim " +
           std::to_string(std::max(c.headDim, c.headDimV)) +
           " (three warpgroups of 160 registers take head dims up to 128)";
  if (c.blockKV && (c.blockKV < 16 || c.blockKV > 256))
    return "block-kv " + std::to_string(c.blockKV) +
           " (the WGMMA kernel takes 16 to 256)";
  int64_t blockQ = c.blockQ ? c.blockQ : wgmmaDefaultBlocks(c).first;
  int64_t blockKV = c.blockKV ? c.blockKV : wgmmaDefaultBlocks(c).second;
  // FP8: one byte an element, and V's transpose beside V.
  int64_t bytes =
      c.isFP8() ? blockQ * c.headDim + blockKV * (c.headDim + 2 * c.headDimV)
                : 2 * (blockQ * c.headDim + blockKV * (c.headDim + c.headDimV));
  if (bytes > fagpu::kMaxSharedBytesPerBlock)
    return "block " + std::to_string(blockQ) + " x " + std::to_string(blockKV) +
           " tiles need " + std::to_string(bytes) + " bytes of shared memory";
  return "";
}

bool AttentionConfig::usesWgmmaForward() const {
  if (forwardVariant == "mma.sync")
    return false;
  if (!wgmmaForwardLimits(*this).empty())
    return false;
  return chip == "sm_90a" || chip == "sm_90";
}

/// Why the WGMMA backward cannot take this problem; empty when it can (as
/// checkWgmmaBackwardConfig in TiledAttentionGradToFAGPU.cpp will).
/// The WGMMA backward's blocks: two warpgroups over 128 keys and 64
/// queries, 128 at head dim 64 (FA3's tiles there: H200 +7-10 % against 64,
/// docs/perf/README.md twentieth session), 64 keys at head dim 256.
static std::pair<int64_t, int64_t>
wgmmaBackwardDefaultBlocks(const AttentionConfig &c) {
  if (c.wideHeads())
    return {64, 64};
  // (With 64 keys asked for, 64 queries: 128 x 64 has no layout.)
  if (std::max(c.headDim, c.headDimV) <= 64 && c.blockKV != 64)
    return {128, 128};
  return {64, 128};
}

static std::string wgmmaBackwardLimits(const AttentionConfig &c) {
  if (!c.backward)
    return "not a backward";
  if (c.chip != "sm_90a" && c.chip != "sm_90")
    return c.chip + " has no WGMMA";
  // The call's shapes and packed sequences: the grid is the call's, which
  // a deterministic backward's turn counters cannot be.
  if (c.runtimeShapes && c.deterministic)
    return c.varlen ? "deterministic with packed sequences"
                    : "deterministic with runtime shapes";
  if (c.dtype != "bf16" && c.dtype != "f16")
    return "dtype " + c.dtype;
  // Positive first, as the forward's: a config's dims may be anything (a
  // C++ caller's -16 is a multiple of 16).
  for (int64_t d : {c.headDim, c.headDimV})
    if (d <= 0 || d % 16 != 0 || d > 256)
      return "head dim " + std::to_string(d) +
             " (the WGMMA backward takes multiples of 16 up to 256)";
  bool wide = c.wideHeads();
  bool narrow = std::max(c.headDim, c.headDimV) <= 64;
  // Where only one of the two is given, the other is the default's.
  auto [defaultQ, defaultKV] = wgmmaBackwardDefaultBlocks(c);
  int64_t blockQ = c.blockQ ? c.blockQ : defaultQ;
  int64_t blockKV = c.blockKV ? c.blockKV : defaultKV;
  bool fits = wide ? blockQ == 64 && blockKV == 64
                   : (blockQ == 64 && (blockKV == 64 || blockKV == 128)) ||
                         (blockQ == 128 && blockKV == 128 && narrow);
  if (!fits)
    return "blocks " + std::to_string(c.blockQ) + " x " +
           std::to_string(c.blockKV) + " (the WGMMA backward takes 64 x " +
           (wide ? "64 at head dim 256)"
                 : "64, 64 x 128, or 128 x 128 at head dim 64)");
  return "";
}

/// The WGMMA backward is the default wherever it runs: on the H200 it
/// measured 1.4-1.8x the mma.sync backward at head dims 64 and 128 and
/// 1.9-5x at 256 (docs/perf/README.md, 2026-12-01).
bool AttentionConfig::usesWgmmaBackward() const {
  return backwardVariant != "mma.sync" && wgmmaBackwardLimits(*this).empty();
}

std::string AttentionConfig::dqHandoffLimits() const {
  if (!usesWgmmaBackward())
    return "it needs the WGMMA backward";
  if (backwardProducer == "off")
    return "it needs the TMA producer (backward-producer=off)";
  if (dqReduction == "atomic" || wideHeads())
    return "it needs dQ through bulk reductions (dq-reduction=atomic, or "
           "head dims above 128)";
  return "";
}

/// The compiler's choice: head dims up to 64 without a mask, where the
/// hand-off measured +3-4 % on the H200 (hd64 N = 2k and 8k, with setmaxnreg
/// honoured); with a causal mask it lost 2-3 % there, and 2-5 % at hd128
/// (docs/perf/README.md, fifteenth session).
bool AttentionConfig::handsOffDq() const {
  // Deterministic: the reducer warp takes dQ's turns, so that the compute
  // warps never wait for another block's sums.
  bool chosen = dqHandoff == "on" ||
                (dqHandoff == "auto" &&
                 (deterministic ||
                  (!causal && !window && std::max(headDim, headDimV) <= 64)));
  return backward && chosen && dqHandoffLimits().empty();
}

std::string AttentionConfig::backwardVariantReason() const {
  if (usesWgmmaBackward())
    return (backwardVariant == "wgmma"
                ? "wgmma: asked for"
                : "wgmma: " + chip + ", head dims " + std::to_string(headDim) +
                      "/" + std::to_string(headDimV)) +
           (backwardProducer == "off"
                ? "; Q and dO by cp.async (backward-producer=off)"
                : "; Q and dO from a TMA producer warpgroup") +
           (handsOffDq() ? ", which also adds dQ" : "");
  if (backwardVariant == "mma.sync")
    return "mma.sync: asked for";
  return "mma.sync: " + wgmmaBackwardLimits(*this);
}

/// The compiler's persistent grid: a block per SM of an H100/H200 SXM,
/// where a tile has at most this many KV blocks on average. With two Q
/// buffers (the next tile's Q loads under this tile's products) it gains
/// up to 16 (H200, twelfth session, docs/perf/README.md: hd64 +4-8 % at
/// 1k-4k, hd128 +4-9 % at 1k-2k, hd256 causal +4-6 % at 1k-2k) and loses
/// beyond (hd128 at 176-key blocks -4 % at 4k, -5 % at 8k). At head dim 256
/// without a causal mask (no Q buffers fit beside its K/V rings) it lost 1-3 %
/// at 16, so there it stays with the short tiles that it measured on first
/// (Hopper step 9).
static constexpr int64_t kPersistentGridBlocks = 132;
static constexpr int64_t kShortTileKVBlocks = 16;
static constexpr int64_t kShortWideTileKVBlocks = 5;

/// At head dim 128 with a causal mask (no window or softcap) the persistent
/// grid takes tiles of up to 32 KV blocks (8k keys): bf16 8k causal 580
/// against 541-558 TFLOP/s a block per tile, FP8 762 against 726-740; at
/// 16k causal it lost (bf16 448-453 against 595-619, FP8 538 against
/// 785-809). FP8 without a mask: up to 16k keys (16k: 810 against 794).
/// H100, docs/perf/README.md, thirty-second session.
static constexpr int64_t kCausalTileKVBlocks128 = 32;
static constexpr int64_t kFP8UnmaskedPersistentMaxKeys = 16384;

static int64_t shortTileKVBlocks(const AttentionConfig &c) {
  bool plainCausal = c.causal && !c.window && !c.softcap;
  if (c.headDim == 128 && c.headDimV == 128 && plainCausal)
    return kCausalTileKVBlocks128;
  if (c.isFP8() && c.headDim == 128 && c.headDimV == 128 && !hasMaskBand(c))
    return kFP8UnmaskedPersistentMaxKeys / 128;
  if (c.headDim == 128 && c.headDimV == 128 && !hasMaskBand(c))
    return kUnmaskedPersistentMaxKeys / 128;
  bool wideUnmasked = c.wideHeads() && !c.causal;
  return wideUnmasked ? kShortWideTileKVBlocks : kShortTileKVBlocks;
}

std::string AttentionConfig::forwardVariantReason() const {
  if (forwardVariant == "mma.sync")
    return "mma.sync: asked for";
  std::string limits = wgmmaForwardLimits(*this);
  if (!limits.empty())
    return "mma.sync: " + limits;
  if (chip != "sm_90a" && chip != "sm_90")
    return "mma.sync: " + chip + " has no WGMMA";
  std::string why =
      chip == "sm_90a"
          ? "wgmma: sm_90a asked for"
          : "wgmma: sm_90 (built as sm_90a), where the warp-specialized "
            "WGMMA kernel measures faster than mma.sync at every head dim";
  int64_t blocks = effectivePersistentBlocks();
  if (blocks <= 0) {
    why += "; a block per tile";
  } else {
    std::string reason =
        persistentBlocks != -1 ? "asked for"
        : runtimeShapes
            ? "runtime shapes: at most this many, the call's tiles counted "
              "by the kernel"
            : llvm::formatv("tiles of at most {0} KV blocks",
                            shortTileKVBlocks(*this))
                  .str();
    why +=
        llvm::formatv("; a persistent grid of {0} blocks ({1})", blocks, reason)
            .str();
  }
  int64_t groups = effectiveBlockQ() / 64;
  why += llvm::formatv("; {0} x {1} blocks ({2} compute warpgroup{3})",
                       effectiveBlockQ(), effectiveBlockKV(), groups,
                       groups == 1 ? "" : "s")
             .str();
  if (double threshold = effectiveRescaleThreshold(); threshold > 0) {
    SmallString<16> text; // shortest: 8, not 8.00
    APFloat(threshold).toString(text);
    why += ("; O rescaled only where a row's max rises by more than " + text +
            " (base 2)")
               .str();
  }
  return why;
}

std::pair<int64_t, int64_t> AttentionConfig::defaultBlocks() const {
  if (usesWgmmaForward())
    return wgmmaDefaultBlocks(*this);
  if (usesWgmmaBackward())
    return wgmmaBackwardDefaultBlocks(*this);
  // The mma.sync kernels: the forward 128 x 64, the backward 64 x 128
  // (FlashAttention 2's: 8 warps of 16 keys, dQ over 4 x 2 warps; H100,
  // sm_80 PTX: 0.93-1.02x the emitter it replaced at hd64/128 where 64 x 64
  // read 0.67-0.81x; hd256 one-stage 64 x 128 1.25x the two-stage 64 x 64;
  // docs/perf/README.md, thirty-ninth session). Where a chip's shared
  // memory (99 KB on sm_86/89, 163 KB on sm_80/87) cannot hold a block's
  // tiles once, the next smaller block that it can; the rings then take
  // what stages fit (fagpu-pipeline-shared-copies).
  static const std::pair<int64_t, int64_t> forwardBlocks[] = {
      {128, 64}, {64, 64}, {64, 32}};
  static const std::pair<int64_t, int64_t> backwardBlocks[] = {
      {64, 128}, {64, 64}, {32, 64}, {32, 32}};
  llvm::ArrayRef<std::pair<int64_t, int64_t>> candidates =
      backward ? llvm::ArrayRef(backwardBlocks) : llvm::ArrayRef(forwardBlocks);
  // A config is sized before it is validated: head dims that no kernel
  // takes keep the first block (and no overflow), the compiler refuses them.
  if (headDim <= 0 || headDimV <= 0 || std::max(headDim, headDimV) > 256)
    return candidates.front();
  int64_t width = headDim + headDimV;
  auto onceBytes = [&](int64_t q, int64_t kv) {
    int64_t elements =
        backward ? q * width + kv * width + q * kv : q * headDim + kv * width;
    return 2 * elements;
  };
  int64_t limit = maxSharedBytesPerBlock(chip);
  for (auto [q, kv] : candidates)
    if (onceBytes(q, kv) <= limit)
      return {q, kv};
  return candidates.back();
}

/// The compiler's rescale threshold (FlashAttention 4's 8, in base 2: P
/// up to 256, within e4m3's 448) where the H200 measured it faster: head
/// dims above 128 (O's rescale is 128 FMULs a thread and block there; bf16
/// hd256 N = 8k +3-11 %, causal +2-6 %; FP8 hd256 +4-6 %, N = 16k 950 ->
/// 996-1004 TFLOP/s) and FP8 kernels with a block per tile (hd128 N = 16k
/// +2.4 %). Not at 64 and 128 in bf16 (within noise) nor in FP8's
/// persistent grid (hd128 N = 8k -2-3 %). docs/perf/README.md, thirty-first
/// session.
static constexpr double kRescaleThreshold = 8;

double AttentionConfig::effectiveRescaleThreshold() const {
  if (!usesWgmmaForward())
    return 0;
  if (rescaleThreshold >= 0)
    return rescaleThreshold;
  if (wideHeads() || (isFP8() && effectivePersistentBlocks() <= 0))
    return kRescaleThreshold;
  return 0;
}

/// Runtime shapes: the tile count is the call's, so the kernel counts its
/// tiles and the runtime launches at most kPersistentGridBlocks blocks, at
/// head dims up to 128 (H100, 2026-12-07, docs/perf/README.md: 0.83-0.96x
/// -> 0.91-0.99x of the kernels built for the shape at hd128 2k and 8k,
/// 0.76-0.83x -> 0.82-0.94x at hd64 2k); not measured at wider heads, FP8,
/// or for packed sequences (whose grid follows the longest sequence, which
/// the kernel does not take).
static bool persistentRuntimeShapes(const AttentionConfig &c) {
  return !c.varlen && !c.isFP8() && !c.wideHeads();
}

int64_t AttentionConfig::effectivePersistentBlocks() const {
  if (persistentBlocks != -1)
    return persistentBlocks;
  if (runtimeShapes)
    return persistentRuntimeShapes(*this) ? kPersistentGridBlocks : 0;
  int64_t kvBlocks = llvm::divideCeil(seqKV, effectiveBlockKV());
  int64_t perTile = causal ? (kvBlocks + 1) / 2 : kvBlocks;
  return perTile <= shortTileKVBlocks(*this) ? kPersistentGridBlocks : 0;
}

std::string AttentionConfig::key() const {
  // A quantization: what its kernels depend on, nothing of an attention's.
  if (quantize)
    return llvm::formatv("{0}:quantize:b{1}:h{2}/{3}:n{4}:d{5}:rot{6}:{7}{8}:"
                         "{9}",
                         dtype, batch, headsQ, headsKV, seqQ, headDim,
                         rotationSeed ? std::to_string(*rotationSeed) : "none",
                         chip, features, entry)
        .str();
  return llvm::formatv(
             "{19}:{0}:b{1}:h{2}/{3}:n{4}/{5}:d{6}/"
             "{7}:s{8}:c{9}:w{10},{11}:cap{12}:"
             "t{13}x{14}r{18}k{20}p{21}:{15}{16}:{17}",
             dtype, runtimeShapes ? "?" : std::to_string(batch), headsQ,
             headsKV, runtimeShapes ? "?" : std::to_string(seqQ),
             runtimeShapes ? "?" : std::to_string(seqKV), headDim, headDimV,
             scale ? llvm::formatv("{0:e16}", *scale).str() : "default", causal,
             window ? window->first : -2, window ? window->second : -2,
             softcap ? llvm::formatv("{0:e16}", *softcap).str() : "none",
             effectiveBlockQ(), effectiveBlockKV(), chip, features, entry,
             rowsPerWarp, backward ? "bwd" : "fwd", kvStages, persistentBlocks)
             .str() +
         // Only when set, so that the other configs' keys stay as they were.
         (exp2OnFmaEvery ? ":e" + std::to_string(exp2OnFmaEvery) : "") +
         (rescaleThreshold >= 0
              ? llvm::formatv(":rt{0:e16}", rescaleThreshold).str()
              : "") +
         (qBuffers ? ":qb" + std::to_string(qBuffers) : "") +
         (backward && backwardVariant != "auto" ? ":" + backwardVariant : "") +
         (!backward && forwardVariant != "auto" ? ":fwd-" + forwardVariant
                                                : "") +
         (backward && dqReduction != "auto" ? ":dq-" + dqReduction : "") +
         (backward && backwardProducer != "auto"
              ? ":producer-" + backwardProducer
              : "") +
         (backward && dqHandoff != "auto" ? ":dq-handoff-" + dqHandoff : "") +
         (backward && deterministic ? ":deterministic" : "") +
         (backward && transposeScores ? ":transpose-scores" : "") +
         (backward && gradLse ? ":grad-lse" : "") + (varlen ? ":varlen" : "") +
         (isFP8() ? ":out-" + outDtype : "") +
         (isFP8() && fp8Transpose != "auto" ? ":transpose-" + fp8Transpose
                                            : "");
}

std::string mlir::fa::configToMLIR(const AttentionConfig &c) {
  if (c.quantize) {
    std::string x = llvm::formatv("tensor<{0}x{1}x{2}x{3}x{4}>", c.batch,
                                  c.headsQ, c.seqQ, c.headDim, c.dtype);
    std::string q = llvm::formatv("tensor<{0}x{1}x{2}x{3}xf8E4M3FN>", c.batch,
                                  c.headsQ, c.seqQ, c.headDim);
    std::string d =
        llvm::formatv("tensor<{0}x{1}xf32>", c.batch, c.headsKV).str();
    std::string rotate =
        c.rotationSeed
            ? llvm::formatv(" rotate(seed = {0})", *c.rotationSeed).str()
            : "";
    return llvm::formatv("func.func @{0}(%x: {1}) -> ({2}, {3}) {{\n"
                         "  %q, %d = fa.quantize %x{4} : {1} -> {2}, {3}\n"
                         "  return %q, %d : {2}, {3}\n}\n",
                         c.entry, x, q, d, rotate);
  }
  // Runtime shapes: `?` for the batch and the sequence lengths; packed
  // sequences: batch 1, `?` rows.
  bool dynamic = c.runtimeShapes || c.varlen;
  auto size = [&](int64_t n) {
    return dynamic ? std::string("?") : std::to_string(n);
  };
  std::string batch = c.varlen ? "1" : size(c.batch);
  auto tensor = [&](int64_t heads, int64_t seq, int64_t dim,
                    StringRef element) {
    return llvm::formatv("tensor<{0}x{1}x{2}x{3}x{4}>", batch, heads, size(seq),
                         dim, element)
        .str();
  };
  // FP8: e4m3 inputs, O in outDtype, each input's descales [B, Hkv].
  StringRef input = c.isFP8() ? "f8E4M3FN" : StringRef(c.dtype);
  StringRef output = c.isFP8() ? StringRef(c.outDtype) : input;
  std::string q = tensor(c.headsQ, c.seqQ, c.headDim, input);
  std::string k = tensor(c.headsKV, c.seqKV, c.headDim, input);
  std::string v = tensor(c.headsKV, c.seqKV, c.headDimV, input);
  std::string o = tensor(c.headsQ, c.seqQ, c.headDimV, output);
  std::string lse = llvm::formatv("tensor<{0}x{1}x{2}xf32>", batch, c.headsQ,
                                  size(c.seqQ));
  // The varlen operands: arguments, and the op's clause.
  std::string seqArgs, seqlens;
  if (c.isFP8()) {
    std::string d =
        llvm::formatv("tensor<{0}x{1}xf32>", batch, c.headsKV).str();
    seqArgs = llvm::formatv(", %q_descale: {0}, %k_descale: {0}, "
                            "%v_descale: {0}",
                            d);
    seqlens = llvm::formatv(" descale(%q_descale, %k_descale, %v_descale : "
                            "{0}, {0}, {0})",
                            d);
  }
  if (c.varlen) {
    seqArgs = ", %cu_q: tensor<?xi32>, %cu_k: tensor<?xi32>, %max_q: index, "
              "%max_k: index";
    seqlens = " seqlens(%cu_q, %cu_k max %max_q, %max_k : tensor<?xi32>, "
              "tensor<?xi32>)";
  }
  std::string attrs;
  if (c.scale)
    attrs += llvm::formatv(" scale = {0:e16}", *c.scale);
  if (c.causal)
    attrs += " causal";
  if (c.window)
    attrs +=
        llvm::formatv(" window [{0}, {1}]", c.window->first, c.window->second);
  if (c.softcap)
    attrs += llvm::formatv(" softcap = {0:e16}", *c.softcap);
  if (c.backward && c.deterministic)
    attrs += " deterministic";
  if (c.backward) {
    // The gradient of LSE: an argument after lse, and the op's clause.
    std::string gradLseArg, gradLse;
    if (c.gradLse) {
      gradLseArg = ", %dlse: " + lse;
      gradLse = " grad_lse(%dlse : " + lse + ")";
    }
    return llvm::formatv(
        "func.func @{0}(%q: {1}, %k: {2}, %v: {3}, %o: {4}, %do: {4}, "
        "%lse: {5}{9}{7}) -> ({1}, {2}, {3}) {{\n"
        "  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, "
        "%lse{10}{8}{6} : {1}, {2}, {3}, {4}, {4}, {5} -> {1}, {2}, {3}\n"
        "  return %dq, %dk, %dv : {1}, {2}, {3}\n}\n",
        c.entry, q, k, v, o, lse, attrs, seqArgs, seqlens, gradLseArg, gradLse);
  }
  return llvm::formatv(
      "func.func @{0}(%q: {1}, %k: {2}, %v: {3}{7}) -> ({4}, {5}) {{\n"
      "  %o, %lse = fa.attention %q, %k, %v{8}{6} : {1}, {2}, {3} -> {4}, "
      "{5}\n"
      "  return %o, %lse : {4}, {5}\n}\n",
      c.entry, q, k, v, o, lse, attrs, seqArgs, seqlens);
}
