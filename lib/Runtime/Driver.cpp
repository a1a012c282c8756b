//===- Driver.cpp - The CUDA driver, loaded at run time -------------------===//

#include "fa/Runtime/Driver.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <initializer_list>

namespace fa::rt {

namespace {

/// Resolves the first of `names` that the library exports.
template <typename Fn>
bool resolve(void *handle, Fn &fn, std::initializer_list<const char *> names) {
  for (const char *name : names) {
    if (void *sym = dlsym(handle, name)) {
      fn = reinterpret_cast<Fn>(sym);
      return true;
    }
  }
  return false;
}

} // namespace

std::string DeviceInfo::chip() const {
  return "sm_" + std::to_string(ccMajor * 10 + ccMinor);
}

std::string DeviceInfo::describe() const {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "%s (%s, %d SMs, %.0f GiB, %d KiB shared/block), driver "
                "%d.%d",
                name.c_str(), chip().c_str(), multiprocessors,
                double(totalMemory) / (1024.0 * 1024 * 1024),
                maxSharedPerBlockOptin / 1024, driverVersion / 1000,
                (driverVersion % 1000) / 10);
  return buf;
}

Driver &Driver::get(int ordinal) {
  // Deliberately leaked: device memory owned by static objects may be freed
  // during exit, after function-local statics would have been destroyed.
  if (ordinal < 0 || ordinal >= kMaxDevices) {
    static Driver *outOfRange = new Driver("", -1);
    return *outOfRange;
  }
  static std::mutex mutex;
  static Driver *drivers[kMaxDevices] = {};
  std::lock_guard<std::mutex> lock(mutex);
  if (!drivers[ordinal]) {
    const char *env = std::getenv("FLASHMLIR_LIBCUDA");
    drivers[ordinal] = new Driver(env && *env ? env : "libcuda.so.1", ordinal);
  }
  return *drivers[ordinal];
}

Driver::Driver(std::string libraryName, int ordinal)
    : libraryName_(std::move(libraryName)), ordinal_(ordinal) {
  if (ordinal < 0 || ordinal >= kMaxDevices) {
    loadStatus_ = Status::error("no CUDA device: device ordinals are 0 to " +
                                std::to_string(kMaxDevices - 1));
    return;
  }
  dlerror();
  handle_ = dlopen(libraryName_.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) {
    const char *why = dlerror();
    loadStatus_ = Status::error("no CUDA driver: dlopen(" + libraryName_ +
                                ") failed: " + (why ? why : "unknown error"));
    return;
  }
  std::string missing;
  auto need = [&](auto &fn, std::initializer_list<const char *> names) {
    if (!resolve(handle_, fn, names))
      missing += (missing.empty() ? "" : ", ") + std::string(*names.begin());
  };
  DriverApi &a = api_;
  need(a.init, {"cuInit"});
  need(a.driverGetVersion, {"cuDriverGetVersion"});
  need(a.getErrorString, {"cuGetErrorString"});
  need(a.getErrorName, {"cuGetErrorName"});
  need(a.deviceGetCount, {"cuDeviceGetCount"});
  need(a.deviceGet, {"cuDeviceGet"});
  need(a.deviceGetName, {"cuDeviceGetName"});
  need(a.deviceGetAttribute, {"cuDeviceGetAttribute"});
  need(a.deviceTotalMem, {"cuDeviceTotalMem_v2"});
  need(a.devicePrimaryCtxRetain, {"cuDevicePrimaryCtxRetain"});
  need(a.ctxSetCurrent, {"cuCtxSetCurrent"});
  need(a.ctxGetCurrent, {"cuCtxGetCurrent"});
  need(a.ctxSynchronize, {"cuCtxSynchronize"});
  need(a.moduleLoadData, {"cuModuleLoadData"});
  need(a.moduleLoadDataEx, {"cuModuleLoadDataEx"});
  need(a.moduleUnload, {"cuModuleUnload"});
  need(a.moduleGetFunction, {"cuModuleGetFunction"});
  need(a.funcSetAttribute, {"cuFuncSetAttribute"});
  need(a.funcGetAttribute, {"cuFuncGetAttribute"});
  need(a.launchKernel, {"cuLaunchKernel"});
  need(a.memAlloc, {"cuMemAlloc_v2"});
  need(a.memFree, {"cuMemFree_v2"});
  need(a.memcpyHtoD, {"cuMemcpyHtoD_v2"});
  need(a.memcpyDtoH, {"cuMemcpyDtoH_v2"});
  need(a.memsetD8, {"cuMemsetD8_v2"});
  need(a.memsetD32Async, {"cuMemsetD32Async"});
  need(a.memGetInfo, {"cuMemGetInfo_v2"});
  need(a.streamSynchronize, {"cuStreamSynchronize"});
  need(a.eventCreate, {"cuEventCreate"});
  need(a.eventRecord, {"cuEventRecord"});
  need(a.eventSynchronize, {"cuEventSynchronize"});
  // cuEventElapsedTime_v2 exists from CUDA 12.8 on; same signature.
  need(a.eventElapsedTime, {"cuEventElapsedTime_v2", "cuEventElapsedTime"});
  need(a.eventDestroy, {"cuEventDestroy_v2"});
  need(a.linkCreate, {"cuLinkCreate_v2"});
  need(a.linkAddData, {"cuLinkAddData_v2"});
  need(a.linkComplete, {"cuLinkComplete"});
  need(a.linkDestroy, {"cuLinkDestroy"});
  resolve(handle_, a.tensorMapEncodeTiled, {"cuTensorMapEncodeTiled"});
  if (!missing.empty())
    loadStatus_ = Status::error("CUDA driver " + libraryName_ +
                                " lacks entry points (too old?): " + missing);
}

Driver::~Driver() {
  // The primary context is left to the driver's exit handling; only close a
  // library that was never initialized (tests' private Driver objects).
  if (handle_ && !initDone_)
    dlclose(handle_);
}

Status Driver::check(CUresult result, const char *call) const {
  if (result == CUDA_SUCCESS)
    return Status::success();
  const char *name = nullptr, *text = nullptr;
  if (api_.getErrorName)
    api_.getErrorName(result, &name);
  if (api_.getErrorString)
    api_.getErrorString(result, &text);
  std::string msg = std::string(call) + " failed: ";
  msg += name ? name : ("CUresult " + std::to_string(int(result)));
  if (text)
    msg += std::string(" (") + text + ")";
  return Status::error(msg);
}

Status Driver::initialize() {
  std::lock_guard<std::mutex> lock(initMutex_);
  if (initDone_)
    return initStatus_;
  initDone_ = true;
  initStatus_ = [&]() -> Status {
    if (!loaded())
      return loadStatus_;
    const DriverApi &a = api_;
    FA_RT_RETURN_IF_ERROR(check(a.init(0), "cuInit"));
    FA_RT_RETURN_IF_ERROR(check(a.driverGetVersion(&device_.driverVersion),
                                "cuDriverGetVersion"));
    int count = 0;
    FA_RT_RETURN_IF_ERROR(check(a.deviceGetCount(&count), "cuDeviceGetCount"));
    if (count <= 0)
      return Status::error("no CUDA device: the driver reports 0 devices");
    if (ordinal_ < 0 || ordinal_ >= count)
      return Status::error("no CUDA device " + std::to_string(ordinal_) +
                           ": the driver reports " + std::to_string(count) +
                           (count == 1 ? " device" : " devices") +
                           " (ordinals 0 to " + std::to_string(count - 1) +
                           ")");
    device_.ordinal = ordinal_;
    FA_RT_RETURN_IF_ERROR(
        check(a.deviceGet(&cuDevice_, ordinal_), "cuDeviceGet"));
    char name[256] = {};
    FA_RT_RETURN_IF_ERROR(check(
        a.deviceGetName(name, sizeof name - 1, cuDevice_), "cuDeviceGetName"));
    device_.name = name;
    auto attr = [&](CUdevice_attribute which, int &out) {
      return check(a.deviceGetAttribute(&out, which, cuDevice_),
                   "cuDeviceGetAttribute");
    };
    FA_RT_RETURN_IF_ERROR(
        attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device_.ccMajor));
    FA_RT_RETURN_IF_ERROR(
        attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device_.ccMinor));
    FA_RT_RETURN_IF_ERROR(attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                               device_.multiprocessors));
    FA_RT_RETURN_IF_ERROR(
        attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
             device_.maxSharedPerBlockOptin));
    FA_RT_RETURN_IF_ERROR(check(
        a.deviceTotalMem(&device_.totalMemory, cuDevice_), "cuDeviceTotalMem"));
    return check(a.devicePrimaryCtxRetain(&context_, cuDevice_),
                 "cuDevicePrimaryCtxRetain");
  }();
  return initStatus_;
}

//===----------------------------------------------------------------------===//
// ContextScope
//===----------------------------------------------------------------------===//

ContextScope::ContextScope(Driver &driver) : driver_(driver) {
  status_ = driver_.initialize();
  if (!status_.ok())
    return;
  const DriverApi &a = driver_.api_;
  status_ = driver_.check(a.ctxGetCurrent(&previous_), "cuCtxGetCurrent");
  if (!status_.ok() || previous_ == driver_.context_)
    return;
  status_ = driver_.check(a.ctxSetCurrent(driver_.context_), "cuCtxSetCurrent");
  switched_ = status_.ok();
}

ContextScope::~ContextScope() {
  if (switched_)
    (void)driver_.api_.ctxSetCurrent(previous_);
}

//===----------------------------------------------------------------------===//
// DeviceBuffer
//===----------------------------------------------------------------------===//

StatusOr<DeviceBuffer> DeviceBuffer::allocate(size_t bytes, Driver &driver) {
  ContextScope scope(driver);
  FA_RT_RETURN_IF_ERROR(scope.status());
  if (bytes == 0)
    return Status::error("cannot allocate a 0-byte device buffer");
  DeviceBuffer buffer;
  CUresult r = driver.api().memAlloc(&buffer.ptr_, bytes);
  if (r != CUDA_SUCCESS)
    return driver.check(r, "cuMemAlloc")
        .withContext("allocating " + std::to_string(bytes) + " bytes");
  buffer.driver_ = &driver;
  buffer.size_ = bytes;
  return buffer;
}

void DeviceBuffer::reset() {
  if (ptr_ && driver_) {
    ContextScope scope(*driver_);
    if (scope.status().ok())
      (void)driver_->api().memFree(ptr_);
  }
  ptr_ = 0;
  size_ = 0;
  driver_ = nullptr;
}

DeviceBuffer::~DeviceBuffer() { reset(); }

DeviceBuffer::DeviceBuffer(DeviceBuffer &&other) noexcept
    : driver_(other.driver_), ptr_(other.ptr_), size_(other.size_) {
  other.driver_ = nullptr;
  other.ptr_ = 0;
  other.size_ = 0;
}

DeviceBuffer &DeviceBuffer::operator=(DeviceBuffer &&other) noexcept {
  if (this != &other) {
    reset();
    driver_ = other.driver_;
    ptr_ = other.ptr_;
    size_ = other.size_;
    other.driver_ = nullptr;
    other.ptr_ = 0;
    other.size_ = 0;
  }
  return *this;
}

Status DeviceBuffer::upload(const void *host, size_t bytes, size_t offset) {
  if (!ptr_)
    return Status::error("upload to an empty device buffer");
  if (offset > size_ || bytes > size_ - offset)
    return Status::error("upload of " + std::to_string(bytes) +
                         " bytes at offset " + std::to_string(offset) +
                         " exceeds the buffer's " + std::to_string(size_));
  ContextScope scope(*driver_);
  FA_RT_RETURN_IF_ERROR(scope.status());
  return driver_->check(driver_->api().memcpyHtoD(ptr_ + offset, host, bytes),
                        "cuMemcpyHtoD");
}

Status DeviceBuffer::download(void *host, size_t bytes, size_t offset) const {
  if (!ptr_)
    return Status::error("download from an empty device buffer");
  if (offset > size_ || bytes > size_ - offset)
    return Status::error("download of " + std::to_string(bytes) +
                         " bytes at offset " + std::to_string(offset) +
                         " exceeds the buffer's " + std::to_string(size_));
  ContextScope scope(*driver_);
  FA_RT_RETURN_IF_ERROR(scope.status());
  return driver_->check(driver_->api().memcpyDtoH(host, ptr_ + offset, bytes),
                        "cuMemcpyDtoH");
}

Status DeviceBuffer::fill(unsigned char value) {
  if (!ptr_)
    return Status::error("fill of an empty device buffer");
  ContextScope scope(*driver_);
  FA_RT_RETURN_IF_ERROR(scope.status());
  FA_RT_RETURN_IF_ERROR(driver_->check(
      driver_->api().memsetD8(ptr_, value, size_), "cuMemsetD8"));
  // cuMemsetD8 is asynchronous with respect to the host for device memory;
  // make fill() synchronous like the copies.
  return driver_->check(driver_->api().ctxSynchronize(), "cuCtxSynchronize");
}

//===----------------------------------------------------------------------===//
// Event
//===----------------------------------------------------------------------===//

StatusOr<Event> Event::create(Driver &driver) {
  ContextScope scope(driver);
  FA_RT_RETURN_IF_ERROR(scope.status());
  Event event;
  CUresult r = driver.api().eventCreate(&event.event_, CU_EVENT_DEFAULT);
  if (r != CUDA_SUCCESS)
    return driver.check(r, "cuEventCreate");
  event.driver_ = &driver;
  return event;
}

void Event::reset() {
  if (event_ && driver_) {
    ContextScope scope(*driver_);
    if (scope.status().ok())
      (void)driver_->api().eventDestroy(event_);
  }
  event_ = nullptr;
  driver_ = nullptr;
}

Event::~Event() { reset(); }

Event::Event(Event &&other) noexcept
    : driver_(other.driver_), event_(other.event_) {
  other.driver_ = nullptr;
  other.event_ = nullptr;
}

Event &Event::operator=(Event &&other) noexcept {
  if (this != &other) {
    reset();
    driver_ = other.driver_;
    event_ = other.event_;
    other.driver_ = nullptr;
    other.event_ = nullptr;
  }
  return *this;
}

Status Event::record(CUstream stream) {
  if (!event_)
    return Status::error("record of an empty event");
  ContextScope scope(*driver_);
  FA_RT_RETURN_IF_ERROR(scope.status());
  return driver_->check(driver_->api().eventRecord(event_, stream),
                        "cuEventRecord");
}

Status Event::synchronize() {
  if (!event_)
    return Status::error("synchronize of an empty event");
  ContextScope scope(*driver_);
  FA_RT_RETURN_IF_ERROR(scope.status());
  return driver_->check(driver_->api().eventSynchronize(event_),
                        "cuEventSynchronize");
}

StatusOr<float> Event::elapsedMs(const Event &start, const Event &end) {
  if (!start.event_ || !end.event_)
    return Status::error("elapsed time of an empty event");
  Driver &driver = *start.driver_;
  ContextScope scope(driver);
  FA_RT_RETURN_IF_ERROR(scope.status());
  float ms = 0;
  CUresult r = driver.api().eventElapsedTime(&ms, start.event_, end.event_);
  if (r != CUDA_SUCCESS)
    return driver.check(r, "cuEventElapsedTime");
  return ms;
}

Status synchronize(CUstream stream, Driver &driver) {
  ContextScope scope(driver);
  FA_RT_RETURN_IF_ERROR(scope.status());
  return driver.check(driver.api().streamSynchronize(stream),
                      "cuStreamSynchronize");
}

} // namespace fa::rt
