//===- FrontEndChecks.cpp - What the compiler's front end promises --------===//

#include "FrontEndChecks.h"

#include "fa/Runtime/Metadata.h"

#include <cstdio>
#include <cstdlib>
#include <string>

using namespace fa;

namespace {

[[noreturn]] void violated(const std::string &what,
                           const mlir::fa::CompiledKernel &kernel) {
  std::fprintf(stderr, "front-end invariant violated: %s\nmetadata:\n%s\n",
               what.c_str(), kernel.metadata.c_str());
  std::abort();
}

/// A module of tile-level kernels: its metadata is no kernel set's. The
/// compiler writes "kind" first (metadataText() in MetadataText.cpp).
bool isKernelModule(const mlir::fa::CompiledKernel &kernel) {
  return kernel.metadata.rfind("{\n  \"kind\": \"kernel_module\",\n", 0) == 0;
}

} // namespace

void fuzz::checkMetadataParses(const mlir::fa::CompiledKernel &kernel) {
  if (isKernelModule(kernel))
    return;
  rt::KernelMetadata metadata;
  rt::Status parsed = rt::parseKernelMetadata(kernel.metadata, metadata);
  if (!parsed.ok())
    violated("the runtime refuses the metadata of a compiled kernel: " +
                 parsed.message(),
             kernel);
}

void fuzz::checkMetadataMatches(const mlir::fa::CompiledKernel &kernel,
                                const mlir::fa::AttentionConfig &config) {
  checkMetadataParses(kernel);
  rt::KernelMetadata m;
  (void)rt::parseKernelMetadata(kernel.metadata, m);
  auto expect = [&](bool holds, const char *what) {
    if (!holds)
      violated(std::string("the metadata does not describe the config: ") +
                   what + " (config " + config.key() + ")",
               kernel);
  };
  expect((m.kind == rt::KernelKind::Backward) == config.backward, "kind");
  expect(config.dtype == rt::toString(m.dtype), "dtype");
  expect(m.runtimeShapes == config.runtimeShapes, "runtime shapes");
  // A runtime-shapes kernel has no batch or lengths of its own (0).
  auto callSize = [&](int64_t size) { return config.runtimeShapes ? 0 : size; };
  expect(m.batch == callSize(config.batch) && m.headsQ == config.headsQ &&
             m.headsKV == config.headsKV && m.seqQ == callSize(config.seqQ) &&
             m.seqKV == callSize(config.seqKV) && m.headDim == config.headDim &&
             m.headDimV == config.headDimV,
         "sizes");
  expect(m.causal == config.causal, "causal");
  // The metadata stores any unbounded side as -1.
  int64_t left = config.window ? config.window->first : -1;
  int64_t right = config.window ? config.window->second : -1;
  expect(m.windowLeft == (left < 0 ? -1 : left) &&
             m.windowRight == (right < 0 ? -1 : right),
         "window");
  expect(m.entry == config.entry, "entry");
}
