//===- Jit.cpp - Compile attention kernels on first use, then cache -------===//

#include "fa/Jit/Jit.h"

#include "llvm/Support/Error.h"

#include <atomic>
#include <cerrno>
#include <cstdlib>

using namespace fa;
using namespace fa::rt;
using namespace fa::jit;
using mlir::fa::AttentionConfig;

namespace {

constexpr const char kMagic[] = "FLASHMLIR-JIT 1\n";

std::atomic<uint64_t> invocations{0};

std::string encode(ImageFormat format, const std::string &metadata,
                   const std::string &image) {
  std::string s = kMagic;
  s += std::string("format ") + jit::toString(format) + "\n";
  s += "metadata-bytes " + std::to_string(metadata.size()) + "\n\n";
  s += metadata;
  s += image;
  return s;
}

/// Decodes an entry; returns "" or what is wrong with it.
std::string decode(const std::string &bytes, jit::JitArtifact &out) {
  size_t pos = sizeof kMagic - 1;
  if (bytes.compare(0, pos, kMagic) != 0)
    return "bad magic";
  auto line = [&](const char *label, std::string &value) {
    std::string prefix = std::string(label) + " ";
    size_t nl = bytes.find('\n', pos);
    if (nl == std::string::npos || bytes.compare(pos, prefix.size(), prefix))
      return false;
    value = bytes.substr(pos + prefix.size(), nl - pos - prefix.size());
    pos = nl + 1;
    return true;
  };
  std::string format, size;
  if (!line("format", format) || !line("metadata-bytes", size) ||
      pos >= bytes.size() || bytes[pos++] != '\n')
    return "bad header";
  if (format != "ptx" && format != "cubin")
    return "unknown format '" + format + "'";
  char *end = nullptr;
  errno = 0;
  unsigned long long n = std::strtoull(size.c_str(), &end, 10);
  if (size.empty() || errno || *end || n > bytes.size() - pos)
    return "bad metadata size";
  out.format = format == "ptx" ? ImageFormat::PTX : ImageFormat::Cubin;
  out.metadataText = bytes.substr(pos, n);
  out.image = bytes.substr(pos + n);
  if (out.image.empty())
    return "empty image";
  Status s = parseKernelMetadata(out.metadataText, out.metadata);
  return s.ok() ? "" : "bad metadata: " + s.message();
}

/// Compiles `config` to PTX (and, for Cubin, assembles it with the driver,
/// or with ptxas when `offline`) into an entry.
Status compileEntry(const AttentionConfig &config, ImageFormat format,
                    bool offline, Driver &driver, std::string &entry) {
  ++invocations;
  bool ptxasCubin = format == ImageFormat::Cubin && offline;
  llvm::Expected<mlir::fa::CompiledKernel> compiled =
      mlir::fa::compileAttention(config, ptxasCubin ? mlir::fa::EmitKind::Cubin
                                                    : mlir::fa::EmitKind::PTX);
  if (!compiled)
    return Status::error("compiling " + config.key() +
                         " failed: " + llvm::toString(compiled.takeError()));
  KernelMetadata metadata;
  FA_RT_RETURN_IF_ERROR(
      parseKernelMetadata(compiled->metadata, metadata)
          .withContext("the compiler's metadata for " + config.key()));
  std::string image = std::move(compiled->payload);
  if (format == ImageFormat::Cubin && !ptxasCubin) {
    std::string cubin;
    FA_RT_RETURN_IF_ERROR(compilePTXToCubin(image, cubin, driver));
    image = std::move(cubin);
  }
  entry = encode(format, compiled->metadata, image);
  return Status::success();
}

} // namespace

const char *jit::toString(ImageFormat format) {
  return format == ImageFormat::PTX ? "ptx" : "cubin";
}

uint64_t jit::compilerInvocations() { return invocations.load(); }

CacheKey jit::forwardCacheKey(const AttentionConfig &config,
                              const std::string &chip, ImageFormat format) {
  AttentionConfig c = config;
  c.chip = chip;
  return CacheKey{c.key() + ";format=" + toString(format),
                  mlir::fa::compilerVersion(), chip};
}

namespace {

/// buildForwardKernel / buildBackwardKernel: `config` (whose `backward`
/// matches `kind`) from the cache or compiled.
StatusOr<JitArtifact> buildKernel(const AttentionConfig &config,
                                  KernelKind kind, KernelCache &cache,
                                  const JitOptions &options, Driver &driver) {
  std::string chip = options.chip;
  bool offline =
      options.assembleOffline && options.format == ImageFormat::Cubin;
  if (offline && chip.empty())
    return Status::error("JIT: assembling offline needs the target chip "
                         "(JitOptions::chip, e.g. \"sm_90\")");
  if (chip.empty() || (options.format == ImageFormat::Cubin && !offline)) {
    Status init = driver.initialize();
    if (!init.ok())
      return init.withContext(chip.empty()
                                  ? "JIT: the target chip comes from the device"
                                  : "JIT: assembling a cubin needs the driver");
    if (chip.empty())
      chip = driver.device().chip();
  }
  // Before the cache: a chip the compiler cannot target has no entry to
  // find, and its name must not reach a cache file name either.
  if (llvm::Error error = mlir::fa::checkChip(chip))
    return Status::error("JIT: " + llvm::toString(std::move(error)));
  AttentionConfig target = config;
  target.chip = chip;

  JitArtifact artifact;
  artifact.key = forwardCacheKey(config, chip, options.format);
  // The driver assembles for its own device, whatever the PTX targets.
  if (options.format == ImageFormat::Cubin && !offline)
    artifact.key.chip = driver.device().chip();
  std::string bytes;
  auto build = [&](std::string &entry) {
    artifact.compiled = true;
    return compileEntry(target, options.format, offline, driver, entry);
  };
  auto check = [&]() -> std::string {
    std::string problem = decode(bytes, artifact);
    if (problem.empty() && (artifact.format != options.format ||
                            artifact.metadata.entry != config.entry ||
                            artifact.metadata.kind != kind))
      problem = "entry does not match the config";
    return problem;
  };
  FA_RT_RETURN_IF_ERROR(cache.getOrBuild(artifact.key, build, bytes,
                                         &artifact.outcome, &artifact.warning));
  std::string problem = check();
  if (!problem.empty() && !artifact.compiled) {
    // The file passed the cache's checksum but is not a JIT entry we can use
    // (another version, a bug): rebuild and overwrite it.
    FA_RT_RETURN_IF_ERROR(build(bytes).withContext("rebuilding cache entry"));
    Status stored = cache.store(artifact.key, bytes);
    artifact.outcome = CacheOutcome::RebuiltCorrupt;
    artifact.warning = "cache entry '" + cache.entryPath(artifact.key) +
                       "' was unusable (" + problem + "); rebuilt" +
                       (stored.ok() ? "" : "; " + stored.message());
    problem = check();
  }
  if (!problem.empty())
    return Status::error("JIT: the compiled entry is unusable: " + problem);
  return artifact;
}

/// buildKernel(), then loads the image on the device.
StatusOr<JitKernel> getKernel(const AttentionConfig &config, KernelKind kind,
                              KernelCache &cache, const JitOptions &options,
                              Driver &driver) {
  FA_RT_RETURN_IF_ERROR(driver.initialize());
  StatusOr<JitArtifact> artifact =
      buildKernel(config, kind, cache, options, driver);
  if (!artifact.ok())
    return artifact.status();
  const JitArtifact &a = *artifact;
  StatusOr<Kernel> kernel =
      a.format == ImageFormat::PTX
          ? Kernel::fromPTX(a.image, a.metadata, driver)
          : Kernel::fromCubin(a.image.data(), a.image.size(), a.metadata,
                              driver);
  if (!kernel.ok())
    return kernel.status().withContext("loading the JIT kernel " +
                                       a.key.config);
  return JitKernel{std::move(*kernel), a.outcome, a.compiled, a.warning};
}

Status forwardOnly(const AttentionConfig &config, const char *function) {
  if (!config.backward)
    return Status::success();
  return Status::error(std::string(function) +
                       " compiles forward kernels only; the config asks for "
                       "the backward (use buildBackwardKernel / "
                       "getBackwardKernel)");
}

AttentionConfig asBackward(AttentionConfig config) {
  config.backward = true;
  return config;
}

} // namespace

StatusOr<jit::JitArtifact>
jit::buildForwardKernel(const AttentionConfig &config, KernelCache &cache,
                        const JitOptions &options, Driver &driver) {
  FA_RT_RETURN_IF_ERROR(forwardOnly(config, "buildForwardKernel"));
  return buildKernel(config, KernelKind::Forward, cache, options, driver);
}

StatusOr<jit::JitKernel> jit::getForwardKernel(const AttentionConfig &config,
                                               KernelCache &cache,
                                               const JitOptions &options,
                                               Driver &driver) {
  FA_RT_RETURN_IF_ERROR(forwardOnly(config, "getForwardKernel"));
  return getKernel(config, KernelKind::Forward, cache, options, driver);
}

StatusOr<jit::JitArtifact>
jit::buildBackwardKernel(const AttentionConfig &config, KernelCache &cache,
                         const JitOptions &options, Driver &driver) {
  return buildKernel(asBackward(config), KernelKind::Backward, cache, options,
                     driver);
}

StatusOr<jit::JitKernel> jit::getBackwardKernel(const AttentionConfig &config,
                                                KernelCache &cache,
                                                const JitOptions &options,
                                                Driver &driver) {
  return getKernel(asBackward(config), KernelKind::Backward, cache, options,
                   driver);
}

StatusOr<jit::JitKernel> jit::loadPrecompiledKernel(const std::string &ptxPath,
                                                    const std::string &metaPath,
                                                    KernelCache &cache,
                                                    Driver &driver) {
  KernelMetadata metadata;
  FA_RT_RETURN_IF_ERROR(readKernelMetadataFile(metaPath, metadata));
  std::string ptx;
  FA_RT_RETURN_IF_ERROR(readFile(ptxPath, ptx));
  CacheOutcome outcome = CacheOutcome::Built;
  StatusOr<Kernel> kernel = loadKernelCached(
      cache, ptx, metadata,
      metadata.compiler.empty() ? "fa-compile" : metadata.compiler, &outcome,
      driver);
  if (!kernel.ok())
    return kernel.status();
  return JitKernel{std::move(*kernel), outcome, false, ""};
}
