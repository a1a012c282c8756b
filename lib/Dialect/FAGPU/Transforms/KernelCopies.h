//===- KernelCopies.h - The shared-memory copies of a kernel ----*- C++ -*-===//
//
// What fagpu-warp-specialize turns into TMA loads: the kernel's copies to
// shared tiles, once per tile (Q) or in its KV loops (K, V), and where each
// reads.
//
//===----------------------------------------------------------------------===//

#ifndef FA_LIB_DIALECT_FAGPU_TRANSFORMS_KERNELCOPIES_H
#define FA_LIB_DIALECT_FAGPU_TRANSFORMS_KERNELCOPIES_H

#include "fa/Dialect/FAGPU/IR/FAGPU.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <string>

namespace mlir {
namespace fagpu {

/// Where a copy reads: kernel argument `arg` at [outer..., row].
struct CopySource {
  BlockArgument arg;
  SmallVector<Value> outer; // the subview's leading offsets
};

/// The kernel's copies, as this pass needs them.
struct KernelCopies {
  SmallVector<CopyToSharedOp> once;  // before the loops (Q)
  SmallVector<scf::ForOp> loops;     // top-level loops that copy
  SmallVector<AllocSharedOp> looped; // tiles copied in loops, in order
};

/// The kernel argument and matrix that `rows` (a view of rows [0, limit)
/// of one matrix) is, as TMA addresses it: a unit-stride subview of whole
/// rows of a dense argument, the limit (if any) its row count. With `body`, the
/// matrix's offsets must be computed there or at the kernel's entry (a
/// producer computes them too). Else failure and `why` (a phrase).
FailureOr<CopySource> getRowSource(Value rows, Value limit, Block *body,
                                   std::string &why);

/// The row-slice source of `copy`, or an error on the copy. `body` is the
/// block of the copies made once per tile.
FailureOr<CopySource> getCopySource(CopyToSharedOp copy, Block &body);

/// A new last parameter of `kernel`: a tensor map of argument `arg` with
/// boxes of `rows` x `rowBytes` (a swizzle span: the tiles' swizzle, which
/// the runtime encodes from the box), marked `fagpu.tensor_map_of` = its
/// number (the runtime encodes it from that tensor). Null if it cannot be
/// added.
Value addTensorMapParameter(gpu::GPUFuncOp kernel, BlockArgument arg,
                            int64_t rows, int64_t rowBytes);

/// The copies of `kernel`: those made once in `onceBlock` (the kernel's
/// entry, or a persistent kernel's tile loop body) and those of the loops
/// in `loopBlock` (the same block, or the body of a loop in it that runs
/// the copying loops again and again: the backward's loop over the query
/// heads of a KV head), or an error on the first one fagpu-warp-specialize
/// cannot take.
FailureOr<KernelCopies> collectKernelCopies(gpu::GPUFuncOp kernel,
                                            Block &onceBlock, Block &loopBlock);

/// The ops inside `loop` that compute `values` (those defined in it and
/// what they hang on inside it): what a producer clones to recompute them
/// from the induction variable.
SetVector<Operation *> sliceInLoop(scf::ForOp loop, ValueRange values);

/// Whether `op` loads from an argument of `entry` (the kernel's) that the
/// kernel only reads (loads and sizes): both sides of a warp split read the
/// same values there (the offsets of packed sequences, cu_seqlens).
bool readsReadOnlyArgument(Operation *op, Block &entry);

/// The loop of `block` whose body holds loops that copy to shared tiles
/// (the backward's query-head loop), if any.
scf::ForOp findLoopOfCopyingLoops(Block &block);

/// The consumer side of one KV loop (its ring counter the last iteration
/// argument): wait for each copied tile's stage (`fullIndex`) just before
/// its first use, and release it (`emptyIndex`) after its last use.
void consumeRingTiles(OpBuilder &b, scf::ForOp loop, ArrayRef<Value> rings,
                      Value barriers, int64_t depth,
                      function_ref<Value(int64_t, Value)> fullIndex,
                      function_ref<Value(int64_t, Value)> emptyIndex);

} // namespace fagpu
} // namespace mlir

#endif // FA_LIB_DIALECT_FAGPU_TRANSFORMS_KERNELCOPIES_H
