//===- Reference.cpp - fp64 CPU reference for attention -------------------===//
//
// See include/fa/Reference/Reference.h for the semantics. The implementation
// works one query row at a time; the keys visible to a row form a contiguous
// range (visibleKeyRange), so masked keys are simply never visited.
//
//===----------------------------------------------------------------------===//

#include "fa/Reference/Reference.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <limits>
#include <vector>

namespace fa::ref {

namespace {

/// dot(a, b) over n contiguous elements. Four partial sums break the
/// floating-point dependency chain (about 4x faster than a single accumulator
/// without -ffast-math); the result differs from a sequential sum only by
/// rounding.
double dot(const double *a, const double *b, int64_t n) {
  double acc0 = 0.0, acc1 = 0.0, acc2 = 0.0, acc3 = 0.0;
  int64_t x = 0;
  for (; x + 4 <= n; x += 4) {
    acc0 += a[x] * b[x];
    acc1 += a[x + 1] * b[x + 1];
    acc2 += a[x + 2] * b[x + 2];
    acc3 += a[x + 3] * b[x + 3];
  }
  for (; x < n; ++x)
    acc0 += a[x] * b[x];
  return (acc0 + acc1) + (acc2 + acc3);
}

/// y += alpha * x over n contiguous elements.
void axpy(double *y, double alpha, const double *x, int64_t n) {
  for (int64_t e = 0; e < n; ++e)
    y[e] += alpha * x[e];
}

/// Aborts with a message if the problem is invalid or a required pointer is
/// null. The reference is only used by tests, where silently computing on a
/// bad description would be worse than stopping.
void checkOrDie(const char *fn, const AttentionShape &shape,
                const AttentionParams &params,
                std::initializer_list<const void *> required) {
  std::string msg = validate(shape, params);
  if (msg.empty())
    for (const void *ptr : required)
      if (!ptr)
        msg = "a required pointer argument is null";
  if (msg.empty())
    return;
  std::fprintf(stderr, "fa::ref::%s: %s\n", fn, msg.c_str());
  std::abort();
}

} // namespace

double defaultScale(const AttentionShape &shape) {
  return 1.0 / std::sqrt(static_cast<double>(shape.headDim));
}

bool isVisible(const AttentionShape &shape, const AttentionParams &params,
               int64_t i, int64_t j) {
  if (i < 0 || i >= shape.seqQ || j < 0 || j >= shape.seqKV)
    return false;
  // Offset of key j from the key aligned with query i (bottom-right
  // alignment). Small for in-range i, j, so nothing below can overflow.
  const int64_t d = j - (i + (shape.seqKV - shape.seqQ));
  if (params.causal && d > 0)
    return false;
  if (params.window) {
    const auto [left, right] = *params.window;
    if (left >= 0 && -d > left)
      return false;
    if (right >= 0 && d > right)
      return false;
  }
  return true;
}

std::pair<int64_t, int64_t> visibleKeyRange(const AttentionShape &shape,
                                            const AttentionParams &params,
                                            int64_t i) {
  if (i < 0 || i >= shape.seqQ || shape.seqKV <= 0)
    return {0, 0};
  const int64_t diag = i + (shape.seqKV - shape.seqQ);
  int64_t first = 0, last = shape.seqKV; // half-open [first, last)
  if (params.causal)
    last = std::min(last, diag + 1);
  if (params.window) {
    const auto [left, right] = *params.window;
    // j >= diag - left; written so that huge bounds cannot overflow.
    if (left >= 0 && left < diag - first)
      first = diag - left;
    // j <= diag + right, i.e. j < diag + right + 1.
    if (right >= 0 && right < last - 1 - diag)
      last = diag + right + 1;
  }
  if (first >= last)
    return {0, 0};
  return {first, last};
}

std::string validate(const AttentionShape &shape,
                     const AttentionParams &params) {
  const std::pair<const char *, int64_t> dims[] = {
      {"batch", shape.batch},      {"headsQ", shape.headsQ},
      {"headsKV", shape.headsKV},  {"seqQ", shape.seqQ},
      {"seqKV", shape.seqKV},      {"headDim", shape.headDim},
      {"headDimV", shape.headDimV}};
  for (const auto &[name, value] : dims)
    if (value <= 0)
      return std::string(name) + " must be positive, got " +
             std::to_string(value);
  if (shape.headsQ % shape.headsKV != 0)
    return "headsQ (" + std::to_string(shape.headsQ) +
           ") must be a multiple of headsKV (" + std::to_string(shape.headsKV) +
           ")";
  // Written as !(x > 0) so that NaN is rejected too.
  if (!(params.scale > 0.0) || !std::isfinite(params.scale))
    return "scale must be positive and finite, got " +
           std::to_string(params.scale);
  if (params.softcap &&
      (!(*params.softcap > 0.0) || !std::isfinite(*params.softcap)))
    return "softcap must be positive and finite when set, got " +
           std::to_string(*params.softcap);
  return "";
}

int64_t numelQ(const AttentionShape &s) {
  return s.batch * s.headsQ * s.seqQ * s.headDim;
}
int64_t numelK(const AttentionShape &s) {
  return s.batch * s.headsKV * s.seqKV * s.headDim;
}
int64_t numelV(const AttentionShape &s) {
  return s.batch * s.headsKV * s.seqKV * s.headDimV;
}
int64_t numelO(const AttentionShape &s) {
  return s.batch * s.headsQ * s.seqQ * s.headDimV;
}
int64_t numelLSE(const AttentionShape &s) {
  return s.batch * s.headsQ * s.seqQ;
}

void attentionForward(const AttentionShape &shape,
                      const AttentionParams &params, const double *q,
                      const double *k, const double *v, double *o,
                      double *lse) {
  checkOrDie("attentionForward", shape, params, {q, k, v, o});
  const int64_t nq = shape.seqQ, nk = shape.seqKV;
  const int64_t d = shape.headDim, dv = shape.headDimV;
  const int64_t group = shape.headsQ / shape.headsKV;
  const double negInf = -std::numeric_limits<double>::infinity();

  std::vector<double> s(nk); // scores of one query row
  for (int64_t b = 0; b < shape.batch; ++b) {
    for (int64_t h = 0; h < shape.headsQ; ++h) {
      const int64_t bh = b * shape.headsQ + h;
      const int64_t bhkv = b * shape.headsKV + h / group;
      const double *qh = q + bh * nq * d;
      const double *kh = k + bhkv * nk * d;
      const double *vh = v + bhkv * nk * dv;
      double *oh = o + bh * nq * dv;
      double *lseh = lse ? lse + bh * nq : nullptr;

      for (int64_t i = 0; i < nq; ++i) {
        const double *qi = qh + i * d;
        double *oi = oh + i * dv;
        std::fill(oi, oi + dv, 0.0);
        const auto [first, last] = visibleKeyRange(shape, params, i);
        if (first >= last) { // no visible key
          if (lseh)
            lseh[i] = negInf;
          continue;
        }
        // Scores and their maximum.
        double m = negInf;
        for (int64_t j = first; j < last; ++j) {
          double sij = params.scale * dot(qi, kh + j * d, d);
          if (params.softcap)
            sij = *params.softcap * std::tanh(sij / *params.softcap);
          s[j] = sij;
          m = std::max(m, sij);
        }
        // O_i = sum_j exp(s_ij - m) v_j / sum_j exp(s_ij - m).
        double sum = 0.0;
        for (int64_t j = first; j < last; ++j) {
          const double p = std::exp(s[j] - m);
          sum += p;
          axpy(oi, p, vh + j * dv, dv);
        }
        const double inv = 1.0 / sum;
        for (int64_t e = 0; e < dv; ++e)
          oi[e] *= inv;
        if (lseh)
          lseh[i] = m + std::log(sum);
      }
    }
  }
}

void attentionBackward(const AttentionShape &shape,
                       const AttentionParams &params, const double *q,
                       const double *k, const double *v, const double *o,
                       const double *dO, const double *lse, double *dq,
                       double *dk, double *dv, const double *dlse) {
  checkOrDie("attentionBackward", shape, params,
             {q, k, v, o, dO, lse, dq, dk, dv});
  const int64_t nq = shape.seqQ, nk = shape.seqKV;
  const int64_t d = shape.headDim, dV = shape.headDimV;
  const int64_t group = shape.headsQ / shape.headsKV;

  std::fill(dq, dq + numelQ(shape), 0.0);
  std::fill(dk, dk + numelK(shape), 0.0);
  std::fill(dv, dv + numelV(shape), 0.0);

  for (int64_t b = 0; b < shape.batch; ++b) {
    for (int64_t h = 0; h < shape.headsQ; ++h) {
      const int64_t bh = b * shape.headsQ + h;
      const int64_t bhkv = b * shape.headsKV + h / group;
      const double *qh = q + bh * nq * d;
      const double *kh = k + bhkv * nk * d;
      const double *vh = v + bhkv * nk * dV;
      const double *oh = o + bh * nq * dV;
      const double *dOh = dO + bh * nq * dV;
      const double *lseh = lse + bh * nq;
      double *dqh = dq + bh * nq * d;
      double *dkh = dk + bhkv * nk * d; // shared by the query heads of a group
      double *dvh = dv + bhkv * nk * dV;

      for (int64_t i = 0; i < nq; ++i) {
        const auto [first, last] = visibleKeyRange(shape, params, i);
        if (first >= last) // no visible key: no gradient
          continue;
        const double *qi = qh + i * d;
        const double *dOi = dOh + i * dV;
        const double lsei = lseh[i];
        // D_i = dO_i . O_i, less dLSE_i: dLSE_i / dS_ij = P_ij.
        const double di =
            dot(dOi, oh + i * dV, dV) - (dlse ? dlse[bh * nq + i] : 0.0);
        double *dqi = dqh + i * d;

        for (int64_t j = first; j < last; ++j) {
          const double *kj = kh + j * d;
          const double *vj = vh + j * dV;
          // Recompute the score and P_ij = exp(s_ij - LSE_i).
          double sij = params.scale * dot(qi, kj, d);
          double capGrad = 1.0; // d(capped score) / d(scaled score)
          if (params.softcap) {
            const double t = std::tanh(sij / *params.softcap);
            sij = *params.softcap * t;
            capGrad = 1.0 - t * t;
          }
          const double p = std::exp(sij - lsei);
          const double dp = dot(dOi, vj, dV);             // dP_ij = dO_i . v_j
          const double ds = p * (dp - di);                // dS_ij
          const double dsRaw = ds * capGrad;              // through the softcap
          axpy(dqi, params.scale * dsRaw, kj, d);         // dQ = scale dS K
          axpy(dkh + j * d, params.scale * dsRaw, qi, d); // dK = scale dS^T Q
          axpy(dvh + j * dV, p, dOi, dV);                 // dV = P^T dO
        }
      }
    }
  }
}

double relativeL2Error(const double *out, const double *ref, int64_t n) {
  const double inf = std::numeric_limits<double>::infinity();
  double diff2 = 0.0, ref2 = 0.0;
  for (int64_t e = 0; e < n; ++e) {
    if (std::isnan(out[e]))
      return inf;
    if (std::isfinite(ref[e]))
      ref2 += ref[e] * ref[e];
    if (out[e] == ref[e]) // also matches equal infinities
      continue;
    const double delta = out[e] - ref[e];
    if (!std::isfinite(delta)) // an unmatched infinity, or a NaN in ref
      return inf;
    diff2 += delta * delta;
  }
  const double diffNorm = std::sqrt(diff2);
  if (ref2 == 0.0)
    return diffNorm;
  return diffNorm / std::sqrt(ref2);
}

} // namespace fa::ref
