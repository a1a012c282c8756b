//===- FP8Support.h - e4m3 host buffers for execution tests -----*- C++ -*-===//
//
// e4m3 (FN) encoding and decoding through APFloat, and the byte and descale
// buffers that the FP8 execution tests hand to JIT-compiled functions.
//
//===----------------------------------------------------------------------===//

#ifndef FA_UNITTESTS_EXECUTION_FP8SUPPORT_H
#define FA_UNITTESTS_EXECUTION_FP8SUPPORT_H

#include "mlir/ExecutionEngine/CRunnerUtils.h"
#include "llvm/ADT/APFloat.h"

#include <cmath>
#include <cstdint>
#include <vector>

namespace fa::exectest {

/// e4m3 (FN) bits of `x`, rounded to nearest even; finite values beyond
/// the largest (448) saturate, as the quantizing kernels' `satfinite` does.
inline uint8_t toE4M3(double x) {
  llvm::APFloat v(x);
  bool lost;
  v.convert(llvm::APFloat::Float8E4M3FN(), llvm::APFloat::rmNearestTiesToEven,
            &lost);
  if (v.isNaN() && !std::isnan(x))
    return x < 0 ? 0xFE : 0x7E; // -448 / 448
  return static_cast<uint8_t>(v.bitcastToAPInt().getZExtValue());
}

inline double fromE4M3(uint8_t bits) {
  return llvm::APFloat(llvm::APFloat::Float8E4M3FN(), llvm::APInt(8, bits))
      .convertToDouble();
}

/// A dense [B, H, N, D] tensor of e4m3 bytes behind a memref descriptor.
struct Fp8Tensor {
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
  StridedMemRefType<uint8_t, 4> desc{};

  explicit Fp8Tensor(std::vector<int64_t> s) : shape(std::move(s)) {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    bytes.assign(n, 0);
    desc.basePtr = desc.data = bytes.data();
    int64_t stride = 1;
    for (int d = 3; d >= 0; --d) {
      desc.sizes[d] = shape[d];
      desc.strides[d] = stride;
      stride *= shape[d];
    }
  }
  void *arg() { return &desc; }
};

/// A [B, Hkv] f32 tensor of descales.
struct DescaleTensor {
  std::vector<float> values;
  StridedMemRefType<float, 2> desc{};

  DescaleTensor(int64_t b, int64_t h) : values(b * h) {
    desc.basePtr = desc.data = values.data();
    desc.sizes[0] = b;
    desc.sizes[1] = h;
    desc.strides[0] = h;
    desc.strides[1] = 1;
  }
  void *arg() { return &desc; }
};

} // namespace fa::exectest

#endif // FA_UNITTESTS_EXECUTION_FP8SUPPORT_H
