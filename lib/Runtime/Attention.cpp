//===- Attention.cpp - Launching attention kernels ------------------------===//

#include "fa/Runtime/Attention.h"

#include "Format.h"

#include <cinttypes>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace fa::rt {

namespace {

struct TensorView {
  const char *name;
  CUdeviceptr ptr;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  size_t elementBytes;
  size_t alignment;
  bool required;
  int64_t numel = 0;
};

std::string listString(const std::vector<int64_t> &v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

std::string hexPtr(CUdeviceptr p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%" PRIx64, uint64_t(p));
  return buf;
}

/// Product of `shape`, or -1 if it exceeds INT64_MAX.
int64_t checkedNumel(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    if (__builtin_mul_overflow(n, d, &n))
      return -1;
  return n;
}

std::vector<int64_t> contiguousStrides(const std::vector<int64_t> &shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t i = shape.size() - 1; i-- > 0;)
    strides[i] = strides[i + 1] * shape[i + 1];
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

bool sameDouble(double a, double b) {
  return std::fabs(a - b) <= 1e-7 * std::fmax(std::fabs(a), std::fabs(b));
}

} // namespace

void AttentionArgs::setContiguousStrides() {
  // Saturating products: validation rejects such shapes anyway, but filling
  // in strides must not overflow first.
  auto mul = [](int64_t a, int64_t b) {
    int64_t r;
    return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
  };
  auto set4 = [&](std::array<int64_t, 4> &s, int64_t d1, int64_t d2,
                  int64_t d3) {
    s[3] = 1;
    s[2] = d3;
    s[1] = mul(d2, d3);
    s[0] = mul(d1, s[1]);
  };
  set4(strideQ, headsQ, seqQ, headDim);
  set4(strideK, headsKV, seqKV, headDim);
  set4(strideV, headsKV, seqKV, headDimV);
  set4(strideO, headsQ, seqQ, headDimV);
  strideLSE = {mul(headsQ, seqQ), seqQ, 1};
}

AttentionArgs AttentionArgs::fromMetadata(const KernelMetadata &m) {
  AttentionArgs a;
  a.dtype = m.dtype;
  a.batch = m.batch;
  a.headsQ = m.headsQ;
  a.headsKV = m.headsKV;
  a.seqQ = m.seqQ;
  a.seqKV = m.seqKV;
  a.headDim = m.headDim;
  a.headDimV = m.headDimV;
  a.scale = m.scale;
  a.causal = m.causal;
  a.windowLeft = m.windowLeft;
  a.windowRight = m.windowRight;
  a.softcap = m.softcap;
  a.setContiguousStrides();
  return a;
}

Status validateAttentionForward(const KernelMetadata &m,
                                const AttentionArgs &a) {
  if (m.kind != KernelKind::Forward)
    return Status::error("kernel '" + m.entry + "' is a " + toString(m.kind) +
                         " kernel; attentionForward needs a forward kernel");

  // Problem description on its own.
  struct Dim {
    const char *name;
    int64_t value, expected;
  };
  const Dim dims[] = {
      {"batch", a.batch, m.batch},           {"heads_q", a.headsQ, m.headsQ},
      {"heads_kv", a.headsKV, m.headsKV},    {"seq_q", a.seqQ, m.seqQ},
      {"seq_kv", a.seqKV, m.seqKV},          {"head_dim", a.headDim, m.headDim},
      {"head_dim_v", a.headDimV, m.headDimV}};
  for (const Dim &d : dims)
    if (d.value <= 0)
      return Status::error(std::string(d.name) + " must be positive, got " +
                           std::to_string(d.value));
  if (a.headsQ % a.headsKV != 0)
    return Status::error("heads_q (" + std::to_string(a.headsQ) +
                         ") must be a multiple of heads_kv (" +
                         std::to_string(a.headsKV) + ")");

  const bool kernelHasLSE = m.hasArg("lse");
  TensorView tensors[] = {
      {"query",
       a.q,
       {a.batch, a.headsQ, a.seqQ, a.headDim},
       {a.strideQ.begin(), a.strideQ.end()},
       elementSize(a.dtype),
       16,
       true},
      {"key",
       a.k,
       {a.batch, a.headsKV, a.seqKV, a.headDim},
       {a.strideK.begin(), a.strideK.end()},
       elementSize(a.dtype),
       16,
       true},
      {"value",
       a.v,
       {a.batch, a.headsKV, a.seqKV, a.headDimV},
       {a.strideV.begin(), a.strideV.end()},
       elementSize(a.dtype),
       16,
       true},
      {"output",
       a.o,
       {a.batch, a.headsQ, a.seqQ, a.headDimV},
       {a.strideO.begin(), a.strideO.end()},
       elementSize(a.dtype),
       16,
       true},
      {"lse",
       a.lse,
       {a.batch, a.headsQ, a.seqQ},
       {a.strideLSE.begin(), a.strideLSE.end()},
       sizeof(float),
       4,
       kernelHasLSE},
  };
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

  // Against the kernel.
  if (a.dtype != m.dtype)
    return Status::error(std::string("dtype ") + toString(a.dtype) +
                         " does not match the kernel's " + toString(m.dtype));
  for (const Dim &d : dims)
    if (d.value != d.expected)
      return Status::error(
          std::string(d.name) + " = " + std::to_string(d.value) +
          " does not match the kernel's " + d.name + " = " +
          std::to_string(d.expected) +
          " (kernels are compiled for one shape; compile one for this shape)");
  if (a.causal != m.causal)
    return Status::error(
        std::string("causal = ") + (a.causal ? "1" : "0") +
        " does not match the kernel's causal = " + (m.causal ? "1" : "0"));
  int64_t left = a.windowLeft < 0 ? -1 : a.windowLeft;
  int64_t right = a.windowRight < 0 ? -1 : a.windowRight;
  if (left != m.windowLeft || right != m.windowRight)
    return Status::error("window (" + std::to_string(left) + ", " +
                         std::to_string(right) +
                         ") does not match the kernel's window (" +
                         std::to_string(m.windowLeft) + ", " +
                         std::to_string(m.windowRight) + ")");
  if (!(a.softcap >= 0) || !sameDouble(a.softcap, m.softcap))
    return Status::error("softcap = " + detail::formatShortest(a.softcap) +
                         " does not match the kernel's softcap = " +
                         detail::formatShortest(m.softcap));
  if (!(a.scale > 0) || !sameDouble(a.scale, m.scale))
    return Status::error("scale = " + detail::formatShortest(a.scale) +
                         " does not match the kernel's scale = " +
                         detail::formatShortest(m.scale));

  // Pointers and layouts.
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
    if (!isContiguous(t))
      return Status::error(std::string(t.name) + " stride " +
                           listString(t.strides) + " (shape " +
                           listString(t.shape) +
                           ") not supported; pass a contiguous tensor "
                           "(row-major strides " +
                           listString(contiguousStrides(t.shape)) + ")");
  }
  // Outputs must not overlap any other tensor.
  for (int out : {3, 4}) {
    const TensorView &o = tensors[out];
    if (!o.required)
      continue;
    uint64_t oBegin = o.ptr, oEnd = o.ptr + uint64_t(o.numel) * o.elementBytes;
    for (int other = 0; other < 5; ++other) {
      const TensorView &t = tensors[other];
      if (other == out || !t.required)
        continue;
      uint64_t begin = t.ptr, end = t.ptr + uint64_t(t.numel) * t.elementBytes;
      if (oBegin < end && begin < oEnd)
        return Status::error(std::string(o.name) + " [" + hexPtr(oBegin) +
                             ", " + hexPtr(oEnd) + ") overlaps " + t.name +
                             " [" + hexPtr(begin) + ", " + hexPtr(end) + ")");
    }
  }
  return Status::success();
}

Status attentionForward(const Kernel &kernel, const AttentionArgs &args,
                        CUstream stream) {
  const KernelMetadata &m = kernel.metadata();
  FA_RT_RETURN_IF_ERROR(validateAttentionForward(m, args).withContext(
      "attentionForward(" + m.entry + ")"));
  if (!kernel.loaded())
    return Status::error("attentionForward(" + m.entry +
                         "): kernel is not loaded");
  std::vector<CUdeviceptr> pointers;
  pointers.reserve(m.args.size());
  for (const std::string &name : m.args) {
    if (name == "q")
      pointers.push_back(args.q);
    else if (name == "k")
      pointers.push_back(args.k);
    else if (name == "v")
      pointers.push_back(args.v);
    else if (name == "o")
      pointers.push_back(args.o);
    else if (name == "lse")
      pointers.push_back(args.lse);
    else
      return Status::error("attentionForward(" + m.entry +
                           "): unknown kernel parameter '" + name + "'");
  }
  std::vector<void *> params;
  for (CUdeviceptr &p : pointers)
    params.push_back(&p);
  Driver &driver = *kernel.driver();
  FA_RT_RETURN_IF_ERROR(driver.ensureContext());
  return driver
      .check(driver.api().launchKernel(kernel.function(), m.grid.x, m.grid.y,
                                       m.grid.z, m.block.x, m.block.y,
                                       m.block.z, m.sharedBytes, stream,
                                       params.data(), nullptr),
             "cuLaunchKernel")
      .withContext("attentionForward(" + m.entry + ")");
}

double attentionForwardFlops(int64_t batch, int64_t headsQ, int64_t seqQ,
                             int64_t seqKV, int64_t headDim, int64_t headDimV,
                             bool causal) {
  double flops = 2.0 * double(batch) * double(headsQ) * double(seqQ) *
                 double(seqKV) * double(headDim + headDimV);
  if (causal && seqQ == seqKV)
    flops /= 2;
  return flops;
}

double attentionForwardFlops(const KernelMetadata &m) {
  return attentionForwardFlops(m.batch, m.headsQ, m.seqQ, m.seqKV, m.headDim,
                               m.headDimV, m.causal);
}

} // namespace fa::rt
