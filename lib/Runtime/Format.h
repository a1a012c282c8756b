//===- Format.h - Number formatting shared by the runtime -------*- C++ -*-===//

#ifndef FA_LIB_RUNTIME_FORMAT_H
#define FA_LIB_RUNTIME_FORMAT_H

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace fa::rt::detail {

/// The shortest decimal rendering of `v` that reads back as exactly `v`;
/// integral values print without an exponent ("30", not "3e+01").
inline std::string formatShortest(double v) {
  char buf[64];
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
    return buf;
  }
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v)
      break;
  }
  return buf;
}

} // namespace fa::rt::detail

#endif // FA_LIB_RUNTIME_FORMAT_H
