//===- CompileOptions.cpp - fa-compile's command line ---------------------===//

#include "CompileOptions.h"

#include "fa/Dialect/FAGPU/IR/FAGPU.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Path.h"

#include <cmath>

using namespace llvm;
using namespace mlir::fa;

cl::OptionCategory &mlir::fa::compileOptionCategory() {
  static cl::OptionCategory category("fa-compile options");
  return category;
}

namespace {

cl::OptionCategory &category = compileOptionCategory();

// LLVM's own -h is an alias of --help, which prints the help and exits 0 as
// soon as it is parsed; and one-letter options group like `-abc`, so any
// unknown argument starting with -h (a typo such as --head_dim=64) printed
// the help and exited 0, compiling nothing. An option of the same name
// replaces that default; it only records the request, so a typo still ends
// in "Unknown command line argument" and -h alone prints the help.
cl::opt<bool> shortHelp("h", cl::desc("Alias for --help"), cl::Hidden,
                        cl::ValueDisallowed, cl::cat(category));
cl::opt<std::string> inputFile(cl::Positional, cl::desc("[input.mlir]"),
                               cl::init(""), cl::cat(category));
cl::opt<std::string> outputPrefix("o", cl::desc("Output path prefix"),
                                  cl::init("fa_kernel"), cl::cat(category));
cl::opt<std::string> dtype("dtype",
                           cl::desc("bf16, f16, or e4m3 (FP8 forward: "
                                    "f8E4M3FN q, k, v with descales)"),
                           cl::init("bf16"), cl::cat(category));
cl::opt<std::string> outDtype("out-dtype",
                              cl::desc("O's type with --dtype=e4m3: bf16 or "
                                       "f16"),
                              cl::init("bf16"), cl::cat(category));
cl::opt<int64_t> batch("batch", cl::init(1), cl::cat(category));
cl::opt<int64_t> headsQ("heads-q", cl::init(1), cl::cat(category));
cl::opt<int64_t> headsKV("heads-kv", cl::desc("default: heads-q"), cl::init(0),
                         cl::cat(category));
cl::opt<int64_t> seqQ("seq-q", cl::init(128), cl::cat(category));
cl::opt<int64_t> seqKV("seq-kv", cl::desc("default: seq-q"), cl::init(0),
                       cl::cat(category));
cl::opt<int64_t> headDim("head-dim", cl::init(64), cl::cat(category));
cl::opt<int64_t> headDimV("head-dim-v", cl::desc("default: head-dim"),
                          cl::init(0), cl::cat(category));
cl::opt<bool> runtimeShapes(
    "runtime-shapes",
    cl::desc("batch and sequence lengths are the call's: one forward kernel "
             "for every shape (sm_90/sm_90a; --batch, --seq-q and --seq-kv "
             "are then ignored)"),
    cl::init(false), cl::cat(category));
cl::opt<bool> varlen(
    "varlen",
    cl::desc("packed sequences (cu_seqlens_q/k, max_seqlen_q/k of the call): "
             "one forward kernel for every batch of sequences (sm_90/sm_90a; "
             "--batch, --seq-q and --seq-kv are then ignored)"),
    cl::init(false), cl::cat(category));
cl::opt<bool> causal("causal", cl::init(false), cl::cat(category));
cl::opt<std::string> window("window", cl::desc("L,R (-1 = unbounded)"),
                            cl::init(""), cl::cat(category));
cl::opt<double> softcap("softcap", cl::desc("0 = none"), cl::init(0.0),
                        cl::cat(category));
cl::opt<double> scale("scale", cl::desc("0 = 1/sqrt(head-dim)"), cl::init(0.0),
                      cl::cat(category));
cl::opt<bool> backward("backward",
                       cl::desc("compile the backward (fa.attention_grad) of "
                                "a config; an input file's op decides"),
                       cl::init(false), cl::cat(category));
cl::opt<int64_t> blockQ("block-q",
                        cl::desc("0 = default (forward 128, backward 32-128 "
                                 "by head dim)"),
                        cl::init(0), cl::cat(category));
cl::opt<int64_t> blockKV("block-kv",
                         cl::desc("0 = default (forward 64, backward 128 "
                                  "or 64)"),
                         cl::init(0), cl::cat(category));
cl::opt<int64_t> rowsPerWarp("rows-per-warp",
                             cl::desc("16 or 32; 0 = automatic"), cl::init(0),
                             cl::cat(category));
cl::opt<int64_t>
    kvStages("kv-stages",
             cl::desc("buffers of the tiles the main loop streams: K/V "
                      "of the WGMMA forward's TMA rings (0 = 3, 2 in a "
                      "persistent grid, fewer where they do not fit), "
                      "Q/dO of the WGMMA backward (0 = 2)"),
             cl::init(0), cl::cat(category));
cl::opt<int64_t> persistentBlocks(
    "persistent-blocks",
    cl::desc("blocks of the WGMMA forward's persistent grid, which loop "
             "over the tiles (132: one per SM of an H100/H200 SXM); 0 = a "
             "block per tile; -1 = the compiler's choice (132 where tiles "
             "have few KV blocks)"),
    cl::init(-1), cl::cat(category));
cl::opt<int64_t> exp2OnFmaEvery(
    "exp2-on-fma-every",
    cl::desc("the WGMMA forward computes every N-th exponential on the FMA "
             "pipe instead of MUFU (0 = none)"),
    cl::init(0), cl::cat(category));
cl::opt<double> rescaleThreshold(
    "rescale-threshold",
    cl::desc("the WGMMA forward raises a row's running max only where a KV "
             "block's scores pass it by more than this (base 2; "
             "FlashAttention 4's conditional rescale: O's rescale skipped in "
             "warps whose rows kept theirs); 0 = the exact max, -1 = the "
             "compiler's choice"),
    cl::init(-1), cl::cat(category));
cl::opt<int64_t> qBuffers(
    "q-buffers",
    cl::desc("Q buffers of the WGMMA forward's persistent grid (1 to 8; 0 = "
             "the compiler's choice, 2; fewer where they do not fit)"),
    cl::init(0), cl::cat(category));
cl::opt<std::string> forwardVariant(
    "forward-variant",
    cl::desc("the forward's kernel, both from the GPU tile level: auto "
             "(the compiler's choice), wgmma (sm_90) or mma.sync (any chip)"),
    cl::init("auto"), cl::cat(category));
cl::opt<std::string> backwardVariant(
    "backward-variant",
    cl::desc("the backward's main kernel, both from the GPU tile level: "
             "auto (the compiler's choice), wgmma (sm_90) or mma.sync (any "
             "chip)"),
    cl::init("auto"), cl::cat(category));
cl::opt<std::string> dqReduction(
    "dq-reduction",
    cl::desc("how the WGMMA backward sums dQ: auto (the compiler's "
             "choice: bulk up to head dim 128, atomic above), bulk (a "
             "swizzled shared tile added through TMA, head dims up to 128) "
             "or atomic (vector reductions from registers)"),
    cl::init("auto"), cl::cat(category));
cl::opt<std::string> backwardProducer(
    "backward-producer",
    cl::desc("whether the WGMMA backward gets a TMA producer warpgroup "
             "(Q and dO through mbarrier rings): auto (the compiler's "
             "choice: on), on or off (the compute warps copy them with "
             "cp.async)"),
    cl::init("auto"), cl::cat(category));
cl::opt<std::string> dqHandoff(
    "dq-handoff",
    cl::desc("whether the WGMMA backward's producer warpgroup also issues "
             "dQ's TMA reductions (the compute warps only fill a two-stage "
             "staging ring): auto (the compiler's choice), on or off"),
    cl::init("auto"), cl::cat(category));
cl::opt<std::string> fp8Transpose(
    "fp8-transpose",
    cl::desc("with --dtype=e4m3, who transposes V for P·V: auto (the "
             "compiler's choice: producer), consumers (the compute "
             "warpgroups) or producer (the producer warpgroup's warps 1-3)"),
    cl::init("auto"), cl::cat(category));
cl::opt<bool> transposeScores(
    "transpose-scores",
    cl::desc("the WGMMA backward computes S and dP transposed (K Qᵀ, V dOᵀ) "
             "and feeds Pᵀ and dSᵀ from registers (FlashAttention 3's "
             "SdP_swapAB; 64 keys a compute warpgroup)"),
    cl::cat(category));
cl::opt<bool> gradLse(
    "grad-lse",
    cl::desc("the backward also takes the gradient of lse (dlse, a loss "
             "that reads lse): its pre kernel folds it into delta"),
    cl::cat(category));
cl::opt<bool> deterministic(
    "deterministic",
    cl::desc("the backward's gradients bitwise equal run to run: dQ added "
             "in KV-block order (the WGMMA backward; windows without a left "
             "bound)"),
    cl::init(false), cl::cat(category));
cl::opt<std::string> chip("chip",
                          cl::desc("sm_80, sm_86, sm_87, sm_89, sm_90 or "
                                   "sm_90a (mlir::fa::supportedChips())"),
                          cl::init("sm_90"), cl::cat(category));
cl::opt<std::string> entry("entry",
                           cl::desc("kernel name for a config input "
                                    "(default fa_fwd / fa_bwd)"),
                           cl::init(""), cl::cat(category));
cl::opt<EmitKind> emit(
    "emit", cl::desc("What to write"), cl::init(EmitKind::PTX),
    cl::values(clEnumValN(EmitKind::MLIR, "mlir", "the GPU kernel in MLIR"),
               clEnumValN(EmitKind::LLVM, "llvm", "NVVM LLVM IR"),
               clEnumValN(EmitKind::PTX, "ptx", "PTX text + metadata"),
               clEnumValN(EmitKind::Cubin, "cubin", "cubin + metadata")),
    cl::cat(category));

} // namespace

bool mlir::fa::shortHelpRequested() { return shortHelp; }

Expected<CompileInvocation> mlir::fa::compileInvocationFromOptions() {
  auto invalid = [](const Twine &message) {
    return createStringError(inconvertibleErrorCode(), message);
  };
  // An empty prefix, or one naming a directory, would write hidden files
  // such as ".ptx" and ".meta".
  StringRef prefix = outputPrefix;
  StringRef fileName = sys::path::filename(prefix);
  if (fileName.empty() || fileName == "." || fileName == ".." ||
      sys::path::is_separator(prefix.back()))
    return invalid("-o expects an output path prefix (e.g. -o out/fwd), got '" +
                   prefix + "'");

  // fagpu-warp-specialize counts down from the stages asked for to the
  // number that fits shared memory: --kv-stages=2^40 looped for hours, 2^55
  // overflowed (CompileFlagsFuzzer). More than 64 never fit: a stage holds a
  // K and a V tile of at least 16 rows of 64 16-bit values (4 KiB) out of
  // 227 KiB. (Too few stages are the pass's to refuse.)
  constexpr int64_t maxKVStages = 64;
  if (kvStages > maxKVStages)
    return invalid("--kv-stages must be at most " + Twine(maxKVStages) +
                   " (more never fit in shared memory), got " +
                   Twine(kvStages));

  CompileInvocation invocation;
  invocation.inputFile = inputFile;
  invocation.outputPrefix = outputPrefix;
  invocation.emit = emit;
  AttentionConfig &config = invocation.config;
  config.dtype = dtype;
  config.outDtype = outDtype;
  config.batch = batch;
  config.headsQ = headsQ;
  config.headsKV = headsKV ? headsKV : headsQ;
  config.seqQ = seqQ;
  config.seqKV = seqKV ? seqKV : seqQ;
  config.headDim = headDim;
  config.headDimV = headDimV ? headDimV : headDim;
  config.runtimeShapes = runtimeShapes || varlen;
  config.varlen = varlen;
  config.causal = causal;
  if (scale != 0.0)
    config.scale = scale.getValue();
  if (softcap != 0.0)
    config.softcap = softcap.getValue();
  if (!window.empty()) {
    auto [left, right] = StringRef(window).split(',');
    int64_t l, r;
    if (left.trim().getAsInteger(10, l) || right.trim().getAsInteger(10, r))
      return invalid("--window expects L,R (integers, -1 = unbounded), got '" +
                     window + "'");
    config.window = std::make_pair(l, r);
  }
  config.backward = backward;
  config.blockQ = blockQ;
  config.blockKV = blockKV;
  config.rowsPerWarp = rowsPerWarp;
  config.kvStages = kvStages;
  config.persistentBlocks = persistentBlocks;
  if (exp2OnFmaEvery < 0)
    return invalid("--exp2-on-fma-every must be 0 or positive, got " +
                   Twine(exp2OnFmaEvery));
  config.exp2OnFmaEvery = exp2OnFmaEvery;
  if (rescaleThreshold != -1 &&
      !(std::isfinite(rescaleThreshold) && rescaleThreshold >= 0))
    return invalid("--rescale-threshold must be -1 (the compiler's choice) "
                   "or a finite number >= 0, got " +
                   Twine(std::to_string(rescaleThreshold)));
  config.rescaleThreshold = rescaleThreshold;
  if (qBuffers < 0 || qBuffers > fagpu::kMaxTileBuffers)
    return invalid("--q-buffers must be in [0, " +
                   Twine(fagpu::kMaxTileBuffers) + "], got " + Twine(qBuffers));
  config.qBuffers = qBuffers;
  if (forwardVariant != "auto" && forwardVariant != "wgmma" &&
      forwardVariant != "mma.sync")
    return invalid("--forward-variant must be auto, wgmma or mma.sync, got '" +
                   forwardVariant + "'");
  config.forwardVariant = forwardVariant;
  if (backwardVariant != "auto" && backwardVariant != "wgmma" &&
      backwardVariant != "mma.sync")
    return invalid("--backward-variant must be auto, wgmma or mma.sync, "
                   "got '" +
                   backwardVariant + "'");
  config.backwardVariant = backwardVariant;
  if (dqReduction != "auto" && dqReduction != "bulk" && dqReduction != "atomic")
    return invalid("--dq-reduction must be auto, bulk or atomic, got '" +
                   dqReduction + "'");
  config.dqReduction = dqReduction;
  if (backwardProducer != "auto" && backwardProducer != "on" &&
      backwardProducer != "off")
    return invalid("--backward-producer must be auto, on or off, got '" +
                   backwardProducer + "'");
  config.backwardProducer = backwardProducer;
  if (dqHandoff != "auto" && dqHandoff != "on" && dqHandoff != "off")
    return invalid("--dq-handoff must be auto, on or off, got '" + dqHandoff +
                   "'");
  config.dqHandoff = dqHandoff;
  config.deterministic = deterministic;
  config.gradLse = gradLse;
  config.transposeScores = transposeScores;
  if (fp8Transpose != "auto" && fp8Transpose != "consumers" &&
      fp8Transpose != "producer")
    return invalid("--fp8-transpose must be auto, consumers or producer, "
                   "got '" +
                   fp8Transpose + "'");
  config.fp8Transpose = fp8Transpose;
  config.chip = chip;
  config.entry = !entry.empty() ? entry.getValue()
                 : backward     ? std::string("fa_bwd")
                                : std::string("fa_fwd");
  return invocation;
}
