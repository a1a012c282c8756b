//===- Attention.cpp - Launching attention kernels ------------------------===//

#include "fa/Runtime/Attention.h"

#include "CallMetadata.h"
#include "Format.h"
#include "TensorChecks.h"

#include <climits>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <type_traits>
#include <vector>

namespace fa::rt {

namespace {

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

/// Shapes, dtype and flags of either direction's arguments from `m`, with
/// contiguous strides and null pointers.
template <typename Args> Args argsFromMetadata(const KernelMetadata &m) {
  Args a;
  a.dtype = m.dtype;
  if constexpr (std::is_same_v<Args, AttentionArgs>)
    a.outDtype = m.outDtype;
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

AttentionArgs AttentionArgs::fromMetadata(const KernelMetadata &m) {
  return argsFromMetadata<AttentionArgs>(m);
}

namespace {

struct Dim {
  const char *name;
  int64_t value, expected;
};

/// The problem dimensions of a call, paired with the kernel's.
using ProblemDims = std::array<Dim, 7>;

template <typename Args>
ProblemDims problemDims(const KernelMetadata &m, const Args &a) {
  return {{{"batch", a.batch, m.batch},
           {"heads_q", a.headsQ, m.headsQ},
           {"heads_kv", a.headsKV, m.headsKV},
           {"seq_q", a.seqQ, m.seqQ},
           {"seq_kv", a.seqKV, m.seqKV},
           {"head_dim", a.headDim, m.headDim},
           {"head_dim_v", a.headDimV, m.headDimV}}};
}

/// The problem description on its own: positive sizes, Hq % Hkv.
template <typename Args>
Status checkDims(const ProblemDims &dims, const Args &a) {
  for (const Dim &d : dims)
    if (d.value <= 0)
      return Status::error(std::string(d.name) + " must be positive, got " +
                           std::to_string(d.value));
  if (a.headsQ % a.headsKV != 0)
    return Status::error("heads_q (" + std::to_string(a.headsQ) +
                         ") must be a multiple of heads_kv (" +
                         std::to_string(a.headsKV) + ")");
  return Status::success();
}

/// dtype, shapes and flags against the kernel's.
template <typename Args>
Status checkAgainstKernel(const KernelMetadata &m, const ProblemDims &dims,
                          const Args &a) {
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
  return Status::success();
}

/// Whether any launch of the kernel set reads tensor `name`: takes its
/// pointer or a tensor map over it (`tmap_<name>`, encoded from the pointer).
bool takes(const KernelMetadata &m, std::string_view name) {
  const std::string mapParam = "tmap_" + std::string(name);
  for (const LaunchSpec &l : m.launches())
    if (l.hasArg(name) || l.hasArg(mapParam))
      return true;
  return false;
}

size_t alignUp(size_t n, size_t to) { return (n + to - 1) / to * to; }

/// A varlen kernel's offsets: given, 4-byte aligned; other kernels take
/// none (a call that packs sequences must not run a kernel that ignores
/// them).
template <typename Args>
Status checkSequenceOffsets(const KernelMetadata &m, const Args &a) {
  if (!m.varlen) {
    if (a.cuSeqlensQ || a.cuSeqlensK)
      return Status::error("cu_seqlens given, but kernel '" + m.entry +
                           "' takes no packed sequences (compile it with "
                           "varlen)");
    return Status::success();
  }
  for (auto [name, pointer] : {std::pair{"cu_seqlens_q", a.cuSeqlensQ},
                               std::pair{"cu_seqlens_k", a.cuSeqlensK}}) {
    if (!pointer)
      return Status::error(std::string(name) +
                           " is null; a varlen kernel reads the sequences' "
                           "offsets from it");
    if (pointer % alignof(int32_t) != 0)
      return Status::error(std::string(name) +
                           " must be 4-byte aligned (int32 offsets)");
  }
  return Status::success();
}

} // namespace

Status validateAttentionForward(const KernelMetadata &kernelMetadata,
                                const AttentionArgs &a) {
  // A kernel with runtime shapes is checked as built for the call's shape.
  std::optional<KernelMetadata> shaped;
  const KernelMetadata *call = nullptr;
  FA_RT_RETURN_IF_ERROR(metadataForCall(kernelMetadata, a, shaped, call));
  const KernelMetadata &m = *call;
  if (m.kind != KernelKind::Forward)
    return Status::error("kernel '" + m.entry + "' is a " + toString(m.kind) +
                         " kernel; attentionForward needs a forward kernel");
  const ProblemDims dims = problemDims(m, a);
  FA_RT_RETURN_IF_ERROR(checkDims(dims, a));
  std::vector<TensorView> tensors = {
      tensor4("query", a.q, a.batch, a.headsQ, a.seqQ, a.headDim, a.strideQ,
              a.dtype, true),
      tensor4("key", a.k, a.batch, a.headsKV, a.seqKV, a.headDim, a.strideK,
              a.dtype, true),
      tensor4("value", a.v, a.batch, a.headsKV, a.seqKV, a.headDimV, a.strideV,
              a.dtype, true),
      tensor4("output", a.o, a.batch, a.headsQ, a.seqQ, a.headDimV, a.strideO,
              a.outputDtype(), true),
      lseView(a.lse, a.batch, a.headsQ, a.seqQ, a.strideLSE, m.hasArg("lse")),
      descaleView("q_descale", a.qDescale, a.batch, a.headsKV, m.isFP8()),
      descaleView("k_descale", a.kDescale, a.batch, a.headsKV, m.isFP8()),
      descaleView("v_descale", a.vDescale, a.batch, a.headsKV, m.isFP8()),
  };
  // Q, K and V behind a tensor map are read through it only.
  for (auto [index, name] : {std::pair<size_t, const char *>{0, "tmap_q"},
                             {1, "tmap_k"},
                             {2, "tmap_v"}})
    tensors[index].tensorMapped = m.findTensorMap(name) && m.hasArg(name);
  FA_RT_RETURN_IF_ERROR(checkElementCounts(tensors));
  FA_RT_RETURN_IF_ERROR(checkAgainstKernel(m, dims, a));
  if (m.isFP8() && a.outDtype != m.outDtype)
    return Status::error(std::string("output dtype ") + toString(a.outDtype) +
                         " does not match the kernel's " +
                         toString(m.outDtype));
  if (!m.isFP8() && (a.qDescale || a.kDescale || a.vDescale))
    return Status::error("descales given, but kernel '" + m.entry + "' takes " +
                         toString(m.dtype) +
                         " inputs (descales dequantize e4m3 ones)");
  FA_RT_RETURN_IF_ERROR(checkPointersAndLayouts(tensors));
  FA_RT_RETURN_IF_ERROR(checkSequenceOffsets(m, a));
  return checkOverlaps(tensors, {3, 4});
}

//===----------------------------------------------------------------------===//
// Backward
//===----------------------------------------------------------------------===//

void AttentionBackwardArgs::setContiguousStrides() {
  AttentionArgs f;
  f.batch = batch;
  f.headsQ = headsQ;
  f.headsKV = headsKV;
  f.seqQ = seqQ;
  f.seqKV = seqKV;
  f.headDim = headDim;
  f.headDimV = headDimV;
  f.setContiguousStrides();
  strideQ = strideDQ = f.strideQ;
  strideK = strideDK = f.strideK;
  strideV = strideDV = f.strideV;
  strideO = strideDO = f.strideO;
  strideLSE = f.strideLSE;
}

AttentionBackwardArgs
AttentionBackwardArgs::fromMetadata(const KernelMetadata &m) {
  return argsFromMetadata<AttentionBackwardArgs>(m);
}

BackwardWorkspaceLayout backwardWorkspaceLayout(const KernelMetadata &m) {
  auto mul = [](int64_t x, int64_t y) {
    int64_t r;
    return x < 0 || y < 0 || __builtin_mul_overflow(x, y, &r) ? int64_t(-1) : r;
  };
  BackwardWorkspaceLayout l;
  int64_t rows = mul(mul(m.batch, m.headsQ), m.seqQ);
  int64_t acc = mul(rows, m.headDim);
  if (rows < 0 || acc < 0 || rows > kMaxTensorElements ||
      acc > kMaxTensorElements)
    return l; // Unsupported sizes: validation rejects them.
  l.deltaOffset = 0;
  l.deltaBytes = size_t(rows) * sizeof(float);
  l.dqAccOffset = alignUp(l.deltaBytes, kWorkspaceAlignment);
  l.dqAccBytes = size_t(acc) * sizeof(float);
  l.totalBytes = l.dqAccOffset + alignUp(l.dqAccBytes, kWorkspaceAlignment);
  if (m.deterministic && m.blockQ > 0) {
    int64_t turns =
        mul(mul(m.batch, m.headsQ), (m.seqQ + m.blockQ - 1) / m.blockQ);
    l.dqTurnsOffset = l.totalBytes;
    l.dqTurnsBytes = size_t(turns) * sizeof(int32_t);
    l.totalBytes += alignUp(l.dqTurnsBytes, kWorkspaceAlignment);
  }
  return l;
}

size_t attentionBackwardWorkspaceBytes(const KernelMetadata &m) {
  return backwardWorkspaceLayout(m).totalBytes;
}

size_t attentionBackwardWorkspaceBytes(const KernelMetadata &m,
                                       const AttentionBackwardArgs &a) {
  std::optional<KernelMetadata> shaped;
  const KernelMetadata *call = nullptr;
  if (!metadataForCall(m, a, shaped, call).ok())
    return 0;
  return attentionBackwardWorkspaceBytes(*call);
}

namespace {

/// Dense [B, Hq, Nq] strides (saturated where a shape overflows, which
/// validation rejects): the kernels read dlse so.
std::array<int64_t, 3> contiguousRows(const AttentionBackwardArgs &a) {
  AttentionBackwardArgs dense = a;
  dense.setContiguousStrides();
  return dense.strideLSE;
}

std::vector<TensorView> backwardTensors(const KernelMetadata &m,
                                        const AttentionBackwardArgs &a) {
  return {
      tensor4("query", a.q, a.batch, a.headsQ, a.seqQ, a.headDim, a.strideQ,
              a.dtype, takes(m, "q")),
      tensor4("key", a.k, a.batch, a.headsKV, a.seqKV, a.headDim, a.strideK,
              a.dtype, takes(m, "k")),
      tensor4("value", a.v, a.batch, a.headsKV, a.seqKV, a.headDimV, a.strideV,
              a.dtype, takes(m, "v")),
      tensor4("output", a.o, a.batch, a.headsQ, a.seqQ, a.headDimV, a.strideO,
              a.dtype, takes(m, "o")),
      tensor4("grad_output", a.dO, a.batch, a.headsQ, a.seqQ, a.headDimV,
              a.strideDO, a.dtype, takes(m, "do")),
      lseView(a.lse, a.batch, a.headsQ, a.seqQ, a.strideLSE, takes(m, "lse")),
      tensor4("grad_query", a.dq, a.batch, a.headsQ, a.seqQ, a.headDim,
              a.strideDQ, a.dtype, takes(m, "dq")),
      tensor4("grad_key", a.dk, a.batch, a.headsKV, a.seqKV, a.headDim,
              a.strideDK, a.dtype, takes(m, "dk")),
      tensor4("grad_value", a.dv, a.batch, a.headsKV, a.seqKV, a.headDimV,
              a.strideDV, a.dtype, takes(m, "dv")),
      lseView(a.dlse, a.batch, a.headsQ, a.seqQ, contiguousRows(a),
              takes(m, "dlse"), "grad_lse"),
  };
}

} // namespace

Status validateAttentionBackward(const KernelMetadata &kernelMetadata,
                                 const AttentionBackwardArgs &a) {
  // A varlen kernel is checked as built for the call's shape.
  std::optional<KernelMetadata> shaped;
  const KernelMetadata *call = nullptr;
  FA_RT_RETURN_IF_ERROR(metadataForCall(kernelMetadata, a, shaped, call));
  const KernelMetadata &m = *call;
  if (m.kind != KernelKind::Backward)
    return Status::error("kernel '" + m.entry + "' is a " + toString(m.kind) +
                         " kernel; attentionBackward needs a backward kernel");
  const ProblemDims dims = problemDims(m, a);
  FA_RT_RETURN_IF_ERROR(checkDims(dims, a));
  std::vector<TensorView> tensors = backwardTensors(m, a);
  FA_RT_RETURN_IF_ERROR(checkElementCounts(tensors));
  FA_RT_RETURN_IF_ERROR(checkAgainstKernel(m, dims, a));
  FA_RT_RETURN_IF_ERROR(checkPointersAndLayouts(tensors));
  FA_RT_RETURN_IF_ERROR(checkSequenceOffsets(m, a));
  // A kernel set without the gradient of lse must not be handed one.
  if (a.dlse != 0 && !takes(m, "dlse"))
    return Status::error("grad_lse pointer given, but kernel '" + m.entry +
                         "' was not compiled with the gradient of lse "
                         "(grad_lse): its gradients would leave it out");
  return checkOverlaps(tensors, {6, 7, 8});
}

Status validateAttentionBackward(const KernelMetadata &kernelMetadata,
                                 const AttentionBackwardArgs &a,
                                 CUdeviceptr workspace) {
  FA_RT_RETURN_IF_ERROR(validateAttentionBackward(kernelMetadata, a));
  // The workspace of the call's shape.
  std::optional<KernelMetadata> shaped;
  const KernelMetadata *call = nullptr;
  FA_RT_RETURN_IF_ERROR(metadataForCall(kernelMetadata, a, shaped, call));
  const KernelMetadata &m = *call;
  if (workspace == 0)
    return Status::error("workspace pointer is null (allocate "
                         "attentionBackwardWorkspaceBytes() = " +
                         std::to_string(attentionBackwardWorkspaceBytes(m)) +
                         " bytes)");
  if (workspace % kWorkspaceAlignment != 0)
    return Status::error("workspace pointer " + hexPtr(workspace) + " is not " +
                         std::to_string(kWorkspaceAlignment) + "-byte aligned");
  std::vector<TensorView> tensors = backwardTensors(m, a);
  FA_RT_RETURN_IF_ERROR(checkElementCounts(tensors));
  tensors.push_back({"workspace",
                     workspace,
                     {int64_t(attentionBackwardWorkspaceBytes(m))},
                     {1},
                     1,
                     kWorkspaceAlignment,
                     true});
  tensors.back().numel = tensors.back().shape[0];
  return checkOverlaps(tensors, {tensors.size() - 1});
}

namespace {

/// The device pointers a forward launch's parameters and tensor maps name.
std::vector<NamedPointer> forwardPointers(const AttentionArgs &a) {
  return {{"q", a.q, a.strideQ},
          {"k", a.k, a.strideK},
          {"v", a.v, a.strideV},
          {"o", a.o, a.strideO},
          {"lse", a.lse},
          {"q_descale", a.qDescale},
          {"k_descale", a.kDescale},
          {"v_descale", a.vDescale},
          {"cu_seqlens_q", a.cuSeqlensQ},
          {"cu_seqlens_k", a.cuSeqlensK}};
}

/// The same for a backward launch, the scratch tensors included.
std::vector<NamedPointer> backwardPointers(const KernelMetadata &m,
                                           const AttentionBackwardArgs &a,
                                           CUdeviceptr workspace) {
  const BackwardWorkspaceLayout ws = backwardWorkspaceLayout(m);
  return {{"q", a.q},
          {"k", a.k},
          {"v", a.v},
          {"o", a.o},
          {"do", a.dO},
          {"lse", a.lse},
          {"dlse", a.dlse},
          {"delta", workspace + ws.deltaOffset},
          {"dq_acc", workspace + ws.dqAccOffset},
          {"dq_turns", workspace + ws.dqTurnsOffset},
          {"dq", a.dq},
          {"dk", a.dk},
          {"dv", a.dv},
          {"cu_seqlens_q", a.cuSeqlensQ},
          {"cu_seqlens_k", a.cuSeqlensK}};
}

/// The driver's tensor map encoder if the kernel takes tensor maps, else
/// null: a kernel without them must not need a driver that has one.
StatusOr<TensorMapEncodeFn> encoderFor(const Kernel &kernel) {
  if (kernel.metadata().tensorMaps.empty())
    return TensorMapEncodeFn(nullptr);
  return tensorMapEncoder(*kernel.driver());
}

} // namespace

Status launchOne(const Kernel &kernel, CUfunction fn, const LaunchSpec &launch,
                 KernelParams &params, CUstream stream) {
  Driver &driver = *kernel.driver();
  CUresult result = driver.api().launchKernel(
      fn, launch.grid.x, launch.grid.y, launch.grid.z, launch.block.x,
      launch.block.y, launch.block.z, launch.sharedBytes, stream, params.data(),
      nullptr);
  if (result == CUDA_SUCCESS)
    return Status::success();
  return driver.check(result, "cuLaunchKernel")
      .withContext("launching '" + launch.entry + "'");
}

StatusOr<KernelParams> forwardKernelParams(const KernelMetadata &m,
                                           const AttentionArgs &args,
                                           TensorMapEncodeFn encode) {
  return buildKernelParams(m, m.mainLaunch(), forwardPointers(args), encode);
}

StatusOr<std::vector<KernelParams>>
backwardKernelParams(const KernelMetadata &m, const AttentionBackwardArgs &args,
                     CUdeviceptr workspace, TensorMapEncodeFn encode,
                     TensorMapCache *cache) {
  const std::vector<NamedPointer> pointers =
      backwardPointers(m, args, workspace);
  std::vector<KernelParams> all;
  for (const LaunchSpec &launch : m.launches()) {
    StatusOr<KernelParams> params =
        buildKernelParams(m, launch, pointers, encode, cache);
    if (!params.ok())
      return params.status();
    all.push_back(std::move(*params));
  }
  return all;
}

Status attentionForward(const Kernel &kernel, const AttentionArgs &args,
                        CUstream stream) {
  // Errors name the kernel; a call that succeeds builds no text for that.
  auto failed = [&](const Status &s) {
    return s.withContext("attentionForward(" + kernel.metadata().entry + ")");
  };
  // Runtime shapes: the grid and the size parameters are the call's.
  std::shared_ptr<const KernelMetadata> shaped;
  const KernelMetadata *call = nullptr;
  if (Status s = metadataForLaunch(kernel, args, shaped, call); !s.ok())
    return failed(s);
  const KernelMetadata &m = *call;
  if (Status s = validateAttentionForward(m, args); !s.ok())
    return failed(s);
  if (!kernel.loaded())
    return failed(Status::error("kernel is not loaded"));
  ContextScope scope(*kernel.driver());
  FA_RT_RETURN_IF_ERROR(scope.status());
  StatusOr<TensorMapEncodeFn> encode = encoderFor(kernel);
  if (!encode.ok())
    return failed(encode.status());
  const LaunchSpec launch = m.mainLaunch();
  StatusOr<KernelParams> params = buildKernelParams(
      m, launch, forwardPointers(args), *encode, &kernel.tensorMaps());
  if (!params.ok())
    return failed(params.status());
  if (Status s = launchOne(kernel, kernel.function(), launch, *params, stream);
      !s.ok())
    return failed(s);
  return Status::success();
}

Status attentionBackward(const Kernel &kernel,
                         const AttentionBackwardArgs &args,
                         CUdeviceptr workspace, CUstream stream) {
  // Errors name the kernel; a call that succeeds builds no text for that.
  auto failed = [&](const Status &s) {
    return s.withContext("attentionBackward(" + kernel.metadata().entry + ")");
  };
  // Packed sequences: the grids and the size parameters are the call's.
  std::shared_ptr<const KernelMetadata> shaped;
  const KernelMetadata *call = nullptr;
  if (Status s = metadataForLaunch(kernel, args, shaped, call); !s.ok())
    return failed(s);
  const KernelMetadata &m = *call;
  if (Status s = validateAttentionBackward(m, args, workspace); !s.ok())
    return failed(s);
  if (!kernel.loaded())
    return failed(Status::error("kernel is not loaded"));
  const std::vector<LaunchSpec> launches = m.launches();
  const CUfunction functions[] = {kernel.preFunction(), kernel.function(),
                                  kernel.postFunction()};
  for (size_t i = 0; i < launches.size(); ++i)
    if (!functions[i])
      return failed(
          Status::error("kernel '" + launches[i].entry + "' is not loaded"));
  ContextScope scope(*kernel.driver());
  FA_RT_RETURN_IF_ERROR(scope.status());
  // Every launch's parameters first: nothing is launched if one fails.
  StatusOr<TensorMapEncodeFn> encode = encoderFor(kernel);
  if (!encode.ok())
    return failed(encode.status());
  StatusOr<std::vector<KernelParams>> params =
      backwardKernelParams(m, args, workspace, *encode, &kernel.tensorMaps());
  if (!params.ok())
    return failed(params.status());
  // A deterministic backward's turns start at zero on every call.
  if (m.deterministic) {
    const BackwardWorkspaceLayout ws = backwardWorkspaceLayout(m);
    Driver &driver = *kernel.driver();
    CUresult r =
        driver.api().memsetD32Async(workspace + ws.dqTurnsOffset, 0,
                                    ws.dqTurnsBytes / sizeof(int32_t), stream);
    if (r != CUDA_SUCCESS)
      return failed(driver.check(r, "cuMemsetD32Async"));
  }
  for (size_t i = 0; i < launches.size(); ++i)
    if (Status s =
            launchOne(kernel, functions[i], launches[i], (*params)[i], stream);
        !s.ok())
      return failed(s);
  return Status::success();
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

double attentionBackwardFlops(const KernelMetadata &m) {
  return kBackwardFlopsFactor * attentionForwardFlops(m);
}

} // namespace fa::rt
