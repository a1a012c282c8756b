//===- FlashMLIR.cpp - C API over FAJit and FARuntime ---------------------===//
//
// See include/fa-c/FlashMLIR.h. No exceptions cross this boundary (the code
// is built without them); every failure is an faStatus plus a message.
//
//===----------------------------------------------------------------------===//

#include "fa-c/FlashMLIR.h"

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

struct faContext_ {
  std::unique_ptr<rt::KernelCache> cache;
  std::mutex mutex;
  std::string lastError;
  std::string lastWarning; ///< Of the last faCompile / faPrecompile.
};

struct faKernel_ {
  rt::Kernel kernel;
  std::string metadataText;
  faDirection direction = FA_FORWARD;
  bool cacheHit = false;
  std::mutex mutex;
  std::string lastError;
  faKernel_(rt::Kernel k) : kernel(std::move(k)) {}
};

namespace {

thread_local std::string tlsLastError;

/// What a registered handle points at. A handle of one kind passed where
/// the other is expected is as invalid as a destroyed one: the two structs
/// have nothing in common to read.
enum class HandleKind { Context, Kernel };

const char *toString(HandleKind kind) {
  return kind == HandleKind::Context ? "context" : "kernel";
}

std::mutex &registryMutex() {
  static std::mutex m;
  return m;
}
/// Every live handle, with its kind.
std::unordered_map<const void *, HandleKind> &registry() {
  static auto *r = new std::unordered_map<const void *, HandleKind>();
  return *r;
}
/// Whether `handle` is a live handle of `kind`.
bool isLive(const void *handle, HandleKind kind) {
  if (!handle)
    return false;
  std::lock_guard<std::mutex> lock(registryMutex());
  auto it = registry().find(handle);
  return it != registry().end() && it->second == kind;
}
void registerHandle(const void *h, HandleKind kind) {
  std::lock_guard<std::mutex> lock(registryMutex());
  registry()[h] = kind;
}
/// Removes `h` if it is a live handle of `kind`; false otherwise.
bool unregisterHandle(const void *h, HandleKind kind) {
  std::lock_guard<std::mutex> lock(registryMutex());
  auto it = registry().find(h);
  if (it == registry().end() || it->second != kind)
    return false;
  registry().erase(it);
  return true;
}
/// The message for a handle that is not a live one of `kind`: names a handle
/// of the other kind as such, since that mistake is easy to make in C.
std::string invalidHandle(const char *fn, const void *handle, HandleKind kind) {
  std::string message =
      std::string(fn) + ": invalid " + toString(kind) + " handle";
  HandleKind other =
      kind == HandleKind::Context ? HandleKind::Kernel : HandleKind::Context;
  if (isLive(handle, other))
    message += std::string(" (got a ") + toString(other) + " handle)";
  return message;
}

faStatus ok() {
  tlsLastError.clear();
  return FA_SUCCESS;
}
faStatus fail(faStatus status, std::string message) {
  if (message.empty())
    message = "unknown error";
  tlsLastError = std::move(message);
  return status;
}
template <typename H>
faStatus fail(H *handle, faStatus status, std::string message) {
  faStatus s = fail(status, std::move(message));
  std::lock_guard<std::mutex> lock(handle->mutex);
  handle->lastError = tlsLastError;
  return s;
}

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

faStatus toAttentionConfig(const faConfig *c, faDirection direction,
                           mlir::fa::AttentionConfig &out) {
  if (!c)
    return fail(FA_ERROR_INVALID_ARGUMENT, "config is NULL");
  if (direction != FA_FORWARD && direction != FA_BACKWARD)
    return fail(FA_ERROR_INVALID_ARGUMENT,
                "direction must be FA_FORWARD (0) or FA_BACKWARD (1), got " +
                    std::to_string(int(direction)));
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
  default:
    return fail(FA_ERROR_INVALID_ARGUMENT,
                "unknown dtype enum value " + std::to_string(c->dtype) +
                    " (FA_DTYPE_BF16 = 0, FA_DTYPE_F16 = 1)");
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

faKernel_ *liveKernel(faKernel k) {
  return isLive(k, HandleKind::Kernel) ? static_cast<faKernel_ *>(k) : nullptr;
}

faContext_ *liveContext(faContext c) {
  return isLive(c, HandleKind::Context) ? static_cast<faContext_ *>(c)
                                        : nullptr;
}

} // namespace

extern "C" {

int faGetApiVersion(void) { return FA_CAPI_VERSION; }
const char *faCompilerVersion(void) { return mlir::fa::compilerVersion(); }
const char *faGetLastError(void) { return tlsLastError.c_str(); }

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
  if (!out)
    return fail(FA_ERROR_INVALID_ARGUMENT, "out is NULL");
  *out = nullptr;
  auto *ctx = new faContext_();
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
    return fail(context, s, tlsLastError);
  jit::JitOptions options;
  options.chip = c.chip;
  c.backward = false; // getBackwardKernel sets it itself.
  auto got = direction == FA_BACKWARD
                 ? jit::getBackwardKernel(c, *context->cache, options)
                 : jit::getForwardKernel(c, *context->cache, options);
  if (!got.ok())
    return fail(context, classify(got.status().message()),
                got.status().message());
  // The metadata text: the same build again is a memory hit of the cache.
  auto artifact = direction == FA_BACKWARD
                      ? jit::buildBackwardKernel(c, *context->cache, options)
                      : jit::buildForwardKernel(c, *context->cache, options);
  setWarning(context, got->warning);
  auto *k = new faKernel_(std::move(got->kernel));
  k->direction = direction;
  k->cacheHit = got->cacheHit();
  if (artifact.ok())
    k->metadataText = artifact->metadataText;
  else
    k->metadataText = k->kernel.metadata().configString();
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
    return fail(context, s, tlsLastError);
  // The entry faCompile() looks up on a device of that chip (PTX: no driver
  // or ptxas needed here).
  jit::JitOptions options;
  options.chip = c.chip.empty() ? "sm_90" : c.chip;
  c.backward = false; // buildBackwardKernel sets it itself.
  auto built = direction == FA_BACKWARD
                   ? jit::buildBackwardKernel(c, *context->cache, options)
                   : jit::buildForwardKernel(c, *context->cache, options);
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

/// The live kernel behind `kernel` if it is of `kind`; otherwise records
/// the error (`fn` names the caller) in `status` and returns null.
static faKernel_ *kernelOfKind(faKernel kernel, rt::KernelKind kind,
                               const char *fn, faStatus &status) {
  faKernel_ *k = liveKernel(kernel);
  if (!k) {
    status = fail(FA_ERROR_INVALID_HANDLE,
                  invalidHandle(fn, kernel, HandleKind::Kernel));
    return nullptr;
  }
  if (k->kernel.metadata().kind != kind) {
    status =
        fail(k, FA_ERROR_INVALID_ARGUMENT,
             std::string(fn) + ": not a " +
                 (kind == rt::KernelKind::Forward ? "forward" : "backward") +
                 " kernel");
    return nullptr;
  }
  return k;
}

faStatus faBackwardWorkspaceBytes(faKernel kernel, uint64_t *bytes) {
  faStatus status = FA_SUCCESS;
  faKernel_ *k = kernelOfKind(kernel, rt::KernelKind::Backward,
                              "faBackwardWorkspaceBytes", status);
  if (!k)
    return status;
  if (!bytes)
    return fail(k, FA_ERROR_INVALID_ARGUMENT, "bytes is NULL");
  uint64_t needed = rt::attentionBackwardWorkspaceBytes(k->kernel.metadata());
  // 0 is how the runtime says the sizes are beyond what it supports; a
  // caller must not take it for "no workspace needed".
  if (needed == 0)
    return fail(k, FA_ERROR_INVALID_ARGUMENT,
                "faBackwardWorkspaceBytes: the kernel's sizes are beyond what "
                "the runtime supports (at most 2^31-1 elements per tensor)");
  *bytes = needed;
  return ok();
}

faStatus faAttentionForward(faKernel kernel, uint64_t q, uint64_t k, uint64_t v,
                            uint64_t o, uint64_t lse,
                            const faForwardStrides *strides, uint64_t stream) {
  faKernel_ *kh = liveKernel(kernel);
  // A runtime-shapes kernel has no shape of its own (0): the launch says so.
  const rt::KernelMetadata *m = kh ? &kh->kernel.metadata() : nullptr;
  return faAttentionForwardShape(kernel, m ? m->batch : 0, m ? m->seqQ : 0,
                                 m ? m->seqKV : 0, q, k, v, o, lse, strides,
                                 stream);
}

namespace {

/// One forward call: the kernel checked, the arguments of its shape (and,
/// for packed sequences, their offsets), `strides` (NULL: dense) and the
/// launch.
struct ForwardCall {
  const char *what;
  int64_t batch, seqQ, seqKV;
  uint64_t q, k, v, o, lse;
  uint64_t cuSeqlensQ = 0, cuSeqlensK = 0;
  int64_t sequences = 0, maxSeqQ = 0;
};

faStatus launchForward(faKernel kernel, const ForwardCall &call,
                       const faForwardStrides *strides, uint64_t stream) {
  faStatus status = FA_SUCCESS;
  faKernel_ *kh =
      kernelOfKind(kernel, rt::KernelKind::Forward, call.what, status);
  if (!kh)
    return status;
  auto args = rt::AttentionArgs::fromMetadata(kh->kernel.metadata());
  args.batch = call.batch;
  args.seqQ = call.seqQ;
  args.seqKV = call.seqKV;
  args.setContiguousStrides();
  args.q = call.q;
  args.k = call.k;
  args.v = call.v;
  args.o = call.o;
  args.lse = call.lse;
  args.cuSeqlensQ = call.cuSeqlensQ;
  args.cuSeqlensK = call.cuSeqlensK;
  args.sequences = call.sequences;
  args.maxSeqQ = call.maxSeqQ;
  if (strides) {
    for (int i = 0; i < 4; ++i) {
      args.strideQ[i] = strides->q[i];
      args.strideK[i] = strides->k[i];
      args.strideV[i] = strides->v[i];
      args.strideO[i] = strides->o[i];
    }
    for (int i = 0; i < 3; ++i)
      args.strideLSE[i] = strides->lse[i];
  }
  rt::Status s = rt::attentionForward(kh->kernel, args,
                                      reinterpret_cast<CUstream>(stream));
  if (!s.ok())
    return fail(kh, FA_ERROR_LAUNCH, s.message());
  return ok();
}

} // namespace

faStatus faAttentionForwardVarlen(faKernel kernel, int64_t total_q,
                                  int64_t total_kv, int64_t sequences,
                                  int64_t max_seqlen_q, uint64_t q, uint64_t k,
                                  uint64_t v, uint64_t o, uint64_t lse,
                                  uint64_t cu_seqlens_q, uint64_t cu_seqlens_k,
                                  const faForwardStrides *strides,
                                  uint64_t stream) {
  return launchForward(kernel,
                       {"faAttentionForwardVarlen", 1, total_q, total_kv, q, k,
                        v, o, lse, cu_seqlens_q, cu_seqlens_k, sequences,
                        max_seqlen_q},
                       strides, stream);
}

faStatus faAttentionForwardShape(faKernel kernel, int64_t batch, int64_t seq_q,
                                 int64_t seq_kv, uint64_t q, uint64_t k,
                                 uint64_t v, uint64_t o, uint64_t lse,
                                 const faForwardStrides *strides,
                                 uint64_t stream) {
  return launchForward(
      kernel, {"faAttentionForward", batch, seq_q, seq_kv, q, k, v, o, lse},
      strides, stream);
}

faStatus faAttentionBackward(faKernel kernel, uint64_t q, uint64_t k,
                             uint64_t v, uint64_t o, uint64_t dout,
                             uint64_t lse, uint64_t dq, uint64_t dk,
                             uint64_t dv, uint64_t workspace,
                             const faBackwardStrides *strides,
                             uint64_t stream) {
  faStatus status = FA_SUCCESS;
  faKernel_ *kh = kernelOfKind(kernel, rt::KernelKind::Backward,
                               "faAttentionBackward", status);
  if (!kh)
    return status;
  auto args = rt::AttentionBackwardArgs::fromMetadata(kh->kernel.metadata());
  args.q = q;
  args.k = k;
  args.v = v;
  args.o = o;
  args.dO = dout;
  args.lse = lse;
  args.dq = dq;
  args.dk = dk;
  args.dv = dv;
  if (strides) {
    for (int i = 0; i < 4; ++i) {
      args.strideQ[i] = strides->q[i];
      args.strideK[i] = strides->k[i];
      args.strideV[i] = strides->v[i];
      args.strideO[i] = strides->o[i];
      args.strideDO[i] = strides->dout[i];
      args.strideDQ[i] = strides->dq[i];
      args.strideDK[i] = strides->dk[i];
      args.strideDV[i] = strides->dv[i];
    }
    for (int i = 0; i < 3; ++i)
      args.strideLSE[i] = strides->lse[i];
  }
  rt::Status s = rt::attentionBackward(kh->kernel, args, workspace,
                                       reinterpret_cast<CUstream>(stream));
  if (!s.ok())
    return fail(kh, FA_ERROR_LAUNCH, s.message());
  return ok();
}

} // extern "C"
