//===- fa-launch-overhead.cpp - The CPU cost of one forward call ----------===//
//
// How long rt::attentionForward() keeps the calling thread, against a bare
// cuLaunchKernel of the same kernel with parameters built once (issue 12's
// "thin call path": the C++ call at most 3 us above the launch):
//
//   fa-launch-overhead --ptx FILE --meta FILE [--calls N] [--rounds R]
//                      [--shape B,NQ,NKV]
//
// Each round enqueues N calls back to back (N below the driver's queue
// depth, so that the GPU's pace does not enter) and times only the
// enqueueing; the stream is drained between rounds. Reports the best round:
//
//   overhead <name> attention_forward_us=... bare_launch_us=...
//            above_launch_us=... calls=N rounds=R
//
// With FLASHMLIR_LIBCUDA naming libFakeCuda.so (unittests/FakeCuda) it runs
// without a GPU: the launch path's own cost, the driver's taken out.
//
//===----------------------------------------------------------------------===//

#include "fa/Runtime/Runtime.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace fa::rt;

namespace {

struct Options {
  std::string ptxPath, metaPath;
  int calls = 200, rounds = 50;
  int64_t batch = 0, seqQ = 0, seqKV = 0;
};

int usage() {
  std::fprintf(stderr, "usage: fa-launch-overhead --ptx FILE --meta FILE "
                       "[--calls N] [--rounds R] [--shape B,NQ,NKV]\n");
  return 2;
}

int fail(const std::string &what) {
  std::fprintf(stderr, "fa-launch-overhead: %s\n", what.c_str());
  return 2;
}

bool parseOptions(int argc, char **argv, Options &opt) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (i + 1 >= argc)
      return false;
    const char *value = argv[++i];
    char *end = nullptr;
    if (arg == "--ptx")
      opt.ptxPath = value;
    else if (arg == "--meta")
      opt.metaPath = value;
    else if (arg == "--calls")
      opt.calls = int(std::strtol(value, &end, 10));
    else if (arg == "--rounds")
      opt.rounds = int(std::strtol(value, &end, 10));
    else if (arg == "--shape") {
      long long b, q, k;
      if (std::sscanf(value, "%lld,%lld,%lld", &b, &q, &k) != 3)
        return false;
      opt.batch = b, opt.seqQ = q, opt.seqKV = k;
    } else
      return false;
    if (end && *end)
      return false;
  }
  return !opt.ptxPath.empty() && !opt.metaPath.empty() && opt.calls > 0 &&
         opt.rounds > 0;
}

/// Microseconds a call of the best round of `enqueue` (called `calls` times
/// a round; `drain` between rounds).
template <typename Enqueue, typename Drain>
double bestRoundUs(const Options &opt, Enqueue enqueue, Drain drain) {
  double best = 1e30;
  for (int round = 0; round < opt.rounds; ++round) {
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < opt.calls; ++i)
      enqueue();
    auto stop = std::chrono::steady_clock::now();
    drain();
    best = std::min(
        best, std::chrono::duration<double, std::micro>(stop - start).count() /
                  opt.calls);
  }
  return best;
}

} // namespace

int main(int argc, char **argv) {
  Options opt;
  if (!parseOptions(argc, argv, opt))
    return usage();
  KernelMetadata m;
  if (Status s = readKernelMetadataFile(opt.metaPath, m); !s.ok())
    return fail(s.message());
  if (m.kind != KernelKind::Forward || m.varlen || m.isFP8())
    return fail("a bf16/f16 forward kernel without packed sequences, please");
  if (m.runtimeShapes && opt.batch == 0)
    return fail("the kernel has runtime shapes: give --shape B,NQ,NKV");
  std::string ptx;
  if (Status s = readFile(opt.ptxPath, ptx); !s.ok())
    return fail(s.message());
  Driver &driver = Driver::get();
  if (Status s = driver.initialize(); !s.ok())
    return fail(s.message());
  std::fprintf(stderr, "# device: %s\n", driver.device().describe().c_str());
  StatusOr<Kernel> kernel = Kernel::fromPTX(ptx, m, driver);
  if (!kernel.ok())
    return fail(kernel.status().message());

  AttentionArgs args = AttentionArgs::fromMetadata(m);
  if (m.runtimeShapes) {
    args.batch = opt.batch;
    args.seqQ = opt.seqQ;
    args.seqKV = opt.seqKV;
    args.setContiguousStrides();
  }
  size_t elements = size_t(args.strideQ[0]) * size_t(args.batch);
  size_t kvElements = size_t(args.strideK[0]) * size_t(args.batch);
  size_t bytes = elementSize(m.dtype);
  std::vector<DeviceBuffer> buffers;
  for (size_t size : {elements * bytes, kvElements * bytes,
                      size_t(args.strideV[0]) * args.batch * bytes,
                      size_t(args.strideO[0]) * args.batch * bytes,
                      size_t(args.batch * args.headsQ * args.seqQ) * 4}) {
    StatusOr<DeviceBuffer> b = DeviceBuffer::allocate(size, driver);
    if (!b.ok())
      return fail(b.status().message());
    if (Status s = b->fill(0); !s.ok())
      return fail(s.message());
    buffers.push_back(std::move(*b));
  }
  args.q = buffers[0].ptr();
  args.k = buffers[1].ptr();
  args.v = buffers[2].ptr();
  args.o = buffers[3].ptr();
  args.lse = buffers[4].ptr();

  bool failed = false;
  auto drain = [&] { failed |= !synchronize(nullptr, driver).ok(); };
  double ours = bestRoundUs(
      opt, [&] { failed |= !attentionForward(*kernel, args).ok(); }, drain);
  if (Status s = attentionForward(*kernel, args); !s.ok() || failed)
    return fail("attentionForward: " + s.message());

  // The bare launch: the same kernel, parameters built once (the driver
  // encodes tensor maps in the device's context, as attentionForward does).
  ContextScope scope(driver);
  if (!scope.status().ok())
    return fail(scope.status().message());
  StatusOr<KernelMetadata> shaped =
      m.runtimeShapes
          ? m.instantiate(args.batch, args.seqQ, args.seqKV, 0, 0, 0)
          : StatusOr<KernelMetadata>(m);
  if (!shaped.ok())
    return fail(shaped.status().message());
  StatusOr<TensorMapEncodeFn> encode = tensorMapEncoder(driver);
  StatusOr<KernelParams> params = forwardKernelParams(
      *shaped, args, shaped->tensorMaps.empty() ? nullptr : *encode);
  if (!params.ok())
    return fail("the bare launch's parameters: " + params.status().message());
  const LaunchSpec launch = shaped->mainLaunch();
  CUfunction fn = kernel->function();
  double bare = bestRoundUs(
      opt,
      [&] {
        failed |=
            driver.api().launchKernel(
                fn, launch.grid.x, launch.grid.y, launch.grid.z, launch.block.x,
                launch.block.y, launch.block.z, launch.sharedBytes, nullptr,
                params->data(), nullptr) != CUDA_SUCCESS;
      },
      drain);
  if (failed)
    return fail("a bare launch failed");
  std::string name = opt.metaPath.substr(opt.metaPath.rfind('/') + 1);
  std::printf("overhead %s attention_forward_us=%.3f bare_launch_us=%.3f "
              "above_launch_us=%.3f calls=%d rounds=%d\n",
              name.c_str(), ours, bare, ours - bare, opt.calls, opt.rounds);
  return 0;
}
