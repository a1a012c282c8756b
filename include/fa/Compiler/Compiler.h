//===- Compiler.h - Attention config -> GPU kernel, in-process --*- C++ -*-===//
//
// The compiler as a library: used by `fa-compile` ahead of time and by the
// runtime's JIT. Input is a config (or MLIR text holding `fa.attention`);
// output is the kernel as MLIR, LLVM IR, PTX or cubin plus its launch
// metadata (a JSON object, see docs/runtime.md).
//
//===----------------------------------------------------------------------===//

#ifndef FA_COMPILER_COMPILER_H
#define FA_COMPILER_COMPILER_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

namespace mlir {
namespace fa {

/// One attention problem (forward, or backward with `backward`) and how to
/// compile it.
struct AttentionConfig {
  bool backward = false;
  /// Not an attention: fa.quantize of a [batch, headsQ, seqQ, headDim]
  /// tensor of `dtype` (bf16 or f16) to e4m3 with one descale per
  /// (batch, group of headsQ / headsKV heads), rotated first if
  /// rotationSeed is set (fa-convert-quantize-to-gpu's two kernels).
  bool quantize = false;
  std::optional<int64_t> rotationSeed;
  std::string dtype = "bf16"; ///< bf16 | f16 | e4m3 (FP8 forward)
  /// O's type with e4m3 inputs: bf16 | f16 (other dtypes write their own).
  std::string outDtype = "bf16";
  int64_t batch = 1, headsQ = 1, headsKV = 1, seqQ = 128, seqKV = 128;
  int64_t headDim = 64, headDimV = 64;
  /// Batch and sequence lengths are the call's (`?` in the op's types): one
  /// kernel for every shape; batch, seqQ and seqKV above are then ignored.
  /// The WGMMA forward only.
  bool runtimeShapes = false;
  /// Packed sequences (FlashAttention's varlen): the op takes
  /// seqlens(cu_seqlens_q, cu_seqlens_k max ...) over batch-1 tensors whose
  /// N is the call's; implies runtimeShapes. The WGMMA forward only.
  bool varlen = false;
  std::optional<double> scale; ///< default 1/sqrt(headDim)
  bool causal = false;
  std::optional<std::pair<int64_t, int64_t>> window;
  std::optional<double> softcap;
  /// 0 picks the measured defaults (defaultBlocks()).
  int64_t blockQ = 0, blockKV = 0;
  int64_t rowsPerWarp = 0; ///< 16 or 32; 0 picks FA2's choice
  /// K/V buffers of the WGMMA forward's TMA rings (>= 2; 0 = 3, or 2 in
  /// a persistent grid; fewer if they do not fit shared memory).
  int64_t kvStages = 0;
  /// Blocks of the WGMMA forward's persistent grid (fagpu-persistent-grid)
  /// that loop over the tiles; 0 = a block per tile; -1 (the default) = the
  /// compiler's choice (effectivePersistentBlocks).
  int64_t persistentBlocks = -1;
  /// The WGMMA forward computes every N-th exponential of the softmax on
  /// the FMA pipe instead of MUFU (fa-convert-fagpu-to-nvvm); 0: none.
  int64_t exp2OnFmaEvery = 0;
  /// The WGMMA forward's online softmax raises a row's running max only
  /// where a KV block's scores pass it by more than this (base 2,
  /// fa.online_attention's rescale_threshold; FlashAttention 4's
  /// conditional rescale), and skips O's rescale in warps whose rows all
  /// kept theirs (fagpu-skip-unit-rescales). 0: the exact running max;
  /// -1 (the default): the compiler's choice (effectiveRescaleThreshold).
  double rescaleThreshold = -1;
  /// Q buffers of the WGMMA forward's persistent grid (fagpu-warp-specialize
  /// tile-buffers): 2 lets the producer load the next tile's Q while this
  /// tile computes, where it fits shared memory; 0 = the compiler's choice
  /// (2: +12-17 % at N = 512 on the H200, docs/perf/README.md).
  int64_t qBuffers = 0;
  /// The forward's kernel, both from the GPU tile level: "auto" (the
  /// compiler's choice), "wgmma" (sm_90) or "mma.sync" (any chip).
  std::string forwardVariant = "auto";
  /// The backward's main kernel, both from the GPU tile level: "auto" (the
  /// compiler's choice), "wgmma" (sm_90a) or "mma.sync" (any chip).
  std::string backwardVariant = "auto";
  /// How the WGMMA backward sums dQ (fa-convert-tiled-attention-grad-to-
  /// fagpu's dq-reduction): "auto", "bulk" or "atomic".
  std::string dqReduction = "auto";
  /// Whether the WGMMA backward gets a TMA producer warpgroup (Q and dO
  /// through mbarrier rings, fagpu-warp-specialize) instead of cp.async
  /// rings that the compute warps issue: "auto" (the compiler's choice:
  /// on), "on" or "off".
  std::string backwardProducer = "auto";
  /// Whether the producer warpgroup also issues dQ's TMA reductions, from a
  /// two-stage staging ring the compute warps fill (fagpu-warp-specialize's
  /// hand-off-reductions): "auto" (the compiler's choice: on at head dims
  /// up to 64 without a mask), "on" or "off".
  std::string dqHandoff = "auto";
  /// Backward: dQ added in KV-block order, so that gradients are bitwise
  /// equal run to run (`fa.attention_grad ... deterministic`; the WGMMA
  /// backward's atomic sums, each a turn on a counter per Q block).
  bool deterministic = false;
  /// Backward: the loss also reads LSE, whose gradient dLSE the kernels
  /// take (`fa.attention_grad ... grad_lse(%dlse)`; the pre kernel folds
  /// it into delta).
  bool gradLse = false;
  /// WGMMA backward: S and dP computed transposed (Sᵀ = K Qᵀ) in a
  /// #fagpu.transposed accumulator layout, Pᵀ and dSᵀ register A operands
  /// (FlashAttention 3's SdP_swapAB; fa-convert-tiled-attention-grad-to-
  /// fagpu's transpose-scores). Needs 64 keys a compute warpgroup.
  bool transposeScores = false;
  /// FP8 forward: who transposes V for P·V (WGMMA reads 8-bit operands
  /// K-major only): "consumers" (the compute warpgroups, together, between
  /// barriers of both) or "producer" (the producer warpgroup's warps 1-3,
  /// fagpu-transpose-in-producer, which lets the softmax overlap and
  /// ping-pong in). "auto": producer (H100, ldmatrix/stmatrix
  /// transposition: 1.07-1.17x the consumers' at hd128 and 256,
  /// docs/perf/README.md, twenty-eighth session).
  std::string fp8Transpose = "auto";
  bool transposesInProducer() const {
    return isFP8() && fp8Transpose != "consumers";
  }
  std::string chip = "sm_90";
  std::string features = "+ptx80";
  std::string entry = "fa_fwd"; ///< kernel symbol (backward: + _pre, _post)

  bool wideHeads() const { return std::max(headDim, headDimV) > 128; }
  /// f8E4M3FN operands (descales, a bf16 or f16 output).
  bool isFP8() const { return dtype == "e4m3"; }
  /// The persistent grid's blocks for the WGMMA forward: persistentBlocks
  /// if set, else 132 (one per SM of an H100/H200 SXM) where a tile has at
  /// most 16 KV blocks on average (5 at head dims above 128 without a
  /// causal mask; 64 at head dim 128 without a mask band, where 128-key
  /// blocks replace 176 up to 8k keys) and 0 elsewhere: on the H200 the grid
  /// with two Q buffers won there and lost on longer tiles
  /// (docs/perf/README.md, twelfth session). With runtime shapes (not
  /// packed sequences) 132 at head dims up to 128 in bf16/f16, else 0: the
  /// kernel counts the call's tiles and the runtime launches min(132,
  /// tiles) blocks.
  int64_t effectivePersistentBlocks() const;
  /// rescaleThreshold if set, else the compiler's choice for the WGMMA
  /// forward; 0 for other kernels.
  double effectiveRescaleThreshold() const;
  int64_t effectiveBlockQ() const {
    return blockQ ? blockQ : defaultBlocks().first;
  }
  int64_t effectiveBlockKV() const {
    return blockKV ? blockKV : defaultBlocks().second;
  }
  /// Whether the forward lowers through the GPU tile level to WGMMA
  /// (fa-convert-tiled-attention-to-fagpu), and why or why not: asked for
  /// with sm_90a; chosen on sm_90 where it measured faster than mma.sync
  /// (head dims above 128, docs/perf/README.md); never for shapes it does
  /// not take (head dims not multiples of 64 up to 256, other dtypes).
  bool usesWgmmaForward() const;
  std::string forwardVariantReason() const;
  /// Whether the backward lowers through the GPU tile level to WGMMA
  /// (fa-convert-tiled-attention-grad-to-fagpu), and why or why not.
  bool usesWgmmaBackward() const;
  std::string backwardVariantReason() const;
  /// The WGMMA backward's register budget. At every head dim dP = dO Vᵀ
  /// is issued beside S = Q Kᵀ (the dO stage waited for beside Q's:
  /// fagpu-async-products{hoist-stage-waits}), which holds both
  /// accumulators at once; at 65-128, and at 64 with 128-row Q blocks (the
  /// default there), that fits only with P and dS stored by stmatrix
  /// (fa-convert-fagpu-to-nvvm{matrix-stores}: 4 address registers a
  /// thread instead of 16), which measured 5 % slower at 64 with 64-row
  /// blocks and no faster at 256 (where the hoist alone gains 3-5 %).
  /// H200, docs/perf/README.md (eighteenth to twentieth sessions).
  bool backwardStoresMatrices() const {
    return usesWgmmaBackward() && !wideHeads() &&
           (std::max(headDim, headDimV) > 64 || effectiveBlockQ() == 128);
  }
  /// Why dQ's reductions cannot go to the producer ("" where they can).
  std::string dqHandoffLimits() const;
  /// Whether the backward's producer issues dQ's reductions.
  bool handsOffDq() const;
  /// The chip the kernels are built for: sm_90a for the WGMMA kernels (their
  /// instructions are arch-specific), else `chip`.
  std::string targetChip() const {
    return usesWgmmaForward() || usesWgmmaBackward() ? "sm_90a" : chip;
  }
  /// (block-q, block-kv) when not set: the WGMMA forward 128 x 128 (128 x
  /// 64 above head dim 128); the mma.sync forward 128 x 64; the WGMMA
  /// backward's by head dim; the mma.sync backward 64 x 128 (16 keys a
  /// warp, dQ over 4 x 2 warps); smaller mma.sync blocks where the chip's
  /// shared memory cannot hold those.
  std::pair<int64_t, int64_t> defaultBlocks() const;

  /// A stable one-line key: every field that changes the kernel.
  std::string key() const;
};

enum class EmitKind { MLIR, LLVM, PTX, Cubin };

struct CompiledKernel {
  std::string payload;  ///< MLIR / LLVM IR / PTX text, or cubin bytes
  std::string metadata; ///< .meta JSON text; empty for MLIR / LLVM
};

/// The `fa.attention` (or `fa.attention_grad`) function a config stands
/// for, as MLIR text.
std::string configToMLIR(const AttentionConfig &config);

/// Compiles MLIR text holding one function with an `fa.attention`; errors
/// carry the diagnostics, located in `bufferName`.
llvm::Expected<CompiledKernel> compileSource(llvm::StringRef source,
                                             llvm::StringRef bufferName,
                                             const AttentionConfig &options,
                                             EmitKind emit);

/// Compiles a config (validated by the dialect's verifiers).
llvm::Expected<CompiledKernel> compileAttention(const AttentionConfig &config,
                                                EmitKind emit);

/// The chips the kernels can be built for: cp.async and mma.sync need sm_80
/// or newer, and the PTX ISA the compiler targets (AttentionConfig::features,
/// PTX 8.0) ends at sm_90a.
llvm::ArrayRef<llvm::StringRef> supportedChips();

/// Success if `chip` is one of supportedChips(); otherwise an error that
/// lists them. compileSource() checks it first: LLVM's NVPTX back end
/// crashes or aborts on other names instead of reporting them.
llvm::Error checkChip(llvm::StringRef chip);

/// The shared memory one block can opt in to on `chip` (the CUDA
/// programming guide's table: 227 KB on sm_90, 163 KB on sm_80/87, 99 KB on
/// sm_86/89). The kernels' tiles are placed against Hopper's; a kernel built
/// for a smaller chip is checked against its own before it is lowered.
int64_t maxSharedBytesPerBlock(llvm::StringRef chip);

/// Whether `name` can name a kernel: [A-Za-z_][A-Za-z0-9_]*.
bool isValidEntryName(llvm::StringRef name);

/// Version string of this compiler, part of every kernel-cache key.
const char *compilerVersion();

} // namespace fa
} // namespace mlir

#endif // FA_COMPILER_COMPILER_H
