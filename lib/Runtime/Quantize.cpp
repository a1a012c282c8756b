//===- Quantize.cpp - Launching fa.quantize's kernels ---------------------===//

#include "fa/Runtime/Quantize.h"

#include "fa/Runtime/KernelParams.h"

#include "TensorChecks.h"

#include <cstdint>
#include <string>
#include <vector>

namespace fa::rt {

size_t quantizeWorkspaceBytes(const KernelMetadata &m) {
  return size_t(m.batch) * size_t(m.headsKV) * sizeof(int32_t);
}

namespace {

/// x, out, descale and the workspace as validation sees them.
std::vector<TensorView> quantizeTensors(const KernelMetadata &m,
                                        const QuantizeArgs &a,
                                        CUdeviceptr workspace) {
  const std::array<int64_t, 4> dense{};
  std::vector<TensorView> tensors = {
      tensor4("x", a.x, m.batch, m.headsQ, m.seqQ, m.headDim, dense, m.dtype,
              true),
      tensor4("out", a.out, m.batch, m.headsQ, m.seqQ, m.headDim, dense,
              DType::E4M3, true),
      descaleView("descale", a.descale, m.batch, m.headsKV, true),
      {"workspace", workspace, {m.batch, m.headsKV}, {m.headsKV, 1},
       sizeof(int32_t), 4, true}};
  // Dense row-major strides of each shape.
  for (TensorView &t : tensors) {
    t.strides = t.shape;
    for (int i = int(t.shape.size()) - 1, step = 1; i >= 0; --i) {
      t.strides[i] = step;
      step *= int(t.shape[i]);
    }
  }
  return tensors;
}

} // namespace

Status validateQuantize(const KernelMetadata &m, const QuantizeArgs &a,
                        CUdeviceptr workspace) {
  if (m.kind != KernelKind::Quantize)
    return Status::error("kernel '" + m.entry + "' is a " + toString(m.kind) +
                         " kernel; quantize needs a quantization kernel");
  std::vector<TensorView> tensors = quantizeTensors(m, a, workspace);
  FA_RT_RETURN_IF_ERROR(checkElementCounts(tensors));
  FA_RT_RETURN_IF_ERROR(checkPointersAndLayouts(tensors));
  return checkOverlaps(tensors, {1, 2, 3});
}

Status quantize(const Kernel &kernel, const QuantizeArgs &args,
                CUdeviceptr workspace, CUstream stream) {
  const KernelMetadata &m = kernel.metadata();
  const std::string context = "quantize(" + m.entry + ")";
  FA_RT_RETURN_IF_ERROR(
      validateQuantize(m, args, workspace).withContext(context));
  if (!kernel.loaded() || !kernel.preFunction())
    return Status::error(context + ": kernel is not loaded");
  ContextScope scope(*kernel.driver());
  FA_RT_RETURN_IF_ERROR(scope.status());
  const std::vector<NamedPointer> pointers = {{"x", args.x},
                                              {"amax", workspace},
                                              {"out", args.out},
                                              {"descale", args.descale}};
  const std::vector<LaunchSpec> launches = m.launches();
  std::vector<KernelParams> params;
  for (const LaunchSpec &launch : launches) {
    StatusOr<KernelParams> p = buildKernelParams(m, launch, pointers, nullptr);
    if (!p.ok())
      return p.status().withContext(context);
    params.push_back(std::move(*p));
  }
  Driver &driver = *kernel.driver();
  FA_RT_RETURN_IF_ERROR(
      driver
          .check(driver.api().memsetD32Async(workspace, 0,
                                             quantizeWorkspaceBytes(m) /
                                                 sizeof(int32_t),
                                             stream),
                 "cuMemsetD32Async")
          .withContext(context));
  const CUfunction functions[] = {kernel.preFunction(), kernel.function()};
  for (size_t i = 0; i < launches.size(); ++i)
    FA_RT_RETURN_IF_ERROR(
        launchOne(kernel, functions[i], launches[i], params[i], stream)
            .withContext(context));
  return Status::success();
}

} // namespace fa::rt
