//===- Kernel.cpp - Loading kernels from PTX or cubin ---------------------===//

#include "fa/Runtime/Kernel.h"
#include "fa/Runtime/KernelCache.h"
#include "fa/Runtime/Sha256.h"

#include <vector>

namespace fa::rt {

namespace {

constexpr size_t kLogBytes = 1 << 16;

/// The text of a JIT log buffer (NUL-terminated, possibly empty).
std::string logText(const std::vector<char> &buffer) {
  std::string s(buffer.data());
  while (!s.empty() && (s.back() == '\n' || s.back() == ' '))
    s.pop_back();
  return s;
}

/// Appends a JIT error log to an error message.
Status withLog(Status status, const std::string &log) {
  if (status.ok() || log.empty())
    return status;
  return Status::error(status.message() + "\nJIT log:\n" + log);
}

/// Whether a kernel compiled for metadata.chip can run on the device.
Status checkChip(const KernelMetadata &metadata, const Driver &driver) {
  int want = metadata.chipVersion();
  const DeviceInfo &dev = driver.device();
  int have = dev.ccMajor * 10 + dev.ccMinor;
  if (want < 0)
    return Status::error("bad chip '" + metadata.chip + "' in the metadata");
  if (metadata.chipIsArchSpecific() ? want != have : want > have)
    return Status::error("kernel is compiled for " + metadata.chip +
                         " but the device is " + dev.chip() + " (" + dev.name +
                         ")");
  return Status::success();
}

} // namespace

//===----------------------------------------------------------------------===//
// Module
//===----------------------------------------------------------------------===//

StatusOr<Module> Module::loadImage(const void *image, bool isPTX,
                                   Driver &driver) {
  ContextScope scope(driver);
  FA_RT_RETURN_IF_ERROR(scope.status());
  std::vector<char> info(kLogBytes, 0), error(kLogBytes, 0);
  CUjit_option options[] = {
      CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
      CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {
      info.data(), reinterpret_cast<void *>(uintptr_t(kLogBytes - 1)),
      error.data(), reinterpret_cast<void *>(uintptr_t(kLogBytes - 1))};
  Module module;
  CUresult r = driver.api().moduleLoadDataEx(&module.module_, image,
                                             sizeof options / sizeof options[0],
                                             options, values);
  if (r != CUDA_SUCCESS) {
    module.module_ = nullptr;
    return withLog(driver.check(r, "cuModuleLoadDataEx"), logText(error))
        .withContext(isPTX ? "loading PTX" : "loading cubin");
  }
  module.driver_ = &driver;
  module.jitLog_ = logText(info);
  return module;
}

StatusOr<Module> Module::loadPTX(std::string_view ptx, Driver &driver) {
  if (ptx.empty())
    return Status::error("loading PTX: the PTX text is empty");
  std::string text(ptx); // The driver wants a NUL-terminated string.
  return loadImage(text.c_str(), /*isPTX=*/true, driver);
}

StatusOr<Module> Module::loadCubin(const void *image, size_t size,
                                   Driver &driver) {
  if (!image || size < 16)
    return Status::error("loading cubin: the image is empty");
  return loadImage(image, /*isPTX=*/false, driver);
}

void Module::reset() {
  if (module_ && driver_) {
    ContextScope scope(*driver_);
    if (scope.status().ok())
      (void)driver_->api().moduleUnload(module_);
  }
  module_ = nullptr;
  driver_ = nullptr;
  jitLog_.clear();
}

Module::~Module() { reset(); }

Module::Module(Module &&other) noexcept
    : driver_(other.driver_), module_(other.module_),
      jitLog_(std::move(other.jitLog_)) {
  other.driver_ = nullptr;
  other.module_ = nullptr;
}

Module &Module::operator=(Module &&other) noexcept {
  if (this != &other) {
    reset();
    driver_ = other.driver_;
    module_ = other.module_;
    jitLog_ = std::move(other.jitLog_);
    other.driver_ = nullptr;
    other.module_ = nullptr;
  }
  return *this;
}

StatusOr<CUfunction> Module::function(const std::string &name) const {
  if (!module_)
    return Status::error("looking up '" + name + "' in an empty module");
  ContextScope scope(*driver_);
  FA_RT_RETURN_IF_ERROR(scope.status());
  CUfunction fn = nullptr;
  CUresult r = driver_->api().moduleGetFunction(&fn, module_, name.c_str());
  if (r != CUDA_SUCCESS)
    return driver_->check(r, "cuModuleGetFunction")
        .withContext("kernel entry '" + name + "' not found in the module");
  return fn;
}

Status compilePTXToCubin(std::string_view ptx, std::string &cubin,
                         Driver &driver) {
  if (ptx.empty())
    return Status::error("compiling PTX: the PTX text is empty");
  ContextScope scope(driver);
  FA_RT_RETURN_IF_ERROR(scope.status());
  const DriverApi &a = driver.api();
  std::vector<char> info(kLogBytes, 0), error(kLogBytes, 0);
  CUjit_option options[] = {
      CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
      CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {
      info.data(), reinterpret_cast<void *>(uintptr_t(kLogBytes - 1)),
      error.data(), reinterpret_cast<void *>(uintptr_t(kLogBytes - 1))};
  CUlinkState state = nullptr;
  FA_RT_RETURN_IF_ERROR(driver.check(
      a.linkCreate(sizeof options / sizeof options[0], options, values, &state),
      "cuLinkCreate"));
  std::string text(ptx);
  Status status = driver.check(a.linkAddData(state, CU_JIT_INPUT_PTX,
                                             text.data(), text.size() + 1,
                                             "kernel.ptx", 0, nullptr, nullptr),
                               "cuLinkAddData");
  if (status.ok()) {
    void *image = nullptr;
    size_t size = 0;
    status =
        driver.check(a.linkComplete(state, &image, &size), "cuLinkComplete");
    if (status.ok())
      cubin.assign(static_cast<const char *>(image), size);
  }
  (void)a.linkDestroy(state);
  return withLog(status, logText(error)).withContext("compiling PTX");
}

//===----------------------------------------------------------------------===//
// Kernel
//===----------------------------------------------------------------------===//

/// Looks up one launch's function in `module`, checks that the device can
/// run it with the launch's block and shared memory, and raises its dynamic
/// shared memory limit.
static Status prepareFunction(const Module &module, const LaunchSpec &launch,
                              CUfunction &out) {
  Driver &driver = *module.driver();
  const DriverApi &a = driver.api();
  StatusOr<CUfunction> fn = module.function(launch.entry);
  if (!fn.ok())
    return fn.status();

  int maxThreads = 0, staticShared = 0;
  FA_RT_RETURN_IF_ERROR(driver.check(
      a.funcGetAttribute(&maxThreads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
                         *fn),
      "cuFuncGetAttribute"));
  FA_RT_RETURN_IF_ERROR(
      driver.check(a.funcGetAttribute(&staticShared,
                                      CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, *fn),
                   "cuFuncGetAttribute"));
  if (uint64_t(maxThreads) < launch.block.product())
    return Status::error(
        "kernel '" + launch.entry + "' can run at most " +
        std::to_string(maxThreads) +
        " threads per block on this device (register usage), but the "
        "metadata's block has " +
        std::to_string(launch.block.product()));
  int optin = driver.device().maxSharedPerBlockOptin;
  if (int64_t(launch.sharedBytes) + staticShared > optin)
    return Status::error("kernel '" + launch.entry + "' needs " +
                         std::to_string(launch.sharedBytes) +
                         " bytes of dynamic + " + std::to_string(staticShared) +
                         " bytes of static shared memory; the device allows " +
                         std::to_string(optin) + " per block");
  if (launch.sharedBytes > 0)
    FA_RT_RETURN_IF_ERROR(
        driver
            .check(a.funcSetAttribute(
                       *fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                       int(launch.sharedBytes)),
                   "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)")
            .withContext("kernel '" + launch.entry + "'"));
  out = *fn;
  return Status::success();
}

StatusOr<Kernel> Kernel::fromModule(Module module,
                                    const KernelMetadata &metadata) {
  Kernel kernel;
  FA_RT_RETURN_IF_ERROR(
      prepareFunction(module, metadata.mainLaunch(), kernel.function_));
  if (metadata.kind != KernelKind::Forward)
    FA_RT_RETURN_IF_ERROR(
        prepareFunction(module, metadata.pre, kernel.preFunction_));
  if (metadata.kind == KernelKind::Backward)
    FA_RT_RETURN_IF_ERROR(
        prepareFunction(module, metadata.post, kernel.postFunction_));
  kernel.metadata_ = metadata;
  kernel.module_ = std::move(module);
  return kernel;
}

StatusOr<Kernel> Kernel::fromPTX(std::string_view ptx,
                                 const KernelMetadata &metadata,
                                 Driver &driver) {
  ContextScope scope(driver);
  FA_RT_RETURN_IF_ERROR(scope.status());
  FA_RT_RETURN_IF_ERROR(checkChip(metadata, driver));
  StatusOr<Module> module = Module::loadPTX(ptx, driver);
  if (!module.ok())
    return module.status();
  return fromModule(std::move(*module), metadata);
}

StatusOr<Kernel> Kernel::fromCubin(const void *image, size_t size,
                                   const KernelMetadata &metadata,
                                   Driver &driver) {
  ContextScope scope(driver);
  FA_RT_RETURN_IF_ERROR(scope.status());
  FA_RT_RETURN_IF_ERROR(checkChip(metadata, driver));
  StatusOr<Module> module = Module::loadCubin(image, size, driver);
  if (!module.ok())
    return module.status();
  return fromModule(std::move(*module), metadata);
}

Kernel Kernel::unloaded(const KernelMetadata &metadata) {
  Kernel kernel;
  kernel.metadata_ = metadata;
  return kernel;
}

StatusOr<Kernel> loadKernelCached(KernelCache &cache, std::string_view ptx,
                                  const KernelMetadata &metadata,
                                  std::string_view compilerVersion,
                                  CacheOutcome *outcome, std::string *warning,
                                  Driver &driver) {
  ContextScope scope(driver);
  FA_RT_RETURN_IF_ERROR(scope.status());
  FA_RT_RETURN_IF_ERROR(checkChip(metadata, driver));
  const std::string config = metadata.configString();
  CacheKey key{config + ";ptx_sha256=" + Sha256::hex(ptx),
               std::string(compilerVersion), driver.device().chip()};
  auto build = [&](CacheEntry &entry) {
    entry.metadata = config;
    return compilePTXToCubin(ptx, entry.payload, driver);
  };
  // The key already holds the config; repeating it in the entry lets the
  // cache reject an entry whose metadata says otherwise, as for the JIT's.
  auto validate = [&](const CacheEntry &entry) -> std::string {
    if (entry.metadata != config)
      return "its metadata is not the requested kernel's";
    if (entry.payload.compare(0, 4,
                              "\x7f"
                              "ELF") != 0)
      return "its image is not a cubin (no ELF header)";
    return "";
  };
  CacheEntry entry;
  FA_RT_RETURN_IF_ERROR(
      cache.getOrBuild(key, build, entry, outcome, warning, validate));
  return Kernel::fromCubin(entry.payload.data(), entry.payload.size(), metadata,
                           driver);
}

StatusOr<std::shared_ptr<const KernelMetadata>>
CallMetadataCache::instantiate(const KernelMetadata &m, const Sizes &sizes) {
  if (std::optional<std::shared_ptr<const KernelMetadata>> kept =
          recent_.find(sizes))
    return *kept;
  StatusOr<KernelMetadata> instance =
      m.instantiate(sizes[0], sizes[1], sizes[2], sizes[3], sizes[4], sizes[5]);
  if (!instance.ok())
    return instance.status();
  auto metadata = std::make_shared<const KernelMetadata>(std::move(*instance));
  recent_.insert(sizes, metadata);
  return metadata;
}

} // namespace fa::rt
