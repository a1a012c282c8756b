//===- Launch.cpp - The C API's attention launches ------------------------===//
//
// faAttentionForward*, faAttentionBackward* and the backward's workspace
// size over the runtime's attentionForward / attentionBackward.
//
//===----------------------------------------------------------------------===//

#include "Handles.h"

#include "fa/Runtime/Attention.h"
#include "fa/Runtime/Quantize.h"

#include "llvm/ADT/STLFunctionalExtras.h"

#include <string>

using namespace fa;
using namespace fa::capi;

namespace {

/// The strides q, k, v, o and lse of either direction's C struct into
/// either direction's runtime arguments.
template <typename Args, typename Strides>
void copyCommonStrides(const Strides &strides, Args &args) {
  for (int i = 0; i < 4; ++i) {
    args.strideQ[i] = strides.q[i];
    args.strideK[i] = strides.k[i];
    args.strideV[i] = strides.v[i];
    args.strideO[i] = strides.o[i];
  }
  for (int i = 0; i < 3; ++i)
    args.strideLSE[i] = strides.lse[i];
}

/// What either direction's call says of its shape, packed sequences and
/// the tensors both directions take, into its runtime arguments.
template <typename Args, typename Call>
void copyCommonCall(const Call &call, Args &args) {
  args.batch = call.batch;
  args.seqQ = call.seqQ;
  args.seqKV = call.seqKV;
  args.setContiguousStrides();
  args.q = call.q;
  args.k = call.k;
  args.v = call.v;
  args.o = call.o;
  args.lse = call.lse;
  args.cuSeqlensQ = call.cuSeqlensQ;
  args.cuSeqlensK = call.cuSeqlensK;
  args.sequences = call.sequences;
  args.maxSeqQ = call.maxSeqQ;
}

/// What every workspace query checks: a backward kernel (of packed
/// sequences or not, as `varlen` says; else `otherKind`), a place for the
/// answer; then `needed(metadata)`, whose 0 is an error naming its text.
faStatus workspaceQuery(faKernel kernel, const char *what, bool varlen,
                        const char *otherKind, uint64_t *bytes,
                        llvm::function_ref<std::pair<uint64_t, std::string>(
                            const rt::KernelMetadata &)>
                            needed) {
  faStatus status = FA_SUCCESS;
  faKernel_ *k = kernelOfKind(kernel, rt::KernelKind::Backward, what, status);
  if (!k)
    return status;
  const rt::KernelMetadata &m = k->kernel.metadata();
  if (m.varlen != varlen)
    return fail(k, FA_ERROR_INVALID_ARGUMENT,
                std::string(what) + ": " + otherKind);
  if (!bytes)
    return fail(k, FA_ERROR_INVALID_ARGUMENT, "bytes is NULL");
  auto [size, problem] = needed(m);
  if (size == 0)
    return fail(k, FA_ERROR_INVALID_ARGUMENT,
                std::string(what) + ": " + problem);
  *bytes = size;
  return ok();
}

} // namespace

extern "C" {

faStatus faBackwardWorkspaceBytes(faKernel kernel, uint64_t *bytes) {
  return workspaceQuery(
      kernel, "faBackwardWorkspaceBytes", /*varlen=*/false,
      "a varlen kernel's workspace is the call's "
      "(faBackwardWorkspaceBytesVarlen)",
      bytes, [](const rt::KernelMetadata &m) {
        // 0 is how the runtime says the sizes are beyond what it supports;
        // a caller must not take it for "no workspace needed".
        return std::pair(rt::attentionBackwardWorkspaceBytes(m),
                         std::string("the kernel's sizes are beyond what the "
                                     "runtime supports (at most 2^31-1 "
                                     "elements per tensor)"));
      });
}

faStatus faAttentionForward(faKernel kernel, uint64_t q, uint64_t k, uint64_t v,
                            uint64_t o, uint64_t lse,
                            const faForwardStrides *strides, uint64_t stream) {
  faKernel_ *kh = liveKernel(kernel);
  // A runtime-shapes kernel has no shape of its own (0): the launch says so.
  const rt::KernelMetadata *m = kh ? &kh->kernel.metadata() : nullptr;
  return faAttentionForwardShape(kernel, m ? m->batch : 0, m ? m->seqQ : 0,
                                 m ? m->seqKV : 0, q, k, v, o, lse, strides,
                                 stream);
}

namespace {

/// One forward call: the kernel checked, the arguments of its shape (and,
/// for packed sequences, their offsets), `strides` (NULL: dense) and the
/// launch.
struct ForwardCall {
  const char *what;
  int64_t batch, seqQ, seqKV;
  uint64_t q, k, v, o, lse;
  uint64_t cuSeqlensQ = 0, cuSeqlensK = 0;
  int64_t sequences = 0, maxSeqQ = 0;
  uint64_t qDescale = 0, kDescale = 0, vDescale = 0; // FP8 kernels'
};

faStatus launchForward(faKernel kernel, const ForwardCall &call,
                       const faForwardStrides *strides, uint64_t stream) {
  faStatus status = FA_SUCCESS;
  faKernel_ *kh =
      kernelOfKind(kernel, rt::KernelKind::Forward, call.what, status);
  if (!kh)
    return status;
  auto args = rt::AttentionArgs::fromMetadata(kh->kernel.metadata());
  copyCommonCall(call, args);
  args.qDescale = call.qDescale;
  args.kDescale = call.kDescale;
  args.vDescale = call.vDescale;
  if (strides)
    copyCommonStrides(*strides, args);
  rt::Status s = rt::attentionForward(kh->kernel, args,
                                      reinterpret_cast<CUstream>(stream));
  if (!s.ok())
    return fail(kh, FA_ERROR_LAUNCH, s.message());
  return ok();
}

} // namespace

faStatus faAttentionForwardFP8(faKernel kernel, int64_t batch, int64_t seq_q,
                               int64_t seq_kv, uint64_t q, uint64_t k,
                               uint64_t v, uint64_t o, uint64_t lse,
                               uint64_t q_descale, uint64_t k_descale,
                               uint64_t v_descale,
                               const faForwardStrides *strides,
                               uint64_t stream) {
  faKernel_ *kh = liveKernel(kernel);
  const rt::KernelMetadata *m = kh ? &kh->kernel.metadata() : nullptr;
  if (m && !m->isFP8())
    return fail(kh, FA_ERROR_INVALID_ARGUMENT,
                std::string("faAttentionForwardFP8: the kernel takes ") +
                    rt::toString(m->dtype) +
                    " inputs, not e4m3 (faAttentionForward)");
  // 0: the kernel's own sizes (a static kernel's only).
  auto size = [&](int64_t given, int64_t own) {
    return given == 0 && m ? own : given;
  };
  ForwardCall call{"faAttentionForwardFP8",
                   size(batch, m ? m->batch : 0),
                   size(seq_q, m ? m->seqQ : 0),
                   size(seq_kv, m ? m->seqKV : 0),
                   q,
                   k,
                   v,
                   o,
                   lse};
  call.qDescale = q_descale;
  call.kDescale = k_descale;
  call.vDescale = v_descale;
  return launchForward(kernel, call, strides, stream);
}

faStatus faAttentionForwardVarlen(faKernel kernel, int64_t total_q,
                                  int64_t total_kv, int64_t sequences,
                                  int64_t max_seqlen_q, uint64_t q, uint64_t k,
                                  uint64_t v, uint64_t o, uint64_t lse,
                                  uint64_t cu_seqlens_q, uint64_t cu_seqlens_k,
                                  const faForwardStrides *strides,
                                  uint64_t stream) {
  return launchForward(kernel,
                       {"faAttentionForwardVarlen", 1, total_q, total_kv, q, k,
                        v, o, lse, cu_seqlens_q, cu_seqlens_k, sequences,
                        max_seqlen_q},
                       strides, stream);
}

faStatus faAttentionForwardShape(faKernel kernel, int64_t batch, int64_t seq_q,
                                 int64_t seq_kv, uint64_t q, uint64_t k,
                                 uint64_t v, uint64_t o, uint64_t lse,
                                 const faForwardStrides *strides,
                                 uint64_t stream) {
  return launchForward(
      kernel, {"faAttentionForward", batch, seq_q, seq_kv, q, k, v, o, lse},
      strides, stream);
}

faStatus faBackwardWorkspaceBytesShape(faKernel kernel, int64_t batch,
                                       int64_t seq_q, int64_t seq_kv,
                                       uint64_t *bytes) {
  return workspaceQuery(
      kernel, "faBackwardWorkspaceBytesShape", /*varlen=*/false,
      "a varlen kernel's workspace is faBackwardWorkspaceBytesVarlen's", bytes,
      [&](const rt::KernelMetadata &m) {
        auto args = rt::AttentionBackwardArgs::fromMetadata(m);
        args.batch = batch;
        args.seqQ = seq_q;
        args.seqKV = seq_kv;
        return std::pair(rt::attentionBackwardWorkspaceBytes(m, args),
                         "the shape (" + std::to_string(batch) + ", " +
                             std::to_string(seq_q) + ", " +
                             std::to_string(seq_kv) +
                             ") must be positive, with at most 2^31-1 "
                             "elements per tensor");
      });
}

faStatus faBackwardWorkspaceBytesVarlen(faKernel kernel, int64_t total_q,
                                        uint64_t *bytes) {
  return workspaceQuery(
      kernel, "faBackwardWorkspaceBytesVarlen", /*varlen=*/true,
      "not a varlen kernel (faBackwardWorkspaceBytes)", bytes,
      [&](const rt::KernelMetadata &m) {
        // The workspace has delta and dQ rows of every packed query row.
        rt::KernelMetadata call = m;
        call.batch = 1;
        call.seqQ = total_q;
        return std::pair(
            total_q > 0 ? rt::attentionBackwardWorkspaceBytes(call) : 0,
            "total_q = " + std::to_string(total_q) +
                " must be positive, with at most 2^31-1 elements per "
                "tensor");
      });
}

namespace {

/// One backward call: the kernel checked, the call's shape (dense: the
/// kernel's; packed sequences: their rows, count, longest and offsets),
/// the tensors, the workspace.
struct BackwardCall {
  const char *what;
  /// The call's shape (packed sequences: batch 1 and the packed rows).
  int64_t batch, seqQ, seqKV;
  int64_t sequences, maxSeqQ, maxSeqKV;
  uint64_t q, k, v, o, dout, lse, dlse, dq, dk, dv;
  uint64_t cuSeqlensQ, cuSeqlensK;
  uint64_t workspace;
};

faStatus launchBackward(faKernel kernel, const BackwardCall &call,
                        const faBackwardStrides *strides, uint64_t stream) {
  faStatus status = FA_SUCCESS;
  faKernel_ *kh =
      kernelOfKind(kernel, rt::KernelKind::Backward, call.what, status);
  if (!kh)
    return status;
  auto args = rt::AttentionBackwardArgs::fromMetadata(kh->kernel.metadata());
  copyCommonCall(call, args);
  args.maxSeqKV = call.maxSeqKV;
  args.dO = call.dout;
  args.dq = call.dq;
  args.dk = call.dk;
  args.dv = call.dv;
  args.dlse = call.dlse;
  if (strides) {
    copyCommonStrides(*strides, args);
    for (int i = 0; i < 4; ++i) {
      args.strideDO[i] = strides->dout[i];
      args.strideDQ[i] = strides->dq[i];
      args.strideDK[i] = strides->dk[i];
      args.strideDV[i] = strides->dv[i];
    }
  }
  rt::Status s = rt::attentionBackward(kh->kernel, args, call.workspace,
                                       reinterpret_cast<CUstream>(stream));
  if (!s.ok())
    return fail(kh, FA_ERROR_LAUNCH, s.message());
  return ok();
}

} // namespace

faStatus faAttentionBackward(faKernel kernel, uint64_t q, uint64_t k,
                             uint64_t v, uint64_t o, uint64_t dout,
                             uint64_t lse, uint64_t dq, uint64_t dk,
                             uint64_t dv, uint64_t workspace,
                             const faBackwardStrides *strides,
                             uint64_t stream) {
  // A runtime-shapes kernel has no shape of its own (0): the launch says so.
  faKernel_ *kh = liveKernel(kernel);
  const rt::KernelMetadata *m = kh ? &kh->kernel.metadata() : nullptr;
  return faAttentionBackwardShape(kernel, m ? m->batch : 0, m ? m->seqQ : 0,
                                  m ? m->seqKV : 0, q, k, v, o, dout, lse, dq,
                                  dk, dv, workspace, strides, stream);
}

faStatus faAttentionBackwardShape(faKernel kernel, int64_t batch, int64_t seq_q,
                                  int64_t seq_kv, uint64_t q, uint64_t k,
                                  uint64_t v, uint64_t o, uint64_t dout,
                                  uint64_t lse, uint64_t dq, uint64_t dk,
                                  uint64_t dv, uint64_t workspace,
                                  const faBackwardStrides *strides,
                                  uint64_t stream) {
  return launchBackward(kernel,
                        {"faAttentionBackward",
                         batch,
                         seq_q,
                         seq_kv,
                         0,
                         0,
                         0,
                         q,
                         k,
                         v,
                         o,
                         dout,
                         lse,
                         /*dlse=*/0,
                         dq,
                         dk,
                         dv,
                         0,
                         0,
                         workspace},
                        strides, stream);
}

faStatus faAttentionBackwardVarlen(
    faKernel kernel, int64_t total_q, int64_t total_kv, int64_t sequences,
    int64_t max_seqlen_q, int64_t max_seqlen_k, uint64_t q, uint64_t k,
    uint64_t v, uint64_t o, uint64_t dout, uint64_t lse, uint64_t dq,
    uint64_t dk, uint64_t dv, uint64_t cu_seqlens_q, uint64_t cu_seqlens_k,
    uint64_t workspace, const faBackwardStrides *strides, uint64_t stream) {
  return launchBackward(kernel,
                        {"faAttentionBackwardVarlen",
                         1,
                         total_q,
                         total_kv,
                         sequences,
                         max_seqlen_q,
                         max_seqlen_k,
                         q,
                         k,
                         v,
                         o,
                         dout,
                         lse,
                         /*dlse=*/0,
                         dq,
                         dk,
                         dv,
                         cu_seqlens_q,
                         cu_seqlens_k,
                         workspace},
                        strides, stream);
}

faStatus faAttentionBackwardCall(faKernel kernel, const faBackwardCall *c,
                                 const faBackwardStrides *strides,
                                 uint64_t stream) {
  faStatus status = FA_SUCCESS;
  faKernel_ *kh = kernelOfKind(kernel, rt::KernelKind::Backward,
                               "faAttentionBackwardCall", status);
  if (!kh)
    return status;
  if (!c)
    return fail(kh, FA_ERROR_INVALID_ARGUMENT,
                "faAttentionBackwardCall: call is NULL");
  // A kernel built for one shape: 0, 0, 0 asks for its own.
  const rt::KernelMetadata &m = kh->kernel.metadata();
  bool own = c->batch == 0 && c->seq_q == 0 && c->seq_kv == 0;
  return launchBackward(kernel,
                        {"faAttentionBackwardCall",
                         own ? m.batch : c->batch,
                         own ? m.seqQ : c->seq_q,
                         own ? m.seqKV : c->seq_kv,
                         c->sequences,
                         c->max_seqlen_q,
                         c->max_seqlen_k,
                         c->q,
                         c->k,
                         c->v,
                         c->o,
                         c->dout,
                         c->lse,
                         c->dlse,
                         c->dq,
                         c->dk,
                         c->dv,
                         c->cu_seqlens_q,
                         c->cu_seqlens_k,
                         c->workspace},
                        strides, stream);
}

faStatus faQuantizeWorkspaceBytes(faKernel kernel, uint64_t *bytes) {
  faStatus status = FA_SUCCESS;
  faKernel_ *k = kernelOfKind(kernel, rt::KernelKind::Quantize,
                              "faQuantizeWorkspaceBytes", status);
  if (!k)
    return status;
  if (!bytes)
    return fail(k, FA_ERROR_INVALID_ARGUMENT, "bytes is NULL");
  *bytes = rt::quantizeWorkspaceBytes(k->kernel.metadata());
  return ok();
}

faStatus faQuantize(faKernel kernel, uint64_t x, uint64_t out,
                    uint64_t descale, uint64_t workspace, uint64_t stream) {
  faStatus status = FA_SUCCESS;
  faKernel_ *k =
      kernelOfKind(kernel, rt::KernelKind::Quantize, "faQuantize", status);
  if (!k)
    return status;
  rt::Status s = rt::quantize(k->kernel, {x, out, descale}, workspace,
                              reinterpret_cast<CUstream>(stream));
  if (!s.ok())
    return fail(k, FA_ERROR_LAUNCH, s.message());
  return ok();
}

} // extern "C"
