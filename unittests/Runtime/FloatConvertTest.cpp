//===- FloatConvertTest.cpp - Host bf16 / f16 conversion ------------------===//

#include "fa/Runtime/FloatConvert.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

using namespace fa::rt;

namespace {

float nextUp(float f) { return std::nextafter(f, INFINITY); }
float nextDown(float f) { return std::nextafter(f, -INFINITY); }

/// For every pair of adjacent finite positive values a < b of a 16-bit
/// format: the exact midpoint rounds to the one with an even encoding, points
/// just off the midpoint round to the nearer one, and both round-trip.
void checkRoundToNearestEven(uint16_t (*to16)(float), float (*from16)(uint16_t),
                             uint16_t maxFinite) {
  for (uint32_t bits = 0; bits < maxFinite; ++bits) {
    uint16_t lo = uint16_t(bits), hi = uint16_t(bits + 1);
    float a = from16(lo), b = from16(hi);
    ASSERT_EQ(to16(a), lo) << "round trip of " << a;
    ASSERT_EQ(to16(-a), uint16_t(lo | 0x8000u)) << "round trip of " << -a;
    float mid = a + (b - a) / 2; // Exact: a few more bits than the format.
    ASSERT_EQ(to16(mid), (lo & 1) ? hi : lo) << "midpoint " << mid;
    ASSERT_EQ(to16(nextUp(mid)), hi) << "above midpoint " << mid;
    ASSERT_EQ(to16(nextDown(mid)), lo) << "below midpoint " << mid;
  }
}

TEST(RuntimeFloat, BF16RoundsToNearestEven) {
  EXPECT_EQ(floatToBF16(1.0f), 0x3f80);
  EXPECT_EQ(floatToBF16(-2.0f), 0xc000);
  EXPECT_EQ(floatToBF16(1.0f + 1.0f / 256), 0x3f80); // Tie: to even.
  EXPECT_EQ(floatToBF16(1.0f + 3.0f / 256), 0x3f82); // Tie: to even.
  checkRoundToNearestEven(floatToBF16, bf16ToFloat, 0x7f7f);
}

TEST(RuntimeFloat, BF16SpecialValues) {
  EXPECT_EQ(floatToBF16(INFINITY), 0x7f80);
  EXPECT_EQ(floatToBF16(-INFINITY), 0xff80);
  EXPECT_EQ(floatToBF16(std::numeric_limits<float>::max()), 0x7f80);
  EXPECT_EQ(floatToBF16(-0.0f), 0x8000);
  uint16_t nan = floatToBF16(std::numeric_limits<float>::quiet_NaN());
  EXPECT_TRUE(std::isnan(bf16ToFloat(nan)));
  // A signalling NaN whose payload lives in the low bits stays a NaN.
  uint32_t sNaN = 0x7f800001u;
  float f;
  std::memcpy(&f, &sNaN, 4);
  EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBF16(f))));
  EXPECT_TRUE(std::isnan(bf16ToFloat(0xffff))); // The 0xFF poison pattern.
}

TEST(RuntimeFloat, HalfRoundsToNearestEven) {
  EXPECT_EQ(floatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(floatToHalf(-2.0f), 0xc000);
  EXPECT_EQ(floatToHalf(65504.0f), 0x7bff);
  EXPECT_EQ(floatToHalf(0.1f), 0x2e66);
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -14)), 0x0400); // Smallest normal.
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -24)), 0x0001); // Smallest subnormal.
  checkRoundToNearestEven(floatToHalf, halfToFloat, 0x7bff);
}

TEST(RuntimeFloat, HalfSpecialValuesAndUnderflow) {
  EXPECT_EQ(floatToHalf(65519.99f), 0x7bff);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7c00); // Tie above max: to infinity.
  EXPECT_EQ(floatToHalf(1e6f), 0x7c00);
  EXPECT_EQ(floatToHalf(-1e6f), 0xfc00);
  EXPECT_EQ(floatToHalf(INFINITY), 0x7c00);
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -25)), 0x0000); // Tie: to even (0).
  EXPECT_EQ(floatToHalf(nextUp(std::ldexp(1.0f, -25))), 0x0001);
  EXPECT_EQ(floatToHalf(std::ldexp(3.0f, -26)), 0x0001); // 0.75 ulp.
  EXPECT_EQ(floatToHalf(std::ldexp(3.0f, -25)), 0x0002); // 1.5 ulp: to even.
  EXPECT_EQ(floatToHalf(-std::ldexp(1.0f, -30)), 0x8000);
  EXPECT_EQ(floatToHalf(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_TRUE(std::isnan(
      halfToFloat(floatToHalf(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_TRUE(std::isnan(halfToFloat(0xffff))); // The 0xFF poison pattern.
  EXPECT_EQ(halfToFloat(0x7c00), INFINITY);
  EXPECT_EQ(halfToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(halfToFloat(0x83ff), -std::ldexp(1023.0f, -24));
}

TEST(RuntimeFloat, DTypeDispatch) {
  EXPECT_EQ(floatTo16(DType::BF16, 1.5f), floatToBF16(1.5f));
  EXPECT_EQ(floatTo16(DType::F16, 1.5f), floatToHalf(1.5f));
  EXPECT_EQ(from16(DType::BF16, 0x3fc0), 1.5f);
  EXPECT_EQ(from16(DType::F16, 0x3e00), 1.5f);
}

} // namespace

namespace {

TEST(RuntimeFloat, E4M3EveryCodeRoundTrips) {
  for (int code = 0; code < 256; ++code) {
    float value = e4m3ToFloat(uint8_t(code));
    if ((code & 0x7F) == 0x7F) {
      EXPECT_TRUE(std::isnan(value)) << code;
      EXPECT_EQ(floatToE4M3(value), 0x7F);
      continue;
    }
    EXPECT_EQ(floatToE4M3(value), code) << "value " << value;
  }
  EXPECT_EQ(e4m3ToFloat(0x7E), 448.0f);
  EXPECT_EQ(e4m3ToFloat(0x01), std::ldexp(1.0f, -9)); // smallest subnormal
  EXPECT_EQ(e4m3ToFloat(0x08), std::ldexp(1.0f, -6)); // smallest normal
}

TEST(RuntimeFloat, E4M3RoundsToNearestEvenAndSaturates) {
  // 1.0625 lies halfway between 1 (mantissa 0) and 1.125 (mantissa 1).
  EXPECT_EQ(floatToE4M3(1.0625f), 0x38);
  EXPECT_EQ(floatToE4M3(1.1875f), 0x3A); // halfway 1.125 / 1.25: even
  EXPECT_EQ(floatToE4M3(1.07f), 0x39);
  EXPECT_EQ(floatToE4M3(-1.0f), 0xB8);
  EXPECT_EQ(floatToE4M3(1e6f), 0x7E); // satfinite
  EXPECT_EQ(floatToE4M3(-1e6f), 0xFE);
  EXPECT_EQ(floatToE4M3(std::numeric_limits<float>::infinity()), 0x7E);
  // Subnormals: multiples of 2^-9, halfway rounds to even.
  EXPECT_EQ(floatToE4M3(std::ldexp(1.5f, -9)), 0x02);
  EXPECT_EQ(floatToE4M3(std::ldexp(0.5f, -9)), 0x00);
  // The largest subnormal rounds up into the smallest normal.
  EXPECT_EQ(floatToE4M3(std::ldexp(7.6f, -9)), 0x08);
}

} // namespace
