//===- fa-compile.cpp - Attention -> PTX / cubin, ahead of time -----------===//
//
//   fa-compile [input.mlir] [--backward] [--dtype=bf16] [--batch=N]
//   [--heads-q=N]
//              [--heads-kv=N] [--seq-q=N] [--seq-kv=N] [--head-dim=N]
//              [--head-dim-v=N] [--causal] [--window=L,R] [--softcap=X]
//              [--scale=X] [--block-q=N] [--block-kv=N] [--rows-per-warp=N]
//              [--chip=sm_90]
//              [--emit=mlir|llvm|ptx|cubin] [-o PREFIX]
//
// Writes PREFIX.{mlir,ll,ptx,cubin} and, for ptx/cubin, PREFIX.meta (entry,
// grid/block rule, shared memory, argument ABI). Without an input file the
// config flags describe the problem; with one, the file's fa.attention does.
//
//===----------------------------------------------------------------------===//

#include "fa/Compiler/Compiler.h"

#include "mlir/Support/FileUtilities.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

using namespace llvm;
using namespace mlir::fa;

namespace {

cl::OptionCategory category("fa-compile options");
cl::opt<std::string> inputFile(cl::Positional, cl::desc("[input.mlir]"),
                               cl::init(""), cl::cat(category));
cl::opt<std::string> outputPrefix("o", cl::desc("Output path prefix"),
                                  cl::init("fa_kernel"), cl::cat(category));
cl::opt<std::string> dtype("dtype", cl::desc("bf16 or f16"), cl::init("bf16"),
                           cl::cat(category));
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
             cl::desc("K/V buffers of the WGMMA forward's TMA "
                      "rings; 0 = 3 (fewer where they do not fit)"),
             cl::init(0), cl::cat(category));
cl::opt<int64_t> persistentBlocks(
    "persistent-blocks",
    cl::desc("blocks of the WGMMA forward's persistent grid, which loop "
             "over the tiles (132: one per SM of an H100/H200 SXM); 0 = a "
             "block per tile; -1 = the compiler's choice (132 where tiles "
             "have few KV blocks)"),
    cl::init(-1), cl::cat(category));
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

int fail(const Twine &message) {
  WithColor::error(errs(), "fa-compile") << message << "\n";
  return 1;
}

bool writeFile(StringRef path, StringRef contents) {
  std::string error;
  auto file = mlir::openOutputFile(path, &error);
  if (!file) {
    fail("cannot write " + path + ": " + error);
    return false;
  }
  file->os() << contents;
  file->keep();
  return true;
}

} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv,
                              "FlashMLIR: attention -> GPU kernel\n");

  // An empty prefix, or one naming a directory, would write hidden files
  // such as ".ptx" and ".meta".
  StringRef fileName = sys::path::filename(outputPrefix);
  if (fileName.empty() || fileName == "." || fileName == ".." ||
      sys::path::is_separator(outputPrefix.getValue().back()))
    return fail("-o expects an output path prefix (e.g. -o out/fwd), got '" +
                outputPrefix + "'");

  AttentionConfig config;
  config.dtype = dtype;
  config.batch = batch;
  config.headsQ = headsQ;
  config.headsKV = headsKV ? headsKV : headsQ;
  config.seqQ = seqQ;
  config.seqKV = seqKV ? seqKV : seqQ;
  config.headDim = headDim;
  config.headDimV = headDimV ? headDimV : headDim;
  config.causal = causal;
  if (scale != 0.0)
    config.scale = scale.getValue();
  if (softcap != 0.0)
    config.softcap = softcap.getValue();
  if (!window.empty()) {
    StringRef text(window);
    auto [left, right] = text.split(',');
    int64_t l, r;
    if (left.trim().getAsInteger(10, l) || right.trim().getAsInteger(10, r))
      return fail("--window expects L,R (integers, -1 = unbounded), got '" +
                  window + "'");
    config.window = std::make_pair(l, r);
  }
  config.backward = backward;
  config.blockQ = blockQ;
  config.blockKV = blockKV;
  config.rowsPerWarp = rowsPerWarp;
  config.kvStages = kvStages;
  config.persistentBlocks = persistentBlocks;
  config.chip = chip;
  config.entry = !entry.empty() ? entry.getValue()
                 : backward     ? std::string("fa_bwd")
                                : std::string("fa_fwd");

  Expected<CompiledKernel> kernel = [&]() -> Expected<CompiledKernel> {
    if (inputFile.empty())
      return compileAttention(config, emit);
    ErrorOr<std::unique_ptr<MemoryBuffer>> input =
        MemoryBuffer::getFileOrSTDIN(inputFile);
    if (!input)
      return createStringError(input.getError(), "cannot read %s",
                               inputFile.c_str());
    return compileSource((*input)->getBuffer(), inputFile, config, emit);
  }();
  if (!kernel)
    return fail(toString(kernel.takeError()));

  const char *extension = emit == EmitKind::MLIR   ? ".mlir"
                          : emit == EmitKind::LLVM ? ".ll"
                          : emit == EmitKind::PTX  ? ".ptx"
                                                   : ".cubin";
  if (!writeFile(outputPrefix + extension, kernel->payload))
    return 1;
  if ((emit == EmitKind::PTX || emit == EmitKind::Cubin) &&
      !writeFile(outputPrefix + ".meta", kernel->metadata))
    return 1;
  return 0;
}
