//===- VarlenCheck.cpp - Check a kernel on packed sequences ---------------===//
//
// A varlen forward kernel run on sequences packed along N (q [1, Hq, Tq,
// D], k/v [1, Hkv, Tk, D], cu_seqlens_q/k on the device) with a few padding
// rows after the last sequence. Each sequence's O and LSE rows are compared
// with the fp64 reference of that sequence alone (relative L2 over all of
// them; LSE infinities exactly); every row of a sequence must be written
// (outputs poisoned with NaN first) and the padding rows, and the bytes
// after each output, must not be.
//
//===----------------------------------------------------------------------===//

#include "CheckSupport.h"

#include "fa/Reference/Reference.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

using namespace fa::rt;

namespace fa::check {

int checkVarlenKernel(const Kernel &kernel, const std::string &name,
                      const CheckOptions &opt) {
  const KernelMetadata &kernelMeta = kernel.metadata();
  auto fail = [&](const std::string &what) {
    return setupError(name, what, opt.extra);
  };
  if (opt.seqlens.empty())
    return fail("a varlen kernel is checked on --seqlens Q:K,...");
  const PackedSequences packed(opt.seqlens);
  const std::vector<int32_t> &cuQ = packed.cuQ, &cuK = packed.cuK;
  const int64_t maxQ = packed.maxQ, sequences = packed.count(),
                totalQ = packed.totalQ, totalK = packed.totalK;
  double flops = 0;
  for (auto [nq, nk] : opt.seqlens)
    // Real tokens only: each sequence's own products.
    flops +=
        attentionForwardFlops(1, kernelMeta.headsQ, nq, nk, kernelMeta.headDim,
                              kernelMeta.headDimV, kernelMeta.causal);
  StatusOr<KernelMetadata> shaped =
      kernelMeta.instantiate(1, totalQ, totalK, sequences, maxQ);
  if (!shaped.ok())
    return fail(shaped.status().message());
  const KernelMetadata &m = *shaped;
  printKernelHeader(kernel, opt);
  const int64_t hq = m.headsQ, hkv = m.headsKV, d = m.headDim,
                dv = m.headDimV;
  const int64_t nQ = hq * totalQ * d, nK = hkv * totalK * d,
                nV = hkv * totalK * dv, nO = hq * totalQ * dv,
                nLSE = hq * totalQ;

  RandomInputs makeInput(m.dtype, opt.seed);
  std::vector<uint16_t> qBits, kBits, vBits;
  std::vector<double> q, k, v;
  makeInput(nQ, qBits, q);
  makeInput(nK, kBits, k);
  makeInput(nV, vBits, v);

  // The reference, sequence by sequence; NaN marks the padding rows.
  std::vector<double> refO(size_t(nO), std::nan("")),
      refLSE(size_t(nLSE), std::nan(""));
  const fa::ref::AttentionParams params = referenceParams(m);
  for (int64_t b = 0; b < sequences; ++b) {
    auto [nq, nk] = opt.seqlens[size_t(b)];
    std::vector<double> seqO(size_t(hq * nq * dv), 0.0),
        seqLSE(size_t(hq * nq), -std::numeric_limits<double>::infinity());
    if (nq > 0 && nk > 0) {
      std::vector<double> sq(size_t(hq * nq * d)), sk(size_t(hkv * nk * d)),
          sv(size_t(hkv * nk * dv));
      copyRows(q, sq, hq, totalQ, cuQ[b], nq, d, false);
      copyRows(k, sk, hkv, totalK, cuK[b], nk, d, false);
      copyRows(v, sv, hkv, totalK, cuK[b], nk, dv, false);
      fa::ref::attentionForward({1, hq, hkv, nq, nk, d, dv}, params,
                                sq.data(), sk.data(), sv.data(), seqO.data(),
                                seqLSE.data());
    }
    copyRows(refO, seqO, hq, totalQ, cuQ[b], nq, dv, true);
    copyRows(refLSE, seqLSE, hq, totalQ, cuQ[b], nq, 1, true);
  }

  // Device buffers; outputs with a canary after them.
  DeviceBuffer dq, dk, dvBuf, doBuf, dlse, dcuQ, dcuK;
  const size_t oBytes = size_t(nO) * 2, lseBytes = size_t(nLSE) * 4;
  Status s = Status::success();
  auto alloc = [&](DeviceBuffer &out, size_t bytes) {
    if (!s.ok())
      return;
    StatusOr<DeviceBuffer> buf = DeviceBuffer::allocate(bytes);
    if (buf.ok())
      out = std::move(*buf);
    else
      s = buf.status();
  };
  alloc(dq, size_t(nQ) * 2);
  alloc(dk, size_t(nK) * 2);
  alloc(dvBuf, size_t(nV) * 2);
  alloc(doBuf, oBytes + kGuardBytes);
  alloc(dlse, lseBytes + kGuardBytes);
  alloc(dcuQ, cuQ.size() * 4);
  alloc(dcuK, cuK.size() * 4);
  if (s.ok())
    s = dq.upload(qBits.data(), qBits.size() * 2);
  if (s.ok())
    s = dk.upload(kBits.data(), kBits.size() * 2);
  if (s.ok())
    s = dvBuf.upload(vBits.data(), vBits.size() * 2);
  if (s.ok())
    s = dcuQ.upload(cuQ.data(), cuQ.size() * 4);
  if (s.ok())
    s = dcuK.upload(cuK.data(), cuK.size() * 4);
  if (!s.ok())
    return fail(s.message());

  AttentionArgs args = AttentionArgs::fromMetadata(m);
  args.q = dq.ptr();
  args.k = dk.ptr();
  args.v = dvBuf.ptr();
  args.o = doBuf.ptr();
  args.lse = dlse.ptr();
  args.cuSeqlensQ = dcuQ.ptr();
  args.cuSeqlensK = dcuK.ptr();
  args.sequences = sequences;
  args.maxSeqQ = maxQ;
  auto poison = [&] {
    Status p = doBuf.fill(0xFF);
    return p.ok() ? dlse.fill(0xFF) : p;
  };

  // Downloads and compares; returns the problems ("" when none).
  double errO = INFINITY, errLSE = INFINITY;
  auto check = [&](std::string &problems) -> Status {
    std::vector<unsigned char> oRaw(oBytes + kGuardBytes),
        lseRaw(lseBytes + kGuardBytes);
    FA_RT_RETURN_IF_ERROR(doBuf.download(oRaw.data(), oRaw.size()));
    FA_RT_RETURN_IF_ERROR(dlse.download(lseRaw.data(), lseRaw.size()));
    auto note = [&](const std::string &p) {
      problems += (problems.empty() ? "" : "; ") + p;
    };
    for (size_t i = 0; i < kGuardBytes; ++i)
      if (oRaw[oBytes + i] != 0xFF || lseRaw[lseBytes + i] != 0xFF) {
        note("write past the end of O or LSE");
        break;
      }
    std::vector<uint16_t> oBits(static_cast<size_t>(nO));
    std::vector<float> lse(static_cast<size_t>(nLSE));
    std::memcpy(oBits.data(), oRaw.data(), oBytes);
    std::memcpy(lse.data(), lseRaw.data(), lseBytes);
    auto compare = [&](const char *what, const std::vector<double> &got,
                       const std::vector<double> &want) {
      std::vector<double> g, w;
      int64_t unwritten = 0, written = 0, badInf = 0;
      for (size_t i = 0; i < got.size(); ++i) {
        bool padding = std::isnan(want[i]);
        if (padding) {
          written += !std::isnan(got[i]);
          continue;
        }
        if (std::isnan(got[i])) {
          ++unwritten;
        } else if (std::isinf(want[i]) || std::isinf(got[i])) {
          badInf += got[i] != want[i];
        } else {
          g.push_back(got[i]);
          w.push_back(want[i]);
        }
      }
      if (unwritten)
        note(std::to_string(unwritten) + " " + what +
             " elements of the sequences NaN/unwritten");
      if (written)
        note(std::to_string(written) + " " + what +
             " elements written in padding rows (no sequence's)");
      if (badInf)
        note(std::to_string(badInf) + " " + what +
             " elements infinite where the reference is not (or vice versa)");
      return g.empty() ? 0.0
                       : fa::ref::relativeL2Error(g.data(), w.data(),
                                                  int64_t(g.size()));
    };
    std::vector<double> o(static_cast<size_t>(nO)), l(lse.begin(), lse.end());
    for (int64_t i = 0; i < nO; ++i)
      o[size_t(i)] = from16(m.dtype, oBits[size_t(i)]);
    errO = std::max(errO == INFINITY ? 0.0 : errO, compare("O", o, refO));
    errLSE = std::max(errLSE == INFINITY ? 0.0 : errLSE,
                      compare("LSE", l, refLSE));
    char buf[128];
    if (!(errO <= outputTolerance(m.dtype))) {
      std::snprintf(buf, sizeof buf, "err_o %.3e > %.0e", errO,
                    outputTolerance(m.dtype));
      note(buf);
    }
    if (!(errLSE <= kLSETolerance)) {
      std::snprintf(buf, sizeof buf, "err_lse %.3e > %.0e", errLSE,
                    kLSETolerance);
      note(buf);
    }
    return Status::success();
  };

  std::string problems;
  StatusOr<double> medianMs = checkAndTime(
      opt, "kernel", poison, [&] { return attentionForward(kernel, args); },
      check, problems);
  if (!medianMs.ok())
    return fail(medianMs.status().message());
  std::printf("%s %s err_o=%.3e err_lse=%.3e sequences=%lld",
              problems.empty() ? "PASS" : "FAIL", name.c_str(), errO, errLSE,
              static_cast<long long>(sequences));
  return finishVerdict(problems, *medianMs, flops, opt);
}

} // namespace fa::check
