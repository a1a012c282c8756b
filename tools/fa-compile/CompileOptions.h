//===- CompileOptions.h - fa-compile's command line -------------*- C++ -*-===//
//
// fa-compile's options (registered with llvm::cl in their own category) and
// what they ask for. Kept apart from main() so that the flag fuzzer
// (test/fuzz/CompileFlagsFuzzer.cpp) drives exactly the tool's parsing.
//
//===----------------------------------------------------------------------===//

#ifndef FA_TOOLS_FA_COMPILE_COMPILEOPTIONS_H
#define FA_TOOLS_FA_COMPILE_COMPILEOPTIONS_H

#include "fa/Compiler/Compiler.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Error.h"

#include <string>

namespace mlir::fa {

/// One fa-compile run: the problem (from the flags, or the input file's op
/// with the flags' compile options), what to emit, and where.
struct CompileInvocation {
  std::string inputFile; ///< "" : the config flags describe the problem
  std::string outputPrefix;
  EmitKind emit = EmitKind::PTX;
  AttentionConfig config;
};

/// The category holding fa-compile's options (the only ones --help shows).
llvm::cl::OptionCategory &compileOptionCategory();

/// Whether the command line was `-h` (after a successful parse; print the
/// help as --help does).
bool shortHelpRequested();

/// The invocation the parsed options (llvm::cl::ParseCommandLineOptions)
/// describe, or an error for values no compile may start from: an output
/// prefix that names a directory, a malformed --window.
llvm::Expected<CompileInvocation> compileInvocationFromOptions();

} // namespace mlir::fa

#endif // FA_TOOLS_FA_COMPILE_COMPILEOPTIONS_H
