//===- AttentionExecutionTest.cpp - Proof by execution --------------------===//
//
// Each case writes a small MLIR module around one fa.attention (forward) or
// fa.attention_grad (backward), lowers it through the tiling pipeline with
// the case's (Br, Bc) and the host pipeline, JIT-compiles it and runs it on
// fresh random inputs. The outputs are compared with the fp64 reference by
// relative L2 error ||out - ref|| / ||ref||.
//
// Inputs are ~N(0, 1), rounded to the case's element type first; the
// reference is computed from the rounded values, so the error measures the
// compiled kernel only (f32 arithmetic, then the cast of the outputs).
// The backward gets O and LSE from the reference forward (O rounded to the
// element type, LSE to f32) and a random dO; the reference backward sees the
// same rounded O and LSE.
//
// The inputs come from a fixed seed (kDefaultSeed), so that every run, and CI,
// checks the same values; FA_TEST_SEED=<n> picks another one, and
// FA_TEST_SEED=random draws a new one per case for a randomized run. The seed
// is printed with any failure.
//
//===----------------------------------------------------------------------===//

#include "ExecutionSupport.h"
#include "HostJit.h"

#include "fa/Reference/Reference.h"

#include "mlir/ExecutionEngine/CRunnerUtils.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/APInt.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

using namespace fa;
using namespace fa::exectest;

namespace {

//===----------------------------------------------------------------------===//
// Cases
//===----------------------------------------------------------------------===//

enum class Direction { Forward, Backward };

void PrintTo(Direction d, std::ostream *os) {
  *os << (d == Direction::Forward ? "forward" : "backward");
}

struct Case {
  std::string name;
  DType dtype = DType::F32;
  ref::AttentionShape shape;
  bool causal = false;
  std::optional<std::pair<int64_t, int64_t>> window;
  std::optional<double> softcap;
  std::optional<double> scale; ///< none: the op's default 1/sqrt(D)
  int64_t blockQ = 64, blockKV = 64;
  /// Backward: the softmax scale applied to dQ and dK once, not to dS
  /// (fa-tile-attention-grad's scale-grads-once, the WGMMA backward's form).
  bool scaleGradsOnce = false;
  /// Backward: the loss also reads LSE (grad_lse(%dlse), a random dLSE).
  bool gradLse = false;
  /// Forward: fa-tile-attention's rescale-threshold (0: the exact max).
  double rescaleThreshold = 0;

  ref::AttentionParams params() const {
    ref::AttentionParams p;
    p.scale = scale.value_or(ref::defaultScale(shape));
    p.causal = causal;
    p.window = window;
    p.softcap = softcap;
    return p;
  }
};

/// Shortest decimal text of `v` (for names).
std::string formatNumber(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

/// Builds a case; the name lists every property so a failure is readable
/// without looking up the table.
struct CaseBuilder {
  Case c;
  CaseBuilder(const char *feature, DType t, int64_t b, int64_t hq, int64_t hkv,
              int64_t nq, int64_t nk, int64_t d, int64_t dv) {
    c.name = feature;
    c.dtype = t;
    c.shape = {b, hq, hkv, nq, nk, d, dv};
  }
  CaseBuilder &causal() {
    c.causal = true;
    return *this;
  }
  CaseBuilder &window(int64_t l, int64_t r) {
    c.window = std::make_pair(l, r);
    return *this;
  }
  CaseBuilder &softcap(double v) {
    c.softcap = v;
    return *this;
  }
  CaseBuilder &scale(double v) {
    c.scale = v;
    return *this;
  }
  CaseBuilder &scaleGradsOnce() {
    c.scaleGradsOnce = true;
    return *this;
  }
  CaseBuilder &gradLse() {
    c.gradLse = true;
    return *this;
  }
  CaseBuilder &rescaleThreshold(double tau) {
    c.rescaleThreshold = tau;
    return *this;
  }
  /// Sets (Br, Bc) and names the case after everything that defines it, so
  /// the name cannot claim a property the case lacks.
  Case blocks(int64_t br, int64_t bc) {
    c.blockQ = br;
    c.blockKV = bc;
    const ref::AttentionShape &s = c.shape;
    auto number = [](double v) {
      std::string text = formatNumber(v);
      for (char &ch : text)
        if (!std::isalnum(static_cast<unsigned char>(ch)))
          ch = 'p';
      return text;
    };
    auto bound = [](int64_t v) {
      return v < 0 ? std::string("inf") : std::to_string(v);
    };
    std::ostringstream os;
    os << c.name << "_" << mlirName(c.dtype) << "_B" << s.batch << "_H"
       << s.headsQ << "x" << s.headsKV << "_N" << s.seqQ << "x" << s.seqKV
       << "_D" << s.headDim << "x" << s.headDimV;
    if (c.causal)
      os << "_causal";
    if (c.window)
      os << "_win" << bound(c.window->first) << "_" << bound(c.window->second);
    if (c.softcap)
      os << "_cap" << number(*c.softcap);
    if (c.scale)
      os << "_scale" << number(*c.scale);
    if (c.scaleGradsOnce)
      os << "_scaleonce";
    if (c.gradLse)
      os << "_gradlse";
    if (c.rescaleThreshold)
      os << "_rescale" << number(c.rescaleThreshold);
    os << "_Br" << br << "_Bc" << bc;
    c.name = os.str();
    return c;
  }
};

void PrintTo(const Case &c, std::ostream *os) { *os << c.name; }

CaseBuilder make(const char *feature, DType t, int64_t b, int64_t hq,
                 int64_t hkv, int64_t nq, int64_t nk, int64_t d, int64_t dv) {
  return CaseBuilder(feature, t, b, hq, hkv, nq, nk, d, dv);
}

constexpr DType F32 = DType::F32, BF16 = DType::BF16, F16 = DType::F16;

/// Each case runs forward and backward. Every feature appears with several
/// block sizes and element types; N in {1, 17, 128, 1000} covers a single
/// element, a ragged tile smaller than every block, whole tiles and ragged
/// multi-tile sequences. Heads and batch stay small for N = 1000.
std::vector<Case> allCases() {
  return {
      // Plain multi-head attention, every block shape.
      make("mha", F32, 1, 2, 2, 128, 128, 64, 64).blocks(16, 16),
      make("mha", F32, 1, 2, 2, 128, 128, 64, 64).blocks(32, 64),
      make("mha", F32, 1, 2, 2, 128, 128, 64, 64).blocks(64, 32),
      make("mha", F32, 1, 2, 2, 128, 128, 64, 64).blocks(64, 64),
      make("mha", F16, 2, 2, 2, 128, 128, 128, 128).blocks(64, 32),
      make("mha", BF16, 1, 1, 1, 1000, 1000, 64, 64).blocks(32, 64),
      // Causal, Nq = Nk.
      make("square", F32, 2, 2, 2, 128, 128, 64, 64).causal().blocks(16, 16),
      make("square", F32, 1, 1, 1, 1000, 1000, 64, 64).causal().blocks(64, 32),
      make("square", BF16, 1, 1, 1, 1000, 1000, 128, 128)
          .causal()
          .blocks(64, 64),
      make("square", F16, 1, 2, 2, 17, 17, 64, 64).causal().blocks(32, 64),
      // A single query and key.
      make("n1", F32, 1, 2, 2, 1, 1, 64, 64).blocks(16, 16),
      make("n1", BF16, 2, 2, 2, 1, 1, 64, 64).causal().blocks(64, 64),
      // Ragged sequences shorter than one tile.
      make("n17", BF16, 1, 2, 2, 17, 17, 64, 64).blocks(16, 16),
      make("n17", F32, 1, 2, 2, 17, 17, 128, 128).blocks(64, 32),
      // Causal with Nq < Nk (row i sees keys 0 .. i + Nk - Nq).
      make("q_lt_k", F32, 1, 2, 2, 17, 128, 64, 64).causal().blocks(16, 16),
      make("q_lt_k", BF16, 1, 1, 1, 128, 1000, 64, 64).causal().blocks(64, 32),
      make("q_lt_k", F16, 1, 2, 2, 1, 17, 64, 64).causal().blocks(32, 64),
      // Causal with Nq > Nk: the first Nq - Nk rows see no key.
      make("q_gt_k", F32, 1, 2, 2, 128, 17, 64, 64).causal().blocks(16, 16),
      make("q_gt_k", F32, 2, 2, 2, 128, 17, 64, 64).causal().blocks(64, 32),
      make("q_gt_k", BF16, 1, 1, 1, 1000, 128, 64, 64).causal().blocks(64, 64),
      make("q_gt_k", F16, 1, 2, 2, 17, 1, 64, 64).causal().blocks(16, 16),
      // Grouped-query attention, 4 query heads per KV head (and MQA).
      make("gqa4", F32, 1, 4, 1, 128, 128, 64, 64).causal().blocks(32, 64),
      make("gqa4", BF16, 1, 8, 2, 128, 128, 128, 128).blocks(64, 32),
      make("gqa4", F16, 2, 4, 1, 17, 128, 64, 64).causal().blocks(16, 16),
      // Value head dimension different from the query/key one.
      make("dv_ne_d", F32, 1, 2, 2, 128, 128, 64, 32).blocks(16, 16),
      make("dv_ne_d", BF16, 1, 2, 2, 128, 128, 128, 64).causal().blocks(64, 64),
      make("dv_ne_d", F16, 1, 2, 2, 17, 128, 32, 128).blocks(32, 64),
      // Sliding window, left side only.
      make("window_left", F32, 1, 2, 2, 128, 128, 64, 64)
          .window(32, -1)
          .blocks(16, 16),
      make("window_left", BF16, 1, 1, 1, 1000, 1000, 64, 64)
          .window(100, -1)
          .blocks(64, 32),
      // Sliding window, both sides (and right only).
      make("window_both", F32, 1, 2, 2, 128, 128, 64, 64)
          .window(16, 8)
          .blocks(32, 64),
      make("window_both", F16, 1, 2, 2, 100, 128, 64, 64)
          .window(7, 19)
          .blocks(64, 64),
      make("window_right", F32, 1, 2, 2, 128, 128, 64, 64)
          .window(-1, 5)
          .blocks(64, 32),
      // Window with Nq > Nk: rows at both ends see no key.
      make("window_empty_rows", F32, 1, 2, 2, 128, 40, 64, 64)
          .window(0, 3)
          .blocks(16, 16),
      // Local causal window [l, 0].
      make("local", F32, 1, 2, 2, 128, 128, 64, 64)
          .causal()
          .window(24, 0)
          .blocks(16, 16),
      make("local", BF16, 1, 1, 1, 1000, 1000, 64, 64)
          .causal()
          .window(200, 0)
          .blocks(64, 64),
      // Logit soft-capping (small caps so that tanh is far from linear).
      make("softcap", F32, 1, 2, 2, 128, 128, 64, 64)
          .softcap(1.5)
          .blocks(16, 16),
      make("softcap", BF16, 1, 2, 2, 128, 128, 64, 64)
          .causal()
          .scale(0.3)
          .softcap(5.0)
          .blocks(64, 32),
      make("softcap", F16, 1, 4, 1, 17, 128, 128, 128)
          .softcap(2.0)
          .blocks(32, 64),
      // Everything at once.
      make("all", F16, 2, 4, 2, 77, 200, 64, 32)
          .causal()
          .window(50, 0)
          .softcap(3.0)
          .scale(0.2)
          .blocks(32, 16),
  };
}

//===----------------------------------------------------------------------===//
// Module text
//===----------------------------------------------------------------------===//

std::string formatDouble(double v) {
  std::ostringstream os;
  os.precision(17);
  os << v;
  std::string s = os.str();
  if (s.find_first_of(".e") == std::string::npos)
    s += ".0";
  return s;
}

/// "BxHxNxDxelt"; with `runtimeShapes`, batch and sequence length (dims 0
/// and 2) are `?`.
std::string typeStr(const std::vector<int64_t> &shape, const char *elt,
                    bool runtimeShapes = false) {
  std::string s;
  for (size_t d = 0; d < shape.size(); ++d)
    s += (runtimeShapes && (d == 0 || d == 2) ? std::string("?")
                                              : std::to_string(shape[d])) +
         "x";
  return s + elt;
}

struct Shapes {
  std::vector<int64_t> q, k, v, o, lse;
  explicit Shapes(const ref::AttentionShape &s)
      : q{s.batch, s.headsQ, s.seqQ, s.headDim},
        k{s.batch, s.headsKV, s.seqKV, s.headDim},
        v{s.batch, s.headsKV, s.seqKV, s.headDimV},
        o{s.batch, s.headsQ, s.seqQ, s.headDimV},
        lse{s.batch, s.headsQ, s.seqQ} {}
};

std::string scoreAttrs(const Case &c) {
  std::string s;
  if (c.scale)
    s += " scale = " + formatDouble(*c.scale);
  if (c.causal)
    s += " causal";
  if (c.window)
    s += " window [" + std::to_string(c.window->first) + ", " +
         std::to_string(c.window->second) + "]";
  if (c.softcap)
    s += " softcap = " + formatDouble(*c.softcap);
  return s;
}

/// func.func @forward(q, k, v, o, lse) or @backward(q, k, v, o, dO, lse[,
/// dlse], dq, dk, dv): memref arguments wrapped into tensors, one fa op,
/// results materialized into the output memrefs. With `runtimeShapes` the batch
/// and sequence lengths are dynamic (`?`): one module for every length.
std::string buildModule(const Case &c, Direction dir,
                        bool runtimeShapes = false) {
  Shapes sh(c.shape);
  const char *e = mlirName(c.dtype);
  auto type = [&](const std::vector<int64_t> &shape, const char *elt) {
    return typeStr(shape, elt, runtimeShapes);
  };
  std::string q = type(sh.q, e), k = type(sh.k, e), v = type(sh.v, e),
              o = type(sh.o, e), lse = type(sh.lse, "f32");
  std::ostringstream m;
  auto toTensor = [&](const char *name, const std::string &t) {
    m << toTensorLine(name, t);
  };
  auto materialize = [&](const char *value, const char *dest,
                         const std::string &t) {
    m << materializeLine(value, dest, t);
  };
  if (dir == Direction::Forward) {
    m << "func.func @forward(%q: memref<" << q << ">, %k: memref<" << k
      << ">, %v: memref<" << v << ">, %o: memref<" << o << ">, %lse: memref<"
      << lse << ">) attributes {llvm.emit_c_interface} {\n";
    toTensor("q", q);
    toTensor("k", k);
    toTensor("v", v);
    m << "  %ot, %lset = fa.attention %qt, %kt, %vt" << scoreAttrs(c)
      << " : tensor<" << q << ">, tensor<" << k << ">, tensor<" << v
      << "> -> tensor<" << o << ">, tensor<" << lse << ">\n";
    materialize("ot", "o", o);
    materialize("lset", "lse", lse);
  } else {
    m << "func.func @backward(%q: memref<" << q << ">, %k: memref<" << k
      << ">, %v: memref<" << v << ">, %o: memref<" << o << ">, %do: memref<"
      << o << ">, %lse: memref<" << lse << ">"
      << (c.gradLse ? ", %dlse: memref<" + lse + ">" : "") << ", %dq: memref<"
      << q << ">, %dk: memref<" << k << ">, %dv: memref<" << v
      << ">) attributes {llvm.emit_c_interface} {\n";
    toTensor("q", q);
    toTensor("k", k);
    toTensor("v", v);
    toTensor("o", o);
    toTensor("do", o);
    toTensor("lse", lse);
    if (c.gradLse)
      toTensor("dlse", lse);
    m << "  %dqt, %dkt, %dvt = fa.attention_grad %qt, %kt, %vt, %ot, %dot, "
         "%lset"
      << (c.gradLse ? " grad_lse(%dlset : tensor<" + lse + ">)" : "")
      << scoreAttrs(c) << " : tensor<" << q << ">, tensor<" << k << ">, tensor<"
      << v << ">, tensor<" << o << ">, tensor<" << o << ">, tensor<" << lse
      << "> -> tensor<" << q << ">, tensor<" << k << ">, tensor<" << v << ">\n";
    materialize("dqt", "dq", q);
    materialize("dkt", "dk", k);
    materialize("dvt", "dv", v);
  }
  m << "  return\n}\n";
  return m.str();
}

//===----------------------------------------------------------------------===//
// Checks
//===----------------------------------------------------------------------===//

TEST(TestSeed, FixedByDefaultOverriddenOrRandomOnRequest) {
  uint64_t seed = 0;
  std::string error;
  ASSERT_TRUE(seedFromSetting(nullptr, seed, error));
  EXPECT_EQ(seed, kDefaultSeed);
  ASSERT_TRUE(seedFromSetting("12345", seed, error));
  EXPECT_EQ(seed, 12345u);
  ASSERT_TRUE(seedFromSetting("0x10", seed, error));
  EXPECT_EQ(seed, 16u);
  uint64_t first = 0, second = 0;
  ASSERT_TRUE(seedFromSetting("random", first, error));
  ASSERT_TRUE(seedFromSetting("random", second, error));
  EXPECT_NE(first, second); // 2^-64 odds of a false failure
  for (const char *bad : {"", "abc", "12x", "-1", "99999999999999999999999"}) {
    EXPECT_FALSE(seedFromSetting(bad, seed, error)) << bad;
    EXPECT_NE(error.find("FA_TEST_SEED must be a number or 'random'"),
              std::string::npos)
        << error;
  }
}

std::string indexString(int64_t flat, const std::vector<int64_t> &shape) {
  std::vector<int64_t> idx(shape.size());
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    idx[d] = flat % shape[d];
    flat /= shape[d];
  }
  std::string s = "[";
  for (size_t d = 0; d < idx.size(); ++d)
    s += (d ? ", " : "") + std::to_string(idx[d]);
  return s + "]";
}

/// Rows of a [B, H, N, X] or [B, H, N] tensor (flattened over everything
/// but X) that must be exactly 0 (or -inf for LSE) because the mask hides
/// them entirely, given which sequence positions are empty.
std::vector<bool> emptyRows(const std::vector<int64_t> &shape,
                            const std::vector<bool> &emptyPositions) {
  int64_t rows = shape[0] * shape[1] * shape[2];
  std::vector<bool> out(rows);
  for (int64_t r = 0; r < rows; ++r)
    out[r] = emptyPositions[r % shape[2]];
  return out;
}

/// Query rows that see no key.
std::vector<bool> queriesWithoutKeys(const Case &c) {
  ref::AttentionParams p = c.params();
  std::vector<bool> empty(c.shape.seqQ);
  for (int64_t i = 0; i < c.shape.seqQ; ++i) {
    auto [first, last] = ref::visibleKeyRange(c.shape, p, i);
    empty[i] = first >= last;
  }
  return empty;
}

/// Keys that no query sees.
std::vector<bool> keysWithoutQueries(const Case &c) {
  ref::AttentionParams p = c.params();
  std::vector<bool> unseen(c.shape.seqKV, true);
  for (int64_t i = 0; i < c.shape.seqQ; ++i) {
    auto [first, last] = ref::visibleKeyRange(c.shape, p, i);
    for (int64_t j = first; j < last; ++j)
      unseen[j] = false;
  }
  return unseen;
}

/// Compares one output with the reference: every element written (no NaN),
/// infinities exactly where the reference has them, every element of a
/// fully masked row exactly equal to the reference (0, or -inf for LSE), and
/// the relative L2 error within `tol`. Returns the relative error.
double compare(const char *what, const std::vector<double> &out,
               const std::vector<double> &ref,
               const std::vector<int64_t> &shape,
               const std::vector<bool> &maskedRows, double tol) {
  int64_t n = static_cast<int64_t>(ref.size());
  int64_t rowLength = shape.size() == 4 ? shape[3] : 1;
  int64_t nans = 0, badInf = 0, badMasked = 0;
  int64_t firstNan = -1, firstInf = -1, firstMasked = -1;
  for (int64_t i = 0; i < n; ++i) {
    if (std::isnan(out[i])) {
      if (nans++ == 0)
        firstNan = i;
    } else if (std::isinf(ref[i]) != std::isinf(out[i]) ||
               (std::isinf(ref[i]) && ref[i] != out[i])) {
      if (badInf++ == 0)
        firstInf = i;
    } else if (maskedRows[i / rowLength] && out[i] != ref[i]) {
      if (badMasked++ == 0)
        firstMasked = i;
    }
  }
  auto at = [](int64_t i) { return i < 0 ? 0 : i; };
  EXPECT_EQ(nans, 0) << what << ": " << nans << " of " << n
                     << " elements are NaN (not written, or computed as NaN);"
                        " first at "
                     << indexString(firstNan, shape);
  EXPECT_EQ(badInf, 0) << what << ": " << badInf
                       << " elements are infinite where the reference is not "
                          "or vice versa; first at "
                       << indexString(firstInf, shape) << ": got "
                       << out[at(firstInf)] << ", expected "
                       << ref[at(firstInf)];
  EXPECT_EQ(badMasked, 0) << what << ": " << badMasked
                          << " elements of fully masked rows differ from the "
                             "reference; first at "
                          << indexString(firstMasked, shape) << ": got "
                          << out[at(firstMasked)] << ", expected "
                          << ref[at(firstMasked)];
  double err = ref::relativeL2Error(out.data(), ref.data(), n);
  EXPECT_LE(err, tol) << what << ": relative L2 error " << err << " exceeds "
                      << tol;
  return err;
}

//===----------------------------------------------------------------------===//
// The test
//===----------------------------------------------------------------------===//

/// Runs a forward entry point on `c`'s inputs (poisoned outputs) and
/// compares O and LSE with the fp64 reference; returns the errors as text.
std::string runForward(const Case &c, const hostjit::CInterfaceFunction &fn,
                       HostTensor &q, HostTensor &k, HostTensor &v,
                       const std::vector<double> &refO,
                       const std::vector<double> &refLse) {
  Shapes sh(c.shape);
  std::vector<bool> emptyQ = emptyRows(sh.lse, queriesWithoutKeys(c));
  HostTensor o(c.dtype, sh.o), lse(DType::F32, sh.lse);
  o.poison();
  lse.poison();
  fn({q.arg(), k.arg(), v.arg(), o.arg(), lse.arg()});
  std::ostringstream errors;
  errors.precision(2);
  errors << std::scientific;
  // Compared with the unrounded fp64 O: the error includes the final
  // rounding of O to the element type, which the bound allows for.
  errors << "O "
         << compare("O", o.load(), refO, sh.o, emptyQ, tolerance(c.dtype));
  errors << "  LSE "
         << compare("LSE", lse.load(), refLse, sh.lse, emptyQ, kLseTolerance);
  return errors.str();
}

/// Compiles `source` with `c`'s block sizes and looks up entry point
/// `name`; a failure is a fatal gtest failure that shows the module.
void compileEntry(const std::string &source, const Case &c, const char *name,
                  std::unique_ptr<hostjit::HostModule> &module,
                  hostjit::CInterfaceFunction &entry) {
  hostjit::CompileOptions options;
  options.blockQ = c.blockQ;
  options.blockKV = c.blockKV;
  options.scaleGradsOnce = c.scaleGradsOnce;
  options.rescaleThreshold = c.rescaleThreshold;
  auto compiled = hostjit::HostModule::compile(source, options);
  ASSERT_TRUE(static_cast<bool>(compiled))
      << llvm::toString(compiled.takeError()) << "\nmodule:\n"
      << source;
  module = std::move(*compiled);
  auto fn = module->lookup(name);
  ASSERT_TRUE(static_cast<bool>(fn)) << llvm::toString(fn.takeError());
  entry = *fn;
}

/// Runs backward entry `fn` of case `c` on q, k, v with O and LSE from the
/// reference forward (as the forward would have saved them) and a random
/// dO; compares dQ, dK, dV (poisoned first) with the reference backward.
std::string runBackward(const Case &c, const hostjit::CInterfaceFunction &fn,
                        HostTensor &q, HostTensor &k, HostTensor &v,
                        const std::vector<double> &refO,
                        const std::vector<double> &refLse,
                        std::mt19937_64 &rng) {
  const ref::AttentionShape &s = c.shape;
  Shapes sh(s);
  HostTensor o(c.dtype, sh.o), dO(c.dtype, sh.o), lse(DType::F32, sh.lse);
  o.store(refO);
  lse.store(refLse);
  dO.store(randomNormal(rng, dO.size()));
  HostTensor dlse(DType::F32, sh.lse);
  if (c.gradLse)
    dlse.store(randomNormal(rng, dlse.size()));
  std::vector<double> qd = q.load(), kd = k.load(), vd = v.load(),
                      od = o.load(), dOd = dO.load(), lsed = lse.load(),
                      dlsed = dlse.load();
  std::vector<double> refDq(ref::numelQ(s)), refDk(ref::numelK(s)),
      refDv(ref::numelV(s));
  ref::attentionBackward(s, c.params(), qd.data(), kd.data(), vd.data(),
                         od.data(), dOd.data(), lsed.data(), refDq.data(),
                         refDk.data(), refDv.data(),
                         c.gradLse ? dlsed.data() : nullptr);
  HostTensor dq(c.dtype, sh.q), dk(c.dtype, sh.k), dv(c.dtype, sh.v);
  dq.poison();
  dk.poison();
  dv.poison();
  std::vector<void *> args = {q.arg(), k.arg(),  v.arg(),
                              o.arg(), dO.arg(), lse.arg()};
  if (c.gradLse)
    args.push_back(dlse.arg());
  for (HostTensor *grad : {&dq, &dk, &dv})
    args.push_back(grad->arg());
  fn(args);
  double tol = tolerance(c.dtype);
  std::vector<bool> emptyQ = emptyRows(sh.lse, queriesWithoutKeys(c));
  std::vector<bool> unseenK = emptyRows(sh.k, keysWithoutQueries(c));
  std::ostringstream errors;
  errors.precision(2);
  errors << std::scientific;
  errors << "dQ " << compare("dQ", dq.load(), refDq, sh.q, emptyQ, tol);
  errors << "  dK " << compare("dK", dk.load(), refDk, sh.k, unseenK, tol);
  errors << "  dV " << compare("dV", dv.load(), refDv, sh.v, unseenK, tol);
  return errors.str();
}

using Param = std::tuple<Case, Direction>;

class AttentionExecution : public ::testing::TestWithParam<Param> {};

TEST_P(AttentionExecution, MatchesReference) {
  const Case &c = std::get<0>(GetParam());
  Direction dir = std::get<1>(GetParam());
  const ref::AttentionShape &s = c.shape;
  ref::AttentionParams params = c.params();
  ASSERT_EQ(ref::validate(s, params), "");
  uint64_t seed = 0;
  std::string seedError;
  ASSERT_TRUE(seedFromSetting(std::getenv("FA_TEST_SEED"), seed, seedError))
      << seedError;
  SCOPED_TRACE("seed " + std::to_string(seed) +
               " (reproduce with FA_TEST_SEED=" + std::to_string(seed) + ")");

  auto t0 = std::chrono::steady_clock::now();
  const char *fnName = dir == Direction::Forward ? "forward" : "backward";
  std::unique_ptr<hostjit::HostModule> module;
  hostjit::CInterfaceFunction entry;
  ASSERT_NO_FATAL_FAILURE(
      compileEntry(buildModule(c, dir), c, fnName, module, entry));
  const hostjit::CInterfaceFunction *fn = &entry;
  auto t1 = std::chrono::steady_clock::now();

  // Inputs, rounded to the element type; the reference reads them back.
  Shapes sh(s);
  std::mt19937_64 rng(seed);
  HostTensor q(c.dtype, sh.q), k(c.dtype, sh.k), v(c.dtype, sh.v);
  q.store(randomNormal(rng, q.size()));
  k.store(randomNormal(rng, k.size()));
  v.store(randomNormal(rng, v.size()));
  std::vector<double> qd = q.load(), kd = k.load(), vd = v.load();

  std::vector<double> refO(ref::numelO(s)), refLse(ref::numelLSE(s));
  ref::attentionForward(s, params, qd.data(), kd.data(), vd.data(), refO.data(),
                        refLse.data());
  double tol = tolerance(c.dtype);
  std::vector<bool> emptyQ = emptyRows(sh.lse, queriesWithoutKeys(c));
  std::ostringstream errors;
  errors.precision(2);
  errors << std::scientific;

  if (dir == Direction::Forward)
    errors << runForward(c, *fn, q, k, v, refO, refLse);
  else
    errors << runBackward(c, *fn, q, k, v, refO, refLse, rng);
  auto t2 = std::chrono::steady_clock::now();
  auto ms = [](auto a, auto b) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(b - a).count();
  };
  std::printf("[  errors  ] %s %s: %s (bound %.0e)  compile %lld ms, run+ref "
              "%lld ms\n",
              fnName, c.name.c_str(), errors.str().c_str(), tol,
              static_cast<long long>(ms(t0, t1)),
              static_cast<long long>(ms(t1, t2)));
}

std::string paramName(const ::testing::TestParamInfo<Param> &info) {
  return (std::get<1>(info.param) == Direction::Forward ? "fwd_" : "bwd_") +
         std::get<0>(info.param).name;
}

INSTANTIATE_TEST_SUITE_P(
    Host, AttentionExecution,
    ::testing::Combine(::testing::ValuesIn(allCases()),
                       ::testing::Values(Direction::Forward,
                                         Direction::Backward)),
    paramName);

/// Forward blocks that are multiples of 16 but not powers of two (the WGMMA
/// forward's 192-row Q blocks, 176- and 80-key KV blocks), which the
/// backward's tiling refuses: ragged Q and KV blocks, causal bands that
/// cross them (Nq != Nk), GQA, a window, softcap.
std::vector<Case> forwardBlockCases() {
  return {
      make("fwd_blocks", BF16, 1, 2, 2, 1000, 1000, 64, 64)
          .causal()
          .blocks(192, 128),
      make("fwd_blocks", F32, 1, 4, 2, 300, 500, 64, 64)
          .causal()
          .blocks(48, 176),
      make("fwd_blocks", F16, 1, 2, 2, 77, 1000, 64, 64)
          .causal()
          .blocks(192, 80),
      make("fwd_blocks", F32, 1, 2, 2, 1000, 400, 64, 32)
          .window(100, 30)
          .softcap(3.0)
          .blocks(192, 176),
  };
}

INSTANTIATE_TEST_SUITE_P(
    HostForwardBlocks, AttentionExecution,
    ::testing::Combine(::testing::ValuesIn(forwardBlockCases()),
                       ::testing::Values(Direction::Forward)),
    paramName);

/// The backward with the softmax scale applied to dQ and dK once after
/// their sums (the WGMMA backward's tiling): softcap's chain rule without
/// the scale, GQA sums, masks, Dv != D, an explicit scale.
std::vector<Case> scaleGradsOnceCases() {
  return {
      make("mha", BF16, 1, 1, 1, 1000, 1000, 64, 64)
          .scaleGradsOnce()
          .blocks(64, 64),
      make("gqa4", F32, 1, 4, 1, 128, 128, 64, 64)
          .causal()
          .scaleGradsOnce()
          .blocks(32, 64),
      make("dv_ne_d", F16, 1, 2, 2, 17, 128, 32, 128)
          .scaleGradsOnce()
          .blocks(32, 64),
      make("softcap", BF16, 1, 2, 2, 128, 128, 64, 64)
          .causal()
          .scale(0.3)
          .softcap(5.0)
          .scaleGradsOnce()
          .blocks(64, 32),
      make("all", F16, 2, 4, 2, 77, 200, 64, 32)
          .causal()
          .window(50, 0)
          .softcap(3.0)
          .scale(0.2)
          .scaleGradsOnce()
          .blocks(32, 16),
  };
}

INSTANTIATE_TEST_SUITE_P(
    HostScaleGradsOnce, AttentionExecution,
    ::testing::Combine(::testing::ValuesIn(scaleGradsOnceCases()),
                       ::testing::Values(Direction::Backward)),
    paramName);

/// The running max raised only past a threshold (rescale_threshold,
/// FlashAttention 4's conditional rescale): O and LSE as the exact max's.
/// Scaled-up scores (scale 3: row maxima that jump by more than 8 between
/// blocks) take both branches; a threshold of 0.5 keeps stale maxima
/// through masks and a softcap; f16 and bf16 P reach 2^8.
std::vector<Case> rescaleThresholdCases() {
  return {
      make("rescale", F32, 1, 2, 2, 300, 1000, 64, 64)
          .rescaleThreshold(8)
          .blocks(64, 64),
      make("rescale", BF16, 1, 2, 1, 256, 512, 64, 64)
          .scale(3.0)
          .rescaleThreshold(8)
          .blocks(64, 64),
      make("rescale", F16, 1, 2, 2, 128, 1024, 128, 128)
          .scale(0.5)
          .rescaleThreshold(8)
          .blocks(64, 128),
      make("rescale", F16, 2, 4, 2, 77, 200, 64, 32)
          .causal()
          .window(50, 0)
          .softcap(3.0)
          .rescaleThreshold(0.5)
          .blocks(32, 16),
  };
}

INSTANTIATE_TEST_SUITE_P(
    HostRescaleThreshold, AttentionExecution,
    ::testing::Combine(::testing::ValuesIn(rescaleThresholdCases()),
                       ::testing::Values(Direction::Forward)),
    paramName);

/// The gradient of LSE folded into delta (grad_lse): dS = P (dP - (D -
/// dLSE)), through masks, softcap's chain rule, GQA sums and Nq != Nk, with
/// the scale applied to dS or once to dQ and dK.
std::vector<Case> gradLseCases() {
  return {
      make("lse", F32, 1, 2, 2, 100, 100, 64, 64).gradLse().blocks(32, 64),
      make("lse", BF16, 2, 4, 2, 77, 200, 64, 32)
          .causal()
          .gradLse()
          .scaleGradsOnce()
          .blocks(64, 64),
      make("lse", F16, 1, 4, 1, 128, 96, 64, 64)
          .window(40, 8)
          .softcap(4.0)
          .gradLse()
          .blocks(32, 32),
  };
}

INSTANTIATE_TEST_SUITE_P(
    HostGradLse, AttentionExecution,
    ::testing::Combine(::testing::ValuesIn(gradLseCases()),
                       ::testing::Values(Direction::Backward)),
    paramName);

/// Runtime shapes: one module compiled with dynamic batch and sequence
/// lengths for direction `dir` runs every length, including ragged blocks,
/// empty masked rows (bottom-right causal with Nq > Nk), one key, and
/// Nq != Nk across GQA, each against the fp64 reference.
void runEveryLength(Direction dir) {
  uint64_t seed = 0;
  std::string seedError;
  ASSERT_TRUE(seedFromSetting(std::getenv("FA_TEST_SEED"), seed, seedError))
      << seedError;
  SCOPED_TRACE("seed " + std::to_string(seed));
  const bool forward = dir == Direction::Forward;
  for (bool causal : {false, true}) {
    // The module's static dims (heads, head dims) and attributes; lengths
    // below are the runs'.
    Case shape = make("runtime", BF16, 1, 4, 2, 1, 1, 64, 64).blocks(32, 64);
    shape.causal = causal;
    std::string source = buildModule(shape, dir, /*runtimeShapes=*/true);
    ASSERT_NE(source.find("tensor<?x4x?x64xbf16>"), std::string::npos)
        << source;
    std::unique_ptr<hostjit::HostModule> module;
    hostjit::CInterfaceFunction entry;
    ASSERT_NO_FATAL_FAILURE(compileEntry(
        source, shape, forward ? "forward" : "backward", module, entry));
    std::mt19937_64 rng(seed);
    for (auto [batch, seqQ, seqKV] :
         {std::tuple<int64_t, int64_t, int64_t>{1, 1, 1},
          {2, 70, 130},
          {1, 129, 65},
          {3, 64, 64},
          {1, 33, 200}}) {
      Case c = shape;
      c.shape.batch = batch;
      c.shape.seqQ = seqQ;
      c.shape.seqKV = seqKV;
      SCOPED_TRACE("B " + std::to_string(batch) + " Nq " +
                   std::to_string(seqQ) + " Nk " + std::to_string(seqKV) +
                   (causal ? " causal" : ""));
      ASSERT_EQ(ref::validate(c.shape, c.params()), "");
      Shapes sh(c.shape);
      HostTensor q(c.dtype, sh.q), k(c.dtype, sh.k), v(c.dtype, sh.v);
      q.store(randomNormal(rng, q.size()));
      k.store(randomNormal(rng, k.size()));
      v.store(randomNormal(rng, v.size()));
      std::vector<double> qd = q.load(), kd = k.load(), vd = v.load();
      std::vector<double> refO(ref::numelO(c.shape)),
          refLse(ref::numelLSE(c.shape));
      ref::attentionForward(c.shape, c.params(), qd.data(), kd.data(),
                            vd.data(), refO.data(), refLse.data());
      std::string errors =
          forward ? runForward(c, entry, q, k, v, refO, refLse)
                  : runBackward(c, entry, q, k, v, refO, refLse, rng);
      std::printf("[  errors  ] runtime shapes %s B %lld Nq %lld Nk %lld%s: "
                  "%s\n",
                  forward ? "forward" : "backward",
                  static_cast<long long>(batch), static_cast<long long>(seqQ),
                  static_cast<long long>(seqKV), causal ? " causal" : "",
                  errors.c_str());
    }
  }
}

TEST(RuntimeShapes, OneModuleRunsEveryLength) {
  runEveryLength(Direction::Forward);
}

TEST(RuntimeShapes, OneBackwardModuleRunsEveryLength) {
  runEveryLength(Direction::Backward);
}

/// The harness reports pipeline failures as errors instead of crashing.
TEST(HostJit, ReportsErrors) {
  auto bad = hostjit::HostModule::compile("func.func @f( {");
  ASSERT_FALSE(static_cast<bool>(bad));
  std::string message = llvm::toString(bad.takeError());
  EXPECT_NE(message.find("parse"), std::string::npos) << message;

  // Block sizes must be powers of two: the tiling pipeline fails.
  Case c = make("mha", F32, 1, 1, 1, 4, 4, 8, 8).blocks(16, 16);
  hostjit::CompileOptions options;
  options.blockQ = 3;
  auto failed =
      hostjit::HostModule::compile(buildModule(c, Direction::Forward), options);
  ASSERT_FALSE(static_cast<bool>(failed));
  message = llvm::toString(failed.takeError());
  EXPECT_NE(message.find("power of two"), std::string::npos) << message;

  auto good = hostjit::HostModule::compile(buildModule(c, Direction::Forward));
  ASSERT_TRUE(static_cast<bool>(good)) << llvm::toString(good.takeError());
  auto missing = (*good)->lookup("nonexistent");
  ASSERT_FALSE(static_cast<bool>(missing));
  message = llvm::toString(missing.takeError());
  EXPECT_NE(message.find("_mlir_ciface_nonexistent"), std::string::npos)
      << message;
}

} // namespace
