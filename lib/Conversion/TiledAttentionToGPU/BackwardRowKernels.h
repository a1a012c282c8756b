//===- BackwardRowKernels.h - The backward's pre and post kernels -*- C++ -*-===//

#ifndef FA_LIB_CONVERSION_BACKWARDROWKERNELS_H
#define FA_LIB_CONVERSION_BACKWARDROWKERNELS_H

#include "KernelConfig.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Builders.h"

namespace mlir {
namespace fa {

/// The [B, heads, seq, dim] tensors and [B, Hq, Nq] rows the backward's
/// kernels take.
inline MemRefType backwardTensorType(const AttentionKernelConfig &c,
                                     int64_t heads, int64_t seq, int64_t dim,
                                     Type elt) {
  return MemRefType::get({c.batch, heads, seq, dim}, elt);
}
inline MemRefType backwardRowType(const AttentionKernelConfig &c, Type elt) {
  return MemRefType::get({c.batch, c.headsQ, c.seqQ}, elt);
}

/// NAME_pre (o, do, delta, dq_acc): delta = rowsum(dO * O), dq_acc = 0.
void emitBackwardPreKernel(OpBuilder &b, Location loc, gpu::GPUModuleOp module,
                           const AttentionKernelConfig &config);
/// NAME_post (dq_acc, dq): dq = cast(dq_acc).
void emitBackwardPostKernel(OpBuilder &b, Location loc,
                            gpu::GPUModuleOp module,
                            const AttentionKernelConfig &config);

} // namespace fa
} // namespace mlir

#endif // FA_LIB_CONVERSION_BACKWARDROWKERNELS_H
