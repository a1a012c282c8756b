//===- FloatConvert.h - Host bf16 / f16 conversion --------------*- C++ -*-===//
//
// Bit-exact conversions between float and the 16-bit storage formats, with
// round-to-nearest-even, correct subnormals, overflow to infinity and NaNs
// kept NaN (quieted).
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUNTIME_FLOATCONVERT_H
#define FA_RUNTIME_FLOATCONVERT_H

#include "fa/Runtime/Metadata.h"

#include <cstdint>

namespace fa::rt {

uint16_t floatToBF16(float value);
float bf16ToFloat(uint16_t bits);
uint16_t floatToHalf(float value);
float halfToFloat(uint16_t bits);

/// e4m3 (FN: no infinities, NaN = S.1111.111): round to nearest even;
/// finite values beyond 448 saturate to +-448 (cvt's satfinite, what
/// quantization wants), NaN stays NaN.
uint8_t floatToE4M3(float value);
float e4m3ToFloat(uint8_t bits);

/// Dispatch on a 16-bit DType.
uint16_t floatTo16(DType dtype, float value);
float from16(DType dtype, uint16_t bits);

} // namespace fa::rt

#endif // FA_RUNTIME_FLOATCONVERT_H
