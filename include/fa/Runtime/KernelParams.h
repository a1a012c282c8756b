//===- KernelParams.h - The parameter values of one launch ------*- C++ -*-===//
//
// cuLaunchKernel takes a kernel's parameters as an array with one pointer per
// parameter, each to that parameter's value. An attention kernel's parameter
// is either a device pointer (`.param .u64`) or a TMA descriptor: a 128-byte
// CUtensorMap passed by value (`.param .align 64 .b8 tmap_x[128]`, a
// __grid_constant__), named `tmap_<x>` and described by the metadata's
// `tensor_maps` (Metadata.h). The driver copies every value when the launch
// is enqueued, so the storage only has to outlive the cuLaunchKernel call.
//
// buildKernelParams() turns a launch's parameter names into such values:
// pointers by name, and for each tensor map the descriptor of its tensor,
// encoded on the host for this call's pointer (pointers change between calls;
// encoding needs no device memory).
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUNTIME_KERNELPARAMS_H
#define FA_RUNTIME_KERNELPARAMS_H

#include "fa/Runtime/Metadata.h"
#include "fa/Runtime/Status.h"
#include "fa/Runtime/TensorMap.h"

#include <cuda.h>

#include <array>
#include <cstddef>
#include <vector>

namespace fa::rt {

/// The values of one launch's parameters, in order, and the kernelParams
/// array that points at them.
class KernelParams {
public:
  /// Room for `parameters` parameters of any kind (one allocation a kind
  /// instead of one per growth step on the launch path).
  void reserve(size_t parameters);
  void addPointer(CUdeviceptr pointer);
  /// Stored at a 64-byte aligned address (CUtensorMap's own alignment), as
  /// the driver requires of a tensor map.
  void addTensorMap(const CUtensorMap &map);
  /// A 64-bit integer by value (a runtime size: `.param .u64`).
  void addScalar(int64_t value);

  size_t size() const { return slots_.size(); }
  bool isTensorMap(size_t i) const { return slots_[i].kind == Kind::TensorMap; }
  bool isScalar(size_t i) const { return slots_[i].kind == Kind::Scalar; }

  /// cuLaunchKernel's kernelParams: element i points at parameter i's value
  /// (a CUdeviceptr or a CUtensorMap). Valid until this object is changed,
  /// moved or destroyed.
  void **data();

private:
  enum class Kind { Pointer, TensorMap, Scalar };
  struct Slot {
    Kind kind;
    size_t index; ///< Into pointers_, maps_ or scalars_.
  };
  std::vector<Slot> slots_;
  std::vector<CUdeviceptr> pointers_;
  std::vector<CUtensorMap> maps_;
  std::vector<int64_t> scalars_;
  std::vector<void *> addresses_;
};

/// A device pointer that a launch parameter or a tensor map may name ("q",
/// "delta", ...).
struct NamedPointer {
  const char *name;
  CUdeviceptr pointer;
  /// Element strides of a [B, H, N, D] tensor, for a tensor map over it;
  /// all zero: dense row-major.
  std::array<int64_t, 4> strides{};
};

/// The descriptor `map` describes for its tensor at `base`: attentionTileMap()
/// over the tensor's [batch, heads, seq, dim] shape from `metadata` (q,
/// dq: heads_q, seq_q, head_dim; o, do: heads_q, seq_q, head_dim_v; k, dk:
/// heads_kv, seq_kv, head_dim; v, dv: heads_kv, seq_kv, head_dim_v) of
/// `metadata.dtype`, boxes of map.rows x map.cols, with element `strides`
/// (all zero: dense row-major).
StatusOr<TensorMapSpec>
tensorMapSpec(const KernelMetadata &metadata, const TensorMapParam &map,
              CUdeviceptr base, const std::array<int64_t, 4> &strides = {});

/// The parameters of `launch`, in its `args` order: a name found in
/// `pointers` is that pointer; a `tmap_<x>` parameter of `metadata` is the
/// descriptor of tensor x at the pointer named x, encoded with `encode`
/// (which may be null when the launch takes no tensor map), through `cache`
/// when given. Errors name the parameter.
StatusOr<KernelParams>
buildKernelParams(const KernelMetadata &metadata, const LaunchSpec &launch,
                  const std::vector<NamedPointer> &pointers,
                  TensorMapEncodeFn encode, TensorMapCache *cache = nullptr);

} // namespace fa::rt

#endif // FA_RUNTIME_KERNELPARAMS_H
