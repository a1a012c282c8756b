//===- FrontEndChecks.h - What the compiler's front end promises -*- C++
//-*-===//
//
// Shared by the fuzz targets that run the compiler up to (not through) LLVM
// code generation: what compiles must also load and run, so a kernel the
// front end accepts must come with metadata the runtime accepts, describing
// the problem that was asked for (issue 13: "accepted at compile time,
// refused later"). A violation aborts, which libFuzzer reports as a crash.
//
//===----------------------------------------------------------------------===//

#ifndef FA_TEST_FUZZ_FRONTENDCHECKS_H
#define FA_TEST_FUZZ_FRONTENDCHECKS_H

#include "fa/Compiler/Compiler.h"

namespace fa::fuzz {

/// Aborts (with a message on stderr) unless `kernel.metadata` parses with
/// the runtime's parser. Kernel modules (hand-written fagpu kernels) have
/// metadata of their own that the runtime does not load: not checked.
void checkMetadataParses(const mlir::fa::CompiledKernel &kernel);

/// checkMetadataParses(), and the metadata describes `config`: direction,
/// dtype, sizes, causal flag, window and entry as asked.
void checkMetadataMatches(const mlir::fa::CompiledKernel &kernel,
                          const mlir::fa::AttentionConfig &config);

} // namespace fa::fuzz

#endif // FA_TEST_FUZZ_FRONTENDCHECKS_H
