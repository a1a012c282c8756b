//===- TensorChecks.cpp - A launch's tensors checked one by one -----------===//
//
// Pointers, alignment, strides, element counts and overlaps of the tensors
// a launch takes (Attention.cpp gathers them; TensorChecks.h).
//
//===----------------------------------------------------------------------===//

#include "TensorChecks.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

namespace fa::rt {

namespace {

std::string listString(const Dims &v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

/// Product of `shape`, or -1 if it exceeds INT64_MAX.
int64_t checkedNumel(const Dims &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    if (__builtin_mul_overflow(n, d, &n))
      return -1;
  return n;
}

Dims contiguousStrides(const Dims &shape) {
  Dims strides = shape;
  int64_t step = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = step;
    step *= shape[i];
  }
  return strides;
}

/// Dense row-major, ignoring the strides of size-1 dimensions (whose value
/// does not affect addressing).
bool isContiguous(const TensorView &t) {
  int64_t expected = 1;
  for (size_t i = t.shape.size(); i-- > 0;) {
    if (t.shape[i] != 1 && t.strides[i] != expected)
      return false;
    expected *= t.shape[i];
  }
  return true;
}

/// Whether TMA can read `t` in place: a dense innermost dimension, every
/// other stride positive and a multiple of 16 bytes.
bool isTensorMapLayout(const TensorView &t) {
  if (t.strides.back() != 1 && t.shape.back() != 1)
    return false;
  for (size_t i = 0; i + 1 < t.strides.size(); ++i)
    if (t.shape[i] > 1 && (t.strides[i] <= 0 ||
                           (uint64_t(t.strides[i]) * t.elementBytes) % 16 != 0))
      return false;
  return true;
}

/// Bytes from a tensor's first element to past its last: a strided view's
/// extent (its elements need not be adjacent), numel's for a dense one.
uint64_t spanBytes(const TensorView &t) {
  if (t.numel == 0)
    return 0;
  uint64_t last = 0;
  for (size_t i = 0; i < t.shape.size(); ++i)
    last +=
        uint64_t(t.shape[i] - 1) * uint64_t(std::max<int64_t>(t.strides[i], 0));
  return std::max(last + 1, uint64_t(t.numel)) * t.elementBytes;
}

} // namespace

Dims::Dims(std::initializer_list<int64_t> values) : rank_(values.size()) {
  // Callers name at most four dimensions ([B, H, N, D] tensors and less).
  std::copy(values.begin(), values.begin() + std::min<size_t>(rank_, 4),
            values_.begin());
  rank_ = std::min<size_t>(rank_, 4);
}

std::string hexPtr(CUdeviceptr p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%" PRIx64, uint64_t(p));
  return buf;
}

/// Per-tensor element counts (the kernels index with 32 bits).
Status checkElementCounts(std::vector<TensorView> &tensors) {
  for (TensorView &t : tensors) {
    t.numel = checkedNumel(t.shape);
    if (t.numel < 0 || t.numel > kMaxTensorElements)
      return Status::error(
          std::string(t.name) + " tensor of shape " + listString(t.shape) +
          " has " +
          (t.numel < 0 ? std::string("more than 2^63")
                       : std::to_string(t.numel)) +
          " elements; at most 2^31-1 are supported (the kernels index with 32 "
          "bits)");
  }
  return Status::success();
}

/// Non-null, aligned pointers; dense row-major strides, or for a tensor read
/// through a TMA descriptor any that the descriptor takes.
Status checkPointersAndLayouts(const std::vector<TensorView> &tensors) {
  for (const TensorView &t : tensors) {
    if (!t.required)
      continue;
    if (t.ptr == 0)
      return Status::error(std::string(t.name) + " pointer is null");
    if (t.ptr % t.alignment != 0)
      return Status::error(std::string(t.name) + " pointer " + hexPtr(t.ptr) +
                           " is not " + std::to_string(t.alignment) +
                           "-byte aligned");
  }
  for (const TensorView &t : tensors) {
    if (!t.required)
      continue;
    if (t.tensorMapped && !isContiguous(t) && !isTensorMapLayout(t))
      return Status::error(std::string(t.name) + " stride " +
                           listString(t.strides) + " (shape " +
                           listString(t.shape) +
                           ") not supported; the kernel reads it through a "
                           "TMA descriptor, which needs stride 1 on the "
                           "last dimension and positive multiples of " +
                           std::to_string(16 / t.elementBytes) +
                           " elements (16 bytes) on the others");
    if (!t.tensorMapped && !isContiguous(t))
      return Status::error(std::string(t.name) + " stride " +
                           listString(t.strides) + " (shape " +
                           listString(t.shape) +
                           ") not supported; pass a contiguous tensor "
                           "(row-major strides " +
                           listString(contiguousStrides(t.shape)) + ")");
  }
  return Status::success();
}

/// The tensors listed in `outputs` must not overlap any other tensor's
/// extent.
Status checkOverlaps(const std::vector<TensorView> &tensors,
                     std::initializer_list<size_t> outputs) {
  for (size_t out : outputs) {
    const TensorView &o = tensors[out];
    if (!o.required)
      continue;
    uint64_t oBegin = o.ptr, oEnd = o.ptr + spanBytes(o);
    for (size_t other = 0; other < tensors.size(); ++other) {
      const TensorView &t = tensors[other];
      if (other == out || !t.required)
        continue;
      uint64_t begin = t.ptr, end = t.ptr + spanBytes(t);
      if (oBegin < end && begin < oEnd)
        return Status::error(std::string(o.name) + " [" + hexPtr(oBegin) +
                             ", " + hexPtr(oEnd) + ") overlaps " + t.name +
                             " [" + hexPtr(begin) + ", " + hexPtr(end) + ")");
    }
  }
  return Status::success();
}

TensorView tensor4(const char *name, CUdeviceptr ptr, int64_t d0, int64_t d1,
                   int64_t d2, int64_t d3, const std::array<int64_t, 4> &stride,
                   DType dtype, bool required) {
  return {name, ptr,     {d0, d1, d2, d3}, stride, elementSize(dtype),
          16,   required};
}

TensorView lseView(CUdeviceptr ptr, int64_t b, int64_t h, int64_t n,
                   const std::array<int64_t, 3> &stride, bool required,
                   const char *name) {
  return {name, ptr, {b, h, n}, stride, sizeof(float), 4, required};
}

TensorView descaleView(const char *name, CUdeviceptr ptr, int64_t b,
                       int64_t hkv, bool required) {
  return {name, ptr, {b, hkv}, {hkv, 1}, sizeof(float), 4, required};
}

} // namespace fa::rt
