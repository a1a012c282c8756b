//===- Driver.h - The CUDA driver, loaded at run time -----------*- C++ -*-===//
//
// The runtime never links libcuda: the driver library is opened with
// dlopen("libcuda.so.1") the first time it is needed and every entry point is
// looked up with dlsym. A process without a driver (or without a GPU) gets an
// error Status from every call that needs the device, never a crash or a link
// error. cuda.h is included for its types only.
//
// Environment:
//   FLASHMLIR_LIBCUDA  path or name of the driver library to dlopen instead
//                      of "libcuda.so.1".
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUNTIME_DRIVER_H
#define FA_RUNTIME_DRIVER_H

#include "fa/Runtime/Status.h"

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>

namespace fa::rt {

/// The driver entry points the runtime uses, resolved with dlsym (the _v2
/// variants where cuda.h maps a name to one).
struct DriverApi {
  CUresult (*init)(unsigned int) = nullptr;
  CUresult (*driverGetVersion)(int *) = nullptr;
  CUresult (*getErrorString)(CUresult, const char **) = nullptr;
  CUresult (*getErrorName)(CUresult, const char **) = nullptr;
  CUresult (*deviceGetCount)(int *) = nullptr;
  CUresult (*deviceGet)(CUdevice *, int) = nullptr;
  CUresult (*deviceGetName)(char *, int, CUdevice) = nullptr;
  CUresult (*deviceGetAttribute)(int *, CUdevice_attribute, CUdevice) = nullptr;
  CUresult (*deviceTotalMem)(size_t *, CUdevice) = nullptr;
  CUresult (*devicePrimaryCtxRetain)(CUcontext *, CUdevice) = nullptr;
  CUresult (*ctxSetCurrent)(CUcontext) = nullptr;
  CUresult (*ctxGetCurrent)(CUcontext *) = nullptr;
  CUresult (*ctxSynchronize)() = nullptr;
  CUresult (*moduleLoadData)(CUmodule *, const void *) = nullptr;
  CUresult (*moduleLoadDataEx)(CUmodule *, const void *, unsigned int,
                               CUjit_option *, void **) = nullptr;
  CUresult (*moduleUnload)(CUmodule) = nullptr;
  CUresult (*moduleGetFunction)(CUfunction *, CUmodule, const char *) = nullptr;
  CUresult (*funcSetAttribute)(CUfunction, CUfunction_attribute, int) = nullptr;
  CUresult (*funcGetAttribute)(int *, CUfunction_attribute,
                               CUfunction) = nullptr;
  CUresult (*launchKernel)(CUfunction, unsigned int, unsigned int, unsigned int,
                           unsigned int, unsigned int, unsigned int,
                           unsigned int, CUstream, void **, void **) = nullptr;
  CUresult (*memAlloc)(CUdeviceptr *, size_t) = nullptr;
  CUresult (*memFree)(CUdeviceptr) = nullptr;
  CUresult (*memcpyHtoD)(CUdeviceptr, const void *, size_t) = nullptr;
  CUresult (*memcpyDtoH)(void *, CUdeviceptr, size_t) = nullptr;
  CUresult (*memsetD8)(CUdeviceptr, unsigned char, size_t) = nullptr;
  CUresult (*memsetD32Async)(CUdeviceptr, unsigned int, size_t,
                             CUstream) = nullptr;
  CUresult (*memGetInfo)(size_t *, size_t *) = nullptr;
  CUresult (*streamSynchronize)(CUstream) = nullptr;
  CUresult (*eventCreate)(CUevent *, unsigned int) = nullptr;
  CUresult (*eventRecord)(CUevent, CUstream) = nullptr;
  CUresult (*eventSynchronize)(CUevent) = nullptr;
  CUresult (*eventElapsedTime)(float *, CUevent, CUevent) = nullptr;
  CUresult (*eventDestroy)(CUevent) = nullptr;
  CUresult (*linkCreate)(unsigned int, CUjit_option *, void **,
                         CUlinkState *) = nullptr;
  CUresult (*linkAddData)(CUlinkState, CUjitInputType, void *, size_t,
                          const char *, unsigned int, CUjit_option *,
                          void **) = nullptr;
  CUresult (*linkComplete)(CUlinkState, void **, size_t *) = nullptr;
  CUresult (*linkDestroy)(CUlinkState) = nullptr;
  /// Optional (CUDA 12.0+, TMA): null when the driver lacks it.
  CUresult (*tensorMapEncodeTiled)(CUtensorMap *, CUtensorMapDataType,
                                   cuuint32_t, void *, const cuuint64_t *,
                                   const cuuint64_t *, const cuuint32_t *,
                                   const cuuint32_t *, CUtensorMapInterleave,
                                   CUtensorMapSwizzle, CUtensorMapL2promotion,
                                   CUtensorMapFloatOOBfill) = nullptr;
};

/// Properties of a device the runtime uses.
struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  int ccMajor = 0, ccMinor = 0;
  int multiprocessors = 0;
  int maxSharedPerBlockOptin = 0; ///< Bytes of dynamic+static shared memory.
  size_t totalMemory = 0;
  int driverVersion = 0; ///< e.g. 13000 for CUDA 13.0.

  /// "sm_90" for compute capability 9.0.
  std::string chip() const;
  /// One line: "NVIDIA H200 (sm_90, 132 SMs, 140 GiB), driver 13.0".
  std::string describe() const;
};

/// The CUDA driver library and the process's context on one device (the
/// device's primary context: the one the CUDA runtime and PyTorch use).
class Driver {
public:
  /// Devices a process may name (ordinals 0 .. kMaxDevices - 1).
  static constexpr int kMaxDevices = 64;

  /// The process-wide driver of device `ordinal`, opened on first use from
  /// $FLASHMLIR_LIBCUDA or "libcuda.so.1". Never destroyed (it must outlive
  /// every static object that frees device memory). Whether the device
  /// exists is initialize()'s answer; an ordinal outside 0..kMaxDevices-1
  /// gets a driver that is not loaded (loadStatus() says why).
  static Driver &get(int ordinal = 0);

  /// Opens the given driver library (a name for the dynamic loader's search
  /// or a path) for device `ordinal`. Tests use this to get a driver that is
  /// deterministically absent. Does not call cuInit. An ordinal outside
  /// 0..kMaxDevices-1 opens nothing: the driver is not loaded.
  explicit Driver(std::string libraryName, int ordinal = 0);
  ~Driver();
  Driver(const Driver &) = delete;
  Driver &operator=(const Driver &) = delete;

  /// Whether the library was opened and every required entry point found.
  bool loaded() const { return loadStatus_.ok(); }
  /// Why the library is unusable, e.g. "no CUDA driver: dlopen(libcuda.so.1)
  /// failed: libcuda.so.1: cannot open shared object file: ...".
  const Status &loadStatus() const { return loadStatus_; }

  /// Calls cuInit, picks the device and retains its primary context. Runs
  /// once; later calls return the first result. Thread-safe.
  Status initialize();

  /// The device ordinal this driver object talks to.
  int ordinal() const { return ordinal_; }

  /// The device's properties; valid after a successful initialize().
  const DeviceInfo &device() const { return device_; }
  /// The entry points; only valid when loaded().
  const DriverApi &api() const { return api_; }
  const std::string &libraryName() const { return libraryName_; }

  /// ok if `result` is CUDA_SUCCESS, else an error
  /// "<call> failed: CUDA_ERROR_X (<cuGetErrorString text>)".
  Status check(CUresult result, const char *call) const;

private:
  friend class ContextScope;

  std::string libraryName_;
  void *handle_ = nullptr;
  DriverApi api_;
  Status loadStatus_;

  std::mutex initMutex_;
  bool initDone_ = false;
  Status initStatus_;
  int ordinal_ = 0;
  CUdevice cuDevice_ = 0;
  CUcontext context_ = nullptr;
  DeviceInfo device_;
};

/// The driver's context made current on the calling thread for the scope's
/// life (initializing the driver first), and the thread's previous context
/// current again at its end: a launch on device 1 from a thread where
/// PyTorch made device 0's context current leaves device 0's current. Every
/// operation that talks to the device holds one; nested scopes cost one
/// cuCtxGetCurrent.
class ContextScope {
public:
  explicit ContextScope(Driver &driver);
  ~ContextScope();
  ContextScope(const ContextScope &) = delete;
  ContextScope &operator=(const ContextScope &) = delete;

  /// Success, or why the context could not be made current.
  const Status &status() const { return status_; }

private:
  Driver &driver_;
  CUcontext previous_ = nullptr;
  bool switched_ = false;
  Status status_;
};

/// Device memory from cuMemAlloc, freed on destruction. Move-only.
class DeviceBuffer {
public:
  DeviceBuffer() = default;
  static StatusOr<DeviceBuffer> allocate(size_t bytes,
                                         Driver &driver = Driver::get());
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer &&other) noexcept;
  DeviceBuffer &operator=(DeviceBuffer &&other) noexcept;
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;

  CUdeviceptr ptr() const { return ptr_; }
  size_t size() const { return size_; }

  /// Synchronous copies; [offset, offset + bytes) must lie in the buffer.
  Status upload(const void *host, size_t bytes, size_t offset = 0);
  Status download(void *host, size_t bytes, size_t offset = 0) const;
  /// Sets every byte of the buffer to `value` (synchronous).
  Status fill(unsigned char value);

private:
  void reset();
  Driver *driver_ = nullptr;
  CUdeviceptr ptr_ = 0;
  size_t size_ = 0;
};

/// A CUDA event (with timing), destroyed on destruction. Move-only.
class Event {
public:
  Event() = default;
  static StatusOr<Event> create(Driver &driver = Driver::get());
  ~Event();
  Event(Event &&other) noexcept;
  Event &operator=(Event &&other) noexcept;
  Event(const Event &) = delete;
  Event &operator=(const Event &) = delete;

  Status record(CUstream stream = nullptr);
  Status synchronize();
  /// Milliseconds between two recorded, completed events.
  static StatusOr<float> elapsedMs(const Event &start, const Event &end);

private:
  void reset();
  Driver *driver_ = nullptr;
  CUevent event_ = nullptr;
};

/// Waits for all work on `stream` (nullptr: the legacy default stream).
Status synchronize(CUstream stream = nullptr, Driver &driver = Driver::get());

} // namespace fa::rt

#endif // FA_RUNTIME_DRIVER_H
