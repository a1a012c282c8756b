//===- FP8ExecutionTest.cpp - FP8 attention, proof by execution -----------===//
//
// fa.attention on f8E4M3FN Q, K, V with descale(%q_descale, %k_descale,
// %v_descale) lowered through the tiling and host pipelines and run on the
// CPU. The inputs are quantized per (batch, KV head) with a random scale
// s: x8 = e4m3(x * s), descale = 1 / s, so the fp64 reference, which
// attends over the dequantized values x8 * descale, is the exact attention
// of what the kernel reads. Outputs (bf16 or f16) are poisoned first.
//
//===----------------------------------------------------------------------===//

#include "ExecutionSupport.h"
#include "FP8Support.h"
#include "HostJit.h"

#include "fa/Reference/Reference.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

using namespace fa;
using namespace fa::exectest;

namespace {

struct Fp8Case {
  std::string name;
  DType out = DType::BF16;
  ref::AttentionShape shape;
  bool causal = false;
  std::optional<std::pair<int64_t, int64_t>> window;
  std::optional<double> softcap;
  int64_t blockQ = 64, blockKV = 64;
};

void PrintTo(const Fp8Case &c, std::ostream *os) { *os << c.name; }

std::string typeOf(const std::vector<int64_t> &shape, const char *elt) {
  std::string s;
  for (int64_t d : shape)
    s += std::to_string(d) + "x";
  return s + elt;
}

/// func.func @forward(q, k, v, q_descale, k_descale, v_descale, o, lse).
std::string buildModule(const Fp8Case &c) {
  const ref::AttentionShape &s = c.shape;
  std::string q = typeOf({s.batch, s.headsQ, s.seqQ, s.headDim}, "f8E4M3FN"),
              k = typeOf({s.batch, s.headsKV, s.seqKV, s.headDim}, "f8E4M3FN"),
              v = typeOf({s.batch, s.headsKV, s.seqKV, s.headDimV}, "f8E4M3FN"),
              o = typeOf({s.batch, s.headsQ, s.seqQ, s.headDimV},
                         mlirName(c.out)),
              lse = typeOf({s.batch, s.headsQ, s.seqQ}, "f32"),
              d = typeOf({s.batch, s.headsKV}, "f32");
  std::ostringstream m;
  m << "func.func @forward(%q: memref<" << q << ">, %k: memref<" << k
    << ">, %v: memref<" << v << ">, %dq: memref<" << d << ">, %dk: memref<" << d
    << ">, %dv: memref<" << d << ">, %o: memref<" << o << ">, %lse: memref<"
    << lse << ">) attributes {llvm.emit_c_interface} {\n";
  for (auto [name, type] : {std::pair<const char *, std::string>{"q", q},
                            {"k", k},
                            {"v", v},
                            {"dq", d},
                            {"dk", d},
                            {"dv", d}})
    m << toTensorLine(name, type);
  m << "  %ot, %lset = fa.attention %qt, %kt, %vt descale(%dqt, %dkt, %dvt : "
       "tensor<"
    << d << ">, tensor<" << d << ">, tensor<" << d << ">)";
  if (c.causal)
    m << " causal";
  if (c.window)
    m << " window [" << c.window->first << ", " << c.window->second << "]";
  if (c.softcap)
    m << " softcap = " << std::to_string(*c.softcap);
  m << " : tensor<" << q << ">, tensor<" << k << ">, tensor<" << v
    << "> -> tensor<" << o << ">, tensor<" << lse << ">\n";
  m << materializeLine("ot", "o", o) << materializeLine("lset", "lse", lse);
  m << "  return\n}\n";
  return m.str();
}

/// Quantizes N(0, 1) values per (batch, head) with a random scale in [1,
/// 64] (so descales differ between heads); returns the dequantized values.
std::vector<double> quantize(Fp8Tensor &t, DescaleTensor &descale,
                             std::mt19937_64 &rng) {
  std::uniform_real_distribution<double> scaleDist(1.0, 64.0);
  std::vector<double> x = randomNormal(rng, t.bytes.size());
  std::vector<double> dequantized(x.size());
  int64_t perHead = t.shape[2] * t.shape[3];
  for (size_t head = 0; head < descale.values.size(); ++head) {
    double scale = scaleDist(rng);
    descale.values[head] = static_cast<float>(1.0 / scale);
    for (int64_t i = head * perHead; i < (int64_t)(head + 1) * perHead; ++i) {
      t.bytes[i] = toE4M3(x[i] * scale);
      dequantized[i] = fromE4M3(t.bytes[i]) * descale.values[head];
    }
  }
  return dequantized;
}

class FP8Execution : public ::testing::TestWithParam<Fp8Case> {};

TEST_P(FP8Execution, MatchesReference) {
  const Fp8Case &c = GetParam();
  const ref::AttentionShape &s = c.shape;
  ref::AttentionParams params;
  params.scale = ref::defaultScale(s);
  params.causal = c.causal;
  params.window = c.window;
  params.softcap = c.softcap;
  ASSERT_EQ(ref::validate(s, params), "");
  uint64_t seed = 0;
  std::string seedError;
  ASSERT_TRUE(seedFromSetting(std::getenv("FA_TEST_SEED"), seed, seedError))
      << seedError;
  SCOPED_TRACE("seed " + std::to_string(seed));

  std::string source = buildModule(c);
  hostjit::CompileOptions options;
  options.blockQ = c.blockQ;
  options.blockKV = c.blockKV;
  auto module = hostjit::HostModule::compile(source, options);
  ASSERT_TRUE(static_cast<bool>(module))
      << llvm::toString(module.takeError()) << "\nmodule:\n"
      << source;
  auto fn = (*module)->lookup("forward");
  ASSERT_TRUE(static_cast<bool>(fn)) << llvm::toString(fn.takeError());

  std::mt19937_64 rng(seed);
  Fp8Tensor q({s.batch, s.headsQ, s.seqQ, s.headDim}),
      k({s.batch, s.headsKV, s.seqKV, s.headDim}),
      v({s.batch, s.headsKV, s.seqKV, s.headDimV});
  // Q's descale is per KV head too (FlashAttention 3's convention): query
  // heads of a group share one.
  DescaleTensor dq(s.batch, s.headsKV), dk(s.batch, s.headsKV),
      dv(s.batch, s.headsKV);
  // Q quantized per query head group: a group's heads share a scale.
  int64_t group = s.headsQ / s.headsKV;
  std::vector<double> qd;
  {
    Fp8Tensor perGroup({s.batch, s.headsKV, group * s.seqQ, s.headDim});
    qd = quantize(perGroup, dq, rng);
    q.bytes = perGroup.bytes; // the same layout: [B, Hkv, group, Nq, D]
    q.desc.basePtr = q.desc.data = q.bytes.data();
  }
  std::vector<double> kd = quantize(k, dk, rng), vd = quantize(v, dv, rng);

  std::vector<double> refO(ref::numelO(s)), refLse(ref::numelLSE(s));
  ref::attentionForward(s, params, qd.data(), kd.data(), vd.data(), refO.data(),
                        refLse.data());

  HostTensor o(c.out, {s.batch, s.headsQ, s.seqQ, s.headDimV}),
      lse(DType::F32, {s.batch, s.headsQ, s.seqQ});
  o.poison();
  lse.poison();
  (*fn)({q.arg(), k.arg(), v.arg(), dq.arg(), dk.arg(), dv.arg(), o.arg(),
         lse.arg()});

  std::vector<double> out = o.load(), lseOut = lse.load();
  for (double x : out)
    ASSERT_FALSE(std::isnan(x)) << "O has an element that was not written";
  double errO = ref::relativeL2Error(out.data(), refO.data(), out.size());
  double errLse =
      ref::relativeL2Error(lseOut.data(), refLse.data(), lseOut.size());
  EXPECT_LE(errO, tolerance(c.out));
  EXPECT_LE(errLse, kLseTolerance);
  std::printf("[  errors  ] %s: O %.2e  LSE %.2e\n", c.name.c_str(), errO,
              errLse);
}

/// Descales must be positive: a negative or zero one makes NaN the rows that
/// it scales (its batch and KV head's query heads), rather than the softmax
/// of negated or zeroed scores, so that kernels may scale the raw row max;
/// the other heads keep their reference values.
TEST(FP8Execution, NonPositiveDescalesMakeTheirRowsNaN) {
  Fp8Case c;
  c.name = "non_positive_descales";
  c.shape = ref::AttentionShape{2, 4, 2, 64, 64, 32, 32};
  c.causal = true; // masked scores (-inf) meet the factor too
  c.blockQ = c.blockKV = 32;
  const ref::AttentionShape &s = c.shape;
  auto module = hostjit::HostModule::compile(buildModule(c), [&] {
    hostjit::CompileOptions options;
    options.blockQ = c.blockQ;
    options.blockKV = c.blockKV;
    return options;
  }());
  ASSERT_TRUE(static_cast<bool>(module)) << llvm::toString(module.takeError());
  auto fn = (*module)->lookup("forward");
  ASSERT_TRUE(static_cast<bool>(fn)) << llvm::toString(fn.takeError());

  std::mt19937_64 rng(7);
  Fp8Tensor q({s.batch, s.headsQ, s.seqQ, s.headDim}),
      k({s.batch, s.headsKV, s.seqKV, s.headDim}),
      v({s.batch, s.headsKV, s.seqKV, s.headDimV});
  DescaleTensor dq(s.batch, s.headsKV), dk(s.batch, s.headsKV),
      dv(s.batch, s.headsKV);
  std::vector<double> qd;
  {
    Fp8Tensor perGroup({s.batch, s.headsKV, 2 * s.seqQ, s.headDim});
    qd = quantize(perGroup, dq, rng);
    q.bytes = perGroup.bytes;
    q.desc.basePtr = q.desc.data = q.bytes.data();
  }
  std::vector<double> kd = quantize(k, dk, rng), vd = quantize(v, dv, rng);
  ref::AttentionParams params;
  params.scale = ref::defaultScale(s);
  params.causal = true;
  std::vector<double> refO(ref::numelO(s)), refLse(ref::numelLSE(s));
  ref::attentionForward(s, params, qd.data(), kd.data(), vd.data(), refO.data(),
                        refLse.data());
  // (batch 1, KV head 0): K's descale negative; (batch 0, KV head 1): Q's
  // zero.
  dk.values[1 * s.headsKV + 0] *= -1.0f;
  dq.values[0 * s.headsKV + 1] = 0.0f;
  auto spoiled = [&](int64_t batch, int64_t headQ) {
    int64_t headKV = headQ / (s.headsQ / s.headsKV);
    return (batch == 1 && headKV == 0) || (batch == 0 && headKV == 1);
  };

  HostTensor o(DType::BF16, {s.batch, s.headsQ, s.seqQ, s.headDimV}),
      lse(DType::F32, {s.batch, s.headsQ, s.seqQ});
  o.poison();
  lse.poison();
  (*fn)({q.arg(), k.arg(), v.arg(), dq.arg(), dk.arg(), dv.arg(), o.arg(),
         lse.arg()});
  std::vector<double> out = o.load();
  int64_t perHead = s.seqQ * s.headDimV;
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.headsQ; ++h) {
      const double *got = out.data() + (b * s.headsQ + h) * perHead;
      const double *want = refO.data() + (b * s.headsQ + h) * perHead;
      if (spoiled(b, h)) {
        for (int64_t i = 0; i < perHead; ++i)
          ASSERT_TRUE(std::isnan(got[i]))
              << "batch " << b << " head " << h << " element " << i;
        continue;
      }
      EXPECT_LE(ref::relativeL2Error(got, want, perHead), tolerance(c.out))
          << "batch " << b << " head " << h;
    }
}

/// Every e4m3 code through the host lowering of arith.extf
/// (fa-expand-fp8-conversions) against APFloat's decoding.
TEST(FP8Decoding, EveryCodeMatchesAPFloat) {
  const char *source = R"mlir(
func.func @decode(%in: memref<256xf8E4M3FN>, %out: memref<256xf32>)
    attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  scf.for %i = %c0 to %c256 step %c1 {
    %x = memref.load %in[%i] : memref<256xf8E4M3FN>
    %y = arith.extf %x : f8E4M3FN to f32
    memref.store %y, %out[%i] : memref<256xf32>
  }
  return
}
)mlir";
  auto module = hostjit::HostModule::compile(source, {});
  ASSERT_TRUE(static_cast<bool>(module)) << llvm::toString(module.takeError());
  auto fn = (*module)->lookup("decode");
  ASSERT_TRUE(static_cast<bool>(fn)) << llvm::toString(fn.takeError());
  std::vector<uint8_t> codes(256);
  std::vector<float> values(256, 12345.0f);
  for (int i = 0; i < 256; ++i)
    codes[i] = static_cast<uint8_t>(i);
  StridedMemRefType<uint8_t, 1> in{codes.data(), codes.data(), 0, {256}, {1}};
  StridedMemRefType<float, 1> out{values.data(), values.data(), 0, {256}, {1}};
  (*fn)({&in, &out});
  for (int i = 0; i < 256; ++i) {
    double expected = fromE4M3(static_cast<uint8_t>(i));
    if (std::isnan(expected)) {
      EXPECT_TRUE(std::isnan(values[i])) << "code " << i;
      continue;
    }
    EXPECT_EQ(values[i], expected) << "code " << i;
    EXPECT_EQ(std::signbit(values[i]), std::signbit(expected)) << "code " << i;
  }
}

std::vector<Fp8Case> cases() {
  using R = ref::AttentionShape;
  std::vector<Fp8Case> all;
  auto add = [&](const char *name, DType out, R shape) -> Fp8Case & {
    Fp8Case c;
    c.name = name;
    c.out = out;
    c.shape = shape;
    all.push_back(c);
    return all.back();
  };
  add("mha_bf16", DType::BF16, R{1, 2, 2, 128, 128, 64, 64});
  add("gqa_ragged_causal_f16", DType::F16, R{2, 4, 2, 100, 130, 64, 64})
      .causal = true;
  {
    Fp8Case &c =
        add("window_softcap_bf16", DType::BF16, R{1, 2, 1, 96, 200, 32, 64});
    c.window = std::make_pair<int64_t, int64_t>(40, 8);
    c.softcap = 5.0;
    c.blockKV = 32;
  }
  {
    Fp8Case &c =
        add("causal_nq_gt_nk_f16", DType::F16, R{1, 2, 2, 150, 70, 64, 64});
    c.causal = true; // rows that see no key: O = 0, LSE = -inf
    c.blockQ = 32;
  }
  return all;
}

INSTANTIATE_TEST_SUITE_P(Host, FP8Execution, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Fp8Case> &info) {
                           return info.param.name;
                         });

} // namespace
