// core/float8.h: float8 e4m3 (OCP FN) conversions, the codes of --weight-quant fp8.
#include <gtest/gtest.h>

#include <cmath>

#include "core/float8.h"

namespace streamrt {
namespace {

TEST(Float8, EveryFiniteCodeRoundTripsThroughFloat) {
  for (int c = 0; c < 256; ++c) {
    const auto code = static_cast<uint8_t>(c);
    const float v = e4m3_to_float(code);
    if ((c & 0x7F) == 0x7F) {
      EXPECT_TRUE(std::isnan(v)) << c;  // the FN variant's only NaNs; no infinities
      continue;
    }
    EXPECT_EQ(float_to_e4m3(v), code) << c << " = " << v;
  }
  // Non-negative codes in order are increasing values, up to 448.
  for (int c = 1; c < 0x7F; ++c) EXPECT_LT(e4m3_to_float(static_cast<uint8_t>(c - 1)), e4m3_to_float(static_cast<uint8_t>(c)));
  EXPECT_EQ(e4m3_to_float(0x7E), 448.f);
  EXPECT_EQ(e4m3_to_float(0x38), 1.f);
  EXPECT_EQ(e4m3_to_float(0x01), 0x1p-9f);  // the smallest subnormal
  EXPECT_EQ(e4m3_to_float(0x08), 0x1p-6f);  // the smallest normal
}

TEST(Float8, RoundsToNearestTiesToEven) {
  EXPECT_EQ(float_to_e4m3(1.0625f), 0x38);   // halfway 1 / 1.125: the even mantissa (1)
  EXPECT_EQ(float_to_e4m3(1.1875f), 0x3A);   // halfway 1.125 / 1.25: 1.25
  EXPECT_EQ(float_to_e4m3(1.07f), 0x39);     // past halfway
  EXPECT_EQ(float_to_e4m3(1.9375f), 0x40);   // halfway 1.875 / 2: carries into the exponent
  EXPECT_EQ(float_to_e4m3(0x1p-10f), 0x00);  // half the smallest subnormal: to zero (even)
  EXPECT_EQ(float_to_e4m3(0x1.8p-9f), 0x02); // 1.5 subnormal steps: 2 (even)
  EXPECT_EQ(float_to_e4m3(0x1.fp-7f), 0x08); // just under the smallest normal rounds up to it
  EXPECT_EQ(float_to_e4m3(-3.1f), 0xC4);     // -3: sign bit set, exponent 8, mantissa 4
}

TEST(Float8, SaturatesAndKeepsTheSignOfZero) {
  EXPECT_EQ(float_to_e4m3(448.f), 0x7E);
  EXPECT_EQ(float_to_e4m3(460.f), 0x7E);  // would round to 480, which FN spends on NaN
  EXPECT_EQ(float_to_e4m3(1e9f), 0x7E);
  EXPECT_EQ(float_to_e4m3(INFINITY), 0x7E);
  EXPECT_EQ(float_to_e4m3(-INFINITY), 0xFE);
  EXPECT_EQ(float_to_e4m3(NAN), 0x7F);
  EXPECT_EQ(float_to_e4m3(0.f), 0x00);
  EXPECT_EQ(float_to_e4m3(-0.f), 0x80);
  EXPECT_TRUE(std::signbit(e4m3_to_float(0x80)));
}

// Below 2^-6 the codes are multiples of 2^-9 (exponent field 0); rounding there is still to the
// nearest, ties to even, and the largest subnormal rounds up into the smallest normal.
TEST(Float8, SubnormalsAndTheirEdges) {
  EXPECT_EQ(float_to_e4m3(0x1p-9f), 0x01);
  EXPECT_EQ(e4m3_to_float(0x01), 0x1p-9f);
  EXPECT_EQ(float_to_e4m3(0x1p-10f), 0x00);        // half the smallest: ties to even, 0
  EXPECT_EQ(float_to_e4m3(0x1.8p-10f), 0x01);      // past half
  EXPECT_EQ(float_to_e4m3(1.5f * 0x1p-9f), 0x02);  // tie 1 / 2: even
  EXPECT_EQ(float_to_e4m3(2.5f * 0x1p-9f), 0x02);  // tie 2 / 3: even
  EXPECT_EQ(float_to_e4m3(7.f * 0x1p-9f), 0x07);   // the largest subnormal
  EXPECT_EQ(float_to_e4m3(7.5f * 0x1p-9f), 0x08);  // tie 7 / 8: 8 is 2^-6, the smallest normal
  EXPECT_EQ(e4m3_to_float(0x08), 0x1p-6f);
  EXPECT_EQ(float_to_e4m3(-3.f * 0x1p-9f), 0x83);
  EXPECT_EQ(float_to_e4m3(0x1p-12f), 0x00);
  EXPECT_EQ(float_to_e4m3(-0x1p-12f), 0x80);  // a negative value that rounds to zero keeps its sign
}

}  // namespace
}  // namespace streamrt
