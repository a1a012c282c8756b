//===- Handles.cpp - The C API's handles and statuses ---------------------===//

#include "Handles.h"

#include <unordered_map>

using namespace fa;

namespace fa::capi {

std::string &threadLastError() {
  thread_local std::string message;
  return message;
}

namespace {

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

} // namespace

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
  threadLastError().clear();
  return FA_SUCCESS;
}
faStatus fail(faStatus status, std::string message) {
  if (message.empty())
    message = "unknown error";
  threadLastError() = std::move(message);
  return status;
}

faKernel_ *liveKernel(faKernel k) {
  return isLive(k, HandleKind::Kernel) ? static_cast<faKernel_ *>(k) : nullptr;
}

faContext_ *liveContext(faContext c) {
  return isLive(c, HandleKind::Context) ? static_cast<faContext_ *>(c)
                                        : nullptr;
}

/// The live kernel behind `kernel` if it is of `kind`; otherwise records
/// the error (`fn` names the caller) in `status` and returns null.
faKernel_ *kernelOfKind(faKernel kernel, rt::KernelKind kind,
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
             std::string(fn) + ": not a " + rt::toString(kind) + " kernel");
    return nullptr;
  }
  return k;
}

} // namespace fa::capi
