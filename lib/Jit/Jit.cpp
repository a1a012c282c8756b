//===- Jit.cpp - Compile attention kernels on first use, then cache -------===//

#include "fa/Jit/Jit.h"

#include "llvm/Support/Error.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <sstream>

using namespace fa;
using namespace fa::rt;
using namespace fa::jit;
using mlir::fa::AttentionConfig;

namespace {

std::atomic<uint64_t> invocations{0};

/// Compiles `config` to PTX (and, for Cubin, assembles it with the driver,
/// or with ptxas when `offline`) into a cache entry: the metadata text and
/// the image.
Status compileEntry(const AttentionConfig &config, ImageFormat format,
                    bool offline, Driver &driver, CacheEntry &entry) {
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
  entry.metadata = std::move(compiled->metadata);
  entry.payload = std::move(compiled->payload);
  if (format == ImageFormat::Cubin && !ptxasCubin) {
    std::string cubin;
    FA_RT_RETURN_IF_ERROR(compilePTXToCubin(entry.payload, cubin, driver));
    entry.payload = std::move(cubin);
  }
  return Status::success();
}

/// Why a cache entry cannot serve `config` (the target chip set) in
/// `format`, "" if it can: its metadata must parse and describe the
/// request, and its image must be of the format and define every kernel
/// the metadata launches.
std::string entryMismatch(const CacheEntry &entry,
                          const AttentionConfig &config, ImageFormat format) {
  KernelMetadata metadata;
  Status parsed = parseKernelMetadata(entry.metadata, metadata);
  if (!parsed.ok())
    return "bad metadata: " + parsed.message();
  if (std::string why = metadataMismatch(metadata, config); !why.empty())
    return why;
  const bool isCubin = entry.payload.compare(0, 4,
                                             "\x7f"
                                             "ELF") == 0;
  if (format == ImageFormat::Cubin && !isCubin)
    return "the image is not a cubin (no ELF header)";
  if (format == ImageFormat::PTX && (isCubin || entry.payload.empty()))
    return "the image is not PTX";
  for (const LaunchSpec &launch : metadata.launches()) {
    // PTX declares `.entry name(`; a cubin's string tables hold the name
    // NUL-terminated.
    std::string symbol = format == ImageFormat::PTX
                             ? ".entry " + launch.entry + "("
                             : launch.entry + std::string(1, '\0');
    if (entry.payload.find(symbol) == std::string::npos)
      return "the image has no kernel '" + launch.entry + "'";
  }
  return "";
}

/// "<field> is <found>, the request has <wanted>".
template <typename T>
std::string differs(const char *field, const T &found, const T &wanted) {
  std::ostringstream os;
  os.precision(17);
  os << field << " is " << found << ", the request has " << wanted;
  return os.str();
}

/// Equal up to the last bits of a decimal round trip.
bool sameValue(double a, double b) {
  return std::fabs(a - b) <= 1e-12 * std::max(std::fabs(a), std::fabs(b));
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

/// metadataMismatch() of a quantization: its keys against the config's.
std::string quantizeMismatch(const KernelMetadata &m,
                             const AttentionConfig &config) {
  if (m.pre.entry != config.entry + "_amax")
    return differs("pre_entry", m.pre.entry, config.entry + "_amax");
  if (m.chip != config.chip)
    return differs("chip", m.chip, config.chip);
  if (toString(m.dtype) != config.dtype)
    return differs<std::string>("dtype", toString(m.dtype), config.dtype);
  const std::pair<const char *, std::pair<int64_t, int64_t>> sizes[] = {
      {"batch", {m.batch, config.batch}},
      {"heads", {m.headsQ, config.headsQ}},
      {"groups", {m.headsKV, config.headsKV}},
      {"seq", {m.seqQ, config.seqQ}},
      {"head_dim", {m.headDim, config.headDim}},
  };
  for (const auto &[field, values] : sizes)
    if (values.first != values.second)
      return differs(field, values.first, values.second);
  if (m.rotated != config.rotationSeed.has_value())
    return differs("rotated", int(m.rotated),
                   int(config.rotationSeed.has_value()));
  if (m.rotated && m.rotationSeed != *config.rotationSeed)
    return differs("rotation_seed", m.rotationSeed, *config.rotationSeed);
  if (m.compiler != mlir::fa::compilerVersion())
    return differs<std::string>("compiler", m.compiler,
                                mlir::fa::compilerVersion());
  return "";
}

} // namespace

std::string jit::metadataMismatch(const KernelMetadata &m,
                                  const AttentionConfig &config) {
  KernelKind kind = config.quantize   ? KernelKind::Quantize
                    : config.backward ? KernelKind::Backward
                                      : KernelKind::Forward;
  if (m.kind != kind)
    return differs<std::string>("kind", toString(m.kind), toString(kind));
  if (m.entry != config.entry)
    return differs("entry", m.entry, config.entry);
  if (kind == KernelKind::Quantize)
    return quantizeMismatch(m, config);
  if (kind == KernelKind::Backward) {
    if (m.pre.entry != config.entry + "_pre")
      return differs("pre_entry", m.pre.entry, config.entry + "_pre");
    if (m.post.entry != config.entry + "_post")
      return differs("post_entry", m.post.entry, config.entry + "_post");
  }
  // Either the chip asked for or the one the compiler builds it for
  // (sm_90a for the WGMMA forward).
  if (m.chip != config.chip && m.chip != config.targetChip())
    return differs("chip", m.chip, config.targetChip());
  if (toString(m.dtype) != config.dtype)
    return differs<std::string>("dtype", toString(m.dtype), config.dtype);
  if (m.runtimeShapes != config.runtimeShapes)
    return differs("runtime_shapes", int(m.runtimeShapes),
                   int(config.runtimeShapes));
  if (m.varlen != config.varlen)
    return differs("varlen", int(m.varlen), int(config.varlen));
  // A runtime-shapes kernel has no batch or lengths of its own (0).
  auto callSize = [&](int64_t size) { return config.runtimeShapes ? 0 : size; };
  const std::pair<const char *, std::pair<int64_t, int64_t>> sizes[] = {
      {"batch", {m.batch, callSize(config.batch)}},
      {"heads_q", {m.headsQ, config.headsQ}},
      {"heads_kv", {m.headsKV, config.headsKV}},
      {"seq_q", {m.seqQ, callSize(config.seqQ)}},
      {"seq_kv", {m.seqKV, callSize(config.seqKV)}},
      {"head_dim", {m.headDim, config.headDim}},
      {"head_dim_v", {m.headDimV, config.headDimV}},
      {"block_q", {m.blockQ, config.effectiveBlockQ()}},
      {"block_kv", {m.blockKV, config.effectiveBlockKV()}},
  };
  for (const auto &[field, values] : sizes)
    if (values.first != values.second)
      return differs(field, values.first, values.second);
  if (config.rowsPerWarp != 0 && m.rowsPerWarp != config.rowsPerWarp)
    return differs("rows_per_warp", m.rowsPerWarp, config.rowsPerWarp);
  double scale = config.scale.value_or(1.0 / std::sqrt(double(config.headDim)));
  if (!sameValue(m.scale, scale))
    return differs("scale", m.scale, scale);
  if (m.causal != config.causal)
    return differs("causal", int(m.causal), int(config.causal));
  std::pair<int64_t, int64_t> window =
      config.window.value_or(std::make_pair(int64_t(-1), int64_t(-1)));
  if (m.windowLeft != window.first)
    return differs("window_left", m.windowLeft, window.first);
  if (m.windowRight != window.second)
    return differs("window_right", m.windowRight, window.second);
  if (!sameValue(m.softcap, config.softcap.value_or(0.0)))
    return differs("softcap", m.softcap, config.softcap.value_or(0.0));
  if (m.compiler != mlir::fa::compilerVersion())
    return differs<std::string>("compiler", m.compiler,
                                mlir::fa::compilerVersion());
  return "";
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
  // What an entry's metadata must say: this direction.
  target.backward = kind == KernelKind::Backward;

  JitArtifact artifact;
  artifact.format = options.format;
  artifact.key = forwardCacheKey(config, chip, options.format);
  // The driver assembles for its own device, whatever the PTX targets.
  if (options.format == ImageFormat::Cubin && !offline)
    artifact.key.chip = driver.device().chip();
  auto build = [&](CacheEntry &entry) {
    artifact.compiled = true;
    return compileEntry(target, options.format, offline, driver, entry);
  };
  // Every entry found is checked against the request before use: one that
  // describes another problem (forged, or a bug) is rebuilt, with a
  // warning, never launched.
  auto validate = [&](const CacheEntry &entry) {
    return entryMismatch(entry, target, options.format);
  };
  CacheEntry entry;
  FA_RT_RETURN_IF_ERROR(cache.getOrBuild(artifact.key, build, entry,
                                         &artifact.outcome, &artifact.warning,
                                         validate));
  artifact.metadataText = std::move(entry.metadata);
  artifact.image = std::move(entry.payload);
  FA_RT_RETURN_IF_ERROR(
      parseKernelMetadata(artifact.metadataText, artifact.metadata));
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
  return JitKernel{std::move(*kernel), a.outcome, a.compiled, a.warning,
                   a.metadataText};
}

Status attentionOnly(const AttentionConfig &config, const char *function) {
  if (!config.quantize)
    return Status::success();
  return Status::error(std::string(function) +
                       " compiles attention kernels; the config asks for a "
                       "quantization (use buildQuantizeKernel / "
                       "getQuantizeKernel)");
}

Status forwardOnly(const AttentionConfig &config, const char *function) {
  FA_RT_RETURN_IF_ERROR(attentionOnly(config, function));
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

Status quantizeOnly(const AttentionConfig &config, const char *function) {
  if (config.quantize)
    return Status::success();
  return Status::error(std::string(function) +
                       " compiles quantizations; the config is an "
                       "attention's (config.quantize is not set)");
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
jit::buildQuantizeKernel(const AttentionConfig &config, KernelCache &cache,
                         const JitOptions &options, Driver &driver) {
  FA_RT_RETURN_IF_ERROR(quantizeOnly(config, "buildQuantizeKernel"));
  return buildKernel(config, KernelKind::Quantize, cache, options, driver);
}

StatusOr<jit::JitKernel> jit::getQuantizeKernel(const AttentionConfig &config,
                                                KernelCache &cache,
                                                const JitOptions &options,
                                                Driver &driver) {
  FA_RT_RETURN_IF_ERROR(quantizeOnly(config, "getQuantizeKernel"));
  return getKernel(config, KernelKind::Quantize, cache, options, driver);
}

StatusOr<jit::JitArtifact>
jit::buildBackwardKernel(const AttentionConfig &config, KernelCache &cache,
                         const JitOptions &options, Driver &driver) {
  FA_RT_RETURN_IF_ERROR(attentionOnly(config, "buildBackwardKernel"));
  return buildKernel(asBackward(config), KernelKind::Backward, cache, options,
                     driver);
}

StatusOr<jit::JitKernel> jit::getBackwardKernel(const AttentionConfig &config,
                                                KernelCache &cache,
                                                const JitOptions &options,
                                                Driver &driver) {
  FA_RT_RETURN_IF_ERROR(attentionOnly(config, "getBackwardKernel"));
  return getKernel(asBackward(config), KernelKind::Backward, cache, options,
                   driver);
}

StatusOr<jit::JitKernel> jit::loadPrecompiledKernel(const std::string &ptxPath,
                                                    const std::string &metaPath,
                                                    KernelCache &cache,
                                                    Driver &driver) {
  KernelMetadata metadata;
  std::string metadataText;
  FA_RT_RETURN_IF_ERROR(
      readKernelMetadataFile(metaPath, metadata, &metadataText));
  std::string ptx;
  FA_RT_RETURN_IF_ERROR(readFile(ptxPath, ptx));
  CacheOutcome outcome = CacheOutcome::Built;
  std::string warning;
  StatusOr<Kernel> kernel = loadKernelCached(
      cache, ptx, metadata,
      metadata.compiler.empty() ? "fa-compile" : metadata.compiler, &outcome,
      &warning, driver);
  if (!kernel.ok())
    return kernel.status();
  return JitKernel{std::move(*kernel), outcome, false, std::move(warning),
                   std::move(metadataText)};
}
