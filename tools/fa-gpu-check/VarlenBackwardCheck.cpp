//===- VarlenBackwardCheck.cpp - Check a backward on packed sequences -----===//
//
// A varlen backward kernel set run on sequences packed along N, with a few
// padding rows after the last sequence. O and LSE are each sequence's fp64
// reference forward (rounded as a forward kernel stores them); the padding
// rows hold random O and an LSE of 0, so that a Q block that read them
// would add visible garbage to dK and dV. Each sequence's dQ, dK and dV
// rows are compared with the fp64 reference backward of that sequence alone
// (gradientError over all of them; outputs poisoned with NaN first, so
// every row of a sequence must be written); dK and dV padding rows and the
// bytes after every output must stay poisoned, dQ's padding rows are zero
// or poisoned.
//
//===----------------------------------------------------------------------===//

#include "CheckSupport.h"

#include "fa/Reference/Reference.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <tuple>

using namespace fa::rt;

namespace fa::check {

namespace {

/// One gradient: its device buffer (with a poisoned guard after it), the
/// packed reference (NaN in rows of no sequence) and its row geometry.
struct Gradient {
  const char *label;
  DeviceBuffer buffer;
  size_t bytes = 0;
  std::vector<double> ref;
  int64_t heads = 0, total = 0, width = 0;
  /// Whether rows of no sequence may be written with zeros (dQ: its row
  /// kernels cover every row).
  bool zeroPadding = false;
};

} // namespace

int checkVarlenBackwardKernel(const Kernel &kernel, const std::string &name,
                              const CheckOptions &opt) {
  const KernelMetadata &kernelMeta = kernel.metadata();
  auto fail = [&](const std::string &what) {
    return setupError(name, what, opt.extra, KernelKind::Backward);
  };
  if (opt.seqlens.empty())
    return fail("a varlen kernel is checked on --seqlens Q:K,...");
  const PackedSequences packed(opt.seqlens);
  const int64_t sequences = packed.count(), totalQ = packed.totalQ,
                totalK = packed.totalK;
  StatusOr<KernelMetadata> shaped = kernelMeta.instantiate(
      1, totalQ, totalK, sequences, packed.maxQ, packed.maxK);
  if (!shaped.ok())
    return fail(shaped.status().message());
  const KernelMetadata &m = *shaped;
  printKernelHeader(kernel, opt);
  const int64_t hq = m.headsQ, hkv = m.headsKV, d = m.headDim, dv = m.headDimV;
  const int64_t nQ = hq * totalQ * d, nK = hkv * totalK * d,
                nV = hkv * totalK * dv, nO = hq * totalQ * dv,
                nLSE = hq * totalQ;

  RandomInputs makeInput(m.dtype, opt.seed);
  std::vector<uint16_t> qBits, kBits, vBits, dOBits, oBits;
  std::vector<double> q, k, v, dO, o;
  makeInput(nQ, qBits, q);
  makeInput(nK, kBits, k);
  makeInput(nV, vBits, v);
  makeInput(nO, dOBits, dO);
  makeInput(nO, oBits, o); // the padding rows' O; sequences' below
  std::vector<float> lse(size_t(nLSE), 0.0f);

  Gradient grads[3] = {{"dQ"}, {"dK"}, {"dV"}};
  const int64_t geometry[3][3] = {
      {hq, totalQ, d}, {hkv, totalK, d}, {hkv, totalK, dv}};
  for (int g = 0; g < 3; ++g) {
    grads[g].heads = geometry[g][0];
    grads[g].total = geometry[g][1];
    grads[g].width = geometry[g][2];
    grads[g].ref.assign(
        size_t(grads[g].heads * grads[g].total * grads[g].width), std::nan(""));
  }
  grads[0].zeroPadding = true;

  // Each sequence and query head on its own, in parallel: the forward (O
  // rounded to the dtype, LSE to f32, as the forward kernels store them),
  // then the backward on exactly those values; dK and dV summed over the
  // query heads of a KV head's group afterwards.
  const fa::ref::AttentionParams params = referenceParams(m);
  const int64_t group = hq / hkv;
  struct HeadResult {
    std::vector<double> o, lse, dq, dk, dv;
  };
  std::vector<HeadResult> results(size_t(sequences * hq));
  // Row r of head h of a packed [H, T, X] tensor, X wide.
  auto row = [](const std::vector<double> &t, int64_t h, int64_t total,
                int64_t r,
                int64_t width) { return t.data() + (h * total + r) * width; };
  parallelFor(sequences * hq, [&](int64_t task) {
    const int64_t b = task / hq, h = task % hq, kvh = h / group;
    auto [nq, nk] = opt.seqlens[size_t(b)];
    const int64_t q0 = packed.cuQ[b], k0 = packed.cuK[b];
    HeadResult &r = results[size_t(task)];
    r.o.assign(size_t(nq * dv), 0.0);
    r.lse.assign(size_t(nq), -INFINITY);
    r.dq.assign(size_t(nq * d), 0.0);
    r.dk.assign(size_t(nk * d), 0.0);
    r.dv.assign(size_t(nk * dv), 0.0);
    if (nq == 0 || nk == 0)
      return;
    const fa::ref::AttentionShape shape{1, 1, 1, nq, nk, d, dv};
    const double *sq = row(q, h, totalQ, q0, d);
    const double *sk = row(k, kvh, totalK, k0, d);
    const double *sv = row(v, kvh, totalK, k0, dv);
    fa::ref::attentionForward(shape, params, sq, sk, sv, r.o.data(),
                              r.lse.data());
    for (double &x : r.o)
      x = from16(m.dtype, floatTo16(m.dtype, float(x)));
    for (double &x : r.lse)
      x = float(x);
    fa::ref::attentionBackward(shape, params, sq, sk, sv, r.o.data(),
                               row(dO, h, totalQ, q0, dv), r.lse.data(),
                               r.dq.data(), r.dk.data(), r.dv.data());
  });
  double flops = 0;
  for (int64_t b = 0; b < sequences; ++b) {
    auto [nq, nk] = opt.seqlens[size_t(b)];
    const int64_t q0 = packed.cuQ[b], k0 = packed.cuK[b];
    flops += kBackwardFlopsFactor *
             attentionForwardFlops(1, hq, nq, nk, d, dv, m.causal);
    for (int64_t h = 0; h < hq; ++h) {
      const HeadResult &r = results[size_t(b * hq + h)];
      const int64_t kvh = h / group;
      std::copy(r.o.begin(), r.o.end(), o.begin() + (h * totalQ + q0) * dv);
      for (int64_t i = 0; i < nq; ++i)
        lse[size_t(h * totalQ + q0 + i)] = float(r.lse[size_t(i)]);
      std::copy(r.dq.begin(), r.dq.end(),
                grads[0].ref.begin() + (h * totalQ + q0) * d);
      // dK and dV: the group's sum (the first head's rows start it).
      for (auto [g, part, width] :
           {std::tuple{&grads[1], &r.dk, d}, std::tuple{&grads[2], &r.dv, dv}})
        for (size_t i = 0; i < part->size(); ++i) {
          double &sum = g->ref[size_t((kvh * totalK + k0) * width) + i];
          sum = h % group == 0 ? (*part)[i] : sum + (*part)[i];
        }
    }
  }
  for (int64_t i = 0; i < nO; ++i)
    oBits[size_t(i)] = floatTo16(m.dtype, float(o[size_t(i)]));

  // Device buffers.
  DeviceBuffer dq, dk, dvBuf, dOBuf, oBuf, lseBuf, cuQ, cuK, workspace;
  StatusOr<size_t> wsBytes = size_t(0);
  AttentionBackwardArgs args = AttentionBackwardArgs::fromMetadata(m);
  args.sequences = sequences;
  args.maxSeqQ = packed.maxQ;
  args.maxSeqKV = packed.maxK;
  Status s = Status::success();
  auto alloc = [&](DeviceBuffer &out, size_t bytes) {
    if (!s.ok())
      return;
    StatusOr<DeviceBuffer> buf =
        DeviceBuffer::allocate(std::max<size_t>(bytes, 1));
    if (buf.ok())
      out = std::move(*buf);
    else
      s = buf.status();
  };
  auto upload = [&](DeviceBuffer &buf, const void *data, size_t bytes) {
    if (s.ok())
      s = buf.upload(data, bytes);
  };
  alloc(dq, size_t(nQ) * 2);
  alloc(dk, size_t(nK) * 2);
  alloc(dvBuf, size_t(nV) * 2);
  alloc(dOBuf, size_t(nO) * 2);
  alloc(oBuf, size_t(nO) * 2);
  alloc(lseBuf, size_t(nLSE) * 4);
  alloc(cuQ, packed.cuQ.size() * 4);
  alloc(cuK, packed.cuK.size() * 4);
  upload(dq, qBits.data(), qBits.size() * 2);
  upload(dk, kBits.data(), kBits.size() * 2);
  upload(dvBuf, vBits.data(), vBits.size() * 2);
  upload(dOBuf, dOBits.data(), dOBits.size() * 2);
  upload(oBuf, oBits.data(), oBits.size() * 2);
  upload(lseBuf, lse.data(), lse.size() * 4);
  upload(cuQ, packed.cuQ.data(), packed.cuQ.size() * 4);
  upload(cuK, packed.cuK.data(), packed.cuK.size() * 4);
  for (int g = 0; g < 3; ++g) {
    grads[g].bytes = size_t(grads[g].ref.size()) * 2;
    alloc(grads[g].buffer, grads[g].bytes + kGuardBytes);
  }
  if (!s.ok())
    return fail(s.message());
  args.q = dq.ptr();
  args.k = dk.ptr();
  args.v = dvBuf.ptr();
  args.o = oBuf.ptr();
  args.dO = dOBuf.ptr();
  args.lse = lseBuf.ptr();
  args.dq = grads[0].buffer.ptr();
  args.dk = grads[1].buffer.ptr();
  args.dv = grads[2].buffer.ptr();
  args.cuSeqlensQ = cuQ.ptr();
  args.cuSeqlensK = cuK.ptr();
  const size_t workspaceBytes = attentionBackwardWorkspaceBytes(m, args);
  alloc(workspace, workspaceBytes);
  if (!s.ok())
    return fail(s.message());
  std::fprintf(stderr, "# workspace: %zu bytes\n", workspaceBytes);

  auto poison = [&] {
    Status p = workspace.fill(0xFF);
    for (Gradient &g : grads)
      if (p.ok())
        p = g.buffer.fill(0xFF);
    return p;
  };
  const double tol = gradientTolerance(m.dtype);
  double errs[3] = {INFINITY, INFINITY, INFINITY};
  // Downloads and compares; appends the problems.
  auto check = [&](std::string &problems) -> Status {
    auto note = [&](const std::string &p) {
      problems += (problems.empty() ? "" : "; ") + p;
    };
    for (int t = 0; t < 3; ++t) {
      Gradient &g = grads[t];
      std::vector<unsigned char> raw(g.bytes + kGuardBytes);
      FA_RT_RETURN_IF_ERROR(g.buffer.download(raw.data(), raw.size()));
      for (size_t i = 0; i < kGuardBytes; ++i)
        if (raw[g.bytes + i] != 0xFF) {
          note(std::string("write past the end of ") + g.label);
          break;
        }
      std::vector<uint16_t> bits(g.ref.size());
      std::memcpy(bits.data(), raw.data(), g.bytes);
      std::vector<double> got, want;
      int64_t padding = 0;
      for (size_t i = 0; i < bits.size(); ++i) {
        double x = from16(m.dtype, bits[i]);
        if (std::isnan(g.ref[i])) {
          padding += !std::isnan(x) && !(g.zeroPadding && x == 0.0);
          continue;
        }
        got.push_back(x);
        want.push_back(g.ref[i]);
      }
      if (padding)
        note(std::to_string(padding) + " " + g.label +
             " elements written in rows of no sequence");
      double err = gradientError(got, want);
      errs[t] = errs[t] == INFINITY ? err : std::max(errs[t], err);
      if (!(err <= tol)) {
        char buf[96];
        std::snprintf(buf, sizeof buf, "err_%s %.3e > %.0e", g.label, err, tol);
        note(buf);
      }
    }
    return Status::success();
  };

  std::string problems;
  StatusOr<double> medianMs = checkAndTime(
      opt, "pre + main + post", poison,
      [&] { return attentionBackward(kernel, args, workspace.ptr()); }, check,
      problems);
  if (!medianMs.ok())
    return fail(medianMs.status().message());
  std::printf("%s %s err_dq=%.3e err_dk=%.3e err_dv=%.3e sequences=%lld",
              problems.empty() ? "PASS" : "FAIL", name.c_str(), errs[0],
              errs[1], errs[2], static_cast<long long>(sequences));
  return finishVerdict(problems, *medianMs, flops, opt);
}

} // namespace fa::check
