//===- Reference.h - fp64 CPU reference for attention -----------*- C++ -*-===//
//
// A small, dependency-free reference implementation of (Flash)Attention
// forward and backward in double precision. Every correctness test of the
// compiler compares against these functions, so they favour clarity over
// speed: plain loops over contiguous row-major memory, no blocking, no
// threads.
//
// Conventions
// -----------
// All tensors are dense and row-major (last dimension contiguous):
//   Q      [B, Hq,  Nq, D ]
//   K      [B, Hkv, Nk, D ]
//   V      [B, Hkv, Nk, Dv]
//   O, dO  [B, Hq,  Nq, Dv]
//   LSE    [B, Hq,  Nq]        (natural logarithm)
//   dQ has the shape of Q, dK of K, dV of V.
// Query head h reads KV head h / (Hq / Hkv) (grouped-query attention; Hkv == Hq
// is ordinary multi-head attention, Hkv == 1 is multi-query attention).
//
// Per (b, h), with s_ij the score of query i against key j:
//   s_ij = scale * dot(q_i, k_j)
//   s_ij = softcap * tanh(s_ij / softcap)            (only if softcap is set)
//   P_ij = exp(s_ij - LSE_i) if key j is visible to query i, else 0
//   LSE_i = log(sum_{j visible} exp(s_ij))
//   O_i  = sum_j P_ij * v_j
// A query row with no visible key has O_i = 0, LSE_i = -infinity and receives
// and contributes no gradient.
//
//===----------------------------------------------------------------------===//

#ifndef FA_REFERENCE_REFERENCE_H
#define FA_REFERENCE_REFERENCE_H

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

namespace fa::ref {

/// Sizes of one attention problem. All fields must be positive and headsQ must
/// be a multiple of headsKV (see validate()).
struct AttentionShape {
  int64_t batch = 0;    ///< B
  int64_t headsQ = 0;   ///< Hq: number of query (and output) heads.
  int64_t headsKV = 0;  ///< Hkv: number of key/value heads; divides Hq.
  int64_t seqQ = 0;     ///< Nq: query sequence length.
  int64_t seqKV = 0;    ///< Nk: key/value sequence length.
  int64_t headDim = 0;  ///< D: head dimension of Q and K.
  int64_t headDimV = 0; ///< Dv: head dimension of V, O and dO.
};

/// Everything besides the tensors that determines the result.
struct AttentionParams {
  /// Softmax scale applied to q.k; callers normally pass defaultScale(shape),
  /// i.e. 1/sqrt(D). Must be positive and finite.
  double scale = 0.0;
  /// Causal masking, bottom-right aligned (see isVisible()).
  bool causal = false;
  /// Sliding window (left, right), bottom-right aligned (see isVisible()).
  /// A negative bound means unbounded on that side. Combines with `causal`
  /// by intersection.
  std::optional<std::pair<int64_t, int64_t>> window;
  /// Logit soft-capping: s = softcap * tanh(s / softcap), applied after the
  /// scale. Must be positive and finite when set.
  std::optional<double> softcap;
};

/// 1/sqrt(headDim), the usual softmax scale.
double defaultScale(const AttentionShape &shape);

/// Whether key j is visible to query i, both 0-based within one (b, h).
/// Masks are bottom-right aligned, as in FlashAttention 2.1 and later: with
/// shift = seqKV - seqQ, query i is aligned with key i + shift, and j is
/// visible iff 0 <= i < seqQ, 0 <= j < seqKV and
///   causal:       j <= i + shift
///   window(l, r): (l < 0 || j >= i + shift - l) &&
///                 (r < 0 || j <= i + shift + r)
/// (each condition only when the corresponding option is set). Never
/// overflows, even for bounds near INT64_MAX.
bool isVisible(const AttentionShape &shape, const AttentionParams &params,
               int64_t i, int64_t j);

/// The keys visible to query i always form one contiguous range; this returns
/// it as a half-open interval [first, last). The range is empty iff
/// first >= last (then it is returned as {0, 0}). Equivalent to isVisible():
/// j is visible iff first <= j < last.
std::pair<int64_t, int64_t> visibleKeyRange(const AttentionShape &shape,
                                            const AttentionParams &params,
                                            int64_t i);

/// Checks a problem description. Returns "" if it is valid, otherwise a
/// human-readable message naming the first problem found: a non-positive
/// dimension, headsQ not a multiple of headsKV, a scale that is not positive
/// and finite, or a softcap that is not positive and finite.
std::string validate(const AttentionShape &shape,
                     const AttentionParams &params);

/// Element counts of the tensors described above.
int64_t numelQ(const AttentionShape &shape);   ///< B*Hq*Nq*D
int64_t numelK(const AttentionShape &shape);   ///< B*Hkv*Nk*D
int64_t numelV(const AttentionShape &shape);   ///< B*Hkv*Nk*Dv
int64_t numelO(const AttentionShape &shape);   ///< B*Hq*Nq*Dv (also dO)
int64_t numelLSE(const AttentionShape &shape); ///< B*Hq*Nq

/// Attention forward. Writes O (numelO elements) and, if `lse` is not null,
/// LSE (numelLSE elements). Uses a numerically stable softmax (the row maximum
/// is subtracted before exponentiating), so large scores do not overflow.
/// Outputs must not alias inputs. If validate() fails, prints the message to
/// stderr and aborts.
void attentionForward(const AttentionShape &shape,
                      const AttentionParams &params, const double *q,
                      const double *k, const double *v, double *o, double *lse);

/// Attention backward. Given the forward inputs, the forward outputs `o` and
/// `lse` (as produced by attentionForward) and the output gradient `dO`,
/// overwrites dq, dk, dv with the gradients of sum(O * dO). P is recomputed
/// from LSE as P_ij = exp(s_ij - LSE_i); with D_i = dot(dO_i, O_i),
/// dP = dO . V^T and dS = P * (dP - D), the gradient is chained through the
/// softcap (dS *= 1 - tanh(s_raw / softcap)^2, s_raw being the scaled score
/// before capping) and then
///   dQ = scale * dS . K,   dK = scale * dS^T . Q,   dV = P^T . dO.
/// dK/dV of a KV head sum the contributions of all query heads of its group.
/// Rows without visible keys contribute nothing (their dQ row is 0).
/// With `dlse` (numelLSE elements) the loss is sum(O * dO) + sum(LSE *
/// dLSE): since dLSE_i / dS_ij = P_ij, D_i becomes D_i - dLSE_i.
/// Outputs must not alias inputs or each other. If validate() fails, prints
/// the message to stderr and aborts.
void attentionBackward(const AttentionShape &shape,
                       const AttentionParams &params, const double *q,
                       const double *k, const double *v, const double *o,
                       const double *dO, const double *lse, double *dq,
                       double *dk, double *dv, const double *dlse = nullptr);

/// Relative L2 error ||out - ref|| / ||ref|| over n elements.
///  - Returns +infinity if `out` contains a NaN, or if any difference is not
///    finite (e.g. an infinity in one array but not the other).
///  - Elements that compare equal (including equal infinities, such as the
///    -infinity LSE of fully masked rows) contribute zero difference; ||ref||
///    only sums finite elements of `ref`.
///  - If ||ref|| == 0, returns the absolute error ||out - ref||.
///  - Returns 0 for n <= 0.
double relativeL2Error(const double *out, const double *ref, int64_t n);

} // namespace fa::ref

#endif // FA_REFERENCE_REFERENCE_H
