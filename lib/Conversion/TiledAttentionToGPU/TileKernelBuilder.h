//===- TileKernelBuilder.h - Tiled attention ops onto GPU tiles -*- C++ -*-===//
//
// Carries the ops of a tiled attention (forward or backward, decomposed into
// tile-sized linalg ops) into a kernel at the GPU tile level, op by op:
// contractions become fagpu.mma, row reductions fagpu.reduce_rows, row
// broadcasts fagpu.expand_rows, linalg.index fagpu.tile_coords, tiles cut
// from the inputs shared tiles (2-D) or register tiles (1-D, per-row
// statistics), and results stores of register tiles. The passes that use it
// decide what the loops and block ids become.
//
//===----------------------------------------------------------------------===//

#ifndef FA_LIB_CONVERSION_TILEKERNELBUILDER_H
#define FA_LIB_CONVERSION_TILEKERNELBUILDER_H

#include "fa/Dialect/FAGPU/IR/FAGPU.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

#include <functional>

namespace mlir {
namespace fa {

/// A shared operand tile of `shape` in TMA's and WGMMA's widest swizzle
/// that its rows allow: 128 bytes, or 64 / 32 where a row is not a multiple
/// of 128 bytes (head dim 96: 192-byte rows).
inline fagpu::SharedTileType operandTileType(ArrayRef<int64_t> shape,
                                             Type element) {
  int64_t rowBytes = shape.back() * element.getIntOrFloatBitWidth() / 8;
  return fagpu::SharedTileType::get(
      element.getContext(), shape, element,
      fagpu::SharedTileType::widestSwizzle(rowBytes));
}

/// Rows [row, limit) of a 2-D (or 1-D) view of a kernel argument.
struct RowSource {
  Value argument; ///< the kernel argument the rows come from
  Value view;
  Value row;
  Value limit;
};

/// A tensor that stands for a part of an output kernel argument: a slice of
/// a forall's shared output, or a loop value carrying one. Inserting a tile
/// into it stores the tile.
struct OutputView {
  Value memref;
  /// The slice's offset in each dim of the memref.
  SmallVector<OpFoldResult> offsets;
  /// Stores add into the memory (atomically): the output is a sum over
  /// blocks that run in parallel (the backward's dQ over KV blocks), so a
  /// tile read from it is a zero to be added to.
  bool accumulate = false;
};

class TileKernelBuilder {
public:
  /// Register tiles spread over `warps` warps (4 per 64-row warpgroup).
  TileKernelBuilder(OpBuilder &b, int64_t warps);

  /// 8-bit P·V with P's keys in pairs (#fagpu.wgmma_a8_pairs: no shuffles)
  /// and Vᵀ transposed to match (pair_keys).
  bool pairFP8Keys = false;
  /// mma.sync layouts (#fagpu.mma_sync_acc / #fagpu.mma_sync_a, `warps`
  /// splitting the rows) instead of WGMMA's: the portable kernel (sm_80).
  bool mmaSync = false;

  IRMapping map;
  /// Tensors that are one value everywhere (fills and slices of fills).
  DenseMap<Value, Value> splats;
  /// Kernel arguments (memrefs) standing for whole tensors: outputs of the
  /// forward's forall, inputs of the backward.
  DenseMap<Value, Value> arguments;
  /// The kernel argument each slice of a function argument reads: the one
  /// of the q / k / v operand the slice feeds.
  DenseMap<Operation *, Value> sliceArguments;
  /// A kernel argument for each function argument that is an input: where
  /// its runtime sizes (tensor.dim) are read.
  DenseMap<Value, Value> inputArguments;
  /// Tensors standing for parts of output arguments.
  DenseMap<Value, OutputView> outputs;
  /// The kernel's entry block, where shared tiles are allocated.
  Block *entry = nullptr;
  /// Sums into accumulated outputs go through a shared tile and bulk
  /// reductions (fagpu.reduce_to_global) instead of atomic stores.
  bool bulkAccumulate = false;
  /// Whether any did: the kernel must wait for their reads before it ends.
  bool bulkReductions = false;
  /// FlashAttention 3's SdP_swapAB: products of two shared tiles (the
  /// backward's S = Q Kᵀ and dP = dO Vᵀ) computed transposed (Sᵀ = K Qᵀ,
  /// the keys on WGMMA's M side) and held as `#fagpu.transposed` WGMMA
  /// accumulators; per-row values (LSE, delta) follow their columns; Pᵀ
  /// and dSᵀ are register A operands, and dS reaches dQ = dS K as dSᵀ in
  /// shared memory, read transposed.
  bool transposeScores = false;
  /// Deterministic sums: each tile added into an output is a turn on
  /// `turnCounters[batch, head, first row / turnRows]` (i32), this block's
  /// being `turnOf(first row, end row)` (fagpu.wait_turn / fagpu.pass_turn
  /// around the sum).
  Value turnCounters;
  std::function<Value(Value, Value)> turnOf;
  int64_t turnRows = 0;

  LogicalResult convertOp(Operation &op);
  LogicalResult convertBlock(Block &block) {
    for (Operation &op : block.without_terminator())
      if (failed(convertOp(op)))
        return failure();
    return success();
  }
  /// The register tile standing for `tensor`.
  FailureOr<Value> tile(Value tensor);
  /// Rows [row, row + n) of a [B, H, N, X] / [B, H, N] argument at
  /// (batch, head): a rank-2 / rank-1 view with contiguous rows.
  RowSource rowsOf(Value memref, ArrayRef<OpFoldResult> offsets, Location loc);
  void storeRows(tensor::ParallelInsertSliceOp insert);

private:
  /// The register layout of a tile of `shape`: the WGMMA accumulator's,
  /// its warpgroups splitting the rows where the rows fill every warp, else
  /// (64 rows over several warpgroups) the columns; per-row values in the
  /// rows of that layout.
  fagpu::DistributedLayoutAttr layoutFor(ArrayRef<int64_t> shape);
  RankedTensorType tileType(ArrayRef<int64_t> shape, Type element) {
    return RankedTensorType::get(shape, element, layoutFor(shape));
  }
  /// A tile of `shape` in the 2-D layout `tile` (per-row values of a 1-D
  /// shape in its rows).
  RankedTensorType tileType(ArrayRef<int64_t> shape, Type element,
                            fagpu::DistributedLayoutAttr tile);
  /// tile(tensor), a splat built in `layout` (2-D) where it is one.
  FailureOr<Value> tileIn(Value tensor, fagpu::DistributedLayoutAttr layout);
  /// The accumulator layout of `warps` (#fagpu.mma_sync_acc or
  /// #fagpu.wgmma_acc), and it transposed.
  fagpu::DistributedLayoutAttr accumulatorLayout();
  fagpu::DistributedLayoutAttr transposedAccumulator();
  /// S = Q Kᵀ (or dP = dO Vᵀ) as Sᵀ = K Qᵀ, transposed back in registers.
  FailureOr<Value> transposedProduct(linalg::GenericOp generic, Value a,
                                     Value b2, bool transposeA,
                                     bool transposeB);
  LogicalResult convertLoop(scf::ForOp loop);
  LogicalResult convertPad(tensor::PadOp pad);
  LogicalResult convertSlice(tensor::ExtractSliceOp slice);
  LogicalResult convertInsert(tensor::InsertSliceOp insert);
  /// dest[row + i, :] += value[i, :] (rows below `limit`) through an f32
  /// shared tile and one bulk reduction of its valid rows.
  void reduceThroughShared(Value value, Value dest, Value row, Value limit,
                           Location loc);
  LogicalResult raiseGeneric(linalg::GenericOp generic);
  LogicalResult raiseContraction(linalg::GenericOp generic);
  LogicalResult raiseRowReduction(linalg::GenericOp generic);
  LogicalResult raiseElementwise(linalg::GenericOp generic);
  /// A shared tile of `type` for the kernel, allocated once per `key` and
  /// `slot`.
  Value sharedTile(std::pair<Value, Type> key, Location loc, int64_t slot = 0);
  Value mapped(Value v) { return map.lookupOrNull(v); }

  OpBuilder &b;
  int64_t warps;
  /// The register A layout of `element` operands (#fagpu.wgmma_a, or
  /// #fagpu.wgmma_a8 / #fagpu.wgmma_a8_pairs for 8-bit ones).
  fagpu::DistributedLayoutAttr aLayoutOf(Type element);
  /// The shared tile each register value (by its tensor) was last written
  /// to: a tile read twice (dS for dK and dQ) is written once.
  DenseMap<Value, Value> storedTiles;
  DenseMap<Value, RowSource> slices;
  /// The shared tile of each (kernel argument or none, tile type, slot).
  DenseMap<std::tuple<Value, Type, int64_t>, Value> sharedTiles;
  /// Register operands written to shared memory so far.
  int64_t operandStores = 0;
  Operation *lastAlloc = nullptr;
};

} // namespace fa
} // namespace mlir

#endif // FA_LIB_CONVERSION_TILEKERNELBUILDER_H
