//===- FrontEndOnlyCompile.cpp - compileAttention without LLVM ------------===//
//
// Linked with `--wrap=<compileAttention's symbol>` into the fuzz targets that
// reach the compiler through the C API (faValidateConfig, faCompileUnloaded,
// faPrecompile), which always ask for PTX: LLVM's code generation costs 0.3 s
// and more per config, so a PTX or cubin request is answered by the front end
// (parse, verify, limits, the fa-level passes) with its real metadata and the
// kernel's MLIR as the payload. The C API cannot tell: it never looks into
// the payload without a GPU. Results are memoized by config key, so a fuzz
// input that compiles a config the process has compiled before is cheap.
//
// Every front-end success is checked (FrontEndChecks.h) before it is used.
//
//===----------------------------------------------------------------------===//

#include "FrontEndChecks.h"

#include <map>
#include <string>
#include <utility>

using mlir::fa::AttentionConfig;
using mlir::fa::CompiledKernel;
using mlir::fa::EmitKind;

// The mangled name of mlir::fa::compileAttention(const AttentionConfig &,
// EmitKind); the link fails (undefined __real_ symbol) if it changes.
#define FA_COMPILE_ATTENTION                                                   \
  "_ZN4mlir2fa16compileAttentionERKNS0_15AttentionConfigENS0_8EmitKindE"

llvm::Expected<CompiledKernel>
realCompileAttention(const AttentionConfig &config,
                     EmitKind emit) __asm__("__real_" FA_COMPILE_ATTENTION);
llvm::Expected<CompiledKernel> frontEndOnlyCompileAttention(
    const AttentionConfig &config,
    EmitKind emit) __asm__("__wrap_" FA_COMPILE_ATTENTION);

llvm::Expected<CompiledKernel>
frontEndOnlyCompileAttention(const AttentionConfig &config, EmitKind emit) {
  if (emit != EmitKind::PTX && emit != EmitKind::Cubin)
    return realCompileAttention(config, emit);
  // Errors are not memoized: llvm::Error is consumed by its reader.
  static std::map<std::string, CompiledKernel> compiled;
  // key() assumes what compileAttention checks first: positive sizes.
  bool positive = true;
  for (int64_t dim : {config.batch, config.headsQ, config.headsKV, config.seqQ,
                      config.seqKV, config.headDim, config.headDimV})
    positive &= dim > 0;
  std::string key = positive ? config.key() : "";
  if (auto it = compiled.find(key); positive && it != compiled.end())
    return it->second;
  llvm::Expected<CompiledKernel> kernel =
      realCompileAttention(config, EmitKind::MLIR);
  if (!kernel)
    return kernel.takeError();
  fa::fuzz::checkMetadataMatches(*kernel, config);
  if (!positive)
    return kernel;
  if (compiled.size() >= 256)
    compiled.clear(); // Bounded memory over a long run.
  compiled.emplace(std::move(key), *kernel);
  return kernel;
}
