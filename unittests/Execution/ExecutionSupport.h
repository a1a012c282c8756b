//===- ExecutionSupport.h - Host buffers and inputs of the execution tests ===//
//
// Element types and their rounding, host tensors viewed through memref
// descriptors, the tests' seed and random inputs: shared by the execution
// tests (AttentionExecutionTest.cpp, VarlenExecutionTest.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef FA_UNITTESTS_EXECUTION_EXECUTIONSUPPORT_H
#define FA_UNITTESTS_EXECUTION_EXECUTIONSUPPORT_H

#include "mlir/ExecutionEngine/CRunnerUtils.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/APInt.h"

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace fa::exectest {

//===----------------------------------------------------------------------===//
// Element types
//===----------------------------------------------------------------------===//

enum class DType { F32, BF16, F16 };

inline const char *mlirName(DType t) {
  switch (t) {
  case DType::F32:
    return "f32";
  case DType::BF16:
    return "bf16";
  case DType::F16:
    return "f16";
  }
  return "?";
}

/// Relative L2 bound of outputs in element type `t`. The kernel computes in
/// f32 from exactly representable inputs; the bound covers f32 round-off
/// (f32) or the final rounding of the outputs to 8 (bf16) or 11 (f16)
/// significant bits, whose relative L2 is about 2^-9 and 2^-12.
inline double tolerance(DType t) {
  switch (t) {
  case DType::F32:
    return 1e-5;
  case DType::BF16:
    return 1e-2;
  case DType::F16:
    return 3e-3;
  }
  return 0;
}

/// LSE is f32 for every element type and computed in f32 from the same
/// (rounded) inputs as the reference, so it gets the f32 bound.
constexpr double kLseTolerance = 1e-5;

inline const llvm::fltSemantics &semantics(DType t) {
  return t == DType::BF16 ? llvm::APFloat::BFloat() : llvm::APFloat::IEEEhalf();
}

/// Rounds `x` to a 16-bit type (round to nearest even, one rounding).
inline uint16_t toHalfBits(double x, DType t) {
  llvm::APFloat v(x);
  bool lost;
  v.convert(semantics(t), llvm::APFloat::rmNearestTiesToEven, &lost);
  return static_cast<uint16_t>(v.bitcastToAPInt().getZExtValue());
}

inline double fromHalfBits(uint16_t bits, DType t) {
  if (t == DType::BF16) {
    uint32_t u = static_cast<uint32_t>(bits) << 16;
    float f;
    std::memcpy(&f, &u, sizeof(f));
    return f;
  }
  return llvm::APFloat(semantics(t), llvm::APInt(16, bits)).convertToDouble();
}

/// A dense row-major host buffer of one element type, viewed by the JIT code
/// through a StridedMemRefType descriptor.
class HostTensor {
public:
  HostTensor(DType dtype, std::vector<int64_t> shape)
      : dtype(dtype), shape(std::move(shape)) {
    numel = 1;
    for (int64_t s : this->shape)
      numel *= s;
    if (dtype == DType::F32)
      f32.assign(numel, 0.0f);
    else
      half.assign(numel, 0);
    makeDescriptor();
  }
  HostTensor(const HostTensor &) = delete;
  HostTensor &operator=(const HostTensor &) = delete;

  /// Stores `values` rounded to the element type.
  void store(const std::vector<double> &values) {
    for (int64_t i = 0; i < numel; ++i) {
      if (dtype == DType::F32)
        f32[i] = static_cast<float>(values[i]);
      else
        half[i] = toHalfBits(values[i], dtype);
    }
  }

  /// The stored values, widened to double.
  std::vector<double> load() const {
    std::vector<double> out(numel);
    for (int64_t i = 0; i < numel; ++i)
      out[i] = dtype == DType::F32 ? f32[i] : fromHalfBits(half[i], dtype);
    return out;
  }

  /// Fills with NaN so that an element the kernel never writes shows up.
  void poison() {
    if (dtype == DType::F32)
      std::fill(f32.begin(), f32.end(),
                std::numeric_limits<float>::quiet_NaN());
    else
      std::fill(half.begin(), half.end(), toHalfBits(std::nan(""), dtype));
  }

  /// The C-interface argument: a pointer to the memref descriptor.
  void *arg() { return shape.size() == 4 ? (void *)&desc4 : (void *)&desc3; }

  int64_t size() const { return numel; }

private:
  void makeDescriptor() {
    char *data = dtype == DType::F32 ? reinterpret_cast<char *>(f32.data())
                                     : reinterpret_cast<char *>(half.data());
    auto fill = [&](auto &desc) {
      desc.basePtr = data;
      desc.data = data;
      desc.offset = 0;
      int64_t stride = 1;
      for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
        desc.sizes[d] = shape[d];
        desc.strides[d] = stride;
        stride *= shape[d];
      }
    };
    if (shape.size() == 4)
      fill(desc4);
    else
      fill(desc3);
  }

  DType dtype;
  std::vector<int64_t> shape;
  int64_t numel;
  std::vector<float> f32;
  std::vector<uint16_t> half;
  StridedMemRefType<char, 4> desc4{};
  StridedMemRefType<char, 3> desc3{};
};

constexpr uint64_t kDefaultSeed = 20261130;

/// The inputs' seed from FA_TEST_SEED (`setting`, null when unset): unset
/// gives kDefaultSeed, "random" a fresh one, otherwise a number. False, with
/// `error` set, for anything else: a typo must not quietly test seed 0.
inline bool seedFromSetting(const char *setting, uint64_t &seed, std::string &error) {
  if (!setting) {
    seed = kDefaultSeed;
    return true;
  }
  if (std::string(setting) == "random") {
    std::random_device rd;
    seed = (static_cast<uint64_t>(rd()) << 32) ^ rd();
    return true;
  }
  char *end = nullptr;
  errno = 0;
  seed = std::strtoull(setting, &end, 0);
  if (*setting && *setting != '-' && errno == 0 && *end == '\0')
    return true;
  error = std::string("FA_TEST_SEED must be a number or 'random', got '") +
          setting + "'";
  return false;
}

inline std::vector<double> randomNormal(std::mt19937_64 &rng, int64_t n) {
  std::normal_distribution<double> dist(0.0, 1.0);
  std::vector<double> v(n);
  for (double &x : v)
    x = dist(rng);
  return v;
}

/// `  %<name>t = bufferization.to_tensor %<name> ...` for memref argument
/// %<name> of type `type` ("BxHxNxDxelt").
inline std::string toTensorLine(const char *name, const std::string &type) {
  return std::string("  %") + name + "t = bufferization.to_tensor %" + name +
         " restrict : memref<" + type + "> to tensor<" + type + ">\n";
}

/// Stores tensor %<value> into memref argument %<dest>.
inline std::string materializeLine(const char *value, const char *dest,
                                   const std::string &type) {
  return std::string("  bufferization.materialize_in_destination %") + value +
         " in restrict writable %" + dest + " : (tensor<" + type +
         ">, memref<" + type + ">) -> ()\n";
}

} // namespace fa::exectest

#endif // FA_UNITTESTS_EXECUTION_EXECUTIONSUPPORT_H
