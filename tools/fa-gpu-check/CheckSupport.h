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

#include <functional>
#include <random>
#include <string>
#include <vector>

namespace fa::check {

constexpr size_t kGuardBytes = 4096; // Poisoned canary after each output.
constexpr double kLSETolerance = 1e-4;

/// The relative L2 bound of O (rounded to `dtype`).
double outputTolerance(rt::DType dtype);

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

/// Checks a varlen forward kernel (varlen = 1) on the packed sequences of
/// `options.seqlens`; the verdict line as checkKernel's.
int checkVarlenKernel(const rt::Kernel &kernel, const std::string &name,
                      const CheckOptions &options);

} // namespace fa::check

#endif // FA_TOOLS_FAGPUCHECK_CHECKSUPPORT_H
