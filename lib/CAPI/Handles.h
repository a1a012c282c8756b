//===- Handles.h - The C API's handles and statuses -------------*- C++ -*-===//
//
// What the C API's translation units share: the structs behind faContext
// and faKernel, the registry that tells a live handle of either kind from
// anything else, and how a call reports its status and message.
//
//===----------------------------------------------------------------------===//

#ifndef FA_LIB_CAPI_HANDLES_H
#define FA_LIB_CAPI_HANDLES_H

#include "fa-c/FlashMLIR.h"

#include "fa/Runtime/Driver.h"
#include "fa/Runtime/Kernel.h"
#include "fa/Runtime/KernelCache.h"
#include "fa/Runtime/Metadata.h"

#include <memory>
#include <mutex>
#include <string>

struct faContext_ {
  std::unique_ptr<fa::rt::KernelCache> cache;
  /// The device its kernels are compiled for, loaded on and launched on.
  fa::rt::Driver *driver = nullptr;
  std::mutex mutex;
  std::string lastError;
  std::string lastWarning; ///< Of the last faCompile / faPrecompile.
};

struct faKernel_ {
  fa::rt::Kernel kernel;
  std::string metadataText;
  faDirection direction = FA_FORWARD;
  bool cacheHit = false;
  std::mutex mutex;
  std::string lastError;
  faKernel_(fa::rt::Kernel k) : kernel(std::move(k)) {}
};

namespace fa::capi {

/// What a registered handle points at. A handle of one kind passed where
/// the other is expected is as invalid as a destroyed one: the two structs
/// have nothing in common to read.
enum class HandleKind { Context, Kernel };

/// Whether `handle` is a live handle of `kind`.
bool isLive(const void *handle, HandleKind kind);
void registerHandle(const void *h, HandleKind kind);
/// Removes `h` if it is a live handle of `kind`; false otherwise.
bool unregisterHandle(const void *h, HandleKind kind);
/// The message for a handle that is not a live one of `kind`: names a handle
/// of the other kind as such, since that mistake is easy to make in C.
std::string invalidHandle(const char *fn, const void *handle, HandleKind kind);

/// The calling thread's last error message (faGetLastError()).
std::string &threadLastError();
/// FA_SUCCESS, clearing the thread's last error.
faStatus ok();
/// `status` with `message` as the thread's last error.
faStatus fail(faStatus status, std::string message);
/// The same, also recorded as `handle`'s last error.
template <typename H>
faStatus fail(H *handle, faStatus status, std::string message) {
  faStatus s = fail(status, std::move(message));
  std::lock_guard<std::mutex> lock(handle->mutex);
  handle->lastError = threadLastError();
  return s;
}

/// The live handles behind `k` / `c`, or null.
faKernel_ *liveKernel(faKernel k);
faContext_ *liveContext(faContext c);
/// The live kernel behind `kernel` if it is of `kind`; otherwise records
/// the error (`fn` names the caller) in `status` and returns null.
faKernel_ *kernelOfKind(faKernel kernel, rt::KernelKind kind, const char *fn,
                        faStatus &status);

} // namespace fa::capi

#endif // FA_LIB_CAPI_HANDLES_H
