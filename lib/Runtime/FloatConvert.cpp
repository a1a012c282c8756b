//===- FloatConvert.cpp - Host bf16 / f16 conversion ----------------------===//

#include "fa/Runtime/FloatConvert.h"

#include <cmath>
#include <cstring>

namespace fa::rt {

namespace {
uint32_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
float floatOf(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
} // namespace

uint16_t floatToBF16(float value) {
  uint32_t x = bitsOf(value);
  if ((x & 0x7fffffffu) > 0x7f800000u) // NaN: keep the sign, make it quiet.
    return uint16_t((x >> 16) | 0x0040u);
  uint32_t lsb = (x >> 16) & 1u;
  x += 0x7fffu + lsb; // Round to nearest, ties to even; overflows to inf.
  return uint16_t(x >> 16);
}

float bf16ToFloat(uint16_t bits) { return floatOf(uint32_t(bits) << 16); }

uint16_t floatToHalf(float value) {
  uint32_t x = bitsOf(value);
  uint16_t sign = uint16_t((x >> 16) & 0x8000u);
  x &= 0x7fffffffu;
  if (x >= 0x7f800000u) { // Inf or NaN.
    if (x == 0x7f800000u)
      return sign | 0x7c00u;
    return uint16_t(sign | 0x7e00u | ((x >> 13) & 0x3ffu));
  }
  if (x >= 0x477ff000u) // >= 65520 rounds to infinity.
    return sign | 0x7c00u;
  uint32_t exp = x >> 23;
  if (exp < 113) { // Below 2^-14: a subnormal half (or zero).
    uint32_t mant = (x & 0x7fffffu) | (exp ? 0x800000u : 0u);
    uint32_t shift = 126 - (exp ? exp : 1); // value = mant * 2^-24 >> shift
    if (shift > 24)
      return sign;
    uint32_t r = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1u)))
      ++r;
    return uint16_t(sign | r);
  }
  uint32_t h = ((exp - 112) << 10) | ((x & 0x7fffffu) >> 13);
  uint32_t rem = x & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u)))
    ++h; // A carry into the exponent is the correct rounding.
  return uint16_t(sign | h);
}

float halfToFloat(uint16_t bits) {
  uint32_t sign = uint32_t(bits & 0x8000u) << 16;
  uint32_t exp = (bits >> 10) & 0x1fu;
  uint32_t mant = bits & 0x3ffu;
  if (exp == 0) {
    float magnitude = std::ldexp(float(mant), -24); // Exact.
    return sign ? -magnitude : magnitude;
  }
  if (exp == 31)
    return floatOf(sign | 0x7f800000u | (mant << 13));
  return floatOf(sign | ((exp + 112) << 23) | (mant << 13));
}

uint8_t floatToE4M3(float value) {
  if (std::isnan(value))
    return 0x7F;
  uint8_t sign = std::signbit(value) ? 0x80 : 0;
  float a = std::fabs(value);
  if (a >= 448.0f)
    return sign | 0x7E;
  if (a < 0x1p-6f) // Subnormals: multiples of 2^-9 (8 is 2^-6's encoding).
    return sign | uint8_t(std::nearbyint(a * 512.0f));
  int e;
  float f = std::frexp(a, &e); // a = f 2^e, f in [0.5, 1)
  int mantissa = int(std::nearbyint((2 * f - 1) * 8));
  int exponent = e - 1 + 7;
  if (mantissa == 8) {
    mantissa = 0;
    ++exponent;
  }
  if (exponent > 15 || (exponent == 15 && mantissa == 7))
    return sign | 0x7E;
  return uint8_t(sign | exponent << 3 | mantissa);
}

float e4m3ToFloat(uint8_t bits) {
  int exponent = (bits >> 3) & 15, mantissa = bits & 7;
  if (exponent == 15 && mantissa == 7)
    return std::nanf("");
  float magnitude = exponent == 0
                        ? std::ldexp(float(mantissa), -9)
                        : std::ldexp(1.0f + mantissa / 8.0f, exponent - 7);
  return (bits & 0x80) ? -magnitude : magnitude;
}

uint16_t floatTo16(DType dtype, float value) {
  return dtype == DType::BF16 ? floatToBF16(value) : floatToHalf(value);
}

float from16(DType dtype, uint16_t bits) {
  return dtype == DType::BF16 ? bf16ToFloat(bits) : halfToFloat(bits);
}

} // namespace fa::rt
