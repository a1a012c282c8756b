//===- BackwardRowKernels.h - The backward's pre and post kernels -*- C++ -*-===//

#ifndef FA_LIB_CONVERSION_BACKWARDROWKERNELS_H
#define FA_LIB_CONVERSION_BACKWARDROWKERNELS_H

#include "KernelConfig.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
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

/// NAME_pre (o, do[, dlse], delta, dq_acc): the ops of the tiled backward
/// `func` before its `forall` (fa-tile-attention-grad: delta = rowsum(dO *
/// O), less dLSE with grad_lse, and dQ's zeroed f32 accumulator), lowered as
/// they are into a row kernel. Its arguments are the two or three tensors
/// those ops read, in operand order, and the two the forall reads from them,
/// in order of definition.
LogicalResult emitBackwardPreKernel(OpBuilder &b, gpu::GPUModuleOp module,
                                    func::FuncOp func, scf::ForallOp forall,
                                    const AttentionKernelConfig &config);
/// NAME_post (dq_acc, dq): the ops after the forall (dQ's cast, and its
/// scale where fa-tile-attention-grad left it out of dS), as a row kernel
/// from the forall's result they read to the tensor the function returns.
LogicalResult emitBackwardPostKernel(OpBuilder &b, gpu::GPUModuleOp module,
                                     func::FuncOp func, scf::ForallOp forall,
                                     const AttentionKernelConfig &config);

} // namespace fa
} // namespace mlir

#endif // FA_LIB_CONVERSION_BACKWARDROWKERNELS_H
