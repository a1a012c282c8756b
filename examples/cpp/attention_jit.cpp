//===- attention_jit.cpp - FlashMLIR's JIT from C++, end to end -----------===//
//
// Describes one attention problem, has the JIT compile its forward and
// backward kernels on first use (later runs load them from the kernel cache),
// runs both on device buffers and checks one head against the fp64 CPU
// reference. Every FlashMLIR call returns a Status (or StatusOr) instead of
// throwing; the example prints the message of the ones that fail, including
// one call that is wrong on purpose.
//
//   attention_jit [CACHE_DIR]   (default: $FLASHMLIR_CACHE_DIR or
//                                ~/.cache/flashmlir)
//
// Exit status: 0 when the results match the reference, 1 on an error, 77
// (the "skipped" of ctest and automake) without a CUDA device.
//
//===----------------------------------------------------------------------===//

#include "fa/Jit/Jit.h"
#include "fa/Reference/Reference.h"
#include "fa/Runtime/Runtime.h"

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace rt = fa::rt;
namespace jit = fa::jit;
namespace ref = fa::ref;

namespace {

constexpr int kSkipped = 77;

int fail(const char *what, const rt::Status &status) {
  std::fprintf(stderr, "error: %s: %s\n", what, status.message().c_str());
  return 1;
}

/// A tensor twice: the bf16 bits on the device and the same (rounded) values
/// as doubles on the host, for the reference.
struct Tensor {
  rt::DeviceBuffer device;
  std::vector<double> host;
};

/// A device buffer of `count` elements of `dtype`, filled with reproducible
/// values in [-1, 1) when `fill` is set.
rt::StatusOr<Tensor> makeTensor(rt::DType dtype, int64_t count, bool fill,
                                uint32_t seed) {
  rt::StatusOr<rt::DeviceBuffer> buffer =
      rt::DeviceBuffer::allocate(count * rt::elementSize(dtype));
  if (!buffer.ok())
    return buffer.status();
  Tensor tensor{std::move(*buffer), std::vector<double>(count)};
  if (!fill)
    return tensor;
  std::vector<uint16_t> bits(count);
  for (int64_t i = 0; i < count; ++i) {
    seed = seed * 1664525u + 1013904223u; // Numerical Recipes' LCG.
    bits[i] = rt::floatTo16(dtype, float(seed >> 8) / float(1 << 23) - 1.0f);
    tensor.host[i] = rt::from16(dtype, bits[i]);
  }
  rt::Status status =
      tensor.device.upload(bits.data(), count * rt::elementSize(dtype));
  if (!status.ok())
    return status;
  return tensor;
}

/// The device tensor's values as doubles.
rt::StatusOr<std::vector<double>> download(rt::DType dtype, const Tensor &t) {
  std::vector<uint16_t> bits(t.host.size());
  rt::Status status =
      t.device.download(bits.data(), bits.size() * rt::elementSize(dtype));
  if (!status.ok())
    return status;
  std::vector<double> values(bits.size());
  for (size_t i = 0; i < bits.size(); ++i)
    values[i] = rt::from16(dtype, bits[i]);
  return values;
}

/// The `perHead` elements of head `index` (b * H + h) of a [B, H, N, ...]
/// tensor: each head's rows are contiguous.
std::vector<double> headOf(const std::vector<double> &t, int64_t index,
                           int64_t perHead) {
  return {t.begin() + index * perHead, t.begin() + (index + 1) * perHead};
}

} // namespace

int main(int argc, char **argv) {
  // The problem: bf16, batch 2, 8 heads, 1000 queries and keys, head dim 128,
  // causal. The config is the JIT's cache key: every field that changes the
  // kernel is in it.
  mlir::fa::AttentionConfig config;
  config.dtype = "bf16";
  config.batch = 2;
  config.headsQ = config.headsKV = 8;
  config.seqQ = config.seqKV = 1000;
  config.headDim = config.headDimV = 128;
  config.causal = true;

  // The driver is dlopen'ed on first use: a machine without one gets an
  // error Status here, not a crash or a link error.
  rt::Driver &driver = rt::Driver::get();
  if (rt::Status status = driver.initialize(); !status.ok()) {
    std::printf("no CUDA device: %s\n", status.message().c_str());
    return kSkipped;
  }
  std::printf("device: %s\n", driver.device().describe().c_str());

  // Compiled kernels are cached on disk (PTX + launch metadata): the first
  // run compiles, later runs and other processes load them.
  rt::KernelCache cache(argc > 1 ? argv[1] : "");
  if (!cache.diskEnabled())
    std::printf("kernel cache in memory only: %s\n",
                cache.diskProblem().c_str());

  rt::StatusOr<jit::JitKernel> forward = jit::getForwardKernel(config, cache);
  if (!forward.ok())
    return fail("forward kernel", forward.status());
  rt::StatusOr<jit::JitKernel> backward = jit::getBackwardKernel(config, cache);
  if (!backward.ok())
    return fail("backward kernel", backward.status());
  for (const jit::JitKernel *kernel : {&*forward, &*backward}) {
    std::printf("%s kernel: %s (cache: %s)\n",
                rt::toString(kernel->kernel.metadata().kind),
                kernel->compiled ? "compiled" : "not compiled",
                rt::toString(kernel->outcome));
    if (!kernel->warning.empty())
      std::printf("  cache warning: %s\n", kernel->warning.c_str());
  }

  // The launch arguments start from the kernel's metadata (shapes, dtype,
  // masks, dense strides); the caller adds the device pointers.
  const rt::KernelMetadata &meta = forward->kernel.metadata();
  rt::AttentionArgs args = rt::AttentionArgs::fromMetadata(meta);
  ref::AttentionShape shape{args.batch, args.headsQ,  args.headsKV, args.seqQ,
                            args.seqKV, args.headDim, args.headDimV};
  const rt::DType dtype = args.dtype;
  rt::StatusOr<Tensor> q = makeTensor(dtype, ref::numelQ(shape), true, 1),
                       k = makeTensor(dtype, ref::numelK(shape), true, 2),
                       v = makeTensor(dtype, ref::numelV(shape), true, 3),
                       o = makeTensor(dtype, ref::numelO(shape), false, 0),
                       dO = makeTensor(dtype, ref::numelO(shape), true, 4),
                       dq = makeTensor(dtype, ref::numelQ(shape), false, 0),
                       dk = makeTensor(dtype, ref::numelK(shape), false, 0),
                       dv = makeTensor(dtype, ref::numelV(shape), false, 0);
  rt::StatusOr<rt::DeviceBuffer> lse =
      rt::DeviceBuffer::allocate(ref::numelLSE(shape) * sizeof(float));
  rt::StatusOr<rt::DeviceBuffer> workspace = rt::DeviceBuffer::allocate(
      rt::attentionBackwardWorkspaceBytes(backward->kernel.metadata()));
  for (const auto *t : {&q, &k, &v, &o, &dO, &dq, &dk, &dv})
    if (!t->ok())
      return fail("device tensor", t->status());
  if (!lse.ok() || !workspace.ok())
    return fail("device buffer", lse.ok() ? workspace.status() : lse.status());

  args.q = q->device.ptr();
  args.k = k->device.ptr();
  args.v = v->device.ptr();
  args.o = o->device.ptr();
  args.lse = lse->ptr();

  // A wrong call on purpose: the runtime checks every launch against the
  // kernel's metadata on the host and refuses it with a message, launching
  // nothing.
  rt::AttentionArgs wrong = args;
  wrong.seqQ = 999;
  rt::Status refused = rt::attentionForward(forward->kernel, wrong);
  std::printf("a call with the wrong length is refused: %s\n",
              refused.ok() ? "(accepted!)" : refused.message().c_str());
  if (refused.ok())
    return 1;

  if (rt::Status status = rt::attentionForward(forward->kernel, args);
      !status.ok())
    return fail("forward", status);

  rt::AttentionBackwardArgs grads =
      rt::AttentionBackwardArgs::fromMetadata(backward->kernel.metadata());
  grads.q = args.q;
  grads.k = args.k;
  grads.v = args.v;
  grads.o = args.o;
  grads.lse = args.lse;
  grads.dO = dO->device.ptr();
  grads.dq = dq->device.ptr();
  grads.dk = dk->device.ptr();
  grads.dv = dv->device.ptr();
  if (rt::Status status =
          rt::attentionBackward(backward->kernel, grads, workspace->ptr());
      !status.ok())
    return fail("backward", status);
  // Launches are asynchronous (stream 0 here); wait before reading back.
  if (rt::Status status = rt::synchronize(); !status.ok())
    return fail("synchronize", status);

  // The fp64 reference on the last head (the heads are independent, and one
  // keeps the CPU's share short), fed the bf16-rounded inputs.
  const int64_t head = shape.batch * shape.headsQ - 1;
  const int64_t rowsQ = shape.seqQ, rowsK = shape.seqKV, d = shape.headDim;
  ref::AttentionShape one{1, 1, 1, rowsQ, rowsK, d, shape.headDimV};
  ref::AttentionParams params;
  params.scale = args.scale;
  params.causal = args.causal;
  std::vector<double> hq = headOf(q->host, head, rowsQ * d),
                      hk = headOf(k->host, head, rowsK * d),
                      hv = headOf(v->host, head, rowsK * d),
                      hdO = headOf(dO->host, head, rowsQ * d);
  std::vector<double> refO(rowsQ * d), refLSE(rowsQ), refDQ(rowsQ * d),
      refDK(rowsK * d), refDV(rowsK * d);
  ref::attentionForward(one, params, hq.data(), hk.data(), hv.data(),
                        refO.data(), refLSE.data());
  ref::attentionBackward(one, params, hq.data(), hk.data(), hv.data(),
                         refO.data(), hdO.data(), refLSE.data(), refDQ.data(),
                         refDK.data(), refDV.data());

  // Relative L2 errors; bf16 keeps 8 bits of mantissa, so 1e-2 (forward) and
  // 2e-2 (gradients, which accumulate more roundings) are its usual bounds.
  struct Check {
    const char *name;
    const Tensor &tensor;
    const std::vector<double> &want;
    double bound;
  } checks[] = {{"o", *o, refO, 1e-2},
                {"dq", *dq, refDQ, 2e-2},
                {"dk", *dk, refDK, 2e-2},
                {"dv", *dv, refDV, 2e-2}};
  bool ok = true;
  for (const Check &check : checks) {
    rt::StatusOr<std::vector<double>> got = download(dtype, check.tensor);
    if (!got.ok())
      return fail(check.name, got.status());
    std::vector<double> gotHead = headOf(*got, head, check.want.size());
    double err = ref::relativeL2Error(gotHead.data(), check.want.data(),
                                      int64_t(check.want.size()));
    std::printf("%-2s relative L2 error %.2e (bound %.0e)\n", check.name, err,
                check.bound);
    ok = ok && err <= check.bound;
  }
  std::printf("%s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
