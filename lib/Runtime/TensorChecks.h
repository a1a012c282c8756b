//===- TensorChecks.h - A launch's tensors checked one by one ---*- C++ -*-===//
//
// Internal to the runtime: the views validateAttentionForward/Backward (and
// validateQuantize) build of their tensors, the checks each goes through,
// and the launch of one kernel of a set.
//
//===----------------------------------------------------------------------===//

#ifndef FA_LIB_RUNTIME_TENSORCHECKS_H
#define FA_LIB_RUNTIME_TENSORCHECKS_H

#include "fa/Runtime/Attention.h"

#include <algorithm>
#include <array>
#include <initializer_list>
#include <string>
#include <vector>

namespace fa::rt {

/// Up to four sizes or strides, held inline: validating a launch allocates
/// nothing for them (issue 12's thin call path).
class Dims {
public:
  Dims() = default;
  Dims(std::initializer_list<int64_t> values);
  template <size_t N> Dims(const std::array<int64_t, N> &values) : rank_(N) {
    static_assert(N <= 4, "at most four dimensions");
    std::copy(values.begin(), values.end(), values_.begin());
  }
  size_t size() const { return rank_; }
  int64_t operator[](size_t i) const { return values_[i]; }
  int64_t &operator[](size_t i) { return values_[i]; }
  int64_t back() const { return values_[rank_ - 1]; }
  const int64_t *begin() const { return values_.data(); }
  const int64_t *end() const { return values_.data() + rank_; }

private:
  std::array<int64_t, 4> values_{};
  size_t rank_ = 0;
};

/// One tensor of a launch as validation sees it.
struct TensorView {
  const char *name;
  CUdeviceptr ptr;
  Dims shape;
  Dims strides;
  size_t elementBytes;
  size_t alignment;
  bool required;
  int64_t numel = 0;
  /// Read only through a TMA descriptor: any positive strides that TMA
  /// takes (16-byte multiples) with a dense innermost dimension.
  bool tensorMapped = false;
};

/// A device address as 0x... text.
std::string hexPtr(CUdeviceptr p);

/// Per-tensor element counts (the kernels index with 32 bits); sets numel.
Status checkElementCounts(std::vector<TensorView> &tensors);

/// Non-null, aligned pointers; dense row-major strides, or for a tensor read
/// through a TMA descriptor any that the descriptor takes.
Status checkPointersAndLayouts(const std::vector<TensorView> &tensors);

/// The tensors listed in `outputs` must not overlap any other tensor's
/// extent.
Status checkOverlaps(const std::vector<TensorView> &tensors,
                     std::initializer_list<size_t> outputs);

/// A [d0, d1, d2, d3] tensor of `dtype` (16-byte aligned).
TensorView tensor4(const char *name, CUdeviceptr ptr, int64_t d0, int64_t d1,
                   int64_t d2, int64_t d3, const std::array<int64_t, 4> &stride,
                   DType dtype, bool required);

/// The f32 [b, h, n] log-sum-exp (4-byte aligned), or another row
/// statistic of its shape (`name`: its gradient, dlse).
TensorView lseView(CUdeviceptr ptr, int64_t b, int64_t h, int64_t n,
                   const std::array<int64_t, 3> &stride, bool required,
                   const char *name = "lse");

/// An FP8 descale: f32 [b, h_kv], dense (4-byte aligned).
TensorView descaleView(const char *name, CUdeviceptr ptr, int64_t b,
                       int64_t hkv, bool required);

/// Launches one kernel of a set with `params` (one per `launch.args` name).
Status launchOne(const Kernel &kernel, CUfunction fn, const LaunchSpec &launch,
                 KernelParams &params, CUstream stream);

} // namespace fa::rt

#endif // FA_LIB_RUNTIME_TENSORCHECKS_H
