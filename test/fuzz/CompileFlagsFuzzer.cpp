//===- CompileFlagsFuzzer.cpp - libFuzzer target for fa-compile's flags ---===//
//
// Any bytes as fa-compile's command line, one argument per line: parsed by
// the tool's own options (tools/fa-compile/CompileOptions.h), turned into a
// config and compiled by the front end (compileAttention up to, not through,
// LLVM code generation: EmitKind::MLIR). Never a crash, an abort or a
// sanitizer report; a config that compiles gives metadata the runtime
// accepts, describing that config (FrontEndChecks.h).
//
// Arguments that end the process by design are dropped: --help and
// --version print and exit, `@file` reads a response file (a path the
// fuzzer must not choose, e.g. a FIFO). An input file is not read: the
// .mlir entry is MlirInputFuzzer's.
//
//===----------------------------------------------------------------------===//

#include "CompileOptions.h"
#include "FrontEndChecks.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

/// Whether `arg` is an option that exits or reads a file by design.
bool endsTheProcessOrReadsAFile(llvm::StringRef arg) {
  if (arg.starts_with("@"))
    return true;
  llvm::StringRef name = arg.ltrim('-').split('=').first;
  return arg.starts_with("-") &&
         llvm::StringSwitch<bool>(name)
             .Cases({"help", "help-hidden", "help-list", "help-list-hidden",
                     "h", "version", "print-options", "print-all-options"},
                    true)
             .Default(false);
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  // As fa-compile does before parsing (which options exist is unchanged).
  llvm::cl::HideUnrelatedOptions(mlir::fa::compileOptionCategory());
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  std::vector<std::string> args = {"fa-compile"};
  llvm::SmallVector<llvm::StringRef> lines;
  text.split(lines, '\n');
  for (llvm::StringRef line : lines)
    if (!line.empty() && !line.contains('\0') &&
        !endsTheProcessOrReadsAFile(line))
      args.push_back(line.str());
  std::vector<const char *> argv;
  for (const std::string &arg : args)
    argv.push_back(arg.c_str());

  // Each input starts from the defaults, as a new process would.
  llvm::cl::ResetAllOptionOccurrences();
  // With an error stream, a malformed command line is reported (there or,
  // for some errors, on stderr) and returns false instead of exiting.
  std::string errors;
  llvm::raw_string_ostream errorStream(errors);
  if (!llvm::cl::ParseCommandLineOptions(int(argv.size()), argv.data(), "",
                                         &errorStream))
    return 0;
  llvm::Expected<mlir::fa::CompileInvocation> invocation =
      mlir::fa::compileInvocationFromOptions();
  if (!invocation) {
    llvm::consumeError(invocation.takeError());
    return 0;
  }
  if (!invocation->inputFile.empty())
    return 0;
  llvm::Expected<mlir::fa::CompiledKernel> kernel =
      mlir::fa::compileAttention(invocation->config, mlir::fa::EmitKind::MLIR);
  if (!kernel) {
    if (llvm::toString(kernel.takeError()).empty())
      std::abort();
    return 0;
  }
  fa::fuzz::checkMetadataMatches(*kernel, invocation->config);
  return 0;
}
