//===- QuantizeExecutionTest.cpp - fa.quantize, proof by execution --------===//
//
// fa.quantize lowered through the tiling and host pipelines and run on the
// CPU: its e4m3 values and descales against the op's definition computed in
// fp64 (the rotation as an explicit Hadamard product), the host encoding of
// arith.truncf against APFloat, and Q and K rotated with one seed feeding
// an FP8 fa.attention that must match the fp64 attention of the unrotated,
// unquantized inputs.
//
//===----------------------------------------------------------------------===//

#include "ExecutionSupport.h"
#include "FP8Support.h"
#include "HostJit.h"

#include "fa/Dialect/FA/IR/FAOps.h"
#include "fa/Reference/Reference.h"

#include "llvm/ADT/bit.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

using namespace fa;
using namespace fa::exectest;
using mlir::fa::QuantizeOp;

namespace {

std::string typeOf(const std::vector<int64_t> &shape, const char *elt) {
  std::string s;
  for (int64_t d : shape)
    s += std::to_string(d) + "x";
  return s + elt;
}

std::string rotateClause(std::optional<int64_t> seed) {
  return seed ? " rotate(seed = " + std::to_string(*seed) + ")" : "";
}

/// FlashAttention 3's accuracy inputs: N(0, 1) with 0.1 % of entries
/// N(0, 10).
std::vector<double> withOutliers(std::mt19937_64 &rng, int64_t n) {
  std::vector<double> x = randomNormal(rng, n);
  std::uniform_real_distribution<double> pick(0.0, 1.0);
  for (double &v : x)
    if (pick(rng) < 0.001)
      v *= 10.0;
  return x;
}

/// The op's definition in fp64: y = x diag(signs) Hd / sqrt(D) (or x), per
/// row of D values.
std::vector<double> rotated(const std::vector<double> &x, int64_t d,
                            std::optional<int64_t> seed) {
  if (!seed)
    return x;
  std::vector<double> y(x.size(), 0.0);
  double norm = 1.0 / std::sqrt(static_cast<double>(d));
  for (size_t row = 0; row < x.size() / d; ++row)
    for (int64_t j = 0; j < d; ++j)
      for (int64_t i = 0; i < d; ++i) {
        double h = llvm::popcount(static_cast<uint64_t>(i & j)) % 2 ? -1 : 1;
        y[row * d + j] +=
            x[row * d + i] * QuantizeOp::hadamardSign(*seed, i) * h * norm;
      }
  return y;
}

hostjit::CInterfaceFunction
compileOrFail(const std::string &source, const char *name,
              std::unique_ptr<hostjit::HostModule> &keep) {
  auto module = hostjit::HostModule::compile(source, {});
  if (!module) {
    ADD_FAILURE() << llvm::toString(module.takeError()) << "\n" << source;
    return {};
  }
  keep = std::move(*module);
  auto fn = keep->lookup(name);
  if (!fn) {
    ADD_FAILURE() << llvm::toString(fn.takeError());
    return {};
  }
  return *fn;
}

struct QuantizeCase {
  std::string name;
  DType in;
  std::vector<int64_t> shape; // B, H, N, D
  int64_t groups;
  std::optional<int64_t> seed;
};

void PrintTo(const QuantizeCase &c, std::ostream *os) { *os << c.name; }

class QuantizeExecution : public ::testing::TestWithParam<QuantizeCase> {};

TEST_P(QuantizeExecution, MatchesDefinition) {
  const QuantizeCase &c = GetParam();
  int64_t b = c.shape[0], h = c.shape[1], n = c.shape[2], d = c.shape[3];
  std::string x = typeOf(c.shape, mlirName(c.in)),
              q = typeOf(c.shape, "f8E4M3FN"),
              scales = typeOf({b, c.groups}, "f32");
  std::ostringstream m;
  m << "func.func @quantize(%x: memref<" << x << ">, %q: memref<" << q
    << ">, %d: memref<" << scales << ">) attributes {llvm.emit_c_interface} {\n"
    << toTensorLine("x", x) << "  %qt, %dt = fa.quantize %xt"
    << rotateClause(c.seed) << " : tensor<" << x << "> -> tensor<" << q
    << ">, tensor<" << scales << ">\n"
    << materializeLine("qt", "q", q) << materializeLine("dt", "d", scales)
    << "  return\n}\n";
  std::unique_ptr<hostjit::HostModule> module;
  auto fn = compileOrFail(m.str(), "quantize", module);
  ASSERT_TRUE(module);

  uint64_t seed = 0;
  std::string seedError;
  ASSERT_TRUE(seedFromSetting(std::getenv("FA_TEST_SEED"), seed, seedError))
      << seedError;
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  HostTensor input(c.in, c.shape);
  input.store(withOutliers(rng, b * h * n * d));
  Fp8Tensor output(c.shape);
  std::fill(output.bytes.begin(), output.bytes.end(), 0x7F); // NaN
  DescaleTensor descale(b, c.groups);
  std::fill(descale.values.begin(), descale.values.end(), std::nanf(""));
  fn({input.arg(), output.arg(), descale.arg()});

  std::vector<double> y = rotated(input.load(), d, c.seed);
  int64_t perBlock = (h / c.groups) * n * d;
  for (int64_t block = 0; block < b * c.groups; ++block) {
    double amax = QuantizeOp::kMinAmax;
    for (int64_t i = block * perBlock; i < (block + 1) * perBlock; ++i)
      amax = std::max(amax, std::abs(y[i]));
    // The kernel's amax is of f32 values summed in another order.
    EXPECT_NEAR(descale.values[block], amax / QuantizeOp::kE4M3Max,
                1e-5 * amax / QuantizeOp::kE4M3Max)
        << "block " << block;
    double scale = QuantizeOp::kE4M3Max / amax;
    for (int64_t i = block * perBlock; i < (block + 1) * perBlock; ++i) {
      double expected = y[i] * scale, got = fromE4M3(output.bytes[i]);
      ASSERT_FALSE(std::isnan(got)) << "element " << i << " not written";
      // At most one step of e4m3 (a tie may round either way after f32
      // sums): 2^-3 relative above 2^-6, 2^-9 below.
      EXPECT_LE(std::abs(got - expected),
                std::abs(expected) / 8.0 + 1.0 / 512.0)
          << "element " << i << ": " << got << " for " << expected;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Host, QuantizeExecution,
    ::testing::Values(
        QuantizeCase{"f32_plain_groups2", DType::F32, {2, 4, 33, 16}, 2, {}},
        QuantizeCase{"bf16_rotated_64", DType::BF16, {1, 2, 20, 64}, 2, 11},
        QuantizeCase{
            "f16_rotated_128_one_block", DType::F16, {1, 4, 9, 128}, 1, 42}),
    [](const ::testing::TestParamInfo<QuantizeCase> &info) {
      return info.param.name;
    });

/// arith.truncf f32 -> f8E4M3FN through the host lowering
/// (fa-expand-fp8-conversions) against APFloat: every code's value, the
/// midpoints between neighbouring codes (ties to even), values past 448,
/// infinities and NaN.
TEST(FP8Encoding, MatchesAPFloat) {
  const char *source = R"mlir(
func.func @encode(%in: memref<?xf32>, %out: memref<?xf8E4M3FN>)
    attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %in, %c0 : memref<?xf32>
  scf.for %i = %c0 to %n step %c1 {
    %x = memref.load %in[%i] : memref<?xf32>
    %y = arith.truncf %x : f32 to f8E4M3FN
    memref.store %y, %out[%i] : memref<?xf8E4M3FN>
  }
  return
}
)mlir";
  std::unique_ptr<hostjit::HostModule> module;
  auto fn = compileOrFail(source, "encode", module);
  ASSERT_TRUE(module);
  std::vector<float> values;
  for (int code = 0; code < 256; ++code) {
    double v = fromE4M3(static_cast<uint8_t>(code));
    if (std::isnan(v))
      continue;
    values.push_back(static_cast<float>(v));
    double next = fromE4M3(static_cast<uint8_t>(code + 1));
    if ((code & 0x7F) < 0x7E) // the midpoint to the next magnitude
      values.push_back(static_cast<float>((v + next) / 2));
    values.push_back(static_cast<float>(v * 1.03));
    values.push_back(static_cast<float>(v * 0.97));
  }
  for (float v : {450.0f, 463.9f, 464.0f, 464.1f, 480.0f, 1e6f, 1e-9f,
                  std::numeric_limits<float>::infinity(), std::nanf(""),
                  std::numeric_limits<float>::denorm_min()}) {
    values.push_back(v);
    values.push_back(-v);
  }
  std::vector<uint8_t> codes(values.size(), 0x55);
  StridedMemRefType<float, 1> in{values.data(),
                                 values.data(),
                                 0,
                                 {static_cast<int64_t>(values.size())},
                                 {1}};
  StridedMemRefType<uint8_t, 1> out{
      codes.data(), codes.data(), 0, {static_cast<int64_t>(codes.size())}, {1}};
  fn({&in, &out});
  for (size_t i = 0; i < values.size(); ++i) {
    llvm::APFloat expected(values[i]);
    bool lost;
    expected.convert(llvm::APFloat::Float8E4M3FN(),
                     llvm::APFloat::rmNearestTiesToEven, &lost);
    double got = fromE4M3(codes[i]);
    if (expected.isNaN()) {
      EXPECT_TRUE(std::isnan(got)) << values[i] << " -> code " << int(codes[i]);
      continue;
    }
    EXPECT_EQ(codes[i], expected.bitcastToAPInt().getZExtValue())
        << values[i] << " -> " << got << ", expected "
        << expected.convertToDouble();
  }
}

/// Q and K rotated with one seed (V plain) and quantized per (batch, KV
/// head), then FP8 attention: the fp64 attention of the unquantized inputs,
/// within FP8's error, with and without the rotation.
TEST(QuantizedAttention, RotatedQKKeepTheScores) {
  const ref::AttentionShape s{1, 4, 2, 96, 160, 64, 64};
  uint64_t seed = 0;
  std::string seedError;
  ASSERT_TRUE(seedFromSetting(std::getenv("FA_TEST_SEED"), seed, seedError))
      << seedError;
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  std::vector<int64_t> qShape{s.batch, s.headsQ, s.seqQ, s.headDim},
      kShape{s.batch, s.headsKV, s.seqKV, s.headDim},
      vShape{s.batch, s.headsKV, s.seqKV, s.headDimV},
      oShape{s.batch, s.headsQ, s.seqQ, s.headDimV};
  std::vector<double> qx = withOutliers(rng, s.batch * s.headsQ * s.seqQ * 64),
                      kx =
                          withOutliers(rng, s.batch * s.headsKV * s.seqKV * 64),
                      vx =
                          withOutliers(rng, s.batch * s.headsKV * s.seqKV * 64);
  ref::AttentionParams params;
  params.scale = ref::defaultScale(s);
  params.causal = true;
  std::vector<double> refO(ref::numelO(s)), refLse(ref::numelLSE(s));
  ref::attentionForward(s, params, qx.data(), kx.data(), vx.data(), refO.data(),
                        refLse.data());

  double errors[2];
  for (int rotate = 0; rotate < 2; ++rotate) {
    std::optional<int64_t> rotation;
    if (rotate)
      rotation = 5;
    std::string q = typeOf(qShape, "f32"), k = typeOf(kShape, "f32"),
                v = typeOf(vShape, "f32"), o = typeOf(oShape, "bf16"),
                lse = typeOf({s.batch, s.headsQ, s.seqQ}, "f32"),
                q8 = typeOf(qShape, "f8E4M3FN"),
                k8 = typeOf(kShape, "f8E4M3FN"),
                v8 = typeOf(vShape, "f8E4M3FN"),
                d = typeOf({s.batch, s.headsKV}, "f32");
    std::ostringstream m;
    m << "func.func @forward(%q: memref<" << q << ">, %k: memref<" << k
      << ">, %v: memref<" << v << ">, %o: memref<" << o << ">, %lse: memref<"
      << lse << ">) attributes {llvm.emit_c_interface} {\n"
      << toTensorLine("q", q) << toTensorLine("k", k) << toTensorLine("v", v)
      << "  %q8, %dq = fa.quantize %qt" << rotateClause(rotation)
      << " : tensor<" << q << "> -> tensor<" << q8 << ">, tensor<" << d << ">\n"
      << "  %k8, %dk = fa.quantize %kt" << rotateClause(rotation)
      << " : tensor<" << k << "> -> tensor<" << k8 << ">, tensor<" << d << ">\n"
      << "  %v8, %dv = fa.quantize %vt : tensor<" << v << "> -> tensor<" << v8
      << ">, tensor<" << d << ">\n"
      << "  %ot, %lset = fa.attention %q8, %k8, %v8 descale(%dq, %dk, %dv : "
         "tensor<"
      << d << ">, tensor<" << d << ">, tensor<" << d << ">) causal : tensor<"
      << q8 << ">, tensor<" << k8 << ">, tensor<" << v8 << "> -> tensor<" << o
      << ">, tensor<" << lse << ">\n"
      << materializeLine("ot", "o", o) << materializeLine("lset", "lse", lse)
      << "  return\n}\n";
    std::unique_ptr<hostjit::HostModule> module;
    auto fn = compileOrFail(m.str(), "forward", module);
    ASSERT_TRUE(module);
    HostTensor qt(DType::F32, qShape), kt(DType::F32, kShape),
        vt(DType::F32, vShape), ot(DType::BF16, oShape),
        lset(DType::F32, {s.batch, s.headsQ, s.seqQ});
    qt.store(qx);
    kt.store(kx);
    vt.store(vx);
    ot.poison();
    lset.poison();
    fn({qt.arg(), kt.arg(), vt.arg(), ot.arg(), lset.arg()});
    std::vector<double> out = ot.load();
    for (double x : out)
      ASSERT_FALSE(std::isnan(x)) << "O has an element that was not written";
    errors[rotate] = ref::relativeL2Error(out.data(), refO.data(), out.size());
  }
  std::printf("[  errors  ] O vs fp64 of the unquantized inputs: %.2e plain, "
              "%.2e rotated\n",
              errors[0], errors[1]);
  // A rotation that Q and K did not share would be off by O(1).
  EXPECT_LE(errors[0], 1e-1);
  EXPECT_LE(errors[1], 1e-1);
}

} // namespace
