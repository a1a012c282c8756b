//===- FuzzValues.h - Config values drawn from fuzz input -------*- C++ -*-===//
//
// The C API's faConfig from a FuzzedDataProvider, shared by ConfigFuzzer and
// CApiFuzzer: each field is kept, taken from a table of values that sit on a
// boundary (0, -1, powers of two, 2^31 - 1, INT64_MAX, subnormals, NaN, ...)
// or taken raw from the input, so that short inputs reach every check.
//
//===----------------------------------------------------------------------===//

#ifndef FA_TEST_FUZZ_FUZZVALUES_H
#define FA_TEST_FUZZ_FUZZVALUES_H

#include "fa-c/FlashMLIR.h"

#include <fuzzer/FuzzedDataProvider.h>

#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

namespace fa::fuzz {

inline int64_t pickSize(FuzzedDataProvider &in, int64_t keep) {
  // Powers of two around the 32-bit index limit and where block-size
  // arithmetic overflowed (2^56, 2^62), the int64 extremes, negative
  // multiples of 64 (valid-looking head dims).
  constexpr int64_t pow31 = int64_t(1) << 31, pow32 = int64_t(1) << 32;
  constexpr int64_t pow56 = int64_t(1) << 56, pow62 = int64_t(1) << 62;
  static const int64_t table[] = {
      0,     1,     2,         3,    8,     16,     17,        32,    48,
      64,    72,    80,        96,   128,   160,    192,       256,   257,
      512,   1000,  1024,      1025, 65535, 65536,  pow31 - 1, pow31, pow32,
      pow56, pow62, INT64_MAX, -1,   -64,   -pow62, INT64_MIN};
  switch (in.ConsumeIntegralInRange<int>(0, 3)) {
  case 0:
    return keep;
  case 1:
    return table[in.ConsumeIntegralInRange<size_t>(0, std::size(table) - 1)];
  case 2:
    return in.ConsumeIntegralInRange<int64_t>(1, 4096);
  default:
    return in.ConsumeIntegral<int64_t>();
  }
}

inline double pickReal(FuzzedDataProvider &in, double keep) {
  using limits = std::numeric_limits<double>;
  const double inf = limits::infinity(), nan = limits::quiet_NaN();
  // DBL_MIN / 2 and denorm_min are subnormal: the .meta text cannot carry
  // them back.
  const double subnormal = DBL_MIN / 2, smallest = limits::denorm_min();
  const double table[] = {0.0,   1.0,     0.125,     30.0,     -1.0,
                          -0.0,  DBL_MIN, subnormal, smallest, DBL_MAX,
                          1e300, inf,     -inf,      nan};
  switch (in.ConsumeIntegralInRange<int>(0, 2)) {
  case 0:
    return keep;
  case 1:
    return table[in.ConsumeIntegralInRange<size_t>(0, std::size(table) - 1)];
  default:
    return in.ConsumeFloatingPoint<double>();
  }
}

/// A chip name: the supported ones, near misses, or raw text. `storage`
/// keeps the returned pointer valid; nullptr means "the default".
inline const char *pickChip(FuzzedDataProvider &in, std::string &storage) {
  static const char *const table[] = {
      nullptr, "sm_90", "sm_90a",  "sm_80", "sm_86",  "sm_87",
      "sm_89", "sm_75", "sm_100a", "",      "sm_90 ", "compute_90"};
  if (in.ConsumeBool()) {
    storage = in.ConsumeRandomLengthString(24);
    return storage.c_str();
  }
  return table[in.ConsumeIntegralInRange<size_t>(0, std::size(table) - 1)];
}

/// A config: faConfigInit's defaults with fields changed by the input.
inline faConfig pickConfig(FuzzedDataProvider &in, std::string &chipStorage) {
  faConfig c;
  faConfigInit(&c);
  if (in.ConsumeBool())
    c.dtype = in.ConsumeBool() ? in.ConsumeIntegralInRange<int32_t>(0, 4)
                               : in.ConsumeIntegral<int32_t>();
  if (in.ConsumeBool())
    c.out_dtype = in.ConsumeBool() ? in.ConsumeIntegralInRange<int32_t>(0, 4)
                                   : in.ConsumeIntegral<int32_t>();
  if (in.ConsumeBool())
    c.causal = in.ConsumeIntegral<int32_t>();
  c.batch = pickSize(in, c.batch);
  c.heads_q = pickSize(in, c.heads_q);
  c.heads_kv = pickSize(in, c.heads_kv);
  c.seq_q = pickSize(in, c.seq_q);
  c.seq_kv = pickSize(in, c.seq_kv);
  c.head_dim = pickSize(in, c.head_dim);
  c.head_dim_v = pickSize(in, c.head_dim_v);
  c.scale = pickReal(in, c.scale);
  c.window_left = pickSize(in, c.window_left);
  c.window_right = pickSize(in, c.window_right);
  c.softcap = pickReal(in, c.softcap);
  c.block_q = pickSize(in, c.block_q);
  c.block_kv = pickSize(in, c.block_kv);
  c.chip = pickChip(in, chipStorage);
  if (in.ConsumeIntegralInRange<int>(0, 7) == 0)
    c.runtime_shapes = in.ConsumeBool() ? 1 : in.ConsumeIntegral<int32_t>();
  if (in.ConsumeIntegralInRange<int>(0, 7) == 0)
    c.deterministic = in.ConsumeBool() ? 1 : in.ConsumeIntegral<int32_t>();
  if (in.ConsumeIntegralInRange<int>(0, 7) == 0)
    c.grad_lse = in.ConsumeBool() ? 1 : in.ConsumeIntegral<int32_t>();
  return c;
}

/// FA_FORWARD, FA_BACKWARD or any other value.
inline faDirection pickDirection(FuzzedDataProvider &in) {
  switch (in.ConsumeIntegralInRange<int>(0, 7)) {
  case 0:
    return faDirection(in.ConsumeIntegral<int32_t>());
  case 1: // a quantization of the config's q (FA_QUANTIZE)
    return FA_QUANTIZE;
  default:
    return in.ConsumeBool() ? FA_BACKWARD : FA_FORWARD;
  }
}

} // namespace fa::fuzz

#endif // FA_TEST_FUZZ_FUZZVALUES_H
