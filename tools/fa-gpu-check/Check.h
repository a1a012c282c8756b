//===- Check.h - Run one attention kernel and check it ----------*- C++ -*-===//
//
// The checking code of fa-gpu-check and fa-gpu-check-jit: runs a loaded
// kernel on random inputs, compares it with the fp64 reference, optionally
// times it, and prints one verdict line to stdout.
//
// Forward: compares O and LSE (relative L2; O 1e-2 bf16 / 3e-3 f16, LSE
// 1e-4):
//
//   PASS|FAIL <name> err_o=... err_lse=... [ms=... tflops=...] [<extra>]
//             [reason="..."]
//
// Backward ("kind": "backward"): random q, k, v, dO; O (rounded to the dtype)
// and LSE from the fp64 reference forward; dq/dk/dv and the workspace
// poisoned with NaN; attentionBackward(); dQ, dK, dV compared with the fp64
// reference backward by relative L2 error with the denominator floored at
// 0.1*sqrt(numel) (bounds 2e-2 bf16, 5e-3 f16); --bench times pre + main +
// post together (TFLOP/s with attentionBackwardFlops = 2.5 x forward):
//
//   PASS|FAIL <name> err_dq=... err_dk=... err_dv=... [ms=... tflops=...]
//             [<extra>] [reason="..."]
//
//===----------------------------------------------------------------------===//

#ifndef FA_TOOLS_FAGPUCHECK_CHECK_H
#define FA_TOOLS_FAGPUCHECK_CHECK_H

#include "fa/Runtime/Kernel.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace fa::check {

struct CheckOptions {
  int iters = -1, warmup = -1; ///< -1: defaults (1 check run; 20 timed, 5)
  uint64_t seed = 0;
  bool bench = false;
  std::string extra; ///< Appended to the verdict line, e.g. "cache=hit".
  /// The call's batch and sequence lengths, for a kernel with runtime
  /// shapes (ignored otherwise).
  int64_t batch = 0, seqQ = 0, seqKV = 0;
  /// The (query, key) lengths of the packed sequences a varlen kernel is
  /// checked on (--seqlens).
  std::vector<std::pair<int64_t, int64_t>> seqlens;
};

/// Prints the verdict line of a setup error (to stdout; the message also to
/// stderr; the error fields of `kind`'s verdict line) and returns exit
/// status 2.
int setupError(const std::string &name, const std::string &what,
               const std::string &extra = "",
               rt::KernelKind kind = rt::KernelKind::Forward);

/// Why fa-gpu-check cannot check a kernel with this metadata, or "".
std::string uncheckable(const rt::KernelMetadata &metadata);

/// Runs and checks `kernel` (a loaded forward kernel or backward kernel
/// set); prints the verdict.
/// Returns 0 (pass), 1 (wrong results) or 2 (setup error).
int checkKernel(const rt::Kernel &kernel, const std::string &name,
                const CheckOptions &options);

/// A random seed (printed by checkKernel, so a failure can be rerun).
uint64_t randomSeed();

} // namespace fa::check

#endif // FA_TOOLS_FAGPUCHECK_CHECK_H
