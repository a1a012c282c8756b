//===- Check.cpp - Run one attention kernel and check it ------------------===//

#include "Check.h"
#include "CheckSupport.h"

#include "fa/Reference/Reference.h"
#include "fa/Runtime/Runtime.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

using namespace fa::rt;

namespace fa::check {

namespace {

/// FP8's bounds, whatever O's type. O: P is rounded to e4m3 (3 mantissa
/// bits) for P·V, as FlashAttention 3 does, and the reference attends over
/// the dequantized inputs in fp64, so O's error is P's rounding (measured
/// 1.0-1.8e-2, H100, 2026-12-05). LSE: Hopper's e4m3 WGMMA adds its
/// products with fewer bits than f32 (DeepSeek-V3 measured about 14), so
/// scores carry ~1e-4 relative errors that grow with D (measured 3e-5 at
/// D = 128, Nk = 77 to 1.5e-4 at D = 256). A wrong lane or byte order is
/// off by O(1).
constexpr double kFP8OutputTolerance = 3e-2;
constexpr double kFP8LSETolerance = 5e-4;

/// The fp64 reference, in parallel over query heads: each query head is an
/// independent problem with batch = heads = 1 against its KV head.
void runReference(const KernelMetadata &m, const std::vector<double> &q,
                  const std::vector<double> &k, const std::vector<double> &v,
                  std::vector<double> &o, std::vector<double> &lse) {
  const int64_t group = m.headsQ / m.headsKV;
  fa::ref::AttentionShape shape{1,       1,         1,         m.seqQ,
                                m.seqKV, m.headDim, m.headDimV};
  const fa::ref::AttentionParams params = referenceParams(m);
  parallelFor(m.batch * m.headsQ, [&](int64_t qHead) {
    int64_t b = qHead / m.headsQ, h = qHead % m.headsQ;
    int64_t kvHead = b * m.headsKV + h / group;
    fa::ref::attentionForward(
        shape, params, q.data() + qHead * m.seqQ * m.headDim,
        k.data() + kvHead * m.seqKV * m.headDim,
        v.data() + kvHead * m.seqKV * m.headDimV,
        o.data() + qHead * m.seqQ * m.headDimV, lse.data() + qHead * m.seqQ);
  });
}

/// The fp64 reference backward, in parallel over query heads: each query
/// head is a problem with batch = heads = 1 whose dK/dV contributions go to
/// per-query-head partials, summed over each KV head's group afterwards
/// (what the reference does for GQA, in a different order).
void runBackwardReference(
    const KernelMetadata &m, const std::vector<double> &q,
    const std::vector<double> &k, const std::vector<double> &v,
    const std::vector<double> &o, const std::vector<double> &dO,
    const std::vector<double> &lse, const std::vector<double> &dlse,
    std::vector<double> &dq, std::vector<double> &dk, std::vector<double> &dv) {
  const int64_t group = m.headsQ / m.headsKV;
  const int64_t nK = m.seqKV * m.headDim, nV = m.seqKV * m.headDimV;
  fa::ref::AttentionShape shape{1,       1,         1,         m.seqQ,
                                m.seqKV, m.headDim, m.headDimV};
  const fa::ref::AttentionParams params = referenceParams(m);
  std::vector<double> dkPart(size_t(m.batch * m.headsQ * nK)),
      dvPart(size_t(m.batch * m.headsQ * nV));
  parallelFor(m.batch * m.headsQ, [&](int64_t qHead) {
    int64_t b = qHead / m.headsQ, h = qHead % m.headsQ;
    int64_t kvHead = b * m.headsKV + h / group;
    fa::ref::attentionBackward(
        shape, params, q.data() + qHead * m.seqQ * m.headDim,
        k.data() + kvHead * nK, v.data() + kvHead * nV,
        o.data() + qHead * m.seqQ * m.headDimV,
        dO.data() + qHead * m.seqQ * m.headDimV, lse.data() + qHead * m.seqQ,
        dq.data() + qHead * m.seqQ * m.headDim, dkPart.data() + qHead * nK,
        dvPart.data() + qHead * nV,
        dlse.empty() ? nullptr : dlse.data() + qHead * m.seqQ);
  });
  parallelFor(m.batch * m.headsKV, [&](int64_t kvHead) {
    int64_t first =
        (kvHead / m.headsKV) * m.headsQ + (kvHead % m.headsKV) * group;
    for (int64_t i = 0; i < nK; ++i) {
      double sum = 0;
      for (int64_t j = 0; j < group; ++j)
        sum += dkPart[(first + j) * nK + i];
      dk[kvHead * nK + i] = sum;
    }
    for (int64_t i = 0; i < nV; ++i) {
      double sum = 0;
      for (int64_t j = 0; j < group; ++j)
        sum += dvPart[(first + j) * nV + i];
      dv[kvHead * nV + i] = sum;
    }
  });
}

struct Buffers {
  DeviceBuffer q, k, v, o, lse;
  size_t qBytes = 0, kBytes = 0, vBytes = 0, oBytes = 0, lseBytes = 0;
  DeviceBuffer qDescale, kDescale, vDescale; // FP8
};

/// The bytes of 16-bit values.
std::vector<unsigned char> bytesOf(const std::vector<uint16_t> &bits) {
  std::vector<unsigned char> bytes(bits.size() * 2);
  std::memcpy(bytes.data(), bits.data(), bytes.size());
  return bytes;
}

/// FlashAttention 3's FP8 accuracy inputs: normal(0, 1) with 0.1 % of the
/// entries normal(0, 10), quantized to e4m3 in blocks of `blockSize`
/// consecutive elements (one (batch, KV head): q's group of query heads,
/// or k's / v's head) scaled so that the block's largest magnitude maps to
/// 448. `descales` get each block's inverse scale, `values` what the kernel
/// computes with: the e4m3 value times its descale.
void quantizedInputs(std::mt19937_64 &rng, int64_t n, int64_t blockSize,
                     std::vector<unsigned char> &bytes,
                     std::vector<float> &descales,
                     std::vector<double> &values) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n));
  for (float &e : x)
    e = uniform(rng) < 0.001f ? 10.0f * normal(rng) : normal(rng);
  bytes.resize(size_t(n));
  values.resize(size_t(n));
  descales.assign(size_t(n / blockSize), 1.0f);
  for (int64_t block = 0; block < n / blockSize; ++block) {
    float amax = 0;
    for (int64_t i = block * blockSize; i < (block + 1) * blockSize; ++i)
      amax = std::max(amax, std::fabs(x[i]));
    float scale = amax > 0 ? 448.0f / amax : 1.0f;
    descales[block] = 1.0f / scale;
    for (int64_t i = block * blockSize; i < (block + 1) * blockSize; ++i) {
      bytes[i] = floatToE4M3(x[i] * scale);
      values[i] = double(e4m3ToFloat(bytes[i])) * descales[block];
    }
  }
}

struct CheckResult {
  double errO = std::numeric_limits<double>::infinity();
  double errLSE = std::numeric_limits<double>::infinity();
  std::string problem; // Empty when every structural check passed.
  std::vector<uint16_t> o;
  std::vector<float> lse;
};

/// Downloads the outputs and checks them against the reference.
Status checkOutputs(const KernelMetadata &m, Buffers &buf,
                    const std::vector<double> &refO,
                    const std::vector<double> &refLSE, CheckResult &r) {
  const int64_t nO = int64_t(refO.size()), nLSE = int64_t(refLSE.size());
  std::vector<unsigned char> oRaw(buf.oBytes + kGuardBytes),
      lseRaw(buf.lseBytes + kGuardBytes);
  FA_RT_RETURN_IF_ERROR(buf.o.download(oRaw.data(), oRaw.size()));
  FA_RT_RETURN_IF_ERROR(buf.lse.download(lseRaw.data(), lseRaw.size()));
  r.o.resize(size_t(nO));
  r.lse.resize(size_t(nLSE));
  std::memcpy(r.o.data(), oRaw.data(), buf.oBytes);
  std::memcpy(r.lse.data(), lseRaw.data(), buf.lseBytes);

  auto note = [&](const std::string &s) {
    r.problem += (r.problem.empty() ? "" : "; ") + s;
  };
  for (size_t i = 0; i < kGuardBytes; ++i)
    if (oRaw[buf.oBytes + i] != 0xFF || lseRaw[buf.lseBytes + i] != 0xFF) {
      note("write past the end of " +
           std::string(oRaw[buf.oBytes + i] != 0xFF ? "O" : "LSE"));
      break;
    }

  std::vector<double> o(static_cast<size_t>(nO)),
      lse(static_cast<size_t>(nLSE));
  int64_t unwrittenO = 0, firstUnwritten = -1;
  for (int64_t i = 0; i < nO; ++i) {
    o[i] = from16(m.outDtype, r.o[i]);
    if (std::isnan(o[i]) && unwrittenO++ == 0)
      firstUnwritten = i;
  }
  if (unwrittenO)
    note(std::to_string(unwrittenO) + " of " + std::to_string(nO) +
         " O elements NaN/unwritten (first at flat index " +
         std::to_string(firstUnwritten) + ")");
  int64_t nanLSE = 0, infMismatch = 0;
  for (int64_t i = 0; i < nLSE; ++i) {
    lse[i] = r.lse[i];
    if (std::isnan(lse[i]))
      ++nanLSE;
    else if ((lse[i] == -INFINITY) != (refLSE[i] == -INFINITY) ||
             lse[i] == INFINITY)
      ++infMismatch;
  }
  if (nanLSE)
    note(std::to_string(nanLSE) + " of " + std::to_string(nLSE) +
         " LSE elements NaN/unwritten");
  if (infMismatch)
    note(std::to_string(infMismatch) +
         " LSE elements infinite where the reference is not (or vice versa)");
  r.errO = fa::ref::relativeL2Error(o.data(), refO.data(), nO);
  r.errLSE = fa::ref::relativeL2Error(lse.data(), refLSE.data(), nLSE);
  return Status::success();
}

Status poison(Buffers &buf) {
  FA_RT_RETURN_IF_ERROR(buf.o.fill(0xFF));
  return buf.lse.fill(0xFF);
}

//===----------------------------------------------------------------------===//
// Backward
//===----------------------------------------------------------------------===//

/// A device tensor of 16-bit elements (or raw bytes) with a poisoned guard
/// region after it (outputs only).
struct DeviceTensor {
  const char *label = "";
  DeviceBuffer buffer;
  size_t bytes = 0;
  bool guarded = false;
};

Status allocate(DeviceTensor &t, const char *label, size_t bytes,
                bool guarded) {
  t.label = label;
  t.bytes = bytes;
  t.guarded = guarded;
  StatusOr<DeviceBuffer> b = DeviceBuffer::allocate(
      std::max<size_t>(1, bytes + (guarded ? kGuardBytes : 0)));
  if (!b.ok())
    return b.status().withContext(std::string("allocating ") + label);
  t.buffer = std::move(*b);
  return Status::success();
}

struct BackwardResult {
  double errDQ = std::numeric_limits<double>::infinity();
  double errDK = std::numeric_limits<double>::infinity();
  double errDV = std::numeric_limits<double>::infinity();
  std::string problem;
  std::vector<uint16_t> dq, dk, dv;
};

/// Downloads dQ, dK, dV and compares them with the reference.
Status checkGradients(const KernelMetadata &m, DeviceTensor *out[3],
                      const std::vector<double> *ref[3], BackwardResult &r) {
  auto note = [&](const std::string &s) {
    r.problem += (r.problem.empty() ? "" : "; ") + s;
  };
  std::vector<uint16_t> *bits[3] = {&r.dq, &r.dk, &r.dv};
  double *errs[3] = {&r.errDQ, &r.errDK, &r.errDV};
  for (int t = 0; t < 3; ++t) {
    DeviceTensor &d = *out[t];
    std::vector<unsigned char> raw(d.bytes + kGuardBytes);
    FA_RT_RETURN_IF_ERROR(d.buffer.download(raw.data(), raw.size()));
    for (size_t i = 0; i < kGuardBytes; ++i)
      if (raw[d.bytes + i] != 0xFF) {
        note(std::string("write past the end of ") + d.label);
        break;
      }
    const size_t n = d.bytes / 2;
    bits[t]->resize(n);
    std::memcpy(bits[t]->data(), raw.data(), d.bytes);
    std::vector<double> values(n);
    int64_t unwritten = 0, first = -1;
    for (size_t i = 0; i < n; ++i) {
      values[i] = from16(m.dtype, (*bits[t])[i]);
      if (std::isnan(values[i]) && unwritten++ == 0)
        first = int64_t(i);
    }
    if (unwritten)
      note(std::to_string(unwritten) + " of " + std::to_string(n) + " " +
           d.label + " elements NaN/unwritten (first at flat index " +
           std::to_string(first) + ")");
    *errs[t] = gradientError(values, *ref[t]);
  }
  return Status::success();
}



fa::ref::AttentionShape referenceShape(const KernelMetadata &m) {
  return {m.batch, m.headsQ, m.headsKV, m.seqQ, m.seqKV, m.headDim, m.headDimV};
}

/// Checks backward kernel set `kernel` at the shape of `m` (its metadata,
/// or with runtime shapes, that metadata instantiated for the call).
int checkBackwardKernel(const Kernel &kernel, const KernelMetadata &m,
                        const std::string &name, const CheckOptions &opt) {
  const KernelKind kind = KernelKind::Backward;
  auto fail = [&](const std::string &what) {
    return setupError(name, what, opt.extra, kind);
  };
  printKernelHeader(kernel, opt);

  // Inputs q, k, v, dO: normal(0, 1) rounded to the dtype. O and LSE come
  // from the fp64 reference forward (O rounded to the dtype, LSE to f32);
  // the reference backward sees exactly the values the kernels see.
  fa::ref::AttentionShape shape = referenceShape(m);
  const int64_t nQ = fa::ref::numelQ(shape), nK = fa::ref::numelK(shape),
                nV = fa::ref::numelV(shape), nO = fa::ref::numelO(shape),
                nLSE = fa::ref::numelLSE(shape);
  RandomInputs makeInput(m.dtype, opt.seed);
  std::vector<uint16_t> qBits, kBits, vBits, dOBits, oBits;
  std::vector<double> q, k, v, dO;
  makeInput(nQ, qBits, q);
  makeInput(nK, kBits, k);
  makeInput(nV, vBits, v);
  makeInput(nO, dOBits, dO);

  std::vector<double> o(static_cast<size_t>(nO)),
      lse(static_cast<size_t>(nLSE));
  runReference(m, q, k, v, o, lse);
  oBits.resize(size_t(nO));
  for (int64_t i = 0; i < nO; ++i) {
    oBits[i] = floatTo16(m.dtype, float(o[i]));
    o[i] = from16(m.dtype, oBits[i]);
  }
  std::vector<float> lseF(static_cast<size_t>(nLSE));
  for (int64_t i = 0; i < nLSE; ++i) {
    lseF[i] = float(lse[i]);
    lse[i] = lseF[i];
  }
  // A kernel set compiled with grad_lse takes dLSE: normal(0, 1) in f32.
  const bool gradLse = m.pre.hasArg("dlse");
  std::vector<float> dlseF;
  std::vector<double> dlse;
  if (gradLse) {
    std::mt19937_64 rng(opt.seed ^ 0x6c7365ull);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (int64_t i = 0; i < nLSE; ++i) {
      dlseF.push_back(normal(rng));
      dlse.push_back(dlseF.back());
    }
  }
  std::vector<double> refDQ(static_cast<size_t>(nQ)),
      refDK(static_cast<size_t>(nK)), refDV(static_cast<size_t>(nV));
  runBackwardReference(m, q, k, v, o, dO, lse, dlse, refDQ, refDK, refDV);

  DeviceTensor qT, kT, vT, oT, dOT, lseT, dlseT, dqT, dkT, dvT, ws;
  const size_t wsBytes = attentionBackwardWorkspaceBytes(m);
  Status s = allocate(qT, "Q", size_t(nQ) * 2, false);
  if (s.ok())
    s = allocate(kT, "K", size_t(nK) * 2, false);
  if (s.ok())
    s = allocate(vT, "V", size_t(nV) * 2, false);
  if (s.ok())
    s = allocate(oT, "O", size_t(nO) * 2, false);
  if (s.ok())
    s = allocate(dOT, "dO", size_t(nO) * 2, false);
  if (s.ok())
    s = allocate(lseT, "LSE", size_t(nLSE) * 4, false);
  if (s.ok() && gradLse)
    s = allocate(dlseT, "dLSE", size_t(nLSE) * 4, false);
  if (s.ok())
    s = allocate(dqT, "dQ", size_t(nQ) * 2, true);
  if (s.ok())
    s = allocate(dkT, "dK", size_t(nK) * 2, true);
  if (s.ok())
    s = allocate(dvT, "dV", size_t(nV) * 2, true);
  if (s.ok())
    s = allocate(ws, "workspace", wsBytes, false);
  std::vector<std::pair<DeviceTensor *, const void *>> inputs = {
      {&qT, qBits.data()}, {&kT, kBits.data()},   {&vT, vBits.data()},
      {&oT, oBits.data()}, {&dOT, dOBits.data()}, {&lseT, lseF.data()}};
  if (gradLse)
    inputs.push_back({&dlseT, dlseF.data()});
  for (const auto &[t, host] : inputs)
    if (s.ok())
      s = t->buffer.upload(host, t->bytes);
  if (!s.ok())
    return fail(s.message());
  std::fprintf(stderr, "# workspace: %zu bytes\n", wsBytes);

  AttentionBackwardArgs args = AttentionBackwardArgs::fromMetadata(m);
  args.q = qT.buffer.ptr();
  args.k = kT.buffer.ptr();
  args.v = vT.buffer.ptr();
  args.o = oT.buffer.ptr();
  args.dO = dOT.buffer.ptr();
  args.lse = lseT.buffer.ptr();
  args.dlse = gradLse ? dlseT.buffer.ptr() : 0;
  args.dq = dqT.buffer.ptr();
  args.dk = dkT.buffer.ptr();
  args.dv = dvT.buffer.ptr();
  const CUdeviceptr workspace = ws.buffer.ptr();

  // NaN everywhere the kernels write (0xFFFF is a NaN in bf16 and f16,
  // 0xFFFFFFFF in f32): unwritten elements and a missing dq_acc reset show.
  auto poisonAll = [&] {
    Status p = Status::success();
    for (DeviceTensor *t : {&dqT, &dkT, &dvT, &ws})
      if (p.ok())
        p = t->buffer.fill(0xFF);
    return p;
  };
  DeviceTensor *outs[3] = {&dqT, &dkT, &dvT};
  const std::vector<double> *refs[3] = {&refDQ, &refDK, &refDV};
  const double tol = gradientTolerance(m.dtype);
  auto verdictProblems = [&](const BackwardResult &r) {
    std::string p = r.problem;
    char buf[128];
    for (auto [err, label] :
         {std::make_pair(r.errDQ, "err_dq"), std::make_pair(r.errDK, "err_dk"),
          std::make_pair(r.errDV, "err_dv")})
      if (!(err <= tol)) {
        std::snprintf(buf, sizeof buf, "%s %.3e > %.0e", label, err, tol);
        p += (p.empty() ? "" : "; ") + std::string(buf);
      }
    return p;
  };
  // dK and dV are computed per KV block (deterministic); dQ is accumulated
  // with f32 atomics, so its bits may legitimately differ between runs.
  auto sameDeterministic = [](const BackwardResult &a,
                              const BackwardResult &b) {
    return a.dk == b.dk && a.dv == b.dv;
  };

  const int checkRuns = opt.bench ? 1 : std::max(1, opt.iters);
  BackwardResult first, worst;
  std::string problems;
  for (int run = 0; run < checkRuns && problems.empty(); ++run) {
    BackwardResult r;
    s = poisonAll();
    if (s.ok())
      s = attentionBackward(kernel, args, workspace);
    if (s.ok())
      s = synchronize();
    if (s.ok())
      s = checkGradients(m, outs, refs, r);
    if (!s.ok())
      return fail(s.message());
    problems = verdictProblems(r);
    if (run == 0) {
      // The kernels must not write their inputs.
      for (const auto &[t, host] : inputs) {
        std::vector<unsigned char> back(t->bytes);
        if (Status d = t->buffer.download(back.data(), back.size()); !d.ok())
          return fail(d.message());
        if (std::memcmp(back.data(), host, t->bytes) != 0)
          problems += std::string(problems.empty() ? "" : "; ") +
                      "kernel modified input " + t->label;
      }
      first = r;
    } else if (!sameDeterministic(r, first)) {
      problems += std::string(problems.empty() ? "" : "; ") +
                  "dK/dV differ between runs (nondeterministic)";
    }
    worst.errDQ = run == 0 ? r.errDQ : std::max(worst.errDQ, r.errDQ);
    worst.errDK = run == 0 ? r.errDK : std::max(worst.errDK, r.errDK);
    worst.errDV = run == 0 ? r.errDV : std::max(worst.errDV, r.errDV);
  }

  // Timing: the three launches together.
  double medianMs = -1;
  if (opt.bench && problems.empty()) {
    StatusOr<double> ms =
        timeLaunches(opt, "pre + main + post", poisonAll, [&] {
          return attentionBackward(kernel, args, workspace);
        });
    if (!ms.ok())
      return fail(ms.status().message());
    medianMs = *ms;
    BackwardResult after;
    s = checkGradients(m, outs, refs, after);
    if (!s.ok())
      return fail(s.message());
    problems = verdictProblems(after);
    worst.errDQ = std::max(worst.errDQ, after.errDQ);
    worst.errDK = std::max(worst.errDK, after.errDK);
    worst.errDV = std::max(worst.errDV, after.errDV);
    if (problems.empty() && !sameDeterministic(after, first))
      problems = "dK/dV after timing differ from the first run "
                 "(nondeterministic)";
  }

  std::printf("%s %s err_dq=%.3e err_dk=%.3e err_dv=%.3e",
              problems.empty() ? "PASS" : "FAIL", name.c_str(), worst.errDQ,
              worst.errDK, worst.errDV);
  return finishVerdict(problems, medianMs, attentionBackwardFlops(m), opt);
}

} // namespace

constexpr double kGradientFloorScale = 0.1;

double gradientTolerance(DType dtype) {
  return dtype == DType::BF16 ? 2e-2 : 5e-3;
}

/// ||out - ref|| / max(||ref||, 0.1 sqrt(n)): a relative L2 error whose
/// denominator is floored at the O(1) scale of the inputs, so an exactly
/// zero gradient (e.g. N = 1) is judged in absolute terms. +inf if `out`
/// has a non-finite element.
double gradientError(const std::vector<double> &out,
                     const std::vector<double> &ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    if (!std::isfinite(out[i]))
      return std::numeric_limits<double>::infinity();
    double d = out[i] - ref[i];
    num += d * d;
    den += ref[i] * ref[i];
  }
  double floor = kGradientFloorScale * std::sqrt(double(out.size()));
  return std::sqrt(num) / std::max(std::sqrt(den), floor);
}

StatusOr<double> checkAndTime(const CheckOptions &opt, const char *what,
                              const std::function<Status()> &poison,
                              const std::function<Status()> &launch,
                              const std::function<Status(std::string &)> &check,
                              std::string &problems) {
  const int checkRuns = opt.bench ? 1 : std::max(1, opt.iters);
  for (int run = 0; run < checkRuns && problems.empty(); ++run) {
    Status s = poison();
    if (s.ok())
      s = launch();
    if (s.ok())
      s = synchronize();
    if (s.ok())
      s = check(problems);
    if (!s.ok())
      return s;
  }
  if (!opt.bench || !problems.empty())
    return -1.0;
  StatusOr<double> ms = timeLaunches(opt, what, poison, launch);
  if (!ms.ok())
    return ms.status();
  FA_RT_RETURN_IF_ERROR(check(problems));
  return *ms;
}

double outputTolerance(DType dtype) {
  return dtype == DType::BF16 ? 1e-2 : 3e-3;
}

std::string quoted(std::string s) {
  for (char &c : s)
    if (c == '"' || c == '\n')
      c = c == '"' ? '\'' : ' ';
  return "\"" + s + "\"";
}

fa::ref::AttentionParams referenceParams(const KernelMetadata &m) {
  fa::ref::AttentionParams params;
  params.scale = m.scale;
  params.causal = m.causal;
  if (m.hasWindow())
    params.window = std::make_pair(m.windowLeft, m.windowRight);
  if (m.hasSoftcap())
    params.softcap = m.softcap;
  return params;
}

int finishVerdict(const std::string &problems, double medianMs, double flops,
                  const CheckOptions &opt) {
  if (medianMs >= 0)
    std::printf(" ms=%.4f tflops=%.1f", medianMs,
                flops / (medianMs * 1e-3) / 1e12);
  if (!opt.extra.empty())
    std::printf(" %s", opt.extra.c_str());
  if (!problems.empty())
    std::printf(" reason=%s", quoted(problems).c_str());
  std::printf("\n");
  return problems.empty() ? 0 : 1;
}

/// Median milliseconds of `launch` between device events: opt.warmup
/// untimed runs, then opt.iters timed ones, each after `prepare` (which
/// re-poisons the outputs) outside the timed region.
StatusOr<double> timeLaunches(const CheckOptions &opt, const char *what,
                              const std::function<Status()> &prepare,
                              const std::function<Status()> &launch) {
  const int warmup = opt.warmup >= 0 ? opt.warmup : 5;
  const int iters = opt.iters > 0 ? opt.iters : 20;
  StatusOr<Event> start = Event::create(), stop = Event::create();
  if (!start.ok() || !stop.ok())
    return (start.ok() ? stop : start).status();
  Status s = Status::success();
  for (int i = 0; i < warmup && s.ok(); ++i)
    s = launch();
  std::vector<double> times;
  for (int i = 0; i < iters && s.ok(); ++i) {
    s = prepare();
    if (s.ok())
      s = start->record();
    if (s.ok())
      s = launch();
    if (s.ok())
      s = stop->record();
    if (s.ok())
      s = stop->synchronize();
    if (s.ok()) {
      StatusOr<float> ms = Event::elapsedMs(*start, *stop);
      if (ms.ok())
        times.push_back(*ms);
      else
        s = ms.status();
    }
  }
  if (!s.ok())
    return s;
  std::sort(times.begin(), times.end());
  size_t n = times.size();
  double median =
      n % 2 ? times[n / 2] : 0.5 * (times[n / 2 - 1] + times[n / 2]);
  std::fprintf(stderr,
               "# timing (%s): %d warm-up, %d timed; min %.4f ms, median "
               "%.4f ms, max %.4f ms\n",
               what, warmup, iters, times.front(), median, times.back());
  return median;
}

/// Prints which kernel is checked, the seed, and the driver's JIT log.
void printKernelHeader(const Kernel &kernel, const CheckOptions &opt) {
  std::fprintf(stderr, "# kernel: %s\n",
               kernel.metadata().configString().c_str());
  std::fprintf(stderr, "# seed: %" PRIu64 "\n", opt.seed);
  if (!kernel.module().jitLog().empty())
    std::fprintf(stderr, "# JIT log: %s\n", kernel.module().jitLog().c_str());
}

uint64_t randomSeed() {
  // /dev/urandom rather than std::random_device: the static libstdc++'s
  // random_device needs glibc 2.36 (arc4random), which would raise the glibc
  // the static fa-gpu-check-jit requires.
  uint64_t bits =
      uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
  if (FILE *f = std::fopen("/dev/urandom", "rb")) {
    if (std::fread(&bits, sizeof bits, 1, f) != 1)
      bits ^= uint64_t(std::time(nullptr));
    std::fclose(f);
  }
  return bits % 1000000007ull;
}

int setupError(const std::string &name, const std::string &what,
               const std::string &extra, KernelKind kind) {
  std::fprintf(stderr, "fa-gpu-check: %s\n", what.c_str());
  std::printf("FAIL %s %s%s%s reason=%s\n", name.c_str(),
              kind == KernelKind::Forward ? "err_o=nan err_lse=nan"
                                          : "err_dq=nan err_dk=nan err_dv=nan",
              extra.empty() ? "" : " ", extra.c_str(), quoted(what).c_str());
  return 2;
}

std::string uncheckable(const KernelMetadata &m) {
  if (m.kind == KernelKind::Backward)
    return "";
  if (!m.hasArg("lse"))
    return "the kernel does not write lse; fa-gpu-check checks O and LSE";
  return "";
}

int checkKernel(const Kernel &kernel, const std::string &name,
                const CheckOptions &opt) {
  if (kernel.metadata().varlen)
    return kernel.metadata().kind == KernelKind::Backward
               ? checkVarlenBackwardKernel(kernel, name, opt)
               : checkVarlenKernel(kernel, name, opt);
  // A kernel with runtime shapes is checked at the shape asked for.
  StatusOr<KernelMetadata> shaped =
      kernel.metadata().instantiate(opt.batch, opt.seqQ, opt.seqKV);
  if (!shaped.ok())
    return setupError(name, shaped.status().message(), opt.extra);
  const KernelMetadata &m = *shaped;
  if (m.kind == KernelKind::Backward)
    return checkBackwardKernel(kernel, m, name, opt);
  if (std::string why = uncheckable(m); !why.empty())
    return setupError(name, why, opt.extra);
  printKernelHeader(kernel, opt);

  // Inputs: normal(0, 1), rounded to the dtype; the reference sees exactly
  // the rounded values.
  fa::ref::AttentionShape shape = referenceShape(m);
  const int64_t nQ = fa::ref::numelQ(shape), nK = fa::ref::numelK(shape),
                nV = fa::ref::numelV(shape), nO = fa::ref::numelO(shape),
                nLSE = fa::ref::numelLSE(shape);
  std::vector<unsigned char> qHost, kHost, vHost;
  std::vector<double> q, k, v;
  std::vector<float> qDescales, kDescales, vDescales;
  if (m.isFP8()) {
    std::mt19937_64 rng(opt.seed);
    quantizedInputs(rng, nQ, nQ / (m.batch * m.headsKV), qHost, qDescales, q);
    quantizedInputs(rng, nK, m.seqKV * m.headDim, kHost, kDescales, k);
    quantizedInputs(rng, nV, m.seqKV * m.headDimV, vHost, vDescales, v);
  } else {
    RandomInputs makeInput(m.dtype, opt.seed);
    std::vector<uint16_t> bits;
    makeInput(nQ, bits, q);
    qHost = bytesOf(bits);
    makeInput(nK, bits, k);
    kHost = bytesOf(bits);
    makeInput(nV, bits, v);
    vHost = bytesOf(bits);
  }

  Buffers buf;
  buf.qBytes = qHost.size();
  buf.kBytes = kHost.size();
  buf.vBytes = vHost.size();
  buf.oBytes = size_t(nO) * elementSize(m.outDtype);
  buf.lseBytes = size_t(nLSE) * sizeof(float);
  auto alloc = [&](DeviceBuffer &out, size_t bytes) {
    StatusOr<DeviceBuffer> b = DeviceBuffer::allocate(bytes);
    if (!b.ok())
      return b.status();
    out = std::move(*b);
    return Status::success();
  };
  Status s = alloc(buf.q, buf.qBytes);
  if (s.ok())
    s = alloc(buf.k, buf.kBytes);
  if (s.ok())
    s = alloc(buf.v, buf.vBytes);
  if (s.ok())
    s = alloc(buf.o, buf.oBytes + kGuardBytes);
  if (s.ok())
    s = alloc(buf.lse, buf.lseBytes + kGuardBytes);
  if (s.ok())
    s = buf.q.upload(qHost.data(), buf.qBytes);
  if (s.ok())
    s = buf.k.upload(kHost.data(), buf.kBytes);
  if (s.ok())
    s = buf.v.upload(vHost.data(), buf.vBytes);
  for (auto [dev, host] : {std::pair{&buf.qDescale, &qDescales},
                           std::pair{&buf.kDescale, &kDescales},
                           std::pair{&buf.vDescale, &vDescales}})
    if (s.ok() && !host->empty()) {
      s = alloc(*dev, host->size() * sizeof(float));
      if (s.ok())
        s = dev->upload(host->data(), host->size() * sizeof(float));
    }
  if (!s.ok())
    return setupError(name, s.message(), opt.extra);

  AttentionArgs args = AttentionArgs::fromMetadata(m);
  args.q = buf.q.ptr();
  args.k = buf.k.ptr();
  args.v = buf.v.ptr();
  args.o = buf.o.ptr();
  args.lse = buf.lse.ptr();
  if (m.isFP8()) {
    args.qDescale = buf.qDescale.ptr();
    args.kDescale = buf.kDescale.ptr();
    args.vDescale = buf.vDescale.ptr();
  }

  std::vector<double> refO(static_cast<size_t>(nO)),
      refLSE(static_cast<size_t>(nLSE));
  runReference(m, q, k, v, refO, refLSE);

  const double tolO =
      m.isFP8() ? kFP8OutputTolerance : outputTolerance(m.dtype);
  const double tolLSE = m.isFP8() ? kFP8LSETolerance : kLSETolerance;
  auto verdictProblems = [&](const CheckResult &r) {
    std::string p = r.problem;
    auto add = [&](const std::string &x) { p += (p.empty() ? "" : "; ") + x; };
    char buf[128];
    if (!(r.errO <= tolO)) {
      std::snprintf(buf, sizeof buf, "err_o %.3e > %.0e", r.errO, tolO);
      add(buf);
    }
    if (!(r.errLSE <= tolLSE)) {
      std::snprintf(buf, sizeof buf, "err_lse %.3e > %.0e", r.errLSE, tolLSE);
      add(buf);
    }
    return p;
  };

  // Correctness runs.
  const int checkRuns = opt.bench ? 1 : std::max(1, opt.iters);
  CheckResult first, worst;
  std::string problems;
  for (int run = 0; run < checkRuns && problems.empty(); ++run) {
    CheckResult r;
    s = poison(buf);
    if (s.ok())
      s = attentionForward(kernel, args);
    if (s.ok())
      s = synchronize();
    if (s.ok())
      s = checkOutputs(m, buf, refO, refLSE, r);
    if (!s.ok())
      return setupError(name, s.message(), opt.extra);
    problems = verdictProblems(r);
    if (run == 0) {
      // The kernel must not write its inputs.
      std::vector<unsigned char> back;
      for (auto [dev, host, label] : {std::make_tuple(&buf.q, &qHost, "Q"),
                                      std::make_tuple(&buf.k, &kHost, "K"),
                                      std::make_tuple(&buf.v, &vHost, "V")}) {
        back.resize(host->size());
        if (Status d = dev->download(back.data(), back.size()); !d.ok())
          return setupError(name, d.message(), opt.extra);
        if (back != *host)
          problems += std::string(problems.empty() ? "" : "; ") +
                      "kernel modified input " + label;
      }
      first = r;
    } else if (r.o != first.o || r.lse != first.lse) {
      problems += std::string(problems.empty() ? "" : "; ") +
                  "results differ between runs (nondeterministic)";
    }
    worst.errO = run == 0 ? r.errO : std::max(worst.errO, r.errO);
    worst.errLSE = run == 0 ? r.errLSE : std::max(worst.errLSE, r.errLSE);
  }

  // Timing.
  double medianMs = -1;
  if (opt.bench && problems.empty()) {
    StatusOr<double> ms = timeLaunches(
        opt, "kernel", [&] { return poison(buf); },
        [&] { return attentionForward(kernel, args); });
    if (!ms.ok())
      return setupError(name, ms.status().message(), opt.extra);
    medianMs = *ms;
    // The last timed run's outputs must equal the first run's.
    CheckResult after;
    s = checkOutputs(m, buf, refO, refLSE, after);
    if (!s.ok())
      return setupError(name, s.message(), opt.extra);
    problems = verdictProblems(after);
    worst.errO = std::max(worst.errO, after.errO);
    worst.errLSE = std::max(worst.errLSE, after.errLSE);
    if (problems.empty() && (after.o != first.o || after.lse != first.lse))
      problems = "results after timing differ from the first run "
                 "(nondeterministic)";
  }

  std::printf("%s %s err_o=%.3e err_lse=%.3e",
              problems.empty() ? "PASS" : "FAIL", name.c_str(), worst.errO,
              worst.errLSE);
  return finishVerdict(problems, medianMs, attentionForwardFlops(m), opt);
}

} // namespace fa::check
