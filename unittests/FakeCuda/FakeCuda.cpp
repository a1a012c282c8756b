//===- FakeCuda.cpp - A CUDA driver without a GPU, for tests
//---------------===//
//
// libFakeCuda.so exports the driver entry points the runtime resolves
// (fa/Runtime/Driver.h), so that a process given
// FLASHMLIR_LIBCUDA=<this library> runs the whole launch path — context per
// device, module loading, tensor maps, cuLaunchKernel — on a machine without
// a GPU: tests of what the runtime and the C API do around a launch, and the
// launch path's own CPU cost (tools/fa-launch-overhead).
//
// Devices: $FA_FAKE_CUDA_DEVICES, chips separated by commas ("sm_90,sm_80";
// default "sm_90"). Device memory is host memory (cuMemAlloc is
// aligned_alloc), modules and functions are tokens, a launch records what it
// was given and runs nothing. FakeCuda.h declares what tests read back.
//
//===----------------------------------------------------------------------===//

#include "FakeCuda.h"

#include <cuda.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace {

struct FakeContext {
  int device;
};

struct FakeDevice {
  int major = 9, minor = 0;
  FakeContext context;
};

std::vector<FakeDevice> &devices() {
  static std::vector<FakeDevice> all = [] {
    std::vector<FakeDevice> out;
    const char *env = std::getenv("FA_FAKE_CUDA_DEVICES");
    std::string list = env && *env ? env : "sm_90";
    size_t start = 0;
    while (start <= list.size()) {
      size_t end = list.find(',', start);
      if (end == std::string::npos)
        end = list.size();
      std::string chip = list.substr(start, end - start);
      FakeDevice d;
      int cc = chip.rfind("sm_", 0) == 0 ? std::atoi(chip.c_str() + 3) : 90;
      d.major = cc / 10;
      d.minor = cc % 10;
      d.context.device = int(out.size());
      out.push_back(d);
      start = end + 1;
    }
    return out;
  }();
  return all;
}

thread_local CUcontext current = nullptr;

int deviceOf(CUcontext c) {
  return c ? reinterpret_cast<FakeContext *>(c)->device : -1;
}

std::mutex launchMutex;
FakeCudaLaunch lastLaunch;
std::atomic<long> launchCount{0};

struct FakeFunction {
  std::string name;
};

/// A loaded module: its device and the functions looked up in it (freed
/// with it, as the driver's are).
struct FakeModule {
  int device;
  std::vector<std::unique_ptr<FakeFunction>> functions;
};

struct FakeLink {
  std::vector<char> image;
};

bool validDevice(CUdevice d) { return d >= 0 && d < int(devices().size()); }

} // namespace

extern "C" {

//===----------------------------------------------------------------------===//
// What tests read back
//===----------------------------------------------------------------------===//

long fakeCudaLaunchCount(void) { return launchCount.load(); }

FakeCudaLaunch fakeCudaLastLaunch(void) {
  std::lock_guard<std::mutex> lock(launchMutex);
  return lastLaunch;
}

int fakeCudaCurrentDevice(void) { return deviceOf(current); }

int fakeCudaSetCurrentDevice(int device) {
  if (device < 0) {
    current = nullptr;
    return 0;
  }
  if (!validDevice(device))
    return 1;
  current = reinterpret_cast<CUcontext>(&devices()[device].context);
  return 0;
}

//===----------------------------------------------------------------------===//
// Driver entry points
//===----------------------------------------------------------------------===//

CUresult cuInit(unsigned int) { return CUDA_SUCCESS; }

CUresult cuDriverGetVersion(int *version) {
  *version = 13000;
  return CUDA_SUCCESS;
}

CUresult cuGetErrorString(CUresult, const char **text) {
  *text = "fake driver error";
  return CUDA_SUCCESS;
}

CUresult cuGetErrorName(CUresult result, const char **name) {
  switch (result) {
  case CUDA_ERROR_INVALID_DEVICE:
    *name = "CUDA_ERROR_INVALID_DEVICE";
    break;
  case CUDA_ERROR_INVALID_CONTEXT:
    *name = "CUDA_ERROR_INVALID_CONTEXT";
    break;
  default:
    *name = "CUDA_ERROR_INVALID_VALUE";
  }
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count) {
  *count = int(devices().size());
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  if (!validDevice(ordinal))
    return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int length, CUdevice device) {
  if (!validDevice(device))
    return CUDA_ERROR_INVALID_DEVICE;
  std::snprintf(name, size_t(length), "FakeCuda sm_%d%d",
                devices()[device].major, devices()[device].minor);
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *value, CUdevice_attribute attribute,
                              CUdevice device) {
  if (!validDevice(device))
    return CUDA_ERROR_INVALID_DEVICE;
  switch (attribute) {
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
    *value = devices()[device].major;
    return CUDA_SUCCESS;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
    *value = devices()[device].minor;
    return CUDA_SUCCESS;
  case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
    *value = 132;
    return CUDA_SUCCESS;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
    *value = devices()[device].major >= 9 ? 232448 : 166912;
    return CUDA_SUCCESS;
  default:
    *value = 0;
    return CUDA_SUCCESS;
  }
}

CUresult cuDeviceTotalMem(size_t *bytes, CUdevice device) {
  if (!validDevice(device))
    return CUDA_ERROR_INVALID_DEVICE;
  *bytes = size_t(80) << 30;
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *context, CUdevice device) {
  if (!validDevice(device))
    return CUDA_ERROR_INVALID_DEVICE;
  *context = reinterpret_cast<CUcontext>(&devices()[device].context);
  return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext context) {
  current = context;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext *context) {
  *context = current;
  return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void) {
  return current ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

CUresult cuModuleLoadData(CUmodule *module, const void *image) {
  if (!current)
    return CUDA_ERROR_INVALID_CONTEXT;
  if (!image)
    return CUDA_ERROR_INVALID_VALUE;
  *module = reinterpret_cast<CUmodule>(new FakeModule{deviceOf(current), {}});
  return CUDA_SUCCESS;
}

CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int,
                            CUjit_option *, void **) {
  return cuModuleLoadData(module, image);
}

CUresult cuModuleUnload(CUmodule module) {
  delete reinterpret_cast<FakeModule *>(module);
  return CUDA_SUCCESS;
}

CUresult cuModuleGetFunction(CUfunction *function, CUmodule module,
                             const char *name) {
  if (!module || !name)
    return CUDA_ERROR_INVALID_VALUE;
  auto &functions = reinterpret_cast<FakeModule *>(module)->functions;
  functions.push_back(std::make_unique<FakeFunction>(FakeFunction{name}));
  *function = reinterpret_cast<CUfunction>(functions.back().get());
  return CUDA_SUCCESS;
}

CUresult cuFuncSetAttribute(CUfunction, CUfunction_attribute, int) {
  return CUDA_SUCCESS;
}

CUresult cuFuncGetAttribute(int *value, CUfunction_attribute attribute,
                            CUfunction) {
  switch (attribute) {
  case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
    *value = 1024;
    break;
  case CU_FUNC_ATTRIBUTE_NUM_REGS:
    *value = 128;
    break;
  default:
    *value = 0;
  }
  return CUDA_SUCCESS;
}

CUresult cuLaunchKernel(CUfunction function, unsigned int gridX,
                        unsigned int gridY, unsigned int gridZ,
                        unsigned int blockX, unsigned int blockY,
                        unsigned int blockZ, unsigned int sharedBytes,
                        CUstream stream, void **params, void **) {
  if (!current)
    return CUDA_ERROR_INVALID_CONTEXT;
  if (!function || !params)
    return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(launchMutex);
  lastLaunch.device = deviceOf(current);
  lastLaunch.grid[0] = gridX;
  lastLaunch.grid[1] = gridY;
  lastLaunch.grid[2] = gridZ;
  lastLaunch.block[0] = blockX;
  lastLaunch.block[1] = blockY;
  lastLaunch.block[2] = blockZ;
  lastLaunch.sharedBytes = sharedBytes;
  lastLaunch.stream = reinterpret_cast<uint64_t>(stream);
  std::snprintf(lastLaunch.entry, sizeof lastLaunch.entry, "%s",
                reinterpret_cast<FakeFunction *>(function)->name.c_str());
  launchCount.fetch_add(1);
  return CUDA_SUCCESS;
}

CUresult cuMemAlloc(CUdeviceptr *pointer, size_t bytes) {
  if (!current)
    return CUDA_ERROR_INVALID_CONTEXT;
  void *p = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (!p)
    return CUDA_ERROR_OUT_OF_MEMORY;
  *pointer = reinterpret_cast<CUdeviceptr>(p);
  return CUDA_SUCCESS;
}

CUresult cuMemFree(CUdeviceptr pointer) {
  std::free(reinterpret_cast<void *>(pointer));
  return CUDA_SUCCESS;
}

CUresult cuMemcpyHtoD(CUdeviceptr to, const void *from, size_t bytes) {
  std::memcpy(reinterpret_cast<void *>(to), from, bytes);
  return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoH(void *to, CUdeviceptr from, size_t bytes) {
  std::memcpy(to, reinterpret_cast<const void *>(from), bytes);
  return CUDA_SUCCESS;
}

CUresult cuMemsetD8(CUdeviceptr to, unsigned char value, size_t count) {
  std::memset(reinterpret_cast<void *>(to), value, count);
  return CUDA_SUCCESS;
}

CUresult cuMemsetD32Async(CUdeviceptr to, unsigned int value, size_t count,
                          CUstream) {
  auto *words = reinterpret_cast<unsigned int *>(to);
  for (size_t i = 0; i < count; ++i)
    words[i] = value;
  return CUDA_SUCCESS;
}

CUresult cuMemGetInfo(size_t *free, size_t *total) {
  *free = *total = size_t(80) << 30;
  return CUDA_SUCCESS;
}

CUresult cuStreamSynchronize(CUstream) { return CUDA_SUCCESS; }

CUresult cuEventCreate(CUevent *event, unsigned int) {
  *event = reinterpret_cast<CUevent>(new int(0));
  return CUDA_SUCCESS;
}

CUresult cuEventRecord(CUevent, CUstream) { return CUDA_SUCCESS; }

CUresult cuEventSynchronize(CUevent) { return CUDA_SUCCESS; }

CUresult cuEventElapsedTime(float *ms, CUevent, CUevent) {
  *ms = 0.001f;
  return CUDA_SUCCESS;
}

CUresult cuEventDestroy(CUevent event) {
  delete reinterpret_cast<int *>(event);
  return CUDA_SUCCESS;
}

CUresult cuLinkCreate(unsigned int, CUjit_option *, void **,
                      CUlinkState *state) {
  *state = reinterpret_cast<CUlinkState>(new FakeLink);
  return CUDA_SUCCESS;
}

CUresult cuLinkAddData(CUlinkState state, CUjitInputType, void *data,
                       size_t size, const char *, unsigned int, CUjit_option *,
                       void **) {
  if (!state || !data)
    return CUDA_ERROR_INVALID_VALUE;
  // An "ELF" image: the kernel cache checks a cubin's magic number.
  auto *link = reinterpret_cast<FakeLink *>(state);
  link->image.assign({'\x7f', 'E', 'L', 'F'});
  link->image.insert(link->image.end(), static_cast<const char *>(data),
                     static_cast<const char *>(data) + size);
  return CUDA_SUCCESS;
}

CUresult cuLinkComplete(CUlinkState state, void **image, size_t *size) {
  auto *link = reinterpret_cast<FakeLink *>(state);
  *image = link->image.data();
  *size = link->image.size();
  return CUDA_SUCCESS;
}

CUresult cuLinkDestroy(CUlinkState state) {
  delete reinterpret_cast<FakeLink *>(state);
  return CUDA_SUCCESS;
}

CUresult cuTensorMapEncodeTiled(CUtensorMap *map, CUtensorMapDataType,
                                cuuint32_t, void *address, const cuuint64_t *,
                                const cuuint64_t *, const cuuint32_t *,
                                const cuuint32_t *, CUtensorMapInterleave,
                                CUtensorMapSwizzle, CUtensorMapL2promotion,
                                CUtensorMapFloatOOBfill) {
  // As the real driver: encoding needs a current context.
  if (!current)
    return CUDA_ERROR_INVALID_CONTEXT;
  if (!map || reinterpret_cast<uintptr_t>(address) % 16 != 0)
    return CUDA_ERROR_INVALID_VALUE;
  std::memset(map, 0, sizeof *map);
  std::memcpy(map, &address, sizeof address);
  return CUDA_SUCCESS;
}

} // extern "C"
