//===- Attention.h - Launching attention kernels ----------------*- C++ -*-===//
//
// attentionForward() / attentionBackward() validate a call against the
// kernel's metadata and launch it (the backward: its three kernels). Validation
// is pure host code (it never touches the driver), so a bad call returns an
// error Status and never launches anything.
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUNTIME_ATTENTION_H
#define FA_RUNTIME_ATTENTION_H

#include "fa/Runtime/Kernel.h"
#include "fa/Runtime/KernelParams.h"
#include "fa/Runtime/Limits.h"
#include "fa/Runtime/Metadata.h"
#include "fa/Runtime/Status.h"

#include <cuda.h>

#include <array>
#include <cstdint>
#include <vector>

namespace fa::rt {

/// The tensors and problem description of one forward call. Strides are in
/// elements. Tensors: q [B,Hq,Nq,D], k [B,Hkv,Nk,D], v [B,Hkv,Nk,Dv],
/// o [B,Hq,Nq,Dv] (all of `dtype`), lse [B,Hq,Nq] (f32).
struct AttentionArgs {
  CUdeviceptr q = 0, k = 0, v = 0, o = 0, lse = 0;
  DType dtype = DType::BF16;
  /// FP8 (dtype E4M3): O's element type (BF16 or F16; other dtypes write O
  /// in their own), and the factors that dequantize q, k and v: dense f32
  /// [batch, heads_kv] device arrays, positive (query head h takes KV head
  /// h / (heads_q / heads_kv)'s). Null for other dtypes.
  DType outDtype = DType::BF16;
  CUdeviceptr qDescale = 0, kDescale = 0, vDescale = 0;
  DType outputDtype() const { return dtype == DType::E4M3 ? outDtype : dtype; }

  int64_t batch = 0, headsQ = 0, headsKV = 0, seqQ = 0, seqKV = 0, headDim = 0,
          headDimV = 0;

  std::array<int64_t, 4> strideQ{}, strideK{}, strideV{}, strideO{};
  std::array<int64_t, 3> strideLSE{};

  double scale = 0.0;
  bool causal = false;
  int64_t windowLeft = -1, windowRight = -1; ///< Negative: unbounded.
  double softcap = 0.0;                      ///< 0: none.

  /// Packed sequences (a varlen kernel): batch 1, seqQ / seqKV the rows of
  /// the packed tensors, sequence b owning query rows [cuSeqlensQ[b],
  /// cuSeqlensQ[b + 1]) and key rows [cuSeqlensK[b], cuSeqlensK[b + 1])
  /// (int32 device arrays of sequences + 1 non-decreasing offsets, the last
  /// at most seqQ / seqKV), maxSeqQ the longest query sequence. The kernel
  /// trusts the offsets (reading them would cost a synchronisation): rows
  /// outside every sequence are neither read into a result nor written, and
  /// key/value rows after the last sequence must hold finite values.
  CUdeviceptr cuSeqlensQ = 0, cuSeqlensK = 0;
  int64_t sequences = 0, maxSeqQ = 0;

  /// Sets every stride to that of a dense row-major tensor of its shape.
  void setContiguousStrides();
  /// Shapes, dtype and flags from `metadata`, contiguous strides, null
  /// pointers (the caller fills those in).
  static AttentionArgs fromMetadata(const KernelMetadata &metadata);
};

/// Checks `args` against a forward kernel's metadata without touching the
/// driver: kernel kind, dtype, positive shapes, Hq % Hkv, per-tensor element
/// counts (at most 2^31-1), shapes and flags equal to the metadata's, non-null
/// pointers (lse only if the kernel takes it), 16-byte alignment of q/k/v/o
/// and 4-byte alignment of lse, dense row-major strides, and outputs that do
/// not overlap other tensors.
Status validateAttentionForward(const KernelMetadata &metadata,
                                const AttentionArgs &args);

/// Validates, then launches the kernel on `stream` (asynchronously; use
/// synchronize() or an Event to wait), its parameters from
/// forwardKernelParams() with the driver's tensor map encoder. Nothing is
/// launched on error (an encoding failure names the parameter).
Status attentionForward(const Kernel &kernel, const AttentionArgs &args,
                        CUstream stream = nullptr);

/// The parameters attentionForward() passes for `args`, in the kernel's
/// `args` order: the device pointers, and each `tmap_<x>` a descriptor of
/// tensor x encoded with `encode` (buildKernelParams()).
StatusOr<KernelParams> forwardKernelParams(const KernelMetadata &metadata,
                                           const AttentionArgs &args,
                                           TensorMapEncodeFn encode);

/// Floating-point operations of one forward pass: the two matrix products,
/// 2*B*Hq*Nq*Nk*D for S = Q K^T and 2*B*Hq*Nq*Nk*Dv for O = P V (that is
/// 4*B*Hq*Nq*Nk*D when D == Dv), halved for causal masking when Nq == Nk.
/// The single place this convention is defined; every TFLOP/s figure uses it.
double attentionForwardFlops(int64_t batch, int64_t headsQ, int64_t seqQ,
                             int64_t seqKV, int64_t headDim, int64_t headDimV,
                             bool causal);
double attentionForwardFlops(const KernelMetadata &metadata);

//===----------------------------------------------------------------------===//
// Backward
//===----------------------------------------------------------------------===//

/// The tensors and problem description of one backward call. Strides are in
/// elements. Inputs: q [B,Hq,Nq,D], k [B,Hkv,Nk,D], v [B,Hkv,Nk,Dv], o and dO
/// [B,Hq,Nq,Dv] (all of `dtype`; o from the forward), lse [B,Hq,Nq] (f32,
/// natural log, from the forward). Outputs (of `dtype`, overwritten): dq as
/// q, dk as k, dv as v.
struct AttentionBackwardArgs {
  CUdeviceptr q = 0, k = 0, v = 0, o = 0, dO = 0, lse = 0;
  /// The gradient of lse (f32, dense, lse's shape): given to a kernel set
  /// compiled with grad_lse (its pre kernel takes `dlse`), 0 for others.
  CUdeviceptr dlse = 0;
  CUdeviceptr dq = 0, dk = 0, dv = 0;
  DType dtype = DType::BF16;

  int64_t batch = 0, headsQ = 0, headsKV = 0, seqQ = 0, seqKV = 0, headDim = 0,
          headDimV = 0;

  std::array<int64_t, 4> strideQ{}, strideK{}, strideV{}, strideO{}, strideDO{},
      strideDQ{}, strideDK{}, strideDV{};
  std::array<int64_t, 3> strideLSE{};

  double scale = 0.0;
  bool causal = false;
  int64_t windowLeft = -1, windowRight = -1; ///< Negative: unbounded.
  double softcap = 0.0;                      ///< 0: none.

  /// Packed sequences (a varlen backward), as AttentionArgs has them, and
  /// maxSeqKV the longest key sequence (the main kernel's grid). The dQ,
  /// dK and dV rows outside every sequence are left as they are.
  CUdeviceptr cuSeqlensQ = 0, cuSeqlensK = 0;
  int64_t sequences = 0, maxSeqQ = 0, maxSeqKV = 0;

  /// Sets every stride to that of a dense row-major tensor of its shape.
  void setContiguousStrides();
  /// Shapes, dtype and flags from `metadata`, contiguous strides, null
  /// pointers (the caller fills those in).
  static AttentionBackwardArgs fromMetadata(const KernelMetadata &metadata);
};

/// Alignment of the backward workspace and of each piece in it.
constexpr size_t kWorkspaceAlignment = 256;

/// Where the backward's f32 scratch tensors lie in its workspace: delta
/// [B,Hq,Nq] at deltaOffset, dq_acc [B,Hq,Nq,D] at dqAccOffset, each piece
/// padded to kWorkspaceAlignment bytes. All zero for sizes validation
/// rejects (more than 2^31-1 elements).
struct BackwardWorkspaceLayout {
  size_t deltaOffset = 0, deltaBytes = 0;
  size_t dqAccOffset = 0, dqAccBytes = 0;
  /// A deterministic backward's dq_turns (i32 [B, Hq, ceil(Nq / block_q)]).
  size_t dqTurnsOffset = 0, dqTurnsBytes = 0;
  size_t totalBytes = 0;
};
BackwardWorkspaceLayout backwardWorkspaceLayout(const KernelMetadata &metadata);

/// Bytes of device memory attentionBackward() needs as its workspace (delta
/// and dq_acc, f32, 256-byte aligned pieces); the caller allocates it
/// (256-byte aligned, as cuMemAlloc returns) and may reuse it between calls
/// on one stream. Its contents need not be initialised.
size_t attentionBackwardWorkspaceBytes(const KernelMetadata &metadata);
/// The same for call `args` (a varlen kernel's workspace has the call's
/// rows); 0 when the call's shape is invalid (validation says why).
size_t attentionBackwardWorkspaceBytes(const KernelMetadata &metadata,
                                       const AttentionBackwardArgs &args);

/// Checks `args` against a backward kernel's metadata without touching the
/// driver, with the rigor of validateAttentionForward(): kernel kind, dtype,
/// positive shapes, Hq % Hkv, per-tensor element counts, shapes and flags
/// equal to the metadata's (dk/dv [B,Hkv,Nk,*]), non-null 16-byte aligned
/// pointers (lse: 4), dense row-major strides, and outputs dq/dk/dv that do
/// not overlap any other tensor.
Status validateAttentionBackward(const KernelMetadata &metadata,
                                 const AttentionBackwardArgs &args);
/// The same, and the workspace: non-null, kWorkspaceAlignment-aligned, not
/// overlapping any tensor.
Status validateAttentionBackward(const KernelMetadata &metadata,
                                 const AttentionBackwardArgs &args,
                                 CUdeviceptr workspace);

/// Validates (with the workspace), then launches pre_entry, entry and
/// post_entry on `stream` in that order (asynchronously), each with its
/// parameters in its `args` order. Nothing is launched on error (including a
/// parameter name the runtime does not know).
Status attentionBackward(const Kernel &kernel,
                         const AttentionBackwardArgs &args,
                         CUdeviceptr workspace, CUstream stream = nullptr);

/// The parameters attentionBackward() passes to each launch, in launch order
/// (pre, main, post), the scratch tensors delta and dq_acc in `workspace`.
StatusOr<std::vector<KernelParams>>
backwardKernelParams(const KernelMetadata &metadata,
                     const AttentionBackwardArgs &args, CUdeviceptr workspace,
                     TensorMapEncodeFn encode, TensorMapCache *cache = nullptr);

/// Backward FLOPs = kBackwardFlopsFactor x attentionForwardFlops() (five
/// matrix products instead of two), the convention of FlashAttention's
/// benchmarks. Every backward TFLOP/s figure uses it.
constexpr double kBackwardFlopsFactor = 2.5;
double attentionBackwardFlops(const KernelMetadata &metadata);

} // namespace fa::rt

#endif // FA_RUNTIME_ATTENTION_H
