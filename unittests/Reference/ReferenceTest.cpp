//===- ReferenceTest.cpp - Tests of the fp64 attention reference ----------===//
//
// The reference is the oracle of every later correctness test, so it is
// checked here against things that do not share its code:
//   - hand-computed tiny problems with literal expected values,
//   - an independent naive implementation (materialized S and P, its own mask
//     formula, softmax without max-subtraction, its own GQA head mapping),
//   - central finite differences of the forward for the backward,
//   - an MHA expansion of GQA/MQA problems,
//   - a direct log-sum-exp for LSE.
//
//===----------------------------------------------------------------------===//

#include "fa/Reference/Reference.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iomanip>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

using namespace fa::ref;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr double kLn2 = 0.69314718055994530942;

using Vec = std::vector<double>;
using Window = std::pair<int64_t, int64_t>;
using Range = std::pair<int64_t, int64_t>; // [first, last)

AttentionShape makeShape(int64_t b, int64_t hq, int64_t hkv, int64_t nq,
                         int64_t nk, int64_t d, int64_t dv) {
  AttentionShape s;
  s.batch = b;
  s.headsQ = hq;
  s.headsKV = hkv;
  s.seqQ = nq;
  s.seqKV = nk;
  s.headDim = d;
  s.headDimV = dv;
  return s;
}

AttentionParams makeParams(double scale, bool causal = false,
                           std::optional<Window> window = std::nullopt,
                           std::optional<double> softcap = std::nullopt) {
  AttentionParams p;
  p.scale = scale;
  p.causal = causal;
  p.window = window;
  p.softcap = softcap;
  return p;
}

std::string describe(const AttentionShape &s, const AttentionParams &p) {
  std::ostringstream os;
  os << "B=" << s.batch << " Hq=" << s.headsQ << " Hkv=" << s.headsKV
     << " Nq=" << s.seqQ << " Nk=" << s.seqKV << " D=" << s.headDim
     << " Dv=" << s.headDimV << " scale=" << p.scale << " causal=" << p.causal;
  if (p.window)
    os << " window=(" << p.window->first << "," << p.window->second << ")";
  if (p.softcap)
    os << " softcap=" << *p.softcap;
  return os.str();
}

Vec normalVec(int64_t n, std::mt19937_64 &rng, double stddev = 1.0) {
  std::normal_distribution<double> dist(0.0, stddev);
  Vec v(n);
  for (double &x : v)
    x = dist(rng);
  return v;
}

Vec uniformVec(int64_t n, std::mt19937_64 &rng, double lo = -1.0,
               double hi = 1.0) {
  std::uniform_real_distribution<double> dist(lo, hi);
  Vec v(n);
  for (double &x : v)
    x = dist(rng);
  return v;
}

struct Inputs {
  Vec q, k, v;
};

Inputs randomInputs(const AttentionShape &s, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Inputs in;
  in.q = normalVec(numelQ(s), rng);
  in.k = normalVec(numelK(s), rng);
  in.v = uniformVec(numelV(s), rng);
  return in;
}

struct FwdResult {
  Vec o, lse;
};

FwdResult runForward(const AttentionShape &s, const AttentionParams &p,
                     const Inputs &in) {
  FwdResult r{Vec(numelO(s)), Vec(numelLSE(s))};
  attentionForward(s, p, in.q.data(), in.k.data(), in.v.data(), r.o.data(),
                   r.lse.data());
  return r;
}

struct Grads {
  Vec dq, dk, dv;
};

Grads runBackward(const AttentionShape &s, const AttentionParams &p,
                  const Inputs &in, const FwdResult &f, const Vec &dO) {
  Grads g{Vec(numelQ(s)), Vec(numelK(s)), Vec(numelV(s))};
  attentionBackward(s, p, in.q.data(), in.k.data(), in.v.data(), f.o.data(),
                    dO.data(), f.lse.data(), g.dq.data(), g.dk.data(),
                    g.dv.data());
  return g;
}

double norm2(const Vec &v) {
  double s = 0.0;
  for (double x : v)
    s += x * x;
  return std::sqrt(s);
}

/// Element-wise |got - want| <= atol + rtol * |want|. Equal values (including
/// equal infinities) match; NaN never matches.
::testing::AssertionResult allClose(const Vec &got, const Vec &want,
                                    double atol, double rtol) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure()
           << "size mismatch: " << got.size() << " vs " << want.size();
  size_t bad = 0, first = 0;
  for (size_t e = 0; e < got.size(); ++e) {
    bool ok;
    if (std::isnan(got[e]) || std::isnan(want[e]))
      ok = false;
    else if (got[e] == want[e])
      ok = true;
    else
      ok = std::fabs(got[e] - want[e]) <= atol + rtol * std::fabs(want[e]);
    if (!ok && bad++ == 0)
      first = e;
  }
  if (bad == 0)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << std::setprecision(17) << bad << " of " << got.size()
         << " elements differ; first at index " << first << ": got "
         << got[first] << ", want " << want[first];
}

//===----------------------------------------------------------------------===//
// Independent naive implementation (shares no code with the library).
//===----------------------------------------------------------------------===//

/// Mask written differently from isVisible: in terms of the key position
/// relative to the query, p = j - (Nk - Nq) ("the key aligned with i").
bool naiveVisible(const AttentionShape &s, const AttentionParams &p, int64_t i,
                  int64_t j) {
  const int64_t aligned = j - (s.seqKV - s.seqQ);
  bool ok = true;
  if (p.causal)
    ok = ok && aligned <= i;
  if (p.window) {
    if (p.window->first >= 0)
      ok = ok && i - aligned <= p.window->first;
    if (p.window->second >= 0)
      ok = ok && aligned - i <= p.window->second;
  }
  return ok;
}

/// Materializes S and the unnormalized E = exp(S) (masked entries 0) and uses
/// O = E V / rowsum(E), LSE = log(rowsum(E)): no max subtraction, so only for
/// small-magnitude scores. KV head of query head h is h * Hkv / Hq.
FwdResult naiveForward(const AttentionShape &s, const AttentionParams &p,
                       const Inputs &in) {
  const int64_t B = s.batch, Hq = s.headsQ, Hkv = s.headsKV, Nq = s.seqQ,
                Nk = s.seqKV, D = s.headDim, Dv = s.headDimV;
  FwdResult r{Vec(B * Hq * Nq * Dv, 0.0), Vec(B * Hq * Nq, -kInf)};
  Vec S(Nq * Nk), E(Nq * Nk);
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < Hq; ++h) {
      const int64_t hk = h * Hkv / Hq;
      auto Q = [&](int64_t i, int64_t x) {
        return in.q[((b * Hq + h) * Nq + i) * D + x];
      };
      auto K = [&](int64_t j, int64_t x) {
        return in.k[((b * Hkv + hk) * Nk + j) * D + x];
      };
      auto V = [&](int64_t j, int64_t y) {
        return in.v[((b * Hkv + hk) * Nk + j) * Dv + y];
      };
      for (int64_t i = 0; i < Nq; ++i)
        for (int64_t j = 0; j < Nk; ++j) {
          double acc = 0.0;
          for (int64_t x = 0; x < D; ++x)
            acc += Q(i, x) * K(j, x);
          double sij = acc * p.scale;
          if (p.softcap)
            sij = std::tanh(sij / *p.softcap) * *p.softcap;
          S[i * Nk + j] = sij;
          E[i * Nk + j] = naiveVisible(s, p, i, j) ? std::exp(sij) : 0.0;
        }
      for (int64_t i = 0; i < Nq; ++i) {
        bool any = false;
        double z = 0.0;
        for (int64_t j = 0; j < Nk; ++j) {
          any = any || naiveVisible(s, p, i, j);
          z += E[i * Nk + j];
        }
        if (!any)
          continue; // O row stays 0, LSE stays -inf
        r.lse[(b * Hq + h) * Nq + i] = std::log(z);
        for (int64_t y = 0; y < Dv; ++y) {
          double acc = 0.0;
          for (int64_t j = 0; j < Nk; ++j)
            acc += E[i * Nk + j] * V(j, y);
          r.o[((b * Hq + h) * Nq + i) * Dv + y] = acc / z;
        }
      }
    }
  }
  return r;
}

//===----------------------------------------------------------------------===//
// 1. Hand-computed tiny cases.
//===----------------------------------------------------------------------===//

// Nq=1, Nk=2, D=Dv=1, q=1, k=(0,1), scale=ln2: s = (0, ln2), so
// P = (1/3, 2/3); v = (3, 6) gives O = 1 + 4 = 5 and LSE = ln 3.
TEST(ReferenceHandComputed, OneQueryTwoKeys) {
  const AttentionShape s = makeShape(1, 1, 1, 1, 2, 1, 1);
  const AttentionParams p = makeParams(kLn2);
  const Inputs in{{1.0}, {0.0, 1.0}, {3.0, 6.0}};
  const FwdResult f = runForward(s, p, in);
  EXPECT_NEAR(f.o[0], 5.0, 1e-14);
  EXPECT_NEAR(f.lse[0], 1.0986122886681098, 1e-15);
}

// Backward of the problem above with dO = 1:
// D = dO.O = 5, dP = v = (3, 6), dS = P (dP - D) = (-2/3, 2/3),
// dq = scale * sum_j dS_j k_j = 2 ln2 / 3, dk_j = scale dS_j q,
// dv_j = P_j dO = (1/3, 2/3).
TEST(ReferenceHandComputed, OneQueryTwoKeysBackward) {
  const AttentionShape s = makeShape(1, 1, 1, 1, 2, 1, 1);
  const AttentionParams p = makeParams(kLn2);
  const Inputs in{{1.0}, {0.0, 1.0}, {3.0, 6.0}};
  const FwdResult f = runForward(s, p, in);
  const Grads g = runBackward(s, p, in, f, {1.0});
  EXPECT_NEAR(g.dq[0], 0.46209812037329684, 1e-14);
  EXPECT_NEAR(g.dk[0], -0.46209812037329684, 1e-14);
  EXPECT_NEAR(g.dk[1], 0.46209812037329684, 1e-14);
  EXPECT_NEAR(g.dv[0], 1.0 / 3.0, 1e-15);
  EXPECT_NEAR(g.dv[1], 2.0 / 3.0, 1e-15);
}

// Causal, Nq=2 < Nk=3, bottom-right aligned (shift 1): query 0 sees keys 0,1
// and query 1 sees keys 0,1,2. scale=1.
//   q0 = (0,0): all scores 0, P = (1/2, 1/2), O0 = (v0+v1)/2, LSE0 = ln 2.
//   q1 = (1,0), k = ((0,0), (0,0), (ln2,0)): s = (0, 0, ln2),
//   P = (1/4, 1/4, 1/2), O1 = (1,0)/4 + (0,1)/4 + (4,8)/2, LSE1 = ln 4.
TEST(ReferenceHandComputed, CausalBottomRight) {
  const AttentionShape s = makeShape(1, 1, 1, 2, 3, 2, 2);
  const AttentionParams p = makeParams(1.0, /*causal=*/true);
  const Inputs in{{0.0, 0.0, 1.0, 0.0},
                  {0.0, 0.0, 0.0, 0.0, kLn2, 0.0},
                  {1.0, 0.0, 0.0, 1.0, 4.0, 8.0}};
  const FwdResult f = runForward(s, p, in);
  EXPECT_TRUE(allClose(f.o, {0.5, 0.5, 2.25, 4.25}, 1e-14, 0.0));
  EXPECT_TRUE(
      allClose(f.lse, {0.6931471805599453, 1.3862943611198906}, 1e-15, 0.0));
}

// Causal with Nq=3 > Nk=1 (shift -2): queries 0 and 1 see no key, query 2
// sees key 0 only. Masked rows: O = 0, LSE = -inf, dq = 0. The single-key row
// has P = 1, O = v0, LSE = s = 3 * 0.5, and dS = 1 * (dO.v0 - dO.O) = 0.
TEST(ReferenceHandComputed, FullyMaskedRowsCausalQueryLonger) {
  const AttentionShape s = makeShape(1, 1, 1, 3, 1, 1, 1);
  const AttentionParams p = makeParams(1.0, /*causal=*/true);
  const Inputs in{{1.0, 2.0, 3.0}, {0.5}, {7.0}};
  const FwdResult f = runForward(s, p, in);
  EXPECT_EQ(f.o[0], 0.0);
  EXPECT_EQ(f.o[1], 0.0);
  EXPECT_EQ(f.o[2], 7.0);
  EXPECT_EQ(f.lse[0], -kInf);
  EXPECT_EQ(f.lse[1], -kInf);
  EXPECT_EQ(f.lse[2], 1.5);

  const Grads g = runBackward(s, p, in, f, {1.0, 1.0, 1.0});
  EXPECT_EQ(g.dq[0], 0.0);
  EXPECT_EQ(g.dq[1], 0.0);
  EXPECT_EQ(g.dq[2], 0.0);
  EXPECT_EQ(g.dk[0], 0.0);
  // Only the visible row contributes to dV: P_20 * dO_2 = 1.
  EXPECT_EQ(g.dv[0], 1.0);
}

// Window (0, 0) with Nq=3 > Nk=2 (shift -1): query 0 sees nothing, query i>0
// sees exactly key i-1, so O_i = v_{i-1} and LSE_i = s_{i,i-1}.
TEST(ReferenceHandComputed, WindowDiagonalOnly) {
  const AttentionShape s = makeShape(1, 1, 1, 3, 2, 1, 2);
  const AttentionParams p = makeParams(0.5, false, Window{0, 0});
  const Inputs in{{1.0, 2.0, 4.0}, {3.0, -1.0}, {1.0, 2.0, 3.0, 4.0}};
  const FwdResult f = runForward(s, p, in);
  EXPECT_TRUE(allClose(f.o, {0.0, 0.0, 1.0, 2.0, 3.0, 4.0}, 0.0, 0.0));
  // s_10 = 0.5 * 2 * 3 = 3, s_21 = 0.5 * 4 * -1 = -2.
  EXPECT_TRUE(allClose(f.lse, {-kInf, 3.0, -2.0}, 0.0, 0.0));
}

// Softcap 2 with scale 1: k1 = 2 atanh(ln2 / 2) makes the capped score
// 2 tanh(k1 / 2) = ln 2, so P = (1/3, 2/3) as in OneQueryTwoKeys. Backward
// with dO = 1: dS = (-2/3, 2/3) and the cap derivative at key 1 is
// 1 - (ln2/2)^2, at key 0 (raw score 0) it is 1.
TEST(ReferenceHandComputed, Softcap) {
  const AttentionShape s = makeShape(1, 1, 1, 1, 2, 1, 1);
  const AttentionParams p = makeParams(1.0, false, std::nullopt, 2.0);
  const double k1 = 2.0 * std::atanh(kLn2 / 2.0);
  const Inputs in{{1.0}, {0.0, k1}, {3.0, 6.0}};
  const FwdResult f = runForward(s, p, in);
  EXPECT_NEAR(f.o[0], 5.0, 1e-14);
  EXPECT_NEAR(f.lse[0], 1.0986122886681098, 1e-15);

  const Grads g = runBackward(s, p, in, f, {1.0});
  const double capGrad1 = 1.0 - (kLn2 / 2.0) * (kLn2 / 2.0);
  EXPECT_NEAR(g.dq[0], 2.0 / 3.0 * capGrad1 * k1, 1e-14);
  EXPECT_NEAR(g.dk[0], -2.0 / 3.0, 1e-14);
  EXPECT_NEAR(g.dk[1], 2.0 / 3.0 * capGrad1, 1e-14);
  EXPECT_NEAR(g.dv[0], 1.0 / 3.0, 1e-15);
  EXPECT_NEAR(g.dv[1], 2.0 / 3.0, 1e-15);
}

// GQA 2:1 by hand: both query heads read the single KV head; with q = 0 the
// output is the mean of v for each head, and dV sums both heads' P^T dO.
TEST(ReferenceHandComputed, GroupedHeadsShareKV) {
  const AttentionShape s = makeShape(1, 2, 1, 1, 2, 1, 1);
  const AttentionParams p = makeParams(1.0);
  const Inputs in{{0.0, 0.0}, {5.0, -3.0}, {2.0, 4.0}};
  const FwdResult f = runForward(s, p, in);
  EXPECT_TRUE(allClose(f.o, {3.0, 3.0}, 1e-15, 0.0));
  EXPECT_TRUE(allClose(f.lse, {kLn2, kLn2}, 1e-15, 0.0));
  // dO = (1, 10): dv_j = 0.5 * 1 + 0.5 * 10 = 5.5 for both keys.
  const Grads g = runBackward(s, p, in, f, {1.0, 10.0});
  EXPECT_TRUE(allClose(g.dv, {5.5, 5.5}, 1e-14, 0.0));
}

TEST(ReferenceHandComputed, LseIsOptional) {
  const AttentionShape s = makeShape(1, 1, 1, 1, 2, 1, 1);
  const AttentionParams p = makeParams(kLn2);
  const Inputs in{{1.0}, {0.0, 1.0}, {3.0, 6.0}};
  double o = 0.0;
  attentionForward(s, p, in.q.data(), in.k.data(), in.v.data(), &o, nullptr);
  EXPECT_NEAR(o, 5.0, 1e-14);
}

//===----------------------------------------------------------------------===//
// 2. Against the naive implementation.
//===----------------------------------------------------------------------===//

struct Case {
  std::string name;
  AttentionShape shape;
  AttentionParams params;
  uint64_t seed;
};

std::ostream &operator<<(std::ostream &os, const Case &c) {
  return os << c.name << ": " << describe(c.shape, c.params);
}

std::string caseName(const ::testing::TestParamInfo<Case> &paramInfo) {
  return paramInfo.param.name;
}

std::vector<Case> naiveCases() {
  const double sc8 = 1.0 / std::sqrt(8.0);
  return {
      {"NoMask", makeShape(2, 2, 2, 9, 11, 8, 8), makeParams(sc8), 101},
      {"CausalSquare", makeShape(1, 2, 2, 13, 13, 8, 8), makeParams(sc8, true),
       102},
      {"CausalQueryShorter", makeShape(2, 2, 2, 5, 12, 8, 8),
       makeParams(sc8, true), 103},
      {"CausalQueryLonger", makeShape(2, 2, 2, 12, 5, 8, 8),
       makeParams(sc8, true), 104},
      {"WindowLeftOnly", makeShape(1, 2, 2, 16, 16, 8, 8),
       makeParams(sc8, false, Window{3, -1}), 105},
      {"WindowRightOnly", makeShape(1, 2, 2, 16, 16, 8, 8),
       makeParams(sc8, false, Window{-1, 2}), 106},
      {"WindowBoth", makeShape(1, 2, 2, 16, 16, 8, 8),
       makeParams(sc8, false, Window{3, 2}), 107},
      {"WindowBothQueryShorter", makeShape(1, 2, 2, 7, 15, 8, 8),
       makeParams(sc8, false, Window{2, 1}), 108},
      {"WindowBothQueryLonger", makeShape(1, 2, 2, 15, 7, 8, 8),
       makeParams(sc8, false, Window{1, 0}), 109},
      {"WindowUnbounded", makeShape(1, 2, 2, 6, 9, 8, 8),
       makeParams(sc8, false, Window{-1, -1}), 110},
      {"CausalAndWindow", makeShape(1, 2, 2, 14, 14, 8, 8),
       makeParams(sc8, true, Window{4, 3}), 111},
      {"Softcap", makeShape(1, 2, 2, 10, 12, 8, 8),
       makeParams(1.0, false, std::nullopt, 0.5), 112},
      {"SoftcapCausal", makeShape(1, 2, 2, 10, 10, 8, 8),
       makeParams(0.7, true, std::nullopt, 2.0), 113},
      {"GQA4to1", makeShape(2, 8, 2, 9, 10, 8, 8), makeParams(sc8, true), 114},
      {"MQA", makeShape(1, 4, 1, 9, 9, 8, 8), makeParams(sc8), 115},
      {"DvSmaller", makeShape(1, 2, 2, 9, 9, 8, 3), makeParams(sc8, true), 116},
      {"DvLarger", makeShape(1, 2, 2, 9, 9, 4, 11), makeParams(0.5, true), 117},
      {"HeadDimOne", makeShape(1, 1, 1, 4, 6, 1, 1), makeParams(1.0), 118},
      {"Everything", makeShape(2, 6, 2, 10, 13, 5, 7),
       makeParams(0.7, true, Window{3, -1}, 1.5), 119},
  };
}

class ReferenceVsNaive : public ::testing::TestWithParam<Case> {};

TEST_P(ReferenceVsNaive, ForwardMatches) {
  const Case &c = GetParam();
  ASSERT_EQ(validate(c.shape, c.params), "");
  const Inputs in = randomInputs(c.shape, c.seed);
  const FwdResult got = runForward(c.shape, c.params, in);
  const FwdResult want = naiveForward(c.shape, c.params, in);
  EXPECT_TRUE(allClose(got.o, want.o, 1e-13, 1e-12)) << "O";
  EXPECT_TRUE(allClose(got.lse, want.lse, 1e-13, 1e-12)) << "LSE";
  // Not vacuous: the outputs are not all zero.
  EXPECT_GT(norm2(got.o), 0.1);
}

INSTANTIATE_TEST_SUITE_P(Cases, ReferenceVsNaive,
                         ::testing::ValuesIn(naiveCases()), caseName);

// The comparison above can fail: a causal reference result differs from the
// naive non-causal one, and a perturbation of one element is detected.
TEST(ReferenceVsNaiveHarness, DetectsDifferences) {
  const AttentionShape s = makeShape(1, 2, 2, 6, 6, 4, 4);
  const Inputs in = randomInputs(s, 7);
  const FwdResult causal = runForward(s, makeParams(0.5, true), in);
  const FwdResult full = naiveForward(s, makeParams(0.5, false), in);
  EXPECT_FALSE(allClose(causal.o, full.o, 1e-13, 1e-12));
  FwdResult perturbed = naiveForward(s, makeParams(0.5, true), in);
  EXPECT_TRUE(allClose(causal.o, perturbed.o, 1e-13, 1e-12));
  perturbed.o[5] += 1e-9;
  EXPECT_FALSE(allClose(causal.o, perturbed.o, 1e-13, 1e-12));
}

//===----------------------------------------------------------------------===//
// 3. Backward against central finite differences of L = sum(O * G).
//===----------------------------------------------------------------------===//

std::vector<Case> gradCases() {
  const double sc3 = 1.0 / std::sqrt(3.0);
  return {
      {"CausalQueryShorterGQA", makeShape(1, 4, 2, 5, 7, 3, 2),
       makeParams(sc3, true), 201},
      {"CausalQueryLongerGQA", makeShape(2, 4, 2, 7, 5, 3, 2),
       makeParams(sc3, true), 202},
      {"WindowBoth", makeShape(1, 4, 2, 6, 6, 3, 2),
       makeParams(sc3, false, Window{2, 1}), 203},
      {"WindowLeftSoftcap", makeShape(1, 4, 2, 6, 7, 3, 2),
       makeParams(1.0, false, Window{1, -1}, 0.8), 204},
      {"WindowRightQueryLonger", makeShape(1, 4, 2, 7, 5, 3, 2),
       makeParams(sc3, false, Window{-1, 0}), 205},
      {"SoftcapMHA", makeShape(2, 4, 4, 5, 6, 3, 3),
       makeParams(1.2, false, std::nullopt, 1.0), 206},
      {"MQACausal", makeShape(1, 4, 1, 6, 5, 3, 2), makeParams(sc3, true), 207},
      {"NoMaskDvLarger", makeShape(2, 4, 2, 5, 6, 3, 4), makeParams(sc3), 208},
      {"Everything", makeShape(2, 4, 2, 6, 7, 3, 2),
       makeParams(0.9, true, Window{2, -1}, 1.3), 209},
  };
}

class ReferenceGradient : public ::testing::TestWithParam<Case> {};

TEST_P(ReferenceGradient, MatchesFiniteDifferences) {
  const Case &c = GetParam();
  const AttentionShape &s = c.shape;
  const AttentionParams &p = c.params;
  ASSERT_EQ(validate(s, p), "");
  Inputs in = randomInputs(s, c.seed);
  std::mt19937_64 rng(c.seed * 7919 + 1);
  const Vec g = normalVec(numelO(s), rng); // G = dO

  const FwdResult f = runForward(s, p, in);
  const Grads an = runBackward(s, p, in, f, g);

  Vec o(numelO(s));
  auto loss = [&]() {
    attentionForward(s, p, in.q.data(), in.k.data(), in.v.data(), o.data(),
                     nullptr);
    double l = 0.0;
    for (size_t e = 0; e < o.size(); ++e)
      l += o[e] * g[e];
    return l;
  };
  const double h = 1e-6;
  auto finiteDiff = [&](Vec &x) {
    Vec grad(x.size());
    for (size_t e = 0; e < x.size(); ++e) {
      const double saved = x[e];
      x[e] = saved + h;
      const double lp = loss();
      x[e] = saved - h;
      const double lm = loss();
      x[e] = saved;
      grad[e] = (lp - lm) / (2.0 * h);
    }
    return grad;
  };
  const Vec fdQ = finiteDiff(in.q);
  const Vec fdK = finiteDiff(in.k);
  const Vec fdV = finiteDiff(in.v);

  EXPECT_LT(relativeL2Error(an.dq.data(), fdQ.data(), fdQ.size()), 1e-6);
  EXPECT_LT(relativeL2Error(an.dk.data(), fdK.data(), fdK.size()), 1e-6);
  EXPECT_LT(relativeL2Error(an.dv.data(), fdV.data(), fdV.size()), 1e-6);
  EXPECT_TRUE(allClose(an.dq, fdQ, 1e-6, 1e-6)) << "dQ";
  EXPECT_TRUE(allClose(an.dk, fdK, 1e-6, 1e-6)) << "dK";
  EXPECT_TRUE(allClose(an.dv, fdV, 1e-6, 1e-6)) << "dV";
  // Not vacuous: the gradients are not all zero.
  EXPECT_GT(norm2(an.dq), 1e-2);
  EXPECT_GT(norm2(an.dk), 1e-2);
  EXPECT_GT(norm2(an.dv), 1e-2);

  // Rows without visible keys get exactly zero dQ.
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t hq = 0; hq < s.headsQ; ++hq)
      for (int64_t i = 0; i < s.seqQ; ++i) {
        const auto [first, last] = visibleKeyRange(s, p, i);
        if (first < last)
          continue;
        for (int64_t x = 0; x < s.headDim; ++x)
          EXPECT_EQ(an.dq[((b * s.headsQ + hq) * s.seqQ + i) * s.headDim + x],
                    0.0);
      }
}

INSTANTIATE_TEST_SUITE_P(Cases, ReferenceGradient,
                         ::testing::ValuesIn(gradCases()), caseName);

// Backward overwrites its outputs instead of accumulating into them.
TEST(ReferenceBackward, OverwritesOutputs) {
  const AttentionShape s = makeShape(1, 4, 2, 5, 6, 3, 2);
  const AttentionParams p = makeParams(0.6, true);
  const Inputs in = randomInputs(s, 301);
  std::mt19937_64 rng(302);
  const Vec dO = normalVec(numelO(s), rng);
  const FwdResult f = runForward(s, p, in);
  const Grads clean = runBackward(s, p, in, f, dO);
  Grads dirty{Vec(numelQ(s), std::nan("")), Vec(numelK(s), 123.0),
              Vec(numelV(s), -7.0)};
  attentionBackward(s, p, in.q.data(), in.k.data(), in.v.data(), f.o.data(),
                    dO.data(), f.lse.data(), dirty.dq.data(), dirty.dk.data(),
                    dirty.dv.data());
  EXPECT_EQ(dirty.dq, clean.dq);
  EXPECT_EQ(dirty.dk, clean.dk);
  EXPECT_EQ(dirty.dv, clean.dv);
}

//===----------------------------------------------------------------------===//
// 4. GQA / MQA equal the sum over an expanded MHA problem.
//===----------------------------------------------------------------------===//

class ReferenceGroupedHeads : public ::testing::TestWithParam<Case> {};

TEST_P(ReferenceGroupedHeads, MatchExpandedMHA) {
  const Case &c = GetParam();
  const AttentionShape &s = c.shape;
  const AttentionParams &p = c.params;
  ASSERT_EQ(validate(s, p), "");
  const int64_t group = s.headsQ / s.headsKV;
  ASSERT_GT(group, 1);
  const Inputs in = randomInputs(s, c.seed);
  std::mt19937_64 rng(c.seed + 17);
  const Vec dO = normalVec(numelO(s), rng);

  // Expand K/V: MHA head h gets a copy of KV head h / group.
  AttentionShape m = s;
  m.headsKV = s.headsQ;
  Inputs ex{in.q, Vec(numelK(m)), Vec(numelV(m))};
  const int64_t kRow = s.seqKV * s.headDim, vRow = s.seqKV * s.headDimV;
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.headsQ; ++h) {
      const int64_t src = b * s.headsKV + h / group, dst = b * s.headsQ + h;
      std::copy_n(in.k.begin() + src * kRow, kRow, ex.k.begin() + dst * kRow);
      std::copy_n(in.v.begin() + src * vRow, vRow, ex.v.begin() + dst * vRow);
    }

  const FwdResult fg = runForward(s, p, in);
  const FwdResult fm = runForward(m, p, ex);
  EXPECT_TRUE(allClose(fg.o, fm.o, 0.0, 1e-15)) << "O";
  EXPECT_TRUE(allClose(fg.lse, fm.lse, 0.0, 1e-15)) << "LSE";

  const Grads gg = runBackward(s, p, in, fg, dO);
  const Grads gm = runBackward(m, p, ex, fm, dO);
  EXPECT_TRUE(allClose(gg.dq, gm.dq, 1e-14, 1e-13)) << "dQ";

  // Sum the expanded dK/dV over each group.
  Vec sumK(numelK(s), 0.0), sumV(numelV(s), 0.0);
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.headsQ; ++h) {
      const int64_t dst = b * s.headsKV + h / group, src = b * s.headsQ + h;
      for (int64_t e = 0; e < kRow; ++e)
        sumK[dst * kRow + e] += gm.dk[src * kRow + e];
      for (int64_t e = 0; e < vRow; ++e)
        sumV[dst * vRow + e] += gm.dv[src * vRow + e];
    }
  EXPECT_TRUE(allClose(gg.dk, sumK, 1e-13, 1e-12)) << "dK";
  EXPECT_TRUE(allClose(gg.dv, sumV, 1e-13, 1e-12)) << "dV";
  EXPECT_GT(norm2(gg.dk), 1e-2);
  EXPECT_GT(norm2(gg.dv), 1e-2);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ReferenceGroupedHeads,
    ::testing::Values(Case{"GQA4to1", makeShape(2, 8, 2, 9, 11, 6, 5),
                           makeParams(0.4, false), 401},
                      Case{"GQA2to1CausalWindow",
                           makeShape(1, 4, 2, 10, 8, 4, 4),
                           makeParams(0.5, true, Window{3, -1}), 402},
                      Case{"MQASoftcap", makeShape(2, 4, 1, 7, 9, 5, 3),
                           makeParams(0.8, false, Window{2, 2}, 1.1), 403}),
    caseName);

//===----------------------------------------------------------------------===//
// 5. LSE equals a direct log-sum-exp; large scores stay finite.
//===----------------------------------------------------------------------===//

TEST(ReferenceLse, EqualsDirectLogSumExp) {
  const std::vector<Case> cases = {
      {"Causal", makeShape(1, 2, 2, 7, 9, 4, 3), makeParams(0.5, true), 501},
      {"WindowSoftcap", makeShape(2, 2, 1, 9, 6, 4, 3),
       makeParams(0.9, false, Window{1, 2}, 1.7), 502},
      {"QueryLonger", makeShape(1, 3, 3, 9, 4, 2, 2), makeParams(1.0, true),
       503},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(::testing::PrintToString(c));
    const AttentionShape &s = c.shape;
    const Inputs in = randomInputs(s, c.seed);
    const FwdResult f = runForward(s, c.params, in);
    const int64_t group = s.headsQ / s.headsKV;
    Vec want(numelLSE(s));
    for (int64_t b = 0; b < s.batch; ++b)
      for (int64_t h = 0; h < s.headsQ; ++h)
        for (int64_t i = 0; i < s.seqQ; ++i) {
          double z = 0.0;
          for (int64_t j = 0; j < s.seqKV; ++j) {
            if (!isVisible(s, c.params, i, j))
              continue;
            const double *qi =
                &in.q[((b * s.headsQ + h) * s.seqQ + i) * s.headDim];
            const double *kj =
                &in.k[((b * s.headsKV + h / group) * s.seqKV + j) * s.headDim];
            double sij = 0.0;
            for (int64_t x = 0; x < s.headDim; ++x)
              sij += qi[x] * kj[x];
            sij *= c.params.scale;
            if (c.params.softcap)
              sij = *c.params.softcap * std::tanh(sij / *c.params.softcap);
            z += std::exp(sij);
          }
          want[(b * s.headsQ + h) * s.seqQ + i] = std::log(z); // log 0 = -inf
        }
    EXPECT_TRUE(allClose(f.lse, want, 1e-13, 1e-13));
  }
}

// Appending a constant feature (q: 1, k: C) adds C to every score of a row.
// With C = 1000 a softmax without max-subtraction would overflow; the result
// must be O unchanged and LSE shifted by exactly C (up to rounding).
TEST(ReferenceLse, LargeScoresAreStable) {
  const AttentionShape s = makeShape(1, 2, 2, 6, 8, 3, 3);
  const AttentionParams p = makeParams(1.0, true);
  const Inputs in = randomInputs(s, 504);
  AttentionShape s4 = s;
  s4.headDim = 4;
  const double c = 1000.0;
  Inputs in4{Vec(numelQ(s4)), Vec(numelK(s4)), in.v};
  for (int64_t r = 0; r < numelQ(s) / 3; ++r) {
    std::copy_n(in.q.begin() + r * 3, 3, in4.q.begin() + r * 4);
    in4.q[r * 4 + 3] = 1.0;
  }
  for (int64_t r = 0; r < numelK(s) / 3; ++r) {
    std::copy_n(in.k.begin() + r * 3, 3, in4.k.begin() + r * 4);
    in4.k[r * 4 + 3] = c;
  }
  const FwdResult f = runForward(s, p, in);
  const FwdResult f4 = runForward(s4, p, in4);
  EXPECT_TRUE(allClose(f4.o, f.o, 1e-12, 1e-12));
  Vec shifted = f.lse;
  for (double &x : shifted)
    x += c;
  EXPECT_TRUE(allClose(f4.lse, shifted, 1e-12, 1e-12));
  for (double x : f4.lse)
    EXPECT_TRUE(std::isfinite(x));
}

//===----------------------------------------------------------------------===//
// 6. isVisible / visibleKeyRange / validate / helpers.
//===----------------------------------------------------------------------===//

/// The visible keys of query i as a string like "0111100".
std::string visibleRow(const AttentionShape &s, const AttentionParams &p,
                       int64_t i) {
  std::string row;
  for (int64_t j = 0; j < s.seqKV; ++j)
    row += isVisible(s, p, i, j) ? '1' : '0';
  return row;
}

TEST(ReferenceVisibility, OutOfRangeIsInvisible) {
  const AttentionShape s = makeShape(1, 1, 1, 4, 5, 2, 2);
  const AttentionParams p = makeParams(1.0);
  EXPECT_TRUE(isVisible(s, p, 0, 0));
  EXPECT_TRUE(isVisible(s, p, 3, 4));
  EXPECT_FALSE(isVisible(s, p, 0, -1));
  EXPECT_FALSE(isVisible(s, p, 0, 5));
  EXPECT_FALSE(isVisible(s, p, -1, 0));
  EXPECT_FALSE(isVisible(s, p, 4, 0));
  EXPECT_EQ(visibleKeyRange(s, p, -1), Range(0, 0));
  EXPECT_EQ(visibleKeyRange(s, p, 4), Range(0, 0));
  EXPECT_EQ(visibleKeyRange(s, p, 2), Range(0, 5));
}

TEST(ReferenceVisibility, CausalSquare) {
  const AttentionShape s = makeShape(1, 1, 1, 4, 4, 2, 2);
  const AttentionParams p = makeParams(1.0, true);
  EXPECT_EQ(visibleRow(s, p, 0), "1000");
  EXPECT_EQ(visibleRow(s, p, 1), "1100");
  EXPECT_EQ(visibleRow(s, p, 3), "1111");
}

TEST(ReferenceVisibility, CausalBottomRightAligned) {
  // Nq < Nk: shift 3, the last query sees every key.
  const AttentionShape shorter = makeShape(1, 1, 1, 2, 5, 2, 2);
  const AttentionParams p = makeParams(1.0, true);
  EXPECT_EQ(visibleRow(shorter, p, 0), "11110");
  EXPECT_EQ(visibleRow(shorter, p, 1), "11111");
  // Nq > Nk: shift -3, the first three queries see nothing.
  const AttentionShape longer = makeShape(1, 1, 1, 5, 2, 2, 2);
  EXPECT_EQ(visibleRow(longer, p, 0), "00");
  EXPECT_EQ(visibleRow(longer, p, 2), "00");
  EXPECT_EQ(visibleRow(longer, p, 3), "10");
  EXPECT_EQ(visibleRow(longer, p, 4), "11");
  EXPECT_EQ(visibleKeyRange(longer, p, 2), Range(0, 0));
  EXPECT_EQ(visibleKeyRange(longer, p, 3), Range(0, 1));
}

TEST(ReferenceVisibility, Windows) {
  const AttentionShape s = makeShape(1, 1, 1, 10, 10, 2, 2);
  EXPECT_EQ(visibleRow(s, makeParams(1.0, false, Window{2, 1}), 5),
            "0001111000");
  EXPECT_EQ(visibleRow(s, makeParams(1.0, false, Window{2, -1}), 5),
            "0001111111");
  EXPECT_EQ(visibleRow(s, makeParams(1.0, false, Window{-1, 1}), 5),
            "1111111000");
  EXPECT_EQ(visibleRow(s, makeParams(1.0, false, Window{-1, -1}), 5),
            "1111111111");
  EXPECT_EQ(visibleRow(s, makeParams(1.0, false, Window{0, 0}), 5),
            "0000010000");
  // Causal intersected with a window: the right bound is irrelevant.
  EXPECT_EQ(visibleRow(s, makeParams(1.0, true, Window{1, 5}), 5),
            "0000110000");
  // Clipped at both ends of the sequence.
  EXPECT_EQ(visibleRow(s, makeParams(1.0, false, Window{3, 3}), 1),
            "1111100000");
  EXPECT_EQ(visibleRow(s, makeParams(1.0, false, Window{3, 3}), 9),
            "0000001111");
  // Window with Nq < Nk (shift 6): query 0 is aligned with key 6.
  const AttentionShape shorter = makeShape(1, 1, 1, 4, 10, 2, 2);
  EXPECT_EQ(visibleRow(shorter, makeParams(1.0, false, Window{1, 1}), 0),
            "0000011100");
}

TEST(ReferenceVisibility, HugeBoundsDoNotOverflow) {
  const AttentionShape s = makeShape(1, 1, 1, 6, 4, 2, 2); // shift -2
  EXPECT_EQ(visibleRow(s, makeParams(1.0, false, Window{kMax, kMax}), 0),
            "1111");
  EXPECT_EQ(visibleRow(s, makeParams(1.0, false, Window{kMax, 0}), 3), "1100");
  EXPECT_EQ(visibleRow(s, makeParams(1.0, false, Window{0, kMax}), 3), "0111");
  EXPECT_EQ(visibleKeyRange(s, makeParams(1.0, false, Window{kMax, kMax}), 0),
            Range(0, 4));
  EXPECT_EQ(visibleKeyRange(s, makeParams(1.0, false, Window{kMax, 0}), 3),
            Range(0, 2));
  EXPECT_EQ(visibleKeyRange(s, makeParams(1.0, false, Window{0, kMax}), 3),
            Range(1, 4));
  EXPECT_EQ(visibleKeyRange(s, makeParams(1.0, false, Window{kMax, 0}), 0),
            Range(0, 0));
}

// visibleKeyRange, isVisible and the test's own mask formula agree on a grid
// of shapes, options and (i, j), including out-of-range indices.
TEST(ReferenceVisibility, RangeAndMaskAgreeExhaustively) {
  const std::vector<std::optional<Window>> windows = {
      std::nullopt,       Window{0, 0},    Window{2, -1},   Window{-1, 2},
      Window{3, 1},       Window{0, -1},   Window{-1, 0},   Window{-1, -1},
      Window{kMax, kMax}, Window{kMax, 0}, Window{0, kMax}, Window{-5, 100},
      Window{100, -5}};
  int64_t checked = 0;
  for (int64_t nq : {1, 2, 5, 9})
    for (int64_t nk : {1, 2, 5, 9})
      for (bool causal : {false, true})
        for (const auto &w : windows) {
          const AttentionShape s = makeShape(1, 1, 1, nq, nk, 1, 1);
          const AttentionParams p = makeParams(1.0, causal, w);
          SCOPED_TRACE(describe(s, p));
          for (int64_t i = -1; i <= nq; ++i) {
            const auto [first, last] = visibleKeyRange(s, p, i);
            if (first >= last) {
              EXPECT_EQ(Range(first, last), Range(0, 0));
            }
            for (int64_t j = -2; j <= nk + 1; ++j) {
              const bool inRange = i >= 0 && i < nq && j >= 0 && j < nk;
              const bool want = inRange && naiveVisible(s, p, i, j);
              EXPECT_EQ(isVisible(s, p, i, j), want) << "i=" << i << " j=" << j;
              EXPECT_EQ(first <= j && j < last, want)
                  << "i=" << i << " j=" << j;
              ++checked;
            }
          }
        }
  EXPECT_GT(checked, 10000);
}

TEST(ReferenceValidate, AcceptsValidProblems) {
  EXPECT_EQ(validate(makeShape(1, 1, 1, 1, 1, 1, 1), makeParams(1.0)), "");
  EXPECT_EQ(validate(makeShape(2, 8, 2, 3, 5, 64, 32),
                     makeParams(0.125, true, Window{-1, 0}, 30.0)),
            "");
  EXPECT_EQ(validate(makeShape(1, 4, 1, 3, 5, 4, 4), makeParams(1e-300)), "");
}

TEST(ReferenceValidate, RejectsInvalidProblems) {
  const AttentionShape good = makeShape(2, 4, 2, 3, 5, 8, 6);
  const AttentionParams ok = makeParams(0.5);
  struct Bad {
    AttentionShape shape;
    AttentionParams params;
    const char *mention;
  };
  std::vector<Bad> bad;
  auto withShape = [&](int64_t AttentionShape::*field, int64_t value,
                       const char *mention) {
    AttentionShape s = good;
    s.*field = value;
    bad.push_back({s, ok, mention});
  };
  withShape(&AttentionShape::batch, 0, "batch");
  withShape(&AttentionShape::headsQ, -4, "headsQ");
  withShape(&AttentionShape::headsKV, 0, "headsKV");
  withShape(&AttentionShape::seqQ, 0, "seqQ");
  withShape(&AttentionShape::seqKV, -1, "seqKV");
  withShape(&AttentionShape::headDim, 0, "headDim");
  withShape(&AttentionShape::headDimV, 0, "headDimV");
  withShape(&AttentionShape::headsKV, 3, "multiple of headsKV");
  withShape(&AttentionShape::headsKV, 8, "multiple of headsKV"); // Hkv > Hq
  bad.push_back({good, makeParams(0.0), "scale"});
  bad.push_back({good, makeParams(-1.0), "scale"});
  bad.push_back({good, makeParams(std::nan("")), "scale"});
  bad.push_back({good, makeParams(kInf), "scale"});
  bad.push_back({good, makeParams(0.5, false, std::nullopt, 0.0), "softcap"});
  bad.push_back({good, makeParams(0.5, false, std::nullopt, -2.0), "softcap"});
  bad.push_back(
      {good, makeParams(0.5, false, std::nullopt, std::nan("")), "softcap"});
  bad.push_back({good, makeParams(0.5, false, std::nullopt, kInf), "softcap"});
  for (const Bad &b : bad) {
    SCOPED_TRACE(describe(b.shape, b.params));
    const std::string msg = validate(b.shape, b.params);
    EXPECT_NE(msg.find(b.mention), std::string::npos) << "message: " << msg;
  }
}

TEST(ReferenceValidateDeathTest, ForwardAbortsOnInvalidProblem) {
  const AttentionShape s = makeShape(1, 3, 2, 1, 1, 1, 1);
  const Vec x(8, 0.0);
  Vec o(8), lse(8);
  EXPECT_DEATH(attentionForward(s, makeParams(1.0), x.data(), x.data(),
                                x.data(), o.data(), lse.data()),
               "multiple of headsKV");
}

TEST(ReferenceHelpers, DefaultScaleAndElementCounts) {
  const AttentionShape s = makeShape(2, 6, 3, 5, 7, 16, 9);
  EXPECT_DOUBLE_EQ(defaultScale(s), 0.25);
  EXPECT_EQ(numelQ(s), 2 * 6 * 5 * 16);
  EXPECT_EQ(numelK(s), 2 * 3 * 7 * 16);
  EXPECT_EQ(numelV(s), 2 * 3 * 7 * 9);
  EXPECT_EQ(numelO(s), 2 * 6 * 5 * 9);
  EXPECT_EQ(numelLSE(s), 2 * 6 * 5);
}

TEST(ReferenceHelpers, RelativeL2Error) {
  const Vec a = {0.0, 3.0}, b = {4.0, 0.0};
  EXPECT_DOUBLE_EQ(relativeL2Error(a.data(), b.data(), 2), 5.0 / 4.0);
  EXPECT_EQ(relativeL2Error(b.data(), b.data(), 2), 0.0);
  // ||ref|| == 0: the absolute error ||out||.
  const Vec zero = {0.0, 0.0};
  EXPECT_DOUBLE_EQ(relativeL2Error(a.data(), zero.data(), 2), 3.0);
  EXPECT_EQ(relativeL2Error(zero.data(), zero.data(), 2), 0.0);
  // NaN in out: +inf, even where ref has a NaN too.
  const Vec withNan = {std::nan(""), 0.0};
  EXPECT_EQ(relativeL2Error(withNan.data(), b.data(), 2), kInf);
  EXPECT_EQ(relativeL2Error(withNan.data(), withNan.data(), 2), kInf);
  // NaN in ref only: +inf.
  EXPECT_EQ(relativeL2Error(b.data(), withNan.data(), 2), kInf);
  // Matching infinities (masked LSE rows) are ignored; unmatched ones give
  // +inf.
  const Vec lseA = {-kInf, 1.0, 2.0}, lseB = {-kInf, 1.0, 2.5};
  EXPECT_DOUBLE_EQ(relativeL2Error(lseA.data(), lseB.data(), 3),
                   0.5 / std::sqrt(1.0 + 6.25));
  const Vec lseC = {0.0, 1.0, 2.5};
  EXPECT_EQ(relativeL2Error(lseA.data(), lseC.data(), 3), kInf);
  EXPECT_EQ(relativeL2Error(lseC.data(), lseA.data(), 3), kInf);
  EXPECT_EQ(relativeL2Error(a.data(), b.data(), 0), 0.0);
}

} // namespace
