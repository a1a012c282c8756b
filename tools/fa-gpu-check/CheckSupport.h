//===- CheckSupport.h - Pieces shared by the kernel checks ------*- C++ -*-===//
//
// Tolerances, random inputs, timing and the kernel header line of
// fa-gpu-check, shared by the dense checks (Check.cpp) and the packed
// sequence check (VarlenCheck.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef FA_TOOLS_FAGPUCHECK_CHECKSUPPORT_H
#define FA_TOOLS_FAGPUCHECK_CHECKSUPPORT_H

#include "Check.h"

#include "fa/Reference/Reference.h"
#include "fa/Runtime/Runtime.h"

#include <algorithm>
#include <atomic>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace fa::check {

constexpr size_t kGuardBytes = 4096; // Poisoned canary after each output.
constexpr double kLSETolerance = 1e-4;

/// The relative L2 bound of O (rounded to `dtype`).
double outputTolerance(rt::DType dtype);
/// The bound of gradientError() for dQ, dK and dV of `dtype`.
double gradientTolerance(rt::DType dtype);
/// ||out - ref|| / max(||ref||, 0.1 sqrt(n)): a relative L2 error whose
/// denominator is floored at the O(1) scale of the inputs, so an exactly
/// zero gradient (e.g. N = 1) is judged in absolute terms. +inf if `out`
/// has a non-finite element.
double gradientError(const std::vector<double> &out,
                     const std::vector<double> &ref);

/// Copies rows [start, start + n) of each head of a packed [H, T, X] buffer
/// into a dense [H, n, X] one, or back (`scatter`): one packed sequence.
template <typename T>
void copyRows(std::vector<T> &packed, std::vector<T> &dense, int64_t heads,
              int64_t total, int64_t start, int64_t n, int64_t width,
              bool scatter) {
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t r = 0; r < n; ++r)
      for (int64_t x = 0; x < width; ++x) {
        T &p = packed[size_t((h * total + start + r) * width + x)];
        T &d = dense[size_t((h * n + r) * width + x)];
        if (scatter)
          p = d;
        else
          d = p;
      }
}

/// Runs body(t) for t in [0, tasks) on all hardware threads.
template <typename Body> void parallelFor(int64_t tasks, const Body &body) {
  std::atomic<int64_t> next{0};
  auto worker = [&] {
    for (int64_t t; (t = next.fetch_add(1)) < tasks;)
      body(t);
  };
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  threads = unsigned(std::max<int64_t>(1, std::min<int64_t>(threads, tasks)));
  std::vector<std::thread> pool;
  for (unsigned i = 1; i < threads; ++i)
    pool.emplace_back(worker);
  worker();
  for (std::thread &t : pool)
    t.join();
}

/// Rows after the last packed sequence: never a sequence's.
constexpr int64_t kPaddingRows = 5;

/// Packed sequences of (query, key) lengths: their running offsets, the
/// longest of each, and the rows with kPaddingRows after the last.
struct PackedSequences {
  std::vector<int32_t> cuQ{0}, cuK{0};
  int64_t maxQ = 0, maxK = 0, totalQ = 0, totalK = 0;
  explicit PackedSequences(
      const std::vector<std::pair<int64_t, int64_t>> &lengths) {
    for (auto [nq, nk] : lengths) {
      cuQ.push_back(cuQ.back() + int32_t(nq));
      cuK.push_back(cuK.back() + int32_t(nk));
      maxQ = std::max(maxQ, nq);
      maxK = std::max(maxK, nk);
    }
    totalQ = cuQ.back() + kPaddingRows;
    totalK = cuK.back() + kPaddingRows;
  }
  int64_t count() const { return int64_t(cuQ.size()) - 1; }
};

/// `s` in double quotes, quotes and newlines in it replaced.
std::string quoted(std::string s);

/// The reference's scale and masks of kernel `m`.
fa::ref::AttentionParams referenceParams(const rt::KernelMetadata &m);

/// Ends a verdict line after its errors: the timing when medianMs >= 0
/// (TFLOP/s of `flops`), the extra text and the reason; returns the exit
/// status (0 pass, 1 fail).
int finishVerdict(const std::string &problems, double medianMs, double flops,
                  const CheckOptions &opt);

/// Median milliseconds of `launch` between device events: opt.warmup
/// untimed runs, then opt.iters timed ones, each after `prepare` (which
/// re-poisons the outputs) outside the timed region.
rt::StatusOr<double> timeLaunches(const CheckOptions &opt, const char *what,
                                  const std::function<rt::Status()> &prepare,
                                  const std::function<rt::Status()> &launch);

/// The check loop of the packed-sequence checks: `launch` after `poison`,
/// then `check` (which appends to `problems`), opt.iters times while no
/// problem shows (once with --bench); with --bench and no problem, then
/// timeLaunches() of `what` and `check` again. Returns the median
/// milliseconds (-1 without --bench), or the error that stopped it.
rt::StatusOr<double>
checkAndTime(const CheckOptions &opt, const char *what,
             const std::function<rt::Status()> &poison,
             const std::function<rt::Status()> &launch,
             const std::function<rt::Status(std::string &)> &check,
             std::string &problems);

/// Prints which kernel is checked, the seed, and the driver's JIT log.
void printKernelHeader(const rt::Kernel &kernel, const CheckOptions &opt);

/// Fresh normal(0, 1) inputs rounded to the dtype: the device gets the
/// 16-bit values, the reference exactly what they round to.
class RandomInputs {
public:
  RandomInputs(rt::DType dtype, uint64_t seed) : dtype(dtype), rng(seed) {}
  void operator()(int64_t n, std::vector<uint16_t> &bits,
                  std::vector<double> &values) {
    bits.resize(size_t(n));
    values.resize(size_t(n));
    for (int64_t i = 0; i < n; ++i) {
      bits[i] = rt::floatTo16(dtype, normal(rng));
      values[i] = rt::from16(dtype, bits[i]);
    }
  }

private:
  rt::DType dtype;
  std::mt19937_64 rng;
  std::normal_distribution<float> normal{0.0f, 1.0f};
};

/// Checks a varlen forward kernel ("varlen": true) on the packed sequences of
/// `options.seqlens`; the verdict line as checkKernel's.
int checkVarlenKernel(const rt::Kernel &kernel, const std::string &name,
                      const CheckOptions &options);
/// The same for a varlen backward kernel set (VarlenBackwardCheck.cpp).
int checkVarlenBackwardKernel(const rt::Kernel &kernel, const std::string &name,
                              const CheckOptions &options);

} // namespace fa::check

#endif // FA_TOOLS_FAGPUCHECK_CHECKSUPPORT_H
