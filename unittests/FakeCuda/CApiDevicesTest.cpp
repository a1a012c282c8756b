//===- CApiDevicesTest.cpp - Contexts on several devices, fake driver -----===//
//
// The C API with FLASHMLIR_LIBCUDA=libFakeCuda.so and two devices of
// different chips (FA_FAKE_CUDA_DEVICES=sm_90,sm_80, set below before the
// library opens its driver): a context per device compiles for its device's
// chip, loads and launches there, and every call leaves the caller's
// current context as it was.
//
//===----------------------------------------------------------------------===//

#include "fa-c/FlashMLIR.h"

#include "../ScratchDir.h"
#include "FakeCuda.h"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

// The runtime opens its driver on first use, after this.
const bool fakeDriverChosen = [] {
  setenv("FLASHMLIR_LIBCUDA", FA_FAKE_CUDA_PATH, /*overwrite=*/1);
  setenv("FA_FAKE_CUDA_DEVICES", "sm_90,sm_80", 1);
  return true;
}();

/// The fake driver's read-back functions (the library the runtime opened).
struct Fake {
  long (*launchCount)() = nullptr;
  FakeCudaLaunch (*lastLaunch)() = nullptr;
  int (*currentDevice)() = nullptr;
  int (*setCurrentDevice)(int) = nullptr;

  static const Fake &get() {
    static Fake fake = [] {
      Fake f;
      const char *path = std::getenv("FLASHMLIR_LIBCUDA");
      void *handle = path ? dlopen(path, RTLD_NOW) : nullptr;
      if (!handle)
        return f;
      f.launchCount =
          reinterpret_cast<long (*)()>(dlsym(handle, "fakeCudaLaunchCount"));
      f.lastLaunch = reinterpret_cast<FakeCudaLaunch (*)()>(
          dlsym(handle, "fakeCudaLastLaunch"));
      f.currentDevice =
          reinterpret_cast<int (*)()>(dlsym(handle, "fakeCudaCurrentDevice"));
      f.setCurrentDevice = reinterpret_cast<int (*)(int)>(
          dlsym(handle, "fakeCudaSetCurrentDevice"));
      return f;
    }();
    return fake;
  }
};

bool lastErrorContains(const std::string &part) {
  return std::string(faGetLastError()).find(part) != std::string::npos;
}

class CApiDevices : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_TRUE(fakeDriverChosen);
    ASSERT_NE(Fake::get().setCurrentDevice, nullptr)
        << "cannot open " << FA_FAKE_CUDA_PATH;
    ASSERT_FALSE(dir_.empty());
  }

  fa::test::ScratchDir scratch_{"fa-capi-devices"};
  const std::string dir_ = scratch_.path();
};

/// A tiny forward problem for whatever chip the context's device has.
faConfig tinyForward() {
  faConfig c;
  EXPECT_EQ(faConfigInit(&c), FA_SUCCESS);
  c.seq_q = c.seq_kv = 128;
  c.head_dim = c.head_dim_v = 64;
  return c;
}

/// Device memory of the fake driver is host memory.
struct Buffers {
  static constexpr size_t kBytes = 128 * 64 * 2;
  void *q = std::aligned_alloc(256, kBytes),
       *k = std::aligned_alloc(256, kBytes),
       *v = std::aligned_alloc(256, kBytes),
       *o = std::aligned_alloc(256, kBytes),
       *lse = std::aligned_alloc(256, 128 * 4);
  ~Buffers() {
    for (void *p : {q, k, v, o, lse})
      std::free(p);
  }
  faStatus forward(faKernel kernel, uint64_t stream = 0) const {
    auto u = [](void *p) { return uint64_t(reinterpret_cast<uintptr_t>(p)); };
    return faAttentionForward(kernel, u(q), u(k), u(v), u(o), u(lse), nullptr,
                              stream);
  }
};

TEST_F(CApiDevices, ContextsNameTheirDevice) {
  faContext first = nullptr, second = nullptr;
  ASSERT_EQ(faContextCreate(dir_.c_str(), &first), FA_SUCCESS);
  ASSERT_EQ(faContextCreateOnDevice(dir_.c_str(), 1, &second), FA_SUCCESS);
  EXPECT_EQ(faContextDevice(first), 0);
  EXPECT_EQ(faContextDevice(second), 1);
  EXPECT_EQ(faContextDestroy(second), FA_SUCCESS);
  EXPECT_EQ(faContextDevice(second), -1);
  EXPECT_TRUE(lastErrorContains("invalid context handle"));
  EXPECT_EQ(faContextDestroy(first), FA_SUCCESS);
}

TEST_F(CApiDevices, DevicesThatDoNotExistAreRefused) {
  faContext context = reinterpret_cast<faContext>(uintptr_t(1));
  EXPECT_EQ(faContextCreateOnDevice(dir_.c_str(), 2, &context),
            FA_ERROR_DRIVER);
  EXPECT_EQ(context, nullptr);
  EXPECT_TRUE(lastErrorContains("no CUDA device 2: the driver reports 2 "
                                "devices (ordinals 0 to 1)"))
      << faGetLastError();
  for (int device : {-1, 64, 1 << 30}) {
    EXPECT_EQ(faContextCreateOnDevice(dir_.c_str(), device, &context),
              FA_ERROR_INVALID_ARGUMENT);
    EXPECT_TRUE(lastErrorContains("is not a device ordinal (0 to 63)"))
        << faGetLastError();
  }
  EXPECT_EQ(faContextCreateOnDevice(dir_.c_str(), 1, nullptr),
            FA_ERROR_INVALID_ARGUMENT);
}

TEST_F(CApiDevices, KernelsTargetAndRunOnTheirDevice) {
  const Fake &fake = Fake::get();
  faContext contexts[2] = {};
  faKernel kernels[2] = {};
  faConfig config = tinyForward();
  for (int device : {0, 1}) {
    ASSERT_EQ(faContextCreateOnDevice(dir_.c_str(), device, &contexts[device]),
              FA_SUCCESS);
    ASSERT_EQ(fake.setCurrentDevice(-1), 0);
    ASSERT_EQ(
        faCompile(contexts[device], &config, FA_FORWARD, &kernels[device]),
        FA_SUCCESS)
        << faGetLastError();
    // Loading made the device's context current for the load only.
    EXPECT_EQ(fake.currentDevice(), -1);
  }
  // The config names no chip: each context's device decides.
  EXPECT_NE(std::string(faKernelMetadata(kernels[0])).find("\"chip\": \"sm_90"),
            std::string::npos);
  EXPECT_NE(
      std::string(faKernelMetadata(kernels[1])).find("\"chip\": \"sm_80\""),
      std::string::npos);

  Buffers buffers;
  for (int caller : {-1, 0, 1}) {
    for (int device : {0, 1}) {
      ASSERT_EQ(fake.setCurrentDevice(caller), 0);
      long before = fake.launchCount();
      ASSERT_EQ(buffers.forward(kernels[device], /*stream=*/0x5000 + device),
                FA_SUCCESS)
          << faGetLastError();
      EXPECT_EQ(fake.launchCount(), before + 1);
      FakeCudaLaunch launch = fake.lastLaunch();
      EXPECT_EQ(launch.device, device) << "caller's device " << caller;
      EXPECT_EQ(launch.stream, uint64_t(0x5000 + device));
      EXPECT_EQ(fake.currentDevice(), caller);
    }
  }
  for (int device : {0, 1}) {
    EXPECT_EQ(faKernelDestroy(kernels[device]), FA_SUCCESS);
    EXPECT_EQ(faContextDestroy(contexts[device]), FA_SUCCESS);
  }
}

TEST_F(CApiDevices, BackwardSetsLaunchAllTheirKernelsOnTheirDevice) {
  const Fake &fake = Fake::get();
  faConfig config = tinyForward();
  for (int device : {1, 0}) {
    faContext context = nullptr;
    faKernel kernel = nullptr;
    ASSERT_EQ(faContextCreateOnDevice(dir_.c_str(), device, &context),
              FA_SUCCESS);
    ASSERT_EQ(faCompile(context, &config, FA_BACKWARD, &kernel), FA_SUCCESS)
        << faGetLastError();
    uint64_t workspaceBytes = 0;
    ASSERT_EQ(faBackwardWorkspaceBytes(kernel, &workspaceBytes), FA_SUCCESS);
    Buffers forward, gradients;
    void *workspace =
        std::aligned_alloc(256, (workspaceBytes + 255) / 256 * 256);
    auto u = [](void *p) { return uint64_t(reinterpret_cast<uintptr_t>(p)); };
    ASSERT_EQ(fake.setCurrentDevice(1 - device), 0);
    long before = fake.launchCount();
    EXPECT_EQ(faAttentionBackward(
                  kernel, u(forward.q), u(forward.k), u(forward.v),
                  u(forward.o), u(gradients.o), u(forward.lse), u(gradients.q),
                  u(gradients.k), u(gradients.v), u(workspace), nullptr, 0x77),
              FA_SUCCESS)
        << faGetLastError();
    // The row kernels before and after the main one, all on the device.
    EXPECT_EQ(fake.launchCount(), before + 3);
    EXPECT_EQ(fake.lastLaunch().device, device);
    EXPECT_EQ(fake.lastLaunch().stream, uint64_t(0x77));
    EXPECT_EQ(fake.currentDevice(), 1 - device);
    std::free(workspace);
    EXPECT_EQ(faKernelDestroy(kernel), FA_SUCCESS);
    EXPECT_EQ(faContextDestroy(context), FA_SUCCESS);
  }
}

TEST_F(CApiDevices, OneChipsEntriesServeEveryDeviceOfIt) {
  // Device 1 (sm_80) compiles its own kernel; a second context on it finds
  // that kernel in the disk cache.
  faConfig config = tinyForward();
  faContext first = nullptr, second = nullptr;
  faKernel a = nullptr, b = nullptr;
  ASSERT_EQ(faContextCreateOnDevice(dir_.c_str(), 1, &first), FA_SUCCESS);
  ASSERT_EQ(faCompile(first, &config, FA_FORWARD, &a), FA_SUCCESS)
      << faGetLastError();
  EXPECT_EQ(faKernelCacheHit(a), 0);
  ASSERT_EQ(faContextCreateOnDevice(dir_.c_str(), 1, &second), FA_SUCCESS);
  ASSERT_EQ(faCompile(second, &config, FA_FORWARD, &b), FA_SUCCESS)
      << faGetLastError();
  EXPECT_EQ(faKernelCacheHit(b), 1);
  EXPECT_STREQ(faKernelMetadata(a), faKernelMetadata(b));
  for (faKernel k : {a, b})
    EXPECT_EQ(faKernelDestroy(k), FA_SUCCESS);
  for (faContext c : {first, second})
    EXPECT_EQ(faContextDestroy(c), FA_SUCCESS);
}

} // namespace
