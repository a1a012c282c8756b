/*===- FlashMLIR.h - C API of FlashMLIR's JIT and runtime ----------*- C -*-===
 *
 * A plain C interface over the in-process JIT (fa/Jit/Jit.h) and the runtime's
 * validated launches (fa/Runtime/Attention.h), built as one shared library,
 * libFlashMLIR.so. Used by the Python package `flashmlir` through ctypes.
 *
 * Conventions:
 *  - Handles are opaque. The library keeps a registry of live handles and
 *    their kinds, so a null, destroyed or foreign handle, or a context passed
 *    where a kernel is expected (or the reverse), is reported as
 *    FA_ERROR_INVALID_HANDLE instead of being dereferenced.
 *  - Every call returns an faStatus. On failure, the message is available
 *    from faGetLastError() (thread-local; the last failed call of this
 *    thread, cleared by a successful call) and, for calls on a handle, from
 *    faContextGetLastError() / faKernelGetLastError().
 *  - Returned strings are owned by the library: valid until the next call on
 *    the same thread (faGetLastError) or until the handle is destroyed.
 *  - Device pointers and streams are passed as uint64_t (CUdeviceptr,
 *    CUstream); 0 is the default stream. The current CUDA context is the
 *    device's primary context (the one the CUDA runtime and PyTorch use).
 *
 *===----------------------------------------------------------------------===*/

#ifndef FA_C_FLASHMLIR_H
#define FA_C_FLASHMLIR_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define FA_CAPI_EXPORT __declspec(dllexport)
#else
#define FA_CAPI_EXPORT __attribute__((visibility("default")))
#endif

/* The enums' values cross the API as C ints (ctypes passes any). C++ gives
 * an enum without a fixed underlying type only the values its enumerators
 * need, so an out-of-range int (a direction of 5) would be undefined
 * behaviour in the library before it could refuse it: there they are
 * declared over int, which has the same size and passing convention. */
#ifdef __cplusplus
#define FA_ENUM_INT : int
#else
#define FA_ENUM_INT
#endif

/** Bumped when a struct layout or a signature changes. */
#define FA_CAPI_VERSION 10

typedef enum faStatus FA_ENUM_INT {
  FA_SUCCESS = 0,
  FA_ERROR_INVALID_ARGUMENT = 1, /**< null pointer, bad enum, bad value */
  FA_ERROR_INVALID_HANDLE = 2,   /**< null, destroyed or unknown handle */
  FA_ERROR_COMPILE = 3,          /**< the compiler rejected the config */
  FA_ERROR_DRIVER = 4,           /**< no CUDA driver / device, load failure */
  FA_ERROR_LAUNCH = 5,           /**< launch validation or launch failed */
} faStatus;

typedef enum faDType FA_ENUM_INT {
  FA_DTYPE_BF16 = 0,
  FA_DTYPE_F16 = 1,
  /** Passed on to the compiler, which currently rejects it. */
  FA_DTYPE_F32 = 2,
  /** FP8 (e4m3) q, k, v with per (batch, KV head) descales, o in the
   *  config's out_dtype: the forward on sm_90a, head dims 128 or 256
   *  (launch with faAttentionForwardFP8). API version 8. */
  FA_DTYPE_E4M3 = 3,
} faDType;

typedef enum faDirection FA_ENUM_INT {
  FA_FORWARD = 0,
  FA_BACKWARD = 1, /**< the backward kernel set (pre, main, post kernels) */
  /** Not an attention: fa.quantize of a [batch, heads_q, seq_q, head_dim]
   *  bf16 or f16 tensor to e4m3 with one descale per (batch, group of
   *  heads_q / heads_kv heads), rotated first with `rotate` (launch with
   *  faQuantize). API version 9. */
  FA_QUANTIZE = 2,
} faDirection;

typedef struct faContext_ *faContext;
typedef struct faKernel_ *faKernel;

/** One attention problem. faConfigInit() fills the defaults. */
typedef struct faConfig {
  int32_t dtype;  /**< faDType */
  int32_t causal; /**< 0 / 1 */
  int64_t batch, heads_q, heads_kv, seq_q, seq_kv, head_dim, head_dim_v;
  double scale;        /**< 0: 1/sqrt(head_dim) */
  int64_t window_left; /**< -1 (both): no window; < -1: error */
  int64_t window_right;
  double softcap;            /**< 0: none */
  int64_t block_q, block_kv; /**< 0: the compiler's defaults */
  const char *chip;          /**< "sm_90", or NULL: the device's */
  /** 1: one kernel (set) for every batch and pair of lengths (batch,
   *  seq_q and seq_kv above are then ignored; launch with
   *  faAttentionForwardShape or faAttentionBackwardShape). The WGMMA
   *  kernels (sm_90) only; a backward with it is not deterministic. */
  int32_t runtime_shapes;
  /** 1: the backward's gradients bitwise equal run to run (dQ added in a
   *  fixed order of KV blocks; the WGMMA backward, sm_90). The forward is
   *  deterministic either way: a forward kernel ignores it. */
  int32_t deterministic;
  /** 1: packed sequences (FlashAttention's varlen): one kernel for every
   *  batch of sequences packed along N (batch, seq_q and seq_kv above are
   *  then ignored; launch with faAttentionForwardVarlen or, FA_BACKWARD,
   *  faAttentionBackwardVarlen). The WGMMA kernels (sm_90) only; a varlen
   *  backward is not deterministic. */
  int32_t varlen;
  /** 1: the backward also takes the gradient of lse (a loss that reads
   *  lse): launch it with faAttentionBackwardCall and its dlse. A forward
   *  kernel ignores it. API version 7. */
  int32_t grad_lse;
  /** With FA_DTYPE_E4M3: o's faDType, FA_DTYPE_BF16 (the default) or
   *  FA_DTYPE_F16; ignored otherwise. API version 8. */
  int32_t out_dtype;
  /** FA_QUANTIZE: 1 rotates the rows by the Hadamard rotation of seed
   *  `rotation_seed` before quantizing (FlashAttention 3's incoherent
   *  processing: Q and K rotated with one seed keep Q Kᵀ); 0 does not.
   *  Ignored otherwise. API version 9. */
  int32_t rotate;
  int64_t rotation_seed;
} faConfig;

/** Element strides of the forward's tensors (q,k,v,o [B,H,N,D], lse [B,H,N]).
 *  Pass NULL for dense row-major tensors. */
typedef struct faForwardStrides {
  int64_t q[4], k[4], v[4], o[4], lse[3];
} faForwardStrides;

/** Element strides of the backward's tensors. NULL: dense row-major. */
typedef struct faBackwardStrides {
  int64_t q[4], k[4], v[4], o[4], dout[4], dq[4], dk[4], dv[4], lse[3];
} faBackwardStrides;

FA_CAPI_EXPORT int faGetApiVersion(void);
/** The compiler's version string (part of every kernel-cache key). */
FA_CAPI_EXPORT const char *faCompilerVersion(void);
/** The message of this thread's last failed call ("" if none since). */
FA_CAPI_EXPORT const char *faGetLastError(void);
/** A short name for a status ("FA_ERROR_COMPILE"). */
FA_CAPI_EXPORT const char *faStatusString(faStatus status);

/** Fills `config` with the defaults: bf16, 1x1x1x128x128, head dim 64,
 *  no mask, default scale and blocks, chip NULL. */
FA_CAPI_EXPORT faStatus faConfigInit(faConfig *config);

/** Runs the compiler's checks on `config` (compiles it to PTX for its chip,
 *  or sm_90 if chip is NULL, and discards it). Needs no GPU or driver. */
FA_CAPI_EXPORT faStatus faValidateConfig(const faConfig *config,
                                         faDirection direction);

/** A context owns the kernel cache. `cache_dir` NULL or "": the default
 *  ($FLASHMLIR_CACHE_DIR, else ~/.cache/flashmlir), created with mode 0700.
 *  A directory that cannot be created, that another user owns or that its
 *  group or others can write is not used (kernels are then cached in memory
 *  only; $FLASHMLIR_CACHE_TRUST_DIR=1 uses it anyway): the call succeeds and
 *  faContextGetLastWarning() names the path and the reason. */
FA_CAPI_EXPORT faStatus faContextCreate(const char *cache_dir, faContext *out);
/** faContextCreate() for CUDA device `device` (the driver's ordinal; 0 is
 *  what faContextCreate() takes): the kernels it compiles target that
 *  device's chip (a config's chip NULL) and are loaded and launched with its
 *  primary context current; each call leaves the calling thread's current
 *  context as it found it. `device` outside 0..63 is FA_ERROR_INVALID_ARGUMENT;
 *  a device other than 0 must exist (FA_ERROR_DRIVER otherwise: "no CUDA
 *  device 3: the driver reports 2 devices ..."). Devices of one chip share
 *  the disk cache's entries. */
FA_CAPI_EXPORT faStatus faContextCreateOnDevice(const char *cache_dir,
                                                int device, faContext *out);
/** The device of `context`; -1 for an invalid handle. */
FA_CAPI_EXPORT int faContextDevice(faContext context);
FA_CAPI_EXPORT faStatus faContextDestroy(faContext context);
/** The cache directory; NULL for an invalid handle. */
FA_CAPI_EXPORT const char *faContextCacheDir(faContext context);
/** The last error of a call on `context`; "" if none. */
FA_CAPI_EXPORT const char *faContextGetLastError(faContext context);
/** The non-fatal problem of the last faCompile() / faPrecompile() on
 *  `context` (before any, of faContextCreate()), "" if none: e.g. the cache
 *  directory is unusable or not private, so kernels stay in memory only, or
 *  a cache entry was unusable (damaged, another key's, or with metadata that
 *  does not match the config) and was rebuilt: the message says which file
 *  and why. The call itself succeeded. */
FA_CAPI_EXPORT const char *faContextGetLastWarning(faContext context);

/** JIT: compiles (or loads from the cache) the kernel of `config` and loads
 *  it on the device. Without a CUDA driver it fails with FA_ERROR_DRIVER
 *  ("no CUDA driver: ..."). Kernels outlive nothing: destroy each. */
FA_CAPI_EXPORT faStatus faCompile(faContext context, const faConfig *config,
                                  faDirection direction, faKernel *out);
/** Compiles to PTX (no driver needed; chip NULL: sm_90) and returns a kernel
 *  that carries the metadata but no code: metadata, workspace size and the
 *  argument validation of launches work; a launch that passes validation
 *  fails with "kernel is not loaded". For tests and tooling. */
FA_CAPI_EXPORT faStatus faCompileUnloaded(const faConfig *config,
                                          faDirection direction, faKernel *out);
/** Compiles `config` into the context's kernel cache (PTX, no GPU or driver
 *  needed) for config->chip (NULL: "sm_90"), under the key faCompile() looks
 *  up on a device of that chip: fills a cache on a build machine for a GPU
 *  machine without the compiler's time (the driver still assembles the PTX at
 *  load). `*cache_hit` (may be NULL) is set to 1 if it was there. */
FA_CAPI_EXPORT faStatus faPrecompile(faContext context, const faConfig *config,
                                     faDirection direction, int *cache_hit);
FA_CAPI_EXPORT faStatus faKernelDestroy(faKernel kernel);
/** The kernel's launch metadata (.meta JSON text, docs/runtime.md);
 *  NULL for an invalid handle. */
FA_CAPI_EXPORT const char *faKernelMetadata(faKernel kernel);
/** FA_FORWARD or FA_BACKWARD; -1 for an invalid handle. */
FA_CAPI_EXPORT int faKernelDirection(faKernel kernel);
/** 1 if the kernel was found in the cache (memory or disk), else 0. */
FA_CAPI_EXPORT int faKernelCacheHit(faKernel kernel);
FA_CAPI_EXPORT const char *faKernelGetLastError(faKernel kernel);

/** Bytes of device workspace faAttentionBackward() needs (256-byte aligned
 *  allocation). Fails for a forward kernel, for a varlen kernel (whose
 *  workspace is the call's: faBackwardWorkspaceBytesVarlen), and for sizes
 *  the runtime does not support (never a success with 0 bytes). */
FA_CAPI_EXPORT faStatus faBackwardWorkspaceBytes(faKernel kernel,
                                                 uint64_t *bytes);
/** The same for a call of batch `batch` and lengths `seq_q`, `seq_kv`: a
 *  backward kernel with runtime shapes sizes its workspace by the call (a
 *  kernel built for one shape: its own). Not for varlen kernels. API
 *  version 6. */
FA_CAPI_EXPORT faStatus faBackwardWorkspaceBytesShape(faKernel kernel,
                                                      int64_t batch,
                                                      int64_t seq_q,
                                                      int64_t seq_kv,
                                                      uint64_t *bytes);
/** The same for a varlen backward kernel's call on `total_q` packed query
 *  rows (the workspace holds f32 delta and dQ rows of every packed row).
 *  API version 5. */
FA_CAPI_EXPORT faStatus faBackwardWorkspaceBytesVarlen(faKernel kernel,
                                                       int64_t total_q,
                                                       uint64_t *bytes);

/** Validates the call against the kernel's metadata, then launches the
 *  forward on `stream` (asynchronous). lse (f32 [B,Hq,Nq]) may be 0 only if
 *  the kernel does not take it. */
FA_CAPI_EXPORT faStatus faAttentionForward(faKernel kernel, uint64_t q,
                                           uint64_t k, uint64_t v, uint64_t o,
                                           uint64_t lse,
                                           const faForwardStrides *strides,
                                           uint64_t stream);

/** faAttentionForward for a call of batch `batch` and lengths `seq_q`,
 *  `seq_kv`: a kernel with runtime shapes runs at them; any other kernel
 *  must have been compiled for them. */
FA_CAPI_EXPORT faStatus faAttentionForwardShape(
    faKernel kernel, int64_t batch, int64_t seq_q, int64_t seq_kv, uint64_t q,
    uint64_t k, uint64_t v, uint64_t o, uint64_t lse,
    const faForwardStrides *strides, uint64_t stream);

/** The forward of a varlen kernel on `sequences` sequences packed along N:
 *  q, k, v, o [1,H,total,D] and lse [1,Hq,total_q] (strides as
 *  faAttentionForward's; the BNHD view of a (total, H, D) tensor is
 *  strides {0, D, H*D, 1}), sequence b owning query rows [cu_seqlens_q[b],
 *  cu_seqlens_q[b+1]) and key rows [cu_seqlens_k[b], cu_seqlens_k[b+1])
 *  (int32 device arrays of sequences + 1 offsets, trusted: the kernel does
 *  not read them on the host); max_seqlen_q the longest query sequence.
 *  Rows outside every sequence are not written. */
FA_CAPI_EXPORT faStatus faAttentionForwardVarlen(
    faKernel kernel, int64_t total_q, int64_t total_kv, int64_t sequences,
    int64_t max_seqlen_q, uint64_t q, uint64_t k, uint64_t v, uint64_t o,
    uint64_t lse, uint64_t cu_seqlens_q, uint64_t cu_seqlens_k,
    const faForwardStrides *strides, uint64_t stream);

/** The forward of an FP8 kernel (FA_DTYPE_E4M3): q, k, v e4m3 [B,H,N,D]
 *  device tensors, o [B,Hq,Nq,Dv] in the config's out_dtype, lse as
 *  faAttentionForward's, and q_descale, k_descale, v_descale: f32 [B,Hkv]
 *  device arrays, the factor that takes each (batch, KV head) block's e4m3
 *  values back to its real ones (query heads of a group share q's). A
 *  kernel with runtime shapes runs at batch, seq_q, seq_kv; any other takes
 *  0 for each (or its own sizes). API version 8. */
FA_CAPI_EXPORT faStatus faAttentionForwardFP8(
    faKernel kernel, int64_t batch, int64_t seq_q, int64_t seq_kv, uint64_t q,
    uint64_t k, uint64_t v, uint64_t o, uint64_t lse, uint64_t q_descale,
    uint64_t k_descale, uint64_t v_descale, const faForwardStrides *strides,
    uint64_t stream);

/** Bytes of device workspace faQuantize() needs (4 per (batch, group));
 *  fails for an attention kernel. API version 9. */
FA_CAPI_EXPORT faStatus faQuantizeWorkspaceBytes(faKernel kernel,
                                                 uint64_t *bytes);

/** Runs a quantization kernel (FA_QUANTIZE) on `stream`: x dense [batch,
 *  heads_q, seq_q, head_dim] of the config's dtype to out (the same shape,
 *  one e4m3 byte each) and descale (f32 [batch, heads_kv]: amax / 448 of
 *  each (batch, group) block, amax of the rotated values with `rotate`),
 *  what faAttentionForwardFP8 takes. x and out 16-byte aligned;
 *  `workspace` faQuantizeWorkspaceBytes() bytes, 4-byte aligned, zeroed by
 *  the call. API version 9. */
FA_CAPI_EXPORT faStatus faQuantize(faKernel kernel, uint64_t x, uint64_t out,
                                   uint64_t descale, uint64_t workspace,
                                   uint64_t stream);

/** Validates, then launches the backward's three kernels on `stream`.
 *  `workspace`: faBackwardWorkspaceBytes() bytes, 256-byte aligned. */
FA_CAPI_EXPORT faStatus faAttentionBackward(
    faKernel kernel, uint64_t q, uint64_t k, uint64_t v, uint64_t o,
    uint64_t dout, uint64_t lse, uint64_t dq, uint64_t dk, uint64_t dv,
    uint64_t workspace, const faBackwardStrides *strides, uint64_t stream);

/** faAttentionBackward for a call of batch `batch` and lengths `seq_q`,
 *  `seq_kv`: a backward kernel set with runtime shapes runs at them
 *  (`workspace`: faBackwardWorkspaceBytesShape() bytes); any other must
 *  have been compiled for them. API version 6. */
FA_CAPI_EXPORT faStatus faAttentionBackwardShape(
    faKernel kernel, int64_t batch, int64_t seq_q, int64_t seq_kv, uint64_t q,
    uint64_t k, uint64_t v, uint64_t o, uint64_t dout, uint64_t lse,
    uint64_t dq, uint64_t dk, uint64_t dv, uint64_t workspace,
    const faBackwardStrides *strides, uint64_t stream);

/** The backward of a varlen kernel (faConfig.varlen with FA_BACKWARD) on
 *  `sequences` sequences packed along N, as faAttentionForwardVarlen's
 *  (o and lse that forward's outputs); max_seqlen_k the longest key
 *  sequence (the main kernel's grid). dk and dv rows outside every
 *  sequence are not written; dq's are written with zeros. `workspace`:
 *  faBackwardWorkspaceBytesVarlen() bytes. API version 5. */
FA_CAPI_EXPORT faStatus faAttentionBackwardVarlen(
    faKernel kernel, int64_t total_q, int64_t total_kv, int64_t sequences,
    int64_t max_seqlen_q, int64_t max_seqlen_k, uint64_t q, uint64_t k,
    uint64_t v, uint64_t o, uint64_t dout, uint64_t lse, uint64_t dq,
    uint64_t dk, uint64_t dv, uint64_t cu_seqlens_q, uint64_t cu_seqlens_k,
    uint64_t workspace, const faBackwardStrides *strides, uint64_t stream);

/** Every input of a backward launch (API version 7). Zero what a call
 *  does not use. */
typedef struct faBackwardCall {
  /** The call's batch and lengths: 0, 0, 0 for the kernel's own (a kernel
   *  built for one shape), the call's for a kernel with runtime shapes. A
   *  varlen kernel's call: batch 1, the packed rows total_q and total_kv. */
  int64_t batch, seq_q, seq_kv;
  /** Packed sequences (varlen kernels): their count, the longest query and
   *  key sequences, and the int32 offsets cu_seqlens_q/k (sequences + 1). */
  int64_t sequences, max_seqlen_q, max_seqlen_k;
  uint64_t cu_seqlens_q, cu_seqlens_k;
  uint64_t q, k, v, o, dout, lse, dq, dk, dv;
  /** The gradient of lse (f32, dense, lse's shape): required by a kernel
   *  set compiled with faConfig.grad_lse, refused by others. */
  uint64_t dlse;
  /** faBackwardWorkspaceBytes*() bytes of the call's shape. */
  uint64_t workspace;
} faBackwardCall;

/** The backward of `call` on `stream`: faAttentionBackwardShape and
 *  faAttentionBackwardVarlen in one, and the one launch that takes dlse.
 *  API version 7. */
FA_CAPI_EXPORT faStatus
faAttentionBackwardCall(faKernel kernel, const faBackwardCall *call,
                        const faBackwardStrides *strides, uint64_t stream);

#ifdef __cplusplus
}
#endif

#endif /* FA_C_FLASHMLIR_H */
