//===- VarlenExecutionTest.cpp - Packed sequences, proof by execution -----===//
//
// A varlen fa.attention / fa.attention_grad (sequences packed along N,
// `seqlens(...)`) lowered through the tiling and host pipelines and run on
// the CPU against the fp64 reference of each sequence on its own. One module serves every batch of
// lengths; the batches mix empty sequences, one token, lengths that are not
// multiples of the blocks, Nq != Nk and key-less sequences. Outputs are
// poisoned (NaN) before each run: every row of a sequence must be written.
// Rows that belong to no sequence (padding after the last) are undefined
// (the host bufferization copies its whole result tensor), so not checked.
//
//===----------------------------------------------------------------------===//

#include "ExecutionSupport.h"
#include "HostJit.h"

#include "fa/Reference/Reference.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

using namespace fa;
using namespace fa::exectest;

namespace {

constexpr int64_t kHeadsQ = 4, kHeadsKV = 2, kHeadDim = 64;
/// Rows after the last sequence (undefined in the result).
constexpr int64_t kPaddingRows = 3;

struct Masks {
  const char *name;
  bool causal = false;
  std::optional<std::pair<int64_t, int64_t>> window;
  std::optional<double> softcap;

  std::string attrs() const {
    std::string s;
    if (causal)
      s += " causal";
    if (window)
      s += " window [" + std::to_string(window->first) + ", " +
           std::to_string(window->second) + "]";
    if (softcap)
      s += " softcap = " + std::to_string(*softcap);
    return s;
  }
};

enum class Direction { Forward, Backward };

/// @forward(q, k, v, cu_q, cu_k, max_q, max_k, o, lse) or @backward(q, k,
/// v, o, do, lse, cu_q, cu_k, max_q, max_k, dq, dk, dv): batch-1 memrefs
/// with dynamic N, one varlen op.
std::string buildVarlenModule(const Masks &masks, Direction dir) {
  std::string hd = std::to_string(kHeadDim);
  std::string q = "1x" + std::to_string(kHeadsQ) + "x?x" + hd + "xbf16";
  std::string kv = "1x" + std::to_string(kHeadsKV) + "x?x" + hd + "xbf16";
  std::string lse = "1x" + std::to_string(kHeadsQ) + "x?xf32";
  std::ostringstream m;
  auto toTensor = [&](const char *name, const std::string &t) {
    m << toTensorLine(name, t);
  };
  auto materialize = [&](const char *value, const char *dest,
                         const std::string &t) {
    m << materializeLine(value, dest, t);
  };
  const char *seqlens = " seqlens(%cqt, %ckt max %mq, %mk : tensor<?xi32>, "
                        "tensor<?xi32>)";
  const char *seqArgs =
      "%cq: memref<?xi32>, %ck: memref<?xi32>, %mq: index, %mk: index";
  bool fwd = dir == Direction::Forward;
  m << "func.func @" << (fwd ? "forward" : "backward") << "(%q: memref<" << q
    << ">, %k: memref<" << kv << ">, %v: memref<" << kv << ">, ";
  if (fwd)
    m << seqArgs << ", %o: memref<" << q << ">, %lse: memref<" << lse << ">";
  else
    m << "%o: memref<" << q << ">, %do: memref<" << q << ">, %lse: memref<"
      << lse << ">, " << seqArgs << ", %dq: memref<" << q << ">, %dk: memref<"
      << kv << ">, %dv: memref<" << kv << ">";
  m << ") attributes {llvm.emit_c_interface} {\n";
  toTensor("q", q);
  toTensor("k", kv);
  toTensor("v", kv);
  toTensor("cq", "?xi32");
  toTensor("ck", "?xi32");
  if (fwd) {
    m << "  %ot, %lset = fa.attention %qt, %kt, %vt" << seqlens
      << masks.attrs() << " : tensor<" << q << ">, tensor<" << kv
      << ">, tensor<" << kv << "> -> tensor<" << q << ">, tensor<" << lse
      << ">\n";
    materialize("ot", "o", q);
    materialize("lset", "lse", lse);
  } else {
    toTensor("o", q);
    toTensor("do", q);
    toTensor("lse", lse);
    m << "  %dqt, %dkt, %dvt = fa.attention_grad %qt, %kt, %vt, %ot, %dot, "
         "%lset"
      << seqlens << masks.attrs() << " : tensor<" << q << ">, tensor<" << kv
      << ">, tensor<" << kv << ">, tensor<" << q << ">, tensor<" << q
      << ">, tensor<" << lse << "> -> tensor<" << q << ">, tensor<" << kv
      << ">, tensor<" << kv << ">\n";
    materialize("dqt", "dq", q);
    materialize("dkt", "dk", kv);
    materialize("dvt", "dv", kv);
  }
  m << "  return\n}\n";
  return m.str();
}

/// B + 1 running offsets of `lengths`, and its memref descriptor.
struct SeqStarts {
  std::vector<int32_t> offsets{0};
  StridedMemRefType<int32_t, 1> desc{};

  explicit SeqStarts(const std::vector<int64_t> &lengths) {
    for (int64_t n : lengths)
      offsets.push_back(offsets.back() + static_cast<int32_t>(n));
    desc.basePtr = desc.data = offsets.data();
    desc.offset = 0;
    desc.sizes[0] = static_cast<int64_t>(offsets.size());
    desc.strides[0] = 1;
  }
  int64_t total() const { return offsets.back(); }
};

/// Copies rows [start, start + n) of each head of a packed [1, H, T, X]
/// buffer into a dense [1, H, n, X] one (or back, with `scatter`).
void copyRows(std::vector<double> &packed, std::vector<double> &dense,
              int64_t heads, int64_t total, int64_t start, int64_t n,
              int64_t width, bool scatter) {
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t r = 0; r < n; ++r)
      for (int64_t x = 0; x < width; ++x) {
        double &p = packed[(h * total + start + r) * width + x];
        double &d = dense[(h * n + r) * width + x];
        if (scatter)
          p = d;
        else
          d = p;
      }
}

struct Batch {
  std::vector<int64_t> lengthsQ, lengthsKV;
};

/// Compares a packed output with its reference where the reference is not
/// NaN (NaN marks padding rows): every element written (no NaN), infinities
/// (LSE of key-less rows) exactly, the rest by relative L2 within `tol`.
double checkRows(const char *what, const std::vector<double> &got,
                 const std::vector<double> &want, double tol) {
  std::vector<double> g, w;
  int64_t mismatches = 0, first = -1;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i]))
      continue;
    bool bad = std::isnan(got[i]) || std::isinf(want[i]) != std::isinf(got[i]) ||
               (std::isinf(want[i]) && got[i] != want[i]);
    if (bad && mismatches++ == 0)
      first = static_cast<int64_t>(i);
    if (!bad && !std::isinf(want[i])) {
      g.push_back(got[i]);
      w.push_back(want[i]);
    }
  }
  EXPECT_EQ(mismatches, 0)
      << what << ": " << mismatches
      << " elements of the sequences are NaN (not written) or infinite "
         "where the reference is not (or the reverse); first at "
      << first << ": got " << (first < 0 ? 0 : got[first]) << ", expected "
      << (first < 0 ? 0 : want[first]);
  double err = g.empty() ? 0.0
                         : ref::relativeL2Error(g.data(), w.data(),
                                                static_cast<int64_t>(g.size()));
  EXPECT_LE(err, tol) << what << ": relative L2 error " << err;
  return err;
}

/// NaN (padding marks) as 0: inputs made from references.
std::vector<double> padWithZeros(std::vector<double> v) {
  for (double &x : v)
    if (std::isnan(x))
      x = 0.0;
  return v;
}

/// Runs `fn` on one batch of packed sequences and checks every sequence's
/// outputs (O and LSE, or dQ, dK and dV) against its own reference.
void runBatch(const hostjit::CInterfaceFunction &fn, const Masks &masks,
              Direction dir, const Batch &batch, std::mt19937_64 &rng) {
  SeqStarts cuQ(batch.lengthsQ), cuK(batch.lengthsKV);
  int64_t totalQ = cuQ.total() + kPaddingRows;
  int64_t totalK = cuK.total() + kPaddingRows;
  std::vector<int64_t> qShape{1, kHeadsQ, totalQ, kHeadDim},
      kShape{1, kHeadsKV, totalK, kHeadDim}, lseShape{1, kHeadsQ, totalQ};
  HostTensor q(DType::BF16, qShape), k(DType::BF16, kShape),
      v(DType::BF16, kShape);
  q.store(randomNormal(rng, q.size()));
  k.store(randomNormal(rng, k.size()));
  v.store(randomNormal(rng, v.size()));
  int64_t maxQ = *std::max_element(batch.lengthsQ.begin(),
                                   batch.lengthsQ.end());
  int64_t maxK = *std::max_element(batch.lengthsKV.begin(),
                                   batch.lengthsKV.end());
  auto scalar = [](int64_t x) {
    return reinterpret_cast<void *>(static_cast<intptr_t>(x));
  };
  std::vector<double> qd = q.load(), kd = k.load(), vd = v.load();
  ref::AttentionParams params;
  params.scale = 1.0 / std::sqrt(static_cast<double>(kHeadDim));
  params.causal = masks.causal;
  params.window = masks.window;
  params.softcap = masks.softcap;
  int64_t sequences = static_cast<int64_t>(batch.lengthsQ.size());
  auto shapeOf = [&](int64_t b) {
    return ref::AttentionShape{1,        kHeadsQ,  kHeadsKV,
                               batch.lengthsQ[b], batch.lengthsKV[b],
                               kHeadDim, kHeadDim};
  };
  auto gather = [&](std::vector<double> &packed, int64_t heads, int64_t total,
                    int64_t start, int64_t n, int64_t width) {
    std::vector<double> dense(heads * n * width);
    copyRows(packed, dense, heads, total, start, n, width, false);
    return dense;
  };

  // The reference forward, sequence by sequence, scattered to the packed
  // rows; NaN marks the padding rows, which are not compared.
  std::vector<double> refO(q.size(), std::nan("")),
      refLse(totalQ * kHeadsQ, std::nan(""));
  for (int64_t b = 0; b < sequences; ++b) {
    int64_t nq = batch.lengthsQ[b], nk = batch.lengthsKV[b];
    std::vector<double> seqO(kHeadsQ * nq * kHeadDim, 0.0),
        seqLse(kHeadsQ * nq, -std::numeric_limits<double>::infinity());
    if (nq > 0 && nk > 0) {
      ASSERT_EQ(ref::validate(shapeOf(b), params), "");
      std::vector<double> sq =
          gather(qd, kHeadsQ, totalQ, cuQ.offsets[b], nq, kHeadDim);
      std::vector<double> sk =
          gather(kd, kHeadsKV, totalK, cuK.offsets[b], nk, kHeadDim);
      std::vector<double> sv =
          gather(vd, kHeadsKV, totalK, cuK.offsets[b], nk, kHeadDim);
      ref::attentionForward(shapeOf(b), params, sq.data(), sk.data(),
                            sv.data(), seqO.data(), seqLse.data());
    }
    copyRows(refO, seqO, kHeadsQ, totalQ, cuQ.offsets[b], nq, kHeadDim, true);
    copyRows(refLse, seqLse, kHeadsQ, totalQ, cuQ.offsets[b], nq, 1, true);
  }

  if (dir == Direction::Forward) {
    HostTensor o(DType::BF16, qShape), lse(DType::F32, lseShape);
    o.poison();
    lse.poison();
    fn({q.arg(), k.arg(), v.arg(), &cuQ.desc, &cuK.desc, scalar(maxQ),
        scalar(maxK), o.arg(), lse.arg()});
    double errO = checkRows("O", o.load(), refO, tolerance(DType::BF16));
    double errLse = checkRows("LSE", lse.load(), refLse, kLseTolerance);
    std::printf("[  errors  ] varlen forward %s, %lld sequences: O %.2e  LSE "
                "%.2e\n",
                masks.name, static_cast<long long>(sequences), errO, errLse);
    return;
  }

  // The backward from the reference's O and LSE (rounded as the forward
  // would have saved them) and a random dO.
  HostTensor o(DType::BF16, qShape), dO(DType::BF16, qShape),
      lse(DType::F32, lseShape);
  o.store(padWithZeros(refO));
  lse.store(padWithZeros(refLse));
  dO.store(randomNormal(rng, dO.size()));
  std::vector<double> od = o.load(), dOd = dO.load(), lsed = lse.load();
  std::vector<double> refDq(q.size(), std::nan("")),
      refDk(k.size(), std::nan("")), refDv(v.size(), std::nan(""));
  for (int64_t b = 0; b < sequences; ++b) {
    int64_t nq = batch.lengthsQ[b], nk = batch.lengthsKV[b];
    // A sequence without queries has zero dK and dV, one without keys a
    // zero dQ.
    std::vector<double> seqDq(kHeadsQ * nq * kHeadDim, 0.0),
        seqDk(kHeadsKV * nk * kHeadDim, 0.0),
        seqDv(kHeadsKV * nk * kHeadDim, 0.0);
    if (nq > 0 && nk > 0) {
      auto rowsQ = [&](std::vector<double> &packed, int64_t width) {
        return gather(packed, kHeadsQ, totalQ, cuQ.offsets[b], nq, width);
      };
      auto rowsK = [&](std::vector<double> &packed) {
        return gather(packed, kHeadsKV, totalK, cuK.offsets[b], nk, kHeadDim);
      };
      std::vector<double> sq = rowsQ(qd, kHeadDim), so = rowsQ(od, kHeadDim),
                          sdo = rowsQ(dOd, kHeadDim), slse = rowsQ(lsed, 1),
                          sk = rowsK(kd), sv = rowsK(vd);
      ref::attentionBackward(shapeOf(b), params, sq.data(), sk.data(),
                             sv.data(), so.data(), sdo.data(), slse.data(),
                             seqDq.data(), seqDk.data(), seqDv.data());
    }
    copyRows(refDq, seqDq, kHeadsQ, totalQ, cuQ.offsets[b], nq, kHeadDim,
             true);
    copyRows(refDk, seqDk, kHeadsKV, totalK, cuK.offsets[b], nk, kHeadDim,
             true);
    copyRows(refDv, seqDv, kHeadsKV, totalK, cuK.offsets[b], nk, kHeadDim,
             true);
  }
  HostTensor dq(DType::BF16, qShape), dk(DType::BF16, kShape),
      dv(DType::BF16, kShape);
  dq.poison();
  dk.poison();
  dv.poison();
  fn({q.arg(), k.arg(), v.arg(), o.arg(), dO.arg(), lse.arg(), &cuQ.desc,
      &cuK.desc, scalar(maxQ), scalar(maxK), dq.arg(), dk.arg(), dv.arg()});
  double tol = tolerance(DType::BF16);
  double errDq = checkRows("dQ", dq.load(), refDq, tol);
  double errDk = checkRows("dK", dk.load(), refDk, tol);
  double errDv = checkRows("dV", dv.load(), refDv, tol);
  std::printf("[  errors  ] varlen backward %s, %lld sequences: dQ %.2e  dK "
              "%.2e  dV %.2e\n",
              masks.name, static_cast<long long>(sequences), errDq, errDk,
              errDv);
}

using Param = std::tuple<Masks, Direction>;

class VarlenExecution : public ::testing::TestWithParam<Param> {};

TEST_P(VarlenExecution, EachSequenceMatchesItsReference) {
  const Masks &masks = std::get<0>(GetParam());
  Direction dir = std::get<1>(GetParam());
  uint64_t seed = 0;
  std::string seedError;
  ASSERT_TRUE(seedFromSetting(std::getenv("FA_TEST_SEED"), seed, seedError))
      << seedError;
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::string source = buildVarlenModule(masks, dir);
  hostjit::CompileOptions options;
  options.blockQ = 32;
  options.blockKV = 32;
  auto module = hostjit::HostModule::compile(source, options);
  ASSERT_TRUE(static_cast<bool>(module))
      << llvm::toString(module.takeError()) << "\nmodule:\n"
      << source;
  auto fn = (*module)->lookup(dir == Direction::Forward ? "forward"
                                                        : "backward");
  ASSERT_TRUE(static_cast<bool>(fn)) << llvm::toString(fn.takeError());
  std::mt19937_64 rng(seed);
  for (const Batch &batch :
       {Batch{{0, 1, 17, 100, 37}, {0, 1, 17, 100, 37}},
        Batch{{70, 5, 33}, {20, 90, 0}},
        Batch{{64}, {64}},
        Batch{{1, 2, 3, 129}, {130, 3, 2, 1}}}) {
    SCOPED_TRACE(::testing::PrintToString(batch.lengthsQ) + " x " +
                 ::testing::PrintToString(batch.lengthsKV));
    ASSERT_NO_FATAL_FAILURE(runBatch(*fn, masks, dir, batch, rng));
  }
}

std::string paramName(const ::testing::TestParamInfo<Param> &info) {
  return std::string(std::get<0>(info.param).name) +
         (std::get<1>(info.param) == Direction::Forward ? "_forward"
                                                         : "_backward");
}

INSTANTIATE_TEST_SUITE_P(
    Masks, VarlenExecution,
    ::testing::Combine(
        ::testing::Values(Masks{"none"}, Masks{"causal", true},
                          Masks{"causal_window", true, std::make_pair(8, 0)},
                          Masks{"window_softcap", false,
                                std::make_pair(16, 4), 30.0}),
        ::testing::Values(Direction::Forward, Direction::Backward)),
    paramName);

} // namespace
