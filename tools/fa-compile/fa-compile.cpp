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

#include "CompileOptions.h"

#include "mlir/Support/FileUtilities.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

using namespace llvm;
using namespace mlir::fa;

namespace {

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
  cl::HideUnrelatedOptions(compileOptionCategory());
  cl::ParseCommandLineOptions(argc, argv,
                              "FlashMLIR: attention -> GPU kernel\n");
  if (shortHelpRequested()) {
    cl::PrintHelpMessage(/*Hidden=*/false, /*Categorized=*/true);
    return 0;
  }
  Expected<CompileInvocation> invocation = compileInvocationFromOptions();
  if (!invocation)
    return fail(toString(invocation.takeError()));
  const AttentionConfig &config = invocation->config;
  const std::string &inputFile = invocation->inputFile;
  const std::string &outputPrefix = invocation->outputPrefix;
  EmitKind emit = invocation->emit;

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
