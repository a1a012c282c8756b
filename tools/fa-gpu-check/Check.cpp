//===- Check.cpp - Run one attention kernel and check it ------------------===//

#include "Check.h"

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
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

using namespace fa::rt;

namespace fa::check {

namespace {

constexpr size_t kGuardBytes = 4096; // Poisoned canary after each output.
constexpr double kLSETolerance = 1e-4;

double outputTolerance(DType dtype) {
  return dtype == DType::BF16 ? 1e-2 : 3e-3;
}

std::string quoted(std::string s) {
  for (char &c : s)
    if (c == '"' || c == '\n')
      c = c == '"' ? '\'' : ' ';
  return "\"" + s + "\"";
}

/// The fp64 reference, in parallel over (batch, KV head) groups: the query
/// heads of one KV head are contiguous, so each group is an independent
/// problem with batch = 1 and heads_kv = 1.
void runReference(const KernelMetadata &m, const std::vector<double> &q,
                  const std::vector<double> &k, const std::vector<double> &v,
                  std::vector<double> &o, std::vector<double> &lse) {
  const int64_t group = m.headsQ / m.headsKV;
  fa::ref::AttentionShape shape{1,       group,     1,         m.seqQ,
                                m.seqKV, m.headDim, m.headDimV};
  fa::ref::AttentionParams params;
  params.scale = m.scale;
  params.causal = m.causal;
  if (m.hasWindow())
    params.window = std::make_pair(m.windowLeft, m.windowRight);
  if (m.hasSoftcap())
    params.softcap = m.softcap;

  const int64_t tasks = m.batch * m.headsKV;
  std::atomic<int64_t> next{0};
  auto worker = [&] {
    for (int64_t t; (t = next.fetch_add(1)) < tasks;) {
      int64_t b = t / m.headsKV, g = t % m.headsKV;
      int64_t qHead = b * m.headsQ + g * group, kvHead = b * m.headsKV + g;
      fa::ref::attentionForward(
          shape, params, q.data() + qHead * m.seqQ * m.headDim,
          k.data() + kvHead * m.seqKV * m.headDim,
          v.data() + kvHead * m.seqKV * m.headDimV,
          o.data() + qHead * m.seqQ * m.headDimV, lse.data() + qHead * m.seqQ);
    }
  };
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  threads = unsigned(std::min<int64_t>(threads, tasks));
  std::vector<std::thread> pool;
  for (unsigned i = 1; i < threads; ++i)
    pool.emplace_back(worker);
  worker();
  for (std::thread &t : pool)
    t.join();
}

struct Buffers {
  DeviceBuffer q, k, v, o, lse;
  size_t qBytes = 0, kBytes = 0, vBytes = 0, oBytes = 0, lseBytes = 0;
};

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
    o[i] = from16(m.dtype, r.o[i]);
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

} // namespace

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
               const std::string &extra) {
  std::fprintf(stderr, "fa-gpu-check: %s\n", what.c_str());
  std::printf("FAIL %s err_o=nan err_lse=nan%s%s reason=%s\n", name.c_str(),
              extra.empty() ? "" : " ", extra.c_str(), quoted(what).c_str());
  return 2;
}

std::string uncheckable(const KernelMetadata &m) {
  if (m.kind != KernelKind::Forward)
    return "only forward kernels are supported so far";
  if (!m.hasArg("lse"))
    return "the kernel does not write lse; fa-gpu-check checks O and LSE";
  return "";
}

int checkKernel(const Kernel &kernel, const std::string &name,
                const CheckOptions &opt) {
  const KernelMetadata &m = kernel.metadata();
  if (std::string why = uncheckable(m); !why.empty())
    return setupError(name, why, opt.extra);
  std::fprintf(stderr, "# kernel: %s\n", m.configString().c_str());
  std::fprintf(stderr, "# seed: %" PRIu64 "\n", opt.seed);
  if (!kernel.module().jitLog().empty())
    std::fprintf(stderr, "# JIT log: %s\n", kernel.module().jitLog().c_str());

  // Inputs: normal(0, 1), rounded to the dtype; the reference sees exactly
  // the rounded values.
  fa::ref::AttentionShape shape{m.batch, m.headsQ,  m.headsKV, m.seqQ,
                                m.seqKV, m.headDim, m.headDimV};
  const int64_t nQ = fa::ref::numelQ(shape), nK = fa::ref::numelK(shape),
                nV = fa::ref::numelV(shape), nO = fa::ref::numelO(shape),
                nLSE = fa::ref::numelLSE(shape);
  std::mt19937_64 rng(opt.seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto makeInput = [&](int64_t n, std::vector<uint16_t> &bits,
                       std::vector<double> &values) {
    bits.resize(size_t(n));
    values.resize(size_t(n));
    for (int64_t i = 0; i < n; ++i) {
      bits[i] = floatTo16(m.dtype, normal(rng));
      values[i] = from16(m.dtype, bits[i]);
    }
  };
  std::vector<uint16_t> qBits, kBits, vBits;
  std::vector<double> q, k, v;
  makeInput(nQ, qBits, q);
  makeInput(nK, kBits, k);
  makeInput(nV, vBits, v);

  Buffers buf;
  buf.qBytes = size_t(nQ) * 2;
  buf.kBytes = size_t(nK) * 2;
  buf.vBytes = size_t(nV) * 2;
  buf.oBytes = size_t(nO) * 2;
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
    s = buf.q.upload(qBits.data(), buf.qBytes);
  if (s.ok())
    s = buf.k.upload(kBits.data(), buf.kBytes);
  if (s.ok())
    s = buf.v.upload(vBits.data(), buf.vBytes);
  if (!s.ok())
    return setupError(name, s.message(), opt.extra);

  AttentionArgs args = AttentionArgs::fromMetadata(m);
  args.q = buf.q.ptr();
  args.k = buf.k.ptr();
  args.v = buf.v.ptr();
  args.o = buf.o.ptr();
  args.lse = buf.lse.ptr();

  std::vector<double> refO(static_cast<size_t>(nO)),
      refLSE(static_cast<size_t>(nLSE));
  runReference(m, q, k, v, refO, refLSE);

  const double tolO = outputTolerance(m.dtype);
  auto verdictProblems = [&](const CheckResult &r) {
    std::string p = r.problem;
    auto add = [&](const std::string &x) { p += (p.empty() ? "" : "; ") + x; };
    char buf[128];
    if (!(r.errO <= tolO)) {
      std::snprintf(buf, sizeof buf, "err_o %.3e > %.0e", r.errO, tolO);
      add(buf);
    }
    if (!(r.errLSE <= kLSETolerance)) {
      std::snprintf(buf, sizeof buf, "err_lse %.3e > %.0e", r.errLSE,
                    kLSETolerance);
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
      std::vector<uint16_t> back;
      for (auto [dev, host, label] : {std::make_tuple(&buf.q, &qBits, "Q"),
                                      std::make_tuple(&buf.k, &kBits, "K"),
                                      std::make_tuple(&buf.v, &vBits, "V")}) {
        back.resize(host->size());
        if (Status d = dev->download(back.data(), back.size() * 2); !d.ok())
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
    const int warmup = opt.warmup >= 0 ? opt.warmup : 5;
    const int iters = opt.iters > 0 ? opt.iters : 20;
    StatusOr<Event> start = Event::create(), stop = Event::create();
    if (!start.ok() || !stop.ok())
      return setupError(name, (start.ok() ? stop : start).status().message(),
                        opt.extra);
    for (int i = 0; i < warmup && s.ok(); ++i)
      s = attentionForward(kernel, args);
    std::vector<double> times;
    for (int i = 0; i < iters && s.ok(); ++i) {
      s = poison(buf);
      if (s.ok())
        s = start->record();
      if (s.ok())
        s = attentionForward(kernel, args);
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
      return setupError(name, s.message(), opt.extra);
    std::sort(times.begin(), times.end());
    size_t n = times.size();
    medianMs = n % 2 ? times[n / 2] : 0.5 * (times[n / 2 - 1] + times[n / 2]);
    std::fprintf(stderr,
                 "# timing: %d warm-up, %d timed; min %.4f ms, median "
                 "%.4f ms, max %.4f ms\n",
                 warmup, iters, times.front(), medianMs, times.back());
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
  if (medianMs >= 0) {
    double tflops = attentionForwardFlops(m) / (medianMs * 1e-3) / 1e12;
    std::printf(" ms=%.4f tflops=%.1f", medianMs, tflops);
  }
  if (!opt.extra.empty())
    std::printf(" %s", opt.extra.c_str());
  if (!problems.empty())
    std::printf(" reason=%s", quoted(problems).c_str());
  std::printf("\n");
  return problems.empty() ? 0 : 1;
}

} // namespace fa::check
