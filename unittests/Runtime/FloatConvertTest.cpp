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
