//===- Kernel.h - Loading kernels from PTX or cubin -------------*- C++ -*-===//
//
// A Module is a loaded CUDA module (PTX compiled by the driver's JIT, or a
// cubin). A Kernel is the function(s) of a module together with the metadata
// that describes their ABI: one function for a forward kernel, three (pre,
// main, post) for a backward kernel set. attentionForward() and
// attentionBackward() (Attention.h) launch them.
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUNTIME_KERNEL_H
#define FA_RUNTIME_KERNEL_H

#include "fa/Runtime/Driver.h"
#include "fa/Runtime/Metadata.h"
#include "fa/Runtime/RecentValues.h"
#include "fa/Runtime/Status.h"
#include "fa/Runtime/TensorMap.h"

#include <array>
#include <memory>
#include <string>
#include <string_view>

namespace fa::rt {

class KernelCache;
enum class CacheOutcome;

/// A loaded CUDA module, unloaded on destruction. Move-only.
class Module {
public:
  Module() = default;
  /// JIT-compiles PTX text with the driver. On failure the error message
  /// includes the JIT's error log (ptxas diagnostics with line numbers).
  static StatusOr<Module> loadPTX(std::string_view ptx,
                                  Driver &driver = Driver::get());
  /// Loads a cubin (or fatbin) image.
  static StatusOr<Module> loadCubin(const void *image, size_t size,
                                    Driver &driver = Driver::get());
  ~Module();
  Module(Module &&other) noexcept;
  Module &operator=(Module &&other) noexcept;
  Module(const Module &) = delete;
  Module &operator=(const Module &) = delete;

  CUmodule handle() const { return module_; }
  Driver *driver() const { return driver_; }
  /// The JIT's info log of a successful PTX load (may be empty).
  const std::string &jitLog() const { return jitLog_; }

  StatusOr<CUfunction> function(const std::string &name) const;

private:
  static StatusOr<Module> loadImage(const void *image, bool isPTX,
                                    Driver &driver);
  void reset();
  Driver *driver_ = nullptr;
  CUmodule module_ = nullptr;
  std::string jitLog_;
};

/// Compiles PTX to a cubin for the current device with the driver's linker
/// (cuLinkCreate/cuLinkAddData/cuLinkComplete). On failure the message
/// includes the error log.
Status compilePTXToCubin(std::string_view ptx, std::string &cubin,
                         Driver &driver = Driver::get());

/// A runtime-shapes kernel's metadata for its recent calls: what
/// KernelMetadata::instantiate() gave for the last kCapacity distinct call
/// sizes, so that a repeated call does not copy the kernel's metadata (its
/// names and launches) again. Errors are not kept. Thread-safe.
class CallMetadataCache {
public:
  static constexpr size_t kCapacity = 8;
  /// batch, seqQ, seqKV, sequences, maxSeqQ, maxSeqKV.
  using Sizes = std::array<int64_t, 6>;
  /// m.instantiate(sizes...), or what it gave for the same sizes (`m` must
  /// be the same metadata at every call: the kernel's).
  StatusOr<std::shared_ptr<const KernelMetadata>>
  instantiate(const KernelMetadata &m, const Sizes &sizes);
  /// How many calls' metadata it holds.
  size_t size() const { return recent_.size(); }

private:
  RecentValues<Sizes, std::shared_ptr<const KernelMetadata>, kCapacity> recent_;
};

/// A kernel function (a backward kernel set: three) plus its metadata.
/// Move-only (owns its module).
class Kernel {
public:
  /// Loads `ptx` (JIT) and looks up metadata.entry (for a backward kernel
  /// set also pre_entry and post_entry). Checks that the device can run each
  /// (chip, threads per block, shared memory) and raises each function's
  /// dynamic shared memory limit to its launch's shared bytes.
  static StatusOr<Kernel> fromPTX(std::string_view ptx,
                                  const KernelMetadata &metadata,
                                  Driver &driver = Driver::get());
  /// The same from a cubin image.
  static StatusOr<Kernel> fromCubin(const void *image, size_t size,
                                    const KernelMetadata &metadata,
                                    Driver &driver = Driver::get());
  /// A kernel object that carries metadata but no code: attentionForward()
  /// validates its arguments as usual and then fails with "kernel is not
  /// loaded". For tests of argument validation on machines without a GPU.
  static Kernel unloaded(const KernelMetadata &metadata);

  const KernelMetadata &metadata() const { return metadata_; }
  bool loaded() const { return function_ != nullptr; }
  CUfunction function() const { return function_; }
  /// Backward only: the pre_entry / post_entry functions (null otherwise).
  CUfunction preFunction() const { return preFunction_; }
  CUfunction postFunction() const { return postFunction_; }
  const Module &module() const { return module_; }
  Driver *driver() const { return module_.driver(); }
  /// The descriptors its launches encoded last (attentionForward() and
  /// attentionBackward() reuse them for repeated tensors and shapes).
  TensorMapCache &tensorMaps() const { return *tensorMaps_; }
  /// A runtime-shapes kernel's metadata for its recent call sizes
  /// (attentionForward() and attentionBackward() reuse it).
  CallMetadataCache &calls() const { return *calls_; }

private:
  static StatusOr<Kernel> fromModule(Module module,
                                     const KernelMetadata &metadata);
  Kernel() = default;
  KernelMetadata metadata_;
  Module module_;
  CUfunction function_ = nullptr;
  CUfunction preFunction_ = nullptr, postFunction_ = nullptr;
  std::unique_ptr<TensorMapCache> tensorMaps_ =
      std::make_unique<TensorMapCache>();
  std::unique_ptr<CallMetadataCache> calls_ =
      std::make_unique<CallMetadataCache>();
};

/// Loads a kernel through the kernel cache: the cubin compiled from `ptx`
/// is cached under the key (metadata.configString() plus the SHA-256 of the
/// PTX text, `compilerVersion`, the device's chip), beside that config
/// string, which a cached entry must repeat; on a miss the PTX is compiled
/// with compilePTXToCubin(). `outcome`, if given, receives how the entry was
/// found and `warning` any non-fatal cache problem (an unusable entry that
/// was rebuilt, an entry that could not be written): a failure to use the
/// cache is not an error.
StatusOr<Kernel> loadKernelCached(KernelCache &cache, std::string_view ptx,
                                  const KernelMetadata &metadata,
                                  std::string_view compilerVersion,
                                  CacheOutcome *outcome = nullptr,
                                  std::string *warning = nullptr,
                                  Driver &driver = Driver::get());

} // namespace fa::rt

#endif // FA_RUNTIME_KERNEL_H
