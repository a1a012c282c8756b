//===- Limits.h - What the kernels and the runtime accept -------*- C++ -*-===//
//
// The limits of the runtime's ABI (docs/runtime.md), in one place for both
// sides: the runtime checks them on every .meta file and launch, and the
// compiler refuses a problem outside them, so that whatever compiles also
// loads and runs. Header-only and MLIR-free (the runtime builds without
// MLIR).
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUNTIME_LIMITS_H
#define FA_RUNTIME_LIMITS_H

#include <cfloat>
#include <cmath>
#include <cstdint>

namespace fa::rt {

/// The largest element count of one tensor: kernels index with 32 bits.
constexpr int64_t kMaxTensorElements = 2147483647; // 2^31 - 1

/// CUDA's grid limits: x up to 2^31-1, y and z up to 65535.
constexpr int64_t kMaxGridX = 2147483647;
constexpr int64_t kMaxGridYZ = 65535;

/// The largest block_q / block_kv: a tile row per thread at most, and CUDA
/// blocks have at most 1024 threads. Bounding the block sizes first keeps
/// the shared-memory and launch arithmetic on them far from overflow.
constexpr int64_t kMaxBlockSize = 1024;

/// Whether `v` is a valid `scale` or nonzero `softcap`: positive, finite
/// and normal. The .meta file carries them as decimal text, which a
/// subnormal need not survive in every reader (strtod reports ERANGE for
/// it), so neither side takes one.
inline bool isValidScaleValue(double v) {
  return std::isfinite(v) && v >= DBL_MIN;
}

} // namespace fa::rt

#endif // FA_RUNTIME_LIMITS_H
