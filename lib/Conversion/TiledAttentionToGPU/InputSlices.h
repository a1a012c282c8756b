//===- InputSlices.h - The tiled forward's inputs, traced --------*- C++
//-*-===//
//
// Which function argument (and which slice of it) each tile of q / k / v is
// cut from: the GPU tile level makes them the kernel's first arguments.
//
//===----------------------------------------------------------------------===//

#ifndef FA_CONVERSION_TILEDATTENTIONTOGPU_INPUTSLICES_H
#define FA_CONVERSION_TILEDATTENTIONTOGPU_INPUTSLICES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"

namespace mlir {
namespace fa {

/// The attention's inputs, q, k, v: the kernel's first arguments whatever
/// the function's are (in another order, or one tensor for several).
constexpr unsigned kNumInputs = 3;

/// Which input each slice of a function argument is, and the inputs' types.
/// Packed sequences (varlen) add the function arguments that the q and k
/// slices' rows are read from (cu_seqlens_q, cu_seqlens_k).
struct InputSlices {
  DenseMap<Operation *, unsigned> roles;
  SmallVector<Type, kNumInputs> types;
  SmallVector<BlockArgument, 2> sequenceStarts;
};

/// Traces the q / k / v operands of every tile op (through its padding) to
/// the slice of a function argument each reads, and the rows of the q and k
/// slices to the 1-D function arguments they are loaded from (varlen).
FailureOr<InputSlices> traceInputSlices(func::FuncOp func);

/// Packed sequences: the function arguments (cu_seqlens_q, cu_seqlens_k)
/// that the rows of the slices of role 0 (queries) and role 1 (keys) in
/// `roles` are loaded from; empty when no row is loaded, an error (named
/// for `pass`) when they are not one argument each.
FailureOr<SmallVector<BlockArgument, 2>>
traceSequenceStarts(func::FuncOp func,
                    const DenseMap<Operation *, unsigned> &roles,
                    StringRef pass);

} // namespace fa
} // namespace mlir

#endif // FA_CONVERSION_TILEDATTENTIONTOGPU_INPUTSLICES_H
