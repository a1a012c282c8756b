//===- FlashMLIR.cpp - C API over FAJit and FARuntime ---------------------===//
//
// See include/fa-c/FlashMLIR.h. No exceptions cross this boundary (the code
// is built without them); every failure is an faStatus plus a message.
//
//===----------------------------------------------------------------------===//

#include "Handles.h"

#include "fa/Compiler/Compiler.h"
#include "fa/Jit/Jit.h"
#include "fa/Runtime/Attention.h"
#include "fa/Runtime/KernelCache.h"
#include "fa/Runtime/Metadata.h"

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

using namespace fa;
using namespace fa::capi;

namespace {

/// Records the cache's non-fatal problem of a compile on `context` (""
/// clears it), where faContextGetLastWarning() reports it.
void setWarning(faContext_ *context, const std::string &warning) {
  std::lock_guard<std::mutex> lock(context->mutex);
  context->lastWarning = warning;
}

/// The status for a runtime error message.
faStatus classify(const std::string &message) {
  if (message.find("driver") != std::string::npos ||
      message.find("CUDA") != std::string::npos ||
      message.find("device") != std::string::npos)
    return FA_ERROR_DRIVER;
  return FA_ERROR_COMPILE;
}

/// FA_QUANTIZE: the quantization's fields of `c` (dtype, batch, heads_q,
/// heads_kv as the groups, seq_q, head_dim, rotate, rotation_seed, chip).
faStatus toQuantizeConfig(const faConfig *c, mlir::fa::AttentionConfig &out) {
  if (c->dtype != FA_DTYPE_BF16 && c->dtype != FA_DTYPE_F16)
    return fail(FA_ERROR_INVALID_ARGUMENT,
                "FA_QUANTIZE quantizes FA_DTYPE_BF16 (0) or FA_DTYPE_F16 (1) "
                "tensors, got dtype " +
                    std::to_string(c->dtype));
  const std::pair<const char *, int64_t> sizes[] = {
      {"batch", c->batch},
      {"heads_q", c->heads_q},
      {"heads_kv", c->heads_kv},
      {"seq_q", c->seq_q},
      {"head_dim", c->head_dim}};
  for (auto [name, value] : sizes)
    if (value <= 0)
      return fail(FA_ERROR_INVALID_ARGUMENT, std::string(name) +
                                                 " must be positive, got " +
                                                 std::to_string(value));
  if (c->rotate != 0 && c->rotate != 1)
    return fail(FA_ERROR_INVALID_ARGUMENT,
                "rotate must be 0 or 1, got " + std::to_string(c->rotate));
  out.quantize = true;
  out.dtype = c->dtype == FA_DTYPE_F16 ? "f16" : "bf16";
  out.batch = c->batch;
  out.headsQ = c->heads_q;
  out.headsKV = c->heads_kv;
  out.seqQ = out.seqKV = c->seq_q;
  out.headDim = out.headDimV = c->head_dim;
  if (c->rotate == 1)
    out.rotationSeed = c->rotation_seed;
  out.chip = c->chip ? c->chip : "";
  out.entry = "fa_quantize";
  return FA_SUCCESS;
}

faStatus toAttentionConfig(const faConfig *c, faDirection direction,
                           mlir::fa::AttentionConfig &out) {
  if (!c)
    return fail(FA_ERROR_INVALID_ARGUMENT, "config is NULL");
  if (direction != FA_FORWARD && direction != FA_BACKWARD &&
      direction != FA_QUANTIZE)
    return fail(FA_ERROR_INVALID_ARGUMENT,
                "direction must be FA_FORWARD (0), FA_BACKWARD (1) or "
                "FA_QUANTIZE (2), got " +
                    std::to_string(int(direction)));
  if (direction == FA_QUANTIZE)
    return toQuantizeConfig(c, out);
  switch (c->dtype) {
  case FA_DTYPE_BF16:
    out.dtype = "bf16";
    break;
  case FA_DTYPE_F16:
    out.dtype = "f16";
    break;
  case FA_DTYPE_F32:
    out.dtype = "f32";
    break;
  case FA_DTYPE_E4M3:
    out.dtype = "e4m3";
    break;
  default:
    return fail(FA_ERROR_INVALID_ARGUMENT,
                "unknown dtype enum value " + std::to_string(c->dtype) +
                    " (FA_DTYPE_BF16 = 0, FA_DTYPE_F16 = 1, FA_DTYPE_E4M3 "
                    "= 3)");
  }
  // O's type of FP8 inputs; other inputs' outputs are their own type.
  if (c->dtype == FA_DTYPE_E4M3) {
    if (c->out_dtype != FA_DTYPE_BF16 && c->out_dtype != FA_DTYPE_F16)
      return fail(FA_ERROR_INVALID_ARGUMENT,
                  "out_dtype of FA_DTYPE_E4M3 inputs must be FA_DTYPE_BF16 "
                  "(0) or FA_DTYPE_F16 (1), got " +
                      std::to_string(c->out_dtype));
    out.outDtype = c->out_dtype == FA_DTYPE_F16 ? "f16" : "bf16";
  }
  // Sizes are checked here, not only by the compiler: the JIT computes the
  // cache key (whose default block sizes multiply the head dims) before it
  // compiles, and a negative head dim overflowed there.
  if (c->runtime_shapes != 0 && c->runtime_shapes != 1)
    return fail(FA_ERROR_INVALID_ARGUMENT,
                "runtime_shapes must be 0 or 1, got " +
                    std::to_string(c->runtime_shapes));
  out.runtimeShapes = c->runtime_shapes == 1;
  if (c->deterministic != 0 && c->deterministic != 1)
    return fail(FA_ERROR_INVALID_ARGUMENT,
                "deterministic must be 0 or 1, got " +
                    std::to_string(c->deterministic));
  // The backward's option: every forward is deterministic.
  out.deterministic = c->deterministic == 1 && direction == FA_BACKWARD;
  if (c->varlen != 0 && c->varlen != 1)
    return fail(FA_ERROR_INVALID_ARGUMENT,
                "varlen must be 0 or 1, got " + std::to_string(c->varlen));
  out.varlen = c->varlen == 1;
  if (c->grad_lse != 0 && c->grad_lse != 1)
    return fail(FA_ERROR_INVALID_ARGUMENT,
                "grad_lse must be 0 or 1, got " + std::to_string(c->grad_lse));
  // The backward's input: a forward has no gradient to take.
  out.gradLse = c->grad_lse == 1 && direction == FA_BACKWARD;
  out.runtimeShapes |= out.varlen;
  // Runtime shapes ignore batch and lengths (each call's).
  const bool callSized = out.runtimeShapes;
  const std::pair<const char *, int64_t> sizes[] = {
      {"batch", callSized ? 1 : c->batch},
      {"heads_q", c->heads_q},
      {"heads_kv", c->heads_kv},
      {"seq_q", callSized ? 1 : c->seq_q},
      {"seq_kv", callSized ? 1 : c->seq_kv},
      {"head_dim", c->head_dim},
      {"head_dim_v", c->head_dim_v}};
  for (auto [name, value] : sizes)
    if (value <= 0)
      return fail(FA_ERROR_INVALID_ARGUMENT, std::string(name) +
                                                 " must be positive, got " +
                                                 std::to_string(value));
  out.batch = c->batch;
  out.headsQ = c->heads_q;
  out.headsKV = c->heads_kv;
  out.seqQ = c->seq_q;
  out.seqKV = c->seq_kv;
  out.headDim = c->head_dim;
  out.headDimV = c->head_dim_v;
  if (c->scale != 0.0)
    out.scale = c->scale;
  out.causal = c->causal != 0;
  // Only (-1, -1) means no window; any other pair goes to the compiler,
  // whose verifier refuses bounds below -1 instead of dropping them.
  if (c->window_left != -1 || c->window_right != -1)
    out.window = std::make_pair(c->window_left, c->window_right);
  if (c->softcap != 0.0)
    out.softcap = c->softcap;
  if (c->block_q < 0 || c->block_kv < 0)
    return fail(FA_ERROR_INVALID_ARGUMENT,
                "block_q / block_kv must be 0 (default) or positive");
  out.blockQ = c->block_q;
  out.blockKV = c->block_kv;
  out.chip = c->chip ? c->chip : "";
  out.backward = direction == FA_BACKWARD;
  out.entry = out.backward ? "fa_bwd" : "fa_fwd"; // fa-compile's names
  return FA_SUCCESS;
}

/// The JIT's build (cache or compiler) of `direction`'s kernel.
rt::StatusOr<jit::JitArtifact> buildKernelOf(faDirection direction,
                                             const mlir::fa::AttentionConfig &c,
                                             rt::KernelCache &cache,
                                             const jit::JitOptions &options,
                                             rt::Driver &driver) {
  if (direction == FA_BACKWARD)
    return jit::buildBackwardKernel(c, cache, options, driver);
  if (direction == FA_QUANTIZE)
    return jit::buildQuantizeKernel(c, cache, options, driver);
  return jit::buildForwardKernel(c, cache, options, driver);
}

/// Compiles `config` to PTX (no driver): the metadata text, or an error.
faStatus compileToPTX(mlir::fa::AttentionConfig config,
                      mlir::fa::CompiledKernel &out) {
  if (config.chip.empty())
    config.chip = "sm_90";
  auto compiled = mlir::fa::compileAttention(config, mlir::fa::EmitKind::PTX);
  if (!compiled)
    return fail(FA_ERROR_COMPILE, llvm::toString(compiled.takeError()));
  out = std::move(*compiled);
  return FA_SUCCESS;
}

} // namespace

extern "C" {

int faGetApiVersion(void) { return FA_CAPI_VERSION; }
const char *faCompilerVersion(void) { return mlir::fa::compilerVersion(); }
const char *faGetLastError(void) { return threadLastError().c_str(); }

const char *faStatusString(faStatus status) {
  switch (status) {
  case FA_SUCCESS:
    return "FA_SUCCESS";
  case FA_ERROR_INVALID_ARGUMENT:
    return "FA_ERROR_INVALID_ARGUMENT";
  case FA_ERROR_INVALID_HANDLE:
    return "FA_ERROR_INVALID_HANDLE";
  case FA_ERROR_COMPILE:
    return "FA_ERROR_COMPILE";
  case FA_ERROR_DRIVER:
    return "FA_ERROR_DRIVER";
  case FA_ERROR_LAUNCH:
    return "FA_ERROR_LAUNCH";
  }
  return "FA_ERROR_UNKNOWN";
}

faStatus faConfigInit(faConfig *config) {
  if (!config)
    return fail(FA_ERROR_INVALID_ARGUMENT, "config is NULL");
  *config = faConfig{};
  config->dtype = FA_DTYPE_BF16;
  config->batch = config->heads_q = config->heads_kv = 1;
  config->seq_q = config->seq_kv = 128;
  config->head_dim = config->head_dim_v = 64;
  config->window_left = config->window_right = -1;
  return ok();
}

faStatus faValidateConfig(const faConfig *config, faDirection direction) {
  mlir::fa::AttentionConfig c;
  if (faStatus s = toAttentionConfig(config, direction, c))
    return s;
  mlir::fa::CompiledKernel compiled;
  if (faStatus s = compileToPTX(c, compiled))
    return s;
  return ok();
}

faStatus faContextCreate(const char *cacheDir, faContext *out) {
  return faContextCreateOnDevice(cacheDir, 0, out);
}

faStatus faContextCreateOnDevice(const char *cacheDir, int device,
                                 faContext *out) {
  if (!out)
    return fail(FA_ERROR_INVALID_ARGUMENT, "out is NULL");
  *out = nullptr;
  if (device < 0 || device >= rt::Driver::kMaxDevices)
    return fail(FA_ERROR_INVALID_ARGUMENT,
                "device " + std::to_string(device) +
                    " is not a device "
                    "ordinal (0 to " +
                    std::to_string(rt::Driver::kMaxDevices - 1) + ")");
  rt::Driver &driver = rt::Driver::get(device);
  // Device 0 needs no driver until a kernel is loaded (a context that only
  // precompiles); another device is named, so it must be there.
  if (device != 0)
    if (rt::Status s = driver.initialize(); !s.ok())
      return fail(FA_ERROR_DRIVER, s.message());
  auto *ctx = new faContext_();
  ctx->driver = &driver;
  ctx->cache = std::make_unique<rt::KernelCache>(cacheDir ? cacheDir : "");
  // Usable without a disk cache, but every kernel would be compiled again
  // in each process: say so from the start.
  if (!ctx->cache->diskEnabled())
    ctx->lastWarning = "kernel cache directory '" + ctx->cache->directory() +
                       "' is unusable (" + ctx->cache->diskProblem() +
                       "); kernels are cached in memory only";
  registerHandle(ctx, HandleKind::Context);
  *out = ctx;
  return ok();
}

int faContextDevice(faContext context) {
  if (!liveContext(context)) {
    fail(FA_ERROR_INVALID_HANDLE,
         invalidHandle("faContextDevice", context, HandleKind::Context));
    return -1;
  }
  return context->driver->ordinal();
}

faStatus faContextDestroy(faContext context) {
  if (!unregisterHandle(context, HandleKind::Context))
    return fail(
        FA_ERROR_INVALID_HANDLE,
        invalidHandle("faContextDestroy", context, HandleKind::Context));
  delete context;
  return ok();
}

const char *faContextCacheDir(faContext context) {
  if (!liveContext(context)) {
    fail(FA_ERROR_INVALID_HANDLE,
         invalidHandle("faContextCacheDir", context, HandleKind::Context));
    return nullptr;
  }
  return context->cache->directory().c_str();
}

const char *faContextGetLastError(faContext context) {
  if (!liveContext(context))
    return "invalid context handle";
  std::lock_guard<std::mutex> lock(context->mutex);
  return context->lastError.c_str();
}

const char *faContextGetLastWarning(faContext context) {
  if (!liveContext(context))
    return "invalid context handle";
  std::lock_guard<std::mutex> lock(context->mutex);
  return context->lastWarning.c_str();
}

faStatus faCompile(faContext context, const faConfig *config,
                   faDirection direction, faKernel *out) {
  if (!out)
    return fail(FA_ERROR_INVALID_ARGUMENT, "out is NULL");
  *out = nullptr;
  if (!liveContext(context))
    return fail(FA_ERROR_INVALID_HANDLE,
                invalidHandle("faCompile", context, HandleKind::Context));
  setWarning(context, "");
  mlir::fa::AttentionConfig c;
  if (faStatus s = toAttentionConfig(config, direction, c))
    return fail(context, s, threadLastError());
  jit::JitOptions options;
  options.chip = c.chip;
  c.backward = false; // getBackwardKernel sets it itself.
  auto got = direction == FA_BACKWARD
                 ? jit::getBackwardKernel(c, *context->cache, options,
                                          *context->driver)
             : direction == FA_QUANTIZE
                 ? jit::getQuantizeKernel(c, *context->cache, options,
                                          *context->driver)
                 : jit::getForwardKernel(c, *context->cache, options,
                                         *context->driver);
  if (!got.ok())
    return fail(context, classify(got.status().message()),
                got.status().message());
  setWarning(context, got->warning);
  auto *k = new faKernel_(std::move(got->kernel));
  k->direction = direction;
  k->cacheHit = got->cacheHit();
  k->metadataText = std::move(got->metadataText);
  registerHandle(k, HandleKind::Kernel);
  *out = k;
  return ok();
}

faStatus faCompileUnloaded(const faConfig *config, faDirection direction,
                           faKernel *out) {
  if (!out)
    return fail(FA_ERROR_INVALID_ARGUMENT, "out is NULL");
  *out = nullptr;
  mlir::fa::AttentionConfig c;
  if (faStatus s = toAttentionConfig(config, direction, c))
    return s;
  mlir::fa::CompiledKernel compiled;
  if (faStatus s = compileToPTX(c, compiled))
    return s;
  rt::KernelMetadata metadata;
  rt::Status parsed = rt::parseKernelMetadata(compiled.metadata, metadata);
  if (!parsed.ok())
    return fail(FA_ERROR_COMPILE,
                "the compiler's metadata does not parse: " + parsed.message());
  auto *k = new faKernel_(rt::Kernel::unloaded(metadata));
  k->metadataText = compiled.metadata;
  k->direction = direction;
  registerHandle(k, HandleKind::Kernel);
  *out = k;
  return ok();
}

faStatus faPrecompile(faContext context, const faConfig *config,
                      faDirection direction, int *cache_hit) {
  if (cache_hit)
    *cache_hit = 0;
  if (!liveContext(context))
    return fail(FA_ERROR_INVALID_HANDLE,
                invalidHandle("faPrecompile", context, HandleKind::Context));
  setWarning(context, "");
  mlir::fa::AttentionConfig c;
  if (faStatus s = toAttentionConfig(config, direction, c))
    return fail(context, s, threadLastError());
  // The entry faCompile() looks up on a device of that chip (PTX: no driver
  // or ptxas needed here).
  jit::JitOptions options;
  options.chip = c.chip.empty() ? "sm_90" : c.chip;
  c.backward = false; // buildBackwardKernel sets it itself.
  auto built =
      buildKernelOf(direction, c, *context->cache, options, *context->driver);
  if (!built.ok())
    return fail(context, classify(built.status().message()),
                built.status().message());
  setWarning(context, built->warning);
  if (cache_hit)
    *cache_hit = built->compiled ? 0 : 1;
  return ok();
}

faStatus faKernelDestroy(faKernel kernel) {
  if (!unregisterHandle(kernel, HandleKind::Kernel))
    return fail(FA_ERROR_INVALID_HANDLE,
                invalidHandle("faKernelDestroy", kernel, HandleKind::Kernel));
  delete kernel;
  return ok();
}

const char *faKernelMetadata(faKernel kernel) {
  faKernel_ *k = liveKernel(kernel);
  if (!k) {
    fail(FA_ERROR_INVALID_HANDLE,
         invalidHandle("faKernelMetadata", kernel, HandleKind::Kernel));
    return nullptr;
  }
  return k->metadataText.c_str();
}

int faKernelDirection(faKernel kernel) {
  faKernel_ *k = liveKernel(kernel);
  return k ? int(k->direction) : -1;
}

int faKernelCacheHit(faKernel kernel) {
  faKernel_ *k = liveKernel(kernel);
  return k && k->cacheHit ? 1 : 0;
}

const char *faKernelGetLastError(faKernel kernel) {
  faKernel_ *k = liveKernel(kernel);
  if (!k)
    return "invalid kernel handle";
  std::lock_guard<std::mutex> lock(k->mutex);
  return k->lastError.c_str();
}



} // extern "C"
