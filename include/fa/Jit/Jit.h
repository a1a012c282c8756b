//===- Jit.h - Compile attention kernels on first use, then cache -*- C++
//-*-===//
//
// The runtime's JIT: given an AttentionConfig, getForwardKernel() (or
// getBackwardKernel(), for the backward kernel set) compiles it
// in-process with the compiler library (compileAttention, to PTX) the first
// time, has the driver assemble the PTX to a cubin, stores cubin + metadata in
// the KernelCache and returns the loaded kernel. Later calls (in this process
// or another one sharing the cache directory) load the cached cubin without
// compiling. No CUDA toolkit is needed at run time: the driver assembles.
//
// Cache entries are keyed by (config.key(), compilerVersion(), chip) plus the
// image format; each entry holds the kernel's `.meta` text as its metadata
// and the PTX or cubin as its payload, bound to the key by the cache's
// SHA-256. Before use, an entry's metadata is checked against the request
// (metadataMismatch(): kind, kernel names, chip, dtype, shapes, scale, masks,
// softcap, blocks, compiler) and its image against the format and the
// kernels it must define; an entry that fails, like one that is unreadable,
// damaged or another key's, is rebuilt and replaced, and the returned
// `warning` says why: a rebuild is never silent, and a kernel is never
// launched with another problem's geometry.
//
// Kernels fa-compile produced ahead of time (PTX + .meta) load through the
// same cache with loadPrecompiledKernel().
//
// No exceptions; every failure is a Status (compiler diagnostics included).
//
//===----------------------------------------------------------------------===//

#ifndef FA_JIT_JIT_H
#define FA_JIT_JIT_H

#include "fa/Compiler/Compiler.h"
#include "fa/Runtime/Driver.h"
#include "fa/Runtime/Kernel.h"
#include "fa/Runtime/KernelCache.h"
#include "fa/Runtime/Metadata.h"
#include "fa/Runtime/Status.h"

#include <cstdint>
#include <string>

namespace fa::jit {

/// What a cache entry holds.
enum class ImageFormat {
  /// PTX text; the driver compiles it at load (and keeps the result in its
  /// own compute cache, so later loads are fast).
  PTX,
  /// PTX assembled once, by the driver's linker (cuLink) or offline by
  /// ptxas; loads are fast. The linker's code was measured slower (the
  /// backward 10 % at D = 128 on the H200, docs/perf/README.md).
  Cubin,
};
const char *toString(ImageFormat format); ///< "ptx" / "cubin"

struct JitOptions {
  /// Target chip ("sm_90"). Empty: the device's, from the driver (which must
  /// then be present).
  std::string chip;
  /// Cubin needs the driver (or assembleOffline) to build an entry; PTX
  /// does not.
  ImageFormat format = ImageFormat::PTX;
  /// Cubin only: assemble with the CUDA toolkit's ptxas (through the
  /// compiler's NVVM target) for `chip`, which must then be set, instead of
  /// with the driver. Needs no GPU: fills a cache on one machine for a device
  /// of that chip elsewhere (the entry is keyed as the driver's would be).
  bool assembleOffline = false;
};

/// A compiled (or cached) kernel image, not loaded.
struct JitArtifact {
  ImageFormat format = ImageFormat::PTX;
  std::string image;        ///< PTX text or cubin bytes.
  std::string metadataText; ///< .meta JSON text (see Metadata.h).
  rt::KernelMetadata metadata;
  rt::CacheKey key;
  rt::CacheOutcome outcome = rt::CacheOutcome::Built;
  bool compiled = false; ///< The compiler ran during this call.
  /// Non-fatal cache problem: an unusable entry rebuilt (and why), an entry
  /// not written to disk. "" if none.
  std::string warning;
};

/// A loaded kernel (its metadata: kernel.metadata()) and how it was found.
struct JitKernel {
  rt::Kernel kernel;
  rt::CacheOutcome outcome = rt::CacheOutcome::Built;
  bool compiled = false; ///< The compiler ran during this call.
  std::string warning;
  std::string metadataText; ///< The .meta JSON text the kernel was loaded by.
  bool cacheHit() const {
    return outcome == rt::CacheOutcome::MemoryHit ||
           outcome == rt::CacheOutcome::DiskHit;
  }
};

/// Why `metadata` does not describe the kernel that `config` (its `chip` the
/// target chip, `backward` the direction) compiles to, "" if it does:
/// "seq_q is 999, the request has 100". Checks what the config determines:
/// kind, entry names (backward: also `<entry>_pre` and `<entry>_post`),
/// chip, dtype, batch, heads, sequence lengths, head dims, blocks, rows per
/// warp when set, scale, causal, window, softcap, and that this compiler
/// made it. The launch geometry (grid, block, shared memory, tensor maps) is
/// the compiler's to choose and cannot be checked without compiling again.
std::string metadataMismatch(const rt::KernelMetadata &metadata,
                             const mlir::fa::AttentionConfig &config);

/// The cache key of `config` compiled for `chip` (config.chip is replaced by
/// `chip`). buildForwardKernel() sets a Cubin key's chip to the device's: the
/// driver assembles for the device it runs on. The key includes the
/// direction (config.key() does), so it serves the backward too.
rt::CacheKey forwardCacheKey(const mlir::fa::AttentionConfig &config,
                             const std::string &chip, ImageFormat format);

/// Returns the image for `config` from `cache`, compiling it (and, for
/// Cubin, assembling it with the driver) on a miss. Loads nothing. The driver
/// is needed only when options.chip is empty or the format is Cubin.
rt::StatusOr<JitArtifact>
buildForwardKernel(const mlir::fa::AttentionConfig &config,
                   rt::KernelCache &cache, const JitOptions &options = {},
                   rt::Driver &driver = rt::Driver::get());

/// buildForwardKernel(), then loads the image on the device. Errors: "no
/// CUDA driver: ..." without a driver, the compiler's diagnostics for a
/// config it rejects, the driver's log for PTX it cannot assemble.
rt::StatusOr<JitKernel>
getForwardKernel(const mlir::fa::AttentionConfig &config,
                 rt::KernelCache &cache, const JitOptions &options = {},
                 rt::Driver &driver = rt::Driver::get());

/// The backward counterparts: compile (or fetch) the backward kernel set of
/// `config` (compiled with config.backward = true whatever it says; the same
/// config serves forward and backward), a module of three kernels whose
/// metadata has the pre_/post_ launch keys; launch it with
/// rt::attentionBackward(). Cached separately from the forward. The
/// forward functions reject a config with `backward` set.
rt::StatusOr<JitArtifact>
buildBackwardKernel(const mlir::fa::AttentionConfig &config,
                    rt::KernelCache &cache, const JitOptions &options = {},
                    rt::Driver &driver = rt::Driver::get());
rt::StatusOr<JitKernel>
getBackwardKernel(const mlir::fa::AttentionConfig &config,
                  rt::KernelCache &cache, const JitOptions &options = {},
                  rt::Driver &driver = rt::Driver::get());

/// The quantization counterparts (config.quantize set: fa.quantize's amax
/// and scale kernels, kind = quantize; launch with rt::quantize()). The
/// forward and backward functions reject a quantization config.
rt::StatusOr<JitArtifact>
buildQuantizeKernel(const mlir::fa::AttentionConfig &config,
                    rt::KernelCache &cache, const JitOptions &options = {},
                    rt::Driver &driver = rt::Driver::get());
rt::StatusOr<JitKernel>
getQuantizeKernel(const mlir::fa::AttentionConfig &config,
                  rt::KernelCache &cache, const JitOptions &options = {},
                  rt::Driver &driver = rt::Driver::get());

/// Loads a kernel fa-compile produced ahead of time (PTX + .meta files; a
/// forward kernel or a backward kernel set), caching the driver-assembled
/// cubin (rt::loadKernelCached; its cache warning in JitKernel::warning).
rt::StatusOr<JitKernel>
loadPrecompiledKernel(const std::string &ptxPath, const std::string &metaPath,
                      rt::KernelCache &cache,
                      rt::Driver &driver = rt::Driver::get());

/// How many times this process has run the compiler for the JIT.
uint64_t compilerInvocations();

} // namespace fa::jit

#endif // FA_JIT_JIT_H
